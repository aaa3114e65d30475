#!/usr/bin/env python3
"""Describes the machine a benchmark ran on, as JSON on stdout (used by scripts/bench.sh)."""

import json
import os
import platform


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def mem_total_gib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def main():
    cpus = os.cpu_count()
    info = {
        "cpus": cpus,
        "cpu_model": cpu_model(),
        "mem_gib": mem_total_gib(),
        "kernel": platform.release(),
        "loadavg_at_start": open("/proc/loadavg").read().split()[:3],
    }
    info["summary"] = (
        f"{cpus} CPUs ({info['cpu_model']}), {info['mem_gib']} GiB RAM, Linux {info['kernel']}, "
        f"load average at start {' '.join(info['loadavg_at_start'])}"
    )
    print(json.dumps(info))


if __name__ == "__main__":
    main()
