#!/usr/bin/python3
"""psycopg 3 through `corral proxy`: one scenario per run, for
tests/drivers/drivers_test.cc. Each scenario checks the values it reads back
(exit 1 with a message on a mismatch) and prints one line
`psycopg <scenario> key=value ...` that the gtest compares.

  /usr/bin/python3 psycopg_client.py HOST PORT USER DBNAME SSLMODE TABLE SCENARIO

Scenarios: default (psycopg's defaults: prepares after 5 executions),
prepared (prepare_threshold=0: every statement server-side prepared),
copy (COPY FROM STDIN and COPY TO STDOUT), executemany, binary (binary
parameters `%b` and binary results)."""
import datetime
import decimal
import sys
import uuid

import psycopg


def check(what, got, want):
    if got != want:
        sys.exit("psycopg: %s: got %r, want %r" % (what, got, want))


def scenario_default(conn, t, prepare_threshold):
    conn.prepare_threshold = prepare_threshold
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE %s (k int PRIMARY KEY, v text NOT NULL, n numeric NOT NULL)" % t)
        for k in range(1, 101):
            cur.execute("INSERT INTO %s (k, v, n) VALUES (%%s, %%s, %%s)" % t, (k, "v%d" % k, decimal.Decimal(k) / 4))
        # The same statement many times: psycopg prepares it server-side
        # (after 5 executions by default, at once with prepare_threshold=0).
        for k in range(1, 101, 7):
            cur.execute("SELECT v, n FROM %s WHERE k = %%s" % t, (k,))
            check("row %d" % k, cur.fetchone(), ("v%d" % k, decimal.Decimal(k) / 4))
        cur.execute("SELECT count(*), sum(k), sum(n) FROM %s" % t)
        rows, ksum, nsum = cur.fetchone()
    # A transaction that commits and one that rolls back.
    with conn.transaction():
        conn.execute("UPDATE %s SET n = n + 1 WHERE k <= %%s" % t, (10,))
    try:
        with conn.transaction():
            conn.execute("DELETE FROM %s" % t)
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    after = conn.execute("SELECT count(*), sum(n) FROM %s" % t).fetchone()
    prepared = conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()[0]
    if prepare_threshold == 0 and prepared == 0:
        sys.exit("psycopg: prepare_threshold=0 but the backend has no prepared statement")
    print("psycopg %s rows=%d ksum=%d nsum=%s after=%d/%s" % (
        "prepared" if prepare_threshold == 0 else "default", rows, ksum, nsum, after[0], after[1]))


def scenario_copy(conn, t):
    conn.execute("CREATE TABLE %s (k int PRIMARY KEY, v text)" % t)
    with conn.cursor() as cur:
        with cur.copy("COPY %s (k, v) FROM STDIN" % t) as cp:
            for k in range(1, 1001):
                cp.write_row((k, "line %d\twith tab" % k if k % 100 == 0 else "line %d" % k))
        got = []
        with cur.copy("COPY (SELECT k, v FROM %s ORDER BY k) TO STDOUT" % t) as cp:
            for row in cp.rows():
                got.append(row)
    check("copied rows", len(got), 1000)
    check("row 100", got[99], ("100", "line 100\twith tab"))
    total = conn.execute("SELECT count(*), sum(k) FROM %s" % t).fetchone()
    print("psycopg copy in=%d out=%d sum=%d" % (total[0], len(got), total[1]))


def scenario_executemany(conn, t):
    conn.execute("CREATE TABLE %s (k int PRIMARY KEY, v bigint)" % t)
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO %s (k, v) VALUES (%%s, %%s)" % t, [(k, k * 1000000000) for k in range(1, 201)])
        cur.executemany("UPDATE %s SET v = v + 1 WHERE k = %%s" % t, [(k,) for k in range(1, 201, 2)])
        cur.execute("SELECT count(*), sum(v) FROM %s" % t)
        rows, vsum = cur.fetchone()
    check("sum", vsum, sum(k * 1000000000 for k in range(1, 201)) + 100)
    print("psycopg executemany rows=%d sum=%d" % (rows, vsum))


def scenario_binary(conn, t):
    conn.execute("CREATE TABLE %s (k int PRIMARY KEY, b bigint, n numeric, u uuid, s text, d date, "
                 "ts timestamptz, f bool, a int[])" % t)
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    ts = datetime.datetime(2026, 11, 24, 6, 45, 0, tzinfo=datetime.timezone.utc)
    rows = [(k, k * 10000000000, decimal.Decimal("%d.25" % k), uuid.UUID(int=u.int + k), "s%d" % k,
             datetime.date(2026, 1, k), ts, k % 2 == 0, [k, k + 1]) for k in range(1, 21)]
    with conn.cursor(binary=True) as cur:
        cur.executemany("INSERT INTO %s VALUES (%%b, %%b, %%b, %%b, %%b, %%b, %%b, %%b, %%b)" % t, rows)
        hits = 0
        for col, idx in (("k", 0), ("b", 1), ("n", 2), ("u", 3), ("s", 4), ("d", 5)):
            cur.execute("SELECT * FROM %s WHERE %s = %%b" % (t, col), (rows[6][idx],))
            got = cur.fetchall()
            check("lookup by %s" % col, got, [rows[6]])
            hits += 1
        cur.execute("SELECT k FROM %s WHERE k = ANY(%%b) ORDER BY k" % t, ([3, 5, 8],))
        check("= ANY", [r[0] for r in cur.fetchall()], [3, 5, 8])
        cur.execute("SELECT count(*), sum(b), sum(n) FROM %s WHERE f = %%b" % t, (True,))
        cnt, bsum, nsum = cur.fetchone()
    print("psycopg binary lookups=%d any=3 even=%d bsum=%d nsum=%s" % (hits, cnt, bsum, nsum))


def main():
    host, port, user, dbname, sslmode, t, scenario = sys.argv[1:8]
    conninfo = "host=%s port=%s user=%s dbname=%s sslmode=%s connect_timeout=10" % (host, port, user, dbname,
                                                                                     sslmode)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        if sslmode == "require":
            check("ssl in use", conn.pgconn.ssl_in_use, True)
        try:
            if scenario == "default":
                scenario_default(conn, t, 5)
            elif scenario == "prepared":
                scenario_default(conn, t, 0)
            elif scenario == "copy":
                scenario_copy(conn, t)
            elif scenario == "executemany":
                scenario_executemany(conn, t)
            elif scenario == "binary":
                scenario_binary(conn, t)
            else:
                sys.exit("unknown scenario " + scenario)
        finally:
            conn.prepare_threshold = None
            conn.execute("DROP TABLE IF EXISTS %s" % t)


if __name__ == "__main__":
    main()
