// Retry-aware routing (issue 24) end to end against a real server
// (CORRAL_PG_CONNINFO; skipped without one): a transaction that fails with
// 40001 is remembered by its client and first statement; its retry is
// routed on everything it touched, behind the running holder of the
// conflicting row, before its first statement takes its snapshot. And
// statement templates: learned from transactions, a first statement's
// predicted later rows route it the same way.
#include <libpq-fe.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

class RetryRoutingTest : public ScratchClientsTest {
 protected:
  // SHOW QUEUES: server pid -> clients waiting for that backend.
  std::map<std::string, int> Waiting() {
    std::map<std::string, int> w;
    PGconn* a = PQconnectdb(proxy_.ClientConninfo("corral").c_str());
    PGresult* r = PQexec(a, "SHOW QUEUES");
    for (int i = 0; i < PQntuples(r); ++i) w[PQgetvalue(r, i, 1)] = std::stoi(PQgetvalue(r, i, 4));
    PQclear(r);
    PQfinish(a);
    return w;
  }
  // Client b's SERIALIZABLE transaction runs `first` (through `run_first`),
  // then waits on row 1, which client a updated first and commits: b
  // fails with 40001 having touched rows 5 and 1.
  template <typename RunFirst>
  void FailOnce(PGconn* a, PGconn* b, RunFirst run_first) {
    ASSERT_TRUE(ExecOk(a, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
    ASSERT_EQ(ExecValue(a, Update(1)), "UPDATE 1");
    ASSERT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
    run_first(b);  // b's snapshot is taken here, before a commits
    ASSERT_EQ(PQsendQuery(b, Update(1).c_str()), 1);
    ASSERT_TRUE(ExecOk(a, "COMMIT"));
    EXPECT_EQ(Collect(b), "ERROR 40001");
    ASSERT_TRUE(ExecOk(b, "ROLLBACK"));
  }
};

TEST_F(RetryRoutingTest, RetryIsRoutedBehindItsConflictsHolderAndCountedClean) {
  Options o;
  o.pool_size = 2;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  PGconn* a = Connect();
  PGconn* b = Connect();
  PGconn* h = Connect();
  const std::string first = absl::StrCat("SELECT v, pg_backend_pid() FROM ", table_, " WHERE k = 5");
  FailOnce(a, b, [&](PGconn* c) { EXPECT_NE(ExecValue(c, first), ""); });
  EXPECT_EQ(stats().retries_remembered.load(), 1);
  EXPECT_EQ(stats().retries_routed.load(), 0);

  // Another transaction now holds row 1, running on backend `holder`.
  ASSERT_TRUE(ExecOk(h, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  const std::string holder =
      ExecValue(h, absl::StrCat(Update(1), " RETURNING pg_backend_pid()"));
  ASSERT_NE(holder, "");
  // b retries with the same statements: routed behind the holder, it waits
  // for that backend before its first statement reaches the server (the
  // other backend is idle).
  ASSERT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  ASSERT_EQ(PQsendQuery(b, first.c_str()), 1);
  ASSERT_TRUE(Eventually([&] { return stats().retries_behind_holder.load() == 1; }));
  EXPECT_EQ(stats().retries_routed.load(), 1);
  EXPECT_EQ(Waiting()[holder], 1);
  ASSERT_EQ(PQconsumeInput(b), 1);
  EXPECT_EQ(PQisBusy(b), 1);  // not answered while the holder runs
  ASSERT_TRUE(ExecOk(h, "COMMIT"));
  EXPECT_EQ(Collect(b), holder);  // it ran on the holder's backend, after it
  EXPECT_EQ(ExecValue(b, Update(1)), "UPDATE 1");
  ASSERT_TRUE(ExecOk(b, "COMMIT"));
  EXPECT_EQ(stats().retries_clean.load(), 1);
  EXPECT_EQ(stats().retries_remembered.load(), 1);
  // Taken once: the same statement again is a new transaction, not a retry.
  ASSERT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  EXPECT_NE(ExecValue(b, first), "");
  ASSERT_TRUE(ExecOk(b, "COMMIT"));
  EXPECT_EQ(stats().retries_routed.load(), 1);
}

TEST_F(RetryRoutingTest, ExtendedProtocolRetryIsKeyedByItsParameters) {
  Options o;
  o.pool_size = 2;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  PGconn* a = Connect();
  PGconn* b = Connect();
  const std::string first = absl::StrCat("SELECT v FROM ", table_, " WHERE k = $1");
  auto run = [&](PGconn* c, const char* k) {
    const char* params[1] = {k};
    PGresult* r = PQexecParams(c, first.c_str(), 1, nullptr, params, nullptr, nullptr, 0);
    EXPECT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(c);
    PQclear(r);
  };
  FailOnce(a, b, [&](PGconn* c) { run(c, "5"); });
  EXPECT_EQ(stats().retries_remembered.load(), 1);
  // The same statement with another parameter is not the retry.
  ASSERT_TRUE(ExecOk(b, "BEGIN"));
  run(b, "6");
  ASSERT_TRUE(ExecOk(b, "COMMIT"));
  EXPECT_EQ(stats().retries_routed.load(), 0);
  // With the failed one's parameter it is; no holder runs, so it is routed
  // on its remembered references alone, and commits: a clean retry.
  ASSERT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  run(b, "5");
  EXPECT_EQ(ExecValue(b, Update(1)), "UPDATE 1");
  ASSERT_TRUE(ExecOk(b, "COMMIT"));
  EXPECT_EQ(stats().retries_routed.load(), 1);
  EXPECT_EQ(stats().retries_behind_holder.load(), 0);
  EXPECT_EQ(stats().retries_clean.load(), 1);
}

TEST_F(RetryRoutingTest, OffRemembersNothingAndTheMemoryIsBounded) {
  Options o;
  o.pool_size = 2;
  o.retry_routing = false;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  PGconn* a = Connect();
  PGconn* b = Connect();
  const std::string first = absl::StrCat("SELECT v FROM ", table_, " WHERE k = 5");
  FailOnce(a, b, [&](PGconn* c) { EXPECT_EQ(ExecValue(c, first), "0"); });
  ASSERT_TRUE(ExecOk(b, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
  EXPECT_EQ(ExecValue(b, first), "0");
  ASSERT_TRUE(ExecOk(b, "COMMIT"));
  EXPECT_EQ(stats().retries_remembered.load(), 0);
  EXPECT_EQ(stats().retries_routed.load(), 0);
  proxy_.Stop();

  // On, one entry per database: the second client's failure evicts the first's.
  o.retry_routing = true;
  o.retry_memory_size = 1;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  for (PGconn* c : conns_) PQfinish(c);
  conns_.clear();
  a = Connect();
  b = Connect();
  PGconn* d = Connect();
  FailOnce(a, b, [&](PGconn* c) { EXPECT_NE(ExecValue(c, first), ""); });
  FailOnce(a, d, [&](PGconn* c) { EXPECT_NE(ExecValue(c, first), ""); });
  EXPECT_EQ(stats().retries_remembered.load(), 2);
  EXPECT_EQ(stats().retry_memory_evictions.load(), 1);
  // b's retry is forgotten, d's is recognized.
  for (PGconn* c : {b, d}) {
    ASSERT_TRUE(ExecOk(c, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
    EXPECT_NE(ExecValue(c, first), "");
    ASSERT_TRUE(ExecOk(c, "COMMIT"));
  }
  EXPECT_EQ(stats().retries_routed.load(), 1);
}

// Transactions "read row a, update a, update a + 1" teach a template; then
// a first statement alone predicts row a + 1, and a transaction on a is
// placed behind the running holder of a + 1.
TEST_F(RetryRoutingTest, TemplatePredictsTheLaterRowAndRoutesBehindItsHolder) {
  Options o;
  o.pool_size = 2;
  o.templates = true;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  PGconn* c = Connect();
  PGconn* h = Connect();
  auto first = [&](int a) { return absl::StrCat("SELECT v, pg_backend_pid() FROM ", table_, " WHERE k = ", a); };
  for (int i = 0; i < 30; ++i) {
    const int a = i % 9;
    ASSERT_TRUE(ExecOk(c, "BEGIN"));
    EXPECT_NE(ExecValue(c, first(a)), "");
    EXPECT_EQ(ExecValue(c, Update(a)), "UPDATE 1");
    EXPECT_EQ(ExecValue(c, Update(a + 1)), "UPDATE 1");
    ASSERT_TRUE(ExecOk(c, "COMMIT"));
  }
  // Predicted from the 21st on (min_observations 20), every prediction right.
  EXPECT_GE(stats().template_predictions.load(), 9);
  EXPECT_GT(stats().template_predicted_refs.load(), 0);
  EXPECT_EQ(stats().template_predicted_hits.load(), stats().template_predicted_refs.load());
  PGconn* a = PQconnectdb(proxy_.ClientConninfo("corral").c_str());
  PGresult* r = PQexec(a, "SHOW TEMPLATES");
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK);
  ASSERT_EQ(PQntuples(r), 2);
  // update a + 1: the constant 1, and the first statement's parameter plus one
  EXPECT_STREQ(PQgetvalue(r, 1, 5), "1, p1+1");
  EXPECT_STREQ(PQgetvalue(r, 1, 6), "yes");
  PQclear(r);
  PQfinish(a);

  ASSERT_TRUE(ExecOk(h, "BEGIN"));
  const std::string holder = ExecValue(h, absl::StrCat(Update(6), " RETURNING pg_backend_pid()"));
  ASSERT_TRUE(ExecOk(c, "BEGIN"));
  ASSERT_EQ(PQsendQuery(c, first(5).c_str()), 1);  // predicts row 6: waits for h
  ASSERT_TRUE(Eventually([&] { return stats().template_behind_holder.load() == 1; }));
  EXPECT_EQ(Waiting()[holder], 1);
  ASSERT_TRUE(ExecOk(h, "COMMIT"));
  EXPECT_EQ(Collect(c), holder);
  ASSERT_TRUE(ExecOk(c, "COMMIT"));
}

}  // namespace
}  // namespace proxy
}  // namespace corral
