#!/usr/bin/env bash
# The hot phase alone (TPC-C, 8 warehouses, 8 queues, txn_delay_us=200,
# stealing off, online, Zipf 0.99 over the home warehouse for 8 s): original,
# hard-partition, and the learned policy with its hot-spot split capped at
# k = 1, 2, 4, 8 queues per hot reference, interleaved, ROUNDS rounds.
#   bash bench/results/online_s19/hot_k_sweep.sh <corral binary> [ROUNDS]
C=${1:?corral binary}; ROUNDS=${2:-3}
for r in $(seq 1 "$ROUNDS"); do
  for proto in occ 2pl-nowait; do
    for cfg in "original -1" "hard-partition -1" "count-max-canonical-single 1" "count-max-canonical-single 2" \
               "count-max-canonical-single 4" "count-max-canonical-single 8"; do
      set -- $cfg
      line=$("$C" bench --workload=tpcc --warehouses=8 --queues=8 --txn_delay_us=200 --stealing=false --mode=online \
        --skew_phases="8:0.99" --duration=8 --warmup=0 --protocol=$proto --policy=$1 --split_max_k=$2 2>/dev/null |
        grep '^run 1:')
      tps=$(echo "$line" | awk '{print $4}'); ab=$(echo "$line" | awk '{print $8}')
      echo -e "$r\t$proto\t$1\t$2\t$tps\t$ab"
    done
  done
done
