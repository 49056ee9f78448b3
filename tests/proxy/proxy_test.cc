// End-to-end tests of `corral proxy` against a real PostgreSQL server
// (CORRAL_PG_CONNINFO; skipped with a message without one). The proxy runs
// in-process on an ephemeral loopback port with two backends.
#include <libpq-fe.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "adapters/proxy/config.h"
#include "adapters/proxy/wire.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

ServerInfo g_server;
std::string g_why;
bool g_have_server = false;
std::string g_table;  // (k int primary key, v int), rows 1..10
ProxyUnderTest* g_proxy = nullptr;

// Polls `sql` on `c` (every 50 ms, up to 10 s) until it returns `want`: for
// "the server has started the statement" / "the backend has exited", which a
// fixed pause does not guarantee on a loaded machine.
bool WaitFor(PGconn* c, const std::string& sql, const std::string& want) {
  for (int i = 0; i < 200; ++i) {
    if (Exec1(c, sql) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

class ProxyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_have_server = TestServer(&g_server, &g_why);
    if (!g_have_server) return;
    g_table = PgUniqueName("proxy_t");
    PGconn* d = PQconnectdb(g_server.conninfo.c_str());
    ExecOk(d, absl::StrCat("DROP TABLE IF EXISTS ", g_table));
    ExecOk(d, absl::StrCat("CREATE TABLE ", g_table, " (k int PRIMARY KEY, v int NOT NULL)"));
    ExecOk(d, absl::StrCat("INSERT INTO ", g_table, " SELECT g, 0 FROM generate_series(1, 10) g"));
    PQfinish(d);
    g_proxy = new ProxyUnderTest();
    Options o;
    o.pool_size = 2;
    o.metrics_port = 0;
    absl::Status st = g_proxy->Start(g_server, o);
    if (!st.ok()) {
      g_have_server = false;
      g_why = absl::StrCat("proxy did not start: ", st.ToString());
    }
  }
  static void TearDownTestSuite() {
    delete g_proxy;
    g_proxy = nullptr;
    if (!g_table.empty() && g_have_server) {
      PGconn* d = PQconnectdb(g_server.conninfo.c_str());
      ExecOk(d, absl::StrCat("DROP TABLE IF EXISTS ", g_table));
      PQfinish(d);
    }
  }
  void SetUp() override {
    if (!g_have_server) GTEST_SKIP() << g_why;
  }
  PGconn* Connect(const std::string& db = "") {
    PGconn* c = PQconnectdb(g_proxy->ClientConninfo(db).c_str());
    EXPECT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
    conns_.push_back(c);
    return c;
  }
  void TearDown() override {
    for (PGconn* c : conns_) PQfinish(c);
  }
  std::vector<PGconn*> conns_;
};

TEST_F(ProxyTest, StartupReportsServerParametersAndKey) {
  PGconn* c = Connect();
  EXPECT_NE(PQparameterStatus(c, "server_version"), nullptr);
  EXPECT_STREQ(PQparameterStatus(c, "server_encoding"), "UTF8");
  EXPECT_NE(PQbackendPID(c), 0);
}

TEST_F(ProxyTest, SimpleAndMultiStatementQueries) {
  PGconn* c = Connect();
  EXPECT_EQ(Exec1(c, "SELECT 40 + 2"), "42");
  // Several statements in one Query: one result each, in order.
  ASSERT_EQ(PQsendQuery(c, "SELECT 1; SELECT 'two'; SELECT 3"), 1);
  std::vector<std::string> got;
  while (PGresult* r = PQgetResult(c)) {
    if (PQresultStatus(r) == PGRES_TUPLES_OK) got.push_back(PQgetvalue(r, 0, 0));
    PQclear(r);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"1", "two", "3"}));
  // A whole transaction in one message.
  EXPECT_EQ(Exec1(c, absl::StrCat("BEGIN; UPDATE ", g_table, " SET v = v + 1 WHERE k = 3; SELECT v FROM ",
                                  g_table, " WHERE k = 3; COMMIT")),
            "");  // last result is COMMIT's
  EXPECT_EQ(Exec1(c, absl::StrCat("SELECT v > 0 FROM ", g_table, " WHERE k = 3")), "t");
}

