#!/usr/bin/env python3
"""Multi-proxy coordination at scale, simulated (issue 25's design note).

What grows when 1 to 64 Corral proxies share one schedule through the
database (adapters/proxy/cluster.h): the coordination statements and rows
the shared table costs, and the latency a transaction pays for the
cross-proxy advisory lock, against the same proxies uncoordinated (each
serializes only its own clients' transactions on a key; conflicts between
proxies abort and retry, as under SERIALIZABLE).

A discrete-event simulation, standard library only:

    python3 bench/proxy/cluster_sim.py                       # the table, N = 1..64
    python3 bench/proxy/cluster_sim.py --proxies=1,2,4 --seconds=5
    python3 bench/proxy/cluster_sim.py --check               # the self-test (//bench/proxy:cluster_sim_test)

Assumptions (flags; defaults in parentheses):
  - C clients in all (--clients, 256), spread evenly over N proxies, closed
    loop, no think time; each proxy has pool/N backends (--pool, 64; at
    least 1); a transaction holds a backend from its start to its end.
  - Each transaction updates one row: with probability --hot_share (0.5) one
    of --hot_rows (20) hot rows, uniformly, else a cold row (no conflicts).
  - A transaction takes --service_ms (1.0) at the database once it runs
    (its statements and round trips); --rtt_ms (0.2) is one proxy-database
    round trip.
  - Within a proxy, transactions on the same key run one after another (the
    proxy's run queue; the one behind waits without a backend); across proxies, two that overlap on a key conflict:
    the one that commits second fails at commit and is retried at once
    (first-committer-wins, SERIALIZABLE), after one --rtt_ms.
  - Coordinated: each proxy publishes and reads the shared table every
    --interval_ms (200): 2 statements; the read returns every peer's hot
    references (--published, 20 rows each). A key is shared-hot for a proxy
    once the key's aborts summed over the proxies reached --threshold (3)
    and that proxy's next sync round has run (lag up to one interval).
    A shared-hot transaction takes the key's advisory lock first (FIFO
    across all proxies; the lock statement is pipelined before BEGIN, so it
    costs no round trip of its own, only the wait) and unlocks after its
    COMMIT: one round trip with the backend still held.
  - Not modelled: the database's own CPU limits (service time is constant),
    network jitter, proxy CPU, keys that stop being hot (aging).
"""
import argparse
import heapq
import random
import sys


