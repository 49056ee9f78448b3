#!/bin/bash
# usage: abn.sh ROUNDS BIN1 TAG1 [BIN2 TAG2 ...]
# Interleaved same-run A/B: each round runs every binary's original and
# learned (count-max-canonical-single) policy with learncpu/ab.sh's setting
# (phased mode) and, with MODE=online, bench/experiments/online_shift.spec's
# setting (TPC-C 8 warehouses, 8 queues, txn_delay_us=200, stealing off, OCC).
N=$1; shift
D="$(cd "$(dirname "$0")" && pwd)"
cd "$D/../../.."
MODE=${MODE:-phased}
for r in $(seq 1 $N); do
  set -- "${@}"
  args=("$@")
  for ((i=0; i<${#args[@]}; i+=2)); do
    BIN=${args[$i]}; TAG=${args[$((i+1))]}
    if [ "$MODE" = online ]; then
      bash "$D/ab_online.sh" "$BIN" "$TAG" 1 | sed "s/ r1 / r$r /"
    else
      bash bench/results/learncpu/ab.sh "$BIN" "$TAG" 1 | sed "s/ r1 / r$r /"
    fi
  done
done
