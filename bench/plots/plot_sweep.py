#!/usr/bin/python3
"""Line plot (and markdown tables) of an experiment that sweeps one setting:
throughput and abort rate against the swept value, one colour per protocol,
solid = original, dashed = the learned policy, and (third row) the learned
policy's throughput over original's, paired per round; one column of panels per value
of an optional facet setting (e.g. tpcc_mix). Made for the Deneva figures
(bench/experiments/deneva_*.spec), usable for any sweep.

usage: /usr/bin/python3 bench/plots/plot_sweep.py DIR/cells.csv OUT.png --x=KEY
           [--facet=KEY] [--title=TITLE] [--md=OUT.md] [--logy]

KEY is a cells.csv column (theta, warehouses, ...) or a key of its `sweep`
column ("update_rate=0.5 ..."). With --md, writes per facet: throughput and
abort rate per protocol (original / learned), the protocols ordered by
throughput at each point, and learned/original ratios paired per round from
DIR/ratios.csv (geometric mean [95% interval]).
"""
import csv
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

BASELINE = "original"


def setting(row, key):
    for item in row.get("sweep", "").split():
        k, _, v = item.partition("=")
        if k == key:
            return v
    v = row.get(key, "")
    return v


def as_number(v):
    try:
        return float(v)
    except ValueError:
        return v


def parse_args(argv):
    pos, opts = [], {}
    for a in argv[1:]:
        if a.startswith("--"):
            k, _, v = a[2:].partition("=")
            opts[k] = v if v else True
        else:
            pos.append(a)
    return pos, opts


def fmt_x(x):
    return ("%g" % x) if isinstance(x, float) else str(x)


def fmt_tps(x):
    return "%.1fk" % (x / 1000.0)


