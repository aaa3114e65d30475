"""The same small workload through a Python driver, carried as asked (plain, TLS,
compressed). Prints one line: a checksum of every result, so runs can be compared.

usage: workload.py DRIVER MODE HOST PORT USER PASSWORD DATABASE TABLE
  DRIVER  pymysql | connector
  MODE    plain | tls | default | compress | tls_compress
"""
import hashlib
import ssl
import sys

driver, mode, host, port, user, password, database, table = sys.argv[1:9]
port = int(port)


def no_verify():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


if driver == "pymysql":
    import pymysql

    kw = dict(host=host, port=port, user=user, password=password, database=database)
    if mode == "tls":
        kw["ssl"] = no_verify()
    elif mode != "plain":
        sys.exit(f"pymysql: no mode {mode}")
    conn = pymysql.connect(**kw)
    cipher = conn._sock.cipher()[0] if mode == "tls" else ""
elif driver == "connector":
    import mysql.connector

    kw = dict(host=host, port=port, user=user, password=password, database=database,
              use_pure=True)
    if mode == "plain":
        kw["ssl_disabled"] = True
    elif mode == "default":
        pass  # TLS when the server offers it, no verification: the driver's default
    elif mode == "compress":
        kw["ssl_disabled"] = True
        kw["compress"] = True
    elif mode == "tls_compress":
        kw["compress"] = True
    else:
        sys.exit(f"connector: no mode {mode}")
    conn = mysql.connector.connect(**kw)
    cipher = ""
else:
    sys.exit(f"no driver {driver}")

digest = hashlib.sha256()
cur = conn.cursor()
cur.execute(f"DROP TABLE IF EXISTS {table}")
cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, name VARCHAR(64), payload TEXT)")
for i in range(20):
    cur.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (i, f"name-{i}", "p" * (i * 40)))
conn.commit()
for i in range(10):
    cur.execute(f"SELECT id, name, payload FROM {table} WHERE id = %s", (i,))
    for row in cur.fetchall():
        digest.update(repr(row).encode())
cur.execute(f"SELECT COUNT(*), SUM(LENGTH(payload)) FROM {table}")
digest.update(repr(cur.fetchall()).encode())
cur.execute(f"SELECT REPEAT('z', 200000)")
digest.update(repr(cur.fetchall()).encode())
cur.execute(f"UPDATE {table} SET name = CONCAT(name, '!') WHERE id < 5")
conn.commit()
cur.close()
conn.close()
print(digest.hexdigest(), cipher)
