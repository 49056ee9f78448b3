"""asyncpg executemany through `corral proxy` (tests/proxy/pipeline_test.cc).
asyncpg 0.27 pipelines executemany: Bind/Execute per row (a named
statement), one Sync at the end, the rows written as the socket takes them.
Usage: pipeline_asyncpg.py PORT SERVER_PORT TABLE MODE ROW_A ROW_B
  MODE values: no conflict, SERIALIZABLE: executemany of an UPDATE over 3 rows,
               of an UPDATE over 3000 (ROW_A, ROW_B alternating), of an INSERT
               of 5 new rows; then the values read back in the transaction
               and after it -> "values: ok".
  MODE blind:  client a updates ROW_B and stays open; b's executemany of the
               UPDATE on ROW_A, ROW_B (waits) and ROW_A + 1; a commits, the
               server fails the second with 40001 -> "blind: None committed"
               when b never sees it, "blind: 40001" when it does.
  MODE big:    as blind with 3000 rows (ROW_A + 1 repeated around ROW_B, in the
               middle): more than replay_buffer_bytes -> "big: 40001"
               with replay on too (not replayable).
  After a 40001 the same connection commits one more transaction (ROW_A + 2:
  "after: 1") and the rows are checked against what b believes committed.
Exits non-zero on any other outcome."""
import asyncio
import sys

import asyncpg

from replay_asyncpg import wait_for_lock


def fail(*what):
    print("FAIL:", *what)
    sys.exit(1)


async def values(b, direct, table, row_a, row_b):
    upd = f"UPDATE {table} SET v = v + 1 WHERE k = $1"
    async with b.transaction(isolation="serializable"):
        if await b.executemany(upd, [(row_a,), (row_b,), (1000000,)]) is not None:
            fail("executemany result")
        await b.executemany(upd, [(row_a if i % 2 == 0 else row_b,) for i in range(3000)])
        await b.executemany(f"INSERT INTO {table} (k, v) VALUES ($1, $2)", [(1000 + i, i) for i in range(1, 6)])
        got = await b.fetch(f"SELECT k, v FROM {table} WHERE k = ANY($1) ORDER BY k",
                            [row_a, row_b, 1001, 1005])
        if [tuple(r) for r in got] != [(row_a, 1501), (row_b, 1501), (1001, 1), (1005, 5)]:
            fail("read in the transaction", got)
    got = await direct.fetch(f"SELECT k, v FROM {table} WHERE k = ANY($1) ORDER BY k", [row_a, row_b, 1003])
    if [tuple(r) for r in got] != [(row_a, 1501), (row_b, 1501), (1003, 3)]:
        fail("committed rows", got)
    if await direct.execute(f"DELETE FROM {table} WHERE k > 1000") != "DELETE 5":
        fail("inserted rows")
    print("values: ok")


async def main(port, server_port, table, mode, row_a, row_b):
    dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    direct = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{server_port}/postgres")
    b = await asyncpg.connect(dsn)
    if mode == "values":
        await values(b, direct, table, row_a, row_b)
        return 0
    a = await asyncpg.connect(dsn)
    upd = f"UPDATE {table} SET v = v + 1 WHERE k = $1"
    ta = a.transaction(isolation="serializable")
    await ta.start()
    if await a.execute(upd, row_b) != "UPDATE 1":
        fail("a's update")
    tb = b.transaction(isolation="serializable")
    await tb.start()
    if mode == "big":
        rows = [(row_a + 1,)] * 1500 + [(row_b,)] + [(row_a + 1,)] * 1499
        want_ok = {row_a: 0, row_b: 2, row_a + 1: 2999}
    else:
        rows = [(row_a,), (row_b,), (row_a + 1,)]
        want_ok = {row_a: 1, row_b: 2, row_a + 1: 1}
    second = asyncio.ensure_future(b.executemany(upd, rows))
    await wait_for_lock(direct, table)
    await ta.commit()
    try:
        r = await asyncio.wait_for(second, 60)
        await tb.commit()
        print(f"{mode}: {r} committed")
        want = want_ok
    except asyncpg.exceptions.SerializationError:
        await tb.rollback()
        print(f"{mode}: 40001")
        async with b.transaction(isolation="serializable"):
            print("after:", await b.fetchval(upd + " RETURNING v", row_a + 2))
        want = {row_a: 0, row_b: 1, row_a + 1: 0, row_a + 2: 1}
    for k, v in want.items():
        got = await direct.fetchval(f"SELECT v FROM {table} WHERE k = $1", k)
        if got != v:
            fail("row", k, "is", got, "not", v)
    for c in (a, b, direct):
        await c.close()
    return 0


sys.exit(asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]),
                          int(sys.argv[6]))))
