#!/bin/sh
# A/A evidence for duet runs: RUNS duets of pfson_conoff_insoff against a twin of itself
# (aa_twin: the same settings under another name), each DURATION long, on SERVER (mariadb,
# mysql, or a Debian tree as `psprobe duet --server` takes it). Prints each run's interval and
# how many held 0; at 95% about 1 run in 20 may miss it.
#
# Usage: scripts/duet_aa.sh [RUNS] [DURATION] [SERVER]   (defaults: 6 100s mariadb)
# PSPROBE: the binary [target/release/psprobe]; DUET_OPTS: more `psprobe duet` options.
set -eu
runs=${1:-6}
duration=${2:-100s}
server=${3:-mariadb}
psprobe=${PSPROBE:-target/release/psprobe}
out=$(mktemp -d /tmp/psprobe-duet-aa.XXXXXX)
cat >"$out/aa.toml" <<'TOML'
[[scenario]]
name = "aa_twin"
description = "pfson_conoff_insoff again"
consumers = { enable = [] }
instruments = { enable = [] }
TOML
held=0
i=1
while [ "$i" -le "$runs" ]; do
  # shellcheck disable=SC2086
  "$psprobe" duet --server "$server" --scenarios pfson_conoff_insoff,aa_twin \
    --config "$out/aa.toml" --duration "$duration" --seed "$i" ${DUET_OPTS:-} \
    -o "$out/aa-$i.md" >"$out/aa-$i.out" 2>&1 || { echo "run $i failed: see $out/aa-$i.out" >&2; exit 1; }
  line=$(python3 - "$out/aa-$i.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))[0]
t = c["throughput"]
lo, hi = t["low"], t["high"]
holds = lo is not None and lo <= 0 <= hi
print(f"{int(holds)} pairs {t['pairs']}: {t['percent']:+.2f}% ({lo:+.2f}..{hi:+.2f})" if lo is not None
      else f"0 pairs {t['pairs']}: {t['percent']:+.2f}% (no interval)")
PY
)
  held=$((held + ${line%% *}))
  echo "A/A run $i: ${line#* }"
  i=$((i + 1))
done
echo "A/A: $held of $runs intervals hold 0 (files in $out)"
