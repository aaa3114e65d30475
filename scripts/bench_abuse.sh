#!/usr/bin/env bash
# Do abusive clients hurt everyone else more through psprobe than directly? (issue 23, items 4
# and 5). A throwaway mariadbd, psprobe and HAProxy (TCP mode: any proxy hop's reference) in
# front; a background sysbench oltp_read_only (2 threads, 32 s, per-second reports) runs
# through the target (direct, haproxy or psprobe) while, from second 10 to 20, one abuse runs
# against the same target:
#   slow    100 clients each ask for a 50 MB result and read none of it (PyMySQL, unbuffered)
#   frames  4 clients send 16 MiB compressed queries (the mariadb CLI with --compress), 25 each
# The three targets take turns, ROUNDS times each, order shuffled per round. Prints, per abuse
# and target, the background's transactions/s and per-second p99 in the quiet seconds around
# the abuse (2-9 and 24-31) and during it (11-22: the abuse and the teardown of its clients),
# the share of its throughput each target kept, the CPU seconds the proxy and mariadbd spent in
# the abuse's 10 s, and psprobe's share against direct's and HAProxy's (>= 0.90 is "within
# 10%"; the extra hop's own cost is in "quiet"). Quiet seconds on both sides: one rate per
# second varies by about 5% on this load, and four seconds before the abuse alone (the first
# version) moved the share by up to 15% between identical runs.
#
#   scripts/bench_abuse.sh [ROUNDS]   (default 3; about 105 s per round and abuse)
#   env ABUSE_KINDS="slow frames" (default both)
# Needs target/clients/venv (scripts/setup-clients.sh) for PyMySQL, and haproxy.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
say() { echo "bench_abuse: $*" >&2; }
export PATH="$PATH:/usr/sbin"
psprobe=${PSPROBE_BIN:-target/release/psprobe}
bench=${PSPROBE_BENCH_BIN:-target/release/psprobe-bench}
[ -x "$psprobe" ] && [ -x "$bench" ] || cargo build --release --locked --bins >&2
python=target/clients/venv/bin/python
[ -x "$python" ] || scripts/setup-clients.sh >&2

# shellcheck source=bench/processes.sh
. "$(pwd)/scripts/bench/processes.sh"
work_dir psprobe-bench-abuse
db_user=bench db_pass=bench
start_mariadb --max-connections=1000 --max-allowed-packet=64M
"$psprobe" proxy --listen 127.0.0.1:0 --metrics 127.0.0.1:0 --upstream "127.0.0.1:$db_port" \
  --log warn >"$work/psprobe.out" 2>"$work/psprobe.err" &
psprobe_pid=$!
pids+=("$psprobe_pid")
for _ in $(seq 1 300); do grep -q proxy= "$work/psprobe.out" 2>/dev/null && break; sleep 0.1; done
proxy_port="$(sed -E 's/.*proxy=[^ ]*:([0-9]+).*/\1/' <"$work/psprobe.out" | head -1)"
start_haproxy 4096
say "mariadbd :$db_port, psprobe :$proxy_port, haproxy :$ha_port; $(nproc) CPUs"
# CPU seconds a process has used (user + system).
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }

sb=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-user=bench --mysql-password=bench
  --mysql-db=sbtest --tables=4 --table-size=10000)
sysbench oltp_read_only "${sb[@]}" --mysql-port="$db_port" --threads=4 prepare >/dev/null

# One 16 MiB compressible query (compresses to about 16 KiB).
python3 -c "import sys; sys.stdout.write(\"SELECT LENGTH('\" + 'x' * (16 * 1024 * 1024 - 64) + \"');\\n\")" >"$work/frame.sql"

cat >"$work/slow.py" <<'EOF'
# 100 connections, each asks for 50 MB and reads none of it until killed.
import sys, time, pymysql, pymysql.cursors
port = int(sys.argv[1])
held = []
for _ in range(100):
    c = pymysql.connect(host="127.0.0.1", port=port, user="bench", password="bench",
                        database="sbtest", cursorclass=pymysql.cursors.SSCursor)
    cur = c.cursor()
    cur.execute("SELECT REPEAT('x', 1048576) FROM seq_1_to_50")
    held.append((c, cur))
time.sleep(3600)
EOF

abuse() { # KIND PORT: runs until killed
  case "$1" in
    slow) exec "$python" "$work/slow.py" "$2" ;;
    frames)
      for _ in 1 2 3 4; do
        (for _ in $(seq 1 25); do
          mariadb --no-defaults --protocol=TCP -h127.0.0.1 -P"$2" -ubench -pbench --compress \
            --max-allowed-packet=64M sbtest <"$work/frame.sql" >/dev/null 2>>"$work/frames.err" || true
        done) &
      done
      wait ;;
  esac
}

