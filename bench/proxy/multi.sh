#!/usr/bin/env bash
# Multi-proxy benchmark (issue 25): N proxies in front of one PostgreSQL,
# pgbench clients split evenly across them (one pgbench per proxy, run at
# the same time, CLIENTS/N clients each), POOL backends in total (POOL/N
# per proxy), for N in PROXIES (default "1 2 4"). Per N, three fleets:
#   coordinated  N Corral proxies with one cluster_name (cluster.h: shared
#                hot references, advisory locks before BEGIN)
#   uncoord      the same N proxies with sharing off (each learns alone)
#   coord-nofold (only when named in FLEETS) coordinated with
#                cluster_fold_unlock = off: the unlock a round trip after
#                the COMMIT, as before the fold (for comparison)
#   coord-table  (only when named in FLEETS) coordinated with
#                cluster_lock = table: a LOCK TABLE of each key's stripe
#                right after BEGIN, released by COMMIT (cluster.h)
#   coord-tryK   (only when named in FLEETS, e.g. coord-try1) coordinated
#                with cluster_relock_tries = K: a restart tries a key
#                sorting before a held one K times, 1 ms apart (for
#                comparison; 1 = once, no wait)
#   pgbouncer    N PgBouncers (transaction pooling)
# Corral fleets run with restart on a hot key (RESTART=on, the default:
# templates, replay and restart_on_hot_key on, as run.sh's restart mode;
# coordinated, a later statement's key hot in the cluster restarts the
# transaction to take every advisory key in order, restart_loop.cc);
# RESTART=off runs them without.
# Workloads (SERIALIZABLE, --max-tries): hot-row (hot_row.sql, rows
# 1..HOT_ROWS) and two-row (contended.sql, rows 1..HOT_ROWS), and
# select-only (pgbench -S) for the pooling cost; hot-row-split (only when
# named in WORKLOADS) is hot-row with each proxy's clients on HOT_ROWS/N
# rows of their own: no transaction meets another proxy's, the bound any
# coordination of hot-row can reach. ISOLATIONS (default
# "serializable read-committed") runs the two scripts under each level
# named (READ COMMITTED: workload names hot-row-rc, two-row-rc). Every
# measured run follows a WARMUP-second run of the same workload on the
# same fleet (learning), on proxies started for that workload
# (FRESH_FLEET=1, the default: what one script taught them, e.g. two-row's
# cycle gate on the first-statement template it shares with hot-row, does
# not steer the next; FRESH_FLEET=0: one fleet runs every workload in
# turn). Prints one line per run (tps and retried
# transactions summed over the N pgbench processes; CPU microseconds per
# committed transaction of the fleet's processes (proxy_us: the N proxies
# or PgBouncers) and of the whole PostgreSQL server (server_us: postmaster,
# its live processes and those that exited; a server of its own, as
# scripts/pg.sh starts), less sensitive to a shared box's load than tps;
# the 1-minute load average at its end) and writes them to
# $OUT/results.tsv with the proxies' SHOW STATS / SHOW CLUSTER after each
# run. A run in which any pgbench gave no summary (it failed) reads "-" for
# tps, retried, failed and the CPU figures, never the others' partial sum.
#
#   bash bench/proxy/multi.sh
#   SECONDS_PER_RUN=10 PROXIES="1 2" FLEETS="coordinated uncoord" bash bench/proxy/multi.sh
#   ISOLATIONS=serializable WORKLOADS=hot-row bash bench/proxy/multi.sh
#   OUT=bench/results/p25 bash bench/proxy/multi.sh
#   VACUUM_BEFORE_RUN=1 bash bench/proxy/multi.sh   # VACUUM pgbench_accounts before every run
#   RESTART=off bash bench/proxy/multi.sh            # Corral fleets without restart on a hot key
#   PROTOCOL=prepared bash bench/proxy/multi.sh      # pgbench -M prepared (or extended; default simple)
#   INTERLEAVE=1 ROUNDS=3 bash bench/proxy/multi.sh  # fleets side by side per workload, 3 rounds
#
# INTERLEAVE=1 (with FRESH_FLEET=1): per N, the fleets take turns per
# workload (a workload's runs on every fleet follow one another) instead of
# each fleet running every workload in turn, and ROUNDS repeats the whole
# order: a ratio between fleets then compares runs about a minute apart,
# not several (on the 2-core box one fleet's tps swung 1.5x between runs).
# results.tsv gains a round column.
#
# SLICES=K (with INTERLEAVE=1, K even): the fleets of a workload run at
# once (idle but for their turns) and take turns in K slices of
# SECONDS_PER_RUN/K seconds each, in A B B A ... order, after one warm-up
# each; a fleet's row sums its slices (commits, retries, its processes' and
# the server's CPU in its turns). The ratio then compares fleets measured
# seconds apart and in balanced positions, so a drift of the box's speed
# within a run (1.3-1.5x between runs a minute apart on the 2-core box)
# falls on both alike. E.g.
#   INTERLEAVE=1 SLICES=4 ROUNDS=3 PROXIES="2 4" FLEETS="coordinated pgbouncer" \
#     WORKLOADS=select-only ISOLATIONS=serializable SECONDS_PER_RUN=8 bash bench/proxy/multi.sh
#
# Starts its own PostgreSQL (scripts/pg.sh) unless PGPORT is set.
set -euo pipefail
cd "$(dirname "$0")/../.."
DUR=${SECONDS_PER_RUN:-15}
WARMUP=${WARMUP:-3}
CLIENTS=${CLIENTS:-16}
POOL=${POOL:-8}
SCALE=${SCALE:-10}
HOT_ROWS=${HOT_ROWS:-20}
MAX_TRIES=${MAX_TRIES:-100}
PROXIES=${PROXIES:-1 2 4}
FLEETS=${FLEETS:-coordinated uncoord pgbouncer}
WORKLOADS=${WORKLOADS:-hot-row two-row select-only}
ISOLATIONS=${ISOLATIONS:-serializable read-committed}
INTERVAL_MS=${INTERVAL_MS:-200}
THRESHOLD=${THRESHOLD:-3}
RESTART=${RESTART:-on}
FRESH_FLEET=${FRESH_FLEET:-1}
INTERLEAVE=${INTERLEAVE:-0}
ROUNDS=${ROUNDS:-1}
SLICES=${SLICES:-1}
PROTOCOL=${PROTOCOL:-simple}  # pgbench -M: simple, extended or prepared
OUT=${OUT:-$(mktemp -d /tmp/corral-multi.XXXXXX)}
DB=corral_multi
. bench/proxy/lib.sh
SERVER_BIN=$(proxy_server_bin) || { echo "build failed"; exit 1; }
pg_for_bench
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/corral-multi-work.XXXXXX)
chmod 755 "$WORK"
fleet_pids=()
stop_fleet() {
  for p in "${fleet_pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for p in "${fleet_pids[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
  fleet_pids=()
}
cleanup() {
  stop_fleet
  if [ $started_pg = 1 ]; then bash scripts/pg.sh stop >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
bench_db "$DB" "$SCALE" "$PGPORT"   # as run.sh: no autovacuum landing on one fleet's run
for f in hot_row contended; do
  sed 's/ISOLATION LEVEL SERIALIZABLE/ISOLATION LEVEL READ COMMITTED/' bench/proxy/$f.sql > "$WORK/$f-rc.sql"
done
if [[ " $ISOLATIONS " == *" read-committed "* ]]; then
  for w in hot-row two-row; do [[ " $WORKLOADS " == *" $w "* ]] && WORKLOADS="$WORKLOADS $w-rc"; done
fi
if [[ " $ISOLATIONS " != *" serializable "* ]]; then
  WORKLOADS=$(echo " $WORKLOADS " | sed 's/ hot-row / /; s/ two-row / /')
fi
if [ "$PROTOCOL" = prepared ] && [[ " $FLEETS " == *" pgbouncer "* ]]; then
  # PgBouncer in transaction pooling (1.18 here; protocol-level prepared
  # statements came in 1.21) loses a client's prepared statements to other
  # server connections: its pgbench clients abort, and the transactions they
  # leave open blocked the rest for minutes here. Not run.
  echo "# PROTOCOL=prepared: fleet pgbouncer left out ($(pgbouncer --version 2>/dev/null | head -1) keeps no prepared statements in transaction pooling)"
  FLEETS=$(echo " $FLEETS " | sed 's/ pgbouncer / /')
fi
sed 's/random(1, :rows)/:lo + random(1, :rows)/' bench/proxy/hot_row.sql > "$WORK/hot_row-split.sql"
echo '"postgres" ""' > "$WORK/userlist.txt"
chmod 644 "$WORK/userlist.txt"

ports=()
start_fleet() {  # fleet n
  local fleet=$1 n=$2 pool=$(($POOL / $2)) i port
  ports=()
  for i in $(seq 1 "$n"); do
    port=$(free_port)
    ports+=("$port")
    case $fleet in
      pgbouncer)
        pgbouncer_ini "$WORK/pgb$i.ini" "$DB" "$PGPORT" "$port" "$pool" "$WORK/userlist.txt" "$WORK/pgb$i.log"
        start_pgbouncer "$WORK/pgb$i.ini" "$WORK/pgb$i.log"
        fleet_pids+=($!) ;;
      *)
        local cluster="" fold=on lock=advisory
        [ "$fleet" = coordinated ] && cluster="multi_$n"
        local tries=10
        [ "$fleet" = coord-nofold ] && cluster="multi_$n" && fold=off
        [ "$fleet" = coord-table ] && cluster="multi_${n}_table" && lock=table
        case $fleet in coord-try[0-9]*) cluster="multi_$n" tries=${fleet#coord-try} ;; esac
        corral_ini "$WORK/corral$i.ini" "$pool" "$PGPORT" "$DB" "listen_port = $port
cluster_name = $cluster
cluster_proxy_id = p$i
cluster_publish_interval_ms = $INTERVAL_MS
cluster_hot_threshold = $THRESHOLD
cluster_fold_unlock = $fold
cluster_lock = $lock
cluster_relock_tries = $tries
templates = $RESTART
replay = $RESTART
restart_on_hot_key = $RESTART"
        "$SERVER_BIN" "$WORK/corral$i.ini" 2> "$WORK/corral$i.log" &
        fleet_pids+=($!) ;;
    esac
  done
  sleep 2
}

# Runs one pgbench per proxy at once; prints "tps retried failed" summed.
split_run() {  # dur args...
  local dur=$1 n=${#ports[@]} i per pb=()
  shift
  per=$(($CLIENTS / $n))
  for i in $(seq 0 $(($n - 1))); do
    local own=()
    # hot-row-split: proxy i's clients touch rows of their own only.
    [ "$split_rows" = 1 ] && own=(-D lo=$(($i * $HOT_ROWS / $n)) -D rows=$(($HOT_ROWS / $n)))
    pgbench -n -h 127.0.0.1 -p "${ports[$i]}" -U postgres -c "$per" -j 1 -T "$dur" -M "$PROTOCOL" "$@" "${own[@]}" $DB \
      > "$WORK/pgbench$i.out" 2>&1 &
    pb+=($!)
  done
  for i in "${pb[@]}"; do wait "$i" || true; done
  local tps=0 retried=0 failed=0 broken=0 t r f
  for i in $(seq 0 $(($n - 1))); do
    read -r t _ r _ f < <(pgbench_summary "$WORK/pgbench$i.out")
    if [ "$t" = - ]; then
      # No summary: this pgbench failed (its tail goes to stderr). The run
      # is reported as "-", not as the sum of the others.
      echo "pgbench $i of $n (port ${ports[$i]}) gave no summary:" >&2
      tail -3 "$WORK/pgbench$i.out" >&2
      broken=$((broken + 1))
      continue
    fi
    # Without --max-tries (select-only) pgbench prints no retry line.
    [ "$r" != - ] || r=0
    [ "$f" != - ] || f=0
    tps=$(awk -v a="$tps" -v b="$t" 'BEGIN { printf "%.1f", a + b }')
    retried=$((retried + r))
    failed=$((failed + f))
  done
  if [ "$broken" -gt 0 ]; then echo "- - -"; else echo "$tps $retried $failed"; fi
}

PG_PID=$(head -1 "$(psql -X -At -h 127.0.0.1 -p "$PGPORT" -U postgres -c 'SHOW data_directory')/postmaster.pid" \
  2>/dev/null || echo 0)
TICK=$(getconf CLK_TCK)

snapshot() {  # fleet n workload
  [ "$1" = pgbouncer ] && return 0
  local i
  for i in $(seq 0 $((${#ports[@]} - 1))); do
    psql -X -h 127.0.0.1 -p "${ports[$i]}" -U postgres -d corral -c "SHOW STATS" -c "SHOW CLUSTER" \
      > "$OUT/admin-$1-n$2-$3-p$((i + 1)).txt" 2>&1 || true
  done
}

# A short direct run warms the server's caches, so the first fleet measured
# is not the one that pays for them.
pgbench -n -h 127.0.0.1 -p "$PGPORT" -U postgres -c 4 -j 1 -T 3 -S $DB > /dev/null 2>&1 || true
RES="$OUT/results.tsv"
echo -e "n\tfleet\tworkload\ttps\tretried\tfailed\tproxy_us\tserver_us\tload1\tround" > "$RES"
echo "# clients=$CLIENTS pool=$POOL duration=${DUR}s warmup=${WARMUP}s scale=$SCALE hot_rows=$HOT_ROWS" \
  "interval_ms=$INTERVAL_MS threshold=$THRESHOLD nproc=$(nproc) interleave=$INTERLEAVE rounds=$ROUNDS slices=$SLICES" \
  "protocol=$PROTOCOL" \
  | tee "$OUT/header.txt"
echo "# start: $(date -u) $(uptime)" | tee -a "$OUT/header.txt"

split_rows=0
workload_args() {  # workload: sets args (pgbench's) and split_rows
  split_rows=0
  case $1 in
    hot-row-split) args=(-f "$WORK/hot_row-split.sql" --max-tries=$MAX_TRIES) split_rows=1 ;;
    hot-row) args=(-f bench/proxy/hot_row.sql -D rows=$HOT_ROWS --max-tries=$MAX_TRIES) ;;
    two-row) args=(-f bench/proxy/contended.sql -D rows=$HOT_ROWS --max-tries=$MAX_TRIES) ;;
    hot-row-rc) args=(-f "$WORK/hot_row-rc.sql" -D rows=$HOT_ROWS --max-tries=$MAX_TRIES) ;;
    two-row-rc) args=(-f "$WORK/contended-rc.sql" -D rows=$HOT_ROWS --max-tries=$MAX_TRIES) ;;
    select-only) args=(-S) ;;
  esac
}

