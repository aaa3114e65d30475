#!/usr/bin/env bash
# What `psprobe demo` needs, and only that: MariaDB (the throwaway server and its client),
# sysbench (the load), a C compiler (the build compiles SQLite and ring) and the psprobe
# binary. scripts/demo.sh runs it; scripts/setup.sh (the tests') installs these packages and
# more. Safe to run again: installs only what is missing. Needs root (or sudo) for apt-get.
# DEMO_SERVER=mysql without a host mysqld also makes the MySQL 9.7 tree
# (scripts/setup-sid-mysql.sh: debootstrap, about two minutes).
#
# The build is the binary alone (`--bin psprobe`), without debug info (PSPROBE_DEMO_DEBUG=1
# keeps the release profile's line tables): the tests' build (scripts/test.sh) compiles the
# test targets with their own features anyway, so the demo's first run waits for nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(mariadb-server mariadb-client sysbench ca-certificates gcc libc6-dev)
scripts/install-missing.sh "${packages[@]}"
# The packaged service is not used: the demo starts a throwaway server of its own.

if [ "${DEMO_SERVER:-}" = mysql ] && [ ! -x /usr/sbin/mysqld ]; then
  scripts/setup-sid-mysql.sh
fi

if [ "${PSPROBE_SETUP_BUILD:-1}" = 1 ]; then
  if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install the Rust toolchain (https://rustup.rs) and run again" >&2
    exit 1
  fi
  debug=0
  [ "${PSPROBE_DEMO_DEBUG:-0}" = 1 ] && debug=1
  CARGO_PROFILE_RELEASE_DEBUG="$debug" cargo build --release --locked --bin psprobe
fi
