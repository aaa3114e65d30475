#!/usr/bin/env bash
# What each performance_schema instrument group costs, measured together, and how precisely:
# a benchmark, not a test (docs/attribution.md holds the last figures). On a throwaway
# server (MariaDB 10.11, or 11.8 or MySQL 9.7 from their Debian trees), sysbench oltp_read_only
# at 8 threads through psprobe while `psprobe proxy --attribute` runs every built-in group's
# design for DURATION, then confirms the advice for a 2% budget; then a direct fast A/B of the
# costliest group alone against nothing instrumented (a scenario of its own), to set beside the
# design's prediction for it.
#
#   scripts/attribution.sh [DURATION] [CONFIRM] [DIRECT] [10.11|11.8|9.7]
#                                        defaults: 600s 180s 300s 10.11
#   ATTRIBUTION_GROUPS=a,b,...   the groups of the design (default: every built-in group);
#   ATTRIBUTION_CONFIG=FILE      a config file with `[[group]]` tables of your own (an A/A
#                                group whose instruments never fire, for example)
#
# Figures to stdout and target/attribution[-VERSION]/ (phase logs, reports, the summary).
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-600s}
confirm=${2:-180s}
direct=${3:-300s}
db_flavor=${4:-10.11}
case "$db_flavor" in
10.11) out=target/attribution; parent=/tmp ;;
11.8) out=target/attribution-11.8; parent="$(pwd)/target/trixie-mariadb/tmp"
  [ -x target/trixie-mariadb/usr/sbin/mariadbd ] || scripts/setup-trixie-mariadb.sh ;;
9.7) out=target/attribution-9.7; parent="$(pwd)/target/sid-mysql/tmp"
  [ -x target/sid-mysql/usr/sbin/mysqld ] || scripts/setup-sid-mysql.sh ;;
