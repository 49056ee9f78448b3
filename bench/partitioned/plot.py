#!/usr/bin/env python3
"""Plots of the partitioned-execution experiments (bench/partitioned).

  /usr/bin/python3 bench/partitioned/plot.py [results_dir] [plots_dir]

results_dir (default bench/partitioned/results) holds the CSVs written by
partitioned_bench; writes sweep_<variant>.png (measured vs model per scheme
across f, the paper's Figure 10), selector.png (adaptive vs best fixed,
with the loss rules of partitioned_bench: raw, paired, counted) and
tpcc.png (TPC-C by warehouse: each scheme and the selector across the
remote fraction, measured and model).
"""
import csv
import glob
import os
import statistics
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"blocking": "tab:red", "speculation": "tab:blue",
          "locking": "tab:green"}


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def plot_sweep(path, out_dir):
    rows = read(path)
    if not rows:
        return
    variant = rows[0]["variant"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    errs = []
    for scheme in ["blocking", "speculation", "locking"]:
        rs = [r for r in rows if r["scheme"] == scheme]
        if not rs:
            continue
        f = [100 * float(r["f"]) for r in rs]
        ax.plot(f, [float(r["measured_tps"]) for r in rs], "o-",
                color=COLORS[scheme], label=scheme + " measured")
        ax.plot(f, [float(r["model_tps"]) for r in rs], "--",
                color=COLORS[scheme], label=scheme + " model")
        errs += [abs(float(r["err"])) for r in rs]
    ax.set_xlabel("multi-partition transactions (%)")
    ax.set_ylabel("throughput (txn/s)")
    ax.set_title("partitioned engine, %s: model vs measured "
                 "(median |err| %.0f%%)" % (variant,
                                           100 * statistics.median(errs)))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = os.path.join(out_dir, "sweep_%s.png" % variant)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print("wrote", out)


def plot_selector(path, out_dir):
    rows = read(path)
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(9, 4.5))
    labels, best, adaptive = [], [], []
    for r in rows:
        labels.append("f%.2f a%.2f m%.1f" % (float(r["f"]), float(r["abort"]),
                                              float(r["mr"])))
        best.append(float(r["best_tps"]))
        adaptive.append(float(r["adaptive_tps"]))
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], best, width=0.4, label="best fixed scheme")
    ax.bar([i + 0.2 for i in x], adaptive, width=0.4, label="selector")
    losses = sorted(float(r["loss"]) for r in rows)
    counted = sorted(float(r.get("counted_loss", r["loss"])) for r in rows)
    ax.set_title("selector vs best fixed: raw loss median %.1f%% worst %.1f%%; "
                 "beyond noise (sign test) worst %.1f%% (%d cells)" % (
                     100 * losses[len(losses) // 2], 100 * losses[-1],
                     100 * counted[-1], len(losses)), fontsize=9)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=90, fontsize=6)
    ax.set_ylabel("throughput (txn/s)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = os.path.join(out_dir, "selector.png")
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print("wrote", out)


def plot_tpcc(res, out_dir):
    rows = read(os.path.join(res, "tpcc.csv"))
    sel = read(os.path.join(res, "tpcc_selector.csv"))
    if not rows:
        return
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    remotes = sorted({float(r["remote"]) for r in rows})
    xs = list(range(len(remotes)))
    mp = {float(r["remote"]): max(float(x["mp_share"]) for x in rows
                                  if x["remote"] == r["remote"]) for r in rows}
    for scheme in ["blocking", "speculation", "locking"]:
        rs = sorted((r for r in rows if r["scheme"] == scheme),
                    key=lambda r: float(r["remote"]))
        ax.plot(xs, [float(r["measured_tps"]) for r in rs], "o-",
                color=COLORS[scheme], label=scheme + " measured")
        ax.plot(xs, [float(r["model_tps"]) for r in rs], "--",
                color=COLORS[scheme], label=scheme + " model")
    ax.set_title("one 0.7 s run per scheme: model vs measured", fontsize=10)
    if sel:
        ss = sorted(sel, key=lambda r: float(r["remote"]))
        for scheme in ["blocking", "speculation", "locking"]:
            bx.plot(xs, [float(r[scheme]) for r in ss], "o-", color=COLORS[scheme],
                    label=scheme + " (median of 5 slices)")
        bx.plot(xs, [float(r["adaptive_tps"]) for r in ss], "k*", markersize=13,
                label="selector's final scheme")
        bx.set_title("same engine, interleaved slices: schemes vs selector",
                     fontsize=10)
    for a in (ax, bx):
        a.set_xticks(xs)
        a.set_xticklabels(["%g%%\nMP %.0f%%" % (100 * r, 100 * mp[r]) for r in remotes])
        a.set_xlabel("remote probability (per order line / payment), MP share")
        a.set_yscale("log")
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    ax.set_ylabel("committed txn/s")
    fig.suptitle("TPC-C by warehouse on the partitioned engine (2 warehouses, 2 partitions)")
    fig.tight_layout()
    out = os.path.join(out_dir, "tpcc.png")
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print("wrote", out)


def summary(res):
    """Prints a markdown table: per variant and scheme, model error stats."""
    print("| variant | scheme | median abs err | worst abs err | points within 15% |")
    print("|---|---|---|---|---|")
    for p in sorted(glob.glob(os.path.join(res, "sweep_*.csv"))):
        rows = read(p)
        for scheme in ["blocking", "speculation", "locking"]:
            e = [abs(float(r["err"])) for r in rows if r["scheme"] == scheme]
            if not e:
                continue
            print("| %s | %s | %.0f%% | %.0f%% | %d of %d |" % (
                rows[0]["variant"], scheme, 100 * statistics.median(e),
                100 * max(e), sum(x <= 0.15 for x in e), len(e)))


def main():
    res = sys.argv[1] if len(sys.argv) > 1 else "bench/partitioned/results"
    out = sys.argv[2] if len(sys.argv) > 2 else "bench/partitioned/plots"
    os.makedirs(out, exist_ok=True)
    for p in sorted(glob.glob(os.path.join(res, "sweep_*.csv"))):
        plot_sweep(p, out)
    sel = os.path.join(res, "selector.csv")
    if os.path.exists(sel):
        plot_selector(sel, out)
    if os.path.exists(os.path.join(res, "tpcc.csv")):
        plot_tpcc(res, out)
    summary(res)


if __name__ == "__main__":
    main()
