#include "adapters/proxy/cluster.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "adapters/fake_pg_connection.h"
#include "gtest/gtest.h"

namespace corral {
namespace proxy {
namespace {

using adapters::FakePgConnection;
using adapters::PgConnection;
using adapters::PgResult;

TEST(MergeHotTest, NoPeerNoLock) {
  int peers = -1, shared = -1;
  auto hot = MergeHot({{42, 100, "k=1"}}, {}, 3, &peers, &shared);
  EXPECT_TRUE(hot.empty());
  EXPECT_EQ(peers, 0);
  EXPECT_EQ(shared, 0);
}

TEST(MergeHotTest, SumsLocalAndPeersOverThreshold) {
  std::vector<PeerRow> rows = {{"b", {0, 0, ""}},       // b's heartbeat
                               {"b", {7, 2, "k=7"}},
                               {"c", {7, 1.5, "k=7"}},  // 3.5 with b's
                               {"c", {8, 1, "k=8"}}};
  int peers = 0, shared = 0;
  auto hot = MergeHot({{9, 2, "k=9"}, {8, 1, "k=8"}}, rows, 3, &peers, &shared);
  EXPECT_EQ(peers, 2);
  EXPECT_EQ(shared, 2);  // 7 and 8
  EXPECT_TRUE(hot.contains(7));
  EXPECT_FALSE(hot.contains(8));  // 2 < 3
  EXPECT_FALSE(hot.contains(9));  // local 2 only
  // A reference only this proxy learned is hot once a peer exists.
  hot = MergeHot({{9, 5, "k=9"}}, {{"b", {0, 0, ""}}}, 3, &peers, &shared);
  EXPECT_TRUE(hot.contains(9));
}

TEST(ClusterStatementSqlTest, OneKeyParameter) {
  const std::string lock = ClusterStatementSql(ClusterStmt::kLock);
  EXPECT_TRUE(absl::StrContains(lock, "pg_try_advisory_lock($1)"));
  EXPECT_TRUE(absl::StrContains(lock, "pg_advisory_lock($1)"));
  EXPECT_EQ(ClusterStatementSql(ClusterStmt::kUnlock), "SELECT pg_advisory_unlock($1)");
  EXPECT_EQ(ClusterStatementSql(ClusterStmt::kTry, 1), "SELECT pg_try_advisory_lock($1)");
  const std::string try_lock = ClusterStatementSql(ClusterStmt::kTry, 5);
  EXPECT_TRUE(absl::StrContains(try_lock, "pg_try_advisory_lock($1)"));
  EXPECT_TRUE(absl::StrContains(try_lock, "generate_series(1, 5)"));
  EXPECT_FALSE(absl::StrContains(try_lock, "pg_advisory_lock("));  // bounded: never waits in the lock manager
}

// A fake server for the sync connection: answers the peers' read with
// `peer_rows` and records the statements. Advisory locks as `locks` says:
// "exclude" (PostgreSQL's), "no-op" (stubs that grant every request, as
// CockroachDB's) or "missing" (an error, as where they are not implemented).
// `lock_timeouts`: that many advisory-lock calls fail first with a
// statement timeout (a loaded server).
struct FakeServer {
  int lock_timeouts = 0;
  std::vector<std::vector<absl::optional<std::string>>> peer_rows;
  FakePgConnection* conn = nullptr;  // the connection that last published
  bool refuse = false;
  std::string locks = "exclude";
  std::map<std::string, int> held;  // key -> holding connection
  int connections = 0;
  std::string catalog_fp;  // the catalog fingerprint query's answer ("" = no row)
  ClusterSync::Connect Connect() {
    return [this]() -> absl::StatusOr<std::unique_ptr<PgConnection>> {
      if (refuse) return absl::UnavailableError("connection refused");
      auto c = std::make_unique<FakePgConnection>();
      const int id = ++connections;
      FakePgConnection* self = c.get();
      c->SetResponder([this, id, self](absl::string_view sql, auto) {
        if (absl::StartsWith(sql, "SELECT proxy_id")) {
          return PgResult::Rows({"proxy_id", "ref_hash", "aborts", "ref_text"}, peer_rows);
        }
        if (sql == CatalogFingerprintSql()) {
          if (catalog_fp.empty()) return PgResult::Rows({"md5"}, {});
          return PgResult::Rows({"md5"}, {{catalog_fp}});
        }
        if (absl::StrContains(sql, "INSERT INTO corral.hot_refs")) conn = self;
        // Table locks (the check's second session asks with NOWAIT; one
        // holder at a time, as the check needs it).
        if (absl::StrContains(sql, "LOCK TABLE") && absl::StrContains(sql, "NOWAIT") && locks == "exclude") {
          return PgResult::Error("55P03", "could not obtain lock on relation");
        }
        for (const char* fn : {"pg_try_advisory_lock(", "pg_advisory_unlock("}) {
          const size_t at = sql.find(fn);
          if (at == absl::string_view::npos) continue;
          if (locks == "missing") return PgResult::Error("42883", "function does not exist");
          if (lock_timeouts > 0) {
            --lock_timeouts;
            return PgResult::Error("57014", "canceling statement due to statement timeout");
          }
          const size_t from = at + strlen(fn);
          const std::string key(sql.substr(from, sql.find(')', from) - from));
          bool granted = true;
          if (fn[3] == 't') {  // pg_try_advisory_lock
            auto it = held.find(key);
            granted = locks == "no-op" || it == held.end() || it->second == id;
            if (granted) held[key] = id;
          } else {
            held.erase(key);
          }
          return PgResult::Rows({"r"}, {{std::string(granted ? "t" : "f")}});
        }
        return PgResult::Ok("OK");
      });
      return std::unique_ptr<PgConnection>(std::move(c));
    };
  }
};

ClusterSync::Options Opts() {
  ClusterSync::Options o;
  o.cluster_name = "c'1";
  o.proxy_id = "me";
  o.hot_threshold = 3;
  return o;
}

TEST(ClusterSyncTest, PublishesReadsAndLocksSortedKeys) {
  FakeServer server;
  server.peer_rows = {{std::string("peer"), std::string("0"), std::string("0"), std::string("")},
                      {std::string("peer"), std::string("-9"), std::string("4"), std::string("k=1")},
                      {std::string("peer"), std::string("5"), std::string("1"), std::string("k=2")}};
  Stats stats;
  ClusterSync sync(Opts(), server.Connect(), [](size_t) { return std::vector<SharedRef>{{5, 2.5, "k=2"}}; },
                   &stats);
  ASSERT_TRUE(sync.SyncOnce().ok());
  EXPECT_EQ(stats.cluster_publishes.load(), 1);
  bool published = false;
  for (const std::string& s : server.conn->log()) {
    // The cluster name is quoted; this proxy's count of 5 goes out.
    if (absl::StrContains(s, "INSERT INTO corral.hot_refs") && absl::StrContains(s, "E'c''1'") &&
        absl::StrContains(s, ", 5, 2.5,")) {
      published = true;
    }
  }
  EXPECT_TRUE(published);
  const ClusterView v = sync.View();
  EXPECT_TRUE(v.shared_ok);
  EXPECT_EQ(v.peers, 1);
  EXPECT_EQ(v.shared_refs, 2);
  EXPECT_EQ(v.hot_refs, 2);  // -9 (4) and 5 (1 + 2.5)
  RefVec refs = {RefId(5), RefId(77), RefId(static_cast<uint64_t>(int64_t{-9})), RefId(5)};
  std::vector<int64_t> keys;
  sync.KeysFor(refs, &keys);
  EXPECT_EQ(keys, (std::vector<int64_t>{-9, 5}));
}

// The catalog watch: the schema is read in the first round and again only
// when the fingerprint changes; the heartbeat carries the fingerprint and
// peers publishing another one are counted; a failed re-read keeps the
// old schema and is tried again, the round itself succeeds.
TEST(ClusterSyncTest, CatalogWatchReReadsTheSchemaWhenTheFingerprintChanges) {
  FakeServer server;
  server.catalog_fp = "aaaaaaaa11112222";
  Stats stats;
  ClusterSync::Options o = Opts();
  o.catalog_watch_ms = 0;  // every round
  ClusterSync sync(o, server.Connect(), [](size_t) { return std::vector<SharedRef>{}; }, &stats);
  int loads = 0;
  bool fail_load = false;
  sync.SetCatalogWatch([&]() -> absl::StatusOr<std::shared_ptr<const Schema>> {
    if (fail_load) return absl::UnavailableError("catalog unreachable");
    ++loads;
    SchemaBuilder b;
    EXPECT_TRUE(b.AddTable(absl::StrCat("t", loads), {{"k", TypeClass::kNumeric}}).ok());
    return b.Build();
  });
  EXPECT_EQ(sync.schema_version(), 0u);
  ASSERT_TRUE(sync.SyncOnce().ok());
  EXPECT_EQ(loads, 1);
  EXPECT_EQ(sync.schema_version(), 1u);
  ASSERT_NE(sync.schema(), nullptr);
  EXPECT_TRUE(sync.schema()->HasTable("t1"));
  bool heartbeat = false;
  for (const std::string& s : server.conn->log()) {
    heartbeat |= absl::StrContains(s, "INSERT INTO corral.hot_refs") && absl::StrContains(s, "0, 0, E'aaaaaaaa11112222'");
  }
  EXPECT_TRUE(heartbeat);
  EXPECT_EQ(sync.View().catalog, "aaaaaaaa");
  EXPECT_EQ(sync.View().catalog_reloads, 0);
  // Unchanged: no re-read.
  ASSERT_TRUE(sync.SyncOnce().ok());
  EXPECT_EQ(loads, 1);
  EXPECT_EQ(sync.schema_version(), 1u);
  // A peer still on the old catalog, after DDL: counted; the re-read fails
  // first (old schema kept, the round goes on), then succeeds.
  server.catalog_fp = "bbbbbbbb33334444";
  server.peer_rows = {{std::string("peer"), std::string("0"), std::string("0"), std::string("aaaaaaaa11112222")}};
  fail_load = true;
  ASSERT_TRUE(sync.SyncOnce().ok());
  EXPECT_EQ(sync.schema_version(), 1u);
  EXPECT_TRUE(sync.schema()->HasTable("t1"));
  EXPECT_EQ(sync.View().catalog_differs, 0);  // compared against the fingerprint of the schema in use
  fail_load = false;
  ASSERT_TRUE(sync.SyncOnce().ok());
  EXPECT_EQ(loads, 2);
  EXPECT_EQ(sync.schema_version(), 2u);
  EXPECT_TRUE(sync.schema()->HasTable("t2"));
  const ClusterView v = sync.View();
  EXPECT_EQ(v.catalog, "bbbbbbbb");
  EXPECT_EQ(v.catalog_reloads, 1);
  EXPECT_EQ(v.catalog_differs, 1);
}

// By default the fingerprint is read at most once a second: DDL right after
// the first round is seen only when that second is up, not the next round.
TEST(ClusterSyncTest, CatalogWatchReadsTheFingerprintAtMostOnceAnInterval) {
  FakeServer server;
  server.catalog_fp = "aaaaaaaa11112222";
  Stats stats;
  ClusterSync::Options o = Opts();
  o.catalog_watch_ms = 60000;
  ClusterSync sync(o, server.Connect(), [](size_t) { return std::vector<SharedRef>{}; }, &stats);
  int loads = 0;
  sync.SetCatalogWatch([&]() -> absl::StatusOr<std::shared_ptr<const Schema>> {
    ++loads;
    SchemaBuilder b;
    EXPECT_TRUE(b.AddTable(absl::StrCat("t", loads), {{"k", TypeClass::kNumeric}}).ok());
    return b.Build();
  });
  ASSERT_TRUE(sync.SyncOnce().ok());
  EXPECT_EQ(loads, 1);  // the first round reads it
  auto fingerprint_reads = [&] {
    int n = 0;
    for (const std::string& s : server.conn->log()) n += absl::StrContains(s, "md5(") ? 1 : 0;
    return n;
  };
  EXPECT_EQ(fingerprint_reads(), 1);
  server.catalog_fp = "bbbbbbbb33334444";
  ASSERT_TRUE(sync.SyncOnce().ok());
  ASSERT_TRUE(sync.SyncOnce().ok());
  EXPECT_EQ(fingerprint_reads(), 1);
  EXPECT_EQ(loads, 1);
  EXPECT_EQ(sync.View().catalog, "aaaaaaaa");
}

TEST(ClusterSyncTest, UnreachableFallsBackToLocalOnlyAndCounts) {
  FakeServer server;
  server.peer_rows = {{std::string("peer"), std::string("5"), std::string("9"), std::string("k=2")}};
  Stats stats;
  ClusterSync sync(Opts(), server.Connect(), [](size_t) { return std::vector<SharedRef>{}; }, &stats);
  ASSERT_TRUE(sync.SyncOnce().ok());
  std::vector<int64_t> keys;
  sync.KeysFor({RefId(5)}, &keys);
  EXPECT_EQ(keys.size(), 1u);
  // The table goes away: the round fails, no key is locked any more.
  server.conn->FailWhen("SELECT proxy_id", "42P01", 1, "relation \"corral.hot_refs\" does not exist");
  EXPECT_FALSE(sync.SyncOnce().ok());
  EXPECT_EQ(stats.cluster_sync_failures.load(), 1);
  EXPECT_FALSE(sync.View().shared_ok);
  sync.KeysFor({RefId(5)}, &keys);
  EXPECT_TRUE(keys.empty());
  // Unreachable server: still counted, still no key; it comes back later.
  server.refuse = true;
  EXPECT_FALSE(sync.SyncOnce().ok());
  EXPECT_EQ(stats.cluster_sync_failures.load(), 2);
  server.refuse = false;
  ASSERT_TRUE(sync.SyncOnce().ok());
  sync.KeysFor({RefId(5)}, &keys);
  EXPECT_EQ(keys.size(), 1u);
}

// The sync thread runs rounds while the loop thread asks for keys (TSan
// checks the hand-over).
TEST(ClusterSyncTest, ThreadPublishesWhileKeysAreRead) {
  FakeServer server;
  server.peer_rows = {{std::string("peer"), std::string("5"), std::string("9"), std::string("k=2")}};
  Stats stats;
  ClusterSync::Options o = Opts();
  o.publish_interval_ms = 1;
  ClusterSync sync(o, server.Connect(), [](size_t) { return std::vector<SharedRef>{}; }, &stats);
  sync.Start();
  std::vector<int64_t> keys;
  size_t seen = 0;
  while (stats.cluster_publishes.load() < 5) {
    sync.KeysFor({RefId(5), RefId(6)}, &keys);
    seen = std::max(seen, keys.size());
    (void)sync.View();
  }
  sync.Stop();
  sync.KeysFor({RefId(5)}, &keys);
  EXPECT_EQ(keys, (std::vector<int64_t>{5}));
  EXPECT_EQ(stats.cluster_sync_failures.load(), 0);
}

// cluster_lock = table: one LOCK TABLE of the keys' distinct stripes in
// ascending order (every proxy takes them in that order: no deadlock).
TEST(ClusterSyncTest, StripeLockNamesDistinctStripesInOrder) {
  EXPECT_EQ(StripeLockSql({5}), "LOCK TABLE corral.lk_5 IN EXCLUSIVE MODE");
  // -1 is 2^64 - 1 as an unsigned key: stripe 1023; 1029 shares 5's.
  EXPECT_EQ(StripeLockSql({-1, 5, 1029, 2047}),
            "LOCK TABLE corral.lk_5, corral.lk_1023 IN EXCLUSIVE MODE");
}

// The kind of lock rides in a row of its own (ref_hash 1, "table"); a
// live peer taking the other kind turns locks off until they agree, and
// the mode row is no reference.
TEST(ClusterSyncTest, APeerTakingTheOtherKindOfLockTurnsLocksOff) {
  for (bool table : {false, true}) {
    SCOPED_TRACE(table ? "this proxy: table" : "this proxy: advisory");
    FakeServer server;
    using Row = std::vector<absl::optional<std::string>>;
    const Row hot = {std::string("peer"), std::string("5"), std::string("9"), std::string("k=2")};
    const Row mode = {std::string("peer"), std::string("1"), std::string("0"), std::string("table")};
    server.peer_rows = {hot};
    if (!table) server.peer_rows.push_back(mode);  // the peer: table
    Stats stats;
    ClusterSync::Options o = Opts();
    o.table_locks = table;
    ClusterSync sync(o, server.Connect(), [](size_t) { return std::vector<SharedRef>{}; }, &stats);
    ASSERT_TRUE(sync.SyncOnce().ok());
    EXPECT_TRUE(sync.View().locks_ok);
    EXPECT_EQ(sync.View().lock_mismatch, 1);
    EXPECT_EQ(sync.View().hot_refs, 1);  // shared all the same; not the mode row
    std::vector<int64_t> keys;
    sync.KeysFor({RefId(5), RefId(1)}, &keys);
    EXPECT_TRUE(keys.empty());
    // The peer comes to agree: locks again.
    server.peer_rows = {hot};
    if (table) server.peer_rows.push_back(mode);
    ASSERT_TRUE(sync.SyncOnce().ok());
    EXPECT_EQ(sync.View().lock_mismatch, 0);
    sync.KeysFor({RefId(5)}, &keys);
    EXPECT_EQ(keys, (std::vector<int64_t>{5}));
    // This proxy says which kind it takes.
    bool said = false;
    for (const std::string& q : server.conn->log()) said = said || absl::StrContains(q, ", 1, 0, 'table', now())");
    EXPECT_EQ(said, table);
  }
}

// Advisory locks that do not exclude (no-op stubs) or do not exist: the
// proxies still share what they learn, but no transaction takes a lock.
TEST(ClusterSyncTest, LocksThatDoNotExcludeAreNotTaken) {
  for (const std::string locks : {"no-op", "missing"}) {
    SCOPED_TRACE(locks);
    FakeServer server;
    server.locks = locks;
    server.peer_rows = {{std::string("peer"), std::string("5"), std::string("9"), std::string("k=2")}};
    Stats stats;
    ClusterSync sync(Opts(), server.Connect(), [](size_t) { return std::vector<SharedRef>{}; }, &stats);
    const absl::Status first = sync.SyncOnce();
    ASSERT_TRUE(first.ok()) << first;
    const ClusterView v = sync.View();
    EXPECT_TRUE(v.shared_ok);
    EXPECT_FALSE(v.locks_ok);
    EXPECT_EQ(v.hot_refs, 1);  // still learned together
    std::vector<int64_t> keys;
    sync.KeysFor({RefId(5)}, &keys);
    EXPECT_TRUE(keys.empty());
    EXPECT_TRUE(server.held.empty());  // the check left no key behind
    // Checked once: the next round does not ask again.
    const int made = server.connections;
    ASSERT_TRUE(sync.SyncOnce().ok());
    EXPECT_EQ(server.connections, made);
  }
}

// A check that a loaded server timed out says nothing about its locks: the
// round fails (local learning meanwhile) and the next one checks again,
// rather than turning the locks off for good.
TEST(ClusterSyncTest, ATimedOutLockCheckIsRetriedNextRound) {
  for (int timeouts : {1, 2}) {  // the sync session's call, then the second session's
    SCOPED_TRACE(timeouts);
    FakeServer server;
    server.lock_timeouts = timeouts;
    server.peer_rows = {{std::string("peer"), std::string("5"), std::string("9"), std::string("k=2")}};
    Stats stats;
    ClusterSync sync(Opts(), server.Connect(), [](size_t) { return std::vector<SharedRef>{}; }, &stats);
    int failed = 0;
    for (int round = 0; round < 4 && !sync.SyncOnce().ok(); ++round) ++failed;
    EXPECT_GE(failed, 1);
    EXPECT_EQ(stats.cluster_sync_failures.load(), failed);
    const ClusterView v = sync.View();
    EXPECT_TRUE(v.shared_ok);
    EXPECT_TRUE(v.locks_ok);
    std::vector<int64_t> keys;
    sync.KeysFor({RefId(5)}, &keys);
    EXPECT_EQ(keys, (std::vector<int64_t>{5}));
    EXPECT_TRUE(server.held.empty());  // no check key left behind
  }
}

TEST(ClusterSyncTest, ExcludingLocksAreCheckedWithASecondSessionAndReleased) {
  FakeServer server;
  server.peer_rows = {{std::string("peer"), std::string("5"), std::string("9"), std::string("k=2")}};
  Stats stats;
  ClusterSync sync(Opts(), server.Connect(), [](size_t) { return std::vector<SharedRef>{}; }, &stats);
  ASSERT_TRUE(sync.SyncOnce().ok());
  EXPECT_TRUE(sync.View().locks_ok);
  EXPECT_EQ(server.connections, 2);  // the sync connection and the checking one
  EXPECT_TRUE(server.held.empty());
  std::vector<int64_t> keys;
  sync.KeysFor({RefId(5)}, &keys);
  EXPECT_EQ(keys, (std::vector<int64_t>{5}));
}

}  // namespace
}  // namespace proxy
}  // namespace corral
