#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 (-fsanitize=fuzzer,address,
# undefined; `build:fuzz` in .bazelrc) and runs each for a fixed number of
# executions, then prints executions, seconds and exec/s per target. Exits 1
# if any target crashed (an ASan/UBSan report or a violated invariant; the
# input is saved as fuzz-out/<target>/crash-*), 2 if the build failed.
#
#   scripts/fuzz.sh                       # default counts: 10,000,000 executions in all
#   FUZZ_RUNS_SCALE=0.01 scripts/fuzz.sh  # 1% of every count (a quick check)
#   FUZZ_TARGETS="wire ref" scripts/fuzz.sh
#   FUZZ_PARALLEL=1 scripts/fuzz.sh       # one target at a time (default: two, one core each)
#   FUZZ_MAX_SECONDS=600 scripts/fuzz.sh  # stop each target after 10 min even if short of its count
#
# The fuzz build uses its own Bazel output base ($FUZZ_OUTPUT_BASE, default
# ~/.cache/corral-fuzz): Bazel picks its C++ toolchain from CC, and switching
# the main output base to clang would throw away the whole gcc build.
# Corpora: each target reads its checked-in seeds (<package>/fuzz_corpus/
# <target>/, replayed by `bazel test //...` as <target>_replay_test) and
# grows a scratch corpus in fuzz-out/<target>/corpus (not checked in). An
# input that found a bug is copied by hand into the checked-in corpus as
# crash-<what> after the fix, so the replay test keeps it fixed.
#
# Targets (name, Bazel target, executions, -max_len):
#   wire  the protocol framing and message readers/writers (adapters/proxy/wire.h)
#   auth  SCRAM-SHA-256 server and client, md5, userlist, base64 (adapters/proxy/auth.h)
#   ref   the reference extractor: uncached, cached, prepared (policies/ref_extractor.h)
#   params  Bind parameter decoding, text and binary (policies/pg_params.h)
# The counts weight the cheap targets up (auth and params run several times
# faster than wire and ref) so the default stays 10,000,000 in all.
set -uo pipefail
cd "$(dirname "$0")/.."

TARGETS_ALL=(
  "wire //adapters/proxy:wire_fuzzer 4000000 4096"
  "auth //adapters/proxy:auth_fuzzer 3000000 1024"
  "ref //policies:ref_extractor_fuzzer 1000000 2048"
  "params //policies:pg_params_fuzzer 2000000 1024"
)
SCALE=${FUZZ_RUNS_SCALE:-1}
PARALLEL=${FUZZ_PARALLEL:-2}  # one target per core on the 2-core box
WANT=${FUZZ_TARGETS:-wire auth ref params}
OUTPUT_BASE=${FUZZ_OUTPUT_BASE:-$HOME/.cache/corral-fuzz}
OUT=${FUZZ_OUT:-fuzz-out}
MAX_SECONDS=${FUZZ_MAX_SECONDS:-0}  # libFuzzer -max_total_time; 0: none

if ! command -v clang-14 >/dev/null; then
  echo "fuzz: clang-14 not found (scripts/setup.sh installs clang-14, libfuzzer-14-dev, libclang-rt-14-dev)"
  exit 2
fi

selected=()
for t in "${TARGETS_ALL[@]}"; do
  read -r name _ _ _ <<<"$t"
  for w in $WANT; do [ "$w" = "$name" ] && selected+=("$t"); done
