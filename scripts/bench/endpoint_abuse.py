#!/usr/bin/env python3
"""Figures for docs/reliability.md: how psprobe's admin port and metrics endpoint hold
up against abuse. Starts the given psprobe binary (no upstream server is needed) and measures:

- password guessing: T threads loop on logins with a wrong password for S seconds; prints
  password checks per second (answers 1045), refusals without a check (1129), attempts per
  second, and the WARN lines the storm wrote;
- a 10 MB admin query: the answer, and psprobe's peak RSS (VmHWM) before and after;
- a metrics request that never completes: the answer and the time to it.

    target/clients/venv/bin/python scripts/bench/endpoint_abuse.py [--psprobe BIN]
        [--threads 8] [--seconds 5] [--query-mb 10]

Needs PyMySQL (scripts/setup-clients.sh puts it in target/clients/venv).
"""

import argparse
import os
import socket
import subprocess
import threading
import time

import pymysql

PASSWORD = "bench-admin-secret"


def start(binary):
    env = dict(os.environ, PSPROBE_ADMIN_PASSWORD=PASSWORD)
    proc = subprocess.Popen(
        [binary, "proxy", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1",
         "--metrics", "127.0.0.1:0", "--admin", "127.0.0.1:0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
    stderr = []
    threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True).start()
    return proc, fields, stderr


def hostport(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def guessing(admin, threads, seconds):
    host, port = hostport(admin)
    counts = {}
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def loop():
        while time.monotonic() < stop:
            try:
                pymysql.connect(host=host, port=port, user="admin", password="wrong",
                                connect_timeout=5).close()
                code = 0
            except pymysql.err.MySQLError as e:
                code = e.args[0] if e.args else -1
            with lock:
                counts[code] = counts.get(code, 0) + 1

    workers = [threading.Thread(target=loop) for _ in range(threads)]
    started = time.monotonic()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return counts, time.monotonic() - started


def big_query(admin, pid, megabytes):
    host, port = hostport(admin)
    hwm_before = status_kib(pid, "VmHWM")
    conn = pymysql.connect(host=host, port=port, user="admin", password=PASSWORD,
                           max_allowed_packet=64 << 20)
    query = "SELECT '" + "x" * (megabytes * 1000 * 1000) + "'"
    t0 = time.monotonic()
    try:
        with conn.cursor() as c:
            c.execute(query)
        answer = "rows"
    except pymysql.err.MySQLError as e:
        answer = f"ERROR {e.args[0]}"
    elapsed = time.monotonic() - t0
    try:
        with conn.cursor() as c:
            c.execute("SELECT 'after'")
            after = c.fetchone()[0]
    except pymysql.err.MySQLError as e:
        after = f"ERROR {e.args}"
    except Exception as e:  # the connection may be gone
        after = f"connection lost ({type(e).__name__})"
    hwm_after = status_kib(pid, "VmHWM")
    return answer, elapsed, after, hwm_before, hwm_after


def never_completes(metrics):
    s = socket.create_connection(hostport(metrics))
    s.settimeout(60)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    t0 = time.monotonic()
    data = b""
    while True:
        try:
            chunk = s.recv(4096)
        except OSError as e:
            data += f"<{e}>".encode()
            break
        if not chunk:
            break
        data += chunk
    elapsed = time.monotonic() - t0
    status = data.split(b"\r\n", 1)[0].decode(errors="replace") or "(closed without an answer)"
    return status, elapsed


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--psprobe", default="target/release/psprobe")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--query-mb", type=int, default=10)
    args = p.parse_args()
    proc, fields, stderr = start(args.psprobe)
    try:
        counts, elapsed = guessing(fields["admin"], args.threads, args.seconds)
        total = sum(counts.values())
        time.sleep(0.5)
        warns = sum(1 for line in stderr if "WARN" in line and "login" in line)
        print(f"guessing: {args.threads} threads x {elapsed:.1f} s: {total} attempts "
              f"({total / elapsed:.0f}/s); password checks (1045): {counts.get(1045, 0)} "
              f"({counts.get(1045, 0) / elapsed:.1f}/s); refused unchecked (1129): "
              f"{counts.get(1129, 0)}; other: "
              f"{ {k: v for k, v in counts.items() if k not in (1045, 1129)} }; "
              f"WARN lines: {warns}")
        # Let the peer's bucket refill before logging in with the right password.
        time.sleep(6)
        answer, took, after, before_kib, after_kib = big_query(
            fields["admin"], proc.pid, args.query_mb)
        print(f"{args.query_mb} MB admin query: {answer} in {took:.2f} s; next query: {after}; "
              f"peak RSS {before_kib / 1024:.1f} MiB before, {after_kib / 1024:.1f} MiB after")
        status, took = never_completes(fields["metrics"])
        print(f"metrics request that never completes: {status!r} after {took:.2f} s")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
