#!/usr/bin/env bash
# End-to-end benchmark of issue 6, on one machine. Starts a throwaway mariadbd, HAProxy (TCP
# mode, config generated here) and psprobe (release build, full observation, metrics on,
# controller idle), then runs sysbench against each of them in interleaved rounds:
#   for each workload, for each thread count, for each round: direct, haproxy, psprobe.
# Prints one markdown table (ratios, median of rounds and min..max), writes the raw numbers as
# CSV and JSON under target/bench/ (the path is printed). Everything it starts is stopped on exit.
#
#   scripts/bench.sh                 # full: 3 rounds x 20 s, 1/16/64 threads, read_only + point_select
#   scripts/bench.sh --quick         # CI variant: 1 round x 3 s, 1/16 threads, point_select only
#   scripts/bench.sh --memory        # 10,000 idle connections, and 1 GiB of 17 MiB rows
#   scripts/bench.sh --record        # re-record scripts/bench/traffic/*.bin for crates/psprobe-core/benches/session.rs
#   scripts/bench.sh --profile       # psprobe and HAProxy under callgrind: instructions per query
#   scripts/bench.sh --tls           # sysbench --mysql-ssl=on oltp_read_only, 1/16 threads: direct TLS,
#                                    # psprobe terminating both legs, psprobe passthrough, psprobe
#                                    # with plain clients (the CPU reference) and HAProxy passing TLS
#                                    # through (TCP mode cannot terminate MySQL's in-band TLS),
#                                    # interleaved
#   scripts/bench.sh --bare-relay    # throughput mode with a 4th target: `psprobe-bench bare-relay`,
#                                    # an io_uring relay that only forwards (the lower bound of what
#                                    # any relay costs here; docs/performance.md)
#   options: --rounds N --seconds S --threads "1 16 64" --workloads "oltp_point_select ..."
#            --out DIR   (env: BENCH_ROUNDS, BENCH_SECONDS, BENCH_THREADS, BENCH_WORKLOADS,
#            BENCH_OUT, PSPROBE_BIN = a psprobe binary to use instead of building one,
#            PSPROBE_BENCH_BIN = a psprobe-bench binary (the measuring and reporting steps,
#            crates/psprobe-bench) to use instead of building one,
#            BENCH_IDLE_CONNECTIONS = connections for --memory, default 10000,
#            BENCH_TRAFFIC_DIR = where --record writes, default scripts/bench/traffic,
#            BENCH_EXTRA_PSPROBE="NAME=BINARY ..." = more psprobe builds to run as extra targets
#            in each round, e.g. to A/B a relay change against the same HAProxy and direct runs,
#            BENCH_PSPROBE_ARGS="--relay-runtime loops" = flags added to every psprobe the
#            bench starts, the one under callgrind included; --profile: BENCH_PROFILE_EVENTS =
#            sysbench events under callgrind, default 20000, BENCH_PROFILE_WORKLOAD = its
#            workload, default oltp_point_select)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

mode=throughput
rounds="${BENCH_ROUNDS:-3}"
seconds="${BENCH_SECONDS:-20}"
threads_list="${BENCH_THREADS:-1 16 64}"
workloads="${BENCH_WORKLOADS:-oltp_read_only oltp_point_select}"
out="${BENCH_OUT:-}"
idle_connections="${BENCH_IDLE_CONNECTIONS:-10000}"
bare_relay=0

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
while (($#)); do
  case "$1" in
    --quick)
      mode=throughput
      rounds=1 seconds=3 threads_list="1 16" workloads=oltp_point_select ;;
    --memory) mode=memory ;;
    --bare-relay) bare_relay=1 ;;
    --record) mode=record ;;
    --profile) mode=profile ;;
    --tls)
      mode=tls
      threads_list="${BENCH_THREADS:-1 16}" workloads="${BENCH_WORKLOADS:-oltp_read_only}" ;;
    --rounds) rounds="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    --threads) threads_list="$2"; shift ;;
    --workloads) workloads="$2"; shift ;;
    --out) out="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { echo "bench: $*" >&2; }

