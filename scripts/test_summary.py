#!/usr/bin/env python3
"""Counts gtest cases from Bazel's test.xml files and prints 'N passed, N failed'.

A test target that crashed before writing its own XML (Bazel then writes a
stub with one failing case) counts as one failure. Skipped cases (GTEST_SKIP,
e.g. PostgreSQL tests without a server) are reported as skipped.
"""
import os
import sys
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


def main(dirs):
    tp = tf = ts = 0
    all_failures = []
    for d in dirs:
        if not d or not os.path.isdir(d):
            continue
        for root, _, files in os.walk(d):
            if "test.xml" in files:
                p, f, s, fl = count(os.path.join(root, "test.xml"))
                tp += p
                tf += f
                ts += s
                rel = os.path.relpath(root, d)
                all_failures += ["%s: %s" % (rel, x) for x in fl]
    for x in all_failures:
        print("FAILED:", x)
    if ts:
        print("%d passed, %d failed, %d skipped" % (tp, tf, ts))
    else:
        print("%d passed, %d failed" % (tp, tf))
    return 1 if tf else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
