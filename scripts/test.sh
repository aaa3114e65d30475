#!/usr/bin/env bash
# Sets up (packages, build) and runs every test: unit, property and integration tests against
# real mariadbd servers the tests start themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo test --release --locked -- --test-threads="${PSPROBE_TEST_THREADS:-2}"