# --- tools -----------------------------------------------------------------------------------
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ] \
  || ! command -v sysbench >/dev/null 2>&1; then
  say "mariadbd or sysbench missing: running scripts/setup.sh"
  scripts/setup.sh
fi
if ! command -v haproxy >/dev/null 2>&1 && [ ! -x /usr/sbin/haproxy ]; then
  say "installing haproxy (Debian package; its service is not used)"
  as_root apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends haproxy >&2
fi
export PATH="$PATH:/usr/sbin"
if [ -n "${PSPROBE_BIN:-}" ]; then
  psprobe_bin="$PSPROBE_BIN"
  psprobe_label="${PSPROBE_LABEL:-$psprobe_bin}"
else
  say "building psprobe (release)"
  cargo build --release --locked --bin psprobe >&2
  psprobe_bin="$repo/target/release/psprobe"
  psprobe_label="$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  [ -z "$(git -C "$repo" status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ] ||
    psprobe_label="$psprobe_label with uncommitted changes"
fi
# The steps that measure, record and report (one subcommand each; `psprobe-bench --help`).
if [ -n "${PSPROBE_BENCH_BIN:-}" ]; then
  bench="$PSPROBE_BENCH_BIN"
else
  say "building psprobe-bench (release)"
  cargo build --release --locked -p psprobe-bench >&2
  bench="$repo/target/release/psprobe-bench"
fi

# --- limits, directories, cleanup ------------------------------------------------------------
# 10,000 client connections plus their upstreams need ~20,000 descriptors in psprobe alone.
# Raising the hard limit needs CAP_SYS_RESOURCE; without it the soft limit goes up to the hard
# one and --memory holds as many connections as that allows (and says so).
want_fds=65536
ulimit -Hn "$want_fds" 2>/dev/null || true
ulimit -n "$want_fds" 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

[ -n "$out" ] || out="$repo/target/bench/$(date +%Y%m%d-%H%M%S)-$mode"
mkdir -p "$out/raw"
out="$(cd "$out" && pwd)"
# shellcheck source=bench/processes.sh
. "$repo/scripts/bench/processes.sh"
work_dir psprobe-bench

free_port() { "$bench" free-port; }
db_user=bench db_pass=bench

# --- mariadbd --------------------------------------------------------------------------------
# Throwaway server: own datadir and port, performance_schema OFF (the proxies are measured,
# not the server's instrumentation), binary log off, buffer pool holding the whole data set.
start_mariadb_sized() {
  # sysbench prepares about 17 statements per thread: 1,024 threads pass the default 16,382.
  start_mariadb --innodb-buffer-pool-size=512M --max-allowed-packet=1G \
    --max-prepared-stmt-count=1048576 "$@"
  say "mariadbd $(mariadbd --version | awk '{print $3}') on 127.0.0.1:$db_port (pid $db_pid)"
}

# --- HAProxy ---------------------------------------------------------------------------------
# start_haproxy / write_haproxy_cfg (bench/processes.sh); the config is kept with the results.
haproxy_cfg="$out/haproxy.cfg"

