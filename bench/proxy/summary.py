#!/usr/bin/env python3
"""Summary of bench/proxy/run.sh's results (a TSV: path, workload, variant,
tps, retried, retried %, failed): per workload and path, tps and the ratio to
PgBouncer's; for the contended workloads, retried transactions (count, % and
the ratio to PgBouncer's and to direct's retried counts) and the contention
penalty hot tps / cold tps on the same path. With several rounds (run.sh
REPEAT) every figure is the median over the rounds of that cell (the
penalty: the median of the per-round hot/cold ratios), and the number of
rounds is printed. Prints Markdown tables."""
import statistics
import sys
from collections import OrderedDict


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
