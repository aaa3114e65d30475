#!/usr/bin/env python3
"""Memory targets of issue 6, driven by `scripts/bench.sh --memory`.

  idle    Opens N client connections through a proxy, each completing the MySQL handshake
          (mysql_native_password, written here with the standard library) so that the proxy's
          upstream connection exists and the session is in the command phase; holds them idle
          and reads the proxy's RSS (VmRSS) and peak (VmHWM). Checks the server's
          Threads_connected and, for psprobe, psprobe_connections_active.
  stream  Runs `SELECT REPEAT('x', 17 MiB) FROM seq_1_to_64` (1088 MiB of 17 MiB rows, each
          row split into two physical packets) through the proxy with the mariadb client in
          --quick mode, counts what the client received, and reports the proxy's RSS growth
          (VmHWM during the stream, reset just before, minus VmRSS before).
  report  Prints the markdown table of what idle / stream appended to the results file.
"""

import argparse
import hashlib
import json
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

IDLE_RSS_TARGET_MIB = 200
STREAM_GROWTH_TARGET_MIB = 64
ROW_BYTES = 17 * 1024 * 1024
ROWS = 64

CLIENT_LONG_PASSWORD = 1
CLIENT_PROTOCOL_41 = 1 << 9
CLIENT_TRANSACTIONS = 1 << 13
CLIENT_SECURE_CONNECTION = 1 << 15
CLIENT_MULTI_RESULTS = 1 << 17
CLIENT_PLUGIN_AUTH = 1 << 19


# --- /proc ------------------------------------------------------------------------------------
def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def mib(kib):
    return None if kib is None else round(kib / 1024, 1)


def reset_peak_rss(pid):
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def scrape(metrics, name, label=None):
    """Sum of a metric's samples (optionally only those whose labels contain `label`)."""
    if not metrics:
        return None
    with urllib.request.urlopen(f"http://{metrics}/metrics", timeout=10) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and (line[len(name)] in " {"):
            if label and label not in line:
                continue
            total += float(line.rsplit(" ", 1)[1])
    return total


