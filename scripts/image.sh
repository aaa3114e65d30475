#!/usr/bin/env bash
# Builds the container image localhost/psprobe:VERSION with podman, from Debian's packages
# only (no image registry is needed): a Debian 12 base made by debootstrap and `podman import`
# (localhost/psprobe-base:bookworm, made once), and docker/local.Dockerfile, which is
# docker/Dockerfile's runtime stage with the binary cargo built copied in. Prints the image's
# name. Needs root (or sudo) for debootstrap and podman.
#
#   scripts/image.sh                   # cargo build --release --locked, then the image
#   scripts/image.sh --binary PATH     # this psprobe binary instead (no build)
#   scripts/image.sh --tag NAME:TAG    # another name than localhost/psprobe:VERSION
#   scripts/image.sh --base-only       # only the base image (scripts/setup.sh makes it early)
#
# Run it (this machine refuses crun and the default ulimits; elsewhere plain `podman run`):
#   podman --runtime runc --cgroup-manager cgroupfs run --rm --network host \
#     --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 localhost/psprobe:VERSION \
#     proxy --listen 127.0.0.1:6033 --upstream 127.0.0.1:3306 --metrics 127.0.0.1:9898
set -euo pipefail
cd "$(dirname "$0")/.."

base=localhost/psprobe-base:bookworm
usage() { echo "usage: scripts/image.sh [--binary PATH] [--tag NAME:TAG] [--base-only]" >&2; exit 2; }
binary="" tag="" base_only=0
while (($#)); do
  case "$1" in
    --binary) binary="${2:?--binary needs a path}"; shift 2 ;;
    --tag) tag="${2:?--tag needs a name}"; shift 2 ;;
    --base-only) base_only=1; shift ;;
    *) usage ;;
  esac
done
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
for tool in podman debootstrap; do
  command -v "$tool" >/dev/null || { echo "image: $tool not found; run scripts/setup.sh (it installs podman and debootstrap)" >&2; exit 1; }
done

# The base: bookworm minbase with what docker/Dockerfile's runtime stage installs
# (ca-certificates for TLS to the upstream, curl for the health check) and its user. Its root
# file system is kept as target/psprobe-base-bookworm.tar: podman's storage may be reset while
# target/ stays, and an import takes seconds where debootstrap takes a minute.
make_base() {
  $sudo podman image exists "$base" && return
  local root=target/psprobe-base-root tar=target/psprobe-base-bookworm.tar
  if [ ! -s "$tar" ]; then
    echo "image: debootstrap bookworm into $root for $base (about a minute, once)" >&2
    $sudo rm -rf "$root"
    mkdir -p target/debootstrap-cache
    $sudo debootstrap --variant=minbase --include=ca-certificates,curl \
      --cache-dir="$PWD/target/debootstrap-cache" \
      bookworm "$root" http://deb.debian.org/debian >target/debootstrap-image.log 2>&1 \
      || { tail -20 target/debootstrap-image.log >&2; echo "image: debootstrap failed (log: target/debootstrap-image.log)" >&2; exit 1; }
    $sudo chroot "$root" useradd --system --home-dir /var/lib/psprobe --create-home psprobe
    # apt's package lists and downloaded .debs: tens of MB no container uses.
    $sudo rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
    $sudo tar -C "$root" --numeric-owner -cf "$tar.tmp" .
    $sudo mv "$tar.tmp" "$tar"
    $sudo rm -rf "$root"
  fi
  $sudo podman import --quiet --change 'CMD ["/bin/bash"]' "$tar" "$base" >/dev/null
}
make_base
((base_only)) && exit 0

if [ -z "$binary" ]; then
  cargo build --release --locked --bin psprobe
  binary="${CARGO_TARGET_DIR:-target}/release/psprobe"
fi
[ -x "$binary" ] || { echo "image: $binary is not an executable psprobe binary" >&2; exit 1; }
# "psprobe 0.1.0 (commit 0123abcd)"
read -r _ version _ commit <<<"$("$binary" --version | tr -d '()')"
tag="${tag:-localhost/psprobe:$version}"

context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
install -m 755 "$binary" "$context/psprobe"
strip --strip-unneeded "$context/psprobe"
$sudo podman build --pull=never --format docker --build-arg BASE="$base" \
  --label org.opencontainers.image.version="$version" \
  --label org.opencontainers.image.revision="$commit" \
  -f docker/local.Dockerfile -t "$tag" "$context" >&2
echo "$tag"
