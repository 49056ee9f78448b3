// Proxy::Loop (see proxy_internal.h): the multi-proxy mode's hooks in the
// event loop (cluster.h). Each Database in a cluster has a ClusterSync
// (its own thread and connection); here, per transaction:
//   - Attach: the keys of its shared-hot references are locked on the
//     backend (session-level pg_advisory_lock, sorted) by a swallowed
//     statement sent before anything of the transaction (attach SQL, held
//     BEGIN, first statement): the server runs them in order, so the
//     snapshot is taken only once the locks are held;
//   - Forward (FoldClusterUnlock): the client's COMMIT / ROLLBACK (a simple
//     Query) is followed in the same write by the swallowed unlock, so the
//     backend is back in the pool one round trip earlier; the client is
//     detached at the COMMIT's ReadyForQuery (IdleButUnlock), the backend
//     is Free only once the unlock's came;
//   - EndTxn / CloseClient: a transaction that ended otherwise (extended
//     protocol, an error outside a block, the client left and the ROLLBACK
//     was sent) unlocks there, before the backend can take the next
//     transaction; an unlock that failed (a cancel that landed on it) is
//     sent again;
//   - FailBackend: the server ended the session, and its locks with it;
//   - restart on a hot key (restart_loop.cc): a transaction rolled back
//     for a key it lacks takes more keys on its backend (LockMoreClusterKeys,
//     TryClusterKeys) before its log runs again.
// cluster_lock = table (TakeTableLocks): instead, a LOCK TABLE of the keys'
// stripes right after BEGIN (the held BEGIN's Query, or a BEGIN of the
// proxy's before a unit that opens its block or an implicit transaction
// it wraps, WrapCommit), released by COMMIT / ROLLBACK; restarts and
// replays take them again after their BEGIN (PrepareTableLock), and a
// template that grows takes advisory keys too (Database::cluster_growing).
// Also SHOW CLUSTER.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "adapters/libpq_connection.h"
#include "adapters/proxy/config.h"
#include "adapters/proxy/proxy_internal.h"
#include "adapters/proxy/wire.h"

