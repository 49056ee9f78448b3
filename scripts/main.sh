#!/usr/bin/env bash
# The README's main command: install what is needed, build, and run the main
# job on the embedded engine (no external database needed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bazel build -c opt //cli:corral
CORRAL="$(bazel info -c opt bazel-bin)/cli/corral"
# Main job: a short version of the headline comparison (bench/RESULTS.md): TPC-C
# on the embedded engine, learned count-max-canonical-single vs. original and
# hard-partition, OCC and 2PL wait-die, 3 repetitions; prints the table.
"$CORRAL" experiment --spec=bench/experiments/quick.spec --out="${CORRAL_OUT:-/tmp/corral-quick}"
