#!/usr/bin/env bash
# Full-size fault injection and byte transparency (a stress run, not part of the test suite):
# the cases of tests/network_faults.rs with longer sysbench runs, more clients and a longer
# link outage, and tests/transparency_volume.rs at 1200 MB (more than 1 GiB on the wire).
# Needs root (network namespaces, TUN). Prints one FIGURES line per case at the end.
# Sizes can be overridden: PSPROBE_FAULTS_RUN_SECS, PSPROBE_FAULTS_THREADS,
# PSPROBE_FAULTS_OUTAGE_SECS, PSPROBE_VOLUME_MB.
set -euo pipefail
cd "$(dirname "$0")/.."
export PSPROBE_FAULTS_RUN_SECS="${PSPROBE_FAULTS_RUN_SECS:-60}"
export PSPROBE_FAULTS_THREADS="${PSPROBE_FAULTS_THREADS:-32}"
# 15 s: longer outages reach mariadbd's net_write_timeout (60 s) before TCP's backed-off
# retransmission gets through, and the server itself aborts the result (docs/reliability.md).
export PSPROBE_FAULTS_OUTAGE_SECS="${PSPROBE_FAULTS_OUTAGE_SECS:-15}"
export PSPROBE_VOLUME_MB="${PSPROBE_VOLUME_MB:-1200}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
# One case at a time: the figures (throughput, recovery times) are not meant to share the CPU.
cargo test --release --locked --no-fail-fast --test network_faults --test transparency_volume \
    -- --test-threads=1 --nocapture 2>&1 | tee "$log" || status=$?
echo
echo "== figures (run ${PSPROBE_FAULTS_RUN_SECS}s, ${PSPROBE_FAULTS_THREADS} threads," \
     "outage ${PSPROBE_FAULTS_OUTAGE_SECS}s, volume ${PSPROBE_VOLUME_MB} MB) =="
grep -oE '(FIGURES|SKIPPED|link down [0-9]|server restart:).*' "$log" || true
exit "$status"
