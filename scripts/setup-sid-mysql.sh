#!/usr/bin/env bash
# The third server the tests run: Oracle MySQL 9.x from Debian sid (mysql-server-core and
# mysql-client-core) in a minbase tree at target/sid-mysql (debootstrap, about a minute and a
# half, 650 MB; run with chroot, the host's packages stay as they are). Reused when its mysqld
# runs; made again when it does not. Needs root (or sudo) for debootstrap and chroot.
# PSPROBE_SID_MIRROR chooses the Debian mirror.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target

root=target/sid-mysql
log=target/debootstrap-sid.log
mirror="${PSPROBE_SID_MIRROR:-http://deb.debian.org/debian}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

# One line of what `mysqld --version` says in the tree, or nothing when it does not run.
version() { $sudo chroot "$1" mysqld --version 2>/dev/null | head -1; }

if [ -x "$root/usr/sbin/mysqld" ] && [ -n "$(version "$root")" ]; then
  exit 0
fi
if [ -e "$root" ]; then
  echo "setup: $root is broken (its mysqld does not run); making it again"
fi
echo "setup: debootstrap sid with mysql-server-core and mysql-client-core into $root (about 2 minutes)"
$sudo rm -rf "$root.tmp"
if ! $sudo debootstrap --variant=minbase --include=mysql-server-core,mysql-client-core \
  sid "$root.tmp" "$mirror" >"$log" 2>&1; then
  $sudo rm -rf "$root.tmp"
  if grep -q "Couldn't find these debs" "$log"; then
    echo "setup: Debian sid no longer carries mysql-server-core: put a MySQL 9 tree with usr/sbin/mysqld, usr/bin/mysql and usr/bin/mysqladmin at $root by hand (or PSPROBE_SID_MIRROR=a mirror that has them), then run again" >&2
  else
    tail -20 "$log" >&2
    echo "setup: debootstrap failed (log: $log)" >&2
  fi
  exit 1
fi
# Debian's mysqld has secure-file-priv compiled in as /var/lib/mysql-files and refuses to start
# without it (the tests pass a folder of their own; this keeps a mysqld started by hand working).
$sudo mkdir -p "$root.tmp/var/lib/mysql-files"
got="$(version "$root.tmp")"
if [ -z "$got" ]; then
  echo "setup: mysqld in the new sid tree does not run (chroot $root.tmp mysqld --version); see $log" >&2
  exit 1
fi
$sudo rm -rf "$root"
$sudo mv "$root.tmp" "$root"
echo "setup: $root has $got"
