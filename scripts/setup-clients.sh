#!/usr/bin/env bash
# The real client drivers and the browser driver the tests use, pinned, under target/clients
# (made once, reinstalled only when a piece is missing):
#   target/clients/venv   Python venv: PyMySQL, mysql-connector-python (admin, TLS and
#                         compression client matrix), cryptography (PyMySQL's RSA exchange of
#                         caching_sha2_password and sha256_password on a plain connection),
#                         kubernetes-validate (the Kubernetes manifests under docker/kubernetes)
#   target/clients/node   node_modules: mysql2 (same tests), mariadb (MariaDB's connector: its
#                         batch() sends COM_STMT_BULK_EXECUTE, which mysql2 never does),
#                         playwright-core (drives the system chromium for the HTML report layout
#                         check), the Prometheus Operator's CRD schemas and js-yaml (PodMonitor
#                         and PrometheusRule manifests)
# Needs python3-venv, nodejs and npm (scripts/setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/clients
mkdir -p "$dir"

if ! "$dir/venv/bin/python" -c 'import pymysql, mysql.connector, cryptography, kubernetes_validate' 2>/dev/null; then
  echo "setup: installing PyMySQL, mysql-connector-python, cryptography and kubernetes-validate into $dir/venv"
  rm -rf "$dir/venv"
  python3 -m venv "$dir/venv"
  "$dir/venv/bin/python" -m pip install -q --disable-pip-version-check \
    'PyMySQL==1.1.1' 'mysql-connector-python==9.1.0' 'cryptography==44.0.3' 'kubernetes-validate==1.37.0'
fi

node_ok() { [ -f "$dir/node/node_modules/$1/package.json" ]; }
# All in one install: a --no-save install of a few packages prunes the ones it does not name.
if ! node_ok mysql2 || ! node_ok mariadb || ! node_ok playwright-core || ! node_ok js-yaml ||
  ! node_ok @kubernetes-models/prometheus-operator; then
  echo "setup: installing mysql2, mariadb, playwright-core and the Prometheus Operator schemas into $dir/node"
  mkdir -p "$dir/node"
  (cd "$dir/node" && npm install --silent --no-audit --no-fund --no-save \
    mysql2@3.11.0 mariadb@3.5.4 playwright-core@1.64.1 js-yaml@4.1.0 @kubernetes-models/prometheus-operator@6.0.0)
fi
