#!/usr/bin/env python3
"""Summarises `scripts/bench.sh --profile` for psprobe and HAProxy:

  - syscalls per query (strace -c -f output, divided by the queries sysbench ran meanwhile),
  - the top symbols of a perf cpu-clock sample (kernel [k] and user [.] alike),
  - user-space instructions per query and top functions (callgrind; the whole process is
    counted, startup included, so both figures are slight overestimates).

Usage: profile_report.py --dir DIR [--top 25]
"""

import argparse
import os
import re
import subprocess

TARGETS = ("psprobe", "haproxy")


def queries(dir_, name):
    path = os.path.join(dir_, "raw", name)
    if not os.path.exists(path):
        return None
    m = re.search(r"^\s*queries:\s+(\d+)", open(path).read(), re.MULTILINE)
    return int(m.group(1)) if m else None


# --- strace -------------------------------------------------------------------------------------
def strace_calls(path):
    calls = {}
    for line in open(path):
        parts = line.split()
        # % time, seconds, usecs/call, calls, [errors], syscall
        if len(parts) >= 5 and re.match(r"^[\d.]+$", parts[0]) and parts[-1] != "total":
            try:
                n = int(parts[3])
            except ValueError:
                continue
            errors = int(parts[4]) if len(parts) == 6 else 0
            calls[parts[-1]] = (n, errors)
    return calls


def report_strace(dir_):
    per = {}
    for t in TARGETS:
        path = os.path.join(dir_, f"strace.{t}")
        q = queries(dir_, f"strace-{t}.txt")
        if os.path.exists(path) and q:
            per[t] = (strace_calls(path), q)
    if not per:
        return
    print("### Syscalls per query (strace -c -f; oltp_point_select, 16 threads)")
    print()
    names = sorted(
        {n for calls, _ in per.values() for n in calls},
        key=lambda n: -max(per[t][0].get(n, (0, 0))[0] / per[t][1] for t in per),
    )
    print("| syscall | " + " | ".join(per) + " |")
    print("|---|" + "---:|" * len(per))
    totals = {t: 0.0 for t in per}
    for n in names:
        cells = []
        show = False
        for t, (calls, q) in per.items():
            c, e = calls.get(n, (0, 0))
            totals[t] += c / q
            show = show or c / q >= 0.01
            cells.append(f"{c / q:.2f}" + (f" ({e / q:.2f} failed)" if e else ""))
        if show:
            print(f"| {n} | " + " | ".join(cells) + " |")
    print("| **total** | " + " | ".join(f"**{totals[t]:.2f}**" for t in per) + " |")
    print()


# --- perf ---------------------------------------------------------------------------------------
def perf_top(path, n):
    rows = []
    for line in open(path, errors="replace"):
        m = re.match(r"^\s+([\d.]+)%\s+(\[[k.]\])\s+(.*)$", line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(3).strip()))
            if len(rows) >= n:
                break
    return rows


def report_perf(dir_, n):
    for t in TARGETS:
        path = os.path.join(dir_, f"perf.{t}.txt")
        if not os.path.exists(path):
            continue
        rows = perf_top(path, n)
        if not rows:
            continue
        kernel = sum(p for p, k, _ in perf_top(path, 10_000) if k == "[k]")
        print(f"### {t}: CPU samples by symbol (perf, cpu-clock; oltp_point_select, 16 threads)")
        print()
        print(f"Kernel symbols: {kernel:.0f}% of the samples listed (>= 0.5% each).")
        print()
        print("| % | where | symbol |")
        print("|---:|---|---|")
        for pct, kind, sym in rows:
            print(f"| {pct:.1f} | {'kernel' if kind == '[k]' else 'user'} | `{short(sym)}` |")
        print()


# --- callgrind ----------------------------------------------------------------------------------
def total_ir(path):
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    return None


def callgrind_top(path, inclusive, n):
    args = ["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}", path]
    out = subprocess.run(args, capture_output=True, text=True).stdout
    rows, started = [], False
    for line in out.splitlines():
        if "file:function" in line:
            started = True
            continue
        m = re.match(r"^\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(.*\S)\s*$", line)
        if started and m:
            name = re.sub(r"\s*\[[^\]]*\]$", "", m.group(2))
            rows.append((int(m.group(1).replace(",", "")), name))
            if len(rows) >= n:
                break
    return rows


def short(name, width=120):
    head, _, rest = name.partition(":")
    if rest and (head.startswith(("/", "?", ".")) or "/" in head):
        name = rest
    return name if len(name) <= width else name[: width - 1] + "…"


def report_callgrind(dir_, n):
    per = {}
    for t in TARGETS:
        path = os.path.join(dir_, f"callgrind.{t}")
        q = queries(dir_, f"callgrind-{t}.txt")
        if os.path.exists(path) and q:
            per[t] = (path, total_ir(path), q)
    if not per:
        return
    print("### User-space instructions per query (callgrind; oltp_point_select, 1 thread)")
    print()
    print("| proxy | queries | instructions | instructions/query |")
    print("|---|---:|---:|---:|")
    for t, (_, ir, q) in per.items():
        print(f"| {t} | {q:,} | {ir:,} | {ir / q:,.0f} |")
    print()
    for t, (path, ir, q) in per.items():
        for inclusive in (False, True):
            if t != "psprobe" and inclusive:
                continue
            kind = "inclusive" if inclusive else "self"
            print(f"#### {t}: top functions by {kind} instructions")
            print()
            print("| instr./query | % | function |")
            print("|---:|---:|---|")
            for cost, name in callgrind_top(path, inclusive, n if t == "psprobe" else 12):
                print(f"| {cost / q:,.0f} | {100.0 * cost / ir:.1f} | `{short(name)}` |")
            print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    print("## Profile of the proxies")
    print()
    report_strace(args.dir)
    report_perf(args.dir, args.top)
    report_callgrind(args.dir, args.top)


if __name__ == "__main__":
    main()
