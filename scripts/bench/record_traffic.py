#!/usr/bin/env python3
"""A tiny TCP tee that records MySQL traffic for crates/psprobe-core/benches/session.rs.

  record_traffic.py --listen-port P --upstream-port U --out FILE

Accepts one client at a time on 127.0.0.1:P, connects it to 127.0.0.1:U, forwards both ways
and records every chunk as it was read: 1 byte direction (b'C' client->server, b'S'
server->client), 4 bytes little-endian length, the bytes. The chunks are what recv() returned,
so the session machine is fed packets split and batched the way a relay sees them. Only the
connection that carried the most bytes is kept (sysbench opens one per thread; record with
--threads=1). Stops on SIGTERM / SIGINT and then writes FILE.
"""

import argparse
import selectors
import signal
import socket
import struct
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen-port", type=int, required=True)
    ap.add_argument("--upstream-port", type=int, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.listen_port))
    listener.listen(16)
    listener.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, None)
    recordings = []  # one list of (direction, bytes) per connection
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    print("recording", flush=True)

    while not stop:
        for key, _ in sel.select(timeout=0.2):
            if key.data is None:
                client, _ = listener.accept()
                server = socket.create_connection(("127.0.0.1", args.upstream_port))
                for s in (client, server):
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                rec = []
                recordings.append(rec)
                sel.register(client, selectors.EVENT_READ, (client, server, b"C", rec))
                sel.register(server, selectors.EVENT_READ, (server, client, b"S", rec))
                continue
            src, dst, direction, rec = key.data
            try:
                data = src.recv(32 * 1024)
            except OSError:
                data = b""
            if not data:
                for s in (src, dst):
                    try:
                        sel.unregister(s)
                    except (KeyError, ValueError):
                        pass
                    s.close()
                continue
            rec.append((direction, data))
            dst.sendall(data)

    if not recordings:
        sys.exit("record_traffic: no connection was recorded")
    best = max(recordings, key=lambda r: sum(len(d) for _, d in r))
    with open(args.out, "wb") as f:
        for direction, data in best:
            f.write(direction + struct.pack("<I", len(data)) + data)
    print(
        f"recorded {len(best)} chunks, {sum(len(d) for _, d in best)} bytes "
        f"(of {len(recordings)} connection(s)) to {args.out}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
