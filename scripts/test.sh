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
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

layers_dir=$(mktemp -d)
pg_started=
cleanup() {
  rm -rf "$layers_dir"
  [ -n "$pg_started" ] && bash scripts/pg.sh stop >/dev/null 2>&1
}
trap cleanup EXIT

# PostgreSQL for tests that need it (they skip with a message when absent).
if [ -x scripts/pg.sh ]; then
  if pg_exports=$(bash scripts/pg.sh start); then
    eval "$pg_exports"
    pg_started=1
  else
    echo "warning: could not start PostgreSQL; its tests will skip"
  fi
fi

# Bazel hides the client environment from tests: pass the server through.
PG_TEST_ENV=(--test_env=CORRAL_PG_CONNINFO --test_env=PGHOST --test_env=PGPORT --test_env=PGUSER)

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
