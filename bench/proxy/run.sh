#!/usr/bin/env bash
# Proxy benchmark (issue 9), all in one run: pgbench direct / through PgBouncer
# (transaction mode) / through Corral, same pool size, on
#   select-only   pgbench -S
#   hot-row       hot_row.sql: SERIALIZABLE SELECT + UPDATE of one row named by
#                 the first statement, rows 1..HOT_ROWS (hot) or the whole
#                 table (cold), --max-tries
#   two-row       contended.sql: two random rows, routed by the first only
#                 (the hard case), hot and cold, --max-tries
#   transfer      transfer_skewed.sql (issue 24): blind-write transfer whose
#                 second row is independent and Zipf-skewed (hot: rows
#                 1..HOT_ROWS, skew on; cold: every account, uniform)
#   function-pair function_pair.sql (issue 24): second row = first + 1
#   order         order.sql (issue 24): a cold customer row, then two stock
#                 rows from 1..HOT_ROWS (hot) or half the accounts (cold)
#                 (these three are not in the default WORKLOADS; e.g.
#     CORRAL_MODES="on noretry templates" PATHS="pgbouncer corral corral-noretry corral-templates" \
#         WORKLOADS="two-row transfer function-pair order" bash bench/proxy/run.sh)
#   hot-row-asyncpg  hot_row.sql's transaction on rows 1..HOT_ROWS driven by
#                 asyncpg (clients/hot_row_asyncpg.py: binary parameters,
#                 statement_cache_size=0 so PgBouncer can run it)
#   transfer-asyncpg  transfer_skewed.sql's hot transaction (blind writes,
#                 second row Zipf-skewed over 1..HOT_ROWS) driven by asyncpg
#                 (hot_row_asyncpg.py ... 0 transfer; issue 24: the replay
#                 path re-runs these invisibly; not in the default WORKLOADS)
#   autocommit-asyncpg  implicit transactions (issue 24): asyncpg without
#                 transaction(), sessions at default_transaction_isolation =
#                 serializable, one autocommit `UPDATE ... SET abalance =
#                 abalance + $2 WHERE aid = $1` on rows 1..HOT_ROWS
#                 (hot_row_asyncpg.py ... 0 autocommit; not in the default
#                 WORKLOADS), e.g.
#     CORRAL_MODES="on replay" PATHS="pgbouncer corral corral-replay" \
#         WORKLOADS=autocommit-asyncpg bash bench/proxy/run.sh
#   hot-row-jdbc  the same driven by pgjdbc (clients/HotRowJdbc.java) with
#                 its default settings (prepareThreshold=5) on every path but
#                 PgBouncer, which needs prepareThreshold=0 (it fails with
#                 `prepared statement "S_1" already exists` otherwise)
#                 The driver clients retry 40001/40P01 themselves (up to
#                 MAX_TRIES) and count retries; they need /usr/bin/python3
#                 with asyncpg, and java 17 with /usr/share/java/postgresql.jar
#                 (JDBC_JAR); they connect with PGSSLMODE=require where
#                 TLS=1 turns client TLS on, else disable. E.g.
#     SECONDS_PER_RUN=10 CORRAL_MODES=on PATHS="pgbouncer corral" \
#         WORKLOADS="hot-row-asyncpg hot-row-jdbc" bash bench/proxy/run.sh
# Corral runs as one proxy per stealing mode (CORRAL_MODES, default: on =
# affinity- and in-flight-aware, affinity, any = plain stealing, off; and
# noretry = on with retry-aware routing off, issue 24's "mechanism off";
# templates = on with statement templates on as well; tcap = on with the
# per-template concurrency cap on, template_cap.h; replay = on with
# transparent replay on as well, adapters/proxy/replay.h, e.g.
#     CORRAL_MODES="on replay" PATHS="pgbouncer corral corral-replay" \
#         WORKLOADS="two-row transfer function-pair order" bash bench/proxy/run.sh
# ; restart = on with restart_on_hot_key (adapters/proxy/restart_loop.cc),
# statement templates and replay on as well, e.g.
#     SECONDS_PER_RUN=10 CORRAL_MODES="on restart" PATHS="pgbouncer corral corral-restart" \
#         WORKLOADS="two-row function-pair transfer order" bash bench/proxy/run.sh
# (restartnogate = the same with restart_gate = off: no template's
# transactions wait for its cycle gate, cycle_gates.h;
# restartheld = the same with restart_after_release = off: a later hot
# key that is free is taken even if released since the snapshot;
# restarttcap = restart with the per-template concurrency cap on too;
# restartonly = restart_on_hot_key alone, without templates and replay)
# ; split / nosplit = on with hot-spot splitting on / off (split.sh);
# restartsplit = restart with splitting on
# ; w2 = on with workers = 2 event loops, issue 25: a corral-<mode> in
# PATHS runs even when CORRAL_MODES leaves it out, e.g.
#     SECONDS_PER_RUN=10 CORRAL_MODES=on PATHS="pgbouncer corral corral-w2" \
#         WORKLOADS="select-only hot-row" bash bench/proxy/run.sh
# ; base-<mode> = <mode> run by the binary BASE_BIN, another build to
# compare with in the same run, e.g. (the baseline built and copied out
# first):
#     BASE_BIN=/tmp/proxy_server_base SLICES=4 REPEAT=3 CORRAL_MODES="restart base-restart" \
#         PATHS="pgbouncer corral-restart corral-base-restart" WORKLOADS=two-row bash bench/proxy/run.sh
# ). Prints one line per run (with proxy_cpu_us/txn: the PgBouncer or
# Corral process's user + system CPU over the run per transaction), then a summary: tps vs
# PgBouncer, retried transactions vs PgBouncer and direct, and the contention
# penalty (hot tps / cold tps on the same path).
#
#   bash bench/proxy/run.sh                 # 20 s per run
#   SECONDS_PER_RUN=10 CLIENTS=16 POOL=8 bash bench/proxy/run.sh
#   CLIENTS=64 POOL=32 PGBENCH_JOBS=8 CORRAL_MODES=on PATHS="direct pgbouncer corral corral-w2 corral-w4" \
#       WORKLOADS=select-only bash bench/proxy/run.sh   # event loops on a bigger machine
#   PATHS="direct pgbouncer corral" WORKLOADS="hot-row" bash bench/proxy/run.sh
#   REPEAT=3 SECONDS_PER_RUN=10 bash bench/proxy/run.sh   # median of 3 rounds
#   SLICES=4 SECONDS_PER_RUN=8 bash bench/proxy/run.sh    # paths take turns in 2 s slices
#
# SLICES=K (K even): each pgbench run (not the driver clients) becomes K
# slices of SECONDS_PER_RUN/K seconds in which the paths take turns, in
# A B C C B A ... order; a path's row sums its slices (tps: their mean;
# retried, failed: their sums; proxy CPU per transaction over all of them;
# VACUUM_BEFORE_HOT vacuums once before a hot run's slices). Paths compared
# seconds apart and in balanced positions: a drift of the box's speed within
# a run falls on all of them alike (one path's 8 s run after another's moved
# 1.3-1.5x on the 2-core box).
#   TLS=1 PATHS="pgbouncer corral" bash bench/proxy/run.sh   # client TLS on
#   ADMIN_DIR=/tmp/snap bash bench/proxy/run.sh   # admin console snapshots
#   VACUUM_BEFORE_HOT=1 WORKLOADS=hot-row bash bench/proxy/run.sh
#
# VACUUM_BEFORE_HOT=1: VACUUM pgbench_accounts before every path's hot run
# of hot-row / two-row (autovacuum stays off, see below): every path starts
# its hot run from a freshly vacuumed table, the case an autovacuum at that
# moment makes. FILLFACTOR=N: pgbench -i -F N (default 100).
#
# ADMIN_DIR: before and after every run on a Corral path, the proxy's admin
# console's SHOW STATS and SHOW HISTORY go to
# $ADMIN_DIR/r<round>-<workload>-<variant>-<path>-{start,end}.txt.
#
# TLS=1: PgBouncer and Corral both with client_tls_sslmode = require (the
# same key names; a throwaway CA and certificate made here with openssl) and
# pgbench with sslmode=require on those paths; "direct" stays plain (the
# server has no TLS). Compare Corral with PgBouncer, not with direct.
#
# Starts its own PostgreSQL (scripts/pg.sh) unless PGPORT is set.
set -euo pipefail
cd "$(dirname "$0")/../.."
DUR=${SECONDS_PER_RUN:-20}
CLIENTS=${CLIENTS:-16}
POOL=${POOL:-8}
JOBS=${PGBENCH_JOBS:-2}  # pgbench -j (threads); more on a machine with more cores
SCALE=${SCALE:-10}
POLICY=${POLICY:-count-max-canonical-single}
STEAL_AFTER_MS=${STEAL_AFTER_MS:-50}
HOT_ROWS=${HOT_ROWS:-20}
MAX_TRIES=${MAX_TRIES:-100}
# Corral proxies, one per stealing mode (adapters/proxy/steal.h); "on" is
# the path named plain "corral", the others corral-<mode>.
CORRAL_MODES=${CORRAL_MODES:-on affinity any off}
default_paths="direct pgbouncer"
for m in $CORRAL_MODES; do
  if [ "$m" = on ]; then default_paths="$default_paths corral"; else default_paths="$default_paths corral-$m"; fi
