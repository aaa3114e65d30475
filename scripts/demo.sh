#!/usr/bin/env bash
# The main job on a fresh machine: set up, then `psprobe demo`: a throwaway mariadbd
# (performance_schema ON), psprobe in front of it with the controller cycling the six
# scenarios of the seed study (runtime ones switched fast, pfsoff through restarts), sysbench
# through psprobe, and an HTML report. About 5 minutes; DEMO_FULL=1 for the run of up to 35 minutes (pfsoff through restarts until +-3 points or for 20 minutes at most).
#   scripts/demo.sh [-o report.html]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
quick=(--quick)
[ "${DEMO_FULL:-0}" = 1 ] && quick=()
exec target/release/psprobe demo "${quick[@]}" "$@"
