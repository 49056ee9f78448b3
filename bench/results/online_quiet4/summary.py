# usage: python3 summary.py DIR...   (each DIR an online experiment's output: cells.csv, timeline.csv)
# Per protocol and skew phase: tps of each policy, learned / original, learned / hard-partition,
# auto / best fixed policy, and learned's abort rate / original's; one row per DIR (run).
import csv, sys, collections

def phases(d):
    cells = list(csv.DictReader(open(f"{d}/cells.csv")))
    acc = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for r in csv.DictReader(open(f"{d}/timeline.csv")):
        c = cells[int(r["cell"]) - 1]
        a = acc[(c["protocol"], c["policy"], int(r["phase"]))]
        a[0] += float(r["tps"]); a[1] += float(r["abort_rate"]); a[2] += 1
    return {k: (v[0] / v[2], v[1] / v[2]) for k, v in acc.items()}

L = "count-max-canonical-single"
print("| run | protocol | phase | original | hard-partition | learned | auto | learned/original | learned/hard-partition | auto/best fixed | learned abort / original's |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for d in sys.argv[1:]:
    p = phases(d)
    for proto in sorted({k[0] for k in p}):
        for ph in sorted({k[2] for k in p if k[0] == proto}):
            g = lambda pol: p.get((proto, pol, ph), (float("nan"), float("nan")))
            o, h, l, a = g("original"), g("hard-partition"), g(L), g("auto")
            best = max(o[0], h[0], l[0])
            print(f"| {d.rstrip('/').split('/')[-1]} | {proto} | {ph} | {o[0]:.0f} | {h[0]:.0f} | {l[0]:.0f} | {a[0]:.0f} | "
                  f"x{l[0]/o[0]:.2f} | x{l[0]/h[0]:.2f} | x{a[0]/best:.2f} | x{(l[1]/o[1]) if o[1] else float('nan'):.2f} |")