done
if [ ${#selected[@]} -eq 0 ]; then
  echo "fuzz: no target matches FUZZ_TARGETS='$WANT'"
  exit 2
fi

labels=()
for t in "${selected[@]}"; do read -r _ label _ _ <<<"$t"; labels+=("$label"); done
BAZEL=(bazel --output_base="$OUTPUT_BASE")
echo "== building ${labels[*]} (clang-14, ASan+UBSan, output base $OUTPUT_BASE)"
mkdir -p "$OUT"
"${BAZEL[@]}" build --config=fuzz --jobs="${FUZZ_BUILD_JOBS:-2}" "${labels[@]}" >"$OUT/build.log" 2>&1
build_rc=$?
grep -v "Cannot export local symbol" "$OUT/build.log" | tail -4  # gold's noise about ASan's symbols
if [ $build_rc -ne 0 ]; then
  echo "fuzz: build failed (full log: $OUT/build.log)"
  exit 2
fi
BIN=$("${BAZEL[@]}" info --config=fuzz bazel-bin 2>/dev/null)

# Runs one target (in a subshell of its own); writes its log and a stats line
# "name runs seconds rc asked cpu_seconds".
run_one() {
  local name=$1 label=$2 runs=$3 maxlen=$4
  local pkg=${label#//}
  pkg=${pkg%%:*}
  local bin=$BIN/$pkg/${label##*:}
  local seeds=$pkg/fuzz_corpus/${label##*:}
  local dir=$OUT/$name
  mkdir -p "$dir/corpus"
  rm -f "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-*
  local t0 t1 rc
  t0=$(date +%s.%N)
  "$bin" -runs="$runs" -max_total_time="$MAX_SECONDS" -max_len="$maxlen" -timeout=25 -rss_limit_mb=3072 \
    -print_final_stats=1 \
    -artifact_prefix="$dir/" "$dir/corpus" "$seeds" >"$dir/log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  local done_runs cpu me=$BASHPID  # (not inside $(...), which is a subshell of its own)
  done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  # The fuzzer's CPU seconds (this subshell's waited-for children): on a box
  # shared with builds the wall time says more about the others than about
  # the target; executions per CPU second do not.
  cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.1f", ($14 + $15) / hz }' "/proc/$me/stat")
  echo "$name ${done_runs:-0} $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') $rc $runs $cpu" >"$dir/stats"
}

total_runs=0
for t in "${selected[@]}"; do
  read -r name label runs maxlen <<<"$t"
  runs=$(awk -v r="$runs" -v s="$SCALE" 'BEGIN { printf "%.0f", r * s }')
  [ "$runs" -lt 1 ] && runs=1
  total_runs=$((total_runs + runs))
  echo "== $name: $runs executions (max_len $maxlen), log $OUT/$name/log"
  run_one "$name" "$label" "$runs" "$maxlen" &
  while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do wait -n; done
done
wait

echo
printf '%-7s %12s %10s %10s %8s %10s  %s\n' target executions seconds exec/s cpu_s exec/cpu_s result
failed=0
sum_runs=0
for t in "${selected[@]}"; do
  read -r name _ _ _ <<<"$t"
  read -r _ n secs rc asked cpu <"$OUT/$name/stats"
  result=ok
  if [ "$rc" -eq 0 ] && [ "$n" -lt "$asked" ]; then
    result="stopped by FUZZ_MAX_SECONDS"
  elif [ "$rc" -eq 72 ]; then
    result="interrupted"
  elif [ "$rc" -ne 0 ]; then
    failed=1
    result="CRASHED (rc $rc): $(ls "$OUT/$name"/crash-* "$OUT/$name"/leak-* "$OUT/$name"/timeout-* \
      "$OUT/$name"/oom-* 2>/dev/null | tr '\n' ' ')"
    grep -m1 -E "invariant violated|ERROR: (AddressSanitizer|libFuzzer)|runtime error" "$OUT/$name/log" |
      sed 's/^/         /'
  fi
  printf '%-7s %12d %10.1f %10.0f %8.1f %10.0f  %s\n' "$name" "$n" "$secs" \
    "$(awk -v n="$n" -v s="$secs" 'BEGIN { print (s > 0 ? n / s : 0) }')" "$cpu" \
    "$(awk -v n="$n" -v s="$cpu" 'BEGIN { print (s > 0 ? n / s : 0) }')" "$result"
  sum_runs=$((sum_runs + n))
done
echo "total: $sum_runs executions (asked $total_runs)"
exit $failed
