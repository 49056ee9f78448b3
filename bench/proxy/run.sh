#!/usr/bin/env bash
# Proxy benchmark (issue 9): pgbench -S and a contended SERIALIZABLE script
# (contended.sql: 5 statements on 20 hot rows, --max-tries) run direct, through
# PgBouncer (transaction mode) and through Corral, same pool size.
#
#   bash bench/proxy/run.sh                 # 20 s per run
#   SECONDS_PER_RUN=10 CLIENTS=16 POOL=8 bash bench/proxy/run.sh
#
# Starts its own PostgreSQL (scripts/pg.sh) unless CORRAL_PG_CONNINFO's
# server is given via PGHOST/PGPORT; prints one line per run.
set -euo pipefail
cd "$(dirname "$0")/../.."
DUR=${SECONDS_PER_RUN:-20}
CLIENTS=${CLIENTS:-16}
POOL=${POOL:-8}
SCALE=${SCALE:-10}
POLICY=${POLICY:-count-max-canonical-single}
STEALING=${STEALING:-on}
DB=corral_bench
BAZEL="bazel --output_base=${CORRAL_BAZEL_OUTPUT_BASE:-/root/.cache/bazel-proxy}"

$BAZEL build -c opt //bench/proxy:proxy_server >/dev/null 2>&1 || { echo "build failed"; exit 1; }
SERVER_BIN="$($BAZEL info -c opt bazel-bin 2>/dev/null)/bench/proxy/proxy_server"

started_pg=0
if [ -z "${PGPORT:-}" ]; then
  eval "$(bash scripts/pg.sh start)"
  started_pg=1
fi
WORK=$(mktemp -d /tmp/corral-proxy-bench.XXXXXX)
chmod 755 "$WORK"
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ $started_pg = 1 ]; then bash scripts/pg.sh stop >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

psql -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
pgbench -i -q -s "$SCALE" -h 127.0.0.1 -p "$PGPORT" -U postgres $DB >/dev/null 2>&1

# PgBouncer 1.18, transaction pooling, same pool size (runs as postgres: it refuses root).
BPORT=$(free_port)
echo '"postgres" ""' > "$WORK/userlist.txt"
cat > "$WORK/pgbouncer.ini" <<INI
[databases]
$DB = host=127.0.0.1 port=$PGPORT dbname=$DB user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BPORT
unix_socket_dir =
auth_type = trust
auth_file = $WORK/userlist.txt
pool_mode = transaction
default_pool_size = $POOL
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
logfile = $WORK/pgbouncer.log
INI
chmod 644 "$WORK"/*
touch "$WORK/pgbouncer.log" && chown postgres "$WORK/pgbouncer.log"
runuser -u postgres -- /usr/sbin/pgbouncer "$WORK/pgbouncer.ini" &
pids+=($!)

CPORT=$(free_port)
cat > "$WORK/corral.ini" <<INI
listen_addr = 127.0.0.1
listen_port = $CPORT
pool_size = $POOL
max_client_conn = 200
server_conninfo = host=127.0.0.1 port=$PGPORT user=postgres dbname=$DB
policy = $POLICY
stealing = $STEALING
INI
"$SERVER_BIN" "$WORK/corral.ini" 2> "$WORK/corral.log" &
pids+=($!)
# The same with stealing off: conflicting transactions wait for their queue.
NPORT=$(free_port)
"$SERVER_BIN" "$WORK/corral.ini" listen_port=$NPORT stealing=off 2> "$WORK/corral-nosteal.log" &
pids+=($!)
sleep 2

run() {  # name port args...
  local name=$1 port=$2
  shift 2
  local out
  out=$(pgbench -n -h 127.0.0.1 -p "$port" -U postgres -c "$CLIENTS" -j 2 -T "$DUR" "$@" $DB 2>&1) || true
  local tps retried failed
  tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  retried=$(echo "$out" | sed -n 's/^number of transactions retried: \([0-9]*\) (\([0-9.]*%\)).*/\1 (\2)/p')
  failed=$(echo "$out" | sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p')
  printf '%-10s %-11s tps=%-10s retried=%-16s failed=%s\n' "$name" "$WORKLOAD" "${tps:-?}" "${retried:--}" "${failed:-?}"
}

echo "# clients=$CLIENTS pool=$POOL duration=${DUR}s scale=$SCALE policy=$POLICY stealing=$STEALING nproc=$(nproc)"
WORKLOAD=select-only
run direct "$PGPORT" -S
run pgbouncer "$BPORT" -S
run corral "$CPORT" -S
WORKLOAD=contended
for target in direct pgbouncer corral corral-ns; do
  case $target in direct) port=$PGPORT ;; pgbouncer) port=$BPORT ;; corral) port=$CPORT ;; corral-ns) port=$NPORT ;; esac
  run $target "$port" -f bench/proxy/contended.sql --max-tries=100
done
kill "${pids[1]}" "${pids[2]}" 2>/dev/null; sleep 0.5
echo "corral:    $(grep -h 'proxy_server: commits' "$WORK/corral.log" || true)"
echo "corral-ns: $(grep -h 'proxy_server: commits' "$WORK/corral-nosteal.log" || true)"