TEST_F(ProxyTest, ErrorsArriveWithAllFields) {
  PGconn* c = Connect();
  PGresult* r = PQexec(c,
                       "DO $$BEGIN RAISE EXCEPTION 'boom %', 7 USING DETAIL = 'the detail', "
                       "HINT = 'the hint', ERRCODE = 'P0099'; END$$");
  ASSERT_EQ(PQresultStatus(r), PGRES_FATAL_ERROR);
  EXPECT_STREQ(PQresultErrorField(r, PG_DIAG_SQLSTATE), "P0099");
  EXPECT_STREQ(PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY), "boom 7");
  EXPECT_STREQ(PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL), "the detail");
  EXPECT_STREQ(PQresultErrorField(r, PG_DIAG_MESSAGE_HINT), "the hint");
  EXPECT_NE(PQresultErrorField(r, PG_DIAG_CONTEXT), nullptr);
  PQclear(r);
  r = PQexec(c, "SELECT 1/0");
  EXPECT_STREQ(PQresultErrorField(r, PG_DIAG_SQLSTATE), "22012");
  PQclear(r);
  // Error inside a transaction: 'E' state until ROLLBACK, then usable.
  ASSERT_TRUE(ExecOk(c, "BEGIN"));
  EXPECT_EQ(Exec1(c, absl::StrCat("SELECT k/0 FROM ", g_table, " WHERE k = 1")), "ERROR 22012");
  EXPECT_EQ(PQtransactionStatus(c), PQTRANS_INERROR);
  EXPECT_EQ(Exec1(c, "SELECT 1"), "ERROR 25P02");
  ASSERT_TRUE(ExecOk(c, "ROLLBACK"));
  EXPECT_EQ(Exec1(c, "SELECT 5"), "5");
  EXPECT_GE(g_proxy->proxy().stats().user_errors.load(), 2);
}

TEST_F(ProxyTest, HeldBeginAndEmptyTransactions) {
  PGconn* c = Connect();
  ASSERT_TRUE(ExecOk(c, "BEGIN ISOLATION LEVEL REPEATABLE READ"));
  EXPECT_EQ(PQtransactionStatus(c), PQTRANS_INTRANS);
  // The held BEGIN (with its options) reaches the server with the first statement.
  EXPECT_EQ(Exec1(c, absl::StrCat("SELECT current_setting('transaction_isolation') FROM ", g_table,
                                  " WHERE k = 1")),
            "repeatable read");
  ASSERT_TRUE(ExecOk(c, "COMMIT"));
  EXPECT_EQ(PQtransactionStatus(c), PQTRANS_IDLE);
  ASSERT_TRUE(ExecOk(c, "BEGIN"));
  ASSERT_TRUE(ExecOk(c, "COMMIT"));  // answered by the proxy
  EXPECT_EQ(PQtransactionStatus(c), PQTRANS_IDLE);
}

