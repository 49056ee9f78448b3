// Multi-proxy mode (issue 25), end to end against the test server: two
// proxies in one process with the same cluster_name share what they learn
// through corral.hot_refs; a reference hot on one is serialized by the
// other with session-level advisory locks taken before the transaction's
// BEGIN reaches the server. Every assertion is on an order of events the
// test forces (a transaction that must wait for a lock, pg_locks rows),
// not on rates or timings; waits poll with a generous bound.
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "adapters/proxy/cluster.h"
#include "adapters/proxy/config.h"
#include "libpq-fe.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

// Polls `pred` every 20 ms for up to 15 s.
template <typename F>
bool Eventually(F pred) {
  for (int i = 0; i < 750; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

// Every result of the query c sent (PQsendQuery): the last one's command
// tag, or "ERROR <sqlstate>".
std::string PendingResult(PGconn* c) {
  std::string out;
  while (PGresult* r = PQgetResult(c)) {
    out = PQresultStatus(r) == PGRES_FATAL_ERROR ? absl::StrCat("ERROR ", PQresultErrorField(r, PG_DIAG_SQLSTATE))
                                                 : std::string(PQcmdStatus(r));
    PQclear(r);
  }
  return out;
}

// The value of column `col` of SHOW CLUSTER's first row on proxy `p`'s
// admin console ("" when none).
std::string ClusterValue(ProxyUnderTest& p, const std::string& col) {
  PGconn* a = PQconnectdb(p.ClientConninfo("corral").c_str());
  PGresult* r = PQexec(a, "SHOW CLUSTER");
  std::string v;
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) {
    const int f = PQfnumber(r, col.c_str());
    if (f >= 0) v = PQgetvalue(r, 0, f);
  }
  PQclear(r);
  PQfinish(a);
  return v;
}

class ClusterTest : public ScratchTableTest {
 protected:
  Options ClusterOptions(const std::string& cluster, const std::string& id) {
    Options o;
    o.pool_size = 2;
    o.history_half_life_s = 0;  // no aging: what was learned stays
    o.cluster_name = cluster;
    o.cluster_proxy_id = id;
    o.cluster_publish_interval_ms = 100;
    o.cluster_hot_threshold = 1;
    o.cluster_fold_unlock = fold_;
    o.cluster_table_locks = table_locks_;
    o.replay = replay_;
    return o;
  }
  // RELOAD turns sharing on, changes the threshold, turns it off, on a
  // proxy of `workers` loops.
  void ReloadScenario(int workers);
  // A restart that waits for a local key with its advisory key kept; with
  // `bounded` the bound (50 ms) ends the hold first.
  void RestartHoldScenario(bool bounded);
  // Every row's `col` of p's SHOW CLUSTER (one per loop with workers > 1).
  std::vector<std::string> ClusterValues(ProxyUnderTest& p, const std::string& col) {
    std::vector<std::string> out;
    PGconn* a = PQconnectdb(p.ClientConninfo("corral").c_str());
    PGresult* r = PQexec(a, "SHOW CLUSTER");
    const int f = PQresultStatus(r) == PGRES_TUPLES_OK ? PQfnumber(r, col.c_str()) : -1;
    for (int i = 0; f >= 0 && i < PQntuples(r); ++i) out.push_back(PQgetvalue(r, i, f));
    PQclear(r);
    PQfinish(a);
    return out;
  }
  static bool AllAre(const std::vector<std::string>& vs, int n, const std::string& v) {
    if (static_cast<int>(vs.size()) != n) return false;
    for (const std::string& x : vs) {
      if (x != v) return false;
    }
    return true;
  }
  // Whether a transaction of `update` through b takes `key` on its backend.
  // A sync round a loaded machine delays drops b to local learning for it
  // (HoldHotRow): tried again once b sees the reference hot again.
  // Whether B's transaction running `update` takes advisory key `key`,
  // tried until B's merged view has it: B's view may hold more than the
  // one reference (a proxy that re-read its schema mid-test publishes a
  // row under its old name too: ForeignKeyAdded..., when another test's
  // DDL triggered A's re-read just before the ALTER, failed waiting for
  // exactly one), so each try waits for at least one and the tries are
  // spaced.
  bool TakesKey(ProxyUnderTest& b, const std::string& update, int64_t key) {
    PGconn* y = PQconnectdb(b.ClientConninfo().c_str());
    bool locked = false;
    for (int attempt = 0; attempt < 100 && !locked; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (!Eventually([&] { return std::atoi(ClusterValue(b, "hot_refs").c_str()) >= 1; })) break;
      if (ExecValue(y, "BEGIN") != "BEGIN" || ExecValue(y, update) != "UPDATE 1") break;
      locked = Locks(key, true) == 1;
      ExecValue(y, "ROLLBACK");
    }
    PQfinish(y);
    return locked;
  }
  bool fold_ = true;     // cluster_fold_unlock of the proxies started
  bool replay_ = false;  // their replay key
  bool table_locks_ = false;  // their cluster_lock: table (stripes) instead of advisory
  std::string Update(int k) { return absl::StrCat("UPDATE ", table_, " SET v = v + 1 WHERE k = ", k); }

  // Proxy `p` learns a serialization failure on row k: a SERIALIZABLE
  // transaction reads it, the row changes behind it, its update fails.
  void LearnAbort(ProxyUnderTest& p, int k) { proxy::LearnAbort(p.ClientConninfo(), server_conn_, table_, k); }

  // The pg_locks rows of key `key`'s lock: its advisory lock, or
  // (table_locks_) the EXCLUSIVE lock of its stripe table.
  std::string LockRows(int64_t key) {
    const uint64_t u = static_cast<uint64_t>(key);
    if (table_locks_) {
      return absl::StrCat("locktype = 'relation' AND mode = 'ExclusiveLock' AND relation = 'corral.lk_",
                          LockStripe(key),
                          "'::regclass AND database = (SELECT oid FROM pg_database WHERE datname = current_database())");
    }
    return absl::StrCat("locktype = 'advisory' AND classid = ", u >> 32, " AND objid = ", u & 0xffffffffu,
                        " AND objsubid = 1");
  }
  // Those rows "granted" or "waiting": counts.
  int Locks(int64_t key, bool granted) {
    return std::atoi(ExecValue(server_conn_, absl::StrCat("SELECT count(*) FROM pg_locks WHERE ", LockRows(key),
                                                          " AND granted = ", granted ? "true" : "false"))
                         .c_str());
  }

  // The key proxy `id` published for row k's reference (0 when none yet).
  int64_t PublishedKey(const std::string& cluster, const std::string& id) {
    const std::string v = ExecValue(
        server_conn_, absl::StrCat("SELECT ref_hash FROM corral.hot_refs WHERE cluster_name = '", cluster,
                                   "' AND proxy_id = '", id, "' AND ref_hash NOT IN (0, 1) ORDER BY aborts DESC LIMIT 1"));
    return v.empty() || v.rfind("ERROR", 0) == 0 ? 0 : std::strtoll(v.c_str(), nullptr, 10);
  }

  // Two proxies of `cluster` (or with sharing off when cluster is ""); A
  // has learned row 1's abort. Returns the lock key (0 with sharing off).
  int64_t TwoProxies(const std::string& cluster, ProxyUnderTest* a, ProxyUnderTest* b) {
    EXPECT_TRUE(IsOk(a->Start(server_, ClusterOptions(cluster, cluster + "_a"))));
    EXPECT_TRUE(IsOk(b->Start(server_, ClusterOptions(cluster, cluster + "_b"))));
    LearnAbort(*a, 1);
    if (cluster.empty()) return 0;
    int64_t key = 0;
    EXPECT_TRUE(Eventually([&] { return (key = PublishedKey(cluster, cluster + "_a")) != 0; }));
    // B merged A's count; A knows B exists: both lock the reference.
    EXPECT_TRUE(Eventually([&] { return ClusterValue(*b, "hot_refs") == "1"; }));
    EXPECT_TRUE(Eventually([&] { return ClusterValue(*a, "hot_refs") == "1"; }));
    EXPECT_EQ(ClusterValue(*b, "peers"), "1");
    EXPECT_EQ(ClusterValue(*b, "state"), "ok");
    return key;
  }

  // Two proxies of `cluster` with restart on a hot key; A learned row 1's
  // abort, B row 2's; key[1], key[2]: the keys they published.
  void TwoRestartProxies(const std::string& cluster, ProxyUnderTest* a, ProxyUnderTest* b, int64_t key[3]) {
    Options oa = ClusterOptions(cluster, cluster + "_a"), ob = ClusterOptions(cluster, cluster + "_b");
    oa.restart_on_hot_key = ob.restart_on_hot_key = true;
    ASSERT_TRUE(IsOk(a->Start(server_, oa)));
    ASSERT_TRUE(IsOk(b->Start(server_, ob)));
    LearnAbort(*a, 1);
    LearnAbort(*b, 2);
    ASSERT_TRUE(Eventually([&] { return (key[1] = PublishedKey(cluster, cluster + "_a")) != 0; }));
    ASSERT_TRUE(Eventually([&] { return (key[2] = PublishedKey(cluster, cluster + "_b")) != 0; }));
  }

  // A cluster of two proxies, A having learned row 1's abort; Y (via B)
  // updates row 1 in an open transaction, holding row 1's key.
  struct Held {
    ProxyUnderTest a, b;
    int64_t key = 0;
    PGconn* y = nullptr;
  };
  void HoldHotRow(Held* h) {
    h->key = TwoProxies(PgUniqueName("cl"), &h->a, &h->b);
    ASSERT_NE(h->key, 0);
    h->y = PQconnectdb(h->b.ClientConninfo().c_str());
    // A sync round that a loaded machine delays past its timeout (or a
    // peer row past its staleness) drops B to local learning for that
    // round, and a transaction routed then takes no lock (the documented
    // fallback): try again once B sees the reference hot again.
    for (int attempt = 0; attempt < 20; ++attempt) {
      ASSERT_TRUE(Eventually([&] { return ClusterValue(h->b, "hot_refs") == "1"; }));
      ASSERT_EQ(ExecValue(h->y, "BEGIN"), "BEGIN");
      ASSERT_EQ(ExecValue(h->y, Update(1)), "UPDATE 1");
      if (Locks(h->key, true) == 1) return;
      ASSERT_EQ(ExecValue(h->y, "ROLLBACK"), "ROLLBACK");
    }
    // What B saw, so that a failure says which step did not happen.
    const Stats& s = h->b.proxy().stats();
    FAIL() << "B never took row 1's key in 20 hot transactions: B's cluster state "
           << ClusterValue(h->b, "state") << ", peers " << ClusterValue(h->b, "peers") << ", hot_refs "
           << ClusterValue(h->b, "hot_refs") << ", shared_refs " << ClusterValue(h->b, "shared_refs")
           << "; lock txns " << s.cluster_lock_txns.load() << ", locks held " << s.cluster_locks_held.load()
           << ", sync failures " << s.cluster_sync_failures.load() << "; key " << h->key << " granted "
           << Locks(h->key, true) << ", waiting " << Locks(h->key, false);
  }

  // Y (holding no key) opens a transaction that updates row 1: its
  // backend holds `key`.
  void HotTxn(PGconn* y, int64_t key) {
    ASSERT_EQ(ExecValue(y, "BEGIN"), "BEGIN");
    ASSERT_EQ(ExecValue(y, Update(1)), "UPDATE 1");
    EXPECT_EQ(Locks(key, true), 1);
  }
  // `key` is released on the server and by the proxy of `s`.
  void ExpectFreed(int64_t key, const Stats& s) {
    EXPECT_TRUE(Eventually([&] { return Locks(key, true) == 0 && s.cluster_locks_held.load() == 0; }));
  }

  // A client dies without a Terminate message.
  static void Kill(PGconn* c) {
    ::shutdown(PQsocket(c), SHUT_RDWR);
    PQfinish(c);
  }

  // Y (via B) updates row 1 and keeps its transaction open; Z (via A) then
  // updates row 1 too; Y commits. Returns Z's update's outcome.
  std::string Race(ProxyUnderTest& a, ProxyUnderTest& b, int64_t key) {
    PGconn* y = PQconnectdb(b.ClientConninfo().c_str());
    PGconn* z = PQconnectdb(a.ClientConninfo().c_str());
    EXPECT_EQ(ExecValue(y, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
    EXPECT_EQ(ExecValue(y, Update(1)), "UPDATE 1");
    if (key != 0) EXPECT_EQ(Locks(key, true), 1);  // Y's backend took it before BEGIN
    EXPECT_EQ(ExecValue(z, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
    EXPECT_EQ(PQsendQuery(z, Update(1).c_str()), 1);
    if (key != 0) {
      // Z's backend waits for the lock: its snapshot is not taken yet.
      EXPECT_TRUE(Eventually([&] { return Locks(key, false) == 1; }));
    } else {
      // Z's update waits for Y's row lock, snapshot taken.
      EXPECT_TRUE(Eventually([&] {
        return ExecValue(server_conn_, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                       "AND query LIKE 'UPDATE " + table_ + "%'") == "1";
      }));
    }
    EXPECT_EQ(ExecValue(y, "COMMIT"), "COMMIT");
    const std::string z_result = PendingResult(z);
    if (z_result == "UPDATE 1") {
      EXPECT_EQ(ExecValue(z, "COMMIT"), "COMMIT");
    } else {
      ExecValue(z, "ROLLBACK");
    }
    PQfinish(y);
    PQfinish(z);
    if (key != 0) EXPECT_TRUE(Eventually([&] { return Locks(key, true) == 0 && Locks(key, false) == 0; }));
    return z_result;
  }
};

// The scenarios below with either kind of lock (cluster_lock): advisory,
// or the stripe tables' (table).
class ClusterLockKindTest : public ClusterTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    table_locks_ = GetParam();
  }
};
INSTANTIATE_TEST_SUITE_P(Locks, ClusterLockKindTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "table" : "advisory"; });

TEST_P(ClusterLockKindTest, HotReferenceLearnedByOneIsSerializedByTheOther) {
  const std::string cluster = PgUniqueName("cl");
  ProxyUnderTest a, b;
  const int64_t key = TwoProxies(cluster, &a, &b);
  ASSERT_NE(key, 0);
  EXPECT_EQ(ClusterValue(b, "lock"), table_locks_ ? "table" : "advisory");
  // B never saw row 1 abort; its transaction still takes the lock, and A's
  // waits for it: Z's snapshot comes after Y's commit, no 40001.
  EXPECT_EQ(Race(a, b, key), "UPDATE 1");
  EXPECT_GE(b.proxy().stats().cluster_lock_txns.load(), 1);
  if (table_locks_) {
    // Released by the COMMITs: no unlock statement.
    EXPECT_EQ(a.proxy().stats().cluster_unlocks_folded.load() + b.proxy().stats().cluster_unlocks_folded.load(), 0);
  } else {
    EXPECT_GE(a.proxy().stats().cluster_lock_waits.load(), 1);
    // Y's COMMIT and Z's carried their unlocks in the same write.
    EXPECT_GE(b.proxy().stats().cluster_unlocks_folded.load(), 1);
    EXPECT_GE(a.proxy().stats().cluster_unlocks_folded.load(), 1);
  }
  EXPECT_EQ(a.proxy().stats().aborts_40001.load(), 1);  // LearnAbort's only
  EXPECT_TRUE(Eventually([&] {
    return a.proxy().stats().cluster_locks_held.load() == 0 && b.proxy().stats().cluster_locks_held.load() == 0;
  }));
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 1")), "3");
}

// A table created between two proxies' catalog reads shares the hot
// table's key column: without cluster-wide qualified names A would name
// row 1 `col=1` (the column was unique when it read the catalog) and B
// `table.col=1`, and B's transaction would take no lock for A's hot
// reference. With cluster_name both name it `table.col=1`.
TEST_F(ClusterTest, NamesAgreeWhenATableSharingTheKeyColumnAppearsBetweenCatalogReads) {
  const std::string cluster = PgUniqueName("cq");
  const std::string col = PgUniqueName("qk");
  const std::string hot = PgUniqueName("qhot"), other = PgUniqueName("qother");
  ExecValue(server_conn_, absl::StrCat("CREATE TABLE ", hot, " (", col, " int PRIMARY KEY, v int NOT NULL)"));
  ExecValue(server_conn_, absl::StrCat("INSERT INTO ", hot, " SELECT g, 0 FROM generate_series(0, 10) g"));
  ProxyUnderTest a, b;
  ASSERT_TRUE(IsOk(a.Start(server_, ClusterOptions(cluster, cluster + "_a"))));
  ExecValue(server_conn_, absl::StrCat("CREATE TABLE ", other, " (", col, " int)"));
  ASSERT_TRUE(IsOk(b.Start(server_, ClusterOptions(cluster, cluster + "_b"))));
  proxy::LearnAbortWhere(a.ClientConninfo(), server_conn_, hot, absl::StrCat(col, " = 1"));
  int64_t key = 0;
  ASSERT_TRUE(Eventually([&] { return (key = PublishedKey(cluster, cluster + "_a")) != 0; }));
  // B's backend takes A's key: the names agree.
  EXPECT_TRUE(TakesKey(b, absl::StrCat("UPDATE ", hot, " SET v = v + 1 WHERE ", col, " = 1"), key))
      << "B's transaction on row 1 never took the key A published for it";
  a.Stop();
  b.Stop();
  ExecValue(server_conn_, absl::StrCat("DROP TABLE IF EXISTS ", hot, ", ", other));
}

// DDL after a proxy started renames references (a foreign key makes
// child.pid a member of parent.id's class): the catalog watch re-reads the
// schema, so A, started before the DDL, names child row 1 as B, started
// after it, does, without a RELOAD; B then takes the key of A's hot
// reference.
TEST_F(ClusterTest, ForeignKeyAddedAfterStartRenamesReferencesOnEveryProxy) {
  const std::string cluster = PgUniqueName("cf");
  const std::string parent = PgUniqueName("fparent"), child = PgUniqueName("fchild");
  ExecValue(server_conn_, absl::StrCat("CREATE TABLE ", parent, " (id int PRIMARY KEY)"));
  ExecValue(server_conn_, absl::StrCat("CREATE TABLE ", child, " (pid int PRIMARY KEY, v int NOT NULL)"));
  ExecValue(server_conn_, absl::StrCat("INSERT INTO ", parent, " SELECT g FROM generate_series(0, 10) g"));
  ExecValue(server_conn_, absl::StrCat("INSERT INTO ", child, " SELECT g, 0 FROM generate_series(0, 10) g"));
  ProxyUnderTest a, b;
  ASSERT_TRUE(IsOk(a.Start(server_, ClusterOptions(cluster, cluster + "_a"))));
  ASSERT_TRUE(Eventually([&] { return !ClusterValue(a, "catalog").empty(); }));
  const int reloads = std::atoi(ClusterValue(a, "catalog_reloads").c_str());
  ExecValue(server_conn_, absl::StrCat("ALTER TABLE ", child, " ADD FOREIGN KEY (pid) REFERENCES ", parent, " (id)"));
  ASSERT_TRUE(IsOk(b.Start(server_, ClusterOptions(cluster, cluster + "_b"))));
  // A sees the change and re-reads its schema. (Other tests' DDL on the
  // same server changes the catalog too, so the test does not wait for
  // one fingerprint: it waits until A names child rows by parent.id.)
  ASSERT_TRUE(Eventually([&] { return std::atoi(ClusterValue(a, "catalog_reloads").c_str()) > reloads; }));
  // A learns a row's serialization failure until it publishes it under the
  // foreign-key class's name, as B names it (a round may not have
  // re-read the schema yet: then the next row).
  int64_t key = 0;
  int row = 0;
  for (int r = 1; r <= 10 && key == 0; ++r) {
    proxy::LearnAbortWhere(a.ClientConninfo(), server_conn_, child, absl::StrCat("pid = ", r));
    for (int i = 0; i < 100 && key == 0; ++i) {
      const std::string v = ExecValue(
          server_conn_, absl::StrCat("SELECT ref_hash FROM corral.hot_refs WHERE cluster_name = '", cluster,
                                     "' AND proxy_id = '", cluster, "_a' AND ref_text = '", parent, ".id=", r, "'"));
      if (!v.empty() && v.rfind("ERROR", 0) != 0) {
        key = std::strtoll(v.c_str(), nullptr, 10);
        row = r;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
  ASSERT_NE(key, 0) << "A never published a child row under " << parent << ".id";
  EXPECT_TRUE(TakesKey(b, absl::StrCat("UPDATE ", child, " SET v = v + 1 WHERE pid = ", row), key))
      << "B's transaction on child row " << row << " never took the key A published for it";
  a.Stop();
  b.Stop();
  ExecValue(server_conn_, absl::StrCat("DROP TABLE IF EXISTS ", child, ", ", parent));
}

// workers = 2 with cluster_name: the two loops share one ClusterSync (one
// proxy id publishes for the process); a hot reference the 2-loop proxy
// learned is serialized against a second proxy, whichever loop runs it.
TEST_F(ClusterTest, TwoLoopProxyLearnsAndSerializesWithAnotherProxy) {
  const std::string cluster = PgUniqueName("cl");
  ProxyUnderTest a, b;
  Options oa = ClusterOptions(cluster, "");  // a generated id: one for the process
  oa.workers = 2;
  ASSERT_TRUE(IsOk(a.Start(server_, oa)));
  ASSERT_TRUE(IsOk(b.Start(server_, ClusterOptions(cluster, cluster + "_b"))));
  LearnAbort(a, 1);
  const std::string a_id = ClusterValue(a, "proxy_id");
  ASSERT_FALSE(a_id.empty());
  int64_t key = 0;
  ASSERT_TRUE(Eventually([&] { return (key = PublishedKey(cluster, a_id)) != 0; }));
  EXPECT_TRUE(Eventually([&] { return ClusterValue(b, "hot_refs") == "1"; }));
  EXPECT_TRUE(Eventually([&] { return ClusterValue(a, "hot_refs") == "1"; }));
  // A's loops published under one id: B sees one peer, the table two proxies.
  EXPECT_EQ(ClusterValue(b, "peers"), "1");
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT count(DISTINCT proxy_id) FROM corral.hot_refs "
                                                 "WHERE cluster_name = '", cluster, "'")),
            "2");
  for (int round = 0; round < 4; ++round) EXPECT_EQ(Race(a, b, key), "UPDATE 1") << round;
  EXPECT_GE(a.proxy().stats().cluster_lock_waits.load(), 4);
  EXPECT_EQ(a.proxy().stats().aborts_40001.load(), 1);  // LearnAbort's only
  EXPECT_EQ(a.proxy().worker_stats().size(), 2u);
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 1")), "9");
}

// The unlock rides in the write of the client's COMMIT / ROLLBACK (simple
// Query); a transaction ended otherwise (an extended-protocol COMMIT)
// unlocks after it. Either way the key is free afterwards and the backend
// serves the next transaction, which takes the key again.
TEST_F(ClusterTest, UnlockFoldedIntoCommitAndRollback) {
  Held h;
  HoldHotRow(&h);
  ASSERT_FALSE(HasFatalFailure());
  ProxyUnderTest& b = h.b;
  const int64_t key = h.key;
  PGconn* y = h.y;
  const Stats& s = b.proxy().stats();
  EXPECT_EQ(s.cluster_unlocks_folded.load(), 0);
  EXPECT_EQ(ExecValue(y, "COMMIT"), "COMMIT");
  EXPECT_EQ(s.cluster_unlocks_folded.load(), 1);
  ExpectFreed(key, s);
  // A ROLLBACK the same way; the next transaction on the same client
  // runs (its backend came back) and takes the key again.
  HotTxn(y, key);
  EXPECT_EQ(ExecValue(y, "ROLLBACK"), "ROLLBACK");
  EXPECT_EQ(s.cluster_unlocks_folded.load(), 2);
  ExpectFreed(key, s);
  // An extended-protocol COMMIT is not folded; the unlock follows it.
  HotTxn(y, key);
  PGresult* r = PQexecParams(y, "COMMIT", 0, nullptr, nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(PQresultStatus(r), PGRES_COMMAND_OK);
  PQclear(r);
  EXPECT_EQ(s.cluster_unlocks_folded.load(), 2);
  ExpectFreed(key, s);
  EXPECT_EQ(s.cluster_lock_txns.load(), 3);
  EXPECT_EQ(s.cluster_unlock_retries.load(), 0);
  // Y's first and third updates committed (LearnAbort's made it 1).
  EXPECT_EQ(ExecValue(y, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 1")), "3");
  PQfinish(y);
}

// The lock and unlock are statements prepared on the backend: a client's
// DEALLOCATE ALL drops them, and the proxy prepares them again (no failed
// unlock, the key is taken and freed as before).
TEST_F(ClusterTest, LockStatementsPreparedAgainAfterDeallocateAll) {
  Held h;
  HoldHotRow(&h);
  ASSERT_FALSE(HasFatalFailure());
  const Stats& s = h.b.proxy().stats();
  EXPECT_EQ(ExecValue(h.y, "COMMIT"), "COMMIT");  // the unlock statement prepared too
  ExpectFreed(h.key, s);
  for (int i = 0; i < 2; ++i) {
    HotTxn(h.y, h.key);
    EXPECT_EQ(ExecValue(h.y, "DEALLOCATE ALL"), "DEALLOCATE ALL");  // on the backend holding the key
    EXPECT_EQ(ExecValue(h.y, "COMMIT"), "COMMIT");
    ExpectFreed(h.key, s);
  }
  EXPECT_EQ(s.cluster_unlock_retries.load(), 0);
  EXPECT_EQ(s.cluster_lock_txns.load(), 3);
  EXPECT_EQ(s.cluster_unlocks_folded.load(), 3);
  PQfinish(h.y);
}

// cluster_fold_unlock = off: the unlock follows the COMMIT's reply; the key
// is free all the same and the backend serves the next transaction.
TEST_F(ClusterTest, UnfoldedUnlockFollowsTheCommit) {
  fold_ = false;
  Held h;
  HoldHotRow(&h);
  ASSERT_FALSE(HasFatalFailure());
  ProxyUnderTest& b = h.b;
  const int64_t key = h.key;
  PGconn* y = h.y;
  const Stats& s = b.proxy().stats();
  EXPECT_EQ(ExecValue(y, "COMMIT"), "COMMIT");
  ExpectFreed(key, s);
  HotTxn(y, key);
  EXPECT_EQ(ExecValue(y, "COMMIT"), "COMMIT");
  ExpectFreed(key, s);
  EXPECT_EQ(s.cluster_lock_txns.load(), 2);
  EXPECT_EQ(s.cluster_unlocks_folded.load(), 0);
  PQfinish(y);
}

// Under transparent replay a COMMIT the server fails with 40001 is re-run,
// so its keys must outlive it: the unlock is not folded into a COMMIT (it
// follows the reply) but still is into a ROLLBACK; the key is free after
// both.
TEST_F(ClusterTest, ReplayKeepsTheKeyPastTheCommit) {
  replay_ = true;
  Held h;
  HoldHotRow(&h);
  ASSERT_FALSE(HasFatalFailure());
  const int64_t key = h.key;
  PGconn* y = h.y;
  const Stats& s = h.b.proxy().stats();
  EXPECT_EQ(ExecValue(y, "COMMIT"), "COMMIT");
  ExpectFreed(key, s);
  EXPECT_EQ(s.cluster_unlocks_folded.load(), 0);
  HotTxn(y, key);
  EXPECT_EQ(ExecValue(y, "ROLLBACK"), "ROLLBACK");
  ExpectFreed(key, s);
  EXPECT_EQ(s.cluster_unlocks_folded.load(), 1);
  PQfinish(y);
}

// Replay and cluster keys on one proxy: X holds row 1's key and has read
// row 1; W's first statement updates row 1, so its backend waits for X's
// key on the server. A write outside the proxies fails X's UPDATE with
// 40001, and X replays, keeping its backend and key. W is the running
// transaction on X's references that a replay waits for, but W has not
// started (it waits for X's key): the replay must not wait for it, or
// neither ever goes on.
TEST_F(ClusterTest, ReplayDoesNotWaitForATransactionWaitingForItsKey) {
  replay_ = true;
  ProxyUnderTest a, b;
  const int64_t key = TwoProxies(PgUniqueName("cl"), &a, &b);
  ASSERT_NE(key, 0);
  PGconn* x = PQconnectdb(b.ClientConninfo().c_str());
  PGconn* w = PQconnectdb(b.ClientConninfo().c_str());
  // The result of c's query sent last, once it came (bounded wait).
  auto result_of = [](PGconn* c) -> std::string {
    if (!Eventually([&] { return PQconsumeInput(c) == 1 && PQisBusy(c) == 0; })) return "no answer";
    return PendingResult(c);
  };
  int direct = 0;  // updates of row 1 made outside the proxies
  std::string x_update;
  for (int attempt = 0; attempt < 20 && x_update.empty(); ++attempt) {
    ASSERT_TRUE(Eventually([&] { return ClusterValue(b, "hot_refs") == "1"; }));
    ASSERT_EQ(ExecValue(x, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
    ASSERT_EQ(ExecValue(x, absl::StrCat("SELECT 1 FROM ", table_, " WHERE k = 1")), "1");
    if (Locks(key, true) != 1) {  // a round without the cluster (HoldHotRow): again
      ASSERT_EQ(ExecValue(x, "ROLLBACK"), "ROLLBACK");
      continue;
    }
    ASSERT_EQ(ExecValue(w, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
    ASSERT_EQ(PQsendQuery(w, Update(1).c_str()), 1);
    ASSERT_TRUE(Eventually([&] { return Locks(key, false) == 1; }));  // W's backend waits for X's key
    ASSERT_EQ(ExecValue(server_conn_, Update(1)), "UPDATE 1");
    direct++;
    ASSERT_EQ(PQsendQuery(x, Update(1).c_str()), 1);
    x_update = result_of(x);
    if (x_update == "no answer") ::shutdown(PQsocket(w), SHUT_RDWR);  // (what ends the wait otherwise)
  }
  EXPECT_EQ(x_update, "UPDATE 1");  // replayed on its backend, its key kept
  EXPECT_EQ(ExecValue(x, "COMMIT"), "COMMIT");
  EXPECT_EQ(result_of(w), "UPDATE 1");  // then W, after X's unlock
  EXPECT_EQ(ExecValue(w, "COMMIT"), "COMMIT");
  EXPECT_GE(b.proxy().stats().replay_matches.load(), 1);
  PQfinish(x);
  PQfinish(w);
  ExpectFreed(key, b.proxy().stats());
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 1")),
            absl::StrCat(1 + direct + 2));  // LearnAbort's, the direct ones, X's, W's
}

// The config file's key, as RELOAD and the benchmark use it.
TEST(ClusterConfigTest, FoldUnlockKey) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(tmp ? tmp : "/tmp", "/", PgUniqueName("corral_cluster_fold"), ".ini");
  for (const auto& [text, ok, fold] : std::vector<std::tuple<std::string, bool, bool>>{
           {"cluster_fold_unlock = off\n", true, false},
           {"cluster_fold_unlock = on\n", true, true},
           {"", true, true},
           {"cluster_fold_unlock = sometimes\n", false, true}}) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
    Options o;
    EXPECT_EQ(LoadConfigFile(path, &o).ok(), ok) << text;
    if (ok) EXPECT_EQ(o.cluster_fold_unlock, fold) << text;
  }
  std::remove(path.c_str());
}

// Each `text` loaded as a config file: ok or not (a bad value names `key`),
// and the value `get` reads from the Options then.
void ExpectIntKey(const std::string& key, const std::vector<std::tuple<std::string, bool, int>>& cases,
                  const std::function<int(const Options&)>& get) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(tmp ? tmp : "/tmp", "/", PgUniqueName("corral_cluster_key"), ".ini");
  for (const auto& [text, ok, value] : cases) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
    Options o;
    const absl::Status st = LoadConfigFile(path, &o);
    EXPECT_EQ(st.ok(), ok) << text;
    if (!ok) EXPECT_TRUE(absl::StrContains(st.message(), key)) << st.message();
    EXPECT_EQ(get(o), value) << text;
  }
  std::remove(path.c_str());
}

TEST(ClusterConfigTest, RelockTriesKey) {
  ExpectIntKey("cluster_relock_tries",
               {{"cluster_relock_tries = 1\n", true, 1},
                {"cluster_relock_tries = 20\n", true, 20},
                {"", true, 10},
                {"cluster_relock_tries = 0\n", false, 10},
                {"cluster_relock_tries = many\n", false, 10}},
               [](const Options& o) { return o.cluster_relock_tries; });
}

// RELOAD picks up the cluster_* keys: a proxy started with sharing off
// joins B's cluster (peers, a hot reference, a locked transaction), a
// higher threshold unlocks the reference, and an empty cluster_name turns
// sharing off again.
void ClusterTest::ReloadScenario(int workers) {
  const std::string cluster = PgUniqueName("cl");
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(tmp ? tmp : "/tmp", "/", PgUniqueName("corral_cluster_reload"), ".ini");
  auto write = [&](const std::string& keys) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(absl::StrCat("pool_size = 2\nhistory_half_life_s = 0\n", keys).c_str(), f);
    std::fclose(f);
  };
  write("");
  Options o;
  ASSERT_TRUE(LoadConfigFile(path, &o).ok());
  o.workers = workers;
  ProxyUnderTest a, b;
  ASSERT_TRUE(IsOk(a.Start(server_, o)));
  ASSERT_TRUE(IsOk(b.Start(server_, ClusterOptions(cluster, cluster + "_b"))));
  PGconn* admin = PQconnectdb(a.ClientConninfo("corral").c_str());
  ASSERT_EQ(PQstatus(admin), CONNECTION_OK) << PQerrorMessage(admin);
  EXPECT_EQ(ClusterValue(a, "state"), "");  // sharing off: no SHOW CLUSTER row
  LearnAbort(a, 1);
  write(absl::StrCat("cluster_name = ", cluster, "\ncluster_proxy_id = ", cluster,
                     "_a\ncluster_publish_interval_ms = 100\ncluster_hot_threshold = 1\n"));
  ASSERT_TRUE(ExecOk(admin, "RELOAD"));
  int64_t key = 0;
  EXPECT_TRUE(Eventually([&] { return (key = PublishedKey(cluster, cluster + "_a")) != 0; }));
  // Every loop reloaded (each has its row; the others' as published).
  EXPECT_TRUE(Eventually([&] {
    return AllAre(ClusterValues(a, "peers"), workers, "1") && AllAre(ClusterValues(a, "hot_refs"), workers, "1");
  }));
  EXPECT_EQ(ClusterValue(a, "proxy_id"), cluster + "_a");
  PGconn* y = PQconnectdb(a.ClientConninfo().c_str());
  HotTxn(y, key);
  EXPECT_EQ(ExecValue(y, "COMMIT"), "COMMIT");
  EXPECT_EQ(a.proxy().stats().cluster_lock_txns.load(), 1);
  // A threshold over the merged count: nothing is hot.
  write(absl::StrCat("cluster_name = ", cluster, "\ncluster_proxy_id = ", cluster,
                     "_a\ncluster_publish_interval_ms = 100\ncluster_hot_threshold = 1000\n"));
  ASSERT_TRUE(ExecOk(admin, "RELOAD"));
  EXPECT_TRUE(Eventually([&] {
    return AllAre(ClusterValues(a, "peers"), workers, "1") && AllAre(ClusterValues(a, "hot_refs"), workers, "0");
  }));
  ASSERT_EQ(ExecValue(y, "BEGIN"), "BEGIN");
  ASSERT_EQ(ExecValue(y, Update(1)), "UPDATE 1");
  EXPECT_EQ(Locks(key, true), 0);
  EXPECT_EQ(ExecValue(y, "COMMIT"), "COMMIT");
  // Sharing off again (a key left out of the file keeps its value, as
  // every reloadable key).
  write("cluster_name =\n");
  ASSERT_TRUE(ExecOk(admin, "RELOAD"));
  EXPECT_TRUE(Eventually([&] { return ClusterValues(a, "state").empty(); }));
  EXPECT_EQ(a.proxy().stats().cluster_lock_txns.load(), 1);
  PQfinish(y);
  PQfinish(admin);
  std::remove(path.c_str());
}

TEST_F(ClusterTest, ClusterKeysApplyOnReload) { ReloadScenario(1); }

// workers = 2: RELOAD reaches both loops; they go on sharing one
// ClusterSync of the new keys (the first loop to reload makes it).
TEST_F(ClusterTest, ClusterKeysApplyOnReloadWithTwoLoops) { ReloadScenario(2); }

TEST_F(ClusterTest, SharingOffTheSameRaceFailsWith40001) {
  ProxyUnderTest a, b;
  TwoProxies("", &a, &b);
  EXPECT_EQ(Race(a, b, 0), "ERROR 40001");
  EXPECT_EQ(a.proxy().stats().cluster_lock_txns.load(), 0);
  EXPECT_EQ(b.proxy().stats().cluster_lock_txns.load(), 0);
}

// Restart on a hot key across proxies: Z (via A) reads one hot row (its
// key taken, its snapshot too), then updates another, hot in the cluster;
// Y (via B) may hold that row's key in an open transaction. Taken now, the
// key would come after Z's snapshot (Y's commit fails Z with 40001); A
// restarts Z instead: rolled back, the key taken before the log runs again
// on a fresh snapshot, and only then the UPDATE. How it is taken depends
// on the keys' order (restart_loop.cc): one sorting after the held key is
// waited for on the same backend; one sorting before it is tried, and when
// Y holds it every key goes back and all are taken again in order
// elsewhere (restart_cluster_retakes).
TEST_F(ClusterTest, RestartTakesAKeyHotInTheClusterInOrder) {
  const std::string cluster = PgUniqueName("cl");
  ProxyUnderTest a, b;
  int64_t key[3] = {0, 0, 0};
  TwoRestartProxies(cluster, &a, &b, key);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_NE(key[1], key[2]);
  const int lo = key[1] < key[2] ? 1 : 2, hi = 3 - lo;  // rows by their keys' order
  PGconn* y = PQconnectdb(b.ClientConninfo().c_str());
  PGconn* z = PQconnectdb(a.ClientConninfo().c_str());
  int updates[3] = {0, 1, 1};  // committed increments per row (LearnAbort's)
  // Z reads `held` and updates `wanted`, Y holding `wanted`'s key when
  // `contended`; returns Z's UPDATE's outcome.
  auto scenario = [&](int held, int wanted, bool contended) -> std::string {
    const std::string row_waits =
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query = '" + Update(wanted) + "'";
    // A sync round a loaded machine delays drops a proxy to local learning
    // for that round (HoldHotRow): the scenario is set up again then.
    for (int attempt = 0; attempt < 20; ++attempt) {
      EXPECT_TRUE(Eventually([&] { return ClusterValue(a, "hot_refs") == "2" && ClusterValue(b, "hot_refs") == "2"; }));
      if (contended) {
        EXPECT_EQ(ExecValue(y, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
        EXPECT_EQ(ExecValue(y, Update(wanted)), "UPDATE 1");
      }
      EXPECT_EQ(ExecValue(z, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
      EXPECT_EQ(ExecValue(z, absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", held)),
                absl::StrCat(updates[held]));
      if ((contended && Locks(key[wanted], true) != 1) || Locks(key[held], true) != 1) {
        if (contended) EXPECT_EQ(ExecValue(y, "ROLLBACK"), "ROLLBACK");  // a round without the cluster: again
        EXPECT_EQ(ExecValue(z, "ROLLBACK"), "ROLLBACK");
        continue;
      }
      const int64_t relocks = a.proxy().stats().restart_cluster_relocks.load();
      const int64_t retakes = a.proxy().stats().restart_cluster_retakes.load();
      EXPECT_EQ(PQsendQuery(z, Update(wanted).c_str()), 1);
      if (contended) {
        // Z's backend waits for the key (its snapshot not taken), or, on a
        // round without the cluster, its UPDATE waits for Y's row.
        bool restarted = false;
        EXPECT_TRUE(Eventually([&] {
          restarted = Locks(key[wanted], false) == 1;
          return restarted || ExecValue(server_conn_, row_waits) == "1";
        }));
        if (!restarted) {
          EXPECT_EQ(ExecValue(y, "ROLLBACK"), "ROLLBACK");
          while (PGresult* r = PQgetResult(z)) PQclear(r);
          ExecValue(z, "ROLLBACK");
          continue;
        }
        // Sorting first, the held key is waited for again behind it.
        EXPECT_EQ(Locks(key[held], true), held == lo ? 1 : 0);
        EXPECT_EQ(ExecValue(y, "COMMIT"), "COMMIT");
        updates[wanted]++;
      }
      const std::string result = PendingResult(z);
      if (result != "UPDATE 1") {
        ExecValue(z, "ROLLBACK");
        return result;
      }
      EXPECT_EQ(ExecValue(z, "COMMIT"), "COMMIT");
      updates[wanted]++;
      EXPECT_EQ(a.proxy().stats().restart_cluster_relocks.load(), relocks + 1);
      // Every key went back only when one it tried was Y's.
      EXPECT_EQ(a.proxy().stats().restart_cluster_retakes.load(), retakes + (contended && held == hi ? 1 : 0));
      return result;
    }
    return "no round with the cluster";
  };
  EXPECT_EQ(scenario(lo, hi, /*contended=*/true), "UPDATE 1");   // waited for on the same backend
  EXPECT_EQ(scenario(hi, lo, /*contended=*/true), "UPDATE 1");   // tried, Y's: all taken again in order
  EXPECT_EQ(scenario(hi, lo, /*contended=*/false), "UPDATE 1");  // tried, free: the held key kept
  PQfinish(y);
  PQfinish(z);
  EXPECT_GE(a.proxy().stats().restart_matches.load(), 3);
  EXPECT_EQ(a.proxy().stats().restart_mismatches.load(), 0);
  EXPECT_EQ(a.proxy().stats().aborts_40001.load(), 1);  // LearnAbort's only
  for (int row : {1, 2}) {
    EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", row)),
              absl::StrCat(updates[row]));
  }
  EXPECT_TRUE(Eventually([&] {
    return Locks(key[1], true) + Locks(key[2], true) + Locks(key[1], false) + Locks(key[2], false) == 0 &&
           a.proxy().stats().cluster_locks_held.load() == 0 && b.proxy().stats().cluster_locks_held.load() == 0;
  }));
}

// A restart whose local key another client of the same proxy holds waits
// for it keeping its backend and its advisory key (cluster_restart_hold_ms):
// Z (via A) reads `held`, W (via A too) has updated `wanted`, Z's UPDATE of
// `wanted` restarts; while W runs, Z's key on `held` stays granted to Z's
// backend, so no other proxy could change the row Z read. Before, Z gave
// its backend and key back during the wait (0 here), and a change to
// `held` meanwhile failed its re-run. W commits: Z takes `wanted`'s key,
// re-runs, its UPDATE goes on; nothing left locked.
void ClusterTest::RestartHoldScenario(bool bounded) {
  const std::string cluster = PgUniqueName("cl");
  ProxyUnderTest a, b;
  Options oa = ClusterOptions(cluster, cluster + "_a"), ob = ClusterOptions(cluster, cluster + "_b");
  oa.restart_on_hot_key = ob.restart_on_hot_key = true;
  oa.cluster_restart_hold_ms = bounded ? 50 : 60000;
  ASSERT_TRUE(IsOk(a.Start(server_, oa)));
  ASSERT_TRUE(IsOk(b.Start(server_, ob)));
  // Both rows hot in A (local keys) and so in the cluster (B a peer).
  LearnAbort(a, 1);
  int64_t key[3] = {0, 0, 0};
  ASSERT_TRUE(Eventually([&] { return (key[1] = PublishedKey(cluster, cluster + "_a")) != 0; }));
  LearnAbort(a, 2);
  ASSERT_TRUE(Eventually([&] {
    const std::string v = ExecValue(
        server_conn_, absl::StrCat("SELECT ref_hash FROM corral.hot_refs WHERE cluster_name = '", cluster,
                                   "' AND proxy_id = '", cluster, "_a' AND ref_hash NOT IN (0, ", key[1], ")"));
    key[2] = v.empty() || v.rfind("ERROR", 0) == 0 ? 0 : std::strtoll(v.c_str(), nullptr, 10);
    return key[2] != 0;
  }));
  int updates[3] = {0, 1, 1};
  const int held = key[1] < key[2] ? 1 : 2, wanted = 3 - held;  // waited for on the same backend after
  PGconn* w = PQconnectdb(a.ClientConninfo().c_str());
  PGconn* z = PQconnectdb(a.ClientConninfo().c_str());
  bool done = false;
  for (int attempt = 0; attempt < 20 && !done; ++attempt) {
    EXPECT_TRUE(Eventually([&] { return ClusterValue(a, "hot_refs") == "2" && ClusterValue(b, "hot_refs") == "2"; }));
    EXPECT_EQ(ExecValue(w, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
    EXPECT_EQ(ExecValue(w, Update(wanted)), "UPDATE 1");
    EXPECT_EQ(ExecValue(z, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
    EXPECT_EQ(ExecValue(z, absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", held)), absl::StrCat(updates[held]));
    if (Locks(key[wanted], true) != 1 || Locks(key[held], true) != 1) {  // a round without the cluster: again
      EXPECT_EQ(ExecValue(w, "ROLLBACK"), "ROLLBACK");
      EXPECT_EQ(ExecValue(z, "ROLLBACK"), "ROLLBACK");
      continue;
    }
    const int64_t holds = a.proxy().stats().restart_held_waits.load();
    const int64_t timeouts = a.proxy().stats().restart_hold_timeouts.load();
    const int64_t waits = a.proxy().stats().restart_key_waits.load();
    EXPECT_EQ(PQsendQuery(z, Update(wanted).c_str()), 1);
    ASSERT_TRUE(Eventually([&] { return a.proxy().stats().restart_key_waits.load() == waits + 1; }));
    // Z waits in the proxy for W's local key, its own advisory key kept
    // (given back, it would be 0 by now); past the bound, given back.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(Locks(key[held], true), bounded ? 0 : 1);
    EXPECT_EQ(a.proxy().stats().restart_held_waits.load(), holds + 1);
    EXPECT_EQ(a.proxy().stats().restart_hold_timeouts.load(), timeouts + (bounded ? 1 : 0));
    EXPECT_EQ(Locks(key[wanted], false), 0);
    EXPECT_EQ(ExecValue(w, "COMMIT"), "COMMIT");
    updates[wanted]++;
    EXPECT_EQ(PendingResult(z), "UPDATE 1");
    EXPECT_EQ(ExecValue(z, "COMMIT"), "COMMIT");
    updates[wanted]++;
    EXPECT_EQ(a.proxy().stats().restart_hold_timeouts.load(), timeouts + (bounded ? 1 : 0));
    done = true;
  }
  EXPECT_TRUE(done) << "no round with the cluster";
  PQfinish(w);
  PQfinish(z);
  EXPECT_EQ(a.proxy().stats().restart_mismatches.load(), 0);
  for (int row : {1, 2}) {
    EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", row)),
              absl::StrCat(updates[row]));
  }
  EXPECT_TRUE(Eventually([&] {
    return Locks(key[1], true) + Locks(key[2], true) + Locks(key[1], false) + Locks(key[2], false) == 0 &&
           a.proxy().stats().cluster_locks_held.load() == 0 && b.proxy().stats().cluster_locks_held.load() == 0;
  }));
}

TEST_F(ClusterTest, RestartKeepsItsKeysWhileItWaitsForALocalKey) { RestartHoldScenario(/*bounded=*/false); }

// Past cluster_restart_hold_ms the restart leaves its backend, giving its
// keys back, and still waits for the local key: re-run and done as before.
TEST_F(ClusterTest, RestartHoldEndsAtItsBound) { RestartHoldScenario(/*bounded=*/true); }

// cluster_restart_hold_ms: 0..60000, 5 by default; a bad value names the key.
TEST(ClusterConfigTest, RestartHoldKey) {
  ExpectIntKey("cluster_restart_hold_ms",
               {{"cluster_restart_hold_ms = 0\n", true, 0},
                {"cluster_restart_hold_ms = 20\n", true, 20},
                {"", true, 5},
                {"cluster_restart_hold_ms = -1\n", false, 5},
                {"cluster_restart_hold_ms = soon\n", false, 5}},
               [](const Options& o) { return o.cluster_restart_hold_ms; });
}

TEST_P(ClusterLockKindTest, KilledClientLeavesTheKeyFree) {
  Held h;
  HoldHotRow(&h);
  ASSERT_FALSE(HasFatalFailure());
  ProxyUnderTest &a = h.a, &b = h.b;
  const int64_t key = h.key;
  PGconn* y = h.y;
  // Z (via A) waits for the key; it dies while waiting: its backend's lock
  // request is cancelled, nothing is left waiting or granted to it.
  PGconn* z = PQconnectdb(a.ClientConninfo().c_str());
  ASSERT_EQ(ExecValue(z, "BEGIN"), "BEGIN");
  ASSERT_EQ(PQsendQuery(z, Update(1).c_str()), 1);
  ASSERT_TRUE(Eventually([&] { return Locks(key, false) == 1; }));
  Kill(z);
  EXPECT_TRUE(Eventually([&] { return Locks(key, false) == 0; }));
  EXPECT_EQ(Locks(key, true), 1);  // Y's
  // Y dies holding it (no Terminate message).
  Kill(y);
  EXPECT_TRUE(Eventually([&] { return Locks(key, true) == 0 && Locks(key, false) == 0; }));
  EXPECT_GE(b.proxy().stats().client_rollbacks.load(), 1);
  EXPECT_GE(a.proxy().stats().client_rollbacks.load(), 1);
  EXPECT_TRUE(Eventually([&] {
    return a.proxy().stats().cluster_locks_held.load() == 0 && b.proxy().stats().cluster_locks_held.load() == 0;
  }));
  // Rolled back: the row is as LearnAbort left it, and the backends serve again.
  for (ProxyUnderTest* p : {&a, &b}) {
    PGconn* w = PQconnectdb(p->ClientConninfo().c_str());
    EXPECT_EQ(ExecValue(w, Update(1)), "UPDATE 1");
    PQfinish(w);
  }
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 1")), "3");
}

TEST_P(ClusterLockKindTest, KilledBackendLeavesTheKeyFree) {
  Held h;
  HoldHotRow(&h);
  ASSERT_FALSE(HasFatalFailure());
  ProxyUnderTest& b = h.b;
  const int64_t key = h.key;
  PGconn* y = h.y;
  EXPECT_EQ(ExecValue(server_conn_,
                      absl::StrCat("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE granted AND ", LockRows(key))),
            "t");
  EXPECT_TRUE(Eventually([&] { return Locks(key, true) == 0; }));
  // The client hears its transaction was lost; the proxy forgets the keys.
  EXPECT_EQ(ExecValue(y, "COMMIT").rfind("ERROR", 0), 0u);
  PQfinish(y);
  EXPECT_TRUE(Eventually([&] { return b.proxy().stats().cluster_locks_held.load() == 0; }));
  EXPECT_GE(b.proxy().stats().backend_failures.load(), 1);
}

// cluster_lock = table: Y (via B) holds row 1's stripe in an open block;
// Z's transactions on row 1 through A that carry no held BEGIN take it too:
// an implicit transaction (a simple Query, an extended unit) runs in a
// block of the proxy's, BEGIN and LOCK before it and a COMMIT behind it,
// and its client sees an implicit transaction's answers (a failure's
// error, ReadyForQuery idle); a Query that opens its own block gets the
// proxy's BEGIN and LOCK before it, its BEGIN's modes apply and the
// server's warning about the BEGIN already in progress is not the
// client's. Each waits for Y, none fails with 40001.
TEST_F(ClusterTest, TableLocksCoverImplicitTransactionsAndUnitsThatBeginTheirBlock) {
  table_locks_ = true;
  Held h;
  HoldHotRow(&h);
  ASSERT_FALSE(HasFatalFailure());
  const int64_t key = h.key;
  PGconn* y = h.y;  // B's client
  ProxyUnderTest& a = h.a;
  PGconn* z = PQconnectdb(a.ClientConninfo().c_str());
  int notices = 0;
  PQsetNoticeReceiver(
      z, [](void* n, const PGresult*) { ++*static_cast<int*>(n); }, &notices);
  const std::string value = absl::StrCat("SELECT v FROM ", table_, " WHERE k = 1");
  // Z's statement waits for Y's stripe; Y ends (`y_end`); Z's outcome.
  auto after_y = [&](const std::function<bool()>& send, const char* y_end) {
    EXPECT_TRUE(send());
    EXPECT_TRUE(Eventually([&] { return Locks(key, false) == 1; }));
    EXPECT_EQ(ExecValue(y, y_end), y_end);
    return PendingResult(z);
  };
  // An implicit simple Query: row 1 was 1 (LearnAbort); Y's +1 and Z's.
  EXPECT_EQ(after_y([&] { return PQsendQuery(z, Update(1).c_str()) == 1; }, "COMMIT"), "UPDATE 1");
  EXPECT_EQ(PQtransactionStatus(z), PQTRANS_IDLE);
  EXPECT_EQ(ExecValue(server_conn_, value), "3");
  // An implicit extended unit (Parse / Bind / Execute / Sync).
  HotTxn(y, key);
  const std::string add = absl::StrCat("UPDATE ", table_, " SET v = v + $1::int WHERE k = 1");
  const char* one[] = {"1"};
  EXPECT_EQ(after_y([&] { return PQsendQueryParams(z, add.c_str(), 1, nullptr, one, nullptr, nullptr, 0) == 1; },
                    "COMMIT"),
            "UPDATE 1");
  EXPECT_EQ(PQtransactionStatus(z), PQTRANS_IDLE);
  EXPECT_EQ(ExecValue(server_conn_, value), "5");
  // An implicit transaction that fails: its error, then idle; nothing of it.
  HotTxn(y, key);
  const std::string div = absl::StrCat("UPDATE ", table_, " SET v = v / 0 WHERE k = 1");
  EXPECT_EQ(after_y([&] { return PQsendQuery(z, div.c_str()) == 1; }, "ROLLBACK"), "ERROR 22012");
  EXPECT_EQ(PQtransactionStatus(z), PQTRANS_IDLE);
  EXPECT_EQ(ExecValue(z, value), "5");
  // A Query that opens its block: SERIALIZABLE as it asked, no warning.
  HotTxn(y, key);
  EXPECT_EQ(after_y(
                [&] {
                  return PQsendQuery(z, absl::StrCat("BEGIN ISOLATION LEVEL SERIALIZABLE; ", Update(1)).c_str()) == 1;
                },
                "COMMIT"),
            "UPDATE 1");
  EXPECT_EQ(PQtransactionStatus(z), PQTRANS_INTRANS);
  EXPECT_EQ(ExecValue(z, "SHOW transaction_isolation"), "serializable");
  EXPECT_EQ(ExecValue(z, "COMMIT"), "COMMIT");
  EXPECT_EQ(ExecValue(server_conn_, value), "7");
  // A unit that binds BEGIN first, as pgjdbc sends a block's first query
  // (libpq's pipeline: two Parse / Bind / Execute, one Sync).
  HotTxn(y, key);
  EXPECT_EQ(after_y(
                [&] {
                  return PQenterPipelineMode(z) == 1 &&
                         PQsendQueryParams(z, "BEGIN ISOLATION LEVEL REPEATABLE READ", 0, nullptr, nullptr, nullptr,
                                           nullptr, 0) == 1 &&
                         PQsendQueryParams(z, add.c_str(), 1, nullptr, one, nullptr, nullptr, 0) == 1 &&
                         PQpipelineSync(z) == 1;
                },
                "COMMIT"),
            "BEGIN");
  // (In a pipeline PendingResult read the BEGIN's result; then the
  // UPDATE's and the Sync's.)
  std::string tags;
  for (int i = 0; i < 8 && PQpipelineStatus(z) == PQ_PIPELINE_ON; ++i) {
    PGresult* r = PQgetResult(z);
    if (r == nullptr) continue;
    if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
      PQclear(r);
      break;
    }
    absl::StrAppend(&tags, PQcmdStatus(r), ";");
    PQclear(r);
  }
  EXPECT_EQ(tags, "UPDATE 1;");
  EXPECT_EQ(PQexitPipelineMode(z), 1);
  EXPECT_EQ(PQtransactionStatus(z), PQTRANS_INTRANS);
  EXPECT_EQ(ExecValue(z, "SHOW transaction_isolation"), "repeatable read");
  EXPECT_EQ(ExecValue(z, "COMMIT"), "COMMIT");
  EXPECT_EQ(ExecValue(server_conn_, value), "9");
  EXPECT_EQ(notices, 0);
  EXPECT_GE(a.proxy().stats().cluster_wrapped_units.load(), 3);
  EXPECT_EQ(a.proxy().stats().cluster_unlocked_units.load(), 0);
  EXPECT_EQ(a.proxy().stats().aborts_40001.load(), 1);  // LearnAbort's only
  EXPECT_TRUE(Eventually([&] { return Locks(key, true) == 0 && Locks(key, false) == 0; }));
  PQfinish(z);
  PQfinish(y);
}

// The session settings a client's transaction needs on its backend (the
// attach SQL) go before the proxy's BEGIN and LOCK, not inside the block:
// a failed implicit transaction in the proxy's block rolls back, and
// settings inside it would go with it while the proxy counted them as set.
// One backend on A, so Z's settings go to it again after W's turn.
TEST_F(ClusterTest, TableLocksKeepSessionSettingsOutOfTheProxysBlock) {
  table_locks_ = true;
  const std::string cluster = PgUniqueName("cl");
  ProxyUnderTest a, b;
  Options oa = ClusterOptions(cluster, cluster + "_a");
  oa.pool_size = 1;
  ASSERT_TRUE(IsOk(a.Start(server_, oa)));
  ASSERT_TRUE(IsOk(b.Start(server_, ClusterOptions(cluster, cluster + "_b"))));
  LearnAbort(a, 1);
  ASSERT_TRUE(Eventually([&] { return ClusterValue(a, "hot_refs") == "1"; }));
  PGconn* z = PQconnectdb(a.ClientConninfo().c_str());
  PGconn* w = PQconnectdb(a.ClientConninfo().c_str());
  ASSERT_TRUE(ExecOk(z, "SET application_name = 'corral_zz'"));
  const std::string div = absl::StrCat("UPDATE ", table_, " SET v = v / 0 WHERE k = 1");
  int64_t wrapped = 0;
  for (int attempt = 0; attempt < 20 && wrapped == 0; ++attempt) {  // (a round without the cluster: again)
    EXPECT_NE(ExecValue(w, "SHOW application_name"), "corral_zz");  // the backend back at W's settings
    EXPECT_EQ(ExecValue(z, div), "ERROR 22012");
    wrapped = a.proxy().stats().cluster_wrapped_units.load();
  }
  EXPECT_EQ(wrapped, 1);
  EXPECT_EQ(ExecValue(z, "SHOW application_name"), "corral_zz");
  PQfinish(z);
  PQfinish(w);
}

// A stripe LOCK that fails (here the lock_timeout Z set, while Y holds
// the stripe) fails the proxy's block: Z's statement behind it draws 25P02
// ("current transaction is aborted"), which says nothing of why; Z gets
// the LOCK's 55P03 instead, in a block, as an implicit transaction and
// in a Query that opens its block, and its session goes on. Fails with 25P02 without Backend::lock_error.
TEST_F(ClusterTest, TableLocksFailedLockGivesTheClientItsError) {
  table_locks_ = true;
  Held h;
  HoldHotRow(&h);
  ASSERT_FALSE(HasFatalFailure());
  PGconn* z = PQconnectdb(h.a.ClientConninfo().c_str());
  ASSERT_TRUE(ExecOk(z, "SET lock_timeout = '100ms'"));
  // Each case draws 55P03 either way (a row lock wait that times out says
  // the same); the count says it was the LOCK's. A sync round that a
  // loaded machine delays drops A to local learning for that round (no
  // LOCK, the documented fallback): the case is tried again then.
  const Stats& s = h.a.proxy().stats();
  auto lock_fails = [&](const std::function<void()>& step) {
    for (int attempt = 0; attempt < 20; ++attempt) {
      const int64_t before = s.cluster_lock_errors.load();
      if (!Eventually([&] { return ClusterValue(h.a, "hot_refs") == "1"; })) return false;
      step();
      if (s.cluster_lock_errors.load() == before + 1) return true;
    }
    return false;
  };
  EXPECT_TRUE(lock_fails([&] {  // in a block (the BEGIN held)
    EXPECT_EQ(ExecValue(z, "BEGIN"), "BEGIN");
    EXPECT_EQ(ExecValue(z, Update(1)), "ERROR 55P03");
    EXPECT_EQ(ExecValue(z, "ROLLBACK"), "ROLLBACK");
  }));
  EXPECT_TRUE(lock_fails([&] { EXPECT_EQ(ExecValue(z, Update(1)), "ERROR 55P03"); }));  // wrapped
  EXPECT_TRUE(lock_fails([&] {  // a Query that opens its own block behind the proxy's BEGIN and LOCK
    EXPECT_EQ(ExecValue(z, "BEGIN; " + Update(1)), "ERROR 55P03");
    EXPECT_EQ(ExecValue(z, "ROLLBACK"), "ROLLBACK");
  }));
  const int64_t errors = s.cluster_lock_errors.load();
  EXPECT_EQ(ExecValue(z, "SHOW lock_timeout"), "100ms");
  EXPECT_EQ(ExecValue(h.y, "COMMIT"), "COMMIT");
  EXPECT_EQ(ExecValue(z, Update(1)), "UPDATE 1");
  EXPECT_EQ(s.cluster_lock_errors.load(), errors);
  PQfinish(z);
  PQfinish(h.y);
}

// A restart (restart_on_hot_key) with table locks: Z (via A) read row 1
// (its stripe taken after BEGIN), then updates row 2, whose stripe Y (via
// B) holds: rolled back (which releases row 1's stripe), it re-runs with
// BEGIN and one LOCK of both stripes, waits for Y, and goes on.
TEST_F(ClusterTest, TableLocksRestartTakesEveryStripeAfterItsBegin) {
  table_locks_ = true;
  const std::string cluster = PgUniqueName("cl");
  ProxyUnderTest a, b;
  int64_t key[3] = {0, 0, 0};
  TwoRestartProxies(cluster, &a, &b, key);
  ASSERT_FALSE(HasFatalFailure());
  if (LockStripe(key[1]) == LockStripe(key[2])) {
    GTEST_SKIP() << "rows 1 and 2 share a stripe (1 in " << kLockStripes << ")";
  }
  PGconn* y = PQconnectdb(b.ClientConninfo().c_str());
  PGconn* z = PQconnectdb(a.ClientConninfo().c_str());
  std::string result = "no round with the cluster";
  // A sync round a loaded machine delays drops a proxy to local learning
  // for that round (HoldHotRow): set up again then.
  for (int attempt = 0; attempt < 20; ++attempt) {
    ASSERT_TRUE(Eventually([&] { return ClusterValue(a, "hot_refs") == "2" && ClusterValue(b, "hot_refs") == "2"; }));
    ASSERT_EQ(ExecValue(y, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
    ASSERT_EQ(ExecValue(y, Update(2)), "UPDATE 1");
    ASSERT_EQ(ExecValue(z, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
    ASSERT_EQ(ExecValue(z, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 1")), "1");
    if (Locks(key[2], true) != 1 || Locks(key[1], true) != 1) {
      EXPECT_EQ(ExecValue(y, "ROLLBACK"), "ROLLBACK");
      EXPECT_EQ(ExecValue(z, "ROLLBACK"), "ROLLBACK");
      continue;
    }
    EXPECT_EQ(PQsendQuery(z, Update(2).c_str()), 1);
    // Rolled back and waiting for row 2's stripe (and no longer holding row 1's but as part of that LOCK).
    EXPECT_TRUE(Eventually([&] { return Locks(key[2], false) == 1; }));
    EXPECT_EQ(ExecValue(y, "COMMIT"), "COMMIT");
    result = PendingResult(z);
    if (result == "UPDATE 1") {
      EXPECT_EQ(ExecValue(z, "COMMIT"), "COMMIT");
    }
    break;
  }
  EXPECT_EQ(result, "UPDATE 1");
  // Its template grows in the cluster now: the next of its blocks takes
  // row 1's advisory key before BEGIN too (kept across a restart's
  // rollback), beside the stripe.
  ASSERT_EQ(ExecValue(z, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
  ASSERT_EQ(ExecValue(z, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 1")), "1");
  table_locks_ = false;
  EXPECT_EQ(Locks(key[1], true), 1);  // the advisory key
  table_locks_ = true;
  EXPECT_EQ(Locks(key[1], true), 1);  // the stripe
  EXPECT_EQ(ExecValue(z, "COMMIT"), "COMMIT");
  EXPECT_EQ(a.proxy().stats().cluster_growing_txns.load(), 1);
  EXPECT_EQ(a.proxy().stats().restart_cluster_relocks.load(), 1);
  EXPECT_GE(a.proxy().stats().restart_matches.load(), 1);
  EXPECT_EQ(a.proxy().stats().aborts_40001.load(), 1);  // LearnAbort's only
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 2")), "3");
  EXPECT_TRUE(Eventually([&] {
    return Locks(key[1], true) + Locks(key[2], true) + Locks(key[1], false) + Locks(key[2], false) == 0 &&
           a.proxy().stats().cluster_locks_held.load() == 0;
  }));
  PQfinish(y);
  PQfinish(z);
}

// Proxies of one cluster taking different kinds of lock would not exclude
// each other: while they disagree both take none (SHOW CLUSTER
// "lock-mismatch"), and say so.
TEST_F(ClusterTest, ProxiesTakingDifferentLocksTakeNone) {
  const std::string cluster = PgUniqueName("cl");
  ProxyUnderTest a, b;
  ASSERT_TRUE(IsOk(a.Start(server_, ClusterOptions(cluster, cluster + "_a"))));
  table_locks_ = true;
  ASSERT_TRUE(IsOk(b.Start(server_, ClusterOptions(cluster, cluster + "_b"))));
  LearnAbort(a, 1);
  EXPECT_TRUE(Eventually([&] {
    return ClusterValue(a, "state") == "lock-mismatch" && ClusterValue(b, "state") == "lock-mismatch";
  }));
  EXPECT_EQ(ClusterValue(a, "lock"), "advisory");
  EXPECT_EQ(ClusterValue(b, "lock"), "table");
  EXPECT_TRUE(Eventually([&] { return ClusterValue(b, "hot_refs") == "1"; }));  // shared all the same
  PGconn* y = PQconnectdb(b.ClientConninfo().c_str());
  EXPECT_EQ(ExecValue(y, "BEGIN"), "BEGIN");
  EXPECT_EQ(ExecValue(y, Update(1)), "UPDATE 1");
  EXPECT_EQ(ExecValue(y, "COMMIT"), "COMMIT");
  PQfinish(y);
  EXPECT_EQ(b.proxy().stats().cluster_lock_txns.load(), 0);
}

TEST_F(ClusterTest, SharedTableUnreachableFallsBackWithoutClientErrors) {
  // A database whose corral.hot_refs is not the proxy's table: every
  // publish fails; clients must not notice.
  const std::string db = PgUniqueName("cldb");
  ASSERT_TRUE(IsOk(RecreateDatabase(server_, db)));
  {
    PGconn* d = PQconnectdb(absl::StrCat(server_.conninfo, " dbname=", db).c_str());
    ASSERT_TRUE(ExecOk(d, "CREATE SCHEMA corral; CREATE TABLE corral.hot_refs (x int)"));
    ASSERT_TRUE(ExecOk(d, "CREATE TABLE t (k int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)"));
    PQfinish(d);
  }
  Options o = ClusterOptions(PgUniqueName("cl"), "solo");
  o.server_dbname = db;
  ProxyUnderTest p;
  ASSERT_TRUE(IsOk(p.Start(server_, o)));
  EXPECT_TRUE(Eventually([&] { return p.proxy().stats().cluster_sync_failures.load() >= 2; }));
  PGconn* c = PQconnectdb(p.ClientConninfo(db).c_str());
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(ExecValue(c, "BEGIN"), "BEGIN");
    ASSERT_EQ(ExecValue(c, "UPDATE t SET v = v + 1 WHERE k = 1"), "UPDATE 1");
    ASSERT_EQ(ExecValue(c, "COMMIT"), "COMMIT");
  }
  EXPECT_EQ(ExecValue(c, "SELECT v FROM t WHERE k = 1"), "20");
  PQfinish(c);
  EXPECT_EQ(ClusterValue(p, "state"), "local-only");
  EXPECT_EQ(p.proxy().stats().cluster_lock_txns.load(), 0);
  EXPECT_EQ(p.proxy().stats().cluster_publishes.load(), 0);
  p.Stop();
  DropDatabase(server_, db);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
