#!/usr/bin/env bash
# Full-size stress runs (not tests): the CI tests run the same code at smaller sizes. Each
# section prints its figures; docs/reliability*.md quote them. Sections may be appended.
#
#   scripts/stress.sh            # every section
#   scripts/stress.sh load       # one section
#
# Needs what the tests need (scripts/setup.sh): mariadbd, the mariadb client, root for the
# file-descriptor and connection counts the load section uses.
set -euo pipefail
cd "$(dirname "$0")/.."

# ---------------------------------------------------------------- load and exhaustion
# 6 bursts of 3,000 simultaneous connects, --max-connections, 1,000 slowloris connections,
# ulimit -n 256 with 400 clients (10 s window), 10 s of connect/close churn, deep pipelines.
# The kernel's own counters tell whether any SYN was dropped or answered with a cookie.
load() {
    echo "== load and exhaustion"
    ulimit -n "$(ulimit -Hn)"
    local before after
    before=$(nstat -az TcpExtListenOverflows TcpExtListenDrops TcpExtSyncookiesSent 2>/dev/null | awk 'NR>1{print $1"="$2}' | sort)
    local log status=0
    log=$(mktemp)
    PSPROBE_STRESS=1 nice -n 10 cargo test --release --locked --test load_exhaustion -- \
        --nocapture --test-threads=1 >"$log" 2>&1 || status=$?
    grep -E '^FIGURE |^test |^test result|panicked' "$log" || true
    [[ $status -eq 0 ]] || echo "load: tests failed (exit $status); full output in $log"
    after=$(nstat -az TcpExtListenOverflows TcpExtListenDrops TcpExtSyncookiesSent 2>/dev/null | awk 'NR>1{print $1"="$2}' | sort)
    echo "kernel counters before: $(echo $before)"
    echo "kernel counters after:  $(echo $after)"
}

sections=(load)
for s in "${sections[@]}"; do
    if [[ $# -eq 0 ]] || [[ " $* " == *" $s "* ]]; then
        "$s"
    fi
done
