#!/usr/bin/env bash
# Starts and stops a throwaway PostgreSQL 15 for Corral's adapter/proxy tests.
#
#   eval "$(bash scripts/pg.sh start)"   # prints `export ...` lines on stdout
#   ... tests read CORRAL_PG_CONNINFO (or PGHOST/PGPORT/PGUSER) ...
#   bash scripts/pg.sh stop               # stops it and removes its directory
#   bash scripts/pg.sh status             # says whether the server runs
#
# start: initdb into a fresh temp directory (mode 755 so sandboxed tests can
# reach it; the data directory inside it is 0700), then `pg_ctl -w` on the
# first free loopback port from 54329 upward, listen_addresses=127.0.0.1,
# unix socket in the temp directory, fsync/synchronous_commit/full_page_writes
# off, max_connections=200, trust auth. As root, initdb and the server run as
# the `postgres` user; otherwise as the current user. If CORRAL_PG_DIR names a
# directory whose server still runs, start prints its exports again instead of
# starting a second server. Only the export lines go to stdout; everything else
# goes to stderr.
#
# stop: stops the server in $1, else in $CORRAL_PG_DIR, else the one recorded
# in the state file by the last start of this user, and removes its directory.
set -uo pipefail

PGBIN=${CORRAL_PG_BIN:-/usr/lib/postgresql/15/bin}
STATE_FILE=${TMPDIR:-/tmp}/corral-pg-$(id -u).last
FIRST_PORT=${CORRAL_PG_FIRST_PORT:-54329}

log() { echo "pg.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

as_owner() {
  # Runs a command as the server's owner.
  if [ "$(id -u)" -eq 0 ]; then
    (cd / && runuser -u postgres -- "$@")
  else
    (cd / && "$@")
  fi
}

print_exports() {
  local dir=$1 port
  port=$(cat "$dir/port")
  cat <<EOF
export CORRAL_PG_DIR='$dir'
export CORRAL_PG_CONNINFO='host=127.0.0.1 port=$port user=postgres dbname=postgres connect_timeout=5'
export PGHOST=127.0.0.1
export PGPORT=$port
export PGUSER=postgres
export PGDATABASE=postgres
EOF
}

running() {  # running DIR -> 0 when the server in DIR answers
  local dir=$1
  [ -f "$dir/port" ] && [ -d "$dir/data" ] || return 1
  as_owner "$PGBIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1
}

port_in_use() {  # port_in_use PORT -> 0 when something accepts on 127.0.0.1:PORT
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

cmd_start() {
  for b in initdb pg_ctl postgres; do
    [ -x "$PGBIN/$b" ] || die "$PGBIN/$b not found: install postgresql-15 (scripts/setup.sh) or set CORRAL_PG_BIN"
  done
  if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
    die "running as root but there is no 'postgres' user to run the server as"
  fi
  if [ -n "${CORRAL_PG_DIR:-}" ] && running "$CORRAL_PG_DIR"; then
    log "server in $CORRAL_PG_DIR already runs; reusing it"
    print_exports "$CORRAL_PG_DIR"
    return 0
  fi

  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/corral-pg.XXXXXX") || die "mktemp failed"
  chmod 755 "$dir"
  mkdir -m 700 "$dir/data"
  if [ "$(id -u)" -eq 0 ]; then chown -R postgres:postgres "$dir"; fi

  if ! as_owner "$PGBIN/initdb" -D "$dir/data" -U postgres --auth=trust \
      --no-sync --encoding=UTF8 --locale=C >"$dir/initdb.log" 2>&1; then
    cat "$dir/initdb.log" >&2
    rm -rf "$dir"
    die "initdb failed"
  fi

  local port=$FIRST_PORT tries=0
  while [ $tries -lt 40 ]; do
    if port_in_use "$port"; then
      port=$((port + 1)); tries=$((tries + 1)); continue
    fi
    if as_owner "$PGBIN/pg_ctl" -D "$dir/data" -w -t 30 -l "$dir/server.log" \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off \
            -c synchronous_commit=off -c full_page_writes=off \
            -c max_connections=200 -c shared_buffers=64MB ${CORRAL_PG_OPTS:-}" start >/dev/null 2>&1; then
      echo "$port" >"$dir/port"
      echo "$dir" >"$STATE_FILE"
      log "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$port, dir $dir"
      print_exports "$dir"
      return 0
    fi
    # Lost a race for the port: move on. Any other failure is final.
    if ! grep -q "could not bind\|could not create any TCP/IP sockets\|already in use" \
        "$dir/server.log" 2>/dev/null; then
      cat "$dir/server.log" >&2 2>/dev/null
      as_owner "$PGBIN/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1
      rm -rf "$dir"
      die "the server did not start (log above)"
    fi
    log "port $port taken, trying the next one"
    : >"$dir/server.log"
    port=$((port + 1)); tries=$((tries + 1))
  done
  rm -rf "$dir"
  die "could not start PostgreSQL on any port from $FIRST_PORT"
}

cmd_stop() {
  local dir=${1:-${CORRAL_PG_DIR:-}}
  if [ -z "$dir" ] && [ -f "$STATE_FILE" ]; then dir=$(cat "$STATE_FILE"); fi
  [ -n "$dir" ] || { log "nothing to stop"; return 0; }
  case "$dir" in
    "${TMPDIR:-/tmp}"/corral-pg.*) ;;
    *) die "refusing to remove '$dir': not a directory made by pg.sh start" ;;
  esac
  if [ -d "$dir/data" ]; then
    as_owner "$PGBIN/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
      log "server in $dir was not running"
  fi
  rm -rf "$dir"
  if [ -f "$STATE_FILE" ] && [ "$(cat "$STATE_FILE")" = "$dir" ]; then rm -f "$STATE_FILE"; fi
  log "stopped and removed $dir"
}

cmd_status() {
  local dir=${CORRAL_PG_DIR:-}
  if [ -z "$dir" ] && [ -f "$STATE_FILE" ]; then dir=$(cat "$STATE_FILE"); fi
  if [ -n "$dir" ] && running "$dir"; then
    log "running in $dir on port $(cat "$dir/port")"
    return 0
  fi
  log "not running"
  return 1
}

case "${1:-}" in
  start) cmd_start ;;
  stop) shift; cmd_stop "${1:-}" ;;
  status) cmd_status ;;
  *) echo "usage: $0 start|stop [DIR]|status" >&2; exit 2 ;;
esac
