"""One login through a Python driver and one query, plain or over TLS. Prints one line:
`ok USER` (CURRENT_USER() as the server says it), or `error CODE MESSAGE`.

usage: login.py DRIVER MODE HOST PORT USER PASSWORD
  DRIVER  pymysql | connector
  MODE    plain | tls
"""
import ssl
import sys

driver, mode, host, port, user, password = sys.argv[1:7]
port = int(port)


def no_verify():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


try:
    if driver == "pymysql":
        import pymysql

        kw = dict(host=host, port=port, user=user, password=password)
        if mode == "tls":
            kw["ssl"] = no_verify()
        conn = pymysql.connect(**kw)
    elif driver == "connector":
        import mysql.connector

        kw = dict(host=host, port=port, user=user, password=password, use_pure=True)
        if mode == "plain":
            kw["ssl_disabled"] = True
        conn = mysql.connector.connect(**kw)
    else:
        sys.exit(f"no driver {driver}")
    cur = conn.cursor()
    cur.execute("SELECT CURRENT_USER()")
    print("ok", cur.fetchall()[0][0])
    conn.close()
except Exception as e:  # the driver's error, whatever its class: its code and text
    code = getattr(e, "errno", None) or (e.args[0] if e.args and isinstance(e.args[0], int) else 0)
    print("error", code, str(e).replace("\n", " "))