results="$work/results.txt"
: >"$results"
measure() { # KIND TARGET PORT ROUND PROXY_PID (0: none)
  local out="$work/sb-$1-$2-$4.txt"
  sysbench oltp_read_only "${sb[@]}" --mysql-port="$3" --threads=2 --time=32 \
    --report-interval=1 --percentile=99 run >"$out" 2>&1 &
  local sb_pid=$!
  sleep 10
  local proxy_cpu=0 db_cpu
  [ "$5" = 0 ] || proxy_cpu=$(cpu_of "$5")
  db_cpu=$(cpu_of "$db_pid")
  abuse "$1" "$3" &
  local abuse_pid=$!
  sleep 10
  [ "$5" = 0 ] || proxy_cpu=$(python3 -c "print(round($(cpu_of "$5") - $proxy_cpu, 2))")
  db_cpu=$(python3 -c "print(round($(cpu_of "$db_pid") - $db_cpu, 2))")
  pkill -P "$abuse_pid" 2>/dev/null || true
  kill "$abuse_pid" 2>/dev/null || true
  wait "$abuse_pid" 2>/dev/null || true
  wait "$sb_pid" || true
  echo "$1 $2 $4 $out $proxy_cpu $db_cpu" >>"$results"
  # The server drops what the slow readers left; let it settle before the next window.
  sleep 2
}

for round in $(seq 1 "$rounds"); do
  for kind in ${ABUSE_KINDS:-slow frames}; do
    order=$(printf '%s\n' direct haproxy psprobe | shuf)
    for target in $order; do
      case $target in
        direct) port=$db_port proxy_pid=0 ;;
        haproxy) port=$ha_port proxy_pid=$ha_pid ;;
        psprobe) port=$proxy_port proxy_pid=$psprobe_pid ;;
      esac
      say "round $round: $kind against $target"
      measure "$kind" "$target" "$port" "$round" "$proxy_pid"
    done
  done
done

python3 - "$results" <<'EOF'
import re, statistics, sys
# Seconds 11..22 (abuse and teardown) and 2..9, 24..31 (quiet) of sysbench's per-second lines:
# "[ 6s ] thds: 2 tps: 380.00 qps: 6080.00 (r/w/o: ...) lat (ms,99%): 8.43 err/s: 0.00 ..."
line = re.compile(r"^\[ *(\d+)s \].* tps: ([\d.]+) .* lat \(ms,99%\): ([\d.]+)")
by = {}
kept_by_round = {}
for entry in open(sys.argv[1]):
    kind, target, rnd, path, proxy_cpu, db_cpu = entry.split()
    reports = [m for m in map(line.match, open(path)) if m]
    seconds = [m for m in reports if 11 <= int(m.group(1)) <= 22]
    quiet = [m for m in reports if 2 <= int(m.group(1)) <= 9 or 24 <= int(m.group(1)) <= 31]
    if not seconds or not quiet:
        print(f"{kind} {target} round {rnd}: no sysbench reports in {path}", file=sys.stderr)
        continue
    tps = statistics.mean(float(m.group(2)) for m in seconds)
    p99 = [float(m.group(3)) for m in seconds]
    calm_tps = statistics.mean(float(m.group(2)) for m in quiet)
    calm_p99 = statistics.median(float(m.group(3)) for m in quiet)
    by.setdefault((kind, target), []).append(
        (tps, statistics.median(p99), max(p99), calm_tps, calm_p99, float(proxy_cpu),
         float(db_cpu)))
    kept_by_round.setdefault((kind, rnd), {})[target] = tps / calm_tps
print("| abuse | target | t/s quiet | t/s during | kept | p99 ms quiet | p99 ms during (median second) | worst second | proxy CPU s | mariadbd CPU s |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
m = lambda v, i: statistics.median(x[i] for x in v)
for (kind, target), v in sorted(by.items()):
    proxy = "-" if target == "direct" else f"{m(v, 5):.2f}"
    print(f"| {kind} | {target} | {m(v, 3):.0f} | {m(v, 0):.0f} | {m(v, 0) / m(v, 3):.2f} | "
          f"{m(v, 4):.2f} | {m(v, 1):.2f} | {m(v, 2):.2f} | {proxy} | {m(v, 6):.2f} |")
print()
print("Each target against itself around the abuse (kept = during/quiet; CPU over the 10 s of")
print("abuse), then psprobe against direct and against HAProxy: psprobe's share kept divided by")
print("theirs (1.00 = the abuse costs the others nothing more through psprobe), and the p99")
print("during the abuse, psprobe/theirs, and how much more the abuse raised psprobe's p99 over")
print("its quiet p99 than theirs (1.00: as much; below: less).")
for kind in sorted({k for k, _ in by}):
    p = by.get((kind, "psprobe"))
    for ref in ("direct", "haproxy"):
        r = by.get((kind, ref))
        if not r or not p:
            continue
        kept = (m(p, 0) / m(p, 3)) / (m(r, 0) / m(r, 3))
        t, l = m(p, 0) / m(r, 0), m(p, 1) / m(r, 1)
        # How much the abuse raised each one's p99 over its own quiet p99.
        grew = (m(p, 1) / m(p, 4)) / (m(r, 1) / m(r, 4))
        ok = kept >= 0.90
        rounds = [v for (k, _), v in sorted(kept_by_round.items()) if k == kind]
        each = " ".join(f"{v['psprobe'] / v[ref]:.2f}" for v in rounds
                        if "psprobe" in v and ref in v)
        print(f"{kind}: throughput kept, psprobe/{ref} {kept:.2f}x "
              f"({'within 10%' if ok else 'NOT within 10%'}; per round {each}); "
              f"during the abuse psprobe/{ref} throughput {t:.2f}x, p99 {l:.2f}x; "
              f"p99 raised by the abuse, psprobe's rise/{ref}'s {grew:.2f}x")
EOF
