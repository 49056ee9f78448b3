#!/usr/bin/python3
"""Issue 16's per-phase checks for online (skew-shift) experiments.

usage: /usr/bin/python3 bench/plots/online_summary.py [--phase_s=5] DIR...
Each DIR is the output of `corral experiment` on one of the online specs
(bench/experiments/online_shift*.spec): cells.csv and timeline.csv. One row
per run, protocol and skew phase: the phase's mean tps of each policy and,
same run, learned (count-max-canonical-single) / original, learned /
hard-partition, auto / the best fixed learned policy (the issue's target;
the specs run one fixed learned policy), auto / the best fixed policy of
any kind, learned's abort rate / original's, and which policies settle
after the shift: every 0.5 s sample that starts 1 s or more after the
phase began is within 10% of the phase's steady state (the mean of the
samples in its second half). A final line counts each target over the rows.
"""
import collections
import csv
import sys

LEARNED = "count-max-canonical-single"
BASELINES = ("original", "hard-partition")
POLICY_SHORT = {"original": "o", "hard-partition": "h", LEARNED: "l", "auto": "a"}


def load(d, phase_s):
    cells = list(csv.DictReader(open(f"{d}/cells.csv")))
    samples = collections.defaultdict(list)  # (protocol, policy, phase) -> [(t, tps, abort)]
    for r in csv.DictReader(open(f"{d}/timeline.csv")):
        c = cells[int(r["cell"]) - 1]
        samples[(c["protocol"], c["policy"], int(r["phase"]))].append(
            (float(r["t_s"]), float(r["tps"]), float(r["abort_rate"])))
    return samples


def settled(points, phase, phase_s, sample_s=0.5):
    start = phase * phase_s
    steady = [tps for t, tps, _ in points if t - sample_s >= start + phase_s / 2]
    after = [tps for t, tps, _ in points if t - sample_s >= start + 1.0 - 1e-9]
    if not steady or not after:
        return None
    mean = sum(steady) / len(steady)
    return all(abs(v - mean) <= 0.10 * mean for v in after)


def main(argv):
    phase_s = 5.0
    dirs = []
    for a in argv[1:]:
        if a.startswith("--phase_s="):
            phase_s = float(a.split("=", 1)[1])
        else:
            dirs.append(a)
    if not dirs:
        sys.stderr.write(__doc__)
        return 2
    print("| run | protocol | phase | original | hard-partition | learned | auto | learned/original | "
          "learned/hard-partition | auto/learned | auto/best fixed | learned abort / original's | settled in 1 s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    met = collections.Counter()
    rows = 0
    for d in dirs:
        s = load(d, phase_s)
        for proto in sorted({k[0] for k in s}):
            for ph in sorted({k[2] for k in s if k[0] == proto}):
                mean = {}
                for pol in BASELINES + (LEARNED, "auto"):
                    pts = s.get((proto, pol, ph), [])
                    mean[pol] = (sum(p[1] for p in pts) / len(pts), sum(p[2] for p in pts) / len(pts)) if pts else (
                        float("nan"), float("nan"))
                o, h, l, a = (mean[p] for p in BASELINES + (LEARNED, "auto"))
                best = max(o[0], h[0], l[0])
                settle = "".join(POLICY_SHORT[p] for p in BASELINES + (LEARNED, "auto")
                                 if settled(s.get((proto, p, ph), []), ph, phase_s))
                rows += 1
                met["auto within 5% of learned"] += a[0] >= 0.95 * l[0]
                met["learned >= 1.2x original"] += l[0] >= 1.2 * o[0]
                met["learned >= 0.95x hard-partition"] += l[0] >= 0.95 * h[0]
                met["learned aborts <= 0.2x original's"] += o[1] > 0 and l[1] <= 0.2 * o[1]
                met["learned settles in 1 s"] += "l" in settle
                met["auto settles in 1 s"] += "a" in settle
                print(f"| {d.rstrip('/').split('/')[-1]} | {proto} | {ph} | {o[0]:.0f} | {h[0]:.0f} | {l[0]:.0f} | "
                      f"{a[0]:.0f} | x{l[0] / o[0]:.2f} | x{l[0] / h[0]:.2f} | x{a[0] / l[0]:.2f} | x{a[0] / best:.2f} | "
                      f"x{(l[1] / o[1]) if o[1] else float('nan'):.2f} | {settle or '-'} |")
    print()
    print(f"Of {rows} (run, protocol, phase) rows: " + "; ".join(f"{k} {v}" for k, v in met.items()) +
          ". Settled: o original, h hard-partition, l learned, a auto.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
