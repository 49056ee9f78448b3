#!/bin/bash
# Runs one of Deneva's experiments (issue #17) from its spec and records it
# under bench/results/deneva_<fig>/: the experiment's outputs, the plot
# (plot.png), the markdown tables (tables.md) and when.txt (command, UTC
# start/end, `uptime` at start and end, machine).
#   bash scripts/deneva_figures.sh fig2|fig5|fig10 [extra corral experiment flags]
# Needs a built //cli:corral (bazel build //cli:corral).
set -euo pipefail
cd "$(dirname "$0")/.."
fig=${1:?usage: deneva_figures.sh fig2|fig5|fig10}
shift
case "$fig" in
  fig2) spec=deneva_ycsb_skew; x=theta; facet=""; title="Deneva Fig. 2: YCSB vs skew" ;;
  fig5) spec=deneva_ycsb_update; x=update_rate; facet=""; title="Deneva update rate (paper Fig. 3): YCSB theta 0.6" ;;
  fig10) spec=deneva_tpcc; x=warehouses; facet="--facet=tpcc_mix"; title="Deneva Fig. 10: TPC-C" ;;
  *) echo "unknown figure $fig" >&2; exit 2 ;;
esac
out=bench/results/deneva_$fig
corral=.bazel/bin/cli/corral
[ -x "$corral" ] || corral=bazel-bin/cli/corral
mkdir -p "$out"
cmd="$corral experiment --spec=bench/experiments/$spec.spec --out=$out $*"
{
  echo "command: $cmd"
  echo "commit: $(git rev-parse --short HEAD)"
  echo "machine: 2-core dev box ($(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GiB), shared with concurrent builds"
  echo "start: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "uptime at start: $(uptime)"
} > "$out/when.txt"
$cmd > "$out/stdout.txt" 2>&1
{
  echo "end: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "uptime at end: $(uptime)"
} >> "$out/when.txt"
/usr/bin/python3 bench/plots/plot_sweep.py "$out/cells.csv" "$out/plot.png" --x="$x" $facet \
    --title="$title" --md="$out/tables.md"
cat "$out/when.txt"
