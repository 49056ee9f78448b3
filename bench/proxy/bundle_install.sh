# Unpacks a bench/proxy/bundle.sh tarball on a bare x86-64 Linux machine, as
# root, and sets this shell up to run the proxy benchmarks there. Source it
# from the repository root (it exports PATH, TZ and CORRAL_PROXY_SERVER_BIN):
#
#   . bench/proxy/bundle_install.sh .devbundle/bundle.tar.xz
#   bash bench/proxy/run.sh
#
# Idempotent: a second source with the same tarball only re-exports. The
# bundle's libraries go behind the machine's own in the loader's search order
# (/etc/ld.so.conf.d/zz-corral-bundle.conf), so the machine's programs keep
# their own libraries; /usr/share/zoneinfo is filled from the bundle only where
# the machine has none; a `postgres` system user is made if missing
# (scripts/pg.sh and PgBouncer run as it under root).
corral_bundle_install() {
  local tarball=$1
  [ "$(id -u)" = 0 ] || { echo "bundle_install: run as root" >&2; return 1; }
  [ -f "$tarball" ] || { echo "bundle_install: no $tarball" >&2; return 1; }
  if [ ! -f /opt/corral-bundle/VERSION ] || [ "$tarball" -nt /opt/corral-bundle/VERSION ]; then
    if command -v xz >/dev/null 2>&1; then
      tar -C / --no-same-owner --no-overwrite-dir -xJf "$tarball" || return 1
    else  # no xz on the machine: Python's lzma reads it
      python3 -c 'import sys, tarfile; t = tarfile.open(sys.argv[1]); t.extractall("/", members=[m for m in t if not m.isdir() or m.name not in ("usr", "opt")])' "$tarball" || return 1
    fi
    touch /opt/corral-bundle/VERSION
  fi
  echo /opt/corral-bundle/lib > /etc/ld.so.conf.d/zz-corral-bundle.conf
  ldconfig
  [ -e /usr/share/zoneinfo/UTC ] || { mkdir -p /usr/share && cp -a /opt/corral-bundle/zoneinfo /usr/share/zoneinfo; }
  command -v pgrep >/dev/null 2>&1 || ln -sf /opt/corral-bundle/bin/pgrep /usr/local/bin/pgrep
  if ! id postgres >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin postgres 2>/dev/null ||
      { echo "postgres:x:999:999::/nonexistent:/usr/sbin/nologin" >> /etc/passwd &&
        echo "postgres:x:999:" >> /etc/group; }
  fi
  export PATH=/usr/lib/postgresql/15/bin:$PATH
  export TZ=UTC
  export CORRAL_PROXY_SERVER_BIN=/opt/corral-bundle/bin/proxy_server
  local missing
  missing=$(for f in /usr/lib/postgresql/15/bin/* /usr/sbin/pgbouncer "$CORRAL_PROXY_SERVER_BIN"; do
    ldd "$f" 2>/dev/null | grep 'not found'; done | sort -u)
  [ -z "$missing" ] || { echo "bundle_install: missing libraries:" >&2; echo "$missing" >&2; return 1; }
  echo "bundle_install: $(cat /opt/corral-bundle/VERSION | head -1); $(postgres --version); $(pgbouncer --version | head -1); nproc $(nproc)" >&2
}
corral_bundle_install "${1:-.devbundle/bundle.tar.xz}"
