# Shell functions the proxy benchmarks share (bench/proxy/run.sh, multi.sh):
# the pgbench database, PgBouncer's config and start. Source it after `cd`
# to the repository root:
#
#   . bench/proxy/lib.sh
#   port=$(free_port)
#   bench_db corral_bench 10 "$PGPORT"                  # pgbench -i, autovacuum off
#   pgbouncer_ini "$WORK/pgb.ini" corral_bench "$PGPORT" "$port" 8 "$WORK/userlist.txt" "$WORK/pgb.log"
#   start_pgbouncer "$WORK/pgb.ini" "$WORK/pgb.log"; pids+=($!)
#   corral_ini "$WORK/corral.ini" 8 "$PGPORT" corral_bench "policy = auto"

# proxy_server_bin: builds //bench/proxy:proxy_server (-c opt, in the output
# base CORRAL_BAZEL_OUTPUT_BASE names, else the repository's own, which
# shares the build with `corral`) and prints its path; with
# CORRAL_PROXY_SERVER_BIN set (a machine without Bazel, bench/proxy/bundle.sh)
# it prints that path instead, if executable.
proxy_server_bin() {
  if [ -n "${CORRAL_PROXY_SERVER_BIN:-}" ]; then
    [ -x "$CORRAL_PROXY_SERVER_BIN" ] || return 1
    echo "$CORRAL_PROXY_SERVER_BIN"
    return 0
  fi
  local bazel="bazel${CORRAL_BAZEL_OUTPUT_BASE:+ --output_base=$CORRAL_BAZEL_OUTPUT_BASE}"
  $bazel build -c opt //bench/proxy:proxy_server >/dev/null 2>&1 || return 1
  echo "$($bazel info -c opt bazel-bin 2>/dev/null)/bench/proxy/proxy_server"
}

# pg_for_bench: starts a PostgreSQL 15 (scripts/pg.sh) unless PGPORT is set;
# started_pg=1 when it did (the caller stops it: bash scripts/pg.sh stop).
pg_for_bench() {
  started_pg=0
  if [ -z "${PGPORT:-}" ]; then
    eval "$(bash scripts/pg.sh start)"
    started_pg=1
  fi
}

# bench_work NAME: a work directory $WORK (/tmp/NAME.XXXXXX, readable by
# PgBouncer's user), an empty pids array for the processes the caller
# starts, and an EXIT trap that kills them, stops the PostgreSQL that
# pg_for_bench started (started_pg=1) and removes $WORK.
bench_work() {
  WORK=$(mktemp -d "/tmp/$1.XXXXXX")
  chmod 755 "$WORK"
  pids=()
  trap bench_cleanup EXIT
}
bench_cleanup() {
  local p
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "${started_pg:-0}" = 1 ]; then bash scripts/pg.sh stop >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}

# A free TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# bench_db DB SCALE PGPORT [FILLFACTOR]: a fresh pgbench database (as
# postgres on 127.0.0.1) with autovacuum off on its tables. pgbench -i has
# just vacuumed and analyzed them; the paths run one after another on this
# one database, and an autovacuum lands at a time nobody chooses, on
# whichever path runs then. A VACUUM of pgbench_accounts after the cold runs
# lists the pages their updates left one free slot on; from then on a hot
# row's update finds no room on its page, is not HOT, moves the row to such a
# page and inserts into the primary key's leaf page, on which every hot-row
# transaction holds an SSI read lock: serialization failures across
# different rows, which routing by row cannot avoid (measured: Corral's hot
# run 10-18% retried instead of 0.1%, 99% of them "read/write dependencies";
# bench/results/hotrow/NOTES.md).
bench_db() {
  local db=$1 scale=$2 port=$3 fill=${4:-100} t
  psql -X -q -h 127.0.0.1 -p "$port" -U postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
  pgbench -i -q -s "$scale" -F "$fill" -h 127.0.0.1 -p "$port" -U postgres "$db" >/dev/null 2>&1
  for t in accounts branches tellers history; do
    psql -X -q -h 127.0.0.1 -p "$port" -U postgres -d "$db" \
      -c "ALTER TABLE pgbench_$t SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)" >/dev/null
  done
}