vacuum_if_asked() {
  # VACUUM_BEFORE_RUN=1: every fleet's run starts from a vacuumed table (after
  # heavy update runs, non-HOT updates put SSI read locks on the index page
  # and fail transactions on different rows: lib.sh's bench_db note).
  if [ "${VACUUM_BEFORE_RUN:-0}" = 1 ]; then
    psql -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d $DB -c "VACUUM pgbench_accounts" >/dev/null
  fi
}

# report fleet n workload round tps retried failed proxy_ticks server_ticks seconds
report() {
  local fleet=$1 n=$2 w=$3 round=$4 tps=$5 retried=$6 failed=$7 load1 pus=- sus=-
  load1=$(cut -d' ' -f1 /proc/loadavg)
  [ "$tps" = - ] || read -r pus sus < <(awk -v p="$8" -v s="$9" -v t="$tps" -v d="${10}" -v hz="$TICK" \
    'BEGIN { n = t * d; if (n < 1) n = 1; printf "%.0f %.0f\n", p * 1e6 / hz / n, s * 1e6 / hz / n }')
  printf 'n=%s %-12s %-11s tps=%-9s retried=%-7s failed=%-5s proxy_us=%-5s server_us=%-5s load=%s round=%s\n' \
    "$n" "$fleet" "$w" "$tps" "$retried" "$failed" "$pus" "$sus" "$load1" "$round"
  echo -e "$n\t$fleet\t$w\t$tps\t$retried\t$failed\t$pus\t$sus\t$load1\t$round" >> "$RES"
}

