// Transparent replay (issue 24) end to end against a real server
// (CORRAL_PG_CONNINFO; skipped without one), with libpq clients: the server
// fails a SERIALIZABLE transaction with a real 40001 (its UPDATE waits on a
// row another transaction updated, which then commits). A blind-write
// transaction is replayed invisibly; one whose replayed results differ (a
// row the other transaction changed, a sequence value) gets the original
// error; a client that leaves while its replay waits or runs leaves no
// transaction or lock behind. Implicit (autocommit) transactions: a Query
// of one statement is replayed as it was; one of several whose first
// results the client got, in a block of the proxy's (a differing earlier
// result: the original error, nothing of the Query committed).
#include <libpq-fe.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

class ReplayTest : public ReplayClientsTest {
 protected:
  // Client a updates row 1; client b's SERIALIZABLE transaction runs
  // `before` (its snapshot is taken there, a's update not committed), then
  // updates row 1 (sent, not answered), which waits for a.
  template <typename Before>
  void BlockOnRow1(PGconn* a, PGconn* b, Before before) {
    EXPECT_TRUE(ExecOk(a, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
    EXPECT_EQ(ExecValue(a, Update(1)), "UPDATE 1");
    EXPECT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
    before(b);
    EXPECT_EQ(PQsendQuery(b, Update(1).c_str()), 1);
    EXPECT_TRUE(WaitsForLock());
  }
  // BlockOnRow1, then a commits: the server fails b's UPDATE with 40001.
  // Returns what b's UPDATE answered.
  template <typename Before>
  std::string Conflict(PGconn* a, PGconn* b, Before before) {
    BlockOnRow1(a, b, before);
    EXPECT_TRUE(ExecOk(a, "COMMIT"));
    return Collect(b);
  }
  void UpdateRow5(PGconn* c) { EXPECT_EQ(ExecValue(c, Update(5)), "UPDATE 1"); }
  // Sessions waiting for a lock on the server in a statement on the
  // scratch table (the server is shared with other tests).
  std::string LockWaits() {
    return ExecValue(server_conn_, absl::StrCat("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
                                                "WHERE NOT l.granted AND a.query LIKE '%",
                                                table_, "%'"));
  }
  bool WaitsForLock() {
    return Eventually([&] { return LockWaits() != "0"; });
  }
  // No other session holds a lock on the scratch table (any transaction
  // that wrote or read it does) or sits in a transaction after a statement
  // on it.
  // Every result of c's pending Query, in order: tags, a single row's
  // value, "ERROR <sqlstate>", joined by " | ".
  static std::string CollectAll(PGconn* c) {
    std::string out;
    while (PGresult* r = PQgetResult(c)) {
      std::string one;
      if (PQresultStatus(r) == PGRES_FATAL_ERROR) {
        one = absl::StrCat("ERROR ", PQresultErrorField(r, PG_DIAG_SQLSTATE));
      } else if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) {
        one = PQgetvalue(r, 0, 0);
      } else {
        one = PQcmdStatus(r);
      }
      absl::StrAppend(&out, out.empty() ? "" : " | ", one);
      PQclear(r);
    }
    return out;
  }
  // Implicit transactions: a updates row 1 in an open SERIALIZABLE
  // transaction; b (autocommit, serializable by default) sends `sql`,
  // which waits for a's row lock.
  void ImplicitBlockOnRow1(PGconn* a, PGconn* b, const std::string& sql) {
    EXPECT_TRUE(ExecOk(b, "SET default_transaction_isolation = 'serializable'"));
    EXPECT_TRUE(ExecOk(a, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
    EXPECT_EQ(ExecValue(a, Update(1)), "UPDATE 1");
    EXPECT_EQ(PQsendQuery(b, sql.c_str()), 1);
    EXPECT_TRUE(WaitsForLock());
  }
  // ImplicitBlockOnRow1, then a commits: the server fails b's implicit
  // transaction with 40001. Every result b got (CollectAll).
  std::string ImplicitConflict(PGconn* a, PGconn* b, const std::string& sql) {
    ImplicitBlockOnRow1(a, b, sql);
    EXPECT_TRUE(ExecOk(a, "COMMIT"));
    return CollectAll(b);
  }
  void ExpectImplicitReplayed(int matches) {
    EXPECT_EQ(stats().replays_implicit.load(), matches);
    EXPECT_EQ(stats().replay_matches.load(), matches);
    EXPECT_EQ(stats().replay_mismatches.load(), 0);
    EXPECT_EQ(stats().replay_unreplayable.load(), 0);
    EXPECT_EQ(stats().aborts_40001.load(), 0);
  }
  bool NothingLeftBehind() {
    return Eventually([&] {
      return ExecValue(server_conn_, absl::StrCat("SELECT count(*) FROM pg_locks WHERE pid <> pg_backend_pid() "
                                                  "AND relation = '",
                                                  table_, "'::regclass")) == "0" &&
             ExecValue(server_conn_, absl::StrCat("SELECT count(*) FROM pg_stat_activity WHERE pid <> "
                                                  "pg_backend_pid() AND xact_start IS NOT NULL AND query LIKE '%",
                                                  table_, "%'")) == "0";
    });
  }
};

TEST_F(ReplayTest, BlindWriteTransactionContinuesInvisibly) {
  StartProxy(true);
  PGconn* a = Connect();
  PGconn* b = Connect();
  // Two blind UPDATEs: the client saw only "UPDATE 1" tags, which the
  // re-execution reproduces.
  EXPECT_EQ(Conflict(a, b, [&](PGconn* c) { UpdateRow5(c); }), "UPDATE 1");
  EXPECT_TRUE(ExecOk(b, "COMMIT"));
  EXPECT_EQ(stats().replays.load(), 1);
  EXPECT_EQ(stats().replay_matches.load(), 1);
  EXPECT_EQ(stats().replay_mismatches.load(), 0);
  // Both rows updated once by b (row 1 also by a), the first attempt's
  // update of row 5 rolled back.
  EXPECT_EQ(Value(1), "2");
  EXPECT_EQ(Value(5), "1");
  EXPECT_EQ(stats().aborts_40001.load(), 0);  // no client saw a conflict
  EXPECT_TRUE(NothingLeftBehind());
  // The same without replay: the client gets the 40001.
  proxy_.Stop();
  for (PGconn* c : conns_) PQfinish(c);
  conns_.clear();
  StartProxy(false);
  a = Connect();
  b = Connect();
  EXPECT_EQ(Conflict(a, b, [&](PGconn* c) { UpdateRow5(c); }), "ERROR 40001");
  EXPECT_TRUE(ExecOk(b, "ROLLBACK"));
  EXPECT_EQ(stats().replays.load(), 0);
  EXPECT_EQ(Value(1), "3");
  EXPECT_EQ(Value(5), "1");
}

TEST_F(ReplayTest, FailedCommitIsReplayed) {
  StartProxy(true);
  PGconn* a = Connect();
  PGconn* b = Connect();
  // Write skew: each reads the other's row and writes its own; the second
  // COMMIT fails with 40001 (serialization failure at commit).
  ASSERT_TRUE(ExecOk(a, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  ASSERT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  EXPECT_EQ(ExecValue(a, absl::StrCat("SELECT count(*) FROM ", table_, " WHERE k = 2 AND v >= 0")), "1");
  EXPECT_EQ(ExecValue(b, absl::StrCat("SELECT count(*) FROM ", table_, " WHERE k = 3 AND v >= 0")), "1");
  EXPECT_EQ(ExecValue(a, Update(3)), "UPDATE 1");
  EXPECT_EQ(ExecValue(b, Update(2)), "UPDATE 1");
  EXPECT_EQ(ExecValue(a, "COMMIT"), "COMMIT");
  // b's results replay the same (a count that a's update did not change,
  // an UPDATE tag): its COMMIT goes through on the replay.
  EXPECT_EQ(ExecValue(b, "COMMIT"), "COMMIT");
  EXPECT_EQ(stats().replays.load(), 1);
  EXPECT_EQ(stats().replay_matches.load(), 1);
  EXPECT_EQ(Value(2), "1");
  EXPECT_EQ(Value(3), "1");
  EXPECT_TRUE(NothingLeftBehind());
}

TEST_F(ReplayTest, ARowTheOtherTransactionChangedGivesTheOriginalError) {
  StartProxy(true);
  PGconn* a = Connect();
  PGconn* b = Connect();
  const std::string read1 = absl::StrCat("SELECT v FROM ", table_, " WHERE k = 1");
  // b read row 1 before a's update committed ("0"); the replay reads "1".
  EXPECT_EQ(Conflict(a, b, [&](PGconn* c) { EXPECT_EQ(ExecValue(c, read1), "0"); }), "ERROR 40001");
  EXPECT_EQ(stats().replays.load(), 1);
  EXPECT_EQ(stats().replay_mismatches.load(), 1);
  EXPECT_EQ(stats().replay_matches.load(), 0);
  // The client's transaction is failed, as the server's would be.
  EXPECT_EQ(ExecValue(b, "SELECT 1"), "ERROR 25P02");
  EXPECT_TRUE(ExecOk(b, "ROLLBACK"));
  EXPECT_EQ(Value(1), "1");  // a's update only
  EXPECT_EQ(stats().aborts_40001.load(), 1);
  EXPECT_TRUE(NothingLeftBehind());
  // The client goes on.
  EXPECT_TRUE(ExecOk(b, "BEGIN"));
  EXPECT_EQ(ExecValue(b, read1), "1");
  EXPECT_TRUE(ExecOk(b, "COMMIT"));
}

TEST_F(ReplayTest, AReturnedSequenceValueDiffers) {
  StartProxy(true);
  const std::string seq = absl::StrCat(table_, "_seq");
  ASSERT_TRUE(ExecOk(server_conn_, absl::StrCat("CREATE SEQUENCE ", seq)));
  PGconn* a = Connect();
  PGconn* b = Connect();
  const std::string returning =
      absl::StrCat("UPDATE ", table_, " SET v = v + 1 WHERE k = 5 RETURNING nextval('", seq, "')");
  EXPECT_EQ(Conflict(a, b, [&](PGconn* c) { EXPECT_EQ(ExecValue(c, returning), "1"); }), "ERROR 40001");
  EXPECT_TRUE(ExecOk(b, "ROLLBACK"));
  EXPECT_EQ(stats().replay_mismatches.load(), 1);
  EXPECT_EQ(Value(5), "0");
  EXPECT_TRUE(ExecOk(server_conn_, absl::StrCat("DROP SEQUENCE ", seq)));
  EXPECT_TRUE(NothingLeftBehind());
}

TEST_F(ReplayTest, ClientLeavingWhileTheReplayWaitsLeavesNothingBehind) {
  StartProxy(true);
  PGconn* a = Connect();
  PGconn* b = Connect();
  PGconn* h = Connect();
  // h reads row 5 in a transaction that stays open: the replay of b waits
  // for it (the running holder of the first reference b touched).
  BlockOnRow1(a, b, [&](PGconn* c) { UpdateRow5(c); });
  ASSERT_TRUE(ExecOk(h, "BEGIN"));
  EXPECT_EQ(ExecValue(h, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 5")), "0");
  ASSERT_TRUE(ExecOk(a, "COMMIT"));
  ASSERT_TRUE(Eventually([&] { return stats().replay_waits.load() == 1; }));
  EXPECT_EQ(stats().replays.load(), 0);  // not yet: h runs
  ASSERT_EQ(PQconsumeInput(b), 1);
  EXPECT_EQ(PQisBusy(b), 1);  // b's UPDATE is not answered meanwhile
  PQfinish(b);
  conns_.erase(std::find(conns_.begin(), conns_.end(), b));
  ASSERT_TRUE(Eventually([&] { return stats().client_rollbacks.load() == 1; }));
  EXPECT_TRUE(ExecOk(h, "COMMIT"));
  EXPECT_TRUE(NothingLeftBehind());
  EXPECT_EQ(stats().replays.load(), 0);
  EXPECT_EQ(Value(1), "1");
  EXPECT_EQ(Value(5), "0");
}

TEST_F(ReplayTest, ClientLeavingWhileTheReplayRunsLeavesNothingBehind) {
  StartProxy(true);
  PGconn* a = Connect();
  PGconn* b = Connect();
  PGconn* h = Connect();
  PGconn* d = Direct();  // outside the proxy: not a holder it knows of
  BlockOnRow1(a, b, [&](PGconn* c) { UpdateRow5(c); });
  // The replay waits for h (it read row 5, the first row b touched) ...
  ASSERT_TRUE(ExecOk(h, "BEGIN"));
  EXPECT_EQ(ExecValue(h, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 5")), "0");
  ASSERT_TRUE(ExecOk(a, "COMMIT"));
  ASSERT_TRUE(Eventually([&] { return stats().replay_waits.load() == 1; }));
  // ... meanwhile d updates row 5 (b's first attempt is rolled back), so
  // once h ends, the replay's UPDATE of row 5 waits for d.
  ASSERT_TRUE(ExecOk(d, "BEGIN"));
  EXPECT_EQ(ExecValue(d, Update(5)), "UPDATE 1");
  EXPECT_TRUE(ExecOk(h, "COMMIT"));
  ASSERT_TRUE(Eventually([&] { return stats().replays.load() == 1; }));
  ASSERT_TRUE(WaitsForLock());  // the replay, on row 5
  PQfinish(b);
  conns_.erase(std::find(conns_.begin(), conns_.end(), b));
  ASSERT_TRUE(Eventually([&] { return stats().client_rollbacks.load() == 1; }));
  EXPECT_TRUE(ExecOk(d, "COMMIT"));
  EXPECT_TRUE(NothingLeftBehind());
  EXPECT_EQ(stats().replay_matches.load(), 0);
  EXPECT_EQ(Value(1), "1");
  EXPECT_EQ(Value(5), "1");  // d's update only
}

TEST_F(ReplayTest, UnreplayableTransactionsGetTheErrorAndAreCounted) {
  StartProxy(true);
  PGconn* a = Connect();
  PGconn* b = Connect();
  // A savepoint: not replayed.
  EXPECT_EQ(Conflict(a, b, [&](PGconn* c) { EXPECT_TRUE(ExecOk(c, "SAVEPOINT s")); }), "ERROR 40001");
  EXPECT_TRUE(ExecOk(b, "ROLLBACK"));
  EXPECT_EQ(stats().replays.load(), 0);
  EXPECT_EQ(stats().replay_unreplayable.load(), 1);
  EXPECT_EQ(stats().replay_overflows.load(), 0);
  EXPECT_TRUE(NothingLeftBehind());
}

// Implicit transactions (autocommit, default_transaction_isolation =
// serializable, no BEGIN): a simple Query of one statement, and of several,
// which the server runs as one implicit transaction.
TEST_F(ReplayTest, AnAutocommitUpdateIsReplayedInvisibly) {
  StartProxy(true);
  PGconn* a = Connect();
  PGconn* b = Connect();
  EXPECT_EQ(ImplicitConflict(a, b, Update(1)), "UPDATE 1");
  ExpectImplicitReplayed(1);
  EXPECT_EQ(stats().replays_extended.load(), 0);
  EXPECT_EQ(Value(1), "2");  // a's update and b's, once
  // b's session goes on in autocommit: its next statement commits by itself.
  EXPECT_EQ(ExecValue(b, Update(2)), "UPDATE 1");
  EXPECT_EQ(Value(2), "1");
  EXPECT_TRUE(NothingLeftBehind());
}

TEST_F(ReplayTest, WithoutReplayTheClientGetsTheError) {
  StartProxy(false);
  PGconn* a = Connect();
  PGconn* b = Connect();
  EXPECT_EQ(ImplicitConflict(a, b, Update(1)), "ERROR 40001");
  EXPECT_EQ(stats().replays.load(), 0);
  EXPECT_EQ(Value(1), "1");
}

// "UPDATE 5; UPDATE 1" is one implicit transaction: the client got the
// first tag when the second failed. The replay runs in a block of the
// proxy's, swallows the matched tag, forwards the second, then commits:
// row 5 updated once.
TEST_F(ReplayTest, AMultiStatementQueryIsReplayedInABlock) {
  StartProxy(true);
  PGconn* a = Connect();
  PGconn* b = Connect();
  EXPECT_EQ(ImplicitConflict(a, b, absl::StrCat(Update(5), "; ", Update(1))), "UPDATE 1 | UPDATE 1");
  ExpectImplicitReplayed(1);
  EXPECT_EQ(Value(5), "1");
  EXPECT_EQ(Value(1), "2");
  EXPECT_EQ(PQtransactionStatus(b), PQTRANS_IDLE);
  EXPECT_TRUE(NothingLeftBehind());
}

// The Query read row 1 before a committed (0); the replay reads 1: the
// client gets the original error after the row it saw, and nothing of the
// Query commits (row 5's update neither by the original nor by the replay).
TEST_F(ReplayTest, ADifferingEarlierResultGetsTheErrorAndCommitsNothing) {
  StartProxy(true);
  PGconn* a = Connect();
  PGconn* b = Connect();
  const std::string sql =
      absl::StrCat(Update(5), "; SELECT v FROM ", table_, " WHERE k = 1; ", Update(1));
  EXPECT_EQ(ImplicitConflict(a, b, sql), "UPDATE 1 | 0 | ERROR 40001");
  EXPECT_EQ(stats().replays_implicit.load(), 1);
  EXPECT_EQ(stats().replay_mismatches.load(), 1);
  EXPECT_EQ(stats().replay_matches.load(), 0);
  // (Counted when the proxy's ROLLBACK is answered, after the client's answer.)
  EXPECT_TRUE(Eventually([&] { return stats().aborts_40001.load() == 1; }));
  EXPECT_EQ(Value(5), "0");
  EXPECT_EQ(Value(1), "1");  // a's update only
  EXPECT_EQ(PQtransactionStatus(b), PQTRANS_IDLE);
  EXPECT_EQ(ExecValue(b, Update(2)), "UPDATE 1");  // the session goes on
  EXPECT_TRUE(NothingLeftBehind());
}

// A SET among the statements would be undone or redone by a replay: the
// client gets the error, counted.
TEST_F(ReplayTest, ASessionChangeInTheQueryIsNotReplayed) {
  StartProxy(true);
  PGconn* a = Connect();
  PGconn* b = Connect();
  EXPECT_EQ(ImplicitConflict(a, b, absl::StrCat("SET LOCAL work_mem = '8MB'; ", Update(1))), "SET | ERROR 40001");
  EXPECT_EQ(stats().replays.load(), 0);
  EXPECT_EQ(stats().replay_unreplayable.load(), 1);
  EXPECT_EQ(Value(1), "1");
  EXPECT_TRUE(NothingLeftBehind());
}

TEST_F(ReplayTest, ClientLeavingWhileAnImplicitReplayWaitsLeavesNothingBehind) {
  StartProxy(true);
  PGconn* a = Connect();
  PGconn* b = Connect();
  PGconn* h = Connect();
  ImplicitBlockOnRow1(a, b, Update(1));
  // h reads row 1 in a transaction that stays open: once a commits, b's
  // replay waits for h (a running holder of row 1).
  ASSERT_TRUE(ExecOk(h, "BEGIN"));
  EXPECT_EQ(ExecValue(h, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 1")), "0");
  ASSERT_TRUE(ExecOk(a, "COMMIT"));
  ASSERT_TRUE(Eventually([&] { return stats().replay_waits.load() == 1; }));
  EXPECT_EQ(stats().replays.load(), 0);
  ASSERT_EQ(PQconsumeInput(b), 1);
  EXPECT_EQ(PQisBusy(b), 1);  // b's UPDATE is not answered meanwhile
  PQfinish(b);
  conns_.erase(std::find(conns_.begin(), conns_.end(), b));
  ASSERT_TRUE(Eventually([&] { return stats().client_rollbacks.load() == 1; }));
  EXPECT_TRUE(ExecOk(h, "COMMIT"));
  EXPECT_TRUE(NothingLeftBehind());
  EXPECT_EQ(stats().replays.load(), 0);
  EXPECT_EQ(Value(1), "1");  // a's only
}

}  // namespace
}  // namespace proxy
}  // namespace corral
