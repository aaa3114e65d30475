#!/usr/bin/env bash
# The Debian 12 system the package test installs psprobe's .deb into (tests/checks/debian_package.rs):
# bookworm minbase in target/bookworm-chroot (debootstrap, about a minute; used with chroot, the
# host's packages stay as they are), with what the package depends on (adduser) and what the
# test uses: systemd (its own systemd-analyze verifies the unit inside, with the chroot's man
# pages and binaries), man-db (`man -w`), bash-completion (the completion loader). Skipped when
# present. Needs root (or sudo) for debootstrap.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target

root=target/bookworm-chroot
if [ ! -x "$root/usr/bin/man" ] || [ ! -x "$root/usr/bin/systemd-analyze" ]; then
  echo "setup: debootstrap bookworm with systemd and man-db into $root (about a minute)"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo rm -rf "$root.tmp"
  # The downloaded .debs are kept in target/debootstrap-cache: scripts/image.sh's base image is
  # bookworm too, and a second debootstrap then only unpacks.
  mkdir -p target/debootstrap-cache
  $sudo debootstrap --variant=minbase --include=adduser,systemd,man-db,bash-completion \
    --cache-dir="$PWD/target/debootstrap-cache" \
    bookworm "$root.tmp" http://deb.debian.org/debian >target/debootstrap-bookworm.log 2>&1 \
    || { tail -20 target/debootstrap-bookworm.log >&2; echo "setup: debootstrap failed (log: target/debootstrap-bookworm.log)" >&2; exit 1; }
  $sudo mv "$root.tmp" "$root"
fi
