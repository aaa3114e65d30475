#!/usr/bin/env bash
# Crash-consistent switching at full size (issue 32): tests/kill_mid_switch.rs with KILLS
# SIGKILLs of the leading psprobe per server (default 200), each resolved by `psprobe ps
# restore` or by the next start, never with --force; prints the figures line of each server
# (docs/reliability.md quotes them). `scripts/kill-mid-switch.sh 200 mysql_9_7` runs one server.
set -euo pipefail
cd "$(dirname "$0")/.."
kills="${1:-200}"
filter="${2:-}"
PSPROBE_KILLS="$kills" cargo test --release --locked --workspace --features psprobe/fuzzing \
  --test kill_mid_switch -- --nocapture --test-threads=1 $filter 2>&1 |
  grep -E "kill mid-switch on|panicked|^test result"
