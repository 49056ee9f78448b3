"""asyncpg through `corral proxy`: every parameter goes in binary, types
unspecified in Parse and learned from the client's own Describe.
Usage: asyncpg_binary.py PORT (table bw_apg(ak int, v int, an numeric, p point)).
Prints one line per check; exits non-zero on any failure."""
import asyncio
import decimal
import os
import sys

import asyncpg

# The database (the test makes one per process: CORRAL_TEST_DB).
DB = os.environ.get("CORRAL_TEST_DB", "postgres")


async def main(port):
    dsn = f"postgresql://postgres@127.0.0.1:{port}/{DB}"
    c1 = await asyncpg.connect(dsn)
    c2 = await asyncpg.connect(dsn)
    upd = "UPDATE bw_apg SET v = v + 1 WHERE ak = $1"
    # The text path (simple query) and the binary one must name the same reference.
    await c1.execute("UPDATE bw_apg SET v = v + 1 WHERE ak = 5")
    await c1.execute(upd, 5)
    await c1.execute("UPDATE bw_apg SET v = v + 1 WHERE an = 5")
    await c1.execute("UPDATE bw_apg SET v = v + 1 WHERE an = $1", decimal.Decimal("5.00"))
    print("text and binary updates: ak=5, an=5")
    # A deterministic SERIALIZABLE conflict: both snapshots first, c1 commits
    # its update, then c2's update of the same row fails. c2's first statement
    # has no reference: its UPDATE must still teach the History.
    t1 = c1.transaction(isolation="serializable")
    t2 = c2.transaction(isolation="serializable")
    await t1.start()
    await t2.start()
    await c1.fetchval("SELECT v FROM bw_apg WHERE ak = $1", 5)
    await c2.fetchval("SELECT 1")
    await c1.execute(upd, 5)
    await t1.commit()
    try:
        await c2.execute(upd, 5)
        print("FAIL: no serialization failure")
        return 1
    except asyncpg.exceptions.SerializationError:
        await t2.rollback()
    print("conflict: 40001 on ak=5")
    # Learned: the first transaction on ak=5 gives it a queue (a State row),
    # the next is placed there by affinity.
    for _ in range(2):
        async with c2.transaction(isolation="serializable"):
            await c2.execute(upd, 5)
    print("after the conflict: 2 commits on ak=5")
    # A point (binary, not decoded) beside an int4: counted, the statement runs.
    r = await c1.execute("UPDATE bw_apg SET p = $1 WHERE ak = $2", asyncpg.Point(1, 2), 3)
    if r != "UPDATE 1":
        print("FAIL: point update said", r)
        return 1
    print("point update: UPDATE 1")
    await c1.close()
    await c2.close()
    return 0


sys.exit(asyncio.run(main(int(sys.argv[1]))))
