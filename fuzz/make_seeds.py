#!/usr/bin/env python3
"""Writes seed inputs for every fuzz target into fuzz/corpus/TARGET/seed-*, from real data in
the repository: recorded sysbench traffic (scripts/bench/traffic/*.bin, and any
fuzz/recordings/*.bin such as a `mariadb --compress` session), the fingerprint corpus, the
phase log and config examples, admin queries. Input layouts are those of src/fuzzing/.

  fuzz/make_seeds.py            (then scripts/fuzz.sh with FUZZ_MERGE=1 minimizes them)
"""

import glob
import os
import re
import struct
import subprocess
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def recording(path):
    """[(direction b'C'/b'S', bytes)] of a `psprobe-bench record-traffic` file."""
    data = open(path, "rb").read()
    out, i = [], 0
    while i + 5 <= len(data):
        d, n = data[i : i + 1], struct.unpack_from("<I", data, i + 1)[0]
        out.append((d, data[i + 5 : i + 5 + n]))
        i += 5 + n
    return out


def packets(stream):
    """(seq, payload) of a plain MySQL byte stream (whole packets only)."""
    out, i = [], 0
    while i + 4 <= len(stream):
        n = stream[i] | stream[i + 1] << 8 | stream[i + 2] << 16
        if i + 4 + n > len(stream):
            break
        out.append((stream[i + 3], stream[i + 4 : i + 4 + n]))
        i += 4 + n
    return out


def session_input(chunks, limit=16384):
    out = bytearray()
    for d, b in chunks:
        for j in range(0, len(b), 0xFFFF):
            piece = b[j : j + 0xFFFF]
            if len(out) + 3 + len(piece) > limit:
                return bytes(out)
            out += bytes([1 if d == b"S" else 0]) + struct.pack("<H", len(piece)) + piece
    return bytes(out)


def cuts(lengths):
    return bytes([len(lengths)]) + bytes(l - 1 for l in lengths)


def frame_header(n, seq):
    return struct.pack("<I", n)[:3] + bytes([seq])


def compressed_frame(seq, payload, algo):
    if algo == "zlib":
        body = zlib.compress(payload)
    else:
        body = subprocess.run(["zstd", "-q", "-c", "-19"], input=payload, capture_output=True,
                              check=True).stdout
    return struct.pack("<I", len(body))[:3] + bytes([seq]) + struct.pack("<I", len(payload))[:3] + body


def stored_frame(seq, payload):
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + b"\0\0\0" + payload


