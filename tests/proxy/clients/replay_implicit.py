"""asyncpg through `corral proxy` with replay on (tests/proxy/replay_extended_test.cc):
a real 40001 in an implicit (autocommit) transaction. Client a's SERIALIZABLE
transaction updates ROW_B and stays open; client b, in autocommit with
default_transaction_isolation = serializable, updates ROW_B outside any
transaction() (its UPDATE waits for a's row lock); a commits and the server
fails b's implicit transaction with 40001.
Usage: replay_implicit.py PORT SERVER_PORT TABLE MODE CACHE ROW_A ROW_B
  MODE auto: b's `execute(UPDATE ... WHERE k = $1, ROW_B)` -> prints
             "auto: UPDATE 1" when b never sees an error.
  MODE many: b's executemany of the UPDATE on ROW_A, ROW_B (waits),
             ROW_A + 1: one implicit unit (one Sync), the first Execute's
             results already received at the error -> prints "many: None".
  CACHE: asyncpg's statement_cache_size (0: unnamed statements).
Exits non-zero on any other outcome."""
import asyncio
import sys

import asyncpg

from replay_asyncpg import wait_for_lock


async def main(port, server_port, table, mode, cache, row_a, row_b):
    dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    direct = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{server_port}/postgres")
    a = await asyncpg.connect(dsn, statement_cache_size=cache)
    b = await asyncpg.connect(dsn, statement_cache_size=cache)
    await b.execute("SET default_transaction_isolation = 'serializable'")
    upd = f"UPDATE {table} SET v = v + 1 WHERE k = $1"
    # Warm b's statement (and the proxy's Describe cache): committed at once.
    if await b.execute(upd, 0) != "UPDATE 1":
        print("FAIL: b's warm-up")
        return 1
    ta = a.transaction(isolation="serializable")
    await ta.start()
    if await a.execute(upd, row_b) != "UPDATE 1":
        print("FAIL: a's update")
        return 1
    if mode == "many":
        second = asyncio.ensure_future(b.executemany(upd, [(row_a,), (row_b,), (row_a + 1,)]))
    else:
        second = asyncio.ensure_future(b.execute(upd, row_b))
    await wait_for_lock(direct, table)
    await ta.commit()
    try:
        r = await second
    except asyncpg.exceptions.SerializationError as e:
        print("FAIL: the autocommit statement got 40001:", e)
        return 1
    print(f"{mode}: {r}")
    for c in (a, b, direct):
        await c.close()
    return 0


sys.exit(asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]),
                          int(sys.argv[6]), int(sys.argv[7]))))
