#!/usr/bin/env bash
# What a cross-proxy lock costs the server per transaction (issue 25): pgbench
# straight at PostgreSQL (no proxy), 8 clients, cold rows (1M accounts, no
# conflicts), hot_row.sql's SERIALIZABLE read-modify-write three ways, taking
# turns ROUNDS times: plain.sql; advisory.sql (session pg_advisory_lock
# before BEGIN, pg_advisory_unlock after COMMIT, as multi-proxy mode does);
# lock_table.sql (LOCK TABLE of one of 256 empty stripe tables inside the
# transaction, before its first statement: it takes no snapshot, COMMIT
# releases it). Prints tps and the whole box's busy CPU per transaction
# (/proc/stat; pgbench and the server share it).
#   PGPORT=54329 bash bench/results/p25x/lock_cost/run.sh
set -euo pipefail
cd "$(dirname "$0")"
ROUNDS=${ROUNDS:-3}
DB=corral_lock_cost
psql -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
pgbench -i -s 10 -q -h 127.0.0.1 -p "$PGPORT" -U postgres $DB 2>&1 | tail -1
{ echo "CREATE SCHEMA lk;"; for i in $(seq 0 255); do echo "CREATE TABLE lk.t$i ();"; done; } |
  psql -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d $DB -1
cpu() { awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
for r in $(seq 1 "$ROUNDS"); do
  for s in plain advisory lock_table; do
    b0=$(cpu)
    out=$(pgbench -n -M simple -h 127.0.0.1 -p "$PGPORT" -U postgres -c 8 -j 2 -T 8 -f $s.sql $DB 2>&1)
    b1=$(cpu)
    n=$(echo "$out" | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')
    echo "round $r $s tps=$((n / 8)) busy_us_per_txn=$(( (b1 - b0) * 1000000 / $(getconf CLK_TCK) / n ))"
  done
done
