// Multi-proxy mode (issue 25) with cluster_lock = table: the stripes'
// LOCK TABLE after BEGIN for implicit transactions, units that open their
// own block, session settings, a LOCK that fails, restarts, and proxies
// taking different kinds of lock. Fixture: cluster_fixture.h.
#include <sys/socket.h>

#include <string>
#include <vector>

#include "tests/proxy/cluster_fixture.h"

namespace corral {
namespace proxy {
namespace {

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

}  // namespace
}  // namespace proxy
}  // namespace corral
