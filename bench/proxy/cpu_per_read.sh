#!/usr/bin/env bash
# The proxy's own CPU per transaction against PgBouncer's, same run: one
# Corral proxy (restart mode: templates, replay and restart_on_hot_key on, no
# cluster) and one PgBouncer in front of one PostgreSQL, pool 8, alternating
# ROUNDS times; each round a WARMUP-second pgbench run, then a measured
# SECONDS-second one (16 clients, -j 1). Prints per round and path: tps and
# the proxy process's user + system CPU per transaction, and the user part
# (what the proxy itself computes; the system part is mostly send/recv on
# loopback, alike for both), then the medians and Corral / PgBouncer ratios.
#
#   bash bench/proxy/cpu_per_read.sh                          # pgbench -S, 2 rounds of 8 s
#   ROUNDS=3 PGB_ARGS="-f bench/proxy/hot_row.sql -D rows=20 --max-tries=100" bash bench/proxy/cpu_per_read.sh
#   BASELINE_BIN=/tmp/proxy_server_old bash bench/proxy/cpu_per_read.sh   # + an older build, same rounds
#
# BASELINE_BIN: another proxy_server binary (e.g. built from an earlier
# commit) run as a third path "baseline" with the same configuration, so a
# change's CPU per read is measured against the code before it in one run.
#
# Starts its own PostgreSQL (scripts/pg.sh) unless PGPORT is set. Per-read
# CPU is what a 2-core box runs out of first: the proxy, pgbench and the
# server share the cores (bench/RESULTS.md, issue 25).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-2}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-8}
WARMUP=${WARMUP:-2}
CLIENTS=${CLIENTS:-16}
POOL=${POOL:-8}
PGB_ARGS=${PGB_ARGS:--S}
DB=corral_cpu
. bench/proxy/lib.sh
SERVER_BIN=$(proxy_server_bin) || { echo "build failed" >&2; exit 1; }
pg_for_bench
bench_work corral-cpu
bench_db "$DB" 10 "$PGPORT"
echo '"postgres" ""' > "$WORK/userlist.txt"
chmod 644 "$WORK/userlist.txt"
TICK=$(getconf CLK_TCK)

# ticks PID -> "user system" clock ticks of the process (all its threads).
ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12, $13 }'; }

# measure NAME PORT PID: one warm-up and one measured pgbench run; appends a row.
measure() {
  local name=$1 port=$2 pid=$3 u0 s0 u1 s1 n tps
  pgbench -n $PGB_ARGS -h 127.0.0.1 -p "$port" -U postgres -c "$CLIENTS" -j 1 -T "$WARMUP" "$DB" > /dev/null 2>&1 || true
  read -r u0 s0 < <(ticks "$pid")
  pgbench -n $PGB_ARGS -h 127.0.0.1 -p "$port" -U postgres -c "$CLIENTS" -j 1 -T "$SECONDS_PER_RUN" "$DB" \
    > "$WORK/pgbench.out" 2>&1 || true
  read -r u1 s1 < <(ticks "$pid")
  read -r tps n _ _ _ < <(pgbench_summary "$WORK/pgbench.out" 0)
  [ "$n" -gt 0 ] || { echo "pgbench failed through $name:" >&2; cat "$WORK/pgbench.out" >&2; exit 1; }
  python3 - "$name" "$ROUND" "$tps" "$n" "$u0" "$s0" "$u1" "$s1" "$TICK" >> "$WORK/rows.tsv" <<'PY'
import sys
name, rnd, tps, n, u0, s0, u1, s1, tick = sys.argv[1:]
n = int(n); per = 1e6 / int(tick) / n
u = (int(u1) - int(u0)) * per; s = (int(s1) - int(s0)) * per
print(f"{name}\t{rnd}\t{float(tps):.0f}\t{u + s:.2f}\t{u:.2f}")
PY
  tail -1 "$WORK/rows.tsv" | awk -F'\t' '{ printf "round %s %-9s tps %7s  us/txn %6s  user %6s\n", $2, $1, $3, $4, $5 }'
}

# run_corral NAME BIN: one Corral proxy from BIN, measured as NAME.
run_corral() {
  local name=$1 bin=$2 port cpid
  port=$(free_port)
  corral_ini "$WORK/corral.ini" "$POOL" "$PGPORT" "$DB" "listen_port = $port
templates = on
replay = on
restart_on_hot_key = on"
  "$bin" "$WORK/corral.ini" 2> "$WORK/corral.log" &
  cpid=$!
  pids+=("$cpid")
  sleep 1.5
  measure "$name" "$port" "$cpid"
  kill "$cpid"; wait "$cpid" 2>/dev/null || true
}

for ROUND in $(seq 1 "$ROUNDS"); do
  run_corral corral "$SERVER_BIN"
  [ -n "${BASELINE_BIN:-}" ] && run_corral baseline "$BASELINE_BIN"

  port=$(free_port)
  pgbouncer_ini "$WORK/pgb.ini" "$DB" "$PGPORT" "$port" "$POOL" "$WORK/userlist.txt" "$WORK/pgb.log"
  start_pgbouncer "$WORK/pgb.ini" "$WORK/pgb.log"
  pids+=($!)
  sleep 1
  bpid=$(pgrep -n -f "pgbouncer -q $WORK/pgb.ini")
  measure pgbouncer "$port" "$bpid"
  kill "$bpid"; sleep 0.5
done

python3 - "$WORK/rows.tsv" <<'PY'
import statistics, sys
rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1])]
med = {}
names = [n for n in ('corral', 'baseline', 'pgbouncer') if any(x[0] == n for x in rows)]
for name in names:
    r = [x for x in rows if x[0] == name]
    med[name] = [statistics.median(float(x[i]) for x in r) for i in (2, 3, 4)]
    print(f"median {name:<9} tps {med[name][0]:7.0f}  us/txn {med[name][1]:6.2f}  user {med[name][2]:6.2f}")
c = med['corral']
for other in names[1:]:
    b = med[other]
    print(f"corral / {other}: tps {c[0] / b[0]:.2f}x  CPU per txn {c[1] / b[1]:.2f}x  user {c[2] / b[2]:.2f}x")
PY
