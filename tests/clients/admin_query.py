"""Runs SQL statements against psprobe's admin interface with a Python MySQL driver and prints
what the driver returned, as JSON, for tests/through_proxy/admin_clients.rs.

usage: admin_query.py pymysql|connector HOST PORT USER PASSWORD < statements.json
stdin: a JSON list of statements. stdout: a JSON list with, per statement, either
{"columns": [{"name": ..., "type": MySQL type code}], "rows": [[value, ...], ...]} (values as
the driver decoded them: int, float, str or null) or {"error": {"code": ..., "message": ...}}.
"""
import decimal
import json
import sys


def connect(driver, host, port, user, password):
    if driver == "pymysql":
        import pymysql

        return pymysql.connect(host=host, port=port, user=user, password=password,
                               database="psprobe", connect_timeout=10), pymysql.MySQLError
    import mysql.connector

    conn = mysql.connector.connect(host=host, port=port, user=user, password=password,
                                   database="psprobe", connection_timeout=10, use_pure=True)
    return conn, mysql.connector.Error


def plain(value):
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    return value


def main():
    driver, host, port, user, password = sys.argv[1:6]
    statements = json.load(sys.stdin)
    conn, error_type = connect(driver, host, int(port), user, password)
    out = []
    for sql in statements:
        cur = conn.cursor()
        try:
            cur.execute(sql)
            if cur.description is None:
                out.append({"columns": [], "rows": []})
            else:
                columns = [{"name": d[0], "type": d[1]} for d in cur.description]
                rows = [[plain(v) for v in row] for row in cur.fetchall()]
                out.append({"columns": columns, "rows": rows})
        except error_type as e:
            out.append({"error": {"code": e.args[0], "message": str(e.args[1]) if len(e.args) > 1 else str(e)}})
        finally:
            cur.close()
    conn.close()
    json.dump(out, sys.stdout)


main()
