#!/bin/bash
# usage: ab_online.sh BIN TAG reps
# online_shift.spec's setting, shortened: 1.5 s uniform, 1.5 s Zipf 0.99, 1.5 s uniform.
BIN=$1; TAG=$2; N=${3:-2}
cd "$(dirname "$0")/../../.."
for r in $(seq 1 $N); do for p in original count-max-canonical-single; do
  $BIN bench --workload=tpcc --warehouses=8 --queues=8 --protocol=occ --policy=$p --txn_delay_us=200 --stealing=false --mode=online --skew_phases="1.5:0 1.5:0.99 1.5:0" --warmup=0 --duration=4.5 --progress=0 2>&1 | grep "scheduling cost" | sed "s/^/$TAG r$r $p: /"
done; done
