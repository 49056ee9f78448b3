#!/usr/bin/env bash
# Does an old snapshot (what an autovacuum ANALYZE of pgbench_accounts holds
# for a few seconds) turn Corral's hot-row run into cross-row SSI aborts?
# Runs the hot-row transaction (bench/proxy/hot_row.sql, rows 1..20) for
# SECONDS_PER_RUN on each path twice: plainly, and while a REPEATABLE READ
# session holds its snapshot open for the whole run. Autovacuum is off for
# the bench table so that only the held snapshot differs. Prints pgbench's
# retried counts and, from the server log, the two kinds of 40001.
#   bash bench/results/hotrow/xmin_probe.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
DUR=${SECONDS_PER_RUN:-10}
BAZEL=bazel
$BAZEL build -c opt //bench/proxy:proxy_server >/dev/null 2>&1 || { echo "build failed"; exit 1; }
SERVER_BIN="$($BAZEL info -c opt bazel-bin 2>/dev/null)/bench/proxy/proxy_server"
export CORRAL_PG_OPTS="-c log_line_prefix='%m:' -c log_autovacuum_min_duration=0"
eval "$(bash scripts/pg.sh start)"
WORK=$(mktemp -d /tmp/corral-xmin.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  bash scripts/pg.sh stop >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
DB=corral_bench
psql -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres -c "CREATE DATABASE $DB" >/dev/null
pgbench -i -q -s 10 -h 127.0.0.1 -p "$PGPORT" -U postgres $DB >/dev/null 2>&1
psql -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d $DB \
  -c "ALTER TABLE pgbench_accounts SET (autovacuum_enabled = false)" -c "VACUUM ANALYZE pgbench_accounts"
CPORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
cat > "$WORK/corral.ini" <<INI
listen_addr = 127.0.0.1
pool_size = 8
max_client_conn = 200
server_conninfo = host=127.0.0.1 port=$PGPORT user=postgres dbname=$DB
policy = count-max-canonical-single
steal_after_ms = 50
INI
"$SERVER_BIN" "$WORK/corral.ini" listen_port=$CPORT stealing=on 2> "$WORK/corral.log" &
pids+=($!)
sleep 2
LOG=$CORRAL_PG_DIR/server.log
one() {  # name port hold
  local name=$1 port=$2 hold=$3 holder=0 from to out
  if [ "$hold" = held ]; then
    # Takes a snapshot and keeps it (idle in transaction) past the run.
    psql -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d $DB \
      -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "SELECT count(*) FROM pgbench_branches" \
      -c "SELECT pg_sleep($DUR + 3)" -c "COMMIT" >/dev/null &
    holder=$!
    sleep 0.5
  fi
  from=$(date -u +'%F %T.%3N')
  out=$(pgbench -n -h 127.0.0.1 -p "$port" -U postgres -c 16 -j 2 -T "$DUR" -f bench/proxy/hot_row.sql \
    -D rows=20 --max-tries=100 $DB 2>&1) || true
  to=$(date -u +'%F %T.%3N')
  [ "$holder" != 0 ] && wait $holder
  local tps retried rw cu
  tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  retried=$(echo "$out" | sed -n 's/^number of transactions retried: \(.*\)$/\1/p')
  rw=$(awk -v a="$from" -v b="$to" 'substr($0,1,23) >= a && substr($0,1,23) <= b' "$LOG" | grep -c 'read/write dependencies' || true)
  cu=$(awk -v a="$from" -v b="$to" 'substr($0,1,23) >= a && substr($0,1,23) <= b' "$LOG" | grep -c 'due to concurrent update' || true)
  printf '%-7s %-6s tps=%-10s retried=%-18s 40001 rw-dependencies=%-6s concurrent-update=%s\n' \
    "$name" "$hold" "$tps" "$retried" "$rw" "$cu"
}
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) duration=${DUR}s; start: $(uptime)"
for round in 1 2; do
  for hold in plain held; do
    one direct "$PGPORT" $hold
    one corral "$CPORT" $hold
  done
done
echo "# end: $(uptime)"
kill "${pids[0]}" 2>/dev/null || true
sleep 0.5
grep -h 'proxy_server: commits' "$WORK/corral.log" || true
