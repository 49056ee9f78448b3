#!/usr/bin/python3
"""Throughput and abort rate over time for skew-shift (online) runs, with the
History/State memory use (the shape of the paper's Figures 16 and 14).

usage: /usr/bin/python3 bench/plots/plot_timeline.py DIR/timeline.csv OUT.png [TITLE]
Reads the timeline.csv written by `corral experiment`; one line per cell
(policy), dotted lines where the workload's skew phase changes. When the CSV
has the online-tuning columns (chosen, hot_queues), two more panels show the
queues given to the hottest split reference and, for `auto` cells, the
policy chosen over time.
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
    series = defaultdict(list)
    for r in rows:
        if r["run"] != "1":
            continue
        key = f'{r["protocol"]} {r["policy"]}'
        series[key].append(r)
    online = bool(rows) and "hot_queues" in rows[0]
    fig, axes = plt.subplots(5 if online else 3, 1, figsize=(9, 14 if online else 9), sharex=True)
    arm_names = sorted({r["chosen"] for r in rows if r.get("chosen")}) if online else []
    for key, pts in series.items():
        t = [float(p["t_s"]) for p in pts]
        axes[0].plot(t, [float(p["tps"]) for p in pts], label=key)
        axes[1].plot(t, [float(p["abort_rate"]) for p in pts], label=key)
        axes[2].plot(t, [int(p["history_bytes"]) / 1024 for p in pts], label=f"{key} History")
        axes[2].plot(t, [int(p["state_bytes"]) / 1024 for p in pts], linestyle="--", label=f"{key} State")
        if online:
            axes[3].step(t, [int(p["hot_queues"]) for p in pts], where="post", label=key)
            if pts and pts[0]["policy"] == "auto":
                axes[4].step(t, [arm_names.index(p["chosen"]) for p in pts], where="post", label=key)
    # Phase boundaries from the first series.
    if series:
        first = next(iter(series.values()))
        prev = None
        for p in first:
            if prev is not None and p["phase"] != prev:
                for ax in axes:
                    ax.axvline(float(p["t_s"]), color="grey", linestyle=":")
            prev = p["phase"]
    axes[0].set_ylabel("throughput (commits/s)")
    axes[0].set_ylim(bottom=0)
    axes[1].set_ylabel("abort rate")
    axes[1].set_ylim(0, 1)
    axes[2].set_ylabel("memory (KiB)")
    axes[-1].set_xlabel("time (s)")
    if online:
        axes[3].set_ylabel("queues of the hottest\nsplit reference")
        axes[4].set_ylabel("auto: policy chosen")
        axes[4].set_yticks(range(len(arm_names)))
        axes[4].set_yticklabels(arm_names, fontsize=7)
    axes[0].set_title(title)
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
