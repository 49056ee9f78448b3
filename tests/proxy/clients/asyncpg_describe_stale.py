"""asyncpg with statement_cache_size=0 through `corral proxy`: the proxy
answers a repeated Parse/Describe from the server's earlier answer (its
DescribeCache), so every change that alters what the statement describes must
reach the client: search_path naming another table of another column type,
ALTER TABLE changing the column's type (autocommit, and inside a
transaction that commits), a rolled-back ALTER, and an ALTER the proxy
cannot see (run on the server directly): the proxy finds that one when it
parses the statement for real and answers PostgreSQL's 0A000 "cached plan
must not change result type", which asyncpg retries outside a transaction.
Usage: asyncpg_describe_stale.py PORT SERVER_PORT (schemas bw_ds1 / bw_ds2, each with
table t(k int, v ...): bw_ds1.t.v int = 11, bw_ds2.t.v text = 'two').
Prints one line per check; exits non-zero on any failure."""
import asyncio
import os
import sys

import asyncpg

# The database (the test makes one per process: CORRAL_TEST_DB).
DB = os.environ.get("CORRAL_TEST_DB", "postgres")

Q = "SELECT v FROM t WHERE k = $1"


async def main(port, server_port):
    dsn = f"postgresql://postgres@127.0.0.1:{port}/{DB}"
    direct = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{server_port}/{DB}")
    c = await asyncpg.connect(dsn, statement_cache_size=0)
    other = await asyncpg.connect(dsn, statement_cache_size=0)
    fails = 0

    def check(what, got, want):
        nonlocal fails
        ok = got == want and type(got) is type(want)
        print("%s %s: %r" % ("ok" if ok else "FAIL", what, got))
        if not ok:
            fails += 1

    await c.execute("SET search_path = bw_ds1")
    for i in range(3):  # the second and third are answered from the cache
        check("bw_ds1 int, run %d" % i, await c.fetchval(Q, 1), 11)
    async with c.transaction():
        check("bw_ds1 int in a transaction", await c.fetchval(Q, 1), 11)
    await c.execute("SET search_path = bw_ds2")
    check("bw_ds2 text after SET search_path", await c.fetchval(Q, 1), "two")
    async with c.transaction():
        check("bw_ds2 text in a transaction", await c.fetchval(Q, 1), "two")
    await c.execute("SET search_path = bw_ds1")
    check("bw_ds1 int again", await c.fetchval(Q, 1), 11)
    # DDL through the proxy, by another client: int -> text.
    await other.execute("ALTER TABLE bw_ds1.t ALTER COLUMN v TYPE text USING v::text")
    check("bw_ds1 text after ALTER (autocommit)", await c.fetchval(Q, 1), "11")
    check("bw_ds1 text again", await c.fetchval(Q, 1), "11")
    # Inside a transaction that commits: text -> bigint.
    async with other.transaction():
        await other.execute("ALTER TABLE bw_ds1.t ALTER COLUMN v TYPE bigint USING v::bigint")
        check("bw_ds1 bigint inside the ALTER's transaction", await other.fetchval("SELECT v FROM bw_ds1.t WHERE k = $1", 1), 11)
    async with c.transaction():
        check("bw_ds1 bigint after the ALTER's COMMIT", await c.fetchval(Q, 1), 11)
    # A rolled-back ALTER: the column stays bigint.
    tx = other.transaction()
    await tx.start()
    await other.execute("ALTER TABLE bw_ds1.t ALTER COLUMN v TYPE text USING v::text")
    await other.fetchval("SELECT v FROM bw_ds1.t WHERE k = $1", 1)
    await tx.rollback()
    check("bw_ds1 bigint after a rolled-back ALTER", await c.fetchval(Q, 1), 11)
    check("bw_ds1 bigint via the other client", await other.fetchval("SELECT v FROM bw_ds1.t WHERE k = $1", 1), 11)
    check("bw_ds1 bigint, answered from the cache", await c.fetchval(Q, 1), 11)
    # DDL the proxy does not see: outside a transaction asyncpg retries the
    # 0A000 once and gets the new type.
    await direct.execute("ALTER TABLE bw_ds1.t ALTER COLUMN v TYPE text USING v::text")
    check("bw_ds1 text after an unseen ALTER (autocommit)", await c.fetchval(Q, 1), "11")
    # Inside a transaction the 0A000 fails it, as PostgreSQL's would.
    await direct.execute("ALTER TABLE bw_ds1.t ALTER COLUMN v TYPE int USING v::int")
    try:
        async with c.transaction():
            await c.fetchval(Q, 1)
            await c.execute("UPDATE t SET v = 99 WHERE k = $1", 1)
        check("0A000 inside a transaction", "no error", "an error")
    except asyncpg.exceptions.InvalidCachedStatementError:
        check("0A000 inside a transaction", "InvalidCachedStatementError", "InvalidCachedStatementError")
    except asyncpg.PostgresError as e:
        check("0A000 inside a transaction", "%s %s" % (e.sqlstate, e), "InvalidCachedStatementError")
    check("bw_ds1 int after the unseen ALTER", await c.fetchval(Q, 1), 11)
    await direct.close()
    await c.close()
    await other.close()
    return 1 if fails else 0


sys.exit(asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]))))
