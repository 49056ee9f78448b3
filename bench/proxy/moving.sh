#!/usr/bin/env bash
# Issue 16, proxy: a hot set that moves. pgbench (CLIENTS clients, POOL
# backends, SERIALIZABLE, --max-tries) runs moving_hot.sql through PgBouncer
# (transaction mode) and through Corral (online learning: aging with the
# proxy's default half-life), one path after the other on the same database,
# WINDOWS windows of WINDOW seconds each; at the start of every window the hot
# set (HOT_ROWS rows) moves to a fresh range of pgbench_accounts. Per window:
# committed tps and retried transactions (pgbench's aggregated log), and
# Corral against PgBouncer in the same window. Targets (issue 16): Corral's
# retried at most 0.2x PgBouncer's in every window, committed tps at least
# 1.2x PgBouncer's.
#
#   bash bench/proxy/moving.sh                       # 4 windows of 10 s
#   WINDOWS=6 WINDOW=10 CLIENTS=16 POOL=8 bash bench/proxy/moving.sh
#   CORRAL_ARGS="templates=on replay=on restart_on_hot_key=on" bash bench/proxy/moving.sh
#
# CORRAL_ARGS: config overrides (key=value ...) for the Corral proxy, as
# bench/proxy/run.sh's modes pass them.
#
# INTERLEAVE=1: the paths take turns a window at a time (PgBouncer's window
# 1, Corral's window 1, PgBouncer's window 2, ...), one pgbench run per
# window, the hot set moved before each; a window's ratio then compares the
# two paths a window apart instead of a whole run apart (on the 2-core box
# the same path's tps moved 1.3-1.6x between windows of one run). Each
# proxy stays up between its windows, so Corral meets every window's rows
# as a move, as in the continuous run; its History ages meanwhile.
#
# SLICES=K (with INTERLEAVE=1; K even, WINDOW a multiple of K, e.g. 10): within each
# window (the hot set moved once, at its start) the paths take turns in K
# slices of WINDOW/K seconds, A B B A ...; a path's window sums its slices.
# Corral still meets the window's rows as a move, in its first slice; a
# drift of the box's speed within the window falls on both paths alike.
#
# OFFSET=arg (with INTERLEAVE=1, one pgbench per window): the window's
# offset goes to pgbench (moving_hot.sql with -D read_off=0 -D off=N)
# instead of being read by an autocommit SELECT before every transaction
# (-D read_off=1: OFFSET=read, the default; the continuous run needs it).
# That read costs both paths alike and so pulls their ratio towards 1.
#
# Starts its own PostgreSQL (scripts/pg.sh) unless PGPORT is set.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
WINDOW=${WINDOW:-10}
WINDOWS=${WINDOWS:-4}
CLIENTS=${CLIENTS:-16}
POOL=${POOL:-8}
SCALE=${SCALE:-10}
HOT_ROWS=${HOT_ROWS:-20}
MAX_TRIES=${MAX_TRIES:-100}
POLICY=${POLICY:-count-max-canonical-single}
PATHS=${PATHS:-pgbouncer corral}
CORRAL_ARGS=${CORRAL_ARGS:-}
INTERLEAVE=${INTERLEAVE:-0}
SLICES=${SLICES:-1}
OFFSET=${OFFSET:-read}
[ "$OFFSET" = read ] || [ "$INTERLEAVE" = 1 ] || { echo "OFFSET=$OFFSET needs INTERLEAVE=1" >&2; exit 1; }
DB=corral_bench
. bench/proxy/lib.sh
SERVER_BIN=$(proxy_server_bin) || { echo "build failed"; exit 1; }
pg_for_bench
bench_work corral-moving

bench_db "$DB" "$SCALE" "$PGPORT"
psql -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d $DB -c "CREATE TABLE corral_hot (off int)" \
  -c "INSERT INTO corral_hot VALUES (0)" >/dev/null
NROWS=$((100000 * SCALE))
STRIDE=$(( (NROWS - HOT_ROWS) / (WINDOWS + 1) ))

