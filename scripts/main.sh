#!/usr/bin/env bash
# The README's main command: install what is needed, build, and run the main
# job on the embedded engine (no external database needed).
#
#   bash scripts/main.sh                          # the quick comparison
#   bash scripts/main.sh --max_interference=0     # busy machine: keep disturbed runs
#
# Main job: a short version of the headline comparison (bench/RESULTS.md): TPC-C
# on the embedded engine, learned count-max-canonical-single vs. original and
# hard-partition under OCC and 2PL no-wait, in interleaved rounds until each
# throughput ratio's 95% interval is within +-5% or the time cap (165 s,
# bench/experiments/quick.spec). Prints the table and, per learned cell, its
# verdicts: "tps x1.25 [1.18, 1.32] vs original" where the 95% interval
# excludes 1, "no measurable difference" where it includes 1. Extra arguments
# go to `corral experiment`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bazel build -c opt //cli:corral
CORRAL="$(bazel info -c opt bazel-bin)/cli/corral"
"$CORRAL" experiment --spec=bench/experiments/quick.spec --out="${CORRAL_OUT:-/tmp/corral-quick}" "$@"
