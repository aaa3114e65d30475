#!/usr/bin/env bash
# The second server version the TLS and client-matrix tests run: Debian 13 minbase with
# mariadb-server 11.8 in target/trixie-mariadb (debootstrap, about a minute; run with chroot, the
# host's packages stay as they are). Skipped when present. Needs root (or sudo) for debootstrap.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target

root=target/trixie-mariadb
if [ ! -x "$root/usr/sbin/mariadbd" ]; then
  echo "setup: debootstrap trixie with mariadb-server into $root (about a minute)"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo rm -rf "$root.tmp"
  $sudo debootstrap --variant=minbase --include=mariadb-server trixie "$root.tmp" http://deb.debian.org/debian >target/debootstrap.log 2>&1 \
    || { tail -20 target/debootstrap.log >&2; echo "setup: debootstrap failed (log: target/debootstrap.log)" >&2; exit 1; }
  $sudo mv "$root.tmp" "$root"
fi
