"""Concurrent psycopg 3 clients through `corral proxy` on one hot template
(issue 24's per-template concurrency cap): each of CLIENTS threads runs TXNS
SERIALIZABLE transactions `UPDATE TABLE SET v = v + 1 WHERE k = a; ... k = b`
with a < b drawn from 1..ROWS (the second row independent of the first, in
order so that conflicts fail with 40001 rather than wait for deadlock
detection), retrying 40001 / 40P01 until it commits.
Usage: psycopg_hot_template.py CONNINFO TABLE CLIENTS TXNS ROWS
Prints `commits=N retries=R`."""
import random
import sys
import threading

import psycopg
from psycopg import errors

conninfo, table, clients, txns, rows = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
upd = f"UPDATE {table} SET v = v + 1 WHERE k = %s"
lock = threading.Lock()
totals = {"commits": 0, "retries": 0}
failures = []


def client(seed):
    rnd = random.Random(seed)
    commits = retries = 0
    try:
        with psycopg.connect(conninfo, autocommit=True) as c:
            for _ in range(txns):
                while True:
                    a, b = sorted(rnd.sample(range(1, rows + 1), 2))
                    try:
                        c.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
                        c.execute(upd, (a,))
                        c.execute(upd, (b,))
                        c.execute("COMMIT")
                        commits += 1
                        break
                    except (errors.SerializationFailure, errors.DeadlockDetected):
                        c.execute("ROLLBACK")
                        retries += 1
    except Exception as e:  # reported, fails the test
        with lock:
            failures.append(repr(e))
    with lock:
        totals["commits"] += commits
        totals["retries"] += retries


threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if failures:
    print("failures:", failures)
    sys.exit(1)
print(f"commits={totals['commits']} retries={totals['retries']}")