done
PATHS=${PATHS:-$default_paths}
WORKLOADS=${WORKLOADS:-select-only hot-row two-row hot-row-asyncpg hot-row-jdbc}
REPEAT=${REPEAT:-1}  # rounds of every run; the summary takes the median per cell
SLICES=${SLICES:-1}  # >1: every pgbench run as SLICES turns of the paths (below)
TLS=${TLS:-0}
NROWS=$((100000 * SCALE))
DB=corral_bench
. bench/proxy/lib.sh
SERVER_BIN=$(proxy_server_bin) || { echo "build failed"; exit 1; }
pg_for_bench
bench_work corral-proxy-bench

bench_db "$DB" "$SCALE" "$PGPORT" "${FILLFACTOR:-100}"

TLS_INI=""
if [ "$TLS" = 1 ]; then
  ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
  ( cd "$WORK"
    openssl req -x509 $ec -keyout ca.key -out ca.crt -days 2 -subj /CN=corral-bench-ca
    openssl req $ec -keyout server.key -out server.csr -subj /CN=localhost
    echo subjectAltName=DNS:localhost,IP:127.0.0.1 > san.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext \
      -out server.crt ) >/dev/null 2>&1 || { echo "openssl failed"; exit 1; }
  TLS_INI="client_tls_sslmode = require