def main(argv):
    pos, opts = parse_args(argv)
    if len(pos) < 2 or "x" not in opts:
        sys.stderr.write(__doc__)
        return 2
    cells_path, out_png = pos[0], pos[1]
    xkey, fkey = opts["x"], opts.get("facet")
    # A cell with no clean run (n = 0: every run lost too much CPU to other
    # processes) has no measurement; it is left out (shown as "-").
    rows = [r for r in csv.DictReader(open(cells_path)) if int(r.get("n", "1")) > 0]
    protocols, policies, facets, xs = [], [], [], []
    at = {}
    for r in rows:
        p, q = r["protocol"], r["policy"]
        f = setting(r, fkey) if fkey else ""
        x = as_number(setting(r, xkey))
        for lst, v in ((protocols, p), (policies, q), (facets, f), (xs, x)):
            if v not in lst:
                lst.append(v)
        at[(f, x, p, q)] = r
    xs.sort()
    learned = [q for q in policies if q != BASELINE]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]

    ratios = {}
    rpath = os.path.join(os.path.dirname(cells_path), "ratios.csv")
    if os.path.exists(rpath):
        for r in csv.DictReader(open(rpath)):
            if r["baseline"] != BASELINE or int(r["rounds"]) == 0:
                continue
            f = setting(r, fkey) if fkey else ""
            ratios[(f, as_number(setting(r, xkey)), r["protocol"], r["policy"])] = r

    fig, axes = plt.subplots(3, len(facets), figsize=(6.5 * len(facets), 11), squeeze=False)
    for j, f in enumerate(facets):
        for i, p in enumerate(protocols):
            for q in policies:
                pts = [(x, at[(f, x, p, q)]) for x in xs if (f, x, p, q) in at]
                if not pts:
                    continue
                style = "-" if q == BASELINE else "--"
                mark = "o" if q == BASELINE else "x"
                label = "%s %s" % (p, "orig" if q == BASELINE else "learned")
                px = [x for x, _ in pts]
                # No error bars: with two rounds the Student-t half-widths
                # (t = 12.7) cover the plot; table.md has them.
                axes[0][j].plot(px, [float(r["tps"]) for _, r in pts], style + mark,
                                color=colors[i % len(colors)], label=label, markersize=4)
                axes[1][j].plot(px, [float(r["abort_rate"]) for _, r in pts], style + mark,
                                color=colors[i % len(colors)], label=label, markersize=4)
            for q in learned:
                pts = [(x, ratios[(f, x, p, q)]) for x in xs if (f, x, p, q) in ratios]
                if pts:
                    axes[2][j].plot([x for x, _ in pts], [float(r["tps_ratio"]) for _, r in pts], "-o",
                                    color=colors[i % len(colors)], label=p, markersize=4)
        axes[2][j].axhline(1.0, color="grey", linewidth=0.8)
        axes[2][j].set_ylabel("learned / original tps (paired per round)")
        axes[2][j].set_xlabel(xkey)
        axes[0][j].set_title("%s%s" % (opts.get("title", ""), (" - %s=%s" % (fkey, f)) if fkey else ""))
        axes[0][j].set_ylabel("throughput (commits/s)")
        if opts.get("logy"):
            axes[0][j].set_yscale("log")
        else:
            axes[0][j].set_ylim(bottom=0)
        axes[1][j].set_ylabel("abort rate (aborts / attempts)")
        axes[1][j].set_ylim(0, min(1.0, 1.1 * max([float(r["abort_rate"]) for r in rows] + [0.01])))
        axes[1][j].set_xlabel(xkey)
        if all(isinstance(x, float) for x in xs) and xkey == "warehouses":
            for a in (axes[0][j], axes[1][j], axes[2][j]):
                a.set_xscale("log", base=2)
                a.set_xticks(xs)
                a.set_xticklabels([("%g" % x) for x in xs])
    axes[0][0].legend(fontsize=7, ncol=2)
    if ratios:
        axes[2][0].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out_png, dpi=100)

    if "md" not in opts:
        return 0
    out = []
    for f in facets:
        head = (" (%s=%s)" % (fkey, f)) if fkey else ""
        for q in learned:
            for what, column, fmt in (("Throughput", "tps", fmt_tps),
                                      ("Abort rate", "abort_rate", lambda v: "%.3f" % v)):
                out.append("#### %s, original / %s%s\n" % (what, q, head))
                out.append("| %s | %s |" % (xkey, " | ".join(protocols)))
                out.append("|---:|%s" % ("---:|" * len(protocols)))
                for x in xs:
                    cells = []
                    for p in protocols:
                        pair = [at.get((f, x, p, pol)) for pol in (BASELINE, q)]
                        cells.append(" / ".join(fmt(float(r[column])) if r else "-" for r in pair))
                    out.append("| %s | %s |" % (fmt_x(x), " | ".join(cells)))
                out.append("")
            out.append("#### Protocols by throughput at each point%s (highest first)\n" % head)
            out.append("| %s | original | %s |" % (xkey, q))
            out.append("|---:|---|---|")
            for x in xs:
                orders = []
                for pol in (BASELINE, q):
                    ps = [p for p in protocols if (f, x, p, pol) in at]
                    ps.sort(key=lambda p: -float(at[(f, x, p, pol)]["tps"]))
                    orders.append(" > ".join(ps))
                out.append("| %s | %s | %s |" % (fmt_x(x), orders[0], orders[1]))
            out.append("")
            if ratios:
                out.append("#### %s / original, paired per round%s: tps ratio [95%%], abort-rate ratio\n" % (q, head))
                out.append("| %s | %s |" % (xkey, " | ".join(protocols)))
                out.append("|---:|%s" % ("---|" * len(protocols)))
                for x in xs:
                    cells = []
                    for p in protocols:
                        r = ratios.get((f, x, p, q))
                        if r is None:
                            cells.append("-")
                        elif int(r["rounds"]) == 1:  # one paired round: no interval
                            cells.append("x%.2f (1 round), ab x%.2f" % (float(r["tps_ratio"]),
                                                                        float(r["abort_ratio"])))
                        else:
                            cells.append("x%.2f [%.2f, %.2f], ab x%.2f" % (
                                float(r["tps_ratio"]), float(r["tps_lo"]), float(r["tps_hi"]),
                                float(r["abort_ratio"])))
                    out.append("| %s | %s |" % (fmt_x(x), " | ".join(cells)))
                out.append("")
    with open(opts["md"], "w") as fh:
        fh.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