def main():
    recs = sorted(glob.glob(os.path.join(ROOT, "scripts/bench/traffic/*.bin")))
    recs += sorted(glob.glob(os.path.join(ROOT, "fuzz/recordings/*.bin")))
    for path in recs:
        name = os.path.splitext(os.path.basename(path))[0]
        chunks = recording(path)
        client = b"".join(b for d, b in chunks if d == b"C")
        server = b"".join(b for d, b in chunks if d == b"S")
        # session: the start of the connection (handshake and first commands), as read.
        write("session", name, session_input(chunks))
        write("session", name + "-small", session_input(chunks, 2048))
        # frame: each direction's first bytes, a few chunk boundaries.
        write("frame", name + "-client", bytes([5, 255]) + cuts([7, 100, 256]) + client[:4000])
        write("frame", name + "-server", bytes([3, 3]) + cuts([1, 33]) + server[:4000])
        cp, sp = packets(client[:200000]), packets(server[:200000])
        if not cp or not sp:
            continue
        greeting, hello = sp[0][1], cp[0][1]
        caps = struct.unpack_from("<I", hello, 0)[0] if len(hello) >= 4 else 0
        write("handshake", name + "-greeting", struct.pack("<Q", caps) + cuts([]) + greeting)
        write("handshake", name + "-hello", struct.pack("<Q", caps) + cuts([3, 50]) + hello)
        write("handshake", name + "-stream", struct.pack("<Q", caps) + cuts([9]) + client[:600])
        # command: client commands with the server packets that answer them.
        seen = set()
        order = [(d, b) for d, b in chunks]
        cstream, sstream = bytearray(), bytearray()
        events = []  # ('C'|'S', seq, payload) in arrival order
        cpos = spos = 0
        for d, b in order:
            buf = cstream if d == b"C" else sstream
            buf += b
            pos = cpos if d == b"C" else spos
            while pos + 4 <= len(buf):
                n = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
                if pos + 4 + n > len(buf):
                    break
                events.append((d, buf[pos + 3], bytes(buf[pos + 4 : pos + 4 + n])))
                pos += 4 + n
            if d == b"C":
                cpos = pos
            else:
                spos = pos
            if len(events) > 4000:
                break
        for i, (d, seq, payload) in enumerate(events[2:], start=2):
            if d != b"C" or seq != 0 or not payload or payload[0] in seen:
                continue
            seen.add(payload[0])
            shape = {0x03: 3, 0x16: 4, 0x17: 3, 0x1c: 5, 0x04: 6, 0x11: 7}.get(payload[0], 1)
            body = payload[1:]
            resp = bytearray()
            for d2, _, p2 in events[i + 1 :]:
                if d2 == b"C":
                    break
                resp += bytes([min(len(p2), 254)]) + p2[:254]
            column_type = 0x03
            write("command", "%s-cmd%02x" % (name, payload[0]),
                  bytes([column_type, shape]) + struct.pack("<Q", caps | 0x0100_0000)
                  + struct.pack("<H", len(body)) + body + bytes(resp))
        # compress: the client's first packets as zlib and zstd frames, and stored.
        plain = client[:3000]
        for algo, flag in (("zlib", 0), ("zstd", 1)):
            stream = compressed_frame(0, plain[:1500], algo) + compressed_frame(1, plain[1500:], algo)
            write("compress", "%s-%s" % (name, algo), bytes([flag]) + cuts([5, 17, 200]) + stream)
        write("compress", name + "-stored", bytes([0]) + cuts([]) + stored_frame(0, plain[:100]))

    # digest: each statement of the fingerprint corpus, default options and mysql style.
    text = open(os.path.join(ROOT, "tests/data/fingerprint_corpus.sql"), "rb").read()
    for i, line in enumerate(l for l in text.split(b"\n") if l.strip() and not l.startswith(b"--")):
        write("digest", "corpus%03d" % i, bytes([i % 4]) + line)

    # admin_sql: what DBAs and client libraries send.
    queries = [
        "SELECT digest_text, sum(count) FROM digests GROUP BY digest_text ORDER BY 2 DESC LIMIT 5",
        "select @@version_comment limit 1",
        "SELECT @@session.auto_increment_increment AS auto_increment_increment, @@character_set_client",
        "SHOW STATUS LIKE 'conn%'", "SHOW GLOBAL VARIABLES WHERE Variable_name = 'version'",
        "SHOW FULL COLUMNS FROM psprobe.digests LIKE 'c%'", "DESCRIBE digests", "desc phases count",
        "SHOW CREATE TABLE overhead", "SHOW TABLES FROM psprobe", "SHOW DATABASES", "SHOW WARNINGS",
        "SHOW PROCESSLIST", "TABLE connections", "USE psprobe", "SET NAMES utf8mb4",
        "SET GLOBAL x = 1", "BEGIN", "START TRANSACTION", "ROLLBACK",
        "select 'it\\'s', \"dq\", `back``tick` # comment\n from status -- c\n /* x */",
        "EXPLAIN SELECT * FROM commands WHERE scenario = 'a' and count > 1",
        "SHOW STATUS LIKE '%%%%%%%%%%%%#'", "WITH t AS (SELECT 1) SELECT * FROM t",
        "DELETE FROM digests", "(SELECT 1)", "pragma table_info(digests)", "values (1, 'a')",
    ]
    for i, q in enumerate(queries):
        write("admin_sql", "query%02d" % i, b"\0" + q.encode())
    wire = b""
    for i, q in enumerate(queries[:6]):
        payload = b"\x03" + q.encode()
        wire += frame_header(len(payload), 0) + payload
    wire += frame_header(9, 0) + b"\x04digests\0"
    wire += frame_header(5, 0) + b"\x03\xff\xfe\x80x"
    write("admin_sql", "wire", b"\x01" + struct.pack("<H", 4096) + cuts([3, 40]) + wire)
    write("admin_sql", "wire-small-cap", b"\x01" + struct.pack("<H", 20) + cuts([]) + wire)

    # config: the example files and every ```toml block of the docs.
    write("config", "docker", open(os.path.join(ROOT, "docker/psprobe.toml"), "rb").read())
    for path in [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs/*.md"))):
        text = open(path, encoding="utf-8").read()
        for i, block in enumerate(re.findall(r"```toml\n(.*?)```", text, re.S)):
            write("config", "%s-%d" % (os.path.basename(path)[:-3], i), block.encode())

    # phase_log: the version 1 example log, and its first records alone.
    log = open(os.path.join(ROOT, "tests/data/phases-v1.jsonl"), "rb").read()
    write("phase_log", "v1", log)
    write("phase_log", "v1-head", b"\n".join(log.split(b"\n")[:3]))


if __name__ == "__main__":
    main()