client_tls_cert_file = $WORK/server.crt
client_tls_key_file = $WORK/server.key"
fi

# PgBouncer 1.18, transaction pooling, same pool size (runs as postgres: it refuses root).
BPORT=$(free_port)
echo '"postgres" ""' > "$WORK/userlist.txt"
pgbouncer_ini "$WORK/pgbouncer.ini" "$DB" "$PGPORT" "$BPORT" "$POOL" "$WORK/userlist.txt" "$WORK/pgbouncer.log" "$TLS_INI"
chmod 644 "$WORK"/*
if [ "$TLS" = 1 ]; then chown postgres "$WORK/server.key" && chmod 600 "$WORK/server.key"; fi
start_pgbouncer "$WORK/pgbouncer.ini" "$WORK/pgbouncer.log"
pids+=($!)
BPID=$!

declare -A PORT CPID
CPID[pgbouncer]=$BPID
PORT[direct]=$PGPORT
PORT[pgbouncer]=$BPORT
corral_ini "$WORK/corral.ini" "$POOL" "$PGPORT" "$DB" "policy = $POLICY
steal_after_ms = $STEAL_AFTER_MS
$TLS_INI"
# A corral-<mode> path in PATHS whose mode CORRAL_MODES leaves out runs too
# (e.g. CORRAL_MODES=on PATHS="pgbouncer corral corral-w2").
for p in $PATHS; do
  case $p in corral-*) case " $CORRAL_MODES " in *" ${p#corral-} "*) ;; *) CORRAL_MODES="$CORRAL_MODES ${p#corral-}" ;; esac ;; esac
done
for mode in $CORRAL_MODES; do
  name=corral-$mode
  [ $mode = on ] && name=corral
  PORT[$name]=$(free_port)
  # base-<mode>: <mode> run by the binary BASE_BIN (a build to compare with).
  bin=$SERVER_BIN
  case $mode in base-*) bin=${BASE_BIN:?"corral-$mode needs BASE_BIN, the baseline proxy_server"}; mode=${mode#base-} ;; esac
  margs="stealing=$mode"
  # w2 / w4: stealing on with 2 / 4 event loops (workers, README "Workers").
  case $mode in w[0-9]*) margs="stealing=on workers=${mode#w}" ;; esac
  [ $mode = noretry ] && margs="stealing=on retry_routing=off"
  [ $mode = split ] && margs="stealing=on split=on"
  [ $mode = nosplit ] && margs="stealing=on split=off"
  [ $mode = templates ] && margs="stealing=on templates=on"
  [ $mode = tcap ] && margs="stealing=on template_concurrency=on"
  [ $mode = replay ] && margs="stealing=on replay=on"
  [ $mode = restart ] && margs="stealing=on templates=on replay=on restart_on_hot_key=on"
  [ $mode = restartheld ] && margs="stealing=on templates=on replay=on restart_on_hot_key=on restart_after_release=off"
  [ $mode = restartnogate ] && margs="stealing=on templates=on replay=on restart_on_hot_key=on restart_gate=off"
  [ $mode = restarttcap ] && margs="stealing=on templates=on replay=on restart_on_hot_key=on template_concurrency=on"
  [ $mode = restartonly ] && margs="stealing=on restart_on_hot_key=on"
  [ $mode = restartsplit ] && margs="stealing=on templates=on replay=on restart_on_hot_key=on split=on"
  # shellcheck disable=SC2086
  "$bin" "$WORK/corral.ini" listen_port=${PORT[$name]} $margs 2> "$WORK/$name.log" &
  pids+=($!)
  CPID[$name]=$!
done
sleep 2

RES="$WORK/results.tsv"
# A driver client's run (hot rows only): its one `driver=... committed=N
# tps=X retries=R retried=T failed=F` line goes into the same table, with
# retries (re-executions after 40001/40P01) in the retried column and
# retries per committed transaction (%) beside it.
run_driver() {  # path workload
  local path=$1 workload=$2 out line tps committed retries failed pct threshold=default ssl=disable
  [ "${TLS:-0}" = 1 ] && [ "$path" != direct ] && ssl=require
  admin_snapshot "$path" "$workload" hot start
  case $workload in
    hot-row-asyncpg|transfer-asyncpg|autocommit-asyncpg)
      out=$(PGSSLMODE=$ssl /usr/bin/python3 bench/proxy/clients/hot_row_asyncpg.py 127.0.0.1 "${PORT[$path]}" \
        postgres $DB "$CLIENTS" "$DUR" "$HOT_ROWS" "$MAX_TRIES" 0 "${workload%-asyncpg}" 2>&1) || true ;;
    hot-row-jdbc)
      [ "$path" = pgbouncer ] && threshold=0
      out=$(PGSSLMODE=$ssl java -XX:-UsePerfData -cp "${JDBC_JAR:-/usr/share/java/postgresql.jar}" bench/proxy/clients/HotRowJdbc.java \
        127.0.0.1 "${PORT[$path]}" postgres $DB "$CLIENTS" "$DUR" "$HOT_ROWS" "$MAX_TRIES" $threshold 2>&1) || true ;;
  esac
  admin_snapshot "$path" "$workload" hot end
  line=$(echo "$out" | grep '^driver=' | tail -1) || true
  [ -n "$line" ] || echo "$out" | tail -5 >&2
  field() { echo "$line" | sed -n "s/.* $1=\([0-9.]*\).*/\1/p"; }
  tps=$(field tps); committed=$(field committed); retries=$(field retries); failed=$(field failed)
  pct=$(awk -v r="${retries:-0}" -v c="${committed:-0}" 'BEGIN { printf "%.1f", (c > 0 ? 100 * r / c : 0) }')
  printf 'r%s %-11s %-15s hot  tps=%-10s retries=%-8s (%s%% of commits) failed=%s%s\n' "$ROUND" "$path" \
    "$workload" "${tps:-?}" "${retries:--}" "$pct" "${failed:-?}" \
    "$([ $workload = hot-row-jdbc ] && echo " prepareThreshold=$threshold")$(echo "$line" | grep -o ' not_serializable=[0-9]*' || true)"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$path" "$workload" hot "${tps:-0}" "${retries:-0}" "$pct" \
    "${failed:-0}" >> "$RES"
}