declare -A PORT
BPORT=$(free_port)
echo '"postgres" ""' > "$WORK/userlist.txt"
pgbouncer_ini "$WORK/pgbouncer.ini" "$DB" "$PGPORT" "$BPORT" "$POOL" "$WORK/userlist.txt" "$WORK/pgbouncer.log"
chmod 644 "$WORK"/*
start_pgbouncer "$WORK/pgbouncer.ini" "$WORK/pgbouncer.log"
pids+=($!)
PORT[pgbouncer]=$BPORT
PORT[corral]=$(free_port)
corral_ini "$WORK/corral.ini" "$POOL" "$PGPORT" "$DB" "policy = $POLICY"
"$SERVER_BIN" "$WORK/corral.ini" listen_port=${PORT[corral]} $CORRAL_ARGS 2> "$WORK/corral.log" &
pids+=($!)
sleep 2

move() {  # window index -> the hot set's offset
  psql -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d $DB -c "UPDATE corral_hot SET off = $(( $1 * STRIDE ))" >/dev/null
}
# script_args window: the script and its offset for one window's pgbench.
script_args() {
  if [ "$OFFSET" = arg ]; then
    echo "-f $ROOT/bench/proxy/moving_hot.sql -D read_off=0 -D off=$(( ($1 - 1) * STRIDE ))"
  else
    echo "-f $ROOT/bench/proxy/moving_hot.sql -D read_off=1"
  fi
}

RES="$WORK/windows.tsv"
: > "$RES"
if [ "$INTERLEAVE" = 1 ]; then
  # One pgbench per path and turn: SLICES turns per window (1: a whole
  # window each, one path after the other), the set moved at its start.
  [ $((WINDOW % SLICES)) = 0 ] || { echo "SLICES=$SLICES must divide WINDOW=$WINDOW" >&2; exit 1; }
  slice=$((WINDOW / SLICES))
  for ((w = 1; w <= WINDOWS; w++)); do
    move "$((w - 1))"
    declare -A wn=() wr=() wf=()
    for ((k = 1; k <= SLICES; k++)); do
      for path in $(turn_order "$k" $PATHS); do
        mkdir -p "$WORK/$path"
        # shellcheck disable=SC2046
        ( cd "$WORK/$path" && pgbench -n -h 127.0.0.1 -p "${PORT[$path]}" -U postgres -c "$CLIENTS" -j 2 \
            -T "$slice" $(script_args "$w") -D rows="$HOT_ROWS" \
            --max-tries="$MAX_TRIES" $DB > "out$w-$k.txt" 2>&1 ) || true
        # pgbench's summary: transactions processed and retried in the turn.
        read -r _ n r _ f < <(pgbench_summary "$WORK/$path/out$w-$k.txt" 0)
        wn[$path]=$(( ${wn[$path]:-0} + n )) wr[$path]=$(( ${wr[$path]:-0} + r )) wf[$path]=$(( ${wf[$path]:-0} + f ))
      done
    done
    for path in $PATHS; do
      echo -e "$path\t$w\t${wn[$path]}\t${wr[$path]}\t${wf[$path]}" >> "$RES"
      echo "# $path window $w: ${wn[$path]} transactions in $SLICES turn(s) of ${slice} s, retried ${wr[$path]}"
    done
  done
  PATHS=""  # done: straight to the table
fi
for path in $PATHS; do
  move 0
  mkdir -p "$WORK/$path"
  ( cd "$WORK/$path" && pgbench -n -h 127.0.0.1 -p "${PORT[$path]}" -U postgres -c "$CLIENTS" -j 2 \
      -T $((WINDOW * WINDOWS)) -f "$ROOT/bench/proxy/moving_hot.sql" -D read_off=1 -D rows="$HOT_ROWS" \
      --max-tries="$MAX_TRIES" -l --aggregate-interval="$WINDOW" --log-prefix=agg $DB > out.txt 2>&1 ) &
  bench_pid=$!
  # The hot set moves at every window's start (pgbench's intervals start with its run).
  for ((w = 1; w < WINDOWS; w++)); do
    sleep "$WINDOW"
    move "$w"
  done
  wait $bench_pid || true
  # Aggregated log, one file per pgbench thread: interval_start n sum_lat sum_lat2
  # min max failures, lag (4), retried retries ...; summed per interval.
  cat "$WORK/$path"/agg.* | awk -v p="$path" -v win="$WINDOW" '
    { n[$1] += $2; f[$1] += $7; r[$1] += $12 }
    END { for (t in n) printf "%s\t%s\t%d\t%d\t%d\n", p, t, n[t], r[t], f[t] }' | sort -k2,2n > "$WORK/$path.tsv"
  awk -v OFS='\t' '{ print $1, NR, $3, $4, $5 }' "$WORK/$path.tsv" >> "$RES"
  grep -E "^(tps|number of transactions actually|number of failed|number of transactions retried)" "$WORK/$path/out.txt" | sed "s/^/# $path: /"
done

echo
echo "| window | PgBouncer tps | Corral tps | tps Corral / PgBouncer | PgBouncer retried | Corral retried | retried Corral / PgBouncer |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
awk -F'\t' -v win="$WINDOW" -v nw="$WINDOWS" '
  { n[$1, $2] = $3; r[$1, $2] = $4; if ($2 > max) max = $2 }
  END {
    for (w = 1; w <= nw && w <= max; w++) {
      bn = n["pgbouncer", w]; cn = n["corral", w]; br = r["pgbouncer", w]; cr = r["corral", w]
      printf "| %d | %.0f | %.0f | %s | %d | %d | %s |\n", w, bn / win, cn / win,
        (bn > 0 ? sprintf("%.2fx", cn / bn) : "-"), br, cr, (br > 0 ? sprintf("%.2fx", cr / br) : "-")
    }
  }' "$RES"
