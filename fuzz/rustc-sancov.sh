#!/usr/bin/env bash
# RUSTC_WRAPPER for building the fuzz targets with STABLE rustc (scripts/fuzz.sh): adds
# libFuzzer's coverage instrumentation (the flags cargo-fuzz uses, minus the sanitizer) and
# overflow checks to psprobe, psprobe-core and the fuzz crate only, so the dependencies already built for the
# release profile are reused instead of rebuilt with nightly.
rustc="$1"
shift
instrument=0
prev=""
for arg in "$@"; do
  if [ "$prev" = "--crate-name" ]; then
    case "$arg" in
      psprobe | psprobe_core | psprobe_fuzz | frame | handshake | command | compress | session | digest | \
        admin_sql | config | phase_log) instrument=1 ;;
    esac
  fi
  prev="$arg"
done
if [ "$instrument" = 1 ]; then
  exec "$rustc" "$@" -Cpasses=sancov-module \
    -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
    -Cllvm-args=-sanitizer-coverage-pc-table \
    -Cllvm-args=-sanitizer-coverage-trace-compares \
    -Cllvm-args=-sanitizer-coverage-stack-depth \
    --cfg fuzzing -Coverflow-checks=on -Cdebug-assertions=on
fi
exec "$rustc" "$@"