# --- psprobe ---------------------------------------------------------------------------------
# Full observation (every command parsed, timed, fingerprinted), metrics endpoint on, no
# --scenarios (controller idle). Options after the binary go to `psprobe proxy`.
# Until OUTFILE has the process's "NAME listening ..." line (status 0); 1 when PID exits
# first or nothing is listening within SECONDS (psprobe and the bare relay both print one).
wait_listening_line() {
  local outfile=$1 pid=$2 seconds=$3
  for _ in $(seq 1 $((seconds * 10))); do
    grep -q '^[a-z-]* listening ' "$outfile" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

start_psprobe() {
  local tag=$1 bin=${2:-$psprobe_bin}
  shift 2 || shift $#
  # shellcheck disable=SC2086 # BENCH_PSPROBE_ARGS is a list of flags
  "$bin" proxy --listen 127.0.0.1:0 --upstream "127.0.0.1:$db_port" \
    --metrics 127.0.0.1:0 --state-dir "$work/state-$tag" "$@" ${BENCH_PSPROBE_ARGS:-} \
    >"$work/psprobe-$tag.out" 2>"$work/psprobe-$tag.log" &
  pp_pid=$!
  pids+=("$pp_pid")
  wait_listening_line "$work/psprobe-$tag.out" "$pp_pid" 30 || {
    cat "$work/psprobe-$tag.log" >&2
    say "psprobe exited, or did not listen within 30 s"
    exit 1
  }
  read -r pp_addr pp_metrics < <(sed -n 's/^psprobe listening proxy=\(.*\) metrics=\(.*\)$/\1 \2/p' "$work/psprobe-$tag.out")
  pp_port="${pp_addr##*:}"
  say "psprobe $("$psprobe_bin" --version 2>/dev/null | awk '{print $2}') on $pp_addr, metrics http://$pp_metrics/metrics (pid $pp_pid)"
}

stop_pid() {
  local pid=$1
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# Writes machine.json; the binary says "bench: machine: SUMMARY" on stderr.
describe_machine() { "$bench" machine >"$out/machine.json"; }

# --- throughput mode -------------------------------------------------------------------------
run_throughput() {
  describe_machine
  start_mariadb_sized --max-connections=4000
  start_haproxy 4096
  start_psprobe bench
  local main_pid=$pp_pid main_port=$pp_port main_metrics=$pp_metrics
  local -A extra_port=() extra_pid=()
  local extra_targets=() spec name
  for spec in ${BENCH_EXTRA_PSPROBE:-}; do
    name="${spec%%=*}"
    start_psprobe "extra-$name" "${spec#*=}"
    extra_port[$name]=$pp_port
    extra_pid[$name]=$pp_pid
    extra_targets+=("psprobe:$name")
  done
  pp_pid=$main_pid pp_port=$main_port pp_metrics=$main_metrics
  local bare_port="" bare_pid=""
  if [ "$bare_relay" = 1 ]; then
    "$bench" bare-relay --upstream-port "$db_port" >"$work/bare-relay.out" 2>"$work/bare-relay.log" &
    bare_pid=$!
    pids+=("$bare_pid")
    if wait_listening_line "$work/bare-relay.out" "$bare_pid" 10; then
      bare_port="$(sed -n 's/^bare-relay listening 127.0.0.1:\([0-9]*\) .*/\1/p' "$work/bare-relay.out")"
      say "bare relay (io_uring, forwarding only) on 127.0.0.1:$bare_port (pid $bare_pid)"
      extra_targets+=(bare-relay)
    else
      # A kernel without io_uring (or a seccomp filter) loses the lower bound, not the run.
      say "bare relay unavailable ($(tail -n 1 "$work/bare-relay.log")): left out of this run"
      stop_pid "$bare_pid"
    fi
  fi
  {
    echo "{\"rounds\": $rounds, \"seconds\": $seconds, \"threads\": \"$threads_list\","
    echo " \"workloads\": \"$workloads\", \"direct_port\": $db_port, \"haproxy_port\": $ha_port,"
    echo " \"extra_psprobe\": \"${BENCH_EXTRA_PSPROBE:-}\", \"bare_relay_port\": \"$bare_port\","
    echo " \"psprobe_port\": $pp_port, \"psprobe_metrics\": \"$pp_metrics\","
    echo " \"haproxy_version\": \"$(haproxy -v | head -1)\","
    echo " \"mariadb_version\": \"$(mariadbd --version)\", \"sysbench_version\": \"$(sysbench --version)\","
    echo " \"psprobe_commit\": \"$psprobe_label\"}"
  } >"$out/setup.json"

  local sb=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-user="$db_user" --mysql-password="$db_pass"
    --mysql-db=sbtest --tables=4 --table-size=10000)
  say "sysbench prepare (4 tables x 10,000 rows), directly"
  sysbench oltp_read_only "${sb[@]}" --mysql-port="$db_port" --threads=4 prepare >"$out/raw/prepare.txt"
  # Warm the buffer pool and each path once (not measured).
  for port in "$db_port" "$ha_port" "$pp_port" "${extra_port[@]}" $bare_port; do
    sysbench oltp_read_only "${sb[@]}" --mysql-port="$port" --threads=4 --time=1 run >/dev/null
  done

  : >"$out/results.jsonl"
  local total=0 n=0
  local ntargets=$((3 + ${#extra_targets[@]}))
  for _ in $workloads; do for _ in $threads_list; do total=$((total + rounds * ntargets)); done; done
  for workload in $workloads; do
    for threads in $threads_list; do
      for round in $(seq 1 "$rounds"); do
        # Interleaved: a b c, a b c, ... so drift on a shared machine hits all three alike.
        for target in direct haproxy psprobe "${extra_targets[@]}"; do
          n=$((n + 1))
          case "$target" in
            direct) port=$db_port proxy_pid=0 ;;
            haproxy) port=$ha_port proxy_pid=$ha_pid ;;
            psprobe) port=$pp_port proxy_pid=$pp_pid ;;
            psprobe:*) port=${extra_port[${target#psprobe:}]} proxy_pid=${extra_pid[${target#psprobe:}]} ;;
            bare-relay) port=$bare_port proxy_pid=$bare_pid ;;
          esac
          say "[$n/$total] $workload threads=$threads round=$round $target (${seconds}s)"
          "$bench" run-one --results "$out/results.jsonl" --raw "$out/raw" \
            --workload "$workload" --threads "$threads" --round "$round" --target "$target" \
            --proxy-pid "$proxy_pid" --server-pid "$db_pid" -- \
            sysbench "$workload" "${sb[@]}" --mysql-port="$port" --threads="$threads" \
            --time="$seconds" --percentile=99 --histogram=on --report-interval=0 run
        done
      done
    done
  done
  curl -fsS "http://$pp_metrics/metrics" >"$out/psprobe-metrics.txt" 2>/dev/null || true
  "$bench" report --dir "$out" | tee "$out/table.md"
  echo
  echo "raw numbers: $out/results.csv, $out/summary.json (per run: $out/results.jsonl, sysbench output: $out/raw/)"
}

# --- memory mode -----------------------------------------------------------------------------
run_memory() {
  describe_machine
  local n=$idle_connections
  local have_fds
  have_fds="$(ulimit -n)"
  # A proxy holds 2 descriptors per connection (client + upstream), plus a few of its own.
  if [ "$have_fds" != unlimited ] && [ "$have_fds" -lt $((2 * n + 100)) ]; then
    say "only $have_fds file descriptors allowed (hard limit $(ulimit -Hn)); holding $(((have_fds - 100) / 2)) idle connections instead of $n"
    n=$(((have_fds - 100) / 2))
  fi
  # pool-of-threads: 10,000 idle sessions without 10,000 server threads.
  start_mariadb_sized --max-connections=$((n + 100)) --thread-handling=pool-of-threads \
    --open-files-limit=$((n + 2000)) --back-log=1000
  start_haproxy $((n + 10))
  start_psprobe idle
  : >"$out/memory.jsonl"
  local common=(--results "$out/memory.jsonl" --user "$db_user" --password "$db_pass"
    --server-port "$db_port")
  say "idle connections: $n through psprobe"
  "$bench" memory idle "${common[@]}" --target psprobe --port "$pp_port" \
    --pid "$pp_pid" --metrics "$pp_metrics" --connections "$n" --target-connections "$idle_connections"
  say "idle connections: $n through HAProxy (for comparison)"
  "$bench" memory idle "${common[@]}" --target haproxy --port "$ha_port" \
    --pid "$ha_pid" --connections "$n" --target-connections "$idle_connections"
  stop_pid "$pp_pid"

  start_psprobe stream
  for target in direct haproxy psprobe; do
    case "$target" in
      direct) port=$db_port pid=0 metrics="" ;;
      haproxy) port=$ha_port pid=$ha_pid metrics="" ;;
      psprobe) port=$pp_port pid=$pp_pid metrics=$pp_metrics ;;
    esac
    say "stream: 64 rows of 17 MiB (1088 MiB) through $target"
    "$bench" memory stream "${common[@]}" --target "$target" --port "$port" \
      --pid "$pid" ${metrics:+--metrics "$metrics"}
  done
  "$bench" memory report --results "$out/memory.jsonl" | tee "$out/memory.md"
  echo
  echo "raw numbers: $out/memory.jsonl"
}

