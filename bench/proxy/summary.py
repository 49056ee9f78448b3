#!/usr/bin/env python3
"""Summary of bench/proxy/run.sh's results (a TSV: path, workload, variant,
tps, retried, retried %, failed): per workload and path, tps and the ratio to
PgBouncer's; for the contended workloads, retried transactions (count, % and
the ratio to PgBouncer's and to direct's retried counts) and the contention
penalty hot tps / cold tps on the same path. With several rounds (run.sh
REPEAT) every figure is the median over the rounds of that cell (the
penalty: the median of the per-round hot/cold ratios), and the number of
rounds is printed. The driver workloads (hot-row-asyncpg, hot-row-jdbc:
hot rows only; the retried column holds retries, i.e. re-executions, and
the % column retries per committed transaction) get their own table with
the tps and retries ratios to PgBouncer and issue 27's target (retries at
most 0.2x PgBouncer's, committed tps at least 1.2x). Prints Markdown
tables."""
import statistics
import sys
from collections import OrderedDict


DRIVER_WORKLOADS = ("hot-row-asyncpg", "hot-row-jdbc", "transfer-asyncpg", "autocommit-asyncpg")


def driver_table(w, rows, paths, ratio):
    """One driver workload: tps, retries and their ratios to PgBouncer's."""
    print("\n| %s (hot) | tps | tps vs PgB | retries | retries/commit | retries vs PgB | failed |" % w)
    print("|---|---:|---:|---:|---:|---:|---:|")
    base = rows.get(("pgbouncer", w, "hot"))
    for p in paths:
        r = rows.get((p, w, "hot"))
        if r is None:
            continue
        print("| %s | %.0f | %s | %.0f | %.1f%% | %s | %.0f |" % (
            p, r[0], ratio(r[0], base[0]) if base else "-", r[1], r[2], ratio(r[1], base[1]) if base else "-", r[3]))
    if w == "hot-row-jdbc":
        print("\n(PgBouncer ran pgjdbc with prepareThreshold=0: with the default named statements it fails with "
              "`prepared statement \"S_1\" already exists`; the other paths ran pgjdbc's defaults, prepareThreshold=5)")
    c = rows.get(("corral", w, "hot"))
    if base and c and base[0] > 0:
        tps_x = c[0] / base[0]
        met = tps_x >= 1.2 and (c[1] <= 0.2 * base[1])
        print("\n%s: corral vs pgbouncer: tps %.2fx (target >= 1.2x), retries %s (target <= 0.2x): %s" % (
            w, tps_x, ratio(c[1], base[1]) if base[1] > 0 else "%d vs 0" % c[1], "met" if met else "NOT met"))


def main(path):
    runs = OrderedDict()
    paths = []
    for line in open(path):
        p, w, v, tps, retried, pct, failed = line.rstrip("\n").split("\t")
        runs.setdefault((p, w, v), []).append((float(tps), int(retried), float(pct), int(failed)))
        if p not in paths:
            paths.append(p)
    med = statistics.median
    rows = OrderedDict()
    for k, rs in runs.items():
        rows[k] = tuple(med([r[i] for r in rs]) for i in range(4))
    nrounds = max(len(rs) for rs in runs.values())
    print("\n%d round(s); medians per cell" % nrounds)

    def penalty(p, w):
        c, h = runs.get((p, w, "cold"), []), runs.get((p, w, "hot"), [])
        ratios = [hh[0] / cc[0] for cc, hh in zip(c, h) if cc[0] > 0]
        return "%.2f" % med(ratios) if ratios else "-"

    def ratio(a, b):
        return "%.2fx" % (a / b) if b > 0 else "-"

    workloads = []
    for (_, w, _) in rows:
        if w not in workloads:
            workloads.append(w)
    for w in workloads:
        if w in DRIVER_WORKLOADS:
            driver_table(w, rows, paths, ratio)
            continue
        if w == "select-only":
            print("\n| select-only (-S) | tps | vs PgBouncer |")
            print("|---|---:|---:|")
            base = rows.get(("pgbouncer", w, "-"), (0,))[0]
            for p in paths:
                if (p, w, "-") in rows:
                    t = rows[(p, w, "-")][0]
                    print("| %s | %.0f | %s |" % (p, t, ratio(t, base)))
            continue
        print("\n| %s | cold tps | cold vs PgB | hot tps | hot vs PgB | retried (hot) | "
              "retried vs PgB | retried vs direct | failed | penalty hot/cold |" % w)
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        cb = rows.get(("pgbouncer", w, "cold"), (0,))[0]
        hb = rows.get(("pgbouncer", w, "hot"), (0, 0))
        hd = rows.get(("direct", w, "hot"), (0, 0))
        for p in paths:
            c = rows.get((p, w, "cold"))
            h = rows.get((p, w, "hot"))
            if c is None or h is None:
                continue
            print("| %s | %.0f | %s | %.0f | %s | %.0f (%.1f%%) | %s | %s | %.0f | %s |" % (
                p, c[0], ratio(c[0], cb), h[0], ratio(h[0], hb[0]), h[1], h[2],
                ratio(h[1], hb[1]), ratio(h[1], hd[1]), h[3], penalty(p, w)))


if __name__ == "__main__":
    main(sys.argv[1])
