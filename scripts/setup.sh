#!/usr/bin/env bash
# Installs what psprobe's tests use (Debian packages, server trees, drivers) and builds psprobe.
# The demo's part (MariaDB, sysbench) is scripts/setup-demo.sh's list; this one has them too, so
# one apt run installs everything. Safe to run again: installs only what is missing. Needs root
# (or sudo) for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(mariadb-server mariadb-client sysbench gcc libc6-dev percona-toolkit prometheus chromium haproxy curl ca-certificates
  openssl debootstrap python3-venv docker-compose iproute2
  dpkg-dev binutils podman runc zsh fish)
# Node may come from elsewhere than Debian (with its own npm): only installed when absent.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
scripts/install-missing.sh "${packages[@]}"

# The build needs only the compiler packages above: it runs while the trees below download and
# unpack (minutes each on a new machine), and is waited for at the end.
# PSPROBE_SETUP_BUILD: 1 (default) the release build, tests: the test suite's build (what
# scripts/test.sh runs, so its `cargo test` starts at once), 0: none.
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install the Rust toolchain (https://rustup.rs) and run again" >&2
  exit 1
fi
build_pid=""
build_log="target/setup-build.log"
mkdir -p target
case "${PSPROBE_SETUP_BUILD:-1}" in
  0) ;;
  tests)
    cargo test --release --locked --workspace --features psprobe/fuzzing --no-run >"$build_log" 2>&1 &
    build_pid=$! ;;
  *)
    cargo build --release --locked >"$build_log" 2>&1 &
    build_pid=$! ;;
esac
# Stopped with the script (a failed tree must not leave rustc running).
trap '[ -z "$build_pid" ] || kill "$build_pid" 2>/dev/null || true' EXIT
# The packaged service is not used: tests and the demo start throwaway servers of their own.
# dpkg-dev, binutils: scripts/package.sh (dpkg-shlibdeps, strip); podman and runc:
# scripts/image.sh and running the image; zsh, fish: the package's completions are loaded by
# them. systemd-analyze runs inside the Debian 12 chroot, from its own systemd.

# The tests run two more servers beside the host's MariaDB 10.11 (MariaDB 11.8 from Debian 13,
# MySQL 9 from Debian sid) and real Python and Node drivers; all of it lives under target/, made
# once and reused.
#
# The three Debian trees take minutes to debootstrap and do not depend on the checkout, so they
# are kept once per machine in $PSPROBE_TREE_CACHE (default /var/cache/psprobe) and target/
# links to them: another clone on the same machine (CI's) finds them made.
cache="${PSPROBE_TREE_CACHE:-/var/cache/psprobe}"
trees=(trixie-mariadb sid-mysql bookworm-chroot)
if mkdir -p target "$cache" 2>/dev/null && [ -w "$cache" ]; then
  for t in "${trees[@]}"; do
    [ -e "target/$t" ] || [ ! -d "$cache/$t" ] || ln -s "$cache/$t" "target/$t"
  done
else
  cache=""
fi
scripts/setup-trixie-mariadb.sh
scripts/setup-sid-mysql.sh
scripts/setup-clients.sh
# The Debian package is installed into a Debian 12 chroot, and the image is built on a Debian 12
# base imported into podman: both made once (target/bookworm-chroot, the podman image).
scripts/setup-bookworm-chroot.sh
if [ -n "$cache" ]; then
  for t in "${trees[@]}"; do
    if [ -d "target/$t" ] && [ ! -L "target/$t" ] && [ ! -e "$cache/$t" ]; then
      mv "target/$t" "$cache/$t" && ln -s "$cache/$t" "target/$t"
    fi
  done
fi
scripts/image.sh --base-only

if [ -n "$build_pid" ]; then
  echo "setup: waiting for the build started at the beginning ($build_log)"
  if ! wait "$build_pid"; then
    build_pid=""
    tail -n 40 "$build_log" >&2
    echo "setup: the build failed; its whole output is in $build_log" >&2
    exit 1
  fi
  build_pid=""
  tail -n 1 "$build_log"
fi