# --- record mode -----------------------------------------------------------------------------
# Real sysbench traffic for the session micro-benchmark, captured with a TCP tee (one
# connection, --threads=1), into scripts/bench/traffic/ (or BENCH_TRAFFIC_DIR).
run_record() {
  local traffic="${BENCH_TRAFFIC_DIR:-$repo/scripts/bench/traffic}"
  start_mariadb_sized --max-connections=100
  local sb=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-user="$db_user" --mysql-password="$db_pass"
    --mysql-db=sbtest --tables=4 --table-size=10000)
  sysbench oltp_read_only "${sb[@]}" --mysql-port="$db_port" --threads=4 prepare >/dev/null
  mkdir -p "$traffic"
  local name workload events extra tee_port tee_pid
  while read -r name workload events extra; do
    tee_port="$(free_port)"
    "$bench" record-traffic --listen-port "$tee_port" --upstream-port "$db_port" \
      --out "$traffic/$name.bin" >"$work/tee.out" &
    tee_pid=$!
    pids+=("$tee_pid")
    for _ in $(seq 1 100); do grep -q recording "$work/tee.out" 2>/dev/null && break; sleep 0.1; done
    # shellcheck disable=SC2086 # $extra holds options
    sysbench "$workload" "${sb[@]}" --mysql-port="$tee_port" --threads=1 --events="$events" --time=0 \
      $extra run >"$work/record-$name.txt"
    kill -TERM "$tee_pid"
    wait "$tee_pid"
  done <<'EOF2'