def simulate(n_proxies, a):
    """One run; returns a dict of per-second figures."""
    rng = random.Random(a.seed * 1000 + n_proxies)
    clients = max(n_proxies, a.clients)
    pool = max(1, a.pool // n_proxies)
    horizon = a.seconds * 1000.0  # ms
    events = []  # (time, seq, kind, data)
    seq = [0]

    def push(t, kind, data):
        seq[0] += 1
        heapq.heappush(events, (t, seq[0], kind, data))

    # Per proxy: free backends, waiting transactions, per-key local queue.
    free = [pool] * n_proxies
    waiting = [[] for _ in range(n_proxies)]
    local_busy = [dict() for _ in range(n_proxies)]  # key -> txns queued behind the running one
    # Per key: transactions running at the database now (proxy, txn id, start).
    running = {}
    # Cross-proxy lock per key (coordinated): holder and FIFO of waiters.
    lock_holder, lock_queue = {}, {}
    aborts_by_key = {}
    shared_hot = [set() for _ in range(n_proxies)]
    stats = dict(commits=0, retries=0, lock_txns=0, lock_wait_ms=0.0, added_ms=0.0, sync_stmts=0, sync_rows=0)

    def new_txn(proxy):
        hot = rng.random() < a.hot_share
        key = rng.randrange(a.hot_rows) if hot else None
        return {"proxy": proxy, "key": key, "t0": None, "locked": False, "attempt_start": None, "doomed": False}

    def arrive(txn, now):
        # The proxy's run queue: a transaction on a key waits (without a
        # backend) behind the proxy's own transaction on that key.
        txn["t0"] = now
        key, p = txn["key"], txn["proxy"]
        if key is not None:
            q = local_busy[p].setdefault(key, [])
            q.append(txn)
            if len(q) > 1:
                return
        want_backend(txn, now)

    def want_backend(txn, now):
        p = txn["proxy"]
        if free[p] > 0:
            free[p] -= 1
            begin(txn, now)
        else:
            waiting[p].append(txn)

    def release_backend(p, now):
        if waiting[p]:
            begin(waiting[p].pop(0), now)
        else:
            free[p] += 1

    def begin(txn, now):
        key, p = txn["key"], txn["proxy"]
        if a.coordinated and key is not None and key in shared_hot[p]:
            txn["lock_asked"] = now
            stats["lock_txns"] += 1
            if key not in lock_holder:
                lock_holder[key] = txn
                txn["locked"] = True
            else:
                lock_queue.setdefault(key, []).append(txn)
                return
        start_attempt(txn, now)

    def start_attempt(txn, now):
        txn["attempt_start"] = now
        if txn["key"] is not None:
            running.setdefault(txn["key"], []).append(txn)
        push(now + a.service_ms, "commit", txn)

    def commit(txn, now):
        key = txn["key"]
        if key is not None:
            running[key].remove(txn)
        if txn.get("doomed"):
            # Failed at commit (a transaction of another proxy on the same
            # row committed first): retried at once, after one round trip.
            txn["doomed"] = False
            stats["retries"] += 1
            aborts_by_key[key] = aborts_by_key.get(key, 0) + 1
            push(now + a.rtt_ms, "retry", txn)
            return
        if key is not None:
            for o in running[key]:
                if o["proxy"] != txn["proxy"]:
                    o["doomed"] = True
        stats["commits"] += 1
        end = now
        if txn["locked"]:
            end = now + a.rtt_ms  # the unlock, backend held
            stats["lock_wait_ms"] += txn["attempt_start"] - txn["lock_asked"]
            stats["added_ms"] += (txn["attempt_start"] - txn["lock_asked"]) + a.rtt_ms
        push(end, "done", txn)

    def done(txn, now):
        key, p = txn["key"], txn["proxy"]
        if txn["locked"]:
            txn["locked"] = False
            q = lock_queue.get(key)
            if q:
                nxt = q.pop(0)
                lock_holder[key] = nxt
                nxt["locked"] = True
                start_attempt(nxt, now)
            else:
                del lock_holder[key]
        release_backend(p, now)
        if key is not None:
            q = local_busy[p][key]
            q.pop(0)
            if q:
                want_backend(q[0], now)
        arrive(new_txn(p), now)

    for c in range(clients):
        arrive(new_txn(c % n_proxies), 0.0)
    if a.coordinated and n_proxies > 1:
        for p in range(n_proxies):
            push(rng.random() * a.interval_ms, "sync", p)

    while events:
        now, _, kind, data = heapq.heappop(events)
        if now > horizon:
            break
        if kind == "commit":
            commit(data, now)
        elif kind == "retry":
            start_attempt(data, now)
        elif kind == "done":
            done(data, now)
        elif kind == "sync":
            p = data
            stats["sync_stmts"] += 2
            stats["sync_rows"] += (n_proxies - 1) * (a.published + 1) + a.published + 1
            shared_hot[p] = {k for k, v in aborts_by_key.items() if v >= a.threshold}
            push(now + a.interval_ms, "sync", p)

    secs = a.seconds
    commits = stats["commits"]
    return {
        "proxies": n_proxies,
        "tps": commits / secs,
        "retries_per_commit": stats["retries"] / max(1, commits),
        "sync_stmts_s": stats["sync_stmts"] / secs,
        "sync_rows_s": stats["sync_rows"] / secs,
        "locked_share": stats["lock_txns"] / max(1, commits),
        "lock_wait_ms": stats["lock_wait_ms"] / max(1, stats["lock_txns"]),
        "added_ms": stats["added_ms"] / max(1, commits),
    }


def table(a):
    rows = []
    for n in a.proxies:
        a.coordinated = True
        co = simulate(n, a)
        a.coordinated = False
        un = simulate(n, a)
        rows.append((n, co, un))
    print("| proxies | sync statements/s | shared-table rows/s | txns locked | lock wait per locked txn (ms) "
          "| added latency per txn (ms) | retries per commit, coordinated / uncoordinated | tps coordinated / uncoordinated |")
    print("|---:|---:|---:|---:|---:|---:|---|---|")
    for n, co, un in rows:
        print("| %d | %.0f | %.0f | %.0f%% | %.2f | %.3f | %.4f / %.4f | %.0f / %.0f |" % (
            n, co["sync_stmts_s"], co["sync_rows_s"], 100 * co["locked_share"], co["lock_wait_ms"], co["added_ms"],
            co["retries_per_commit"], un["retries_per_commit"], co["tps"], un["tps"]))
    return rows


def check(a):
    """Self-test: properties the model must have, on a short run."""
    a.seconds = 2.0
    a.clients = 32
    a.pool = 16
    fails = []
    a.coordinated = True
    one = simulate(1, a)
    if one["retries_per_commit"] != 0 or one["sync_stmts_s"] != 0 or one["locked_share"] != 0:
        fails.append("one proxy: no conflict, no sync, no lock expected: %r" % one)
    four = simulate(4, a)
    eight = simulate(8, a)
    a.coordinated = False
    four_un = simulate(4, a)
    if not four_un["retries_per_commit"] > 0:
        fails.append("uncoordinated proxies must conflict on hot rows: %r" % four_un)
    if not four["retries_per_commit"] < 0.5 * four_un["retries_per_commit"]:
        fails.append("coordination must cut retries: %r vs %r" % (four, four_un))
    if not four["locked_share"] > 0:
        fails.append("hot keys must become shared and locked: %r" % four)
    # Sync traffic: statements grow linearly with proxies, rows read quadratically.
    if abs(eight["sync_stmts_s"] / four["sync_stmts_s"] - 2.0) > 0.2:
        fails.append("sync statements not linear in proxies: %r %r" % (four, eight))
    if eight["sync_rows_s"] / four["sync_rows_s"] < 3.0:
        fails.append("shared-table rows not superlinear in proxies: %r %r" % (four, eight))
    for f in fails:
        print("FAIL:", f)
    print("cluster_sim check: %d failed" % len(fails))
    return 1 if fails else 0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--proxies", default="1,2,4,8,16,32,64")
    p.add_argument("--clients", type=int, default=256)
    p.add_argument("--pool", type=int, default=64)
    p.add_argument("--hot_rows", type=int, default=20)
    p.add_argument("--hot_share", type=float, default=0.5)
    p.add_argument("--service_ms", type=float, default=1.0)
    p.add_argument("--rtt_ms", type=float, default=0.2)
    p.add_argument("--interval_ms", type=float, default=200.0)
    p.add_argument("--threshold", type=float, default=3.0)
    p.add_argument("--published", type=int, default=20)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--check", action="store_true")
    a = p.parse_args(argv)
    a.proxies = [int(x) for x in a.proxies.split(",")]
    if a.check:
        return check(a)
    table(a)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
