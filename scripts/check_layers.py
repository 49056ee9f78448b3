#!/usr/bin/env python3
"""Fails when a file in a lower layer includes or depends on a higher one.

Layers, lowest first (DESIGN.md, README "Layout"):

    common < policies < history < state < scheduler < engine, adapters < bench < cli

`engine` and `adapters` are siblings: neither may use the other. `tests/` may
use anything, and nothing may use `tests/`. Other top-level folders
(third_party, schemas, scripts) are outside the order and not checked.

Checked in every file under a layered folder:
  * `#include "top/..."` lines in C/C++ sources and headers;
  * Bazel labels `"//top/..."` in BUILD files (deps, data, srcs; visibility
    labels ending in :__pkg__ / :__subpackages__ grant, they do not depend,
    and are skipped).

    scripts/check_layers.py                 # the tree this script is in
    scripts/check_layers.py --root=DIR      # another tree (tests use fakes)
    scripts/check_layers.py --junit=FILE    # also write a JUnit test.xml
                                            # (scripts/test_summary.py counts it)

Prints one line per violation (`file:line: layer 'engine' uses 'bench' ...`)
and exits 1 if there is any, 0 otherwise. Reads files only; stdlib only.
"""
import argparse
import os
import re
import sys
from xml.sax.saxutils import escape

# Rank of each top-level folder; equal rank = siblings (may not use each other).
RANK = {
    "common": 0,
    "policies": 1,
    "history": 2,
    "state": 3,
    "scheduler": 4,
    "engine": 5,
    "adapters": 5,
    "bench": 6,
    "cli": 7,
    "tests": 8,
}
# Folders allowed to use any layer (they are not used by any).
ANYTHING = {"tests"}

SOURCE_EXT = (".h", ".hh", ".hpp", ".cc", ".cpp", ".c", ".inc")
BUILD_NAMES = ("BUILD", "BUILD.bazel")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
LABEL_RE = re.compile(r'"@?//([A-Za-z0-9_.\-]+)([^"]*)"')
SKIP_DIRS = {".git", "third_party", "__pycache__"}


def allowed(src_top, dst_top):
    """Whether a file under src_top may use one under dst_top."""
    if src_top == dst_top or dst_top not in RANK:
        return True
    if src_top in ANYTHING:
        return True
    return RANK[dst_top] < RANK[src_top]


def uses(path):
    """Yields (line number, top folder used, text) for each include/label."""
    name = os.path.basename(path)
    is_build = name in BUILD_NAMES
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return
    for n, line in enumerate(lines, 1):
        if is_build:
            code = line.split("#", 1)[0]
            for m in LABEL_RE.finditer(code):
                if m.group(0).startswith('"@') and not m.group(0).startswith('"@//'):
                    continue  # another repository (@system_libs//...)
                target = m.group(2)
                if target.endswith(":__pkg__") or target.endswith(":__subpackages__"):
                    continue
                yield n, m.group(1).split("/", 1)[0], "//" + m.group(1) + target
        else:
            m = INCLUDE_RE.match(line)
            if m and "/" in m.group(1):
                yield n, m.group(1).split("/", 1)[0], m.group(1)


def check(root):
    """Returns the violation lines for the tree at root, sorted."""
    out = []
    for top in sorted(RANK):
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for d, dirs, files in os.walk(base):
            dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("bazel-"))
            for f in sorted(files):
                if not (f.endswith(SOURCE_EXT) or f in BUILD_NAMES):
                    continue
                path = os.path.join(d, f)
                for n, dst, text in uses(path):
                    if not allowed(top, dst):
                        kind = "sibling" if RANK.get(dst) == RANK[top] else "higher"
                        out.append("%s:%d: layer '%s' uses %s layer '%s' (%s)" %
                                   (os.path.relpath(path, root), n, top, kind, dst, text))
    return out


def order():
    """The layer order as text: 'common < ... < engine, adapters < ...'."""
    ranks = sorted(set(RANK.values()))
    return " < ".join(", ".join(sorted((k for k in RANK if RANK[k] == r), reverse=True))
                      for r in ranks)


def write_junit(path, violations):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    body = ""
    if violations:
        body = '<failure message="%d upward uses">%s</failure>' % (
            len(violations), escape("\n".join(violations)))
    with open(path, "w", encoding="utf-8") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<testsuites><testsuite name="layers" tests="1" failures="%d">'
                '<testcase classname="layers" name="NoUpwardIncludes" status="run">%s'
                '</testcase></testsuite></testsuites>\n' % (1 if violations else 0, body))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--junit", default="")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.root)
    violations = check(root)
    for v in violations:
        print(v)
    if args.junit:
        write_junit(args.junit, violations)
    if violations:
        print("layer check: %d upward use(s); order: %s" % (len(violations), order()))
        return 1
    print("layer check: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
