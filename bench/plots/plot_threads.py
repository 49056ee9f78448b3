#!/usr/bin/python3
"""Throughput and abort rate against threads (queues), one line per policy,
one column per protocol (the shape of the paper's Figures 5-7).

usage: /usr/bin/python3 bench/plots/plot_threads.py DIR/cells.csv OUT.png [TITLE]
Reads the cells.csv written by `corral experiment` (bench/runner/experiment.h).
"""
import csv
import sys
from collections import defaultdict

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    rows = list(csv.DictReader(open(argv[1])))
    title = argv[3] if len(argv) > 3 else ""
    protocols = []
    for r in rows:
        if r["protocol"] not in protocols:
            protocols.append(r["protocol"])
    fig, axes = plt.subplots(2, len(protocols), figsize=(5 * len(protocols), 7), squeeze=False)
    for col, proto in enumerate(protocols):
        series = defaultdict(list)
        for r in rows:
            if r["protocol"] == proto:
                series[r["policy"]].append((int(r["queues"]), float(r["tps"]), float(r["tps_ci95"]),
                                            float(r["abort_rate"]), float(r["abort_rate_ci95"])))
        for pol, pts in series.items():
            pts.sort()
            q = [p[0] for p in pts]
            axes[0][col].errorbar(q, [p[1] for p in pts], yerr=[p[2] for p in pts], marker="o", capsize=3, label=pol)
            axes[1][col].errorbar(q, [p[3] for p in pts], yerr=[p[4] for p in pts], marker="o", capsize=3, label=pol)
        axes[0][col].set_title(f"{title} {proto}".strip())
        axes[0][col].set_ylabel("throughput (commits/s)")
        axes[1][col].set_ylabel("abort rate")
        axes[1][col].set_xlabel("threads (= queues)")
        axes[0][col].set_ylim(bottom=0)
        axes[1][col].set_ylim(0, 1)
        axes[0][col].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
