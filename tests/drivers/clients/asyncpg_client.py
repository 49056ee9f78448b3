#!/usr/bin/python3
"""asyncpg through `corral proxy`: one scenario per run, for
tests/drivers/drivers_test.cc. asyncpg sends every parameter in binary and
caches named prepared statements per connection. Each scenario checks the
values it reads back (exit 1 with a message on a mismatch) and prints one
line `asyncpg <scenario> key=value ...` that the gtest compares.

  /usr/bin/python3 asyncpg_client.py HOST PORT USER DBNAME SSLMODE TABLE SCENARIO

Scenarios: prepared (conn.prepare, reused), pool (create_pool, concurrent
transactions), executemany, binary (typed parameters round-trip and
lookups, = ANY($1)), transactions (commit, rollback, savepoint,
SERIALIZABLE)."""
import asyncio
import datetime
import decimal
import sys
import uuid

import asyncpg


def check(what, got, want):
    if got != want:
        sys.exit("asyncpg: %s: got %r, want %r" % (what, got, want))


async def scenario_prepared(conn, t):
    await conn.execute("CREATE TABLE %s (k int PRIMARY KEY, v text NOT NULL)" % t)
    ins = await conn.prepare("INSERT INTO %s (k, v) VALUES ($1, $2)" % t)
    for k in range(1, 51):
        await ins.fetch(k, "v%d" % k)
    sel = await conn.prepare("SELECT v FROM %s WHERE k = $1" % t)
    for k in range(1, 51):
        check("row %d" % k, await sel.fetchval(k), "v%d" % k)
    n = await conn.fetchval("SELECT count(*) FROM %s" % t)
    print("asyncpg prepared inserted=%d selected=50" % n)


async def scenario_pool(host, port, user, dbname, ssl, t):
    async with asyncpg.create_pool(host=host, port=port, user=user, database=dbname, ssl=ssl,
                                   min_size=2, max_size=4) as pool:
        await pool.execute("CREATE TABLE %s (k int PRIMARY KEY, v int NOT NULL)" % t)

        async def one(k):
            async with pool.acquire() as c:
                async with c.transaction():
                    await c.execute("INSERT INTO %s (k, v) VALUES ($1, $2)" % t, k, k * 2)
                    return await c.fetchval("SELECT v FROM %s WHERE k = $1" % t, k)

        got = await asyncio.gather(*[one(k) for k in range(1, 41)])
        check("values", list(got), [k * 2 for k in range(1, 41)])
        n, s = await pool.fetchrow("SELECT count(*), sum(v) FROM %s" % t)
        await pool.execute("DROP TABLE %s" % t)
    print("asyncpg pool rows=%d sum=%d" % (n, s))


async def scenario_executemany(conn, t):
    await conn.execute("CREATE TABLE %s (k int PRIMARY KEY, v bigint NOT NULL)" % t)
    await conn.executemany("INSERT INTO %s (k, v) VALUES ($1, $2)" % t, [(k, k * 3000000000) for k in range(1, 301)])
    await conn.executemany("UPDATE %s SET v = v + $2 WHERE k = $1" % t, [(k, 1) for k in range(1, 301, 3)])
    n, s = await conn.fetchrow("SELECT count(*), sum(v) FROM %s" % t)
    check("sum", s, sum(k * 3000000000 for k in range(1, 301)) + 100)
    print("asyncpg executemany rows=%d sum=%d" % (n, s))


async def scenario_binary(conn, t):
    await conn.execute("CREATE TABLE %s (k int PRIMARY KEY, sm int2, b int8, n numeric, u uuid, s text, "
                       "d date, ts timestamptz, f bool, a int4[])" % t)
    base = uuid.UUID("12345678-1234-5678-1234-567812345678")
    ts = datetime.datetime(2026, 11, 24, 6, 45, tzinfo=datetime.timezone.utc)
    rows = [(k, k, k * 10000000000, decimal.Decimal("%d.5" % k), uuid.UUID(int=base.int + k), "s%d" % k,
             datetime.date(2026, 2, k), ts + datetime.timedelta(seconds=k), k % 3 == 0, [k, -k])
            for k in range(1, 21)]
    await conn.executemany("INSERT INTO %s VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)" % t, rows)
    cols = ["k", "sm", "b", "n", "u", "s", "d", "ts"]
    for i, col in enumerate(cols):
        got = await conn.fetch("SELECT * FROM %s WHERE %s = $1" % (t, col), rows[4][i])
        check("lookup by %s" % col, [tuple(r) for r in got], [rows[4]])
    anyk = await conn.fetch("SELECT k FROM %s WHERE k = ANY($1::int4[]) ORDER BY k" % t, [2, 7, 19])
    check("= ANY", [r["k"] for r in anyk], [2, 7, 19])
    n, bsum, nsum = await conn.fetchrow("SELECT count(*), sum(b), sum(n) FROM %s WHERE f = $1" % t, True)
    print("asyncpg binary lookups=%d any=%d thirds=%d bsum=%d nsum=%s" % (len(cols), len(anyk), n, bsum, nsum))


async def scenario_transactions(conn, t):
    await conn.execute("CREATE TABLE %s (k int PRIMARY KEY, v int NOT NULL)" % t)
    await conn.executemany("INSERT INTO %s VALUES ($1, $2)" % t, [(k, 100) for k in range(1, 11)])
    async with conn.transaction(isolation="serializable"):
        iso = await conn.fetchval("SHOW transaction_isolation")
        check("isolation", iso, "serializable")
        await conn.execute("UPDATE %s SET v = v - 30 WHERE k = $1" % t, 1)
        await conn.execute("UPDATE %s SET v = v + 30 WHERE k = $1" % t, 2)
    try:
        async with conn.transaction():
            await conn.execute("UPDATE %s SET v = 0" % t)
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    async with conn.transaction():
        await conn.execute("UPDATE %s SET v = v + 1 WHERE k = $1" % t, 3)
        try:
            async with conn.transaction():  # a savepoint
                await conn.execute("UPDATE %s SET v = v + 1000 WHERE k = $1" % t, 4)
                await conn.execute("SELECT 1 / 0")
        except asyncpg.exceptions.DivisionByZeroError:
            pass
    vals = await conn.fetch("SELECT v FROM %s WHERE k <= 4 ORDER BY k" % t)
    check("values", [r["v"] for r in vals], [70, 130, 101, 100])
    total = await conn.fetchval("SELECT sum(v) FROM %s" % t)
    print("asyncpg transactions values=%s sum=%d" % (",".join(str(r["v"]) for r in vals), total))


async def main():
    host, port, user, dbname, sslmode, t, scenario = sys.argv[1:8]
    port = int(port)
    ssl = "require" if sslmode == "require" else False
    if scenario == "pool":
        await scenario_pool(host, port, user, dbname, ssl, t)
        return
    conn = await asyncpg.connect(host=host, port=port, user=user, database=dbname, ssl=ssl, timeout=10)
    try:
        if sslmode == "require":
            check("ssl in use", conn._transport.get_extra_info("sslcontext") is not None, True)
        fn = {"prepared": scenario_prepared, "executemany": scenario_executemany, "binary": scenario_binary,
              "transactions": scenario_transactions}.get(scenario)
        if fn is None:
            sys.exit("unknown scenario " + scenario)
        await fn(conn, t)
    finally:
        await conn.execute("DROP TABLE IF EXISTS %s" % t)
        await conn.close()


if __name__ == "__main__":
    asyncio.run(main())