def server_status(args, variable):
    out = subprocess.run(
        ["mariadb", "--no-defaults", "--protocol=TCP", "-h127.0.0.1", f"-P{args.server_port}",
         f"-u{args.user}", f"-p{args.password}", "-N", "-B", "-e",
         f"SHOW GLOBAL STATUS LIKE '{variable}'"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    return int(out[1])


# --- a minimal MySQL client handshake -----------------------------------------------------------
def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed during the handshake")
        buf += chunk
    return bytes(buf)


def read_packet(sock):
    header = recv_exact(sock, 4)
    length = header[0] | header[1] << 8 | header[2] << 16
    return header[3], recv_exact(sock, length)


def send_packet(sock, seq, payload):
    n = len(payload)
    sock.sendall(bytes([n & 0xFF, (n >> 8) & 0xFF, n >> 16, seq & 0xFF]) + payload)


def native_password(password, salt):
    if not password:
        return b""
    h1 = hashlib.sha1(password.encode()).digest()
    h2 = hashlib.sha1(h1).digest()
    h3 = hashlib.sha1(salt + h2).digest()
    return bytes(a ^ b for a, b in zip(h1, h3))


def parse_greeting(p):
    if p[0] == 0xFF:
        raise ConnectionError(f"server refused: {p[9:].decode(errors='replace')}")
    i = p.index(0, 1) + 1 + 4  # version, connection id
    salt1 = p[i:i + 8]
    i += 8 + 1 + 2 + 1 + 2 + 2  # salt, filler, caps low, charset, status, caps high
    auth_len = p[i]
    i += 1 + 10
    salt2 = p[i:i + max(13, auth_len - 8)]
    return salt1 + salt2[:12]


def connect(port, user, password):
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        seq, greeting = read_packet(sock)
        salt = parse_greeting(greeting)
        caps = (CLIENT_LONG_PASSWORD | CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS
                | CLIENT_SECURE_CONNECTION | CLIENT_MULTI_RESULTS | CLIENT_PLUGIN_AUTH)
        token = native_password(password, salt)
        payload = struct.pack("<IIB23x", caps, 16 * 1024 * 1024, 45)
        payload += user.encode() + b"\0" + bytes([len(token)]) + token
        payload += b"mysql_native_password\0"
        send_packet(sock, seq + 1, payload)
        seq, reply = read_packet(sock)
        if reply[0] == 0xFE:  # auth switch request: plugin name, then the new salt
            end = reply.index(0, 1)
            new_salt = reply[end + 1:].rstrip(b"\0")
            send_packet(sock, seq + 1, native_password(password, new_salt))
            seq, reply = read_packet(sock)
        if reply[0] != 0x00:
            raise ConnectionError(f"login refused: {reply[9:].decode(errors='replace')}")
        sock.settimeout(None)
        return sock
    except BaseException:
        sock.close()
        raise


def quit_and_close(sock):
    try:
        send_packet(sock, 0, b"\x01")  # COM_QUIT
    except OSError:
        pass
    sock.close()


# --- idle -----------------------------------------------------------------------------------------
def run_idle(args):
    pid = args.pid
    base_threads = server_status(args, "Threads_connected")
    reset_peak_rss(pid)
    rss_before = status_kib(pid, "VmRSS")
    socks, errors = [], []
    lock = threading.Lock()

    def one(_):
        try:
            s = connect(args.port, args.user, args.password)
            with lock:
                socks.append(s)
        except Exception as e:  # noqa: BLE001 - counted and reported
            with lock:
                errors.append(str(e))

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(one, range(args.connections)))
    open_s = time.monotonic() - t0
    time.sleep(2)
    rss_held = status_kib(pid, "VmRSS")
    hwm = status_kib(pid, "VmHWM")
    threads_connected = server_status(args, "Threads_connected") - base_threads
    active = scrape(args.metrics, "psprobe_connections_active")
    time.sleep(args.hold)
    rss_held_later = status_kib(pid, "VmRSS")

    t1 = time.monotonic()
    for s in socks:
        quit_and_close(s)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server_status(args, "Threads_connected") > base_threads:
        time.sleep(0.2)
    close_s = time.monotonic() - t1
    time.sleep(1)
    rss_after = status_kib(pid, "VmRSS")

    opened = len(socks)
    row = {
        "test": "idle",
        "target": args.target,
        "connections": args.connections,
        "opened": opened,
        "failed": len(errors),
        "first_error": errors[0] if errors else None,
        "open_s": round(open_s, 1),
        "close_s": round(close_s, 1),
        "upstream_threads_connected": threads_connected,
        "connections_active_metric": active,
        "rss_before_mib": mib(rss_before),
        "rss_held_mib": mib(rss_held),
        "rss_held_later_mib": mib(rss_held_later),
        "peak_rss_mib": mib(hwm),
        "rss_after_close_mib": mib(rss_after),
        "kib_per_connection": round((rss_held - rss_before) / max(opened, 1), 1),
    }
    goal = args.target_connections or args.connections
    row["target_connections"] = goal
    row["rss_at_target_mib"] = (
        row["rss_held_mib"]
        if opened >= goal
        else mib(rss_before + (rss_held - rss_before) / max(opened, 1) * goal)
    )
    append(args.results, row)
    print(
        f"bench:   {args.target}: {opened}/{args.connections} connections held "
        f"(server sees {threads_connected}), RSS {row['rss_held_mib']} MiB "
        f"({row['kib_per_connection']} KiB per connection), peak {row['peak_rss_mib']} MiB, "
        f"after close {row['rss_after_close_mib']} MiB",
        file=sys.stderr,
    )
    if errors:
        print(f"bench:   first error: {errors[0]}", file=sys.stderr)


# --- stream ---------------------------------------------------------------------------------------
def run_stream(args):
    pid = args.pid
    if pid:
        reset_peak_rss(pid)
        rss_before = status_kib(pid, "VmRSS")
    bytes_before = scrape(args.metrics, "psprobe_bytes_total", 'direction="server_to_client"')
    query = f"SELECT REPEAT('x', {ROW_BYTES}) FROM seq_1_to_{ROWS}"
    cmd = ["mariadb", "--no-defaults", "--protocol=TCP", "-h127.0.0.1", f"-P{args.port}",
           f"-u{args.user}", f"-p{args.password}", "--database=sbtest",
           "--max-allowed-packet=1G", "--quick",
           "-N", "-B", "-e", query]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    received = rows = 0
    peak_sampled = 0
    while True:
        chunk = proc.stdout.read(1 << 20)
        if not chunk:
            break
        received += len(chunk)
        rows += chunk.count(b"\n")
        if pid:
            peak_sampled = max(peak_sampled, status_kib(pid, "VmRSS") or 0)
    err = proc.stderr.read().decode(errors="replace")
    status = proc.wait()
    elapsed = time.monotonic() - t0
    if status != 0:
        sys.exit(f"memory: mariadb client failed ({status}): {err.strip()}")
    row = {
        "test": "stream",
        "target": args.target,
        "rows": rows,
        "client_bytes": received,
        "seconds": round(elapsed, 2),
        "mib_per_s": round(received / 1048576 / elapsed, 1),
    }
    if pid:
        hwm = status_kib(pid, "VmHWM")
        row.update(
            {
                "rss_before_mib": mib(rss_before),
                "peak_rss_mib": mib(hwm),
                "rss_after_mib": mib(status_kib(pid, "VmRSS")),
                "rss_growth_mib": mib(hwm - rss_before),
            }
        )
    if args.metrics:
        row["proxy_server_to_client_bytes"] = (
            scrape(args.metrics, "psprobe_bytes_total", 'direction="server_to_client"') - bytes_before
        )
    append(args.results, row)
    print(
        f"bench:   {args.target}: {rows} rows, {received / 1048576:.0f} MiB in {elapsed:.1f} s"
        + (f", RSS growth {row['rss_growth_mib']} MiB (peak {row['peak_rss_mib']} MiB)" if pid else ""),
        file=sys.stderr,
    )
    if rows != ROWS or received < ROWS * ROW_BYTES:
        sys.exit(f"memory: expected {ROWS} rows of {ROW_BYTES} bytes, got {rows} rows, {received} bytes")


# --- report ---------------------------------------------------------------------------------------
def run_report(args):
    rows = [json.loads(line) for line in open(args.results) if line.strip()]
    print("## Memory")
    print()
    print("| test | through | result | issue 6 target | verdict |")
    print("|---|---|---|---|---|")
    for r in rows:
        if r["test"] == "idle":
            result = (
                f"{r['opened']:,} of {r['connections']:,} held (server: {r['upstream_threads_connected']:,} "
                f"connections); RSS {r['rss_held_mib']} MiB = {r['kib_per_connection']} KiB/connection, "
                f"peak {r['peak_rss_mib']} MiB, {r['rss_after_close_mib']} MiB after close"
            )
            n_goal = r.get("target_connections") or r["connections"]
            scaled = r["opened"] < n_goal
            if scaled:
                result += f"; extrapolated to {n_goal:,}: {r['rss_at_target_mib']} MiB"
            if r["target"] == "psprobe":
                ok = r["rss_at_target_mib"] <= IDLE_RSS_TARGET_MIB and r["opened"] == r["connections"]
                goal = f"RSS <= {IDLE_RSS_TARGET_MIB} MiB with {n_goal:,} held"
                verdict = ("met" if ok else "MISSED") + (" (extrapolated)" if scaled else "")
            else:
                goal, verdict = "(comparison)", ""
            print(f"| {n_goal:,} idle connections | {r['target']} | {result} | {goal} | {verdict} |")
        else:
            result = f"{r['rows']} rows, {r['client_bytes'] / 1048576:.0f} MiB in {r['seconds']} s ({r['mib_per_s']} MiB/s)"
            if "rss_growth_mib" in r:
                result += f"; RSS growth {r['rss_growth_mib']} MiB (peak {r['peak_rss_mib']} MiB)"
            if r.get("proxy_server_to_client_bytes"):
                result += f"; psprobe counted {r['proxy_server_to_client_bytes'] / 1048576:.0f} MiB server to client"
            if r["target"] == "psprobe":
                ok = r["rss_growth_mib"] < STREAM_GROWTH_TARGET_MIB
                goal = f"RSS growth < {STREAM_GROWTH_TARGET_MIB} MiB"
                verdict = "met" if ok else "MISSED"
            else:
                goal, verdict = "(comparison)", ""
            print(f"| 1 GiB of 17 MiB rows | {r['target']} | {result} | {goal} | {verdict} |")


def append(path, row):
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["idle", "stream", "report"])
    ap.add_argument("--results", required=True)
    ap.add_argument("--target", default="psprobe")
    ap.add_argument("--port", type=int)
    ap.add_argument("--pid", type=int, default=0)
    ap.add_argument("--metrics")
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--target-connections", type=int, default=None,
                    help="connections the target is about; when fewer could be opened "
                         "(descriptor limit), RSS is also extrapolated linearly to this many")
    ap.add_argument("--hold", type=float, default=5.0)
    ap.add_argument("--user", default="bench")
    ap.add_argument("--password", default="bench")
    ap.add_argument("--server-port", type=int)
    args = ap.parse_args()
    {"idle": run_idle, "stream": run_stream, "report": run_report}[args.mode](args)


if __name__ == "__main__":
    main()
