#!/usr/bin/env bash
# The main job on a fresh machine: set up what the demo needs (scripts/setup-demo.sh: MariaDB,
# sysbench, the binary; nothing the tests alone use), then `psprobe demo`: a throwaway server
# (performance_schema ON), psprobe in front of it with the controller cycling the runtime
# scenarios of the seed study switched fast, sysbench through psprobe, what each instrument
# group costs, and an HTML report. About 5 minutes; DEMO_FULL=1 for the run of up to 35 minutes
# that adds pfsoff through restarts (until +-3 points or for 20 minutes at most).
# DEMO_SERVER=mysql runs it on Oracle MySQL (the host's mysqld, else the MySQL 9.7 tree the
# setup makes at target/sid-mysql); DEMO_SERVER=PATH on any server `psprobe demo --server` takes.
#   scripts/demo.sh [-o report.html]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-demo.sh
quick=(--quick)
[ "${DEMO_FULL:-0}" = 1 ] && quick=()
server="${DEMO_SERVER:-mariadb}"
if [ "$server" = mysql ] && [ ! -x /usr/sbin/mysqld ]; then
  server=target/sid-mysql
fi
exec target/release/psprobe demo "${quick[@]}" --server "$server" "$@"
