"""Issue 18, Q-Store placement: one Markdown table per experiment directory
(qplace_ycsb.spec, qplace_tpcc.spec), a row per (protocol, placement): mean
txn/s with its 95% interval over the clean rounds, abort rate, p50/p99
latency and the mean number of execution queues a qstore transaction spanned
(queue heads it waited for; cells.csv queues_per_txn). calvin ignores
qstore_placement: its rows are one configuration measured three times.

  python3 bench/results/qplace/summary.py bench/results/qplace/ycsb bench/results/qplace/tpcc
"""
import csv
import os
import sys


def placement(sweep):
    for part in sweep.split():
        if part.startswith("qstore_placement="):
            return part.split("=", 1)[1]
    return "-"


for d in sys.argv[1:]:
    cells = list(csv.DictReader(open(os.path.join(d, "cells.csv"))))
    print(f"#### {os.path.basename(d.rstrip('/'))}\n")
    print("| protocol | placement | txn/s (95% CI) | rounds | abort rate | p50 / p99 us | queues per txn |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for c in cells:
        p = placement(c["sweep"])
        shown = p if c["protocol"] == "qstore" else f"({p}: n/a)"
        q = float(c.get("queues_per_txn") or 0)
        qs = f"{q:.2f}" if c["protocol"] == "qstore" else "-"
        print(f"| {c['protocol']} | {shown} | {float(c['tps']):,.0f} ± {float(c['tps_ci95']):,.0f} | {c['n']} | "
              f"{float(c['abort_rate']):.3f} | {float(c['p50_us']):,.0f} / {float(c['p99_us']):,.0f} | {qs} |")
    print()
