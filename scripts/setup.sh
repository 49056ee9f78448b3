#!/usr/bin/env bash
# Installs the Debian packages Corral builds and tests with. Idempotent: does
# nothing when everything is already installed; runs `apt-get update` only when
# a package is missing. Needs root (or sudo) on Debian bookworm.
set -euo pipefail

PKGS=(
  bazel-bootstrap      # Bazel 4.2.3 (WORKSPACE mode, offline)
  g++
  pkg-config
  libcuckoo-dev        # concurrent hash maps for History / State
  libabsl-dev          # strings, flags, Status, Mutex, containers
  libgtest-dev         # GoogleTest (static libs)
  libpq-dev            # PostgreSQL client library
  libssl-dev           # md5 for the proxy's password auth (OpenSSL)
  libpg-query-dev      # PostgreSQL's parser as a library
  postgresql-15        # real server for adapter and proxy tests
  postgresql-contrib   # pgbench
  pgbouncer            # the peer in the proxy benchmark
  python3-matplotlib   # plots
  python3-psycopg      # client-driver tests through the proxy (psycopg 3)
  python3-asyncpg      # client-driver tests (binary parameters)
  libpostgresql-jdbc-java  # the PostgreSQL JDBC driver for the Java client tests
  openssl              # test certificates for the TLS instances of tests/drivers
  default-jdk-headless # javac/java for the JDBC client tests
  clang-14             # libFuzzer targets (scripts/fuzz.sh)
  libfuzzer-14-dev
  libclang-rt-14-dev   # ASan/UBSan/libFuzzer runtimes for clang-14
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The pgbouncer package starts a system service on install where systemd runs;
# Corral's benchmark starts its own instance, so stop the packaged one if any.
if command -v service >/dev/null 2>&1; then $SUDO service pgbouncer stop >/dev/null 2>&1 || true; fi
echo "setup: done"
