#!/usr/bin/env bash
# Workers A/B (issue 25): one Corral proxy with workers=1 and one with
# workers=2 (W2_ARGS: more keys for it, e.g. worker_lock_threshold=2), run
# alternately under the same pgbench load, ROUNDS rounds of DUR seconds, so
# a shared box's load shifts hit both alike. Per run: tps, transactions
# retried, the proxy process's user + system CPU per transaction, the 1-min
# load average.
#
#   bash bench/proxy/workers_ab.sh                                 # pgbench -S
#   PGB_ARGS="-f bench/proxy/hot_row.sql -D rows=20 --max-tries=100" bash bench/proxy/workers_ab.sh
#
# Starts its own PostgreSQL (scripts/pg.sh) unless PGPORT is set; makes the
# pgbench database corral_bench (SCALE, default 10).
set -euo pipefail
cd "$(dirname "$0")/../.."
DUR=${DUR:-8}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-16}
POOL=${POOL:-8}
PGB_ARGS=${PGB_ARGS:--S}
. bench/proxy/lib.sh
SERVER_BIN=$(proxy_server_bin) || { echo "build failed"; exit 1; }
pg_for_bench
bench_work corral-workers-ab
bench_db corral_bench "${SCALE:-10}" "$PGPORT" 100
corral_ini "$WORK/corral.ini" "$POOL" "$PGPORT" corral_bench "stealing = on"
declare -A PORT PID
for w in 1 2; do
  PORT[$w]=$(free_port)
  extra=""
  [ $w = 2 ] && extra=${W2_ARGS:-}
  # shellcheck disable=SC2086
  "$SERVER_BIN" "$WORK/corral.ini" listen_port=${PORT[$w]} workers=$w $extra 2> "$WORK/w$w.log" &
  PID[$w]=$!
  pids+=($!)
done
sleep 2
echo "# clients=$CLIENTS pool=$POOL duration=${DUR}s pgbench $PGB_ARGS w2_args=${W2_ARGS:-} nproc=$(nproc)"
for r in $(seq 1 "$ROUNDS"); do
  for w in 1 2; do
    t0=$(cpu_ticks "${PID[$w]}")
    # shellcheck disable=SC2086
    out=$(pgbench -n -h 127.0.0.1 -p "${PORT[$w]}" -U postgres -c "$CLIENTS" -j 2 -T "$DUR" $PGB_ARGS corral_bench 2>&1) || true
    t1=$(cpu_ticks "${PID[$w]}")
    read -r tps n retried _ _ < <(echo "$out" | pgbench_summary)
    tps=${tps#-} n=${n#-} retried=${retried#-}  # "-": not printed
    cpu=$(awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v n="${n:-0}" 'BEGIN { if (n > 0) printf "%.1f", d * 1e6 / hz / n; else print "-" }')
    echo "r$r workers=$w tps=${tps:-?} retried=${retried:--} proxy_cpu_us/txn=$cpu load=$(cut -d' ' -f1 /proc/loadavg)"
  done
done
