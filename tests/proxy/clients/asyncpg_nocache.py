"""asyncpg with statement_cache_size=0 (what PgBouncer needs) through `corral
proxy`: each statement is a Parse/Describe/Flush unit (no Bind) and then
Bind/Execute/Sync on the unnamed statement. Inside a transaction the first
unit executes nothing; the proxy answers it from the server's earlier answer
(its DescribeCache), so the transaction is routed on the Bind.
Usage: asyncpg_nocache.py PORT (table bw_anc(nk int, v int)).
Prints one line per check; exits non-zero on any failure."""
import asyncio
import os
import sys

import asyncpg

# The database (the test makes one per process: CORRAL_TEST_DB).
DB = os.environ.get("CORRAL_TEST_DB", "postgres")


async def main(port):
    dsn = f"postgresql://postgres@127.0.0.1:{port}/{DB}"
    c1 = await asyncpg.connect(dsn, statement_cache_size=0)
    c2 = await asyncpg.connect(dsn, statement_cache_size=0)
    upd = "UPDATE bw_anc SET v = v + 1 WHERE nk = $1"
    # A deterministic SERIALIZABLE conflict on nk=5: both snapshots first,
    # c1 commits its update, then c2's update of the same row fails.
    t1 = c1.transaction(isolation="serializable")
    t2 = c2.transaction(isolation="serializable")
    await t1.start()
    await t2.start()
    if await c1.fetchval("SELECT v FROM bw_anc WHERE nk = $1", 5) != 0:
        print("FAIL: v of nk=5 is not 0")
        return 1
    await c2.fetchval("SELECT v FROM bw_anc WHERE nk = $1", 5)
    await c1.execute(upd, 5)
    await t1.commit()
    try:
        await c2.execute(upd, 5)
        print("FAIL: no serialization failure")
        return 1
    except asyncpg.exceptions.SerializationError:
        await t2.rollback()
    print("conflict: 40001 on nk=5")
    # Learned: the next transactions on nk=5 are placed by affinity.
    for _ in range(3):
        async with c2.transaction(isolation="serializable"):
            await c2.execute(upd, 5)
    print("after the conflict: 3 commits on nk=5")
    # An error in a unit that executes nothing fails the transaction as
    # the server would: the next statement is refused, ROLLBACK ends it.
    tx = c1.transaction()
    await tx.start()
    try:
        await c1.fetchval("SELECT nosuch FROM bw_anc WHERE nk = $1", 1)
        print("FAIL: no error for a missing column")
        return 1
    except asyncpg.exceptions.UndefinedColumnError:
        pass
    try:
        await c1.fetchval("SELECT v FROM bw_anc WHERE nk = $1", 1)
        print("FAIL: a statement ran in a failed transaction")
        return 1
    except asyncpg.exceptions.InFailedSQLTransactionError:
        pass
    await tx.rollback()
    print("failed transaction: 42703, then 25P02, then ROLLBACK")
    v = await c1.fetchval("SELECT v FROM bw_anc WHERE nk = $1", 5)
    if v != 4:
        print("FAIL: v of nk=5 is", v)
        return 1
    print("after: v of nk=5 is 4")
    await c1.close()
    await c2.close()
    return 0


sys.exit(asyncio.run(main(int(sys.argv[1]))))