// A prepared statement is used in transactions that land on both backends:
// two other clients hold both backends; releasing one lets it run there.
TEST_F(ProxyTest, PreparedStatementsFollowTransactionsAcrossBackends) {
  PGconn* a = Connect();
  PGresult* r = PQprepare(a, "add_one", absl::StrCat("SELECT v + $1::int, pg_backend_pid() FROM ", g_table,
                                                    " WHERE k = $2").c_str(), 0, nullptr);
  ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQerrorMessage(a);
  PQclear(r);
  const int64_t injected_before = g_proxy->proxy().stats().parses_injected.load();
  std::set<std::string> pids;
  std::string last_pid;
  for (int round = 0; round < 2; ++round) {
    PGconn* b = Connect();
    PGconn* c = Connect();
    ASSERT_TRUE(ExecOk(b, "BEGIN"));
    ASSERT_TRUE(ExecOk(c, "BEGIN"));
    const std::string pb = Exec1(b, "SELECT pg_backend_pid()");
    const std::string pc = Exec1(c, "SELECT pg_backend_pid()");
    ASSERT_NE(pb, pc);  // the second took the idle backend
    std::string got_pid, got_val;
    std::thread t([&] {
      const char* params[2] = {"5", "4"};
      PGresult* x = PQexecPrepared(a, "add_one", 2, params, nullptr, nullptr, 0);
      if (PQresultStatus(x) == PGRES_TUPLES_OK) {
        got_val = PQgetvalue(x, 0, 0);
        got_pid = PQgetvalue(x, 0, 1);
      } else {
        got_val = PQerrorMessage(a);
      }
      PQclear(x);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // Release the backend `a` did not use last time.
    PGconn* release = (pb != last_pid) ? b : c;
    const std::string freed = (pb != last_pid) ? pb : pc;
    ASSERT_TRUE(ExecOk(release, "COMMIT"));
    t.join();
    EXPECT_EQ(got_val, "5") << got_val;
    EXPECT_EQ(got_pid, freed);
    pids.insert(got_pid);
    last_pid = got_pid;
    ASSERT_TRUE(ExecOk(release == b ? c : b, "COMMIT"));
  }
  EXPECT_EQ(pids.size(), 2u);
  EXPECT_GE(g_proxy->proxy().stats().parses_injected.load() - injected_before, 2);
  // DEALLOCATE-free reuse keeps working afterwards.
  const char* params[2] = {"1", "1"};
  r = PQexecPrepared(a, "add_one", 2, params, nullptr, nullptr, 0);
  EXPECT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(a);
  PQclear(r);
}

TEST_F(ProxyTest, PortalRowLimitsThroughTheProtocol) {
  RawClient raw;
  ASSERT_TRUE(raw.Connect(g_proxy->port(), g_server.user, g_server.dbname).ok());
  // Execute with max_rows = 2 three times in one batch: 2 + 2 + 1 rows.
  ASSERT_TRUE(raw.SendRaw(RawClient::Parse("", "SELECT g FROM generate_series(1, 5) g") +
                          RawClient::Bind("", "", {}) + RawClient::Execute("", 2) +
                          RawClient::Execute("", 2) + RawClient::Execute("", 2) + RawClient::Sync())
                  .ok());
  std::vector<RawMessage> msgs;
  ASSERT_TRUE(raw.ReadUntilReady(&msgs).ok());
  std::string kinds;
  for (const auto& m : msgs) kinds.push_back(m.type);
  EXPECT_EQ(kinds, "12DDsDDsDCZ");
  // With Flush: rows arrive before Sync, the portal stays on its backend.
  ASSERT_TRUE(raw.SendRaw(RawClient::Query("BEGIN")).ok());
  msgs.clear();
  ASSERT_TRUE(raw.ReadUntilReady(&msgs).ok());
  ASSERT_TRUE(raw.SendRaw(RawClient::Parse("", absl::StrCat("SELECT k FROM ", g_table, " ORDER BY k")) +
                          RawClient::Bind("p1", "", {}) + RawClient::Execute("p1", 3) + RawClient::Flush())
                  .ok());
  kinds.clear();
  while (kinds.size() < 6) {
    RawMessage m;
    ASSERT_TRUE(raw.Read(&m).ok());
    kinds.push_back(m.type);
  }
  EXPECT_EQ(kinds, "12DDDs");
  ASSERT_TRUE(raw.SendRaw(RawClient::Execute("p1", 0) + RawClient::Sync() + RawClient::Query("COMMIT")).ok());
  msgs.clear();
  ASSERT_TRUE(raw.ReadUntilReady(&msgs).ok());
  int rows = 0;
  for (const auto& m : msgs) rows += m.type == 'D';
  EXPECT_EQ(rows, 7);
  EXPECT_EQ(msgs.back().body, "T");
  msgs.clear();
  ASSERT_TRUE(raw.ReadUntilReady(&msgs).ok());
  EXPECT_EQ(msgs.back().body, "I");
}

TEST_F(ProxyTest, CancelReachesTheRightBackend) {
  PGconn* c = Connect();
  PGconn* other = Connect();
  ASSERT_EQ(PQsendQuery(c, "SELECT pg_sleep(20)"), 1);
  // Cancel once the server runs the sleep (a fixed pause is not enough on a
  // loaded machine: a cancel that arrives first cancels nothing).
  EXPECT_TRUE(WaitFor(other,
                      "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(20)%' "
                      "AND pid <> pg_backend_pid()",
                      "1"));
  const auto t0 = std::chrono::steady_clock::now();
  PGcancel* cancel = PQgetCancel(c);
  char err[256];
  ASSERT_EQ(PQcancel(cancel, err, sizeof(err)), 1) << err;
  PQfreeCancel(cancel);
  std::string state;
  while (PGresult* r = PQgetResult(c)) {
    if (PQresultStatus(r) == PGRES_FATAL_ERROR) state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    PQclear(r);
  }
  EXPECT_EQ(state, "57014");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(Exec1(other, "SELECT 7"), "7");
  EXPECT_EQ(Exec1(c, "SELECT 8"), "8");
}

TEST_F(ProxyTest, ClientKilledMidTransactionIsRolledBack) {
  PGconn* a = Connect();
  ASSERT_TRUE(ExecOk(a, "BEGIN"));
  ASSERT_TRUE(ExecOk(a, absl::StrCat("UPDATE ", g_table, " SET v = -100 WHERE k = 5")));
  // The client vanishes without Terminate.
  ::shutdown(PQsocket(a), SHUT_RDWR);
  PGconn* b = Connect();
  ASSERT_TRUE(ExecOk(b, "BEGIN"));
  ASSERT_TRUE(ExecOk(b, "SET LOCAL lock_timeout = '5s'"));
  EXPECT_NE(Exec1(b, absl::StrCat("SELECT v FROM ", g_table, " WHERE k = 5 FOR UPDATE")), "-100");
  ASSERT_TRUE(ExecOk(b, "COMMIT"));
  EXPECT_GE(g_proxy->proxy().stats().client_rollbacks.load(), 1);
  // Both backends serve again.
  PGconn* c = Connect();
  ASSERT_TRUE(ExecOk(b, "BEGIN"));
  ASSERT_TRUE(ExecOk(c, "BEGIN"));
  EXPECT_NE(Exec1(b, "SELECT pg_backend_pid()"), Exec1(c, "SELECT pg_backend_pid()"));
  ASSERT_TRUE(ExecOk(b, "COMMIT"));
  ASSERT_TRUE(ExecOk(c, "COMMIT"));
}

TEST_F(ProxyTest, MalformedAndOversizedMessagesCloseOnlyThatClient) {
  PGconn* bystander = Connect();
  ASSERT_TRUE(ExecOk(bystander, "BEGIN"));
  EXPECT_EQ(Exec1(bystander, absl::StrCat("SELECT v FROM ", g_table, " WHERE k = 9")), "0");
  const int64_t before = g_proxy->proxy().stats().protocol_errors.load();
  {
    RawClient raw;
    ASSERT_TRUE(raw.Connect(g_proxy->port(), g_server.user, g_server.dbname).ok());
    ASSERT_TRUE(raw.SendRaw(std::string("y\0\0\0\x08zzzz", 9)).ok());  // bad type byte
    RawMessage m;
    ASSERT_TRUE(raw.Read(&m).ok());
    EXPECT_EQ(m.type, 'E');
    EXPECT_EQ(wire::ErrorSqlState(m.body), "08P01");
    EXPECT_TRUE(raw.ClosedWithin(2000));
  }
  {
    RawClient raw;
    ASSERT_TRUE(raw.Connect(g_proxy->port(), g_server.user, g_server.dbname).ok());
    std::string big = "Q";
    wire::PutInt32(&big, 0x7ffffff0);  // ~2 GiB length field
    big += "SELECT 1";
    ASSERT_TRUE(raw.SendRaw(big).ok());
    RawMessage m;
    ASSERT_TRUE(raw.Read(&m).ok());
    EXPECT_EQ(m.type, 'E');
    auto fields = wire::ParseErrorFields(m.body);
    EXPECT_EQ(fields['C'], "08P01");
    EXPECT_NE(fields['M'].find("length"), std::string::npos) << fields['M'];
    EXPECT_TRUE(raw.ClosedWithin(2000));
  }
  EXPECT_EQ(g_proxy->proxy().stats().protocol_errors.load() - before, 2);
  EXPECT_EQ(Exec1(bystander, "SELECT 11"), "11");
  ASSERT_TRUE(ExecOk(bystander, "COMMIT"));
}

TEST_F(ProxyTest, SerializationFailuresFeedTheHistory) {
  const std::string acct = absl::StrCat(g_table, "_acct");
  PGconn* d = PQconnectdb(g_server.conninfo.c_str());
  ASSERT_TRUE(ExecOk(d, absl::StrCat("DROP TABLE IF EXISTS ", acct, "; CREATE TABLE ", acct,
                                     " (acct_no int PRIMARY KEY, bal int); INSERT INTO ", acct,
                                     " VALUES (1, 100), (2, 100)")));
  const int64_t before = g_proxy->proxy().stats().aborts_40001.load();
  PGconn* a = Connect();
  PGconn* b = Connect();
  const std::string sum = absl::StrCat("SELECT sum(bal) FROM ", acct, " WHERE acct_no IN (1, 2)");
  ASSERT_TRUE(ExecOk(a, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  ASSERT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  EXPECT_EQ(Exec1(a, sum), "200");
  EXPECT_EQ(Exec1(b, sum), "200");  // runs on the other backend (stolen)
  ASSERT_TRUE(ExecOk(a, absl::StrCat("UPDATE ", acct, " SET bal = bal - 150 WHERE acct_no = 1")));
  ASSERT_TRUE(ExecOk(b, absl::StrCat("UPDATE ", acct, " SET bal = bal - 150 WHERE acct_no = 2")));
  ASSERT_TRUE(ExecOk(a, "COMMIT"));
  EXPECT_EQ(Exec1(b, "COMMIT"), "ERROR 40001");
  EXPECT_EQ(g_proxy->proxy().stats().aborts_40001.load() - before, 1);
  bool found = false;
  for (const auto& e : g_proxy->proxy().scheduler().history().TopByAborts(50)) {
    if (absl::StrContains(e.text, "acct_no=") && e.counts.aborts >= 1) found = true;
  }
  EXPECT_TRUE(found) << "no acct_no reference with aborts in the History";
  ExecOk(d, absl::StrCat("DROP TABLE ", acct));
  PQfinish(d);
}

TEST_F(ProxyTest, AdminConsoleAndMetrics) {
  PGconn* admin = Connect("corral");
  PGresult* r = PQexec(admin, "SHOW STATS");
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(admin);
  bool saw_commits = false;
  std::string history_max, state_max;
  for (int i = 0; i < PQntuples(r); ++i) {
    const std::string stat = PQgetvalue(r, i, 0);
    saw_commits |= stat == "commits";
    if (stat == "history_max_entries") history_max = PQgetvalue(r, i, 1);
    if (stat == "state_max_entries") state_max = PQgetvalue(r, i, 1);
  }
  EXPECT_TRUE(saw_commits);
  // The learned tables' bounds come from the proxy's own scheduler.
  EXPECT_EQ(history_max, std::to_string(g_proxy->proxy().scheduler().history().max_entries()));
  EXPECT_EQ(state_max, std::to_string(g_proxy->proxy().scheduler().state().max_entries()));
  PQclear(r);
  r = PQexec(admin, "SHOW QUEUES");
  EXPECT_EQ(PQntuples(r), 2);
  PQclear(r);
  ASSERT_TRUE(ExecOk(admin, "SET POLICY original"));
  EXPECT_EQ(Exec1(admin, "SHOW POLICY"), "original");
  EXPECT_EQ(PolicyName(g_proxy->proxy().scheduler().policy()), "original");
  ASSERT_TRUE(ExecOk(admin, "SET POLICY count-max-canonical-single"));
  r = PQexec(admin, "SET POLICY nonsense");
  EXPECT_EQ(PQresultStatus(r), PGRES_FATAL_ERROR);
  PQclear(r);
  r = PQexec(admin, "SHOW NONSENSE");
  EXPECT_EQ(PQresultStatus(r), PGRES_FATAL_ERROR);
  PQclear(r);
  const std::string metrics = g_proxy->proxy().MetricsText();
  EXPECT_TRUE(absl::StrContains(metrics, "# TYPE corral_commits_total counter")) << metrics;
  // Over HTTP.
  std::string cmd = absl::StrCat("exec 3<>/dev/tcp/127.0.0.1/", g_proxy->proxy().metrics_port(),
                                 "; printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3");
  FILE* f = popen(absl::StrCat("bash -c \"", cmd, "\"").c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string http;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) http.append(buf, n);
  pclose(f);
  EXPECT_TRUE(absl::StartsWith(http, "HTTP/1.0 200")) << http;
  EXPECT_TRUE(absl::StrContains(http, "corral_conflict_aborts_total{sqlstate=\"40001\"}")) << http;
}

}  // namespace
}  // namespace proxy
}  // namespace corral

namespace corral {
namespace proxy {
namespace {

class ProxyRobustnessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TestServer(&server_, &why_)) GTEST_SKIP() << why_;
  }
  ServerInfo server_;
  std::string why_;
};

TEST_F(ProxyRobustnessTest, BackendDeathFailsItsTransactionAndReconnects) {
  ProxyUnderTest p;
  Options o;
  o.pool_size = 1;
  ASSERT_TRUE(IsOk(p.Start(server_, o)));
  PGconn* c = PQconnectdb(p.ClientConninfo().c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK);
  ASSERT_TRUE(ExecOk(c, "BEGIN"));
  const std::string pid = Exec1(c, "SELECT pg_backend_pid()");
  PGconn* d = PQconnectdb(server_.conninfo.c_str());
  EXPECT_EQ(Exec1(d, absl::StrCat("SELECT pg_terminate_backend(", pid, ")")), "t");
  // Until the backend is gone (pg_terminate_backend only signals it).
  EXPECT_TRUE(WaitFor(d, absl::StrCat("SELECT count(*) FROM pg_stat_activity WHERE pid = ", pid), "0"));
  EXPECT_EQ(Exec1(c, "SELECT 1"), "ERROR 08006");
  EXPECT_EQ(PQstatus(c), CONNECTION_OK);
  // The backend was reconnected: a new server process serves the client.
  const std::string pid2 = Exec1(c, "SELECT pg_backend_pid()");
  EXPECT_FALSE(pid2.empty());
  EXPECT_NE(pid2, pid);
  EXPECT_GE(p.proxy().stats().backend_failures.load(), 1);
  // While running a statement.
  ASSERT_EQ(PQsendQuery(c, "SELECT pg_sleep(10)"), 1);
  EXPECT_TRUE(
      WaitFor(d, absl::StrCat("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid = ", pid2), "1"));
  EXPECT_EQ(Exec1(d, absl::StrCat("SELECT pg_terminate_backend(", pid2, ")")), "t");
  std::string state;
  while (PGresult* r = PQgetResult(c)) {
    if (PQresultStatus(r) == PGRES_FATAL_ERROR) state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    PQclear(r);
  }
  EXPECT_EQ(state, "08006");
  EXPECT_EQ(Exec1(c, "SELECT 3"), "3");
  PQfinish(c);
  PQfinish(d);
}

TEST_F(ProxyRobustnessTest, MaxClientConnAndQueueWaitTimeoutGiveClearErrors) {
  ProxyUnderTest p;
  Options o;
  o.pool_size = 1;
  o.max_client_conn = 2;
  o.query_wait_timeout_ms = 400;
  ASSERT_TRUE(IsOk(p.Start(server_, o)));
  PGconn* a = PQconnectdb(p.ClientConninfo().c_str());
  PGconn* b = PQconnectdb(p.ClientConninfo().c_str());
  PGconn* c = PQconnectdb(p.ClientConninfo().c_str());
  ASSERT_EQ(PQstatus(a), CONNECTION_OK);
  ASSERT_EQ(PQstatus(b), CONNECTION_OK);
  EXPECT_NE(PQstatus(c), CONNECTION_OK);
  EXPECT_TRUE(absl::StrContains(PQerrorMessage(c), "max_client_conn")) << PQerrorMessage(c);
  PQfinish(c);
  ASSERT_TRUE(ExecOk(a, "BEGIN"));
  EXPECT_EQ(Exec1(a, "SELECT 1"), "1");  // holds the only backend
  const auto t0 = std::chrono::steady_clock::now();
  PGresult* r = PQexec(b, "SELECT 2");
  EXPECT_NE(PQresultStatus(r), PGRES_TUPLES_OK);
  EXPECT_TRUE(absl::StrContains(PQerrorMessage(b), "query_wait_timeout")) << PQerrorMessage(b);
  PQclear(r);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  EXPECT_EQ(p.proxy().stats().wait_timeouts.load(), 1);
  ASSERT_TRUE(ExecOk(a, "COMMIT"));
  PQfinish(a);
  PQfinish(b);
}

TEST_F(ProxyRobustnessTest, Md5AuthAgainstAUserList) {
  ProxyUnderTest p;
  Options o;
  o.pool_size = 1;
  o.auth_type = "md5";
  o.users = {{"alice", "s3cret"}};
  ASSERT_TRUE(IsOk(p.Start(server_, o)));
  const std::string base = absl::StrCat("host=127.0.0.1 port=", p.port(), " dbname=postgres user=alice");
  PGconn* good = PQconnectdb((base + " password=s3cret").c_str());
  ASSERT_EQ(PQstatus(good), CONNECTION_OK) << PQerrorMessage(good);
  EXPECT_EQ(Exec1(good, "SELECT 9"), "9");
  PQfinish(good);
  PGconn* bad = PQconnectdb((base + " password=wrong").c_str());
  EXPECT_NE(PQstatus(bad), CONNECTION_OK);
  EXPECT_TRUE(absl::StrContains(PQerrorMessage(bad), "password authentication failed")) << PQerrorMessage(bad);
  PQfinish(bad);
}

}  // namespace
}  // namespace proxy
}  // namespace corral

