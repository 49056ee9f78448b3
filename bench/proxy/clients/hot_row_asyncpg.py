#!/usr/bin/python3
"""The hot-row transaction of bench/proxy/hot_row.sql driven by asyncpg
(bench/proxy/run.sh, workload hot-row-asyncpg): CLIENTS connections, each
for a fixed time running

  BEGIN ISOLATION LEVEL SERIALIZABLE;           (conn.transaction())
  SELECT abalance FROM pgbench_accounts WHERE aid = $1;
  UPDATE pgbench_accounts SET abalance = abalance + $2 WHERE aid = $1;
  COMMIT;

with aid uniform in 1..ROWS. asyncpg sends its parameters in binary;
statement_cache_size=0 (unnamed statements) so PgBouncer's transaction
pooling can run it. A transaction that fails with 40001/40P01 is retried
with the same values, up to MAX_TRIES tries (then it counts as failed).

  /usr/bin/python3 hot_row_asyncpg.py HOST PORT USER DBNAME CLIENTS SECONDS ROWS MAX_TRIES [STATEMENT_CACHE_SIZE [WORKLOAD]]

(STATEMENT_CACHE_SIZE: 0 by default, as run.sh runs it; asyncpg's own
default, 100, keeps named statements that PgBouncer 1.18 cannot run.)

WORKLOAD transfer (run.sh's transfer-asyncpg, issue 24): instead, the blind-
write transfer of bench/proxy/transfer_skewed.sql's hot variant,

  BEGIN ISOLATION LEVEL SERIALIZABLE;
  UPDATE pgbench_accounts SET abalance = abalance - $2 WHERE aid = $1;
  UPDATE pgbench_accounts SET abalance = abalance + $2 WHERE aid = $3;
  COMMIT;

with the first aid uniform in 1..ROWS and the second Zipf-skewed (s = 1.5)
over 1..ROWS: no value is read, so a replay (replay = on) reproduces every
result the client saw.

WORKLOAD autocommit (run.sh's autocommit-asyncpg, issue 24: implicit
transactions): instead, no transaction() at all, each client's session with
default_transaction_isolation = serializable, one autocommit statement

  UPDATE pgbench_accounts SET abalance = abalance + $2 WHERE aid = $1;

with aid uniform in 1..ROWS: a concurrent update of the row fails it with
40001 (retried by the client as above; replay = on re-runs it in the
proxy). The SET is made in a transaction that holds its server connection
a moment, every client at once, so that under PgBouncer's transaction
pooling (which does not carry session settings) each of its server
connections gets it too; after the run every client checks its isolation
(`not_serializable=N` on the line: N clients saw another one).

Prints one line, like pgbench's figures:
  driver=asyncpg statement_cache_size=0 clients=16 duration=10.00 committed=N tps=X retries=R retried=T failed=F
"""
import asyncio
import random
import sys
import time

import asyncpg

RETRYABLE = (asyncpg.exceptions.SerializationError, asyncpg.exceptions.DeadlockDetectedError)


async def main():
    host, port, user, db = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    clients, seconds, rows, max_tries = int(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
    cache = int(sys.argv[9]) if len(sys.argv) > 9 else 0
    workload = sys.argv[10] if len(sys.argv) > 10 else "hot-row"
    zipf = [1.0 / k ** 1.5 for k in range(1, rows + 1)]
    conns = [await asyncpg.connect(host=host, port=port, user=user, database=db, statement_cache_size=cache,
                                   timeout=30) for _ in range(clients)]
    counts = {"committed": 0, "retries": 0, "retried": 0, "failed": 0, "not_serializable": 0}

    async def serializable(conn):
        async with conn.transaction():
            await conn.execute("SET default_transaction_isolation = 'serializable'")
            await conn.execute("SELECT pg_sleep(0.3)")

    if workload == "autocommit":
        await asyncio.gather(*[serializable(c) for c in conns])
    errors = []
    start = time.monotonic()
    end = start + seconds

    async def terminal(conn):
        rnd = random.Random()
        while time.monotonic() < end:
            aid, delta = rnd.randint(1, rows), rnd.randint(-100, 100)
            if workload == "transfer":
                delta = rnd.randint(1, 100)
                to = rnd.choices(range(1, rows + 1), weights=zipf)[0]
            attempt = 1
            while True:
                try:
                    if workload == "autocommit":
                        await conn.execute(
                            "UPDATE pgbench_accounts SET abalance = abalance + $2 WHERE aid = $1", aid, delta)
                    else:
                        async with conn.transaction(isolation="serializable"):
                            if workload == "transfer":
                                await conn.execute(
                                    "UPDATE pgbench_accounts SET abalance = abalance - $2 WHERE aid = $1", aid, delta)
                                await conn.execute(
                                    "UPDATE pgbench_accounts SET abalance = abalance + $2 WHERE aid = $1", to, delta)
                            else:
                                await conn.fetchval("SELECT abalance FROM pgbench_accounts WHERE aid = $1", aid)
                                await conn.execute(
                                    "UPDATE pgbench_accounts SET abalance = abalance + $2 WHERE aid = $1", aid, delta)
                    counts["committed"] += 1
                    if attempt > 1:
                        counts["retried"] += 1
                    break
                except RETRYABLE:
                    if attempt >= max_tries or time.monotonic() >= end:
                        counts["failed"] += 1
                        break
                    counts["retries"] += 1
                    attempt += 1
                except asyncpg.PostgresError as e:
                    counts["failed"] += 1
                    errors.append("%s %s" % (e.sqlstate, e))
                    break

    await asyncio.gather(*[terminal(c) for c in conns])
    elapsed = time.monotonic() - start
    if workload == "autocommit":
        for c in conns:
            if await c.fetchval("SHOW default_transaction_isolation") != "serializable":
                counts["not_serializable"] += 1
    for c in conns:
        await c.close()
    if errors:
        print("hot_row_asyncpg: %d errors, first: %s" % (len(errors), errors[0]), file=sys.stderr)
    print("driver=asyncpg workload=%s statement_cache_size=%d clients=%d duration=%.2f committed=%d tps=%.1f retries=%d retried=%d failed=%d%s" % (
        workload, cache, clients, elapsed, counts["committed"], counts["committed"] / elapsed, counts["retries"], counts["retried"],
        counts["failed"], " not_serializable=%d" % counts["not_serializable"] if workload == "autocommit" else ""))


if __name__ == "__main__":
    asyncio.run(main())