one_run() {  # fleet n workload round: one measured run on the fleet started
  local fleet=$1 n=$2 w=$3 round=$4 args p0 s0 p1 s1 tps retried failed
  workload_args "$w"
  vacuum_if_asked
  [ "$WARMUP" -gt 0 ] && split_run "$WARMUP" "${args[@]}" >/dev/null
  p0=$(cpu_ticks "${fleet_pids[@]}")
  s0=$(cpu_ticks all "$PG_PID")
  read -r tps retried failed < <(split_run "$DUR" "${args[@]}")
  p1=$(cpu_ticks "${fleet_pids[@]}")
  s1=$(cpu_ticks all "$PG_PID")
  snapshot "$fleet" "$n" "$w"
  report "$fleet" "$n" "$w" "$round" "$tps" "$retried" "$failed" "$((p1 - p0))" "$((s1 - s0))" "$DUR"
}

# SLICES=K: every fleet started at once, warmed up, then K slices of DUR/K
# seconds in A B B A order; one row per fleet summing its slices.
sliced_runs() {  # n workload round
  local n=$1 w=$2 round=$3 args fleet k order slice p0 s0 p1 s1 tps retried failed
  local -A fports fpids commits retries fails pt st broken
  slice=$(awk -v d="$DUR" -v k="$SLICES" 'BEGIN { printf "%d", d / k }')
  [ "$slice" -ge 1 ] || { echo "SLICES=$SLICES leaves slices under 1 s of SECONDS_PER_RUN=$DUR" >&2; exit 1; }
  workload_args "$w"
  for fleet in $FLEETS; do
    local before=${#fleet_pids[@]}
    start_fleet "$fleet" "$n"
    fports[$fleet]="${ports[*]}"
    fpids[$fleet]="${fleet_pids[*]:$before}"
    commits[$fleet]=0 retries[$fleet]=0 fails[$fleet]=0 pt[$fleet]=0 st[$fleet]=0 broken[$fleet]=0
  done
  vacuum_if_asked
  for fleet in $FLEETS; do
    read -r -a ports <<< "${fports[$fleet]}"
    [ "$WARMUP" -gt 0 ] && split_run "$WARMUP" "${args[@]}" >/dev/null
  done
  for k in $(seq 1 "$SLICES"); do
    order=$(turn_order "$k" $FLEETS)
    for fleet in $order; do
      local pids
      read -r -a ports <<< "${fports[$fleet]}"
      read -r -a pids <<< "${fpids[$fleet]}"
      p0=$(cpu_ticks "${pids[@]}")
      s0=$(cpu_ticks all "$PG_PID")
      read -r tps retried failed < <(split_run "$slice" "${args[@]}")
      p1=$(cpu_ticks "${pids[@]}")
      s1=$(cpu_ticks all "$PG_PID")
      if [ "$tps" = - ]; then broken[$fleet]=1; continue; fi
      commits[$fleet]=$(awk -v a="${commits[$fleet]}" -v t="$tps" -v d="$slice" 'BEGIN { printf "%.1f", a + t * d }')
      retries[$fleet]=$((${retries[$fleet]} + retried))
      fails[$fleet]=$((${fails[$fleet]} + failed))
      pt[$fleet]=$((${pt[$fleet]} + p1 - p0))
      st[$fleet]=$((${st[$fleet]} + s1 - s0))
    done
  done
  for fleet in $FLEETS; do
    read -r -a ports <<< "${fports[$fleet]}"
    snapshot "$fleet" "$n" "$w"
    if [ "${broken[$fleet]}" = 1 ]; then
      report "$fleet" "$n" "$w" "$round" - - - 0 0 1
    else
      tps=$(awk -v c="${commits[$fleet]}" -v d="$((slice * SLICES))" 'BEGIN { printf "%.1f", c / d }')
      report "$fleet" "$n" "$w" "$round" "$tps" "${retries[$fleet]}" "${fails[$fleet]}" "${pt[$fleet]}" "${st[$fleet]}" \
        "$((slice * SLICES))"
    fi
  done
  stop_fleet
}

for round in $(seq 1 "$ROUNDS"); do
  for n in $PROXIES; do
    if [ "$INTERLEAVE" = 1 ] && [ "$FRESH_FLEET" = 1 ]; then
      for w in $WORKLOADS; do
        if [ "$SLICES" -gt 1 ]; then
          sliced_runs "$n" "$w" "$round"
          continue
        fi
        for fleet in $FLEETS; do
          start_fleet "$fleet" "$n"
          one_run "$fleet" "$n" "$w" "$round"
          stop_fleet
        done
      done
      continue
    fi
    for fleet in $FLEETS; do
      [ "$FRESH_FLEET" = 1 ] || start_fleet "$fleet" "$n"
      for w in $WORKLOADS; do
        [ "$FRESH_FLEET" = 1 ] && start_fleet "$fleet" "$n"
        one_run "$fleet" "$n" "$w" "$round"
        [ "$FRESH_FLEET" = 1 ] && stop_fleet
      done
      stop_fleet
    done
  done
done
echo "# end: $(date -u) $(uptime)" | tee -a "$OUT/header.txt"
echo "# results: $RES"