sysbench_point_select_ps oltp_point_select 1000
sysbench_point_select_text oltp_point_select 1000 --db-ps-mode=disable
sysbench_read_only_ps oltp_read_only 10
EOF2
  ls -l "$traffic/"
}

# --- profile mode ----------------------------------------------------------------------------
# Where the proxies spend their time, on sysbench oltp_point_select:
#  1. syscalls per query (strace -c -f attached to each proxy; 16 threads, 5 s),
#  2. a CPU sample of kernel and user stacks (perf record -e cpu-clock; 16 threads, 10 s;
#     skipped when perf cannot sample),
#  3. user-space instructions per query and top functions (valgrind --tool=callgrind;
#     1 thread, a fixed number of events).
run_profile() {
  command -v valgrind >/dev/null || { say "valgrind is needed (apt-get install valgrind)"; exit 1; }
  local events="${BENCH_PROFILE_EVENTS:-20000}"
  local cg_workload="${BENCH_PROFILE_WORKLOAD:-oltp_point_select}"
  echo "$cg_workload" >"$out/raw/callgrind-workload.txt"
  start_mariadb_sized --max-connections=200
  start_haproxy 4096
  start_psprobe profile
  local sb=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-user="$db_user" --mysql-password="$db_pass"
    --mysql-db=sbtest --tables=4 --table-size=10000)
  sysbench oltp_point_select "${sb[@]}" --mysql-port="$db_port" --threads=4 prepare >/dev/null
  local run16=(oltp_point_select "${sb[@]}" --threads=16 --report-interval=0)
  local port pid tracer
  for target in psprobe haproxy; do
    case "$target" in
      psprobe) port=$pp_port pid=$pp_pid ;;
      haproxy) port=$ha_port pid=$ha_pid ;;
    esac
    sysbench "${run16[@]}" --mysql-port="$port" --time=2 run >/dev/null # warm-up
    if command -v strace >/dev/null; then
      say "$target: syscalls (strace -c -f), oltp_point_select 16 threads, 5 s"
      strace -c -f -q -o "$out/strace.$target" -p "$pid" &
      tracer=$!
      sleep 1
      sysbench "${run16[@]}" --mysql-port="$port" --time=5 run >"$out/raw/strace-$target.txt"
      kill -INT "$tracer"
      wait "$tracer" 2>/dev/null || true
    fi
    if perf record -e cpu-clock -o "$work/perf-probe.data" -- true >/dev/null 2>&1; then
      say "$target: CPU sample (perf record -e cpu-clock -g), oltp_point_select 16 threads, 10 s"
      perf record -e cpu-clock -F 1999 -g -o "$out/perf.$target.data" -p "$pid" -- sleep 10 \
        >"$work/perf-$target.log" 2>&1 &
      tracer=$!
      sysbench "${run16[@]}" --mysql-port="$port" --time=10 run >"$out/raw/perf-$target.txt"
      wait "$tracer" 2>/dev/null || true
      perf report -i "$out/perf.$target.data" --no-children --sort sym --stdio -g none \
        --percent-limit 0.5 >"$out/perf.$target.txt" 2>/dev/null || true
    fi
  done
  stop_pid "$pp_pid"
  stop_pid "$ha_pid"

  for target in psprobe haproxy; do
    port="$(free_port)"
    if [ "$target" = psprobe ]; then
      # shellcheck disable=SC2086 # BENCH_PSPROBE_ARGS is a list of flags
      valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.psprobe" \
        "$psprobe_bin" proxy --listen "127.0.0.1:$port" --upstream "127.0.0.1:$db_port" \
        --metrics 127.0.0.1:0 ${BENCH_PSPROBE_ARGS:-} \
        >"$work/profile-$target.out" 2>"$work/profile-$target.log" &
    else
      write_haproxy_cfg 4096 "$port"
      valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.haproxy" \
        haproxy -db -f "$haproxy_cfg" >"$work/profile-$target.out" 2>"$work/profile-$target.log" &
    fi
    pid=$!
    pids+=("$pid")
    # Slow to start under callgrind.
    wait_serving "$port" "$pid" "$work/profile-$target.log" "$target" 120
    say "$target under callgrind: $cg_workload, 1 thread, $events events"
    sysbench "$cg_workload" "${sb[@]}" --mysql-port="$port" --threads=1 --events="$events" \
      --time=0 run >"$out/raw/callgrind-$target.txt"
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
  done
  "$bench" profile-report --dir "$out" | tee "$out/profile.md"
  echo
  echo "raw profiles: $out (callgrind.*: callgrind_annotate; perf.*.data: perf report -i)"
}