# ADMIN_DIR set and a Corral path: its admin console's counters and History.
admin_snapshot() {  # path workload variant start|end
  [ -n "${ADMIN_DIR:-}" ] || return 0
  case $1 in corral*) ;; *) return 0 ;; esac
  mkdir -p "$ADMIN_DIR"
  local ssl=disable
  [ "$TLS" = 1 ] && ssl=require
  PGSSLMODE=$ssl psql -X -h 127.0.0.1 -p "${PORT[$1]}" -U postgres -d corral -c "SHOW STATS" -c "SHOW HISTORY" \
    > "$ADMIN_DIR/r$ROUND-$2-$3-$1-$4.txt" 2>&1 || true
}

vacuum_before() {  # variant
  if [ "${VACUUM_BEFORE_HOT:-0}" = 1 ] && [ "$1" = hot ]; then
    psql -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d $DB -c "VACUUM pgbench_accounts" >/dev/null
  fi
}

# measure path seconds args...: one pgbench run through path; sets M_TPS,
# M_TXNS, M_RETRIED, M_PCT, M_FAILED ("" where pgbench printed none) and
# M_TICKS (the proxy process's CPU ticks over the run, "" for direct).
measure() {
  local path=$1 secs=$2 out ssl=disable t0 t1
  shift 2
  [ "$TLS" = 1 ] && [ "$path" != direct ] && ssl=require
  [ -n "${CPID[$path]:-}" ] && t0=$(cpu_ticks "${CPID[$path]}")
  out=$(PGSSLMODE=$ssl pgbench -n -h 127.0.0.1 -p "${PORT[$path]}" -U postgres -c "$CLIENTS" -j "$JOBS" -T "$secs" "$@" $DB 2>&1) || true
  M_TICKS=
  [ -n "${CPID[$path]:-}" ] && t1=$(cpu_ticks "${CPID[$path]}") && M_TICKS=$((t1 - t0))
  read -r M_TPS M_TXNS M_RETRIED M_PCT M_FAILED < <(echo "$out" | pgbench_summary)
  M_TPS=${M_TPS#-} M_TXNS=${M_TXNS#-} M_RETRIED=${M_RETRIED#-} M_PCT=${M_PCT#-} M_FAILED=${M_FAILED#-}  # "-": not printed
  [ -n "$M_TPS" ] || echo "$out" | tail -5 >&2
}

# row path workload variant tps txns retried pct failed ticks: prints the
# run's line (the proxy's CPU per transaction pgbench counted) and appends
# its row.
row() {
  local path=$1 workload=$2 variant=$3 tps=$4 txns=$5 retried=$6 pct=$7 failed=$8 ticks=$9 cpu=-
  if [ -n "$ticks" ] && [ -n "$txns" ] && [ "$txns" -gt 0 ]; then
    cpu=$(awk -v d="$ticks" -v hz="$(getconf CLK_TCK)" -v n="$txns" 'BEGIN { printf "%.1f", d * 1e6 / hz / n }')
  fi
  printf 'r%s %-11s %-11s %-4s tps=%-10s retried=%-8s (%s%%) failed=%s proxy_cpu_us/txn=%s\n' "$ROUND" "$path" \
    "$workload" "$variant" "${tps:-?}" "${retried:--}" "${pct:--}" "${failed:-?}" "$cpu"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$path" "$workload" "$variant" "${tps:-0}" "${retried:-0}" \
    "${pct:-0}" "${failed:-0}" >> "$RES"
}

run() {  # path workload variant args...
  local path=$1 workload=$2 variant=$3
  shift 3
  vacuum_before "$variant"
  admin_snapshot "$path" "$workload" "$variant" start
  measure "$path" "$DUR" "$@"
  admin_snapshot "$path" "$workload" "$variant" end
  row "$path" "$workload" "$variant" "$M_TPS" "$M_TXNS" "$M_RETRIED" "$M_PCT" "$M_FAILED" "$M_TICKS"
}

# run_paths workload variant args...: the run on every path in PATHS, one
# after the other, or (SLICES > 1) in turns.
run_paths() {
  local workload=$1 variant=$2 p k order slice
  shift 2
  if [ "$SLICES" -le 1 ]; then
    for p in $PATHS; do run "$p" "$workload" "$variant" "$@"; done
    return
  fi
  slice=$((DUR / SLICES))
  [ "$slice" -ge 1 ] || { echo "SLICES=$SLICES leaves slices under 1 s of SECONDS_PER_RUN=$DUR" >&2; exit 1; }
  local -A tsum txns retr fail ticks bad
  for p in $PATHS; do tsum[$p]=0 txns[$p]=0 retr[$p]=0 fail[$p]=0 ticks[$p]=0 bad[$p]=0; done
  vacuum_before "$variant"
  for p in $PATHS; do admin_snapshot "$p" "$workload" "$variant" start; done
  for k in $(seq 1 "$SLICES"); do
    order=$(turn_order "$k" $PATHS)
    for p in $order; do
      measure "$p" "$slice" "$@"
      if [ -z "$M_TPS" ] || [ -z "$M_TXNS" ]; then bad[$p]=1; continue; fi
      tsum[$p]=$(awk -v a="${tsum[$p]}" -v b="$M_TPS" 'BEGIN { printf "%.3f", a + b }')
      txns[$p]=$((${txns[$p]} + M_TXNS))
      retr[$p]=$((${retr[$p]} + ${M_RETRIED:-0}))
      fail[$p]=$((${fail[$p]} + ${M_FAILED:-0}))
      [ -n "$M_TICKS" ] && ticks[$p]=$((${ticks[$p]} + M_TICKS))
    done
  done
  for p in $PATHS; do
    admin_snapshot "$p" "$workload" "$variant" end
    if [ "${bad[$p]}" = 1 ]; then
      row "$p" "$workload" "$variant" "" "" "" "" "" ""
      continue
    fi
    local t pct tk=
    t=$(awk -v a="${tsum[$p]}" -v k="$SLICES" 'BEGIN { printf "%.1f", a / k }')
    pct=$(awk -v r="${retr[$p]}" -v n="${txns[$p]}" 'BEGIN { printf "%.3f", (n > 0 ? 100 * r / n : 0) }')
    [ -n "${CPID[$p]:-}" ] && tk=${ticks[$p]}
    row "$p" "$workload" "$variant" "$t" "${txns[$p]}" "${retr[$p]}" "$pct" "${fail[$p]}" "$tk"
  done
}

echo "# clients=$CLIENTS jobs=$JOBS pool=$POOL duration=${DUR}s scale=$SCALE hot_rows=$HOT_ROWS policy=$POLICY tls=$TLS" \
  "steal_after_ms=$STEAL_AFTER_MS max_tries=$MAX_TRIES slices=$SLICES nproc=$(nproc)"
echo "# start: $(uptime)"
for ROUND in $(seq 1 "$REPEAT"); do
for w in $WORKLOADS; do
  case $w in
    select-only)
      run_paths select-only - -S ;;
    hot-row|two-row)
      script=bench/proxy/hot_row.sql
      [ $w = two-row ] && script=bench/proxy/contended.sql
      # Cold first on every path (nothing to learn), then hot.
      for variant in cold hot; do
        rows=$HOT_ROWS
        [ $variant = cold ] && rows=$NROWS
        run_paths "$w" $variant -f $script -D rows=$rows --max-tries="$MAX_TRIES"
      done ;;
    transfer|function-pair|order)
      case $w in
        transfer) script=bench/proxy/transfer_skewed.sql ;;
        function-pair) script=bench/proxy/function_pair.sql ;;
        order) script=bench/proxy/order.sql ;;
      esac
      for variant in cold hot; do
        rows=$HOT_ROWS skew=1
        [ $variant = cold ] && rows=$NROWS && skew=0
        [ $variant = cold ] && [ $w = order ] && rows=$((NROWS / 2))
        run_paths "$w" $variant -f $script -D rows=$rows -D skew=$skew -D naccounts=$NROWS --max-tries="$MAX_TRIES"
      done ;;
    hot-row-asyncpg|hot-row-jdbc|transfer-asyncpg|autocommit-asyncpg)
      for p in $PATHS; do run_driver "$p" "$w"; done ;;
  esac
done
done
echo "# end: $(uptime)"
for name in "${!CPID[@]}"; do kill "${CPID[$name]}" 2>/dev/null || true; done
sleep 0.5
for p in $PATHS; do
  case $p in corral*) echo "# $p: $(grep -h 'proxy_server: commits' "$WORK/$p.log" | sed 's/^proxy_server: //' || true)" ;; esac
done
python3 bench/proxy/summary.py "$RES"
