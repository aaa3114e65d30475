#!/usr/bin/env bash
# Sets up (packages, build) and runs every test: unit, property and integration tests against
# real mariadbd servers the tests start themselves. Ends with one summary line over all suites.
# The fuzzing feature builds the fuzz targets tests/fuzz_corpus.rs replays (left out without it).
set -euo pipefail
cd "$(dirname "$0")/.."
# The tests' build runs beside setup's downloads (the same command as below, without running).
PSPROBE_SETUP_BUILD=tests scripts/setup.sh
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
cargo test --release --locked --workspace --features psprobe/fuzzing --no-fail-fast -- --test-threads="${PSPROBE_TEST_THREADS:-2}" 2>&1 | tee "$log" || status=$?
# A test that could not make its real setup prints "SKIPPED NAME: why" and passes (outside CI;
# under CI=true it fails instead): counted apart, so a skip is never read as a pass.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     /^SKIPPED / { s++ }
     END { printf "summary: %d passed (%d of them skipped their setup), %d failed\n", p, s, f }' "$log"
exit "$status"
