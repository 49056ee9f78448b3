// ClusterSync (cluster.h): the multi-proxy mode's sync thread, the merge of
// the proxies' abort counts, and the advisory-lock statements.
#include "adapters/proxy/cluster.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/clock.h"

namespace corral {
namespace proxy {
namespace {

// An E'' literal: backslashes and quotes escaped, NULs dropped (valid
// whatever standard_conforming_strings says).
std::string Literal(absl::string_view s) {
  std::string out = "E'";
  for (char ch : s) {
    if (ch == '\0') continue;
    if (ch == '\\' || ch == '\'') out.push_back(ch);
    out.push_back(ch);
  }
  out.push_back('\'');
  return out;
}

// Serializes concurrent CREATE ... IF NOT EXISTS of several proxies (which
// can otherwise fail on the catalog's unique indexes).
constexpr int64_t kDdlLockKey = 0x636f7272616c3235;  // "corral25"

// Rows older than this many publish intervals (plus a second) are stale.
constexpr int kStaleIntervals = 3;

// Whether a failed statement of the advisory-lock check says nothing about
// the server's locks: the connection (08), a cancel or statement_timeout on
// a loaded server (57), resources (53), a serialization failure or deadlock
// (40), or none (libpq's own error: the connection). The check then runs again next round; any other error (no such
// function, not supported) means the locks are off for good.
bool Transient(const std::string& sqlstate) {
  if (sqlstate.empty()) return true;  // a client-side error: the connection
  for (const char* c : {"08", "57", "53", "40"}) {
    if (sqlstate.rfind(c, 0) == 0) return true;
  }
  return false;
}

}  // namespace

absl::flat_hash_set<uint64_t> MergeHot(const std::vector<SharedRef>& local, const std::vector<PeerRow>& peers,
                                       double threshold, int* peer_count, int* shared_refs) {
  absl::flat_hash_map<uint64_t, double> merged;
  absl::flat_hash_set<std::string> ids;
  absl::flat_hash_set<uint64_t> from_peers;
  for (const PeerRow& p : peers) {
    ids.insert(p.proxy_id);
    if (p.ref.hash <= kModeRowHash) continue;  // heartbeat, lock mode
    merged[p.ref.hash] += p.ref.aborts;
    from_peers.insert(p.ref.hash);
  }
  for (const SharedRef& r : local) {
    if (r.hash > kModeRowHash) merged[r.hash] += r.aborts;
  }
  if (peer_count != nullptr) *peer_count = static_cast<int>(ids.size());
  if (shared_refs != nullptr) *shared_refs = static_cast<int>(from_peers.size());
  absl::flat_hash_set<uint64_t> hot;
  if (ids.empty()) return hot;  // nobody to coordinate with: the run queues suffice
  for (const auto& [h, n] : merged) {
    if (n >= threshold) hot.insert(h);
  }
  return hot;
}

const char* CatalogFingerprintSql() {
  return "SELECT md5(coalesce(string_agg(x, E'\\n' ORDER BY x), '')) FROM ("
         "SELECT 'c ' || n.nspname || '.' || c.relname || '.' || a.attname || ' ' || a.atttypid::text "
         "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
         "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
         "WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'corral') "
         "AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%' "
         "UNION ALL SELECT 'k ' || co.conrelid::regclass::text || ' ' || co.contype::text || ' ' || "
         "pg_get_constraintdef(co.oid) FROM pg_constraint co JOIN pg_namespace n ON n.oid = co.connamespace "
         "WHERE co.contype IN ('p', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'corral') "
         "AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%' "
         "UNION ALL SELECT 'f ' || n.nspname || '.' || p.proname || '(' || "
         "coalesce(array_to_string(p.proargnames, ','), '') || ')' FROM pg_proc p "
         "JOIN pg_namespace n ON n.oid = p.pronamespace "
         "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'corral') "
         "AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%') s(x)";
}

std::string StripeLockSql(const std::vector<int64_t>& sorted_keys) {
  std::vector<int> stripes;
  stripes.reserve(sorted_keys.size());
  for (int64_t k : sorted_keys) stripes.push_back(LockStripe(k));
  std::sort(stripes.begin(), stripes.end());
  stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
  std::string sql = "LOCK TABLE ";
  for (size_t i = 0; i < stripes.size(); ++i) absl::StrAppend(&sql, i == 0 ? "" : ", ", "corral.lk_", stripes[i]);
  sql += " IN EXCLUSIVE MODE";
  return sql;
}

std::string ClusterStatementSql(ClusterStmt kind, int tries) {
  switch (kind) {
    case ClusterStmt::kLock:
      return "SELECT CASE WHEN pg_try_advisory_lock($1) THEN 0 ELSE (SELECT 1 FROM pg_advisory_lock($1)) END";
    case ClusterStmt::kUnlock:
      return "SELECT pg_advisory_unlock($1)";
    case ClusterStmt::kTry:
      break;
  }
  if (tries <= 1) return "SELECT pg_try_advisory_lock($1)";
  // CASE orders the sleep before the try, `g * 0` makes the sleep a
  // per-row subplan (not an InitPlan run once), EXISTS stops at the first
  // success; one row, t or f.
  return absl::StrCat("SELECT EXISTS (SELECT 1 FROM generate_series(1, ", tries,
                      ") g WHERE CASE WHEN g = 1 THEN pg_try_advisory_lock($1) ELSE (SELECT pg_try_advisory_lock($1) "
                      "FROM pg_sleep(g * 0 + 0.001)) END)");
}

ClusterSync::ClusterSync(Options o, Connect connect, LocalTop local_top, Stats* stats)
    : o_(std::move(o)), connect_(std::move(connect)), local_top_(std::move(local_top)), stats_(*stats) {
  TsanVisibleMutexLock l(&mu_);
  view_.cluster_name = o_.cluster_name;
  view_.proxy_id = o_.proxy_id;
  view_.table_locks = o_.table_locks;
}

ClusterSync::~ClusterSync() { Stop(); }

void ClusterSync::Start() {
  if (thread_.joinable()) return;
  {
    TsanVisibleMutexLock l(&mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Run(); });
}

void ClusterSync::Stop() {
  {
    TsanVisibleMutexLock l(&mu_);
    stop_ = true;
  }
  stop_cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void ClusterSync::Run() {
  for (;;) {
    (void)SyncOnce();
    const int64_t until = MonoNanos() + o_.publish_interval_ms * 1000000;
    TsanVisibleMutexLock l(&mu_);
    while (!stop_ && MonoNanos() < until) {
      stop_cv_.WaitWithTimeout(&mu_, std::chrono::nanoseconds(until - MonoNanos()));
    }
    if (stop_) return;
  }
}

absl::Status ClusterSync::SyncOnce() {
  absl::Status st = Round();
  TsanVisibleMutexLock l(&mu_);
  if (st.ok() != view_.shared_ok || (!st.ok() && view_.last_error.empty())) {
    // Transitions only: a server that stays down logs once.
    std::fprintf(stderr, "corral proxy: cluster \"%s\": %s\n", o_.cluster_name.c_str(),
                 st.ok() ? "shared table reached" : absl::StrCat(st.message(), " (local learning only)").c_str());
  }
  view_.shared_ok = st.ok();
  if (!st.ok()) {
    // Local learning only: no peer is known, so no lock is taken.
    stats_.cluster_sync_failures++;
    hot_.clear();
    view_.peers = 0;
    view_.shared_refs = 0;
    view_.hot_refs = 0;
    view_.last_error = std::string(st.message());
    conn_.reset();  // reconnect next round
    table_ready_ = false;
  } else {
    view_.last_error.clear();
  }
  view_.last_publish_ms = last_publish_nanos_ == 0 ? -1 : (MonoNanos() - last_publish_nanos_) / 1000000;
  return st;
}

absl::Status ClusterSync::Round() {
  if (conn_ == nullptr || !conn_->connected()) {
    table_ready_ = false;
    auto c = connect_();
    if (!c.ok()) return c.status();
    conn_ = std::move(*c);
    // A round must not hang the thread past a few intervals.
    const int64_t timeout = std::max<int64_t>(1000, 2 * o_.publish_interval_ms);
    adapters::PgResult r = conn_->Exec(absl::StrCat("SET statement_timeout = ", timeout,
                                                    "; SET lock_timeout = ", timeout));
    if (!r.ok()) return r.ToStatus("setting the sync connection's timeouts");
  }
  // (Table locks are checked on a stripe: once the stripes exist.)
  if (!locks_checked_ && !o_.table_locks) {
    absl::Status st = CheckLocks();
    if (!st.ok()) return st;
  }
  if (!table_ready_) {
    adapters::PgResult r = conn_->Exec(absl::StrCat(
        "BEGIN; SELECT pg_advisory_xact_lock(", kDdlLockKey,
        "); CREATE SCHEMA IF NOT EXISTS corral; "
        "CREATE TABLE IF NOT EXISTS corral.hot_refs (cluster_name text NOT NULL, proxy_id text NOT NULL, "
        "ref_hash bigint NOT NULL, aborts double precision NOT NULL, ref_text text NOT NULL DEFAULT '', "
        "updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (cluster_name, proxy_id, ref_hash)); ",
        // Table mode: the stripes, which every client's user may lock.
        o_.table_locks ? absl::StrCat("GRANT USAGE ON SCHEMA corral TO PUBLIC; DO $$ BEGIN FOR i IN 0..",
                                      kLockStripes - 1,
                                      " LOOP EXECUTE format('CREATE TABLE IF NOT EXISTS corral.lk_%s (); "
                                      "GRANT UPDATE ON corral.lk_%s TO PUBLIC', i, i); END LOOP; END $$; ")
                       : std::string(),
        "COMMIT"));
    if (!r.ok()) {
      (void)conn_->Exec("ROLLBACK");
      return r.ToStatus("creating corral.hot_refs");
    }
    table_ready_ = true;
  }
  if (!locks_checked_) {
    absl::Status st = CheckLocks();
    if (!st.ok()) return st;
  }
  // The catalog's fingerprint costs the server a few ms (every relation,
  // column, key and function): read at most once a second, not each round
  // (4 proxies at a 200 ms interval: ~3 us of server CPU per pgbench -S read).
  if (load_schema_ &&
      (catalog_fp_.empty() || MonoNanos() - catalog_watched_nanos_ >= o_.catalog_watch_ms * 1000000)) {
    absl::Status st = WatchCatalog();
    if (!st.ok()) return st;
    catalog_watched_nanos_ = MonoNanos();
  }
  const std::vector<SharedRef> local = local_top_(o_.top_k);
  const std::string cluster = Literal(o_.cluster_name);
  const std::string me = Literal(o_.proxy_id);
  // Publish: the heartbeat (its text: the catalog fingerprint) and every
  // reference with aborts, one implicit transaction (now() is the round's),
  // then this proxy's older rows go.
  std::string sql = absl::StrCat(
      "INSERT INTO corral.hot_refs (cluster_name, proxy_id, ref_hash, aborts, ref_text, updated_at) VALUES (",
      cluster, ", ", me, ", 0, 0, ", Literal(catalog_fp_), ", now())");
  if (o_.table_locks) absl::StrAppend(&sql, ", (", cluster, ", ", me, ", ", kModeRowHash, ", 0, 'table', now())");
  for (const SharedRef& r : local) {
    if (r.hash == 0 || r.aborts <= 0) continue;
    absl::StrAppend(&sql, ", (", cluster, ", ", me, ", ", static_cast<int64_t>(r.hash), ", ", r.aborts, ", ",
                    Literal(r.text.substr(0, 200)), ", now())");
  }
  absl::StrAppend(&sql,
                  " ON CONFLICT (cluster_name, proxy_id, ref_hash) DO UPDATE SET aborts = EXCLUDED.aborts, "
                  "ref_text = EXCLUDED.ref_text, updated_at = EXCLUDED.updated_at; "
                  "DELETE FROM corral.hot_refs WHERE cluster_name = ",
                  cluster, " AND proxy_id = ", me,
                  " AND updated_at < now(); "
                  // A proxy that stopped leaves its rows; an hour later they go.
                  "DELETE FROM corral.hot_refs WHERE cluster_name = ",
                  cluster, " AND updated_at < now() - interval '1 hour'");
  adapters::PgResult pub = conn_->Exec(sql);
  if (!pub.ok()) return pub.ToStatus("publishing to corral.hot_refs");
  stats_.cluster_publishes++;
  {
    TsanVisibleMutexLock l(&mu_);
    last_publish_nanos_ = MonoNanos();
  }
  const int64_t stale_ms = kStaleIntervals * o_.publish_interval_ms + 1000;
  adapters::PgResult rd = conn_->Exec(absl::StrCat(
      "SELECT proxy_id, ref_hash, aborts, ref_text FROM corral.hot_refs WHERE cluster_name = ", cluster,
      " AND proxy_id <> ", me, " AND updated_at > now() - interval '", stale_ms, " milliseconds'"));
  if (!rd.ok()) return rd.ToStatus("reading corral.hot_refs");
  std::vector<PeerRow> peers;
  peers.reserve(rd.num_rows());
  for (int i = 0; i < rd.num_rows(); ++i) {
    PeerRow p;
    p.proxy_id = rd.Get(i, 0);
    auto h = rd.GetInt(i, 1);
    auto a = rd.GetDouble(i, 2);
    if (!h.ok() || !a.ok()) continue;
    p.ref.hash = static_cast<uint64_t>(*h);
    p.ref.aborts = *a;
    p.ref.text = rd.Get(i, 3);
    peers.push_back(std::move(p));
  }
  int peer_count = 0, shared = 0;
  absl::flat_hash_set<uint64_t> hot = MergeHot(local, peers, o_.hot_threshold, &peer_count, &shared);
  int differs = 0;
  if (!catalog_fp_.empty()) {
    for (const PeerRow& p : peers) differs += p.ref.hash == 0 && !p.ref.text.empty() && p.ref.text != catalog_fp_;
  }
  // Peers that take the other kind of lock (a proxy without the mode row
  // takes advisory locks, as before the mode existed).
  absl::flat_hash_set<std::string> live, table;
  for (const PeerRow& p : peers) {
    live.insert(p.proxy_id);
    if (p.ref.hash == kModeRowHash && p.ref.text == "table") table.insert(p.proxy_id);
  }
  const int mismatch = static_cast<int>(o_.table_locks ? live.size() - table.size() : table.size());
  TsanVisibleMutexLock l(&mu_);
  if (mismatch > 0 && view_.lock_mismatch == 0) {
    std::fprintf(stderr,
                 "corral proxy: cluster \"%s\": %d live peer(s) take %s locks, this proxy %s: taking no locks "
                 "until they agree (cluster_lock)\n",
                 o_.cluster_name.c_str(), mismatch, o_.table_locks ? "advisory" : "table",
                 o_.table_locks ? "table" : "advisory");
  }
  view_.lock_mismatch = mismatch;
  hot_ = std::move(hot);
  view_.peers = peer_count;
  view_.shared_refs = shared;
  view_.hot_refs = static_cast<int>(hot_.size());
  view_.catalog_differs = differs;
  return absl::OkStatus();
}

absl::Status ClusterSync::WatchCatalog() {
  adapters::PgResult fp = conn_->Exec(CatalogFingerprintSql());
  if (!fp.ok() && Transient(fp.sqlstate())) return fp.ToStatus("reading the catalog fingerprint");
  if (!fp.ok()) {
    // A server that cannot answer it (a catalog function it lacks): names
    // stay as read at start (RELOAD re-reads them); sharing goes on.
    std::fprintf(stderr, "corral proxy: cluster \"%s\": %s; the catalog is not watched\n", o_.cluster_name.c_str(),
                 std::string(fp.ToStatus("reading the catalog fingerprint").message()).c_str());
    load_schema_ = nullptr;
    return absl::OkStatus();
  }
  if (fp.num_rows() != 1 || fp.Get(0, 0).empty()) return absl::OkStatus();  // nothing to compare
  const std::string now = fp.Get(0, 0);
  if (now == catalog_fp_) return absl::OkStatus();
  absl::StatusOr<std::shared_ptr<const Schema>> schema = load_schema_();
  if (!schema.ok()) {
    // The names stay as they are; the round goes on (sharing and locks do
    // not depend on it) and the re-read is tried again next round.
    std::fprintf(stderr, "corral proxy: cluster \"%s\": re-reading the catalog schema: %s\n",
                 o_.cluster_name.c_str(), std::string(schema.status().message()).c_str());
    return absl::OkStatus();
  }
  const bool first = catalog_fp_.empty();
  catalog_fp_ = now;
  {
    TsanVisibleMutexLock l(&mu_);
    schema_ = std::move(*schema);
    view_.catalog = now.substr(0, 8);
    if (!first) ++view_.catalog_reloads;
  }
  schema_version_.fetch_add(1, std::memory_order_release);
  if (!first) {
    std::fprintf(stderr, "corral proxy: cluster \"%s\": the catalog changed; references renamed from now on\n",
                 o_.cluster_name.c_str());
  }
  return absl::OkStatus();
}

std::shared_ptr<const Schema> ClusterSync::schema() const {
  TsanVisibleMutexLock l(&mu_);
  return schema_;
}

absl::Status ClusterSync::CheckTableLocks(std::string* refused) {
  // A stripe of this proxy's own choosing, held here in a block (a peer's
  // transaction holding it makes this wait, within lock_timeout), must
  // refuse a second session's LOCK ... NOWAIT with 55P03.
  const int64_t key = static_cast<int64_t>(std::hash<std::string>()(o_.proxy_id));
  const std::string lock = StripeLockSql({key});
  adapters::PgResult mine = conn_->Exec("BEGIN");
  if (mine.ok()) mine = conn_->Exec(lock);
  if (!mine.ok()) {
    (void)conn_->Exec("ROLLBACK");
    if (Transient(mine.sqlstate()) || mine.sqlstate() == "55P03") return mine.ToStatus("checking table locks");
    *refused = absl::StrCat("LOCK TABLE failed: ", mine.ToStatus("").message());
    return absl::OkStatus();
  }
  auto other = connect_();
  if (!other.ok()) {
    (void)conn_->Exec("ROLLBACK");
    return other.status();
  }
  adapters::PgResult theirs = (*other)->Exec("BEGIN");
  if (theirs.ok()) theirs = (*other)->Exec(absl::StrCat(lock, " NOWAIT"));
  (void)(*other)->Exec("ROLLBACK");
  adapters::PgResult done = conn_->Exec("ROLLBACK");
  if (theirs.ok()) {
    *refused = "a second session got the same stripe's LOCK TABLE (the server's table locks do not exclude)";
  } else if (theirs.sqlstate() != "55P03") {
    if (Transient(theirs.sqlstate())) return theirs.ToStatus("checking table locks");
    *refused = absl::StrCat("a second session's LOCK TABLE NOWAIT failed: ", theirs.ToStatus("").message());
  }
  if (!done.ok()) return done.ToStatus("checking table locks");
  return absl::OkStatus();
}

absl::Status ClusterSync::CheckLocks() {
  std::string refused;  // why locks are off ("" = they exclude)
  absl::Status st = o_.table_locks ? CheckTableLocks(&refused) : CheckAdvisoryLocks(&refused);
  if (!st.ok()) return st;
  locks_checked_ = true;
  TsanVisibleMutexLock l(&mu_);
  view_.locks_ok = refused.empty();
  if (!refused.empty()) {
    std::fprintf(stderr, "corral proxy: cluster \"%s\": %s; sharing references, taking no locks\n",
                 o_.cluster_name.c_str(), refused.c_str());
  }
  return absl::OkStatus();
}

absl::Status ClusterSync::CheckAdvisoryLocks(std::string* refused_out) {
  std::string& refused = *refused_out;
  // A key of this proxy's own (two proxies checking at once do not meet).
  const int64_t key = static_cast<int64_t>(std::hash<std::string>()(o_.proxy_id) ^ 0x436f7272616c4c6bULL);
  const std::string try_sql = absl::StrCat("SELECT pg_try_advisory_lock(", key, ")");
  adapters::PgResult mine = conn_->Exec(try_sql);
  if (!mine.ok() && Transient(mine.sqlstate())) return mine.ToStatus("checking advisory locks");
  if (!mine.ok()) {
    refused = absl::StrCat("pg_try_advisory_lock failed: ", mine.ToStatus("").message());
  } else if (mine.num_rows() != 1 || mine.Get(0, 0) != "t") {
    return absl::UnavailableError("checking advisory locks: this proxy's check key is taken; again next round");
  } else {
    auto other = connect_();
    if (!other.ok()) {
      (void)conn_->Exec(absl::StrCat("SELECT pg_advisory_unlock(", key, ")"));
      return other.status();
    }
    adapters::PgResult theirs = (*other)->Exec(try_sql);
    if (!theirs.ok() && Transient(theirs.sqlstate())) {
      (void)conn_->Exec(absl::StrCat("SELECT pg_advisory_unlock(", key, ")"));
      return theirs.ToStatus("checking advisory locks");
    }
    if (!theirs.ok()) {
      refused = absl::StrCat("a second session's pg_try_advisory_lock failed: ", theirs.ToStatus("").message());
    } else if (theirs.num_rows() == 1 && theirs.Get(0, 0) == "t") {
      refused = "a second session got the same advisory lock (the server's advisory locks do not exclude)";
      (void)(*other)->Exec(absl::StrCat("SELECT pg_advisory_unlock(", key, ")"));
    }
    adapters::PgResult un = conn_->Exec(absl::StrCat("SELECT pg_advisory_unlock(", key, ")"));
    if (!un.ok()) return un.ToStatus("checking advisory locks");
  }
  return absl::OkStatus();
}

void ClusterSync::KeysFor(const RefVec& refs, std::vector<int64_t>* keys) const {
  keys->clear();
  {
    TsanVisibleMutexLock l(&mu_);
    if (hot_.empty() || !view_.locks_ok || view_.lock_mismatch > 0) return;
    for (RefId r : refs) {
      if (hot_.contains(r.value())) keys->push_back(LockKey(r));
    }
  }
  if (keys->size() > 1) {
    std::sort(keys->begin(), keys->end());
    keys->erase(std::unique(keys->begin(), keys->end()), keys->end());
  }
}

ClusterView ClusterSync::View() const {
  TsanVisibleMutexLock l(&mu_);
  ClusterView v = view_;
  v.last_publish_ms = last_publish_nanos_ == 0 ? -1 : (MonoNanos() - last_publish_nanos_) / 1000000;
  return v;
}

}  // namespace proxy
}  // namespace corral
