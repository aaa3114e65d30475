#!/usr/bin/env python3
"""Summarises `scripts/bench.sh --profile`: instructions per query of psprobe and HAProxy
(callgrind counts user-space instructions of the whole process, startup included, so this is
a slight overestimate for both) and the top functions of each, by self and inclusive cost.

Usage: profile_report.py --dir DIR --events N [--top 25]
"""

import argparse
import os
import re
import subprocess


def total_ir(path):
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    return None


def queries(dir_, target):
    path = os.path.join(dir_, "raw", f"profile-{target}.txt")
    text = open(path).read()
    m = re.search(r"^\s*queries:\s+(\d+)", text, re.MULTILINE)
    return int(m.group(1)) if m else None


def top(path, inclusive, n):
    args = ["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}", path]
    out = subprocess.run(args, capture_output=True, text=True).stdout
    rows = []
    started = False
    for line in out.splitlines():
        if re.match(r"^-+$", line.strip()) and rows == [] and started:
            continue
        m = re.match(r"^\s*([\d,]+)\s+(?:\(\s*([\d.]+)%\))?\s*(.*)$", line)
        if "file:function" in line:
            started = True
            continue
        if started and m and m.group(3):
            name = m.group(3)
            name = re.sub(r"\s*\[[^\]]*\]$", "", name)  # object file
            rows.append((int(m.group(1).replace(",", "")), name))
            if len(rows) >= n:
                break
    return rows


def short(name, width=110):
    name = name.split(":", 1)[1] if ":" in name and name.split(":", 1)[0].startswith(("/", "?", ".")) else name
    return name if len(name) <= width else name[: width - 1] + "…"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--events", type=int, required=True)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    print("## Profile: callgrind, sysbench oltp_point_select, 1 thread")
    print()
    print("| proxy | queries | instructions (user space) | instructions/query |")
    print("|---|---:|---:|---:|")
    per = {}
    for target in ("psprobe", "haproxy"):
        path = os.path.join(args.dir, f"callgrind.{target}")
        if not os.path.exists(path):
            continue
        ir, q = total_ir(path), queries(args.dir, target)
        per[target] = (path, ir, q)
        print(f"| {target} | {q:,} | {ir:,} | {ir / max(q, 1):,.0f} |")
    for target, (path, ir, q) in per.items():
        for inclusive in (False, True):
            kind = "inclusive" if inclusive else "self"
            print()
            print(f"### {target}: top functions by {kind} instructions")
            print()
            print("| instructions/query | % | function |")
            print("|---:|---:|---|")
            for cost, name in top(path, inclusive, args.top if target == "psprobe" else 12):
                print(f"| {cost / max(q, 1):,.0f} | {100.0 * cost / ir:.1f} | `{short(name)}` |")


if __name__ == "__main__":
    main()
