# usage: python3 ratio.py FILE  -> learned/original thread CPU per txn per (tag, round)
import re, sys, collections
d = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) r(\d+) (\S+):.*thread CPU (\d+) ns/txn \(extraction (\d+) ns\)", line)
    if m: d[(m.group(1), int(m.group(2)))][m.group(3)] = (int(m.group(4)), int(m.group(5)))
for (tag, r), v in sorted(d.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    if "original" in v and "count-max-canonical-single" in v:
        o, l = v["original"][0], v["count-max-canonical-single"][0]
        print(f"{tag:10s} r{r}: learned {l} / original {o} = x{l/o:.2f}  (learned extraction {v['count-max-canonical-single'][1]} ns)")
