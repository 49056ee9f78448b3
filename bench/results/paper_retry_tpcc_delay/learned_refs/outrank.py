#!/usr/bin/env python3
"""Per `corral bench --show_learned=400` output in this folder (seed1?.txt):
Phase II abort rate against how many item/customer (i_id, c_id, ...) and
district (d_id) references learned more Phase I aborts than the median
warehouse reference (w_id). Under Count/Max such a reference leads every
transaction that names it, instead of the transaction's warehouse.

    /usr/bin/python3 bench/results/paper_retry_tpcc_delay/learned_refs/outrank.py
"""
import glob
import os
import re

for f in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "seed1?.txt"))):
    t = open(f).read()
    refs = [(m.group(1), int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"^\s+(\S+)\s+(\d+)\s+(\d+)\s+[0-9.]+", t, re.M)]
    w = sorted(a for n, a, c in refs if n.startswith("w_id="))
    med = w[len(w) // 2]
    other = [(n, a, c) for n, a, c in refs if not n.startswith(("w_id=", "d_id="))]
    above = [x for x in other if x[1] > med]
    d_above = [n for n, a, c in refs if n.startswith("d_id=") and a > med]
    p2 = re.search(r"run 1: .*?(\d+) tps\s+abort rate ([0-9.]+)", t)
    p1 = re.search(r"phase I: .*?(\d+) tps, abort rate ([0-9.]+)", t)
    top = max(other, key=lambda x: x[1])
    print("%s  Phase II abort rate %s, %s tps | Phase I %s tps | median w_id aborts %d | "
          "item/customer refs above it: %d (top %s: %d aborts, %d commits) | d_id refs above it: %d"
          % (os.path.basename(f), p2.group(2), p2.group(1), p1.group(1), med, len(above), top[0], top[1], top[2],
             len(d_above)))
