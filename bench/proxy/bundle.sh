#!/usr/bin/env bash
# Packs what the proxy benchmarks (run.sh, multi.sh, workers_ab.sh) and the
# engine's `corral bench` need into
# one tarball, to run them on a bigger x86-64 Linux machine that has no
# Bazel, PostgreSQL or PgBouncer and cannot install packages (e.g. a lent
# many-core machine with no network): the -c opt proxy_server and corral built here,
# this Debian box's PostgreSQL 15 (server, initdb, pg_ctl, psql, pgbench and
# its extension libraries, JIT left out), PgBouncer, pgrep, the time zone
# files, and every shared library these link against except the C runtime
# (glibc, libstdc++, libgcc_s: the target's own, which must be as new as
# this box's, glibc 2.36).
#
#   bash bench/proxy/bundle.sh .devbundle/bundle.tar.xz      # here
#   # there, as root, in a checkout of the same commit:
#   . bench/proxy/bundle_install.sh .devbundle/bundle.tar.xz
#   CLIENTS=64 POOL=32 PGBENCH_JOBS=8 bash bench/proxy/run.sh
#
# The tarball holds absolute paths under /usr/lib/postgresql/15,
# /usr/share/postgresql/15 and /usr/sbin/pgbouncer (where PostgreSQL's
# relocation and lib.sh look) and /opt/corral-bundle (libraries, proxy_server,
# pgrep, zoneinfo); bundle_install.sh unpacks it and registers the libraries
# behind the target's own (a soname the target has is taken from the target).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUTF=${1:?usage: bundle.sh OUT.tar.xz}
PGDIR=/usr/lib/postgresql/15
. bench/proxy/lib.sh
SERVER_BIN=$(proxy_server_bin) || { echo "bundle.sh: build of proxy_server failed" >&2; exit 1; }
stage=$(mktemp -d /tmp/corral-bundle.XXXXXX)
trap 'rm -rf "$stage"' EXIT
r=$stage/root
mkdir -p "$r$PGDIR/bin" "$r$PGDIR/lib" "$r/usr/share/postgresql" "$r/usr/sbin" \
  "$r/opt/corral-bundle/lib" "$r/opt/corral-bundle/bin"
for b in postgres initdb pg_ctl psql pgbench pg_isready; do cp -a "$PGDIR/bin/$b" "$r$PGDIR/bin/"; done
ln -sf postgres "$r$PGDIR/bin/postmaster"
(cd "$PGDIR/lib" && find . -maxdepth 1 -name '*.so' ! -name 'llvmjit*' -exec cp -a {} "$r$PGDIR/lib/" \;)
cp -a /usr/share/postgresql/15 "$r/usr/share/postgresql/"
cp -a /usr/sbin/pgbouncer "$r/usr/sbin/"
install -m 755 "$SERVER_BIN" "$r/opt/corral-bundle/bin/proxy_server"
strip "$r/opt/corral-bundle/bin/proxy_server"
# The CLI too (engine runs: `corral bench` / `corral experiment` with CORRAL_ROOT at a checkout).
bazel${CORRAL_BAZEL_OUTPUT_BASE:+ --output_base=$CORRAL_BAZEL_OUTPUT_BASE} build -c opt //cli:corral >/dev/null 2>&1 ||
  { echo "bundle.sh: build of corral failed" >&2; exit 1; }
install -m 755 "$(bazel${CORRAL_BAZEL_OUTPUT_BASE:+ --output_base=$CORRAL_BAZEL_OUTPUT_BASE} info -c opt bazel-bin 2>/dev/null)/cli/corral" \
  "$r/opt/corral-bundle/bin/corral"
strip "$r/opt/corral-bundle/bin/corral"
cp -a "$(command -v pgrep)" "$r/opt/corral-bundle/bin/"
cp -a /usr/share/zoneinfo "$r/opt/corral-bundle/zoneinfo"
# Every library the ELF files above need, but the C runtime's.
find "$r" -type f \( -perm -u+x -o -name '*.so' \) -print0 |
  xargs -0 -n1 sh -c 'file -b "$0" | grep -q ELF && ldd "$0" 2>/dev/null || true' |
  awk '$3 ~ /^\// { print $3 }' | sort -u |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux[^/]*|libgcc_s|libstdc\+\+)\.so' |
  while read -r lib; do cp -L "$lib" "$r/opt/corral-bundle/lib/"; done
echo "built from $(git rev-parse --short HEAD) on $(hostname) $(date -u +%FT%TZ)" > "$r/opt/corral-bundle/VERSION"
mkdir -p "$(dirname "$OUTF")"
tar -C "$r" -cJf "$OUTF" usr opt
echo "bundle.sh: $OUTF $(du -h "$OUTF" | cut -f1) ($(ls "$r/opt/corral-bundle/lib" | wc -l) libraries)" >&2
