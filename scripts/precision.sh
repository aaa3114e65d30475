#!/usr/bin/env bash
# How precise psprobe's overhead estimates are on this machine, and whether they are honest.
# A benchmark, not a test: each mode runs `psprobe experiment` (a throwaway mariadbd, sysbench
# oltp_read_only at 8 threads through psprobe) and reads the phase logs with `psprobe report`.
# Figures go to target/precision/ and to stdout; docs/measurement.md holds the last ones.
#
#   scripts/precision.sh main            the issue's 10-minute run: pfson_conoff_insoff vs
#                                        pfson_conon_inson, --duration 600s, default schedule;
#                                        target half-width <= 1.0 point
#   scripts/precision.sh sweep [S] [R]   slot lengths 250ms,500ms,1s,2s,5s: R rounds (default 2)
#                                        of S seconds (default 120) each, interleaved
#   scripts/precision.sh aa [N] [S]      N A/A runs (default 20) of S seconds (default 120):
#                                        share of 95% intervals that contain 0
#                                        (PRECISION_THREADS=64: at a load whose switches make
#                                        the leader lengthen the slots)
#   scripts/precision.sh slowfast [S]    the same comparison with the fast default and with
#                                        the old slow schedule (--phase 20s --settle 5s), S
#                                        seconds each (default 600): do they agree?
#   scripts/precision.sh pfsoff [S] [B]  pfsoff vs pfson_conoff_insoff in B slow blocks
#                                        (default 6), then a direct sequential A/B without
#                                        psprobe on the same server (--direct-check 4)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-main}
out=target/precision
mkdir -p "$out"
bin=${PSPROBE_BIN:-target/release/psprobe}  # a copy keeps a long run safe from rebuilds
[ -x "$bin" ] || cargo build --release --locked
A=pfson_conoff_insoff
B=pfson_conon_inson
threads=${PRECISION_THREADS:-8}

# experiment NAME SCENARIOS [psprobe experiment args...] -> $out/NAME-*.phases.jsonl
experiment() {
  local name=$1 scenarios=$2
  shift 2
  "$bin" experiment --workloads oltp_read_only --threads "$threads" --scenarios "$scenarios" \
    -o "$out/$name.md" "$@" >"$out/$name.log" 2>&1
}

# estimate PHASE_LOG SCENARIO METRIC [SCHEDULE] -> "ratio_pct lo_pct hi_pct halfwidth_pts"
estimate() {
  "$bin" report "$1" --format json | python3 -c '
import json, sys
r = json.load(sys.stdin)["analysis"]
design = r.get(sys.argv[3]) or {}
for e in design.get("estimates", []):
    if e["scenario"] == sys.argv[1] and e["metric"] == sys.argv[2]:
        lo, hi = e["ci_low"], e["ci_high"]
        if lo is None or hi is None:  # no interval: too few blocks, or one that says nothing
            print("%.2f nan nan nan" % (e["ratio"] * 100))
        else:
            print("%.2f %.2f %.2f %.2f" % (e["ratio"] * 100, lo * 100, hi * 100, (hi - lo) * 50))
        break
else:
    print("nan nan nan nan")
' "$2" "$3" "${4:-fast}"
}

case "$mode" in
main)
  experiment main "$A,$B" --duration 600s
  log=$(ls "$out"/main-oltp_read_only-$threads.phases.jsonl)
  for m in throughput mean_latency server_cpu; do
    read -r r lo hi h < <(estimate "$log" "$B" "$m")
    echo "main: $B vs $A, $m: ${r}% (${lo}..${hi}), half-width ${h} points"
  done
  "$bin" report "$log" -o "$out/main.html"
  "$bin" report "$log" | sed -n '/Carryover/,/Digests/p' | head -30
  ;;
sweep)
  seconds=${2:-120}
  rounds=${3:-2}
  slots=(250ms 500ms 1s 2s 5s)
  : >"$out/sweep.txt"
  for round in $(seq 1 "$rounds"); do
    # Each round in another order, so a trend over the run falls on every slot length.
    order=$(printf '%s\n' "${slots[@]}" | python3 -c "import random,sys; l=sys.stdin.read().split(); random.Random($round).shuffle(l); print(' '.join(l))")
    for slot in $order; do
      experiment "sweep-$slot-$round" "$A,$B" --duration "${seconds}s" --phase "$slot" --seed "$round"
      read -r r lo hi h < <(estimate "$out/sweep-$slot-$round-oltp_read_only-$threads.phases.jsonl" "$B" throughput)
      read -r _ _ _ hl < <(estimate "$out/sweep-$slot-$round-oltp_read_only-$threads.phases.jsonl" "$B" mean_latency)
      echo "$slot $round $r $h $hl" | tee -a "$out/sweep.txt"
    done
  done
  echo "slot  median throughput half-width, mean-latency half-width (points, ${seconds}s runs)"
  python3 - "$out/sweep.txt" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
for slot in ["250ms", "500ms", "1s", "2s", "5s"]:
    t = [float(r[3]) for r in rows if r[0] == slot]
    l = [float(r[4]) for r in rows if r[0] == slot]
    if t:
        print(f"{slot:>6}  {statistics.median(t):.2f}  {statistics.median(l):.2f}  (runs: {len(t)}; estimates {', '.join(r[2] for r in rows if r[0] == slot)})")
EOF
  ;;
aa)
  runs=${2:-20}
  seconds=${3:-120}
  cat >"$out/aa.toml" <<'EOF'
[[scenario]]
name = "aa_twin"
description = "pfson_conoff_insoff again"
consumers = { enable = [] }
instruments = { enable = [] }
EOF
  : >"$out/aa.txt"
  for i in $(seq 1 "$runs"); do
    experiment "aa-$i" "$A,aa_twin" --duration "${seconds}s" --config "$out/aa.toml" --seed "$i"
    read -r r lo hi h < <(estimate "$out/aa-$i-oltp_read_only-$threads.phases.jsonl" aa_twin throughput)
    read -r rl lol hil hl < <(estimate "$out/aa-$i-oltp_read_only-$threads.phases.jsonl" aa_twin mean_latency)
    echo "$i $r $lo $hi $h $rl $lol $hil $hl" | tee -a "$out/aa.txt"
  done
  python3 - "$out/aa.txt" <<'EOF'
import sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
t = sum(1 for r in rows if r[2] <= 0 <= r[3])
l = sum(1 for r in rows if r[6] <= 0 <= r[7])
print(f"A/A: {len(rows)} runs; 95% intervals containing 0: throughput {t}/{len(rows)}, mean latency {l}/{len(rows)}")
EOF
  ;;
slowfast)
  seconds=${2:-600}
  experiment fast "$A,$B" --duration "${seconds}s"
  experiment slow "$A,$B" --duration "${seconds}s" --phase 20s --settle 5s
  for d in fast slow; do
    read -r r lo hi h < <(estimate "$out/$d-oltp_read_only-$threads.phases.jsonl" "$B" throughput)
    echo "$d schedule (${seconds}s): $B vs $A throughput ${r}% (${lo}..${hi}), half-width ${h}"
  done
  ;;
pfsoff)
  seconds=${2:-420}
  blocks=${3:-6}
  experiment pfsoff "pfsoff,$A" --duration "${seconds}s" --slow-blocks "$blocks" \
    --slow-phase 30s --direct-check 4
  sed -n '/## pfsoff/,$p' "$out/pfsoff.md"
  ;;
*)
  echo "usage: $0 main|sweep|aa|slowfast|pfsoff [args]" >&2
  exit 2
  ;;
esac
