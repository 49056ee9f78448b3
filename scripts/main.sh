#!/usr/bin/env bash
# The README's main command: install what is needed, build, and run the main
# job on the embedded engine (no external database needed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bazel build -c opt //cli:corral
CORRAL="$(bazel info -c opt bazel-bin)/cli/corral"
# Main job: reference extraction over the TPC-C statements, literal and canonical.
echo "== TPC-C statements -> references (canonical, single)"
"$CORRAL" refs --refs=canonical --grouping=single --schema=schemas/tpcc.sql schemas/tpcc_statements.sql
