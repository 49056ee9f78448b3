// Multi-proxy mode (issue 25): a reference hot on one proxy serialized by
// the other, with either kind of lock; the lock's release (folded into the
// COMMIT, after a replay, a killed client or backend); names agreeing
// across catalog reads; the cluster keys on RELOAD and in the config; the
// shared table unreachable. Fixture: cluster_fixture.h.
#include <sys/socket.h>

#include <string>
#include <vector>

#include "tests/proxy/cluster_fixture.h"

namespace corral {
namespace proxy {
namespace {

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


TEST(ClusterConfigTest, RelockTriesKey) {
  ExpectIntKey("cluster_relock_tries",
               {{"cluster_relock_tries = 1\n", true, 1},
                {"cluster_relock_tries = 20\n", true, 20},
                {"", true, 10},
                {"cluster_relock_tries = 0\n", false, 10},
                {"cluster_relock_tries = many\n", false, 10}},
               [](const Options& o) { return o.cluster_relock_tries; });
}

}  // namespace

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

namespace {

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
