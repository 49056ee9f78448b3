# usage: python3 phases.py OUT_DIR  -> per cell and run: mean tps and abort rate per skew phase
# (the experiment's timeline.csv; cells numbered in cells.csv order from 1).
import csv, sys, collections
d = sys.argv[1]
cells = list(csv.DictReader(open(f"{d}/cells.csv")))
acc = collections.defaultdict(lambda: [0.0, 0.0, 0])
for r in csv.DictReader(open(f"{d}/timeline.csv")):
    k = (int(r["cell"]), int(r["run"]), int(r["phase"]))
    a = acc[k]; a[0] += float(r["tps"]); a[1] += float(r["abort_rate"]); a[2] += 1
phases = sorted({k[2] for k in acc})
print("| policy | sweep | run | " + " | ".join(f"tps phase {p}" for p in phases) + " | " +
      " | ".join(f"abort phase {p}" for p in phases) + " |")
print("|---|---|---:|" + "---:|" * (2 * len(phases)))
for (c, run) in sorted({(k[0], k[1]) for k in acc}):
    cell = cells[c - 1]
    t = [acc[(c, run, p)] for p in phases]
    print(f"| {cell['policy']} | {cell['sweep']} | {run} | " + " | ".join(f"{a[0]/a[2]:.0f}" for a in t) + " | " +
          " | ".join(f"{a[1]/a[2]:.3f}" for a in t) + " |")
