#!/usr/bin/env bash
# Builds and runs every test: installs packages (scripts/setup.sh), starts a
# throwaway PostgreSQL for the adapter/proxy tests (scripts/pg.sh), runs all
# gtest targets under Bazel, then a ThreadSanitizer pass over the concurrent
# packages, and ends with one line "N passed, N failed" counting test cases.
# The layer check (scripts/check_layers.py: no file includes or depends on a
# higher layer) counts as one case.
#
#   scripts/test.sh            # everything
#   CORRAL_NO_TSAN=1 scripts/test.sh   # skip the TSan pass
#   CORRAL_TEST_LOAD=2 scripts/test.sh # under load: 2 CPU-burning processes
#                                      # run for the whole suite
#   CORRAL_TEST_RERUN=1 scripts/test.sh  # run every test, none from a cache
#
# CORRAL_TEST_LOAD=N starts N busy-loop processes before the first build and
# stops them when the script exits (normally, on error or on Ctrl-C): the
# suite must pass on a machine that something else keeps busy (CI on a
# shared box). No test may assert a rate or a timing that such load can
# cross.
set -uo pipefail
cd "$(dirname "$0")/.."

LOAD_PIDS=()
PG_STARTED=""
layers_dir=$(mktemp -d)
cleanup() {
  for pid in "${LOAD_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  rm -rf "$layers_dir"
  [ -n "$PG_STARTED" ] && bash scripts/pg.sh stop >/dev/null 2>&1
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

LOAD=${CORRAL_TEST_LOAD:-0}
if ! [[ "$LOAD" =~ ^[0-9]+$ ]]; then
  echo "CORRAL_TEST_LOAD must be a number of processes, got '$LOAD'"; echo "0 passed, 1 failed"; exit 1
fi
for ((i = 0; i < LOAD; i++)); do
  ( while :; do :; done ) &
  LOAD_PIDS+=("$!")
done
[ "$LOAD" -gt 0 ] && echo "== under load: $LOAD CPU-burning processes (${LOAD_PIDS[*]}) until the suite ends"

bash scripts/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

# PostgreSQL for tests that need it (they skip with a message when absent).
if [ -x scripts/pg.sh ]; then
  if pg_exports=$(bash scripts/pg.sh start); then
    eval "$pg_exports"
    PG_STARTED=1
  else
    echo "warning: could not start PostgreSQL; its tests will skip"
  fi
fi

# Bazel hides the client environment from tests: pass the server through.
PG_TEST_ENV=(--test_env=CORRAL_PG_CONNINFO --test_env=PGHOST --test_env=PGPORT --test_env=PGUSER)
# Under load (or with CORRAL_TEST_RERUN=1) every test really runs: a value
# that changes each time keeps Bazel from answering with a result cached in
# its output base or disk cache from a run without load.
if [ "$LOAD" -gt 0 ] || [ "${CORRAL_TEST_RERUN:-0}" = 1 ]; then
  PG_TEST_ENV+=(--test_env=CORRAL_TEST_RUN_ID="$(date +%s%N)")
fi

JOBS=${CORRAL_TEST_JOBS:-2}
rc=0

# Layers only look down: one test case in the summary, fails the run.
echo "== layer check"
/usr/bin/python3 scripts/check_layers.py --junit="$layers_dir/layers/test.xml" || rc=1

bazel test //... "${PG_TEST_ENV[@]}" --keep_going --jobs="$JOBS" --local_test_jobs="$JOBS" || rc=$?
logs=$(bazel info bazel-testlogs 2>/dev/null)
summaries=("$layers_dir" "$logs")

if [ -z "${CORRAL_NO_TSAN:-}" ] && [ -f scripts/tsan_targets.txt ]; then
  mapfile -t TSAN < <(grep -vE '^\s*(#|$)' scripts/tsan_targets.txt)
  if [ ${#TSAN[@]} -gt 0 ]; then
    echo "== ThreadSanitizer pass: ${TSAN[*]}"
    bazel test --config=tsan "${PG_TEST_ENV[@]}" --keep_going --jobs="$JOBS" --local_test_jobs="$JOBS" \
      --test_env=TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" "${TSAN[@]}" || rc=$?
    summaries+=("$(bazel info --config=tsan bazel-testlogs 2>/dev/null)")
  fi
fi

/usr/bin/python3 scripts/test_summary.py "${summaries[@]}"
summary_rc=$?
[ $rc -eq 0 ] && rc=$summary_rc
exit $rc
