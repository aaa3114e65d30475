# psprobe's image where no image registry can be reached (scripts/image.sh): the runtime stage
# of Dockerfile on a Debian 12 base made by debootstrap and `podman import`
# (localhost/psprobe-base:bookworm: ca-certificates, curl, the user psprobe), with the binary
# cargo built on the host copied in instead of built in a stage. Build context: a directory
# holding only that binary, named psprobe. tests/checks/docker_files.rs keeps the lines below
# the same as Dockerfile's runtime stage.
ARG BASE=localhost/psprobe-base:bookworm
FROM ${BASE}
COPY psprobe /usr/local/bin/psprobe
USER psprobe
WORKDIR /var/lib/psprobe
# 6033: MySQL clients; 9898: Prometheus /metrics and /healthz; 6034: the admin interface.
EXPOSE 6033 9898 6034
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s \
  CMD curl -fsS http://127.0.0.1:9898/healthz || exit 1
ENTRYPOINT ["psprobe"]
CMD ["--help"]
