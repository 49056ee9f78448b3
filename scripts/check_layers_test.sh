#!/usr/bin/env bash
# Tests scripts/check_layers.py on fake trees: a clean tree passes; an
# upward #include, an upward Bazel dep, a sibling use (engine <-> adapters)
# and a use of tests/ each fail with the file and line named; visibility
# grants, other repositories' labels and third_party includes are ignored;
# --junit writes one case that scripts/test_summary.py counts as failed.
#
#   bazel test //scripts:check_layers_test
set -uo pipefail
CHECK=scripts/check_layers.py
SUMMARY=scripts/test_summary.py
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
T="${TEST_TMPDIR:-$(mktemp -d)}"
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# put ROOT PATH TEXT: writes a file of the fake tree.
put() { mkdir -p "$(dirname "$1/$2")"; printf '%s\n' "$3" > "$1/$2"; }

# A clean tree: every use looks down, tests/ uses anything.
clean() {
  local r=$1
  rm -rf "$r"
  put "$r" common/ids.h '#include <cstdint>'
  put "$r" policies/policy.h '#include "common/ids.h"'
  put "$r" scheduler/schedule.h $'#include "policies/policy.h"\n#include "absl/status/status.h"\n#include "third_party/x/y.h"'
  put "$r" engine/engine.h '#include "scheduler/schedule.h"'
  put "$r" engine/BUILD $'package(default_visibility = ["//visibility:public"])\ncc_library(name = "engine", deps = ["//scheduler", "@system_libs//:absl"],\n    visibility = ["//engine:__subpackages__", "//bench/engine:__pkg__"])  # //bench in a comment'
  put "$r" adapters/pg.h '#include "scheduler/schedule.h"'
  put "$r" bench/run.cc $'#include "engine/engine.h"\n#include "adapters/pg.h"\n#include "run.h"'
  put "$r" cli/main.cc '#include "bench/run.h"'
  put "$r" tests/e2e_test.cc $'#include "cli/main.h"\n#include "engine/engine.h"'
  put "$r" third_party/lib/a.h '#include "bench/anything.h"'
  put "$r" schemas/x.h '#include "cli/main.h"'
}

# upward NAME FILE TEXT PATTERN: a clean tree plus FILE holding TEXT fails,
# and the checker prints PATTERN.
upward() {
  local out rc
  clean "$R"
  put "$R" "$2" "$3"
  out=$("$PY" "$CHECK" --root="$R" 2>&1); rc=$?
  [ $rc -eq 1 ] || fail "$1: exit $rc, want 1; output: $out"
  grep -qF -- "$4" <<<"$out" || fail "$1: output lacks '$4': $out"
}

R="$T/tree"
clean "$R"
out=$("$PY" "$CHECK" --root="$R" 2>&1) || fail "clean tree: exit $?: $out"

upward "upward include" engine/partitioned/tpcc.h \
  $'// TPC-C\n#include "engine/engine.h"\n#include "bench/workloads/tpcc.h"' \
  "engine/partitioned/tpcc.h:3: layer 'engine' uses higher layer 'bench' (bench/workloads/tpcc.h)"
upward "upward Bazel dep" engine/partitioned/BUILD \
  $'cc_library(\n    name = "tpcc",\n    deps = [":partitioned", "//bench/workloads:tpcc"],\n)' \
  "engine/partitioned/BUILD:3: layer 'engine' uses higher layer 'bench' (//bench/workloads:tpcc)"
upward "lowest layer" common/hash.h '  #  include "policies/policy.h"' \
  "common/hash.h:1: layer 'common' uses higher layer 'policies'"
upward "sibling include" adapters/exec.cc '#include "engine/engine.h"' \
  "adapters/exec.cc:1: layer 'adapters' uses sibling layer 'engine'"
upward "sibling dep" engine/BUILD 'cc_library(name = "e", deps = ["@//adapters:pg"])' \
  "engine/BUILD:1: layer 'engine' uses sibling layer 'adapters' (//adapters:pg)"
upward "tests used" bench/util.h '#include "tests/proxy/util.h"' \
  "bench/util.h:1: layer 'bench' uses higher layer 'tests'"

# --junit: one case, failed, counted by the suite's summary.
clean "$R"
put "$R" state/state.h '#include "scheduler/run_queue.h"'
J="$T/junit"
rm -rf "$J"
"$PY" "$CHECK" --root="$R" --junit="$J/layers/test.xml" >/dev/null && fail "junit: exit 0 on a violation"
s=$("$PY" "$SUMMARY" "$J"); rc=$?
[ $rc -eq 1 ] || fail "summary: exit $rc, want 1"
grep -qx "0 passed, 1 failed" <<<"$(tail -1 <<<"$s")" || fail "summary of a violation: $s"
clean "$R"
"$PY" "$CHECK" --root="$R" --junit="$J/layers/test.xml" >/dev/null || fail "junit: exit $? on a clean tree"
s=$("$PY" "$SUMMARY" "$J") || fail "summary of a clean tree: exit $?"
grep -qx "1 passed, 0 failed" <<<"$(tail -1 <<<"$s")" || fail "summary of a clean tree: $s"

# Stale runs: a target once run with --runs_per_test keeps run_k_of_N/test.xml
# beside later plain runs; only the newest group of a target counts.
xml() { mkdir -p "$(dirname "$1")"; printf '<testsuites><testsuite><testcase classname="T" name="%s" status="run">%s</testcase></testsuite></testsuites>\n' "$2" "$3" > "$1"; }
S="$T/stale"
rm -rf "$S"
xml "$S/a/run_1_of_2/test.xml" Old '<failure message="x"/>'
xml "$S/a/run_2_of_2/test.xml" Old ''
touch -d '2 hours ago' "$S/a/run_1_of_2/test.xml" "$S/a/run_2_of_2/test.xml"
xml "$S/a/test.xml" New ''
xml "$S/b/test.xml" Plain ''
s=$("$PY" "$SUMMARY" "$S") || fail "stale runs: exit $?: $s"
grep -qx "2 passed, 0 failed" <<<"$(tail -1 <<<"$s")" || fail "stale runs counted: $s"
touch -d '3 hours ago' "$S/a/test.xml"
s=$("$PY" "$SUMMARY" "$S"); rc=$?
[ $rc -eq 1 ] || fail "newer run_k_of_N group: exit $rc, want 1"
grep -qx "2 passed, 1 failed" <<<"$(tail -1 <<<"$s")" || fail "newer run_k_of_N group not counted: $s"

# A failed target (here timed out: Bazel's stub case) shows the end of its
# test.log above the summary; a passing one does not.
L="$T/logs"
rm -rf "$L"
xml "$L/slow/test.xml" slow '<failure message="timed out"/>'
{ echo "first line, out of the tail"; for i in $(seq 1 40); do echo "log line $i"; done; echo "-- Test timed out --"; } > "$L/slow/test.log"
xml "$L/fine/test.xml" fine ''
echo "a passing target's log" > "$L/fine/test.log"
s=$("$PY" "$SUMMARY" "$L")
grep -q "^---- end of slow/test.log ----$" <<<"$s" || fail "no tail header for a failed target: $s"
grep -qx "  -- Test timed out --" <<<"$s" || fail "failed target's last log line missing: $s"
grep -q "first line, out of the tail\|passing target's log" <<<"$s" && fail "more than the failed log's tail: $s"
grep -qx "1 passed, 1 failed" <<<"$(tail -1 <<<"$s")" || fail "summary after a log tail: $s"

if [ $fails -gt 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "all layer-check cases passed"
