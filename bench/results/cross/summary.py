"""Issue 18's cross: one Markdown table per experiment directory, a row per
protocol: original and learned (count-max-canonical-single) tps and abort
rate, and the paired learned/original ratios with their 95% intervals
(ratios.csv: rounds paired by the runner).

  python3 bench/results/cross/summary.py bench/results/cross/ycsb bench/results/cross/tpcc
"""
import csv
import os
import sys

LEARNED = "count-max-canonical-single"


def fmt_ratio(r, lo, hi, rounds):
    if rounds == 1:
        return f"x{r:.2f} (1 round)"
    mark = "" if lo > 1 or hi < 1 else " (includes 1)"
    return f"x{r:.2f} [{lo:.2f}, {hi:.2f}]{mark}"


for d in sys.argv[1:]:
    cells = list(csv.DictReader(open(os.path.join(d, "cells.csv"))))
    ratios = {r["protocol"]: r for r in csv.DictReader(open(os.path.join(d, "ratios.csv")))}
    by = {(c["protocol"], c["policy"]): c for c in cells}
    protocols = []
    for c in cells:
        if c["protocol"] not in protocols:
            protocols.append(c["protocol"])
    print(f"#### {os.path.basename(d.rstrip('/'))}\n")
    print("| protocol | original tps (abort rate) | learned tps (abort rate) | tps learned / original | abort rate learned / original |")
    print("|---|---:|---:|---:|---:|")
    for p in protocols:
        o, l = by.get((p, "original")), by.get((p, LEARNED))
        if o is None or l is None:
            continue
        r = ratios.get(p)
        tr = ar = "-"
        if float(o["tps"]) == 0 or float(l["tps"]) == 0:
            tr = ar = "no clean run"
        elif r is not None:
            n = int(r["rounds"])
            tr = fmt_ratio(float(r["tps_ratio"]), float(r["tps_lo"]), float(r["tps_hi"]), n)
            ar = fmt_ratio(float(r["abort_ratio"]), float(r["abort_lo"]), float(r["abort_hi"]), n) if float(o["abort_rate"]) > 0 else "- (no aborts)"
        print(f"| {p} | {float(o['tps']):,.0f} ({float(o['abort_rate']):.3f}) | {float(l['tps']):,.0f} ({float(l['abort_rate']):.3f}) | {tr} | {ar} |")
    print()
