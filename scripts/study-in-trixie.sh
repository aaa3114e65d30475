#!/usr/bin/env bash
# `psprobe experiment` on MariaDB 11.8: the study's throwaway server is the host's mariadbd
# (Debian 12: 10.11), so this runs the whole study inside a copy of the Debian 13 tree that
# scripts/setup-trixie-mariadb.sh unpacks (mariadb-server 11.8, sysbench added), with chroot.
# The copy keeps the tests' tree as it is. Needs root.
#   scripts/study-in-trixie.sh OUTDIR [psprobe experiment option...]
# e.g. scripts/study-in-trixie.sh target/study-11.8 --workloads oltp_read_only \
#        --threads 1,2,4,...,1024 --budget 25m --compare /seed-study/rds-read-only.csv
# (docs/seed-study is copied to /seed-study inside the tree, for --compare.)
# The reports land in OUTDIR (study.md, study.html, study.cells.csv/json, phase logs).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [psprobe experiment option...]" >&2; exit 2; }
out="$1"; shift
[ "$(id -u)" -eq 0 ] || { echo "$0: needs root (chroot, mount)" >&2; exit 1; }
[ -x target/trixie-mariadb/usr/sbin/mariadbd ] || scripts/setup-trixie-mariadb.sh
bin=target/release/psprobe
[ -x "$bin" ] || cargo build --release --locked

root=target/trixie-study
if [ ! -x "$root/usr/bin/sysbench" ]; then
  echo "study-in-trixie: copying the Debian 13 tree to $root and adding sysbench"
  rm -rf "$root"
  cp -a target/trixie-mariadb "$root"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  chroot "$root" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sysbench' \
    >target/trixie-study-apt.log 2>&1 || { tail -20 target/trixie-study-apt.log >&2; exit 1; }
fi
cp "$bin" "$root/usr/local/bin/psprobe"
# mariadb-install-db resolves this host's name: the tree gets the host's view of it.
cp /etc/hosts "$root/etc/hosts"
mkdir -p "$root/study"
rm -rf "$root/seed-study"
cp -r docs/seed-study "$root/seed-study"
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
mountpoint -q "$root/dev" || mount --bind /dev "$root/dev"
trap 'umount "$root/proc" "$root/dev" 2>/dev/null || true' EXIT
status=0
chroot "$root" psprobe experiment -o /study/study.md "$@" || status=$?
mkdir -p "$out"
cp -r "$root/study/." "$out/"
echo "study-in-trixie: reports in $out (exit $status)"
exit "$status"
