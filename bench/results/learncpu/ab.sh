#!/bin/bash
# usage: ab.sh BIN TAG reps
BIN=$1; TAG=$2; N=${3:-2}
cd "$(dirname "$0")/../../.."
for r in $(seq 1 $N); do for p in original count-max-canonical-single; do
  $BIN bench --workload=tpcc --warehouses=8 --queues=8 --protocol=occ --policy=$p --txn_delay_us=200 --stealing=false --phase1=1 --warmup=0.3 --duration=3 --progress=0 2>&1 | grep "scheduling cost" | sed "s/^/$TAG r$r $p: /"
done; done
