#!/usr/bin/env bash
# What the TLS / compression tests need beyond Debian packages, under target/ (made once):
#   target/trixie-mariadb/   Debian 13 minbase with mariadb-server 11.8 (debootstrap, ~1 min)
#   target/pydeps/           Python venv: PyMySQL, mysql-connector-python
#   target/nodedeps/         node_modules with mysql2
# Safe to run again: each part is skipped when present. Needs root for debootstrap.
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

if [ ! -f target/pydeps/.done ]; then
  echo "setup: Python drivers into target/pydeps"
  rm -rf target/pydeps
  python3 -m venv target/pydeps
  target/pydeps/bin/pip install -q --disable-pip-version-check 'PyMySQL==1.1.*' 'mysql-connector-python==9.*'
  touch target/pydeps/.done
fi

if [ ! -f target/nodedeps/.done ]; then
  echo "setup: Node driver into target/nodedeps"
  rm -rf target/nodedeps
  mkdir -p target/nodedeps
  (cd target/nodedeps && npm init -y >/dev/null && npm install --silent --no-audit --no-fund 'mysql2@3')
  touch target/nodedeps/.done
fi
