#!/usr/bin/env bash
# Issue 16, proxy: hot-spot splitting ("the same mechanisms in the proxy").
# pgbench (CLIENTS clients, POOL backends, REPEATABLE READ, --max-tries)
# runs hot_branch.sql, HOT_PCT% of its transactions on branch 1, through
# PgBouncer (transaction mode), Corral with split off and Corral with split
# on, in ROUNDS rounds of one SECONDS_PER_RUN run per path each (the paths
# take turns, so a round's ratios compare runs seconds apart). One in
# EVERY transactions also updates its branch's row: conflicts that teach
# Corral the branch is hot, after which split off runs every branch-1
# transaction on one backend and split on spreads them over up to
# split_max_k backends while their retries cost less than the wait saved.
# Per round: committed tps, retried transactions, Corral's split k at the
# end (SHOW STATS split_max_k), and the ratios. A table at the end.
#
#   bash bench/proxy/split.sh                 # 3 rounds of 10 s
#   ROUNDS=2 SECONDS_PER_RUN=8 HOT_PCT=60 EVERY=10 THINK_MS=2 bash bench/proxy/split.sh
#   CORRAL_ARGS="split_max_k=4 split_window_ms=500" bash bench/proxy/split.sh
#
# Starts its own PostgreSQL (scripts/pg.sh) unless PGPORT is set.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
CLIENTS=${CLIENTS:-16}
POOL=${POOL:-8}
BRANCHES=${BRANCHES:-8}
HOT_PCT=${HOT_PCT:-60}
EVERY=${EVERY:-10}
THINK_MS=${THINK_MS:-2}
MAX_TRIES=${MAX_TRIES:-1000}
PATHS=${PATHS:-pgbouncer corral corral-split}
CORRAL_ARGS=${CORRAL_ARGS:-}
DB=corral_bench
. bench/proxy/lib.sh
SERVER_BIN=$(proxy_server_bin) || { echo "build failed"; exit 1; }
pg_for_bench
bench_work corral-split
bench_db "$DB" "$BRANCHES" "$PGPORT"

declare -A PORT
PORT[pgbouncer]=$(free_port)
echo '"postgres" ""' > "$WORK/userlist.txt"
pgbouncer_ini "$WORK/pgbouncer.ini" "$DB" "$PGPORT" "${PORT[pgbouncer]}" "$POOL" "$WORK/userlist.txt" "$WORK/pgbouncer.log"
chmod 644 "$WORK"/*
start_pgbouncer "$WORK/pgbouncer.ini" "$WORK/pgbouncer.log"
pids+=($!)
for path in corral corral-split; do
  PORT[$path]=$(free_port)
  split=off
  [ "$path" = corral-split ] && split=on
  corral_ini "$WORK/$path.ini" "$POOL" "$PGPORT" "$DB" "split = $split"
  "$SERVER_BIN" "$WORK/$path.ini" listen_port=${PORT[$path]} $CORRAL_ARGS 2> "$WORK/$path.log" &
  pids+=($!)
done
sleep 2

split_k() {  # SHOW STATS split_max_k of the proxy on port $1
  psql -X -At -h 127.0.0.1 -p "$1" -U postgres -d corral -c "SHOW STATS" 2>/dev/null |
    awk -F'|' '$1 == "split_max_k" { print $2 }'
}

RES="$WORK/runs.tsv"
: > "$RES"
for ((r = 1; r <= ROUNDS; r++)); do
  for path in $PATHS; do
    mkdir -p "$WORK/$path"
    ( cd "$WORK/$path" && pgbench -n -h 127.0.0.1 -p "${PORT[$path]}" -U postgres -c "$CLIENTS" -j 2 \
        -T "$SECONDS_PER_RUN" -f "$OLDPWD/bench/proxy/hot_branch.sql" -D hotpct="$HOT_PCT" \
        -D branches="$BRANCHES" -D every="$EVERY" -D think_ms="$THINK_MS" \
        --max-tries="$MAX_TRIES" $DB > "out$r.txt" 2>&1 ) || true
    read -r tps n retried _ failed < <(pgbench_summary "$WORK/$path/out$r.txt" 0)
    k="-"
    [ "$path" != pgbouncer ] && k=$(split_k "${PORT[$path]}")
    echo -e "$path\t$r\t$tps\t$retried\t$failed\t${k:--}" >> "$RES"
    echo "# round $r $path: tps $tps, retried $retried, failed $failed, split k ${k:--}"
  done
done
grep -h "^split:" "$WORK/corral-split.log" | head -20 | sed 's/^/# corral-split log: /' || true

echo
echo "| round | PgBouncer tps | Corral tps | Corral split tps | split / Corral | split / PgBouncer | PgBouncer retried | Corral retried | split retried | split k |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
awk -F'\t' -v nr="$ROUNDS" '
  { t[$1, $2] = $3; re[$1, $2] = $4; k[$1, $2] = $6 }
  function ratio(a, b) { return (a != "" && b != "" && a != "-" && b != "-" && b > 0) ? sprintf("%.2fx", a / b) : "-" }
  END {
    for (r = 1; r <= nr; r++) {
      b = t["pgbouncer", r]; c = t["corral", r]; s = t["corral-split", r]
      printf "| %d | %.0f | %.0f | %.0f | %s | %s | %s | %s | %s | %s |\n", r, b, c, s, ratio(s, c), ratio(s, b),
        re["pgbouncer", r], re["corral", r], re["corral-split", r], k["corral-split", r]
    }
  }' "$RES"
