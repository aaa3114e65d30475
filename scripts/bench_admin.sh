#!/usr/bin/env bash
# Does a long admin query slow the proxy down? Starts a throwaway mariadbd and psprobe with the
# admin interface, then runs sysbench oltp_point_select through the proxy in alternating windows:
# "quiet" (no admin load) and "admin" (4 clients looping on an admin query that runs until the
# admin's 10 s time limit stops it: an unbounded recursive CTE cross joined with `digests`).
# Prints the proxy's q/s and p99 latency per window and the median ratios admin/quiet (1.00 =
# unaffected), and how many admin queries were stopped by the time limit. Everything it starts is stopped on exit.
#
#   scripts/bench_admin.sh [--rounds N] [--seconds S] [--threads T]   (defaults 3, 15, 16)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 seconds=15 threads=16
while (($#)); do
  case "$1" in
    --rounds) rounds="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    --threads) threads="$2"; shift ;;
    *) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 2 ;;
  esac
  shift
done
say() { echo "bench_admin: $*" >&2; }
export PATH="$PATH:/usr/sbin"
cargo build --release --locked --bin psprobe >&2
psprobe="$(pwd)/target/release/psprobe"
cargo build --release --locked -p psprobe-bench >&2
bench="$(pwd)/target/release/psprobe-bench"

# shellcheck source=bench/processes.sh
. "$(pwd)/scripts/bench/processes.sh"
work_dir psprobe-bench-admin
db_user=bench db_pass=bench
start_mariadb --max-connections=500

export PSPROBE_ADMIN_PASSWORD=bench-admin
"$psprobe" proxy --listen 127.0.0.1:0 --metrics 127.0.0.1:0 --admin 127.0.0.1:0 \
  --upstream "127.0.0.1:$db_port" --log warn >"$work/psprobe.out" 2>"$work/psprobe.err" &
psprobe_pid=$!
pids+=("$psprobe_pid")
for _ in $(seq 1 300); do grep -q admin= "$work/psprobe.out" 2>/dev/null && break; sleep 0.1; done
line="$(head -1 "$work/psprobe.out")"
proxy_port="$(sed -E 's/.*proxy=[^ ]*:([0-9]+).*/\1/' <<<"$line")"
admin_port="$(sed -E 's/.*admin=[^ ]*:([0-9]+).*/\1/' <<<"$line")"
say "mariadbd :$db_port, psprobe proxy :$proxy_port admin :$admin_port; $(nproc) CPUs"

sb=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-user=bench --mysql-password=bench
  --mysql-db=sbtest --tables=4 --table-size=10000)
sysbench oltp_point_select "${sb[@]}" --mysql-port="$db_port" --threads=4 prepare >/dev/null
sysbench oltp_point_select "${sb[@]}" --mysql-port="$proxy_port" --threads="$threads" --time=3 run >/dev/null

slow_query="WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n, digests"
admin_load() {
  # Until killed: the long query again and again, each stopped by the admin's time limit.
  local child=""
  trap 'kill $child 2>/dev/null; exit 0' TERM
  while :; do
    mariadb --no-defaults --protocol=TCP -h127.0.0.1 -P"$admin_port" -uadmin -p"$PSPROBE_ADMIN_PASSWORD" \
      -e "$slow_query" >/dev/null 2>>"$work/admin-errors.txt" &
    child=$!
    wait "$child" || true
  done
}
window() { # -> "q/s p99_ms"
  local out
  out="$(sysbench oltp_point_select "${sb[@]}" --mysql-port="$proxy_port" --threads="$threads" \
    --time="$seconds" --percentile=99 run)"
  echo "$("$bench" sysbench-qps <<<"$out") $(awk '/99th percentile:/ { print $3 }' <<<"$out")"
}

busy_window() {
  local load_pids=()
  for _ in 1 2 3 4; do admin_load & load_pids+=($!); pids+=($!); done
  sleep 1
  window
  for pid in "${load_pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  admin_idle
}

# The queries of the killed clients run on in psprobe until the time limit stops them: wait
# until its admin query threads stop using CPU (unchanged over 0.5 s), so the next quiet
# window is quiet.
admin_cpu() {
  local total=0 task
  for task in /proc/"$psprobe_pid"/task/*; do
    grep -q '^psprobe-admin' "$task/comm" 2>/dev/null || continue
    total=$((total + $(awk '{ print $14 + $15 }' "$task/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
admin_idle() {
  local last now
  last="$(admin_cpu)"
  for _ in $(seq 1 60); do
    sleep 0.5
    now="$(admin_cpu)"
    [ "$now" = "$last" ] && return 0
    last=$now
  done
  say "admin queries still running after 30 s"
}

# Rounds alternate the order (quiet first, then admin first), so a drift of the machine's load
# does not favour either side.
ratios=() p99_ratios=()
printf '| round | q/s quiet | q/s during admin queries | ratio | p99 ms quiet | p99 ms during | ratio |\n'
printf '|---:|---:|---:|---:|---:|---:|---:|\n'
for r in $(seq 1 "$rounds"); do
  if ((r % 2)); then
    read -r quiet quiet_p99 <<<"$(window)"
    read -r busy busy_p99 <<<"$(busy_window)"
  else
    read -r busy busy_p99 <<<"$(busy_window)"
    read -r quiet quiet_p99 <<<"$(window)"
  fi
  ratio="$(awk -v busy="$busy" -v quiet="$quiet" 'BEGIN { printf "%.3f", busy / quiet }')"
  p99_ratio="$(awk -v busy="$busy_p99" -v quiet="$quiet_p99" 'BEGIN { printf "%.3f", busy / quiet }')"
  ratios+=("$ratio")
  p99_ratios+=("$p99_ratio")
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$r" "$quiet" "$busy" "$ratio" "$quiet_p99" \
    "$busy_p99" "$p99_ratio"
done
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
stopped="$(grep -c 'ERROR 1317' "$work/admin-errors.txt" 2>/dev/null || true)"
echo
echo "median q/s ratio, during admin queries / quiet: $(printf '%s\n' "${ratios[@]}" | median)"
echo "median p99 ratio, during admin queries / quiet: $(printf '%s\n' "${p99_ratios[@]}" | median)"
echo "admin queries stopped by the time limit: ${stopped:-0}"
