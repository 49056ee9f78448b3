#!/usr/bin/env python3
"""Markdown table from bench/dbx1000/run.sh's runs.txt: per DBx1000 protocol,
DBx1000 and each Corral variant (corral-thread, corral-random: --home=...,
with the TPC-C row inserts; corral-thread-dbx1000: --rows=dbx1000, DBx1000's
work without inserts; corral-bench-dbx1000: the same work through `corral
bench` with the scheduler, hard-partition over 2 queues) medians over rounds with
[min-max], and Corral/DBx1000 ratios of the medians (txn/s: >1 means Corral is
faster; CPU us/txn: <1 means Corral spends less CPU per transaction).

  python3 bench/dbx1000/table.py /tmp/dbx1000/out/runs.txt
"""
import statistics
import sys
from collections import defaultdict

CORRAL_OF = {"NO_WAIT": "2pl-nowait", "WAIT_DIE": "2pl-waitdie", "TIMESTAMP": "timestamp",
             "MVCC": "mvcc", "OCC": "occ", "SILO": "occ", "TICTOC": "occ"}


def main(path):
    runs = defaultdict(list)  # (side, protocol) -> [(tps, cpu, abort)]
    failed = defaultdict(int)
    for line in open(path):
        f = line.split()
        if not f or f[0] == "side":
            continue
        if f[3] == "FAILED":
            failed[(f[0], f[2])] += 1
            continue
        runs[(f[0], f[2])].append((float(f[3]), float(f[4]), float(f[5])))

    def cell(side, prot, i, fmt):
        v = [r[i] for r in runs.get((side, prot), []) if r[i] == r[i]]  # NaN: not reported
        if not v:
            return None, "-"
        m = statistics.median(v)
        return m, f"{fmt.format(m)} [{fmt.format(min(v))}-{fmt.format(max(v))}]"

    order = ["corral-thread", "corral-random", "corral-thread-dbx1000", "corral-bench-dbx1000"]
    sides = [x for x in order if any(k[0] == x for k in runs)]
    sides += sorted({k[0] for k in runs if k[0].startswith("corral-")} - set(sides))
    print("| DBx1000 | txn/s | CPU us/txn | Corral | variant | txn/s | CPU us/txn | abort rate "
          "| txn/s ratio | CPU ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for alg, prot in CORRAL_OF.items():
        dt, dts = cell("dbx1000", alg, 0, "{:.0f}")
        dc, dcs = cell("dbx1000", alg, 1, "{:.2f}")
        if failed[("dbx1000", alg)]:
            dts += f" ({failed[('dbx1000', alg)]} hung)"
        for side in sides:
            home = side[len("corral-"):]
            ct, cts = cell(side, prot, 0, "{:.0f}")
            cc, ccs = cell(side, prot, 1, "{:.2f}")
            _, cas = cell(side, prot, 2, "{:.3f}")
            rt = f"{ct / dt:.2f}" if ct and dt else "-"
            rc = f"{cc / dc:.2f}" if cc and dc else "-"
            print(f"| {alg} | {dts} | {dcs} | {prot} | {home} | {cts} | {ccs} | {cas} | {rt} | {rc} |")
    for side in sides:
        home = side[len("corral-"):]
        _, cts = cell(side, "maat", 0, "{:.0f}")
        _, ccs = cell(side, "maat", 1, "{:.2f}")
        print(f"| - | - | - | maat | {home} | {cts} | {ccs} | | - | - |")

    def best(side, names):
        c = [(statistics.median([r[0] for r in runs[(side, n)]]), n) for n in names
             if runs.get((side, n))]
        return max(c) if c else (0, "-")
    bd = best("dbx1000", CORRAL_OF)
    if bd[0]:
        print()
        for side in sides:
            bc = best(side, set(CORRAL_OF.values()) | {"maat"})
            print(f"Best median txn/s: DBx1000 {bd[1]} {bd[0]:.0f}, Corral ({side}) {bc[1]} "
                  f"{bc[0]:.0f}: {bc[0] / bd[0]:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1])