*) echo "usage: $0 [DURATION] [CONFIRM] [DIRECT] [10.11|11.8|9.7]" >&2; exit 2 ;;
esac
mkdir -p "$out" "$parent"
# psprobe appends to a phase log: a previous run's records would be analysed with this one's.
rm -f "$out"/*.phases.jsonl
bin=${PSPROBE_BIN:-target/release/psprobe} # a copy keeps a long run safe from rebuilds
bench=${PSPROBE_BENCH_BIN:-target/release/psprobe-bench}
[ -x "$bin" ] && [ -x "$bench" ] || cargo build --release --locked --bins
db_user=psprobe
db_pass=psprobe-bench
source scripts/bench/processes.sh
work_dir psprobe-attribution "$parent"
start_mariadb --performance-schema=ON --innodb-buffer-pool-size=256M --max-connections=2000
dsn="mysql://$db_user:$db_pass@127.0.0.1:$db_port/"
sb=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-user="$db_user" --mysql-password="$db_pass"
  --mysql-db=sbtest --tables=4 --table-size=10000)
sysbench oltp_read_only "${sb[@]}" --mysql-port="$db_port" prepare >"$out/prepare.txt"

seconds() { python3 -c "
import re, sys
m = re.fullmatch(r'(\d+)(ms|s|m)?', sys.argv[1])
n, u = int(m.group(1)), m.group(2) or 's'
print(n // 1000 if u == 'ms' else n * 60 if u == 'm' else n)" "$1"; }

# run NAME LOAD_SECONDS PSPROBE_ARGS...: psprobe in front of the server with the controller,
# sysbench through it; waits for the schedule's end, then stops psprobe.
run() {
  local name=$1 load=$2
  shift 2
  local port metrics
  port=$("$bench" free-port)
  metrics=$("$bench" free-port)
  PSPROBE_CONTROLLER_DSN="$dsn" "$bin" proxy --listen "127.0.0.1:$port" \
    --metrics "127.0.0.1:$metrics" --upstream "127.0.0.1:$db_port" --mysqld-pid "$db_pid" \
    --state-dir "$work" --phase-log "$out/$name.phases.jsonl" "$@" 2>"$out/$name.log" &
  local proxy=$!
  pids+=("$proxy")
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$metrics/healthz" >/dev/null && break
    sleep 0.1 # readiness poll of a process this script started
  done
  sysbench oltp_read_only "${sb[@]}" --mysql-port="$port" --threads=8 --time="$load" \
    --report-interval=0 run >"$out/$name.sysbench.txt" &
  local load_pid=$!
  pids+=("$load_pid")
  # The schedule announces itself active, then inactive when it is done.
  active() { curl -sf "http://127.0.0.1:$metrics/metrics" | grep '^psprobe_controller_schedule_active 1' >/dev/null; }
  alive() {
    kill -0 "$proxy" 2>/dev/null && return 0
    echo "psprobe stopped: $(tail -1 "$out/$name.log")" >&2
    exit 1
  }
  until active; do alive; sleep 0.5; done
  while active; do alive; sleep 2; done
  kill "$proxy" "$load_pid" 2>/dev/null || true
  wait "$proxy" 2>/dev/null || true
  wait "$load_pid" 2>/dev/null || true
}

load=$(($(seconds "$duration") + $(seconds "$confirm") + 120))
echo "attribution: every built-in group, $duration, then the advice for 2% confirmed for $confirm"
design_opts=(--attribute ${ATTRIBUTION_GROUPS:-})
[ -z "${ATTRIBUTION_CONFIG:-}" ] || design_opts+=(--config "$ATTRIBUTION_CONFIG")
run design "$load" "${design_opts[@]}" --duration "$duration" --budget 2 --confirm "$confirm" --seed 19
"$bin" report "$out/design.phases.jsonl" -o "$out/design.md"
"$bin" report "$out/design.phases.jsonl" -o "$out/design.html"
"$bin" report "$out/design.phases.jsonl" --format json >"$out/design.json"

# The costliest group alone, as a scenario of its own, and the design's prediction for it.
read -r costliest consumers instruments < <(python3 - "$out/design.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
effects = [e for e in r["analysis"]["attribution"] if e["metric"] == "throughput"]
g = min(effects, key=lambda e: e["ratio"])["group"]
log = [json.loads(l) for l in open(sys.argv[1].replace(".json", ".phases.jsonl")) if '"kind":"run"' in l]
groups = log[0]["attribution"]["groups"]
d = next(x for x in groups if x["name"] == g)
print(g, json.dumps(["global_instrumentation", "thread_instrumentation"] + d["consumers"]).replace(" ", ""),
      json.dumps(d["instruments"]).replace(" ", ""))
EOF
)
cat >"$out/alone.toml" <<EOF
[[scenario]]
name = "alone_$costliest"
description = "the costliest group of the design alone"
consumers = { enable = $consumers }
instruments = { enable = $instruments }
EOF
"$bin" report "$out/design.phases.jsonl" --budget 100 --need "$costliest" --format json >"$out/predicted.json"
echo "direct: alone_$costliest against pfson_conoff_insoff, fast schedule, $direct"
run direct "$(($(seconds "$direct") + 60))" --scenarios "pfson_conoff_insoff,alone_$costliest" \
  --duration "$direct" --config "$out/alone.toml" --seed 23
"$bin" report "$out/direct.phases.jsonl" --format json >"$out/direct.json"

python3 - "$out" "$costliest" <<'EOF' | tee "$out/summary.txt"
import json, sys
out, g = sys.argv[1], sys.argv[2]
r = json.load(open(f"{out}/design.json"))["analysis"]
d = r["attribution_details"]
print(f"design: {len(d['groups'])} groups, {d['points']} points a replicate, {d['segments']} replicates")
print("group               statements/s change (95% CI)        half-width")
worst = 0.0
for e in sorted((e for e in r["attribution"] if e["metric"] == "throughput"), key=lambda e: e["ratio"]):
    h = (e["ci_high"] - e["ci_low"]) * 50
    worst = max(worst, h)
    print(f"{e['group']:<18}  {e['ratio']*100:+6.2f}% ({e['ci_low']*100:+.2f}..{e['ci_high']*100:+.2f})  +-{h:.2f}")
lat = max((e["ci_high"] - e["ci_low"]) * 50 for e in r["attribution"] if e["metric"] == "mean_latency")
print(f"widest half-width: throughput +-{worst:.2f} points, mean latency +-{lat:.2f} points (target <= 1.5)")
for b in d["base"]:
    if b["metric"] == "throughput":
        print(f"base (global + thread instrumentation): {b['ratio']*100:+.2f}% ({b['ci_low']*100:+.2f}..{b['ci_high']*100:+.2f})")
for x in d["additivity"]:
    if x["metric"] == "throughput":
        df = x["difference"]
        print(f"all groups on vs none on: measured {x['measured']*100:+.2f}%, predicted {x['predicted']*100:+.2f}%, difference {df['ratio']*100:+.2f}% ({df['ci_low']*100:+.2f}..{df['ci_high']*100:+.2f}): {'agree' if x['agrees'] else 'DISAGREE'}")
flagged = [i for i in d["interactions"] if i["flagged"]]
print(f"interactions flagged: {len(flagged)} of {len(d['interactions'])} chains" + "".join(
    f"\n  {' = '.join(a + ' x ' + b for a, b in i['pairs'])}: {i['ratio']*100:+.2f}%" for i in flagged))
rec = r.get("recommendation")
if rec:
    print(f"advice for 2%: {', '.join(rec['groups']) or 'no group'}: predicted cost {rec['predicted']*100:.2f}% (..{rec['ci_high']*100:.2f})")
    if rec.get("confirmed"):
        c = rec["confirmed"]
        print(f"  confirmed: measured cost {c['predicted']*100:.2f}% ({c['ci_low']*100:.2f}..{c['ci_high']*100:.2f})")
p = json.load(open(f"{out}/predicted.json"))["analysis"]["recommendation"]["cheapest"]
direct = json.load(open(f"{out}/direct.json"))["analysis"]["fast"]
e = next(e for e in direct["estimates"] if e["metric"] == "throughput")
lo, hi = -e["ci_high"], -e["ci_low"]
agree = lo <= p["ci_high"] and p["ci_low"] <= hi
print(f"{g} alone: predicted cost {p['predicted']*100:.2f}% ({p['ci_low']*100:.2f}..{p['ci_high']*100:.2f}); "
      f"direct A/B {-e['ratio']*100:.2f}% ({lo*100:.2f}..{hi*100:.2f}): {'agree' if agree else 'DISAGREE'}")
EOF
