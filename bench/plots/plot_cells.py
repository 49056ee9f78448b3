#!/usr/bin/python3
"""Bar chart of throughput and abort rate per policy and protocol for one
experiment (e.g. the headline comparison or the 2^4 table).

usage: /usr/bin/python3 bench/plots/plot_cells.py DIR/cells.csv OUT.png [TITLE]
"""
import csv
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    rows = list(csv.DictReader(open(argv[1])))
    title = argv[3] if len(argv) > 3 else ""
    protocols, policies = [], []
    for r in rows:
        if r["protocol"] not in protocols:
            protocols.append(r["protocol"])
        if r["policy"] not in policies:
            policies.append(r["policy"])
    at = {(r["protocol"], r["policy"]): r for r in rows}
    fig, axes = plt.subplots(2, 1, figsize=(max(7, 0.6 * len(policies) * len(protocols)), 8))
    width = 0.8 / max(1, len(protocols))
    for i, proto in enumerate(protocols):
        xs = [j + i * width for j in range(len(policies))]
        tps = [float(at[(proto, p)]["tps"]) if (proto, p) in at else 0 for p in policies]
        tci = [float(at[(proto, p)]["tps_ci95"]) if (proto, p) in at else 0 for p in policies]
        ar = [float(at[(proto, p)]["abort_rate"]) if (proto, p) in at else 0 for p in policies]
        aci = [float(at[(proto, p)]["abort_rate_ci95"]) if (proto, p) in at else 0 for p in policies]
        axes[0].bar(xs, tps, width, yerr=tci, capsize=2, label=proto)
        axes[1].bar(xs, ar, width, yerr=aci, capsize=2, label=proto)
    for ax in axes:
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(policies))])
        ax.set_xticklabels(policies, rotation=60, ha="right", fontsize=7)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("throughput (commits/s)")
    axes[1].set_ylabel("abort rate")
    axes[1].set_ylim(0, 1)
    axes[0].set_title(title)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
