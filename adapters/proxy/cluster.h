// Multi-proxy mode (issue 25): several `corral proxy` processes in front of
// one database keep one schedule through the database itself. Each proxy
// (per database, when `cluster_name` is set) runs a ClusterSync: its own
// thread and libpq connection that every publish interval
//   - upserts its hottest references' abort counts (and a heartbeat row,
//     ref_hash 0) into corral.hot_refs, keyed by (cluster_name, proxy_id,
//     ref_hash), creating the schema and table when missing;
//   - reads the other proxies' rows (rows older than a few intervals are
//     stale and ignored), and merges them with its own counts: a reference
//     whose merged abort count reaches `hot_threshold` while at least one
//     live peer exists is "shared-hot".
// Before its first round the sync thread checks that the server's advisory
// locks exclude: it takes a key on its connection and asks for the same key
// from a second connection, which must be refused. Where they do not (the
// no-op stubs of CockroachDB) or do not exist (older YugabyteDB), the
// proxies still share what they learn but take no lock ("sharing-only" in
// SHOW CLUSTER, logged once): a lock that does not exclude would only cost
// round trips.
// With a catalog watch (SetCatalogWatch), a round also reads (at most once
// a second: it costs the server a few ms) a fingerprint of the catalog's
// tables, columns, keys and functions
// (CatalogFingerprintSql); when it changes (and in the first round) the
// sync thread re-reads the catalog schema through the watch and the event
// loops adopt it (schema_version / schema), so DDL (a foreign key added, a
// column renamed) renames references on every proxy within a second or two
// without a RELOAD. The fingerprint rides in this proxy's heartbeat row;
// SHOW CLUSTER shows it and how many live peers publish another one.
// The event loop asks KeysFor(refs) per transaction: the advisory-lock keys
// (the references' 64-bit RefId hashes, sorted, deduplicated) that the
// transaction takes on its backend with session-level pg_advisory_lock
// before its BEGIN / first statement is forwarded, and releases with
// pg_advisory_unlock sent right behind its COMMIT / ROLLBACK (prepared
// statements, ClusterStatementSql; cluster_loop.cc). When the shared table cannot be reached the
// set is empty (local learning only), counted in
// Stats::cluster_sync_failures.
//
//   ClusterSync::Options o;  o.cluster_name = "shop"; o.proxy_id = "p1";
//   ClusterSync sync(o, connect, local_top, &stats);
//   sync.Start();                        // the sync thread
//   std::vector<int64_t> keys;
//   sync.KeysFor(txn.refs, &keys);       // loop thread, per transaction
//   for (k : keys) execute(ClusterStatementSql(ClusterStmt::kLock), k) ... (kUnlock, k);
//   sync.Stop();
//
// Thread safety: KeysFor, View and the counters may be called from any
// thread while the sync thread runs; Start / Stop / SyncOnce from one
// controlling thread (SyncOnce only while the thread is not started).
#ifndef CORRAL_ADAPTERS_PROXY_CLUSTER_H_
#define CORRAL_ADAPTERS_PROXY_CLUSTER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "adapters/pg_connection.h"
#include "adapters/proxy/stats.h"
#include "common/ids.h"
#include "common/tsan_visible_mutex.h"
#include "policies/schema.h"

