"""psycopg 3 through `corral proxy` with replay on, server-side binding
(cursor.execute(..., prepare=True): Parse once, then Bind/Execute), a real
40001 as in replay_asyncpg.py (tests/proxy/replay_extended_test.cc).
Usage: replay_psycopg.py PORT SERVER_PORT TABLE MODE ROW_A ROW_B
  MODE blind -> "blind: UPDATE 1 UPDATE 1 committed"; MODE read -> "read: 40001".
Exits non-zero on any other outcome."""
import sys

import psycopg

from pipeline_psycopg import behind


def main(port, server_port, table, mode, row_a, row_b):
    def conn(p):
        c = psycopg.connect(f"host=127.0.0.1 port={p} user=postgres dbname=postgres")
        c.isolation_level = psycopg.IsolationLevel.SERIALIZABLE
        return c

    direct = psycopg.connect(f"host=127.0.0.1 port={server_port} user=postgres dbname=postgres", autocommit=True)
    a, b = conn(port), conn(port)
    upd = f"UPDATE {table} SET v = v + 1 WHERE k = %s"
    sel = f"SELECT v FROM {table} WHERE k = %s"
    # Prepared on both (outside a transaction), so the transaction's
    # statements are Bind/Execute of named statements.
    for c in (a, b):
        for _ in range(2):
            c.execute(sel, (0,), prepare=True)
            c.execute(upd, (0,), prepare=True)
        c.rollback()
    if a.execute(upd, (row_b,), prepare=True).rowcount != 1:
        print("FAIL: a's update")
        return 1
    if mode == "blind":
        first = "UPDATE %d" % b.execute(upd, (row_a,), prepare=True).rowcount
    else:
        first = b.execute(sel, (row_b,), prepare=True).fetchone()[0]
        if first != 0:
            print("FAIL: b read", first)
            return 1
    def second(out):
        out["tag"] = "UPDATE %d" % b.execute(upd, (row_b,), prepare=True).rowcount

    out = behind(a, direct, table, second, "tag")
    if mode == "read":
        b.rollback()
        print("read:", out["tag"])
        return 0 if out["tag"] == "40001" else 1
    if out["tag"] != "UPDATE 1":
        print("FAIL: blind writes got", out["tag"])
        return 1
    b.commit()
    print(f"blind: {first} {out['tag']} committed")
    return 0


sys.exit(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])))
