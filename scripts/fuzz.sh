#!/usr/bin/env bash
# Coverage-guided fuzzing of every psprobe parser with libFuzzer, one target at a time, then a
# table of the figures (executions, exec/s, coverage, wall time, peak RSS). Not a test: CI
# replays the kept corpus on stable instead (tests/fuzz_corpus.rs).
#
#   scripts/fuzz.sh [RUNS] [TARGET...]   RUNS defaults to 10000000; TARGETs to all of them
#
# Environment:
#   FUZZ_MAX_SECONDS=N  caps each target's time (default: none)
#   FUZZ_MERGE=1        merges what a run found into the kept corpus, minimized: the files in
#                       fuzz/corpus/TARGET/ stay, the rest is re-packed into TARGET.tar.zst
#   FUZZ_NIGHTLY=1      builds and runs with `cargo +nightly fuzz` (cargo-fuzz) instead of the
#                       default: stable rustc with the same coverage flags, added to psprobe and
#                       the fuzz crate only by fuzz/rustc-sancov.sh (psprobe-core too), so the release dependencies
#                       in target/ are reused (a nightly build recompiles ~250 crates).
# Both ways run the same targets (fuzz/fuzz_targets, bodies in src/fuzzing/) without a
# sanitizer: the code is safe Rust, and the per-input memory limit (64 MiB, libFuzzer's
# -malloc_limit_mb, which needs a sanitizer's malloc hooks) is enforced by psprobe's counting
# allocator. Overflow checks are on: an arithmetic overflow is a crash.
#
# Each target starts from the kept corpus: the files in fuzz/corpus/TARGET/ (named inputs and a
# seed set), and the archive fuzz/corpus/TARGET.tar.zst unpacked into its working corpus
# (fuzz/work/TARGET, not committed; see fuzz/corpus.sh). Crashes land in
# fuzz/artifacts/TARGET; replay one with
#   fuzz/target-bin/TARGET fuzz/artifacts/TARGET/crash-...     (or cargo +nightly fuzz run TARGET FILE)
# Logs: fuzz/logs/TARGET.log.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
runs="${1:-10000000}"
shift || true
all=(frame handshake command compress session digest admin_sql config phase_log)
if [ "$#" -gt 0 ]; then targets=("$@"); else targets=("${all[@]}"); fi

# Longest input per target: a few packets, a handshake, a short session, a config file.
declare -A max_len=(
  [frame]=4096 [handshake]=1024 [command]=2048 [compress]=8192 [session]=16384
  [digest]=4096 [admin_sql]=4096 [config]=4096 [phase_log]=16384
)

if [ "${FUZZ_NIGHTLY:-0}" = 1 ]; then
  nice -n 10 cargo +nightly fuzz build -s none -a --release
  bin_dir="$root/fuzz/target/x86_64-unknown-linux-gnu/release"
else
  # A target dir of its own, seeded with hard links to the release dependencies.
  export CARGO_TARGET_DIR="$root/target/fuzz-stable"
  if [ ! -d "$CARGO_TARGET_DIR/release" ] && [ -d "$root/target/release" ]; then
    mkdir -p "$CARGO_TARGET_DIR"
    cp -al "$root/target/release" "$CARGO_TARGET_DIR/release"
    # psprobe itself is rebuilt instrumented (new files, so the links keep the originals), and
    # the build lock must not be shared with target/release.
    find "$CARGO_TARGET_DIR/release" -name '*psprobe*' -prune -exec rm -rf {} +
    rm -f "$CARGO_TARGET_DIR/release/.cargo-lock"
  fi
  (cd fuzz && RUSTC_WRAPPER="$root/fuzz/rustc-sancov.sh" nice -n 10 cargo build --release --locked --bins)
  bin_dir="$CARGO_TARGET_DIR/release"
fi
mkdir -p fuzz/target-bin
for t in "${targets[@]}"; do ln -sf "$bin_dir/$t" "fuzz/target-bin/$t"; done

mkdir -p fuzz/logs
for t in "${targets[@]}"; do
  mkdir -p "fuzz/work/$t" "fuzz/corpus/$t" "fuzz/artifacts/$t"
  # The archived part of the kept corpus joins the working corpus: libFuzzer reads directories.
  fuzz/corpus.sh unpack "$t" "fuzz/work/$t"
  extra=()
  if [ -n "${FUZZ_MAX_SECONDS:-}" ]; then extra+=("-max_total_time=$FUZZ_MAX_SECONDS"); fi
  start=$(date +%s)
  status=0
  nice -n 10 "fuzz/target-bin/$t" "fuzz/work/$t" "fuzz/corpus/$t" \
    -runs="$runs" -max_len="${max_len[$t]}" -timeout=10 -rss_limit_mb=1024 \
    -malloc_limit_mb=64 -artifact_prefix="fuzz/artifacts/$t/" -print_final_stats=1 \
    "${extra[@]}" >"fuzz/logs/$t.log" 2>&1 || status=$?
  echo "wall_seconds: $(($(date +%s) - start))" >>"fuzz/logs/$t.log"
  echo "exit_status: $status" >>"fuzz/logs/$t.log"
  if [ "${FUZZ_MERGE:-0}" = 1 ] && [ "$status" = 0 ]; then
    merged=$(mktemp -d)
    nice -n 10 "fuzz/target-bin/$t" -merge=1 -max_len="${max_len[$t]}" "$merged" \
      "fuzz/corpus/$t" "fuzz/work/$t" >>"fuzz/logs/$t.merge.log" 2>&1
    # The files in fuzz/corpus/TARGET (named inputs, the seed set) stay, whatever the merge
    # kept; the archive becomes the rest of what it kept.
    nice -n 10 fuzz/corpus.sh pack "$t" "$merged"
    rm -rf "$merged"
  fi
done

printf '| %-10s | %12s | %8s | %6s | %6s | %7s | %7s | %s |\n' \
  target executions exec/s cov ft wall_s rss_mb result
echo "|------------|--------------|----------|--------|--------|---------|---------|--------|"
for t in "${targets[@]}"; do
  log="fuzz/logs/$t.log"
  stat() { awk -v k="stat::$1:" '$1 == k { print $2 }' "$log" | tail -1; }
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
  result=ok
  if [ "$(awk '/^exit_status:/ {print $2}' "$log")" != 0 ]; then
    result="CRASH: $log, fuzz/artifacts/$t"
  fi
  printf '| %-10s | %12s | %8s | %6s | %6s | %7s | %7s | %s |\n' "$t" \
    "$(stat number_of_executed_units)" "$(stat average_exec_per_sec)" "${cov:-?}" "${ft:-?}" \
    "$(awk '/^wall_seconds:/ {print $2}' "$log")" "$(stat peak_rss_mb)" "$result"
done