namespace corral {
namespace proxy {

namespace {
// A proxy id for this process: host/pid/random.
std::string GeneratedProxyId() {
  char host[256] = {0};
  (void)gethostname(host, sizeof(host) - 1);
  return absl::StrFormat("%s/%d/%08x", host, static_cast<int>(getpid()),
                         static_cast<uint32_t>(std::random_device{}()));
}
bool SameSync(const ClusterSync::Options& a, const ClusterSync::Options& b) {
  return a.cluster_name == b.cluster_name && a.proxy_id == b.proxy_id &&
         a.publish_interval_ms == b.publish_interval_ms && a.hot_threshold == b.hot_threshold &&
         a.table_locks == b.table_locks;
}
}  // namespace

void Proxy::Loop::StartCluster(Database* db) {
  if (opt_.cluster_name.empty()) return;
  ClusterSync::Options o;
  o.cluster_name = opt_.cluster_name;
  o.publish_interval_ms = opt_.cluster_publish_interval_ms;
  o.hot_threshold = opt_.cluster_hot_threshold;
  o.table_locks = opt_.cluster_table_locks;
  const std::string conninfo = absl::StrCat(CatalogConninfo(opt_, db->entry), " connect_timeout=2");
  scheduler::Scheduler* sched = db->sched;
  std::shared_ptr<scheduler::Scheduler> keep = db->shared_sched;  // workers > 1: outlives any one loop's Database
  auto make = [&] {
    auto sync = std::make_shared<ClusterSync>(
        o, [conninfo] { return adapters::ConnectLibpq(conninfo); },
        [sched, keep](size_t k) {
          std::vector<SharedRef> out;
          for (const auto& e : sched->history().TopByAborts(k)) {
            out.push_back({e.ref.value(), static_cast<double>(e.counts.aborts), e.text});
          }
          return out;
        },
        &stats_);
    // Names follow DDL (cluster.h "catalog watch"): a schema given by the
    // configuration instead of the catalog is kept as it is.
    if (db->entry.name != DefaultDatabase(opt_) || opt_.schema_from_catalog) {
      sync->SetCatalogWatch([o = opt_, e = db->entry] { return LoadCatalogFor(o, e); });
    }
    sync->Start();
    return sync;
  };
  if (group_ == nullptr) {
    if (cluster_proxy_id_.empty()) {
      cluster_proxy_id_ = opt_.cluster_proxy_id.empty() ? GeneratedProxyId() : opt_.cluster_proxy_id;
    }
    o.proxy_id = cluster_proxy_id_;
    db->cluster = make();
    return;
  }
  // workers > 1: one proxy id and one ClusterSync per database for the
  // process (the Scheduler it publishes is the loops' shared one; a sync
  // per loop would publish it N times under N ids).
  std::shared_ptr<ClusterSync> old;  // a sync of the config before RELOAD: let go after the lock
  TsanVisibleMutexLock l(&group_->mu);
  if (group_->cluster_proxy_id.empty()) group_->cluster_proxy_id = GeneratedProxyId();
  cluster_proxy_id_ = opt_.cluster_proxy_id.empty() ? group_->cluster_proxy_id : opt_.cluster_proxy_id;
  o.proxy_id = cluster_proxy_id_;
  std::weak_ptr<ClusterSync>& slot = group_->syncs[db->entry.name];
  std::shared_ptr<ClusterSync> sync = slot.lock();
  if (sync == nullptr || !SameSync(sync->options(), o)) {
    old = std::move(sync);
    sync = make();
    slot = sync;
  }
  db->cluster = std::move(sync);
}

void Proxy::Loop::AdoptClusterSchemas() {
  for (auto& [name, db] : dbs_) {
    if (db->cluster == nullptr) continue;
    const uint64_t v = db->cluster->schema_version();
    if (v == db->cluster_schema_version) continue;
    db->cluster_schema_version = v;
    std::shared_ptr<const Schema> schema = db->cluster->schema();
    if (schema == nullptr) continue;
    if (db->sched == &sched_) opt_.schema = schema;  // as RELOAD does
    AdoptSchema(db.get(), std::move(schema));
  }
}

void Proxy::Loop::AdoptSchema(Database* db, std::shared_ptr<const Schema> schema) {
  db->router->SetSchema(std::move(schema));
  for (auto& [c, owned] : clients_) {
    if (c->pool == nullptr || c->pool->db != db) continue;
    for (auto& [name, d] : c->stmts) d.plain_read = -1;
  }
}

void Proxy::Loop::ReloadCluster(const Options& fresh) {
  if (fresh.cluster_name == opt_.cluster_name && fresh.cluster_proxy_id == opt_.cluster_proxy_id &&
      fresh.cluster_publish_interval_ms == opt_.cluster_publish_interval_ms &&
      fresh.cluster_hot_threshold == opt_.cluster_hot_threshold &&
      fresh.cluster_table_locks == opt_.cluster_table_locks) {
    return;  // unchanged: the syncs go on (no round lost)
  }
  // A generated id stays this process's; a configured one is taken anew.
  if (fresh.cluster_proxy_id != opt_.cluster_proxy_id) cluster_proxy_id_.clear();
  // workers > 1: each loop reloads; the first makes each database's next
  // ClusterSync, the others share it (StartCluster), and the old one stops
  // when the last loop drops it.
  opt_.cluster_name = fresh.cluster_name;
  opt_.cluster_proxy_id = fresh.cluster_proxy_id;
  opt_.cluster_publish_interval_ms = fresh.cluster_publish_interval_ms;
  opt_.cluster_hot_threshold = fresh.cluster_hot_threshold;
  opt_.cluster_table_locks = fresh.cluster_table_locks;
  std::fprintf(stderr, "corral proxy: RELOAD: cluster \"%s\"%s\n", opt_.cluster_name.c_str(),
               opt_.cluster_name.empty() ? " (sharing off)" : "");
  for (auto& [name, db] : dbs_) {
    db->cluster.reset();  // stops and joins its sync thread
    StartCluster(db.get());
  }
}

void Proxy::Loop::TakeClusterLocks(Client* c, Backend* b) {
  const ClusterSync* cl = c->pool->db->cluster.get();
  if (cl == nullptr || !b->adv_locks.empty()) return;
  std::vector<int64_t> keys;
  ClusterKeysFor(*cl, c, c->route.txn.refs, &keys);
  if (keys.empty()) return;
  if (cl->options().table_locks) {
    // A block of a template that grows (restart_loop.cc) keeps its keys
    // across a restart's rollback with advisory locks too.
    if (!c->held_begin.empty() && !c->route.trace.empty() &&
        c->pool->db->cluster_growing.contains(c->route.trace[0].shape)) {
      LockMoreClusterKeys(b, keys);
      stats_.cluster_growing_txns++;
    }
    TakeTableLocks(c, b, keys);
    return;
  }
  LockMoreClusterKeys(b, keys);
  stats_.cluster_lock_txns++;
}

void Proxy::Loop::TakeTableLocks(Client* c, Backend* b, const std::vector<int64_t>& keys) {
  // A restart or replay takes them after its BEGIN again (SendReplay).
  if (c->replay.restart) return;
  stats_.cluster_lock_txns++;
  // (A growing template's advisory keys counted them already.)
  if (b->adv_locks.empty()) stats_.cluster_locks_taken += static_cast<int64_t>(keys.size());
  const std::string lock = StripeLockSql(keys);
  b->table_keys = keys;
  if (!c->held_begin.empty()) {
    b->table_lock_sql = lock;  // behind the held BEGIN (SendHeldBegin)
    return;
  }
  if (FirstUnitBegins(c)) {
    // Its own BEGIN comes behind the proxy's: PostgreSQL warns (25001) and
    // applies its modes (no snapshot yet: LOCK takes none).
    b->table_lock_sql = lock;
    b->drop_begin_warning = true;
    return;
  }
  if (b->status == 'I' && FirstUnitWrappable(c)) {
    // An implicit transaction: in the proxy's block, committed right behind
    // it (WrapCommit), as the server would at its Sync.
    b->table_lock_sql = lock;
    b->wrap_pending = true;
    stats_.cluster_wrapped_units++;
    return;
  }
  b->table_keys.clear();
  stats_.cluster_unlocked_units++;
}

void Proxy::Loop::SendTxnStart(Client* c, Backend* b) {
  if (!c->held_begin.empty()) {
    SendHeldBegin(b, c->held_begin);
    c->held_begin.clear();
  } else if (!b->table_lock_sql.empty()) {  // (TakeTableLocks: no held BEGIN, the proxy's own)
    SendHeldBegin(b, "BEGIN");
  }
}

bool Proxy::Loop::FirstUnitBegins(const Client* c) {
  if (c->pending.empty()) return false;
  const Msg& m = c->pending.front();
  if (m.type == 'Q') {
    wire::Reader r(m.body());
    const absl::string_view sql = r.CString();
    return ClassifyTxnControl(sql.substr(0, sql.find(';'))) == TxnControl::kBegin;
  }
  const size_t end = UnitEnd(c->pending);
  return end < c->pending.size() && !RouterOf(c).UnitBegin(c->pending, end, c->stmts).empty();
}

bool Proxy::Loop::FirstUnitWrappable(const Client* c) {
  if (c->pending.empty()) return false;
  const Msg& m = c->pending.front();
  if (m.type == 'Q') {
    wire::Reader r(m.body());
    const absl::string_view sql = WithoutTrailingSemicolons(r.CString());
    return !sql.empty() && sql.find(';') == absl::string_view::npos && !MayEndTxnBlock(sql);
  }
  const size_t end = WholeUnitEnd(c->pending);
  return end != std::string::npos && RouterOf(c).UnitFreeOfTxnControl(c->pending, end, c->stmts);
}

void Proxy::Loop::WrapCommit(Backend* b) {
  b->wrap_pending = false;
  b->batches[b->batches.size() - 2].wrap_unit = true;
  SendInternal(b, "COMMIT");
  Batch& commit = b->batches[b->batches.size() - 2];
  commit.swallow = false;
  commit.wrap_commit = true;
}

void Proxy::Loop::SendHeldBegin(Backend* b, const std::string& begin) {
  if (b->table_lock_sql.empty()) {
    SendInternal(b, begin);
    return;
  }
  SendInternal(b, absl::StrCat(WithoutTrailingSemicolons(begin), "; ", b->table_lock_sql));
  b->batches[b->batches.size() - 2].table_lock = true;
  b->table_lock_sql.clear();
}

bool Proxy::Loop::PrepareTableLock(const Client* c, Backend* b) {
  const ClusterSync* cl = c->pool->db->cluster.get();
  if (cl == nullptr || !cl->options().table_locks) return false;
  std::vector<int64_t> keys;
  ClusterKeysFor(*cl, c, c->route.txn.refs, &keys);
  if (keys.empty()) return false;
  b->table_lock_sql = StripeLockSql(keys);
  b->table_keys = std::move(keys);
  return true;
}

bool Proxy::Loop::HoldsClusterKey(const Backend* b, int64_t k) {
  if (std::binary_search(b->adv_locks.begin(), b->adv_locks.end(), k)) return true;
  return std::any_of(b->table_keys.begin(), b->table_keys.end(),
                     [&](int64_t t) { return LockStripe(t) == LockStripe(k); });
}

void Proxy::Loop::ClusterKeysFor(const ClusterSync& cl, const Client* c, const RefVec& refs,
                                 std::vector<int64_t>* keys) {
  const scheduler::HotSpots* split = c->pool->db->sched->hot_spots();
  if (split == nullptr || split->empty()) {
    cl.KeysFor(refs, keys);
    return;
  }
  RefVec unsplit;
  for (RefId r : refs) {
    if (!split->IsSplit(r)) unsplit.push_back(r);
  }
  cl.KeysFor(unsplit, keys);
}

void Proxy::Loop::ReleaseClusterLocks(Backend* b) {
  if (b->adv_locks.empty() || !b->alive || b->unlock_sent) return;
  SendClusterStatement(b, ClusterStmt::kUnlock, b->adv_locks);
  b->batches[b->batches.size() - 2].cluster_unlock = true;
  b->unlock_sent = true;
}

namespace {
// Adds `more` (sorted, none in it) to the sorted `keys`.
void MergeKeys(std::vector<int64_t>* keys, const std::vector<int64_t>& more) {
  const size_t mid = keys->size();
  keys->insert(keys->end(), more.begin(), more.end());
  std::inplace_merge(keys->begin(), keys->begin() + static_cast<std::ptrdiff_t>(mid), keys->end());
}
}  // namespace

void Proxy::Loop::LockMoreClusterKeys(Backend* b, const std::vector<int64_t>& more) {
  SendClusterStatement(b, ClusterStmt::kLock, more);
  b->batches[b->batches.size() - 2].cluster_lock = true;
  MergeKeys(&b->adv_locks, more);
  stats_.cluster_locks_taken += static_cast<int64_t>(more.size());
  stats_.cluster_locks_held += static_cast<int64_t>(more.size());
}

void Proxy::Loop::TryClusterKeys(Backend* b, const std::vector<int64_t>& more) {
  SendClusterStatement(b, ClusterStmt::kTry, more);
  b->batches[b->batches.size() - 2].cluster_try = true;
  b->try_keys = more;
  b->try_rows = 0;
  b->try_failed.clear();
  // Held from now as far as an unlock is concerned (the client may leave
  // before the rows come; unlocking a key not taken is a WARNING only).
  MergeKeys(&b->adv_locks, more);
  stats_.cluster_locks_held += static_cast<int64_t>(more.size());
}

void Proxy::Loop::SendClusterStatement(Backend* b, ClusterStmt kind, const std::vector<int64_t>& keys) {
  std::string& name = b->cluster_stmts[static_cast<int>(kind)];
  std::string msg;
  const int tries = kind == ClusterStmt::kTry ? opt_.cluster_relock_tries : 1;
  if (kind == ClusterStmt::kTry && b->try_stmt_tries != tries) name.clear();  // RELOAD changed it
  if (name.empty()) {
    if (kind == ClusterStmt::kTry) b->try_stmt_tries = tries;
    static constexpr const char* kPrefix[] = {"corral_lk", "corral_ul", "corral_tk"};
    name = absl::StrCat(kPrefix[static_cast<int>(kind)], ++cluster_stmt_seq_);
    std::string types;
    types.push_back('\0');
    types.push_back('\1');
    for (char ch : {'\0', '\0', '\0', '\x14'}) types.push_back(ch);  // int8 (OID 20)
    wire::AppendParse(&msg, name, ClusterStatementSql(kind, tries), types);
  }
  for (int64_t k : keys) {
    const std::string v = absl::StrCat(k);
    std::string rest;
    rest.append({'\0', '\0', '\0', '\1'});  // no parameter formats (text); one value
    for (int shift = 24; shift >= 0; shift -= 8) rest.push_back(static_cast<char>((v.size() >> shift) & 0xff));
    rest += v;
    rest.append({'\0', '\0'});  // no result formats (text)
    wire::AppendBind(&msg, "", name, rest);
    const size_t at = wire::BeginMessage(&msg, 'E');
    msg.push_back('\0');  // the unnamed portal
    msg.append({'\0', '\0', '\0', '\0'});  // every row
    wire::EndMessage(&msg, at);
  }
  wire::AppendEmpty(&msg, 'S');
  Send(b, msg);
  b->batches.back().swallow = true;
  b->batches.back().msgs++;
  EndBatch(b);
}

void Proxy::Loop::FoldClusterUnlock(Backend* b, absl::string_view sql, bool replay) {
  if (b->adv_locks.empty() || b->unlock_sent || !opt_.cluster_fold_unlock) return;
  const TxnControl tc = ClassifyTxnControl(sql);
  if (tc != TxnControl::kCommit && tc != TxnControl::kRollback) return;
  // Under replay a COMMIT the server fails with 40001 is re-run: its keys
  // must outlive it, so its unlock follows its reply (EndTxn) instead.
  if (replay && tc == TxnControl::kCommit) return;
  ReleaseClusterLocks(b);
  stats_.cluster_unlocks_folded++;
}

void Proxy::Loop::DropClusterLocks(Backend* b) {
  stats_.cluster_locks_held -= static_cast<int64_t>(b->adv_locks.size());
  b->adv_locks.clear();
  b->try_keys.clear();
  b->try_failed.clear();
  b->unlock_sent = false;
  b->unlock_failed = false;
  b->unlock_retries = 0;
}

void Proxy::Loop::OnClusterMessage(Backend* b, const Batch& front, char type, absl::string_view body) {
  if (front.cluster_lock && type == 'D') {
    // One row per key: 1 when pg_try_advisory_lock found it taken.
    wire::Reader r(body);
    if (r.Int16() == 1) {
      const int32_t len = r.Int32();
      if (len == 1 && r.Bytes(1) == "1") stats_.cluster_lock_waits++;
    }
  } else if (front.cluster_try && type == 'D') {
    // One row per key, in order: f when another session holds it.
    wire::Reader r(body);
    if (r.Int16() == 1 && b->try_rows < b->try_keys.size()) {
      const int32_t len = r.Int32();
      if (len == 1 && r.Bytes(1) == "f") b->try_failed.push_back(b->try_keys[b->try_rows]);
      b->try_rows++;
    }
  } else if (type == 'E') {
    // Prepared again under new names next time (the error may have been
    // the Parse's; a name left behind is harmless).
    b->ForgetClusterStatements();
    if (front.cluster_unlock) b->unlock_failed = true;
  }
}

void Proxy::Loop::ClusterBatchDone(Backend* b, const Batch& front) {
  if (front.cluster_try) {
    // Keys whose rows never came (an error, a cancel) were not taken.
    for (size_t i = b->try_rows; i < b->try_keys.size(); ++i) b->try_failed.push_back(b->try_keys[i]);
    stats_.cluster_locks_taken += static_cast<int64_t>(b->try_keys.size() - b->try_failed.size());
    if (!b->unlock_sent) {  // (sent already: it covers them all)
      for (int64_t k : b->try_failed) {
        auto it = std::lower_bound(b->adv_locks.begin(), b->adv_locks.end(), k);
        if (it != b->adv_locks.end() && *it == k) b->adv_locks.erase(it);
        stats_.cluster_locks_held--;
      }
    }
    b->try_keys.clear();  // (try_failed: read by RestartTried)
    return;
  }
  if (!front.cluster_unlock) return;
  if (b->unlock_failed) {
    b->unlock_failed = false;
    b->unlock_sent = false;
    if (++b->unlock_retries > 3) {
      // Last resort (never seen: a cancel lands on an unlock at most once):
      // every session-level advisory lock of this backend goes.
      std::fprintf(stderr, "corral proxy: backend %d: advisory unlock failed 4 times; unlocking all\n", b->index);
      DropClusterLocks(b);
      SendInternal(b, "SELECT pg_advisory_unlock_all()");
      return;
    }
    stats_.cluster_unlock_retries++;
    ReleaseClusterLocks(b);
    return;
  }
  DropClusterLocks(b);
}

AdminTable Proxy::Loop::Cluster() const {
  AdminTable t;
  t.columns = {"database", "cluster_name", "proxy_id",     "state",      "lock",   "peers",        "shared_refs",
               "hot_refs", "last_publish_ms", "locks_held", "locks_taken", "lock_waits", "sync_failures",
               "catalog", "catalog_reloads", "catalog_differs", "last_error"};
  for (const auto& [name, db] : dbs_) {
    if (db->cluster == nullptr) continue;
    const ClusterView v = db->cluster->View();
    const char* state = !v.shared_ok             ? "local-only"
                        : !v.locks_ok            ? "sharing-only"
                        : v.lock_mismatch > 0    ? "lock-mismatch"
                                                 : "ok";
    t.rows.push_back({name, v.cluster_name, v.proxy_id, state, v.table_locks ? "table" : "advisory",
                      std::to_string(v.peers), std::to_string(v.shared_refs), std::to_string(v.hot_refs),
                      std::to_string(v.last_publish_ms), std::to_string(stats_.cluster_locks_held.load()),
                      std::to_string(stats_.cluster_locks_taken.load()),
                      std::to_string(stats_.cluster_lock_waits.load()),
                      std::to_string(stats_.cluster_sync_failures.load()), v.catalog,
                      std::to_string(v.catalog_reloads), std::to_string(v.catalog_differs), v.last_error});
  }
  return t;
}

}  // namespace proxy
}  // namespace corral