# --- TLS mode --------------------------------------------------------------------------------
# sysbench 1.0.20's --mysql-ssl=on reads cacert.pem, client-cert.pem and client-key.pem from its
# working directory and verifies the server's chain with cacert.pem: one directory per CA.
sysbench_tls_dir() {
  local dir=$1 ca=$2
  mkdir -p "$dir"
  cp "$ca" "$dir/cacert.pem"
  cp "$work/certs/client-cert.pem" "$dir/client-cert.pem"
  cp "$work/certs/client-key.pem" "$dir/client-key.pem"
}

run_tls() {
  describe_machine
  mkdir -p "$work/certs"
  (
    cd "$work/certs"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca-key.pem \
      -out ca.pem -days 30 -subj "/CN=bench CA" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >ext.cnf
    for who in server client; do
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$who-key.pem" \
        -out "$who.csr" -subj "/CN=bench $who" 2>/dev/null
      openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
        -out "$who-cert.pem" -days 30 -extfile ext.cnf 2>/dev/null
    done
  )
  start_mariadb_sized --max-connections=1000 --ssl-ca="$work/certs/ca.pem" \
    --ssl-cert="$work/certs/server-cert.pem" --ssl-key="$work/certs/server-key.pem"
  start_psprobe terminate "$psprobe_bin"
  local term_pid=$pp_pid term_port=$pp_port
  start_psprobe passthrough "$psprobe_bin" --client-tls passthrough
  local pass_pid=$pp_pid pass_port=$pp_port
  # The L4 proxy an operator would otherwise run: in TCP mode it cannot terminate TLS that starts
  # inside the MySQL protocol (after the greeting), so it passes it through.
  start_haproxy 4096
  sysbench_tls_dir "$work/sb-server" "$work/certs/ca.pem"
  sysbench_tls_dir "$work/sb-psprobe" "$work/state-terminate/tls/ca.pem"
  {
    echo "{\"rounds\": $rounds, \"seconds\": $seconds, \"threads\": \"$threads_list\","
    echo " \"workloads\": \"$workloads\", \"mariadb_version\": \"$(mariadbd --version)\","
    echo " \"sysbench_version\": \"$(sysbench --version)\", \"psprobe_commit\": \"$psprobe_label\"}"
  } >"$out/setup.json"

  local sb=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-user="$db_user" --mysql-password="$db_pass"
    --mysql-db=sbtest --tables=4 --table-size=10000)
  say "sysbench prepare (4 tables x 10,000 rows), directly"
  sysbench oltp_read_only "${sb[@]}" --mysql-port="$db_port" --threads=4 prepare >"$out/raw/prepare.txt"
  : >"$out/results.jsonl"
  local n=0 total=0 target port proxy_pid dir ssl
  for _ in $workloads; do for _ in $threads_list; do total=$((total + rounds * 5)); done; done
  for workload in $workloads; do
    for threads in $threads_list; do
      for round in $(seq 1 "$rounds"); do
        # Interleaved, so drift on a shared machine hits all five alike.
        for target in direct_tls psprobe_terminate psprobe_passthrough psprobe_plain haproxy_passthrough; do
          n=$((n + 1))
          case "$target" in
            direct_tls) port=$db_port proxy_pid=0 dir=$work/sb-server ssl=on ;;
            psprobe_terminate) port=$term_port proxy_pid=$term_pid dir=$work/sb-psprobe ssl=on ;;
            psprobe_passthrough) port=$pass_port proxy_pid=$pass_pid dir=$work/sb-server ssl=on ;;
            psprobe_plain) port=$term_port proxy_pid=$term_pid dir=$work/sb-psprobe ssl=off ;;
            haproxy_passthrough) port=$ha_port proxy_pid=$ha_pid dir=$work/sb-server ssl=on ;;
          esac
          say "[$n/$total] $workload threads=$threads round=$round $target (${seconds}s)"
          (cd "$dir" && "$bench" run-one --results "$out/results.jsonl" \
            --raw "$out/raw" --workload "$workload" --threads "$threads" --round "$round" \
            --target "$target" --proxy-pid "$proxy_pid" --server-pid "$db_pid" -- \
            sysbench "$workload" "${sb[@]}" --mysql-port="$port" --mysql-ssl="$ssl" \
            --threads="$threads" --time="$seconds" --percentile=99 --histogram=on \
            --report-interval=0 run)
        done
      done
    done
  done
  curl -fsS "http://$(sed -n 's/^psprobe listening proxy=.* metrics=\(.*\)$/\1/p' "$work/psprobe-terminate.out")/metrics" \
    >"$out/psprobe-metrics.txt" 2>/dev/null || true
  "$bench" tls-report --dir "$out" | tee "$out/table.md"
  echo
  echo "raw numbers: $out/results.jsonl (sysbench output: $out/raw/)"
}

case "$mode" in
  tls) run_tls ;;
  throughput) run_throughput ;;
  memory) run_memory ;;
  record) run_record ;;
  profile) run_profile ;;
esac
