#!/usr/bin/env bash
# Installs what psprobe's tests and demo use (Debian packages) and builds psprobe.
# Safe to run again: installs only what is missing. Needs root (or sudo) for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(mariadb-server mariadb-client sysbench percona-toolkit prometheus chromium haproxy curl ca-certificates)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# The packaged service is not used: tests and the demo start throwaway servers of their own.

# ---- admin interface client tests (issue 14) ------------------------------------------------
# tests/admin_clients.rs queries the admin interface with PyMySQL, mysql-connector-python and
# node's mysql2 (pinned versions), installed into target/admin-clients: a Python venv and a
# node_modules. Reinstalled only when missing.
admin_clients=target/admin-clients
py=/usr/bin/python3
[ -x "$py" ] || py=python3
need_apt=()
"$py" -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
if ((${#need_apt[@]})); then
  echo "setup: installing ${need_apt[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${need_apt[@]}"
fi
if ! "$admin_clients/venv/bin/python" -c 'import pymysql, mysql.connector' 2>/dev/null; then
  echo "setup: installing PyMySQL and mysql-connector-python into $admin_clients/venv"
  "$py" -m venv "$admin_clients/venv"
  "$admin_clients/venv/bin/pip" install -q --disable-pip-version-check \
    'PyMySQL==1.1.1' 'mysql-connector-python==9.1.0'
fi
if ! [ -f "$admin_clients/node/node_modules/mysql2/package.json" ]; then
  echo "setup: installing mysql2 into $admin_clients/node"
  mkdir -p "$admin_clients/node"
  (cd "$admin_clients/node" && npm install --silent --no-audit --no-fund --no-save mysql2@3.11.0)
fi
# ---- end of admin interface client tests ----------------------------------------------------

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install the Rust toolchain (https://rustup.rs) and run again" >&2
  exit 1
fi
cargo build --release --locked
