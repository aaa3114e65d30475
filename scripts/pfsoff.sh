#!/usr/bin/env bash
# What turning performance_schema ON costs (pfson_conoff_insoff against pfsoff), through
# restarts: a benchmark, not a test (docs/measurement.md and docs/seed-study.md hold the last
# figures). On a throwaway server (MariaDB: Debian 12's 10.11, or 11.8 from the Debian 13 tree
# scripts/setup.sh unpacks; MySQL 9.7 from the sid tree of scripts/setup-sid-mysql.sh), sysbench oltp_read_only at 8 threads through psprobe (started
# again after every restart: sysbench 1.0.20 cannot reconnect), psprobe running the slow
# pairs for DURATION; then, on the same server in the same hour, a direct sequential A/B
# without psprobe (restart OFF, sysbench; restart ON with everything off, sysbench; each
# repetition in random order) to set beside it.
#
#   scripts/pfsoff.sh [DURATION] [REPETITIONS] [10.11|11.8|9.7]   defaults: 600s 6 10.11
#   PFSOFF_SCENARIOS=A,B,...   what psprobe schedules (default pfsoff,pfson_conoff_insoff);
#                              NAME@startup scenarios get their options through {opts}. The
#                              direct A/B compares B against A when there are two, each of
#                              pfsoff, pfson_conoff_insoff or one NAME@startup (started with
#                              the options psprobe passed for it)
#   PFSOFF_PROXY_OPTS="..."    more `psprobe proxy` options (e.g. --slow-phase 3s)
#
# Figures to stdout and target/pfsoff-VERSION/ (phase log, report, direct runs, summary).
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-600s}
reps=${2:-6}
version=${3:-10.11}
out=target/pfsoff-$version
mkdir -p "$out"
# psprobe appends to a phase log: a previous run's records would be analysed with this one's.
rm -f "$out"/*.phases.jsonl
bin=${PSPROBE_BIN:-target/release/psprobe} # a copy keeps a long run safe from rebuilds
bench=${PSPROBE_BENCH_BIN:-target/release/psprobe-bench}
[ -x "$bin" ] && [ -x "$bench" ] || cargo build --release --locked --bins
product=MariaDB
case "$version" in
10.11) root="" ;;
11.8) root="$(pwd)/target/trixie-mariadb"; [ -x "$root/usr/sbin/mariadbd" ] || scripts/setup-trixie-mariadb.sh ;;
9.7) product=MySQL; root="$(pwd)/target/sid-mysql"; [ -x "$root/usr/sbin/mysqld" ] || scripts/setup-sid-mysql.sh ;;
*) echo "usage: $0 [DURATION] [REPETITIONS] [10.11|11.8|9.7]" >&2; exit 2 ;;
esac

# The server's files: inside the Debian 13 tree for 11.8 (run there with chroot).
base="${root}/tmp"
mkdir -p "$base"
work=$(mktemp -d "$base/psprobe-pfsoff-XXXXXX")
inside=${work#"$root"}
run_in() { if [ -n "$root" ]; then chroot "$root" "$@"; else "$@"; fi; }
cleanup() {
  local status=$?
  [ -f "$work/proxy.pid" ] && kill "$(cat "$work/proxy.pid")" 2>/dev/null
  [ -f "$work/load.pid" ] && kill "$(cat "$work/load.pid")" 2>/dev/null
  if [ -f "$work/mariadbd.pid" ]; then
    pid=$(cat "$work/mariadbd.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port=$("$bench" free-port)
# The server's own options beside the common ones (the same as the tests' servers: the harness's
# Flavor): MySQL's root is 'root'@'localhost', which a TCP client from 127.0.0.1 matches only
# through name resolution; Debian's mysqld needs its secure-file-priv folder; no X protocol; no
# buffer pool dump and load (a restart costs less, docs/servers.md).
if [ "$product" = MySQL ]; then
  mkdir -p "$work/files"
  program=/usr/sbin/mysqld
  own_opts="--innodb-redo-log-capacity=32M --mysqlx=OFF --secure-file-priv=$inside/files --innodb-buffer-pool-dump-at-shutdown=OFF --innodb-buffer-pool-load-at-startup=OFF"
  run_in "$program" --no-defaults --initialize-insecure --datadir="$inside/data" --user=root \
    --innodb-redo-log-capacity=32M --log-error="$inside/install.log" >"$out/install.log" 2>&1 ||
    { cat "$work/install.log" >&2; exit 1; }
else
  program=/usr/sbin/mariadbd
  own_opts="--innodb-log-file-size=48M --skip-name-resolve"
  run_in mariadb-install-db --no-defaults --datadir="$inside/data" --user=root \
    --auth-root-authentication-method=normal --skip-test-db --innodb-log-file-size=48M \
    ${root:+--force} >"$out/install.log" 2>&1 # --force: the Debian 13 tree has no resolver for the host name
fi
# The control script: what an operator's restart command does, fast (see docs/measurement.md):
# SIGTERM (a fast shutdown that dumps the buffer pool), wait, start (the dump loads back),
# wait until it answers. `server.sh restart ON|OFF [MARIADBD OPTION...]`.
cat >"$work/server.sh" <<EOF
#!/bin/sh
pidfile=$work/mariadbd.pid
stop() {
  [ -f "\$pidfile" ] || return 0
  pid=\$(cat "\$pidfile"); kill "\$pid" 2>/dev/null
  # Gone, or a zombie: an orphaned mariadbd is reaped by init, which here took 1.7 s.
  while [ -e /proc/\$pid ] && ! grep -q '^State:.Z' /proc/\$pid/status 2>/dev/null; do sleep 0.02; done
  rm -f "\$pidfile"
}
start() {
  pfs=\$1; shift
  ${root:+chroot $root} setsid $program --no-defaults --datadir=$inside/data --port=$port \
    --bind-address=127.0.0.1 --socket=$inside/mysqld.sock --pid-file=$inside/mariadbd.pid \
    --log-error=$inside/error.log --skip-log-bin --user=root $own_opts \
    --innodb-buffer-pool-size=256M --max-connections=2000 \
    --performance-schema="\$pfs" "\$@" </dev/null >>$work/console.log 2>&1 &
  i=0
  while [ \$i -lt 600 ]; do
    mariadb-admin --no-defaults --protocol=TCP -h127.0.0.1 -P$port -uroot --connect-timeout=1 ping >/dev/null 2>&1 && return 0
    i=\$((i+1)); sleep 0.05
  done
  echo "$program did not start; see $work/error.log" >&2; return 1
}
case "\$1" in
  restart) shift; echo "\$*" >>$work/restart-args; stop; start "\$@" ;;
  start) shift; start "\$@" ;;
  stop) stop ;;
esac
EOF
sh "$work/server.sh" start ON
user=psprobe
pass=psprobe-bench
mariadb --no-defaults --protocol=TCP -h127.0.0.1 -P"$port" -uroot -e \
  "CREATE USER '$user'@'%' IDENTIFIED BY '$pass'; GRANT ALL ON *.* TO '$user'@'%'; CREATE DATABASE sbtest"
sb=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-user="$user" --mysql-password="$pass"
  --mysql-db=sbtest --tables=4 --table-size=10000)
sysbench oltp_read_only "${sb[@]}" --mysql-port="$port" prepare >"$out/prepare.txt"
server_version=$(mariadb --no-defaults --protocol=TCP -h127.0.0.1 -P"$port" -uroot -N -e "SELECT VERSION()")
echo "pfsoff: $product $server_version; psprobe's slow pairs for $duration, then $reps direct repetitions"

# sysbench through HOST:PORT again and again (a restart ends each run) until killed.
load_loop() {
  while true; do
    sysbench oltp_read_only "${sb[@]}" --mysql-port="$1" --threads=8 --time=3600 run >/dev/null 2>&1 || true
    sleep 0.1
  done
}

proxy_port=$("$bench" free-port)
metrics=$("$bench" free-port)
PSPROBE_CONTROLLER_DSN="mysql://$user:$pass@127.0.0.1:$port/" "$bin" proxy \
  --listen "127.0.0.1:$proxy_port" --metrics "127.0.0.1:$metrics" --upstream "127.0.0.1:$port" \
  --scenarios "${PFSOFF_SCENARIOS:-pfsoff,pfson_conoff_insoff}" --duration "$duration" --seed 31 \
  --restart-cmd "sh $work/server.sh restart {pfs} {opts}" --state-dir "$work" \
  --phase-log "$out/pfsoff.phases.jsonl" ${PFSOFF_PROXY_OPTS:-} 2>"$out/psprobe.log" &
echo $! >"$work/proxy.pid"
until curl -sf "http://127.0.0.1:$metrics/healthz" >/dev/null; do sleep 0.1; done
load_loop "$proxy_port" &
echo $! >"$work/load.pid"
active() { curl -sf "http://127.0.0.1:$metrics/metrics" | grep '^psprobe_controller_schedule_active 1' >/dev/null; }
until active; do sleep 0.5; done
while active; do sleep 2; done
kill "$(cat "$work/load.pid")"; pkill -P "$(cat "$work/load.pid")" sysbench 2>/dev/null || true
rm -f "$work/load.pid"
kill "$(cat "$work/proxy.pid")"; wait "$(cat "$work/proxy.pid")" 2>/dev/null || true
rm -f "$work/proxy.pid"
"$bin" report "$out/pfsoff.phases.jsonl" -o "$out/pfsoff.md"
"$bin" report "$out/pfsoff.phases.jsonl" --format json >"$out/pfsoff.json"

# The direct A/B: the same comparison without psprobe, phases of 30 s after a 5 s warm-up, each
# scenario entered by a restart as psprobe entered it: B against A of PFSOFF_SCENARIOS=A,B.
: >"$out/direct.txt"
IFS=, read -r -a scenarios <<<"${PFSOFF_SCENARIOS:-pfsoff,pfson_conoff_insoff}"
# The options psprobe passed for the NAME@startup scenario (each restart's words are logged).
startup_args=$(grep -v '^OFF$' "$work/restart-args" 2>/dev/null | grep -v '^ON$' | sort -u || true)
direct_check=yes
[ "${#scenarios[@]}" = 2 ] || direct_check="it needs exactly two scenarios"
for s in "${scenarios[@]}"; do
  case "$s" in
  pfsoff | pfson_conoff_insoff) ;;
  *@startup) [ "$(printf '%s\n' "$startup_args" | grep -c .)" = 1 ] ||
    direct_check="not one set of startup options in $work/restart-args" ;;
  *) direct_check="$s is neither pfsoff, pfson_conoff_insoff nor NAME@startup" ;;
  esac
done
enter() { # SCENARIO: restart the server into it
  case "$1" in
  pfsoff) sh "$work/server.sh" restart OFF ;;
  pfson_conoff_insoff)
    sh "$work/server.sh" restart ON
    mariadb --no-defaults --protocol=TCP -h127.0.0.1 -P"$port" -uroot -e \
      "UPDATE performance_schema.setup_consumers SET enabled='NO'; UPDATE performance_schema.setup_instruments SET enabled='NO', timed='NO'" ;;
  *@startup)
    local -a words
    read -r -a words <<<"$startup_args" # option words: no blanks inside, no quoting left
    sh "$work/server.sh" restart "${words[@]}" ;;
  esac
}
if [ "$direct_check" != yes ]; then
  echo "pfsoff: no direct A/B: $direct_check"
  reps=0
fi
for rep in $(seq 1 "$reps"); do
  order="0 1"
  [ $((RANDOM % 2)) = 0 ] && order="1 0"
  for i in $order; do
    enter "${scenarios[$i]}"
    # sysbench 1.0.20 has no --warmup-time: a 5 s run of its own warms the server up.
    sysbench oltp_read_only "${sb[@]}" --mysql-port="$port" --threads=8 --time=5 run >/dev/null
    qps=$(sysbench oltp_read_only "${sb[@]}" --mysql-port="$port" --threads=8 --time=30 run |
      awk '/queries:/ { gsub(/[(]/, "", $3); print $3 }')
    echo "$rep ${scenarios[$i]} $qps" | tee -a "$out/direct.txt"
  done
done

python3 - "$out" "$product $server_version" <<'EOF' | tee "$out/summary.txt"
import json, math, statistics, sys
out, version = sys.argv[1], sys.argv[2]
r = json.load(open(f"{out}/pfsoff.json"))["analysis"]
slow = r["slow"]
e = None
for x in slow["estimates"]:
    if x["metric"] != "throughput":
        continue
    e = e or x
    if x["ci_low"] is None:  # too few pairs for an interval
        print(f"{version}: psprobe, {x['n_blocks']} slow pairs: {x['scenario']} vs "
              f"{slow['baseline']} {x['ratio']*100:+.2f}%, too few pairs for an interval")
        continue
    print(f"{version}: psprobe, {x['n_blocks']} slow pairs: {x['scenario']} vs "
          f"{slow['baseline']} {x['ratio']*100:+.2f}% ({x['ci_low']*100:+.2f}..{x['ci_high']*100:+.2f}), "
          f"half-width {(x['ci_high']-x['ci_low'])*50:.2f} points")
p = r.get("restarts")
if p:
    for part in p["parts"]:
        print(f"  restarts into {part['scenario']}: {part['restarts']}, first query after {part['first_query_ms']/1000:.1f} s (median)")
    print(f"  rate steady {p['steady_after_ms']/1000 if p['steady_after_ms'] is not None else float('nan'):.1f} s after the first query; settle used {p['settle_used_ms'][0]/1000:.1f}-{p['settle_used_ms'][1]/1000:.1f} s")
rows = [l.split() for l in open(f"{out}/direct.txt") if l.strip()]
by = {}
for rep, scenario, qps in rows:
    by.setdefault(rep, {})[scenario] = float(qps)
# B against A, as psprobe's estimate (its baseline is the first scenario).
a, b = slow["baseline"], e["scenario"] if e else None
d = [math.log(v[b] / v[a]) for v in by.values() if a in v and b in v]
if len(d) >= 2:
    from statistics import mean, stdev
    t975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23}.get(len(d) - 1, 2.0)
    m, se = mean(d), stdev(d) / math.sqrt(len(d))
    lo, hi = math.expm1(m - t975 * se), math.expm1(m + t975 * se)
    agree = e["ci_low"] is not None and lo <= e["ci_high"] and e["ci_low"] <= hi
    print(f"direct sequential A/B, {len(d)} repetitions: {math.expm1(m)*100:+.2f}% ({lo*100:+.2f}..{hi*100:+.2f}): {'agree' if agree else 'DISAGREE'}")
EOF
