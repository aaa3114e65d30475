#!/usr/bin/env python3
"""Table of `scripts/bench.sh --tls`: psprobe terminating TLS on both legs against psprobe
passing TLS through, a direct TLS connection, and psprobe with plain clients.

Ratios are taken per round (the four runs of a round ran back to back), then summarised as
median (min..max) over rounds. Targets of issue 10, checked on the medians:
  CPU per query, both legs terminated  <= 2.0 x  psprobe's CPU per query with plain clients
  queries/s, terminated                >= 0.9 x  psprobe passthrough
"""

import argparse
import json
import os
import statistics
from collections import defaultdict

TARGETS = ("direct_tls", "psprobe_terminate", "psprobe_passthrough", "psprobe_plain")
MAX_CPU_VS_PLAIN = 2.0
MIN_QPS_VS_PASSTHROUGH = 0.9


def stats(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def fmt(s, digits=2):
    if s is None:
        return "n/a"
    med = f"{s['median']:.{digits}f}"
    if s["n"] == 1 or s["min"] == s["max"]:
        return med
    return f"{med} ({s['min']:.{digits}f}..{s['max']:.{digits}f})"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    args = ap.parse_args()
    with open(os.path.join(args.dir, "results.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    rounds = defaultdict(dict)
    for r in rows:
        rounds[(r["workload"], r["threads"], r["round"])][r["target"]] = r
    cells = defaultdict(lambda: defaultdict(list))
    for (workload, threads, _), runs in sorted(rounds.items()):
        if not all(t in runs for t in TARGETS):
            continue
        term, passt, direct, plain = (runs[t] for t in
                                      ("psprobe_terminate", "psprobe_passthrough", "direct_tls", "psprobe_plain"))
        c = cells[(workload, threads)]
        c["qps_term_vs_pass"].append(ratio(term["qps"], passt["qps"]))
        c["qps_term_vs_direct"].append(ratio(term["qps"], direct["qps"]))
        c["cpu_term_vs_plain"].append(ratio(term["proxy_cpu_us_per_query"], plain["proxy_cpu_us_per_query"]))
        c["cpu_term_vs_pass"].append(ratio(term["proxy_cpu_us_per_query"], passt["proxy_cpu_us_per_query"]))
        for t in TARGETS:
            c[f"qps_{t}"].append(runs[t]["qps"])
            c[f"cpu_{t}"].append(runs[t]["proxy_cpu_us_per_query"])
            c[f"p99_{t}"].append(runs[t]["lat_p99_ms"])
    print("| workload | threads | q/s terminate/passthrough | q/s terminate/direct TLS | CPU µs/query terminate | "
          "CPU µs/query plain | CPU µs/query passthrough | CPU terminate/plain | p99 ms direct / terminate / passthrough |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    verdicts = []
    summary = {}
    for (workload, threads), c in sorted(cells.items()):
        s = {k: stats(v) for k, v in c.items()}
        summary[f"{workload}-t{threads}"] = s
        p99 = " / ".join(fmt(s[f"p99_{t}"], 3) for t in ("direct_tls", "psprobe_terminate", "psprobe_passthrough"))
        print(f"| {workload} | {threads} | {fmt(s['qps_term_vs_pass'])} | {fmt(s['qps_term_vs_direct'])} | "
              f"{fmt(s['cpu_psprobe_terminate'], 1)} | {fmt(s['cpu_psprobe_plain'], 1)} | "
              f"{fmt(s['cpu_psprobe_passthrough'], 1)} | {fmt(s['cpu_term_vs_plain'])} | {p99} |")
        q, cpu = s["qps_term_vs_pass"], s["cpu_term_vs_plain"]
        if q and cpu:
            verdicts.append(
                f"{workload} t={threads}: CPU terminate/plain {cpu['median']:.2f} "
                f"({'met' if cpu['median'] <= MAX_CPU_VS_PLAIN else 'NOT met'}, target <= {MAX_CPU_VS_PLAIN}); "
                f"q/s terminate/passthrough {q['median']:.2f} "
                f"({'met' if q['median'] >= MIN_QPS_VS_PASSTHROUGH else 'NOT met'}, target >= {MIN_QPS_VS_PASSTHROUGH})")
    print()
    for v in verdicts:
        print(f"- {v}")
    with open(os.path.join(args.dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
