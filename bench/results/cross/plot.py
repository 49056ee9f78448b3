"""Issue 18's cross as a plot: per protocol, learned/original tps ratio with its
95% interval (ratios.csv), one panel per workload directory.

  /usr/bin/python3 bench/results/cross/plot.py bench/results/cross/cross.png bench/results/cross/ycsb bench/results/cross/tpcc
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

out, dirs = sys.argv[1], sys.argv[2:]
fig, axes = plt.subplots(1, len(dirs), figsize=(6 * len(dirs), 4), squeeze=False)
for ax, d in zip(axes[0], dirs):
    rows = [r for r in csv.DictReader(open(os.path.join(d, "ratios.csv"))) if float(r["tps_ratio"]) > 0]
    names = [r["protocol"] for r in rows]
    val = [float(r["tps_ratio"]) for r in rows]
    lo = [v - float(r["tps_lo"]) for v, r in zip(val, rows)]
    hi = [float(r["tps_hi"]) - v for v, r in zip(val, rows)]
    colors = ["tab:green" if v >= 1 else "tab:red" for v in val]
    ax.bar(range(len(val)), val, color=colors, yerr=[lo, hi], capsize=3)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(val)))
    ax.set_xticklabels(names, rotation=45, ha="right")
    ax.set_ylabel("tps, learned / original (95% interval)")
    ax.set_title(os.path.basename(d.rstrip("/")))
    ax.set_ylim(0, max(2.0, max(v + h for v, h in zip(val, hi)) if val else 2.0))
fig.tight_layout()
fig.savefig(out, dpi=110)
print("wrote", out)
