// Transparent replay (issue 24) of implicit (autocommit) transactions, end to
// end against a real server (CORRAL_PG_CONNINFO; skipped without one): the
// client's session runs with default_transaction_isolation = serializable
// and no BEGIN; its UPDATE waits on a row another client's open transaction
// updated, which then commits, and the server fails the implicit
// transaction with a real 40001. Simple protocol (libpq: one statement, and
// several in one Query string, which the server runs as one implicit
// transaction), asyncpg outside transaction() (one Execute; executemany's
// pipelined unit) and pgjdbc with autoCommit=true (unnamed, then named
// statements). Replayed invisibly, each row updated exactly once; a Query
// whose earlier result differs on the replay gets the original error with
// nothing of it committed; a client that leaves while its replay waits
// leaves nothing behind.
#include <libpq-fe.h>

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

class ReplayImplicitTest : public ScratchClientsTest {
 protected:
  void StartProxy() {
    Options o;
    o.pool_size = 4;
    o.replay = true;
    ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  }
  std::string Value(int k) {
    return ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", k));
  }
  bool WaitsForLock() {
    return Eventually([&] {
      return ExecValue(server_conn_, absl::StrCat("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a "
                                                  "USING (pid) WHERE NOT l.granted AND a.query LIKE '%",
                                                  table_, "%'")) != "0";
    });
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
  // Every result of b's pending Query, in order: tags, a single row's
  // value, "ERROR <sqlstate>".
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
  // a updates row 1 in an open SERIALIZABLE transaction; b (autocommit,
  // serializable by default) sends `sql`, which waits for a's row lock.
  void BlockOnRow1(PGconn* a, PGconn* b, const std::string& sql) {
    EXPECT_TRUE(ExecOk(b, "SET default_transaction_isolation = 'serializable'"));
    EXPECT_TRUE(ExecOk(a, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
    EXPECT_EQ(ExecValue(a, Update(1)), "UPDATE 1");
    EXPECT_EQ(PQsendQuery(b, sql.c_str()), 1);
    EXPECT_TRUE(WaitsForLock());
  }
  // BlockOnRow1, then a commits: the server fails b's implicit transaction
  // with 40001. Every result b got.
  std::string Conflict(PGconn* a, PGconn* b, const std::string& sql) {
    BlockOnRow1(a, b, sql);
    EXPECT_TRUE(ExecOk(a, "COMMIT"));
    return CollectAll(b);
  }
  std::pair<int, std::string> Run(const std::string& cmd) {
    std::string out;
    const int rc = Shell(cmd, &out);
    return {rc, out};
  }
  void ExpectInvisible(const std::string& out, int matches) {
    EXPECT_EQ(stats().replays_implicit.load(), matches) << out;
    EXPECT_EQ(stats().replay_matches.load(), matches) << out;
    EXPECT_EQ(stats().replay_mismatches.load(), 0) << out;
    EXPECT_EQ(stats().replay_unreplayable.load(), 0) << out;
    EXPECT_EQ(stats().aborts_40001.load(), 0) << out;
  }
};

TEST_F(ReplayImplicitTest, AnAutocommitUpdateIsReplayedInvisibly) {
  StartProxy();
  PGconn* a = Connect();
  PGconn* b = Connect();
  EXPECT_EQ(Conflict(a, b, Update(1)), "UPDATE 1");
  ExpectInvisible("", 1);
  EXPECT_EQ(stats().replays_extended.load(), 0);
  EXPECT_EQ(Value(1), "2");  // a's update and b's, once
  // b's session goes on in autocommit: its next statement commits by itself.
  EXPECT_EQ(ExecValue(b, Update(2)), "UPDATE 1");
  EXPECT_EQ(Value(2), "1");
  EXPECT_TRUE(NothingLeftBehind());
}

TEST_F(ReplayImplicitTest, WithoutReplayTheClientGetsTheError) {
  Options o;
  o.pool_size = 4;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  PGconn* a = Connect();
  PGconn* b = Connect();
  EXPECT_EQ(Conflict(a, b, Update(1)), "ERROR 40001");
  EXPECT_EQ(stats().replays.load(), 0);
  EXPECT_EQ(Value(1), "1");
}

// "UPDATE 5; UPDATE 1" is one implicit transaction: the client got the
// first tag when the second failed. The replay runs in a block of the
// proxy's, swallows the matched tag, forwards the second, then commits:
// row 5 updated once.
TEST_F(ReplayImplicitTest, AMultiStatementQueryIsReplayedInABlock) {
  StartProxy();
  PGconn* a = Connect();
  PGconn* b = Connect();
  EXPECT_EQ(Conflict(a, b, absl::StrCat(Update(5), "; ", Update(1))), "UPDATE 1 | UPDATE 1");
  ExpectInvisible("", 1);
  EXPECT_EQ(Value(5), "1");
  EXPECT_EQ(Value(1), "2");
  EXPECT_EQ(PQtransactionStatus(b), PQTRANS_IDLE);
  EXPECT_TRUE(NothingLeftBehind());
}

// The Query read row 1 before a committed (0); the replay reads 1: the
// client gets the original error after the row it saw, and nothing of the
// Query commits (row 5's update neither by the original nor by the replay).
TEST_F(ReplayImplicitTest, ADifferingEarlierResultGetsTheErrorAndCommitsNothing) {
  StartProxy();
  PGconn* a = Connect();
  PGconn* b = Connect();
  const std::string sql =
      absl::StrCat(Update(5), "; SELECT v FROM ", table_, " WHERE k = 1; ", Update(1));
  EXPECT_EQ(Conflict(a, b, sql), "UPDATE 1 | 0 | ERROR 40001");
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
TEST_F(ReplayImplicitTest, ASessionChangeInTheQueryIsNotReplayed) {
  StartProxy();
  PGconn* a = Connect();
  PGconn* b = Connect();
  EXPECT_EQ(Conflict(a, b, absl::StrCat("SET LOCAL work_mem = '8MB'; ", Update(1))), "SET | ERROR 40001");
  EXPECT_EQ(stats().replays.load(), 0);
  EXPECT_EQ(stats().replay_unreplayable.load(), 1);
  EXPECT_EQ(Value(1), "1");
  EXPECT_TRUE(NothingLeftBehind());
}

TEST_F(ReplayImplicitTest, ClientLeavingWhileTheReplayWaitsLeavesNothingBehind) {
  StartProxy();
  PGconn* a = Connect();
  PGconn* b = Connect();
  PGconn* h = Connect();
  BlockOnRow1(a, b, Update(1));
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

// asyncpg outside transaction(): Bind / Execute / Sync of a cached
// statement (the client saw its BindComplete before the error: compared in
// the proxy's block), named (cache) and unnamed (no cache).
TEST_F(ReplayImplicitTest, AsyncpgAutocommitExecuteIsReplayedInvisibly) {
  std::string probe;
  if (Shell("/usr/bin/python3 -c 'import asyncpg'", &probe) != 0) GTEST_SKIP() << "no asyncpg";
  StartProxy();
  const std::string script = absl::StrCat("/usr/bin/python3 ", ClientPath("replay_implicit.py"), " ", proxy_.port(),
                                          " ", server_.port, " ", table_, " ");
  auto [rc, out] = Run(script + "auto 100 1 1");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("auto: UPDATE 1"), std::string::npos) << out;
  ExpectInvisible(out, 1);
  EXPECT_GE(stats().replays_extended.load(), 1) << out;
  EXPECT_EQ(Value(1), "2");
  auto [rc2, out2] = Run(script + "auto 0 2 2");
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_NE(out2.find("auto: UPDATE 1"), std::string::npos) << out2;
  ExpectInvisible(out2, 2);
  EXPECT_EQ(Value(2), "2");
  EXPECT_EQ(Value(0), "2");  // the warm-ups
}

// executemany outside transaction(): one implicit unit of three Bind /
// Execute pairs and one Sync; the first Execute's results reached the
// client, the second failed, the server skipped the third. Replayed in a
// block: every row once.
TEST_F(ReplayImplicitTest, AsyncpgAutocommitExecutemanyIsReplayedInABlock) {
  std::string probe;
  if (Shell("/usr/bin/python3 -c 'import asyncpg'", &probe) != 0) GTEST_SKIP() << "no asyncpg";
  StartProxy();
  auto [rc, out] = Run(absl::StrCat("/usr/bin/python3 ", ClientPath("replay_implicit.py"), " ", proxy_.port(), " ",
                                    server_.port, " ", table_, " many 100 3 1"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("many: None"), std::string::npos) << out;
  ExpectInvisible(out, 1);
  EXPECT_EQ(Value(3), "1");
  EXPECT_EQ(Value(1), "2");
  EXPECT_EQ(Value(4), "1");
}

TEST_F(ReplayImplicitTest, JdbcAutoCommitIsReplayedInvisibly) {
  std::string probe;
  if (Shell("java -version && test -f /usr/share/java/postgresql.jar", &probe) != 0) GTEST_SKIP() << "no pgjdbc";
  StartProxy();
  const std::string java = absl::StrCat("java -XX:-UsePerfData -cp /usr/share/java/postgresql.jar ",
                                        ClientPath("ReplayImplicitJdbc.java"), " ", proxy_.port(), " ", server_.port,
                                        " ", table_, " ");
  // Unnamed statements, then named ones (past prepareThreshold of 5).
  auto [rc, out] = Run(java + "1 0");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("auto: 1"), std::string::npos) << out;
  ExpectInvisible(out, 1);
  EXPECT_EQ(Value(1), "2");
  auto [rc2, out2] = Run(java + "2 6");
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_NE(out2.find("auto: 1"), std::string::npos) << out2;
  ExpectInvisible(out2, 2);
  EXPECT_EQ(Value(2), "2");
  EXPECT_EQ(Value(0), "6");
}

}  // namespace
}  // namespace proxy
}  // namespace corral
