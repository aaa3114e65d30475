#!/usr/bin/env bash
# Reproduces, without psprobe, the MariaDB crash seen under psprobe's runtime scenario switches
# (issue 23, item 9: SIGSEGV in ha_maria::drop_table, seen with 10.11.19): a throwaway mariadbd
# with performance_schema ON, one client loop that connects, runs an information_schema query
# (an internal Aria temporary table) and disconnects, and one root session that switches between
# the two runtime scenarios psprobe's tests use (every consumer and instrument off / on) every
# SWITCH_MS. Stops at the first crash (prints the error log's crash report) or after SECONDS.
#
#   scripts/repro-aria-crash.sh [SECONDS] [SWITCH_MS] [MARIADBD]   (defaults 600, 250, /usr/sbin/mariadbd)
#   QUERY='SELECT COUNT(*) FROM information_schema.PLUGINS' QUERY2='...' CLIENTS=2 scripts/repro-aria-crash.sh
set -euo pipefail
seconds="${1:-600}" switch_ms="${2:-250}" mariadbd="${3:-/usr/sbin/mariadbd}"
query="${QUERY:-SELECT COUNT(*) FROM information_schema.PLUGINS}"
clients="${CLIENTS:-2}"
work="$(mktemp -d /tmp/repro-aria-XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
user=()
[ "$(id -u)" = 0 ] && user=(--user=root)
mariadb-install-db --no-defaults --datadir="$work/data" --auth-root-authentication-method=normal \
  --skip-test-db "${user[@]}" >"$work/install.log" 2>&1
"$mariadbd" --no-defaults --datadir="$work/data" --port="$port" --bind-address=127.0.0.1 \
  --socket="$work/mysqld.sock" --log-error="$work/error.log" --skip-log-bin \
  --performance-schema=ON "${user[@]}" &
server=$!
pids+=("$server")
cli=(mariadb --no-defaults --protocol=TCP -h127.0.0.1 -P"$port" -uroot)
for _ in $(seq 1 600); do "${cli[@]}" -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1; done
echo "repro: $("$mariadbd" --version) on :$port; '$query' x $clients clients, a switch every $switch_ms ms" >&2

# Each switch followed by the checksum psprobe's controller reads back (fast_switch.rs).
check="SELECT (SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(CRC32(CONCAT(NAME, '=', ENABLED))), 0))
 FROM performance_schema.setup_consumers), (SELECT CONCAT(COUNT(*), ':',
 COALESCE(SUM(CRC32(CONCAT(NAME, '=', ENABLED, '/', IFNULL(TIMED, '-')))), 0))
 FROM performance_schema.setup_instruments);"
off="UPDATE performance_schema.setup_consumers SET enabled = 'NO';
UPDATE performance_schema.setup_instruments SET enabled = 'NO', timed = 'NO'; $check"
on="UPDATE performance_schema.setup_consumers SET enabled = 'YES';
UPDATE performance_schema.setup_instruments SET enabled = 'YES', timed = 'YES'; $check"
switches() { # one session, as psprobe's controller keeps one
  local sleep_s
  sleep_s="$(awk -v ms="$switch_ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
  while :; do printf '%s\nDO SLEEP(%s);\n%s\nDO SLEEP(%s);\n' "$off" "$sleep_s" "$on" "$sleep_s"; done |
    "${cli[@]}" >/dev/null 2>&1 || true
}
queries() { # a new connection per query, as the mariadb CLI does; QUERY2 alternates if set
  while :; do
    "${cli[@]}" -e "$query" >/dev/null 2>&1 || true
    [ -z "${QUERY2:-}" ] || "${cli[@]}" -e "$QUERY2" >/dev/null 2>&1 || true
  done
}
switches &
pids+=($!)
for _ in $(seq 1 "$clients"); do queries & pids+=($!); done

start=$SECONDS
while ((SECONDS - start < seconds)); do
  if ! kill -0 "$server" 2>/dev/null || grep -q 'got signal' "$work/error.log"; then
    echo "repro: mariadbd crashed after $((SECONDS - start)) s:" >&2
    sed -n '/got signal/,/^Writing a core file/p' "$work/error.log" | head -60
    exit 1
  fi
  sleep 1
done
echo "repro: no crash in $seconds s" >&2
