#!/usr/bin/env bash
# The main job on a fresh machine: set up, start a throwaway mariadbd (performance_schema ON),
# put psprobe in front of it, drive sysbench through psprobe, and show what psprobe measured.
# Everything it starts is stopped and removed on exit.
#   DEMO_SECONDS=20 DEMO_THREADS=4 scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

seconds="${DEMO_SECONDS:-20}"
threads="${DEMO_THREADS:-4}"
work="$(mktemp -d /tmp/psprobe-demo-XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
db_port="$(free_port)"
user_flag=()
[ "$(id -u)" -ne 0 ] || user_flag=(--user=root)

echo "demo: starting a throwaway mariadbd on 127.0.0.1:$db_port"
mariadb-install-db --no-defaults --datadir="$work/data" --auth-root-authentication-method=normal \
  --skip-test-db "${user_flag[@]}" >"$work/install.log" 2>&1
mariadbd --no-defaults --datadir="$work/data" --port="$db_port" --bind-address=127.0.0.1 \
  --socket="$work/mysqld.sock" --performance-schema=ON --skip-log-bin \
  --innodb-buffer-pool-size=256M "${user_flag[@]}" >"$work/mysqld.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do
  mariadb-admin --no-defaults -h127.0.0.1 -P"$db_port" -uroot ping >/dev/null 2>&1 && break
  sleep 0.1
done
mariadb --no-defaults -h127.0.0.1 -P"$db_port" -uroot -e \
  "CREATE DATABASE sbtest; CREATE USER demo@'%' IDENTIFIED BY 'demo'; GRANT ALL ON *.* TO demo@'%'"

echo "demo: starting psprobe in front of it"
target/release/psprobe proxy --listen 127.0.0.1:0 --upstream "127.0.0.1:$db_port" \
  --metrics 127.0.0.1:0 >"$work/psprobe.out" 2>"$work/psprobe.log" &
pids+=($!)
for _ in $(seq 1 300); do grep -q '^psprobe listening' "$work/psprobe.out" 2>/dev/null && break; sleep 0.1; done
read -r proxy metrics < <(sed -n 's/^psprobe listening proxy=\(.*\) metrics=\(.*\)$/\1 \2/p' "$work/psprobe.out")
echo "demo: psprobe proxy=$proxy metrics=http://$metrics/metrics"

sb=(oltp_read_write --mysql-host=127.0.0.1 --mysql-user=demo --mysql-password=demo --tables=4 --table-size=10000)
sysbench "${sb[@]}" --mysql-port="$db_port" prepare >/dev/null
echo "demo: sysbench oltp_read_write, $threads threads, ${seconds}s, through psprobe"
sysbench "${sb[@]}" --mysql-port="${proxy##*:}" --threads="$threads" --time="$seconds" \
  --report-interval=5 run | tee "$work/sysbench.txt" | grep -E '^\[|queries:|transactions:'

echo
echo "demo: what psprobe measured (from http://$metrics/metrics)"
curl -fsS "http://$metrics/metrics" | awk '
  /^psprobe_commands_total/ && $2 > 0 { sub(/psprobe_commands_total/, ""); printf "  commands %-45s %d\n", $1, $2 }
  /^psprobe_command_duration_seconds_sum/ { split($1, a, "\""); sum[a[2]] = $2 }
  /^psprobe_command_duration_seconds_count/ && $2 > 0 { split($1, a, "\""); n[a[2]] = $2 }
  END { for (c in n) printf "  mean latency %-20s %.3f ms over %d commands\n", c, 1000 * sum[c] / n[c], n[c] }'
echo "demo: sysbench itself reported: $(grep -E 'total:' "$work/sysbench.txt" | head -1 | xargs)"
