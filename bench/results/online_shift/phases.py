import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
cells = collections.OrderedDict()
for r in rows:
    cells.setdefault((r["protocol"], r["policy"]), []).append(r)
print("| protocol | policy | tps uniform-1 | tps hot | tps uniform-2 | abort uniform-1 | abort hot | abort uniform-2 | switches | max hot k |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for (proto, pol), pts in cells.items():
    byph = collections.defaultdict(list)
    for p in pts:
        byph[int(p["phase"])].append(p)
    tps = []; ab = []
    for ph in (0, 1, 2):
        ps = byph.get(ph, [])
        # samples end at t_s; phase ph covers (5ph, 5ph+5]; skip the first second after a shift
        ps = [p for p in ps if float(p["t_s"]) > 5 * ph + 1.0]
        tps.append(sum(float(p["tps"]) for p in ps) / max(1, len(ps)))
        ab.append(sum(float(p["abort_rate"]) for p in ps) / max(1, len(ps)))
    sw = pts[-1].get("switches", "")
    k = max(int(p.get("hot_queues", 1)) for p in pts)
    print(f"| {proto} | {pol} | {tps[0]:.0f} | {tps[1]:.0f} | {tps[2]:.0f} | {ab[0]:.3f} | {ab[1]:.3f} | {ab[2]:.3f} | {sw} | {k} |")
