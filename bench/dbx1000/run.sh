#!/usr/bin/env bash
# Like-for-like TPC-C NewOrder/Payment 50/50 comparison of DBx1000 and Corral's
# embedded engine (issue 17): builds one DBx1000 binary per protocol from a
# DBx1000 source tree (see README.md for how to get it), then runs DBx1000 and
# Corral's tpcc_engine_bench interleaved (A B A B), ROUNDS rounds.
#
#   bash bench/dbx1000/run.sh build /path/to/DBx1000 [workdir]
#   bash bench/dbx1000/run.sh run   [workdir] [outdir]
#
# Environment: ROUNDS (3), TXNS (DBx1000 MAX_TXN_PER_PART, committed txns per
# thread; 250000 gives about 3 s), SECONDS_CORRAL (3), NICE ("" or "nice -n 19"),
# VARIANTS (Corral runs as home:rows, default "thread:all random:all
# thread:dbx1000"; rows=dbx1000 does DBx1000's work: no row inserts, its sizes),
# BENCH_BIN (the corral binary: `corral bench --tpcc_rows=dbx1000
# --policy=hard-partition --queues=2` per protocol, the scheduler in the path;
# "" to skip),
# PROTOCOLS (DBx1000 names, default below), CORRAL_BIN (tpcc_engine_bench).
#
# What is measured for DBx1000: the source copy gets one measurement hook in
# system/main.cpp (nothing else of its code changes): clock_gettime(MONOTONIC)
# and getrusage(RUSAGE_SELF) taken right before the worker threads start and
# right after they are joined, printed as
#   DBXRUN wall_s=.. run_cpu_s=.. load_cpu_s=..
# so the load phase (population and query generation) is reported apart and
# the run-phase CPU is the process's user+system time between the two points.
# txn/s = committed txns (sum of txn_cnt) / wall_s; CPU us/txn = run_cpu_s /
# committed txns. Corral's tpcc_engine_bench reports the same two figures
# (thread CPU time of the workers over the measured interval).
set -euo pipefail

# DBx1000 CC_ALG name -> Corral protocol it is compared with.
declare -A CORRAL_OF=([NO_WAIT]=2pl-nowait [WAIT_DIE]=2pl-waitdie [TIMESTAMP]=timestamp
                      [MVCC]=mvcc [OCC]=occ [SILO]=occ [TICTOC]=occ)
PROTOCOLS=${PROTOCOLS:-"NO_WAIT WAIT_DIE TIMESTAMP MVCC OCC SILO TICTOC"}
ROUNDS=${ROUNDS:-3}
TXNS=${TXNS:-250000}
SECONDS_CORRAL=${SECONDS_CORRAL:-3}
VARIANTS=${VARIANTS:-"thread:all random:all thread:dbx1000"}
BENCH_BIN=${BENCH_BIN:-$(bazel info -c opt bazel-bin 2>/dev/null)/cli/corral}
[[ -x $BENCH_BIN ]] || BENCH_BIN=""
NICE=${NICE:-}

configure() {  # $1 = source copy, $2 = CC_ALG
  local cfg=$1/config.h
  set_def() { sed -i -E "s|^#define[[:space:]]+$1[[:space:]].*|#define $1 $2|" "$cfg"
              grep -q -E "^#define $1 $2\$" "$cfg" || { echo "config: $1 not set" >&2; exit 1; }; }
  set_def THREAD_CNT 2
  set_def WORKLOAD TPCC
  set_def NUM_WH 2
  set_def PERC_PAYMENT 0.5
  set_def CC_ALG "$2"
  set_def MAX_TXN_PER_PART "$TXNS"
  # rdtsc ticks per ns on this box (DBx1000's own timers only; the figures
  # reported here come from the hook's clock_gettime).
  local ghz
  ghz=$(awk -F: '/^cpu MHz/ {printf "%.3f", $2/1000; exit}' /proc/cpuinfo)
  set_def CPU_FREQ "${ghz:-2}"
}

add_hook() {  # $1 = source copy: measurement hook around the run phase
  local m=$1/system/main.cpp
  grep -q DBXRUN "$m" && return
  python3 - "$m" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace('#include "global.h"',
  '#include "global.h"\n#include <sys/resource.h>\n#include <time.h>\n'
  'static double dbx_cpu() { struct rusage u; getrusage(RUSAGE_SELF, &u);\n'
  '  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6; }\n'
  'static double dbx_wall() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }\n', 1)
  
a = '\t// spawn and run txns again.\n'
assert a in s
s = s.replace(a, a + '\tdouble dbx_c0 = dbx_cpu(), dbx_w0 = dbx_wall();\n', 1)
b = '\tint64_t endtime = get_server_clock();\n'
assert b in s
s = s.replace(b, b + '\tdouble dbx_c1 = dbx_cpu(), dbx_w1 = dbx_wall();\n'
  '\tprintf("DBXRUN wall_s=%.6f run_cpu_s=%.6f load_cpu_s=%.6f\\n", dbx_w1 - dbx_w0, dbx_c1 - dbx_c0, dbx_c0);\n', 1)
open(p, 'w').write(s)
PY
}

