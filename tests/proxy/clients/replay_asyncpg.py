"""asyncpg through `corral proxy` with replay on (tests/proxy/replay_extended_test.cc):
a real 40001 in an extended-protocol transaction. Client b's SERIALIZABLE
transaction updates one row, then a second row that client a updated and has
not committed (b waits for it); a commits and the server fails b's UPDATE
with 40001.
Usage: replay_asyncpg.py PORT SERVER_PORT TABLE MODE CACHE ROW_A ROW_B
  MODE blind: b's two parameterised UPDATEs (blind writes) -> prints
              "blind: UPDATE 1 UPDATE 1 committed" when b never sees an error.
  MODE many:  b's UPDATE of ROW_A, then executemany of the UPDATE on ROW_A + 1,
              ROW_B (waits) and ROW_A + 2 in one pipelined unit (one Sync): the
              server skips the third after the 40001 -> prints
              "many: UPDATE 1 None committed".
  MODE twice: as blind, then a third client c updates ROW_B + 1 and b's
              next UPDATE of it waits until c commits: a second 40001 in the
              same transaction, after its first replay -> prints
              "twice: UPDATE 1 UPDATE 1 UPDATE 1 committed".
  MODE read:  b first reads ROW_B (0, before a's update), then updates it ->
              prints "read: 40001" when b gets the serialization failure,
              then "read after: 1" from a new transaction.
  CACHE: asyncpg's statement_cache_size (0: unnamed statements, the proxy
  answering their Parse/Describe from its cache).
Exits non-zero on any other outcome."""
import asyncio
import sys

import asyncpg


async def wait_for_lock(direct, table):
    for _ in range(500):
        n = await direct.fetchval(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
            "WHERE NOT l.granted AND a.query LIKE $1", "%" + table + "%")
        if n > 0:
            return
        await asyncio.sleep(0.02)
    raise RuntimeError("b never waited for a's row lock")


async def main(port, server_port, table, mode, cache, row_a, row_b):
    dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    direct = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{server_port}/postgres")
    a = await asyncpg.connect(dsn, statement_cache_size=cache)
    b = await asyncpg.connect(dsn, statement_cache_size=cache)
    upd = f"UPDATE {table} SET v = v + 1 WHERE k = $1"
    sel = f"SELECT v FROM {table} WHERE k = $1"
    ta = a.transaction(isolation="serializable")
    await ta.start()
    if await a.execute(upd, row_b) != "UPDATE 1":
        print("FAIL: a's update")
        return 1
    tb = b.transaction(isolation="serializable")
    await tb.start()
    if mode in ("blind", "many", "twice"):
        first = await b.execute(upd, row_a)
    else:
        first = await b.fetchval(sel, row_b)
        if first != 0:
            print("FAIL: b read", first)
            return 1
    if mode == "many":
        second = asyncio.ensure_future(b.executemany(upd, [(row_a + 1,), (row_b,), (row_a + 2,)]))
    else:
        second = asyncio.ensure_future(b.execute(upd, row_b))
    await wait_for_lock(direct, table)
    await ta.commit()
    try:
        r = await second
    except asyncpg.exceptions.SerializationError:
        await tb.rollback()
        if mode != "read":
            print("FAIL: blind writes got 40001")
            return 1
        print("read: 40001")
        async with b.transaction():
            print("read after:", await b.fetchval(sel, row_b))
        return 0
    if mode == "read":
        print("FAIL: the read transaction went on:", r)
        return 1
    if mode == "twice":
        c = await asyncpg.connect(dsn, statement_cache_size=cache)
        tc = c.transaction(isolation="serializable")
        await tc.start()
        await c.execute(upd, row_b + 1)
        third = asyncio.ensure_future(b.execute(upd, row_b + 1))
        await wait_for_lock(direct, table)
        await tc.commit()
        try:
            r = "%s %s" % (r, await third)
        except asyncpg.exceptions.SerializationError:
            print("FAIL: the second conflict reached the client")
            return 1
        await c.close()
    await tb.commit()
    print(f"{mode}: {first} {r} committed")
    for c in (a, b, direct):
        await c.close()
    return 0


if __name__ == "__main__":  # (replay_implicit.py imports wait_for_lock)
    sys.exit(asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]),
                              int(sys.argv[6]), int(sys.argv[7]))))
