#!/usr/bin/env python3
"""Counts gtest cases from Bazel's test.xml files and prints 'N passed, N failed'.

A test target that crashed before writing its own XML (Bazel then writes a
stub with one failing case) counts as one failure. Skipped cases (GTEST_SKIP,
e.g. PostgreSQL tests without a server) are reported as skipped.

Bazel leaves the logs of earlier invocations in place: a target once run
with --runs_per_test=5 keeps run_k_of_5/test.xml beside the test.xml of every
later plain run. Per target only the newest group of results counts (the
plain test.xml, or one run_k_of_N / shard_k_of_N set), so stale runs of an
earlier investigation neither add passes nor report old failures.
"""
import os
import re
import sys

LOG_TAIL_LINES = 25
_RUN_DIR = re.compile(r"^(run|shard)_\d+_of_(\d+)$")
import xml.etree.ElementTree as ET


def count(xml_path):
    passed = failed = skipped = 0
    failures = []
    try:
        root = ET.parse(xml_path).getroot()
    except ET.ParseError:
        return 0, 1, 0, [xml_path + ": unreadable XML"]
    for case in root.iter("testcase"):
        status = case.get("status", "run")
        result = case.get("result", "")
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            failures.append("%s.%s" % (case.get("classname"), case.get("name")))
        elif result == "skipped" or status == "notrun" or case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped, failures


def newest_results(d):
    """The test.xml paths under d, keeping per target only its newest group."""
    groups = {}  # target dir -> {group signature: [paths]}
    for root, _, files in os.walk(d):
        if "test.xml" not in files:
            continue
        target, parts = root, []
        while _RUN_DIR.match(os.path.basename(target)):
            m = _RUN_DIR.match(os.path.basename(target))
            parts.append("%s_of_%s" % (m.group(1), m.group(2)))
            target = os.path.dirname(target)
        groups.setdefault(target, {}).setdefault(tuple(parts), []).append(os.path.join(root, "test.xml"))
    paths = []
    for by_sig in groups.values():
        newest = max(by_sig.values(), key=lambda ps: max(os.path.getmtime(p) for p in ps))
        paths += sorted(newest)
    return paths


def main(dirs):
    tp = tf = ts = 0
    all_failures = []
    failed_logs = []  # test.log of each target with a failure, in order
    for d in dirs:
        if not d or not os.path.isdir(d):
            continue
        for path in newest_results(d):
            p, f, s, fl = count(path)
            tp += p
            tf += f
            ts += s
            rel = os.path.relpath(os.path.dirname(path), d)
            all_failures += ["%s: %s" % (rel, x) for x in fl]
            log = os.path.join(os.path.dirname(path), "test.log")
            if fl and os.path.isfile(log):
                failed_logs.append((rel, log))
    # The end of each failed target's log (at most 3), just above the
    # summary: what CI shows of its output is its last lines, and a target
    # that timed out or crashed names no failing case of its own.
    for rel, log in failed_logs[:3]:
        with open(log, errors="replace") as f:
            tail = f.read().splitlines()[-LOG_TAIL_LINES:]
        print("---- end of %s/test.log ----" % rel)
        for line in tail:
            print("  " + line)
    for x in all_failures:
        print("FAILED:", x)
    if ts:
        print("%d passed, %d failed, %d skipped" % (tp, tf, ts))
    else:
        print("%d passed, %d failed" % (tp, tf))
    return 1 if tf else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