build() {  # $1 = DBx1000 source dir, $2 = workdir
  local src=$1 work=${2:-/tmp/dbx1000}
  mkdir -p "$work"
  for alg in $PROTOCOLS; do
    local d=$work/build_$alg
    rm -rf "$d"; mkdir -p "$d"
    (cd "$src" && tar --exclude=.git -cf - .) | tar -xf - -C "$d"
    configure "$d" "$alg"
    add_hook "$d"
    # The Makefile links -ljemalloc; libjemalloc is not installed on this box,
    # so DBx1000 runs on glibc malloc (its TPC-C allocates only at load time
    # and in per-thread pools during the run).
    sed -i 's/ -ljemalloc//' "$d/Makefile"
    echo "== build $alg"
    (cd "$d" && $NICE make -j2 rundb >make.log 2>&1) || { tail -20 "$d/make.log"; echo "build $alg failed" >&2; }
  done
}

run_dbx() {  # $1 = binary dir; prints "txn/s cpu_us abort_rate load_cpu_s"
  local out
  out=$(cd "$1" && timeout "${DBX_TIMEOUT:-60}" $NICE ./rundb 2>&1) || echo "rundb in $1 failed or hung (timeout ${DBX_TIMEOUT:-60} s)" >&2
  echo "$out" >>"$OUTDIR/dbx_raw.txt"
  awk '/txn_cnt=/ { split($0, a, /[=,]/); c += a[2]; ab += a[4] }
       /^DBXRUN/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
       END { if (c == 0 || v["wall_s"] == "") { print "FAILED"; exit }
             printf "%.0f %.2f %.3f %.2f\n", c / v["wall_s"], v["run_cpu_s"] * 1e6 / c, ab / (ab + c), v["load_cpu_s"] }' <<<"$out"
}

run() {  # $1 = workdir, $2 = outdir
  local work=${1:-/tmp/dbx1000}
  OUTDIR=${2:-$work/out}
  mkdir -p "$OUTDIR"
  local bin=${CORRAL_BIN:-$(bazel info -c opt bazel-bin 2>/dev/null)/bench/engine/tpcc_engine_bench}
  local cprot
  cprot=$(for a in $PROTOCOLS; do echo "${CORRAL_OF[$a]}"; done | awk '!s[$0]++' | paste -sd,)
  cprot="$cprot,maat"  # MaaT has no DBx1000 counterpart; run for the record
  echo "side round protocol txn_per_s cpu_us_per_txn abort_rate load_cpu_s [consistency]" >"$OUTDIR/runs.txt"
  for r in $(seq 1 "$ROUNDS"); do
    echo "== round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUTDIR/log.txt"
    for alg in $PROTOCOLS; do
      [[ -x $work/build_$alg/rundb ]] || continue
      echo "dbx1000 $r $alg $(run_dbx "$work/build_$alg")" | tee -a "$OUTDIR/runs.txt"
    done
    # home: thread = DBx1000's fixed home warehouse per worker; rows: all =
    # the TPC-C inserts, dbx1000 = DBx1000's work (no inserts, its table sizes).
    for v in $VARIANTS; do
      local home=${v%%:*} rows=${v#*:} side
      side=corral-$home; [[ $rows == all ]] || side=$side-$rows
      $NICE "$bin" --warehouses=2 --threads=2 --seconds="$SECONDS_CORRAL" --protocols="$cprot" \
        --home="$home" --rows="$rows" \
        | tee -a "$OUTDIR/corral_raw.txt" \
        | awk -v r="$r" -v side="$side" -F'|' '/^\| [a-z0-9-]+ \| [0-9]/ {
            gsub(/ /, ""); print side, r, $2, $3, $6, $4, "-", $7 }' \
        | tee -a "$OUTDIR/runs.txt"
    done
    # With the scheduler in the path (issue 17's figure): corral bench,
    # hard-partition over 2 queues (one per warehouse, as DBx1000's home
    # warehouse per thread), DBx1000's rows; CPU per txn is not reported here.
    if [[ -n $BENCH_BIN ]]; then
      for prot in ${cprot//,/ }; do
        $NICE "$BENCH_BIN" bench --workload=tpcc-np --warehouses=2 --queues=2 --policy=hard-partition \
          --stealing=false --tpcc_rows=dbx1000 --protocol="$prot" --phase1=0 --warmup=0.5 \
          --duration="$SECONDS_CORRAL" --progress=0 2>&1 \
          | tee -a "$OUTDIR/bench_raw.txt" \
          | awk -v r="$r" -v p="$prot" '/^run 1:/ { for (i = 1; i <= NF; i++) {
                if ($i == "tps") tps = $(i - 1); if ($i == "rate") ar = $(i + 1) } }
              /consistency check:/ { ok = $3 }
              END { if (tps == "") { print "corral-bench-dbx1000", r, p, "FAILED"; exit }
                    print "corral-bench-dbx1000", r, p, tps, "nan", ar, "-", ok }' \
          | tee -a "$OUTDIR/runs.txt"
      done
    fi
  done
}

case ${1:-} in
  build) build "${2:?DBx1000 source dir}" "${3:-}";;
  run) run "${2:-}" "${3:-}";;
  *) sed -n 2,22p "$0"; exit 2;;
esac
