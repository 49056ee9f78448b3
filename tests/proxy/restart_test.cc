// Restart on a hot key (restart_on_hot_key, issue 24) end to end against a
// real server (CORRAL_PG_CONNINFO; skipped without one), with libpq
// clients and pgbench: under SERIALIZABLE, a later statement naming a hot
// row another transaction holds restarts its transaction before the
// statement reaches the server, so the 40001 the server would give never
// comes; a restart whose re-run reads a changed row gives the client 40001
// with nothing committed; a client leaving while it waits frees its keys.
// Rows are made hot first (LearnAbort: one real 40001 through the proxy).
#include <libpq-fe.h>
#include <unistd.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

class RestartTest : public ReplayClientsTest {
 protected:
  void StartRestart(bool on, int workers = 1, bool retry_routing = true, int pool_size = 4) {
    Options o;
    o.pool_size = pool_size;
    o.retry_routing = retry_routing;
    o.workers = workers;  // > 1: the loops' shared key table
    o.restart_on_hot_key = on;
    ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  }
  // Rows k (v = 1 afterwards) get a History abort: hot.
  void MakeHot(std::initializer_list<int> rows) {
    for (int k : rows) LearnAbort(proxy_.ClientConninfo(), server_conn_, table_, k);
  }
  std::string Select(int k) const { return absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", k); }
  // One statement as ExecValue answers it, sent as a simple Query or, when
  // `extended`, with PQexecParams (Parse / Bind / Describe / Execute / Sync).
  static std::string Exec(PGconn* c, const std::string& sql, bool extended) {
    if (!extended) return ExecValue(c, sql);
    PGresult* r = PQexecParams(c, sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0);
    std::string v = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 ? PQgetvalue(r, 0, 0)
                    : PQresultStatus(r) == PGRES_FATAL_ERROR ? absl::StrCat("ERROR ", PQresultErrorField(r, PG_DIAG_SQLSTATE))
                                                             : PQcmdStatus(r);
    PQclear(r);
    return v;
  }
  static bool Send(PGconn* c, const std::string& sql, bool extended) {
    return (extended ? PQsendQueryParams(c, sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0)
                     : PQsendQuery(c, sql.c_str())) == 1;
  }
  // A Query sent with PQsendQuery answered (not busy) within ~10 s.
  static bool Answered(PGconn* c) {
    return Eventually([c] { return PQconsumeInput(c) == 1 && PQisBusy(c) == 0; });
  }
  // Between a test's rounds: clients closed, proxy stopped, rows back to 0.
  void Reset() {
    for (PGconn* c : conns_) PQfinish(c);
    conns_.clear();
    proxy_.Stop();
    ExecValue(server_conn_, absl::StrCat("UPDATE ", table_, " SET v = 0"));
  }
  bool NothingLeftBehind() {
    return Eventually([&] {
      return ExecValue(server_conn_, absl::StrCat("SELECT count(*) FROM pg_locks WHERE pid <> pg_backend_pid() "
                                                  "AND relation = '",
                                                  table_, "'::regclass")) == "0";
    });
  }
};

// Client a updates row 2 (taking its key); b, whose first statement read
// row 3, then updates row 2 too. Off: b's UPDATE waits for a's row lock
// on the server and fails with 40001 when a commits. On: b's UPDATE is
// held before it reaches the server, b's transaction is rolled back and
// waits for the key; after a's COMMIT it runs again (its read of row 3
// matches) and the UPDATE goes on: both commit. With one loop a's COMMIT
// grants b's key on the loop's own thread, applied in that turn (no
// wake-up). Also with two event loops (workers = 2: the group's key
// table, grants posted across loops).
TEST_F(RestartTest, SecondStatementsCollidingOnAHotRowBothCommit) {
  for (int round : {0, 1, 2}) {
    const bool on = round > 0;
    SCOPED_TRACE(round == 0 ? "restart off" : round == 1 ? "restart on" : "restart on, workers = 2");
    StartRestart(on, round == 2 ? 2 : 1);
    MakeHot({2, 3});
    const int64_t aborts = stats().aborts_40001.load();
    PGconn* a = Connect();
    PGconn* b = Connect();
    EXPECT_TRUE(ExecOk(a, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
    EXPECT_EQ(ExecValue(a, Select(1)), "0");
    EXPECT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
    EXPECT_EQ(ExecValue(b, Select(3)), "1");
    EXPECT_EQ(ExecValue(a, Update(2)), "UPDATE 1");
    ASSERT_EQ(PQsendQuery(b, Update(2).c_str()), 1);
    if (on) {  // held by the proxy, waiting for row 2's key
      EXPECT_TRUE(Eventually([&] { return stats().restart_key_waits.load() == 1; }));
    } else {  // waiting for a's row lock on the server
      EXPECT_TRUE(Eventually([&] {
        return ExecValue(server_conn_, "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'") !=
               "0";
      }));
    }
    EXPECT_TRUE(ExecOk(a, "COMMIT"));
    const std::string got = Collect(b);
    if (on) {
      EXPECT_EQ(got, "UPDATE 1");
      EXPECT_TRUE(ExecOk(b, "COMMIT"));
      EXPECT_EQ(Value(2), "3");  // 1 (MakeHot) + a + b
      EXPECT_EQ(stats().restarts.load(), 1);
      EXPECT_EQ(stats().restart_matches.load(), 1);
      EXPECT_EQ(stats().restart_mismatches.load(), 0);
      EXPECT_EQ(stats().restart_key_waits.load(), 1);
      if (round == 1) {
        EXPECT_EQ(stats().key_grants_local.load(), 1);
      }
      EXPECT_EQ(stats().aborts_40001.load(), aborts);  // no client saw a conflict
    } else {
      EXPECT_EQ(got, "ERROR 40001");
      ExecValue(b, "ROLLBACK");
      EXPECT_EQ(Value(2), "2");
      EXPECT_EQ(stats().restarts.load(), 0);
    }
    EXPECT_TRUE(NothingLeftBehind());
    Reset();
  }
}

// The same collision with b's statements in the extended protocol
// (PQexecParams: Parse / Bind / Describe / Execute / Sync): b's UPDATE unit
// is held whole, its log (the SELECT's unit) re-run through the proxy's
// forwarding and compared, then the unit goes on.
TEST_F(RestartTest, ExtendedProtocolUnitsRestartToo) {
  StartRestart(true);
  MakeHot({2, 3});
  const int64_t aborts = stats().aborts_40001.load();
  PGconn* a = Connect();
  PGconn* b = Connect();
  EXPECT_TRUE(ExecOk(a, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  EXPECT_EQ(ExecValue(a, Update(2)), "UPDATE 1");
  EXPECT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  EXPECT_EQ(Exec(b, Select(3), true), "1");
  ASSERT_TRUE(Send(b, Update(2), true));
  ASSERT_TRUE(Eventually([&] { return stats().restart_key_waits.load() == 1; }));
  EXPECT_TRUE(ExecOk(a, "COMMIT"));
  EXPECT_EQ(Collect(b), "UPDATE 1");
  EXPECT_EQ(Exec(b, Select(3), true), "1");
  EXPECT_TRUE(ExecOk(b, "COMMIT"));
  EXPECT_EQ(Value(2), "3");
  EXPECT_EQ(stats().restarts.load(), 1);
  EXPECT_EQ(stats().restart_matches.load(), 1);
  EXPECT_EQ(stats().aborts_40001.load(), aborts);
  EXPECT_TRUE(NothingLeftBehind());
}

// b read row 4 (not hot: no key) before a changed it; b's UPDATE of hot
// row 2, which a holds, restarts b after a commits, and the re-run reads
// another value of row 4: b gets 40001 for its UPDATE (the proxy's), its
// transaction failed, nothing of it committed; the connection goes on.
TEST_F(RestartTest, ARestartWhoseReadChangedGetsTheErrorAndCommitsNothing) {
  for (bool extended : {false, true}) {
    SCOPED_TRACE(extended ? "extended protocol" : "simple protocol");
    StartRestart(true);
    MakeHot({2});
    PGconn* a = Connect();
    PGconn* b = Connect();
    EXPECT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
    EXPECT_EQ(Exec(b, Select(4), extended), "0");
    EXPECT_TRUE(ExecOk(a, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
    EXPECT_EQ(ExecValue(a, Update(4)), "UPDATE 1");
    EXPECT_EQ(ExecValue(a, Update(2)), "UPDATE 1");
    ASSERT_TRUE(Send(b, Update(2), extended));
    EXPECT_TRUE(Eventually([&] { return stats().restart_key_waits.load() == 1; }));
    EXPECT_TRUE(ExecOk(a, "COMMIT"));
    // The proxy's 40001 for the held UPDATE, with its message.
    bool restarted_error = false;
    std::string got;
    while (PGresult* r = PQgetResult(b)) {
      if (PQresultStatus(r) == PGRES_FATAL_ERROR) {
        got = absl::StrCat("ERROR ", PQresultErrorField(r, PG_DIAG_SQLSTATE));
        restarted_error = absl::StrContains(PQresultErrorMessage(r), "restarted the transaction");
      } else {
        got = PQcmdStatus(r);
      }
      PQclear(r);
    }
    EXPECT_EQ(got, "ERROR 40001");
    EXPECT_TRUE(restarted_error);
    EXPECT_EQ(PQtransactionStatus(b), PQTRANS_INERROR);
    EXPECT_EQ(Exec(b, "SELECT 1", extended), "ERROR 25P02");  // a failed block, as after the server's 40001
    EXPECT_EQ(ExecValue(b, "ROLLBACK"), "ROLLBACK");
    EXPECT_EQ(Exec(b, Select(2), extended), "2");  // usable; only a's update of row 2
    EXPECT_EQ(Value(2), "2");
    EXPECT_EQ(Value(4), "1");
    EXPECT_EQ(stats().restarts.load(), 1);
    EXPECT_EQ(stats().restart_matches.load(), 0);
    EXPECT_EQ(stats().restart_mismatches.load(), 1);
    EXPECT_TRUE(NothingLeftBehind());
    Reset();
  }
}

// The wait cycle and its gate (cycle_gates.h). a reads row 2, b reads row
// 3 (each takes its row's key), then a updates 3 and b updates 2: a waits
// for b's key, b's wait would close the cycle, so b gives its key up, a
// goes on and commits, b's re-run reads a's row 3: b gets 40001. Twice:
// the template (SELECT v ... WHERE k = ?) is gated. Then the same
// interleaving: b's first statement waits for the gate before its BEGIN
// reaches the server (no row's queue), a takes row 3's key free and gives
// the gate back at its UPDATE of row 2 (its keys complete), b then waits
// for row 3's key only, reads a's committed value, and both commit: no
// cycle, no 40001. (Retry routing off: b's second transaction would be a
// retry of its first, routed behind a's backend, and this one thread could
// not go on with a while b's first statement waits.)
TEST_F(RestartTest, ATemplateWhoseRestartsCloseWaitCyclesLetsOneTransactionGrowAtATime) {
  StartRestart(true, 1, /*retry_routing=*/false);
  MakeHot({2, 3, 4});
  PGconn* a = Connect();
  PGconn* b = Connect();
  for (int cycle = 1; cycle <= 2; ++cycle) {
    SCOPED_TRACE(cycle);
    EXPECT_TRUE(ExecOk(a, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
    EXPECT_FALSE(ExecValue(a, Select(2)).empty());
    EXPECT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
    EXPECT_FALSE(ExecValue(b, Select(3)).empty());
    ASSERT_EQ(PQsendQuery(a, Update(3).c_str()), 1);
    ASSERT_TRUE(Eventually([&] { return stats().restart_key_waits.load() == 2 * cycle - 1; }));
    ASSERT_EQ(PQsendQuery(b, Update(2).c_str()), 1);
    ASSERT_TRUE(Answered(a));
    EXPECT_EQ(Collect(a), "UPDATE 1");
    EXPECT_EQ(stats().restart_requeues.load(), cycle);
    EXPECT_TRUE(ExecOk(a, "COMMIT"));
    ASSERT_TRUE(Answered(b));
    EXPECT_EQ(Collect(b), "ERROR 40001");
    EXPECT_EQ(ExecValue(b, "ROLLBACK"), "ROLLBACK");
    EXPECT_EQ(stats().restart_mismatches.load(), cycle);
  }
  EXPECT_EQ(stats().restart_gate_txns.load(), 0);
  EXPECT_EQ(Value(2), "1");
  EXPECT_EQ(Value(3), "3");
  // Gated now.
  EXPECT_TRUE(ExecOk(a, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  EXPECT_EQ(ExecValue(a, Select(2)), "1");
  EXPECT_EQ(stats().restart_gate_txns.load(), 1);
  EXPECT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  ASSERT_EQ(PQsendQuery(b, Select(3).c_str()), 1);
  ASSERT_TRUE(Eventually([&] { return stats().restart_gate_waits.load() == 1; }));
  EXPECT_EQ(ExecValue(a, Update(3)), "UPDATE 1");  // row 3's key: free (b waits for the gate only)
  EXPECT_EQ(stats().restart_gate_early.load(), 0);
  EXPECT_EQ(ExecValue(a, Update(2)), "UPDATE 1");  // no new key: the gate goes back
  EXPECT_EQ(stats().restart_gate_early.load(), 1);
  EXPECT_TRUE(ExecOk(a, "COMMIT"));
  ASSERT_TRUE(Answered(b));
  EXPECT_EQ(Collect(b), "4");  // after a's commit
  EXPECT_EQ(ExecValue(b, Update(2)), "UPDATE 1");
  EXPECT_TRUE(ExecOk(b, "COMMIT"));
  EXPECT_EQ(Value(2), "3");
  EXPECT_EQ(Value(3), "4");
  EXPECT_EQ(stats().restart_requeues.load(), 2);
  EXPECT_EQ(stats().restart_mismatches.load(), 2);
  EXPECT_EQ(stats().restart_gate_txns.load(), 2);
  // The template's growth is known now (its first later statement took
  // its new key): a gated transaction gives the gate back right after that
  // statement's keys, and the next one is admitted while it is still open
  // (before, at its next statement: b's read would wait for a's UPDATE of
  // row 2 below).
  EXPECT_TRUE(ExecOk(a, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  EXPECT_EQ(ExecValue(a, Select(2)), "3");
  const int64_t early = stats().restart_gate_early.load();
  const int64_t gate_waits = stats().restart_gate_waits.load();
  EXPECT_EQ(ExecValue(a, Update(3)), "UPDATE 1");  // row 3's key: new, its template's last growth
  EXPECT_EQ(stats().restart_gate_early.load(), early + 1);
  EXPECT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  ASSERT_EQ(PQsendQuery(b, Select(4).c_str()), 1);
  ASSERT_TRUE(Answered(b));
  EXPECT_EQ(Collect(b), "1");
  EXPECT_EQ(stats().restart_gate_txns.load(), 4);
  EXPECT_EQ(stats().restart_gate_waits.load(), gate_waits);
  EXPECT_EQ(ExecValue(a, Update(2)), "UPDATE 1");
  EXPECT_TRUE(ExecOk(a, "COMMIT"));
  EXPECT_EQ(ExecValue(b, Update(4)), "UPDATE 1");
  EXPECT_TRUE(ExecOk(b, "COMMIT"));
  EXPECT_EQ(stats().restart_mismatches.load(), 2);
  EXPECT_TRUE(NothingLeftBehind());
}

// A restart that waited without a backend re-runs on whichever is free;
// one whose session parameters differ from the client's gets them first
// (its attach SQL, whose ReadyForQuery the waiting restart's replay took
// for its own: the attach never finished and the client waited forever).
// Pool of 2: a holds hot row 2's key on one backend; b restarts at its
// UPDATE of row 2 and gives its backend back; d's open transaction takes
// that one; a commits: b re-runs on a's backend after a SET of its own
// application_name, and commits.
TEST_F(RestartTest, ARestartResumedOnAnotherSessionsBackendGetsItsParametersFirst) {
  StartRestart(true, 1, /*retry_routing=*/true, /*pool_size=*/2);
  MakeHot({2, 3});
  PGconn* a = Connect("application_name=corral_a");
  PGconn* b = Connect("application_name=corral_b");
  PGconn* d = Connect("application_name=corral_d");
  EXPECT_TRUE(ExecOk(a, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  EXPECT_EQ(ExecValue(a, Select(1)), "0");
  EXPECT_EQ(ExecValue(a, Update(2)), "UPDATE 1");
  EXPECT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  EXPECT_EQ(ExecValue(b, Select(3)), "1");
  ASSERT_EQ(PQsendQuery(b, Update(2).c_str()), 1);
  ASSERT_TRUE(Eventually([&] { return stats().restart_key_waits.load() == 1; }));
  // d's transaction (no references: stolen by any free backend) on the
  // backend b gave back.
  ASSERT_EQ(PQsendQuery(d, "BEGIN; SELECT current_setting('application_name')"), 1);
  ASSERT_TRUE(Answered(d));
  EXPECT_EQ(Collect(d), "corral_d");
  EXPECT_TRUE(ExecOk(a, "COMMIT"));
  ASSERT_TRUE(Answered(b));
  EXPECT_EQ(Collect(b), "UPDATE 1");
  EXPECT_EQ(ExecValue(b, "SELECT current_setting('application_name')"), "corral_b");
  EXPECT_TRUE(ExecOk(b, "COMMIT"));
  EXPECT_TRUE(ExecOk(d, "COMMIT"));
  EXPECT_EQ(Value(2), "3");  // MakeHot, a, b
  EXPECT_EQ(stats().restarts.load(), 1);
  EXPECT_EQ(stats().restart_matches.load(), 1);
  EXPECT_TRUE(NothingLeftBehind());
}

// b holds hot row 3's key (its first statement) and waits for row 2's,
// which a holds; b leaves. Its keys go: after a commits, c's transaction
// on rows 3 and 2 runs at once, without waiting for a key.
TEST_F(RestartTest, AClientLeavingWhileItWaitsForAKeyFreesThem) {
  StartRestart(true);
  MakeHot({2, 3});
  PGconn* a = Connect();
  PGconn* b = Connect();
  EXPECT_TRUE(ExecOk(a, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  EXPECT_EQ(ExecValue(a, Update(2)), "UPDATE 1");
  EXPECT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  EXPECT_EQ(ExecValue(b, Select(3)), "1");
  ASSERT_EQ(PQsendQuery(b, Update(2).c_str()), 1);
  ASSERT_TRUE(Eventually([&] { return stats().restart_key_waits.load() == 1; }));
  conns_.erase(conns_.begin() + 1);
  PQfinish(b);
  EXPECT_TRUE(ExecOk(a, "COMMIT"));
  const int64_t waits = stats().worker_key_waits.load();
  PGconn* c = Connect();
  EXPECT_TRUE(ExecOk(c, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  ASSERT_EQ(PQsendQuery(c, Select(3).c_str()), 1);  // key 3 before its BEGIN
  ASSERT_TRUE(Answered(c));
  EXPECT_EQ(Collect(c), "1");
  EXPECT_EQ(ExecValue(c, Update(2)), "UPDATE 1");  // key 2, free and released before c began
  EXPECT_TRUE(ExecOk(c, "COMMIT"));
  EXPECT_EQ(stats().worker_key_waits.load(), waits);
  EXPECT_EQ(stats().restarts.load(), 1);
  EXPECT_EQ(Value(2), "3");  // MakeHot, a, c: nothing of b
  EXPECT_TRUE(NothingLeftBehind());
}

// pgbench over contended.sql's shape on the scratch table (two rows of 5,
// both hot; read both, move delta from b to a) with --max-tries: every
// committed transaction logged once, the sum of balances conserved, and
// the restarts engaged.
TEST_F(RestartTest, PgbenchContendedKeepsEveryTransactionsEffect) {
  if (access("/usr/bin/pgbench", X_OK) != 0) GTEST_SKIP() << "pgbench not installed";
  StartRestart(true);
  MakeHot({1, 2, 3, 4, 5});
  const std::string log = absl::StrCat(table_, "_log");
  ExecValue(server_conn_, absl::StrCat("CREATE TABLE ", log, " (a int, b int, delta int)"));
  const std::string script = absl::StrCat(::testing::TempDir(), "/restart_contended.sql");
  FILE* f = std::fopen(script.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(absl::StrCat("\\set a random(1, 5)\n\\set b random(1, 5)\n\\set delta random(-100, 100)\n"
                          "BEGIN ISOLATION LEVEL SERIALIZABLE;\n",
                          "SELECT v FROM ", table_, " WHERE k = :a;\n", "SELECT v FROM ", table_, " WHERE k = :b;\n",
                          "UPDATE ", table_, " SET v = v + :delta WHERE k = :a;\n", "UPDATE ", table_,
                          " SET v = v - :delta WHERE k = :b;\n", "INSERT INTO ", log, " VALUES (:a, :b, :delta);\n",
                          "COMMIT;\n")
                 .c_str(),
             f);
  std::fclose(f);
  const std::string sum_before = ExecValue(server_conn_, absl::StrCat("SELECT sum(v) FROM ", table_));
  std::string out;
  const int rc = Shell(absl::StrCat("/usr/bin/pgbench -n -h 127.0.0.1 -p ", proxy_.port(), " -U ", server_.user,
                                    " -c 6 -t 40 --max-tries=1000 -f ", script, " ", server_.dbname, " 2>&1"),
                       &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "number of transactions actually processed: 240/240")) << out;
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT count(*) FROM ", log)), "240");
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT sum(v) FROM ", table_)), sum_before);
  // Each logged move applied: a row's balance is what the log says.
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT count(*) FROM ", table_, " t WHERE k BETWEEN 1 AND 5 AND v <> 1 + "
                                                  "COALESCE((SELECT sum(delta) FROM ",
                                                  log, " WHERE a = t.k), 0) - COALESCE((SELECT sum(delta) FROM ", log,
                                                  " WHERE b = t.k), 0)")),
            "0");
  EXPECT_GT(stats().restarts.load(), 0);
  EXPECT_GT(stats().restart_matches.load(), 0);
  ExecValue(server_conn_, absl::StrCat("DROP TABLE ", log));
  EXPECT_TRUE(NothingLeftBehind());
}

}  // namespace
}  // namespace proxy
}  // namespace corral
