# sysbench (Debian's 1.0.20) for the compose file's load generator.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends sysbench \
 && rm -rf /var/lib/apt/lists/*
ENTRYPOINT ["sysbench"]