namespace corral {
namespace proxy {

// One reference's abort count as a proxy publishes it.
struct SharedRef {
  uint64_t hash = 0;  // RefId::value()
  double aborts = 0;
  std::string text;  // display text ("" when unknown)
};

// A peer's published row (SyncOnce's read).
struct PeerRow {
  std::string proxy_id;
  SharedRef ref;  // hash 0: the heartbeat row; kModeRowHash: its lock mode
};
// The ref_hash of the row in which a proxy taking table locks says so.
inline constexpr uint64_t kModeRowHash = 1;

// What SHOW CLUSTER shows of one ClusterSync.
struct ClusterView {
  std::string cluster_name, proxy_id;
  bool shared_ok = false;       // the last round reached the table
  bool locks_ok = true;         // the server's locks of this mode exclude (checked once)
  bool table_locks = false;     // the lock: stripe tables (cluster_lock = table), else advisory
  int lock_mismatch = 0;        // live peers taking the other kind of lock (no locks meanwhile)
  int peers = 0;                // live peers seen in the last round
  int shared_refs = 0;          // distinct references the peers published
  int hot_refs = 0;             // references that take a lock now
  int64_t last_publish_ms = -1;  // ms since the last successful publish; -1 never
  std::string last_error;
  std::string catalog;          // the catalog fingerprint's first 8 hex digits ("" unwatched)
  int catalog_reloads = 0;      // schema re-reads after the first (the catalog changed)
  int catalog_differs = 0;      // live peers whose heartbeat carries another fingerprint
};

// One row, one column: an md5 of the catalog's user tables and columns
// (with types), primary and foreign keys and function signatures, in a
// fixed order; the same catalog gives the same text on every connection.
const char* CatalogFingerprintSql();

// The merge: per reference, the local count plus every live peer's; the
// references at or over `threshold` are hot, none when there is no peer.
absl::flat_hash_set<uint64_t> MergeHot(const std::vector<SharedRef>& local, const std::vector<PeerRow>& peers,
                                       double threshold, int* peer_count, int* shared_refs);

// cluster_lock = table: a key's lock is an EXCLUSIVE-mode LOCK TABLE of
// its stripe, corral.lk_<key mod kLockStripes> (empty tables the sync
// thread creates, with UPDATE granted to PUBLIC: the mode needs it, and
// each client's own user takes it), inside the transaction: LOCK takes no
// snapshot, so sent right after BEGIN it still comes before the
// transaction's first statement's snapshot, and COMMIT / ROLLBACK releases
// it (no unlock statement, nothing left behind). The statement for sorted
// keys: one LOCK TABLE naming their distinct stripes in ascending order
// (taken in that order: no deadlock between proxies).
inline constexpr int kLockStripes = 1024;
// The stripe of `key`: corral.lk_<LockStripe(key)>.
inline int LockStripe(int64_t key) { return static_cast<int>(static_cast<uint64_t>(key) % kLockStripes); }
std::string StripeLockSql(const std::vector<int64_t>& sorted_keys);

// The statements, each prepared once per backend, on one key ($1, bigint):
// kLock takes it, `SELECT CASE WHEN pg_try_advisory_lock($1) THEN 0 ELSE
// (SELECT 1 FROM pg_advisory_lock($1)) END`, one row, 1 when it had to
// wait; kUnlock releases it (pg_advisory_unlock); kTry takes it when it is
// free within `tries` tries of pg_try_advisory_lock a 1 ms sleep apart
// (one row, t or f; for a restarted transaction that holds keys sorting
// after it, restart_loop.cc: it must not wait unbounded, and a holder
// often ends within a few ms). Several keys: one execution each, in
// sorted order.
enum class ClusterStmt { kLock, kUnlock, kTry };
std::string ClusterStatementSql(ClusterStmt kind, int tries = 1);
// The lock key of a reference (its 64-bit hash as PostgreSQL's bigint).
inline int64_t LockKey(RefId r) { return static_cast<int64_t>(r.value()); }

class ClusterSync {
 public:
  struct Options {
    std::string cluster_name;
    std::string proxy_id;
    int64_t publish_interval_ms = 1000;
    double hot_threshold = 3;
    size_t top_k = 64;  // references published per round
    // The catalog watch reads the fingerprint at most this often (its
    // query costs the server a few ms); 0: every round.
    int64_t catalog_watch_ms = 1000;
    // cluster_lock = table (StripeLockSql) instead of advisory locks. Every
    // proxy of a cluster must take the same kind (the two do not exclude
    // each other): the mode rides in a row of its own (ref_hash 1, text
    // "table"), and while a live peer takes the other kind KeysFor gives
    // no key (sharing only, ClusterView::lock_mismatch).
    bool table_locks = false;
  };
  using Connect = std::function<absl::StatusOr<std::unique_ptr<adapters::PgConnection>>()>;
  using LocalTop = std::function<std::vector<SharedRef>(size_t k)>;
  using LoadSchema = std::function<absl::StatusOr<std::shared_ptr<const Schema>>()>;

  // `connect` opens the sync connection; `local_top` gives this proxy's
  // hottest references (the History's, thread-safe); `stats` gets the
  // cluster_* counters.
  ClusterSync(Options o, Connect connect, LocalTop local_top, Stats* stats);
  ~ClusterSync();

  // Before Start: watch the catalog, re-reading the schema with `load` (on
  // the sync thread) when its fingerprint changes.
  void SetCatalogWatch(LoadSchema load) { load_schema_ = std::move(load); }
  // Bumped each time the watch read a schema; 0 before the first.
  uint64_t schema_version() const { return schema_version_.load(std::memory_order_acquire); }
  std::shared_ptr<const Schema> schema() const;

  void Start();
  void Stop();
  // One round: (re)connect, check the locks once, make the table, publish,
  // read, merge.
  absl::Status SyncOnce();

  // The lock keys of refs that are hot now, sorted and distinct (cleared first).
  void KeysFor(const RefVec& refs, std::vector<int64_t>* keys) const;
  ClusterView View() const;
  const Options& options() const { return o_; }

 private:
  void Run();
  absl::Status Round();
  // The advisory-lock check (see above): OK with locks_ok_ set, or an error
  // when the server could not be asked (checked again next round). Table
  // mode: a stripe locked here must refuse a second session's LOCK NOWAIT.
  absl::Status CheckLocks();
  // Each: OK with *refused set when the server's locks do not exclude (or
  // fail), an error when it could not be asked.
  absl::Status CheckAdvisoryLocks(std::string* refused);
  absl::Status CheckTableLocks(std::string* refused);
  // The catalog watch's part of a round: the fingerprint (an error: the
  // round fails), and the schema re-read when it changed (a failed re-read
  // is logged and tried again next round).
  absl::Status WatchCatalog();

  const Options o_;
  Connect connect_;
  LocalTop local_top_;
  Stats& stats_;
  std::unique_ptr<adapters::PgConnection> conn_;  // the sync thread's
  bool table_ready_ = false;
  bool locks_checked_ = false;
  LoadSchema load_schema_;    // set before Start
  std::string catalog_fp_;    // sync thread: the fingerprint of the schema read last
  int64_t catalog_watched_nanos_ = 0;  // sync thread: when it was read (MonoNanos)
  std::atomic<uint64_t> schema_version_{0};

  // TsanVisibleMutex, not absl::Mutex: the TSan pass must see the hand-over.
  mutable TsanVisibleMutex mu_;
  TsanVisibleCondVar stop_cv_;
  absl::flat_hash_set<uint64_t> hot_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const Schema> schema_ ABSL_GUARDED_BY(mu_);
  ClusterView view_ ABSL_GUARDED_BY(mu_);
  int64_t last_publish_nanos_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_CLUSTER_H_