namespace corral {
namespace proxy {
namespace {

// Clients log in with SCRAM-SHA-256 (libpq checks the proxy's server side),
// and a second proxy logs its backends in to the first with SCRAM (the
// proxy's client side, checked by the first proxy's server side).
TEST_F(ProxyRobustnessTest, ScramBothSides) {
  ProxyUnderTest front;
  Options o;
  o.pool_size = 1;
  o.auth_type = "scram-sha-256";
  o.users = {{"bob", "s3cret-pw"}};
  ASSERT_TRUE(IsOk(front.Start(server_, o)));
  const std::string base = absl::StrCat("host=127.0.0.1 port=", front.port(), " dbname=", server_.dbname,
                                        " user=bob");
  PGconn* good = PQconnectdb((base + " password=s3cret-pw").c_str());
  ASSERT_EQ(PQstatus(good), CONNECTION_OK) << PQerrorMessage(good);
  EXPECT_EQ(Exec1(good, "SELECT 21 * 2"), "42");
  PQfinish(good);
  PGconn* bad = PQconnectdb((base + " password=nope").c_str());
  EXPECT_NE(PQstatus(bad), CONNECTION_OK);
  EXPECT_TRUE(absl::StrContains(PQerrorMessage(bad), "password authentication failed")) << PQerrorMessage(bad);
  PQfinish(bad);

  Options chained;
  chained.pool_size = 2;
  chained.listen_port = 0;
  chained.server_host = "127.0.0.1";
  chained.server_port = front.port();
  chained.server_user = "bob";
  chained.server_password = "s3cret-pw";
  chained.server_dbname = server_.dbname;
  auto back = Proxy::Create(chained);
  ASSERT_TRUE(back.ok());
  // Pool 2 behind a pool of 1: the second backend login also goes through SCRAM.
  ASSERT_TRUE((*back)->Start().ok());
  PGconn* c = PQconnectdb(
      absl::StrCat("host=127.0.0.1 port=", (*back)->port(), " dbname=", server_.dbname, " user=y").c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  EXPECT_EQ(Exec1(c, "SELECT 'through two proxies'"), "through two proxies");
  PQfinish(c);
  (*back)->Stop();
  chained.server_password = "wrong";
  auto refused = Proxy::Create(chained);
  ASSERT_TRUE(refused.ok());
  absl::Status st = (*refused)->Start();
  EXPECT_FALSE(st.ok());
}

}  // namespace
}  // namespace proxy
}  // namespace corral

namespace corral {
namespace proxy {
namespace {

TEST_F(ProxyRobustnessTest, ReloadAppliesTheConfigFileOrNamesTheBadLine) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(tmp ? tmp : "/tmp", "/", PgUniqueName("corral_proxy_reload"), ".ini");
  auto write = [&](const std::string& text) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  };
  write("pool_size = 1\npolicy = count-max-canonical-single\n");
  Options o;
  ASSERT_TRUE(LoadConfigFile(path, &o).ok());
  ProxyUnderTest p;
  ASSERT_TRUE(IsOk(p.Start(server_, o)));
  PGconn* admin = PQconnectdb(p.ClientConninfo("corral").c_str());
  ASSERT_EQ(PQstatus(admin), CONNECTION_OK) << PQerrorMessage(admin);
  EXPECT_EQ(Exec1(admin, "SHOW POLICY"), "count-max-canonical-single");
  write("pool_size = 1\npolicy = original\n");
  ASSERT_TRUE(ExecOk(admin, "RELOAD"));
  EXPECT_EQ(Exec1(admin, "SHOW POLICY"), "original");
  write("pool_size = 1\n\npolicy = no-such-policy\n");
  PGresult* r = PQexec(admin, "RELOAD");
  EXPECT_EQ(PQresultStatus(r), PGRES_FATAL_ERROR);
  EXPECT_TRUE(absl::StrContains(PQresultErrorMessage(r), absl::StrCat(path, ":3"))) << PQresultErrorMessage(r);
  PQclear(r);
  EXPECT_EQ(Exec1(admin, "SHOW POLICY"), "original");  // unchanged
  PQfinish(admin);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace proxy
}  // namespace corral

namespace corral {
namespace proxy {
namespace {

TEST_F(ProxyRobustnessTest, CatalogSchemaHasForeignKeysAndFunctionParameters) {
  const std::string s = absl::StrCat("_", PgUniqueName("r"));
  PGconn* d = PQconnectdb(server_.conninfo.c_str());
  ASSERT_TRUE(ExecOk(d, absl::StrCat("CREATE TABLE catp", s, " (par_key int PRIMARY KEY); CREATE TABLE catc", s,
                                     " (ch_key int PRIMARY KEY, ch_par int REFERENCES catp", s,
                                     "); CREATE FUNCTION catf", s,
                                     "(acct_arg int, amount_arg int) RETURNS int LANGUAGE sql AS "
                                     "'SELECT $1 + $2'")));
  auto schema = LoadCatalogSchema(server_.conninfo);
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_TRUE((*schema)->HasColumn(absl::StrCat("catc", s), "ch_par"));
  EXPECT_EQ((*schema)->CanonicalName(absl::StrCat("catc", s), "ch_par"), "par_key");
  const FunctionDef* f = (*schema)->FindFunction(absl::StrCat("catf", s));
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->params.size(), 2u);
  EXPECT_EQ(f->params[0].name, "acct_arg");
  EXPECT_EQ(f->params[1].name, "amount_arg");
  ExecOk(d, absl::StrCat("DROP TABLE catc", s, "; DROP TABLE catp", s, "; DROP FUNCTION catf", s));
  PQfinish(d);
}

// Another application's DDL while the proxy reads the catalog (at Start,
// RELOAD, a new database): a table dropped between the column and key reads
// once failed Start with "primary key column ... does not exist". The reads
// share one snapshot, so every read sees whole tables.
TEST_F(ProxyRobustnessTest, CatalogReadDuringConcurrentDdl) {
  const std::string t = PgUniqueName("ddl_churn");
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    PGconn* d = PQconnectdb(server_.conninfo.c_str());
    while (!stop.load()) {
      ExecOk(d, absl::StrCat("CREATE TABLE ", t, " (k int PRIMARY KEY, v int)"));
      ExecOk(d, absl::StrCat("DROP TABLE ", t));
    }
    PQfinish(d);
  });
  int failures = 0;
  std::string first;
  for (int i = 0; i < 60; ++i) {
    auto schema = LoadCatalogSchema(server_.conninfo);
    if (!schema.ok()) {
      if (failures++ == 0) first = std::string(schema.status().message());
    }
  }
  stop = true;
  churn.join();
  EXPECT_EQ(failures, 0) << first;
}

}  // namespace
}  // namespace proxy
}  // namespace corral