# pgbouncer_ini FILE DB PGPORT PORT POOL USERLIST LOG [EXTRA]: PgBouncer in
# transaction mode in front of DB, trust auth, EXTRA lines appended.
pgbouncer_ini() {
  local file=$1 db=$2 pgport=$3 port=$4 pool=$5 userlist=$6 log=$7 extra=${8:-}
  cat > "$file" <<INI
[databases]
$db = host=127.0.0.1 port=$pgport dbname=$db user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $userlist
pool_mode = transaction
default_pool_size = $pool
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
logfile = $log
$extra
INI
  chmod 644 "$file"
}

# corral_ini FILE POOL PGPORT DB [EXTRA]: a Corral proxy's config in front
# of DB (on 127.0.0.1; the port from EXTRA or the proxy's command line),
# EXTRA lines appended.
corral_ini() {
  local file=$1 pool=$2 pgport=$3 db=$4 extra=${5:-}
  cat > "$file" <<INI
listen_addr = 127.0.0.1
pool_size = $pool
max_client_conn = 200
server_conninfo = host=127.0.0.1 port=$pgport user=postgres dbname=$db
$extra
INI
}

# start_pgbouncer FILE LOG: starts it in the background ($! is its pid), as
# postgres when run as root (PgBouncer refuses to run as root).
start_pgbouncer() {
  local file=$1 log=$2
  touch "$log"
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$log" 2>/dev/null || true
    runuser -u postgres -- /usr/sbin/pgbouncer -q "$file" &
  else
    /usr/sbin/pgbouncer -q "$file" &
  fi
}

# CPU ticks (user + system) of the given pids and their children (with
# `all`: also the children that exited, as their parent counts them).
cpu_ticks() {
  local p kids=() all=0
  [ "${1:-}" = all ] && all=1 && shift
  for p in "$@"; do kids+=($(pgrep -P "$p" 2>/dev/null || true)); done
  { for p in "$@"; do cat "/proc/$p/stat" 2>/dev/null | sed 's/^.*) //' | awk -v a=$all '{ print $12 + $13 + a * ($14 + $15) }'; done
    for p in "${kids[@]}"; do cat "/proc/$p/stat" 2>/dev/null | sed 's/^.*) //' | awk '{ print $12 + $13 }'; done
  } | awk '{ t += $1 } END { print t + 0 }'
}

# pgbench_summary [FILE] [MISSING]: pgbench's end-of-run summary (FILE, else
# stdin) as one tab-separated line: tps, transactions processed, retried,
# retried %, failed; a figure pgbench did not print (no retries without
# --max-tries, or a run that failed) is MISSING (default "-").
#   read -r tps n retried pct failed < <(pgbench_summary "$WORK/out.txt" 0)
pgbench_summary() {
  awk -v miss="${2:--}" -v OFS='\t' '
    /^tps = / && tps == "" { tps = $3 }
    /^number of transactions actually processed:/ { split($NF, a, "/"); n = a[1] }
    /^number of transactions retried:/ { r = $5; pct = $6; gsub(/[(%)]/, "", pct) }
    /^number of failed transactions:/ { f = $5 }
    function v(x) { return x == "" ? miss : x }
    END { print v(tps), v(n), v(r), v(pct), v(f) }' "${1:-/dev/stdin}"
}

# turn_order K NAME...: the order in which NAMEs take their turn in slice K
# of a sliced run (multi.sh, run.sh, moving.sh SLICES): as given in odd
# slices, reversed in even ones (A B, B A, A B, ...), so that over an even
# number of slices every name runs as often early as late.
#   for p in $(turn_order "$k" $PATHS); do ...; done
turn_order() {
  local k=$1
  shift
  if [ $((k % 2)) = 1 ]; then echo "$@"; else echo "$@" | awk '{ for (i = NF; i > 0; i--) printf "%s ", $i }'; fi
}
