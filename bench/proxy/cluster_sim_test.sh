#!/usr/bin/env bash
# Runs bench/proxy/cluster_sim.py --check (its model's properties on a short run).
set -euo pipefail
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
exec "$PY" bench/proxy/cluster_sim.py --check
