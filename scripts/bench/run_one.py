#!/usr/bin/env python3
"""Runs one sysbench measurement and appends one JSON line with its numbers.

Around the run it samples, from /proc:
  - the proxy's CPU time (utime + stime of /proc/PID/stat: every thread, clock ticks),
  - the proxy's peak RSS during the run (VmHWM, reset before the run via clear_refs = 5),
  - mariadbd's CPU time, sysbench's own CPU time (rusage of children), and the whole
    machine's busy time (/proc/stat), so interference from other processes shows up.
sysbench's report gives queries, transactions, queries/s, average and 99th percentile latency.

Usage: run_one.py --results FILE --raw DIR --workload W --threads T --round R --target NAME
                  --proxy-pid PID|0 --server-pid PID -- sysbench ...
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_split(pid):
    """(utime, stime) of a whole process (all threads, living and exited), in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3 of stat); utime is field 14, stime field 15.
    return int(fields[11]), int(fields[12])


def cpu_ticks(pid):
    """utime + stime of a whole process, in clock ticks."""
    if not pid:
        return None
    return sum(cpu_split(pid))


def context_switches(pid):
    """Voluntary + involuntary context switches of the process's threads alive now (a proxy's
    worker threads live as long as it does): how often its threads went to sleep / woke."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def reset_peak_rss(pid):
    """Resets VmHWM to the current RSS (Linux >= 4.0). Returns False when not allowed."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def machine_ticks():
    """Clock ticks of all CPUs since boot: task time, interrupt time (the loopback network
    stack runs much of its work in softirq), steal (other guests on the host), total."""
    with open("/proc/stat") as f:
        parts = f.readline().split()
    values = [int(v) for v in parts[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (values + [0] * 8)[:8]
    tasks = user + nice + system
    return {
        "tasks": tasks,
        "irq": irq + softirq,
        "steal": steal,
        "total": tasks + irq + softirq + steal + idle + iowait,
    }


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def children_ctxsw():
    """Context switches of finished children (sysbench: all its threads)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_nvcsw + r.ru_nivcsw


def histogram_percentile(text, q):
    """The q-quantile of sysbench's latency histogram (--histogram=on), in ms. sysbench's own
    "99th percentile" line comes from the same buckets but is printed with 2 decimals, which
    is 7% at 0.14 ms; the histogram prints 3."""
    buckets = []
    in_hist = False
    for line in text.splitlines():
        if line.startswith("Latency histogram"):
            in_hist = True
            continue
        if in_hist:
            m = re.match(r"^\s*([\d.]+)\s*\|[* ]*\s(\d+)\s*$", line)
            if m:
                buckets.append((float(m.group(1)), int(m.group(2))))
            elif buckets and not line.strip():
                break
    total = sum(c for _, c in buckets)
    if not total:
        return None
    seen = 0
    for value, count in buckets:
        seen += count
        if seen >= q * total:
            return value
    return buckets[-1][0]


def parse_sysbench(text):
    def num(pattern, cast=float):
        m = re.search(pattern, text, re.MULTILINE)
        return cast(m.group(1)) if m else None

    return {
        "queries": num(r"^\s*queries:\s+(\d+)", int),
        "qps": num(r"^\s*queries:\s+\d+\s+\(([\d.]+) per sec\.\)"),
        "transactions": num(r"^\s*transactions:\s+(\d+)", int),
        "tps": num(r"^\s*transactions:\s+\d+\s+\(([\d.]+) per sec\.\)"),
        "ignored_errors": num(r"^\s*ignored errors:\s+(\d+)", int),
        "reconnects": num(r"^\s*reconnects:\s+(\d+)", int),
        "total_time_s": num(r"^\s*total time:\s+([\d.]+)s"),
        "lat_avg_ms": num(r"^\s*avg:\s+([\d.]+)"),
        "lat_p99_ms_sysbench": num(r"^\s*99th percentile:\s+([\d.]+)"),
        "lat_p99_ms": histogram_percentile(text, 0.99),
        "lat_max_ms": num(r"^\s*max:\s+([\d.]+)"),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--raw", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--round", type=int, required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--proxy-pid", type=int, default=0)
    ap.add_argument("--server-pid", type=int, default=0)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    pid = args.proxy_pid
    hwm_reset = reset_peak_rss(pid) if pid else False
    proxy0 = cpu_ticks(pid)
    split0 = cpu_split(pid) if pid else None
    ctx0 = context_switches(pid) if pid else None
    server0 = cpu_ticks(args.server_pid)
    m0 = machine_ticks()
    child0 = children_cpu_s()
    child_ctx0 = children_ctxsw()
    t0 = time.monotonic()
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - t0
    child1 = children_cpu_s()
    child_ctx1 = children_ctxsw()
    m1 = machine_ticks()
    server1 = cpu_ticks(args.server_pid)
    proxy1 = cpu_ticks(pid)
    split1 = cpu_split(pid) if pid else None
    ctx1 = context_switches(pid) if pid else None

    name = f"{args.workload}-t{args.threads}-r{args.round}-{args.target}.txt"
    with open(os.path.join(args.raw, name), "w") as f:
        f.write(proc.stdout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:])
        sys.exit(f"run_one: sysbench exited with {proc.returncode} ({name})")

    row = {
        "workload": args.workload,
        "threads": args.threads,
        "round": args.round,
        "target": args.target,
        "wall_s": round(wall, 3),
    }
    row.update(parse_sysbench(proc.stdout))
    if row["lat_p99_ms"] is None:
        row["lat_p99_ms"] = row["lat_p99_ms_sysbench"]
    if row["queries"] is None or row["lat_p99_ms"] is None:
        sys.stderr.write(proc.stdout[-4000:])
        sys.exit(f"run_one: could not read sysbench's report ({name})")
    queries = max(row["queries"], 1)
    to_us = 1e6 / CLK_TCK
    if pid:
        row["proxy_cpu_us"] = (proxy1 - proxy0) * to_us
        row["proxy_cpu_us_per_query"] = row["proxy_cpu_us"] / queries
        row["proxy_peak_rss_kib"] = status_kib(pid, "VmHWM")
        row["proxy_rss_kib"] = status_kib(pid, "VmRSS")
        row["proxy_peak_rss_reset"] = hwm_reset
        row["proxy_user_us_per_query"] = (split1[0] - split0[0]) * to_us / queries
        row["proxy_sys_us_per_query"] = (split1[1] - split0[1]) * to_us / queries
        row["proxy_ctxsw_per_query"] = (ctx1 - ctx0) / queries if ctx0 is not None else None
    else:
        row["proxy_cpu_us"] = None
        row["proxy_cpu_us_per_query"] = None
        row["proxy_peak_rss_kib"] = None
        row["proxy_rss_kib"] = None
        row["proxy_peak_rss_reset"] = None
    if server0 is not None:
        row["server_cpu_us_per_query"] = (server1 - server0) * to_us / queries
    row["sysbench_cpu_us_per_query"] = (child1 - child0) * 1e6 / queries
    row["sysbench_ctxsw_per_query"] = (child_ctx1 - child_ctx0) / queries
    d = {k: m1[k] - m0[k] for k in m0}
    total = max(d["total"], 1)
    row["machine_busy_pct"] = round(100.0 * (d["tasks"] + d["irq"] + d["steal"]) / total, 1)
    row["machine_irq_pct"] = round(100.0 * d["irq"] / total, 1)
    row["machine_steal_pct"] = round(100.0 * d["steal"] / total, 1)
    # Task CPU used during the run by processes other than the three measured ones (others'
    # builds on a shared machine): all task time minus server, proxy and sysbench.
    own_us = (row.get("server_cpu_us_per_query") or 0) * queries + (row["proxy_cpu_us"] or 0)
    own_us += (child1 - child0) * 1e6
    row["other_cpu_pct_of_machine"] = round(
        100.0 * max(d["tasks"] * to_us - own_us, 0) / (total * to_us), 1
    )
    with open(args.results, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(
        f"bench:   {row['qps']:.0f} q/s, p99 {row['lat_p99_ms']} ms"
        + (
            f", proxy {row['proxy_cpu_us_per_query']:.1f} us/query, "
            f"peak RSS {row['proxy_peak_rss_kib'] / 1024:.1f} MiB"
            if pid
            else ""
        )
        + f", machine busy {row['machine_busy_pct']}% (softirq {row['machine_irq_pct']}%, "
        f"steal {row['machine_steal_pct']}%, other processes {row['other_cpu_pct_of_machine']}%)",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
