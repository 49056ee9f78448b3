// PgExecutor against a real PostgreSQL (scripts/pg.sh): serialization
// failures, deadlocks, lock timeouts, user errors and a terminated backend
// are classified as the scheduler expects, and the classified outcomes move
// the History's counters. Skipped (with the reason) without a server.
//
// Each test works in its own schema (dropped at the end); every session has a
// statement_timeout and every rendezvous a timeout, so nothing can hang.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "adapters/libpq_connection.h"
#include "adapters/pg_executor.h"
#include "adapters/pg_test_server.h"
#include "gtest/gtest.h"
#include "history/history.h"

namespace corral {
namespace adapters {
namespace {

using scheduler::AbortCause;
using scheduler::ExecResult;
using scheduler::Outcome;

// N threads meet; Arrive() gives up after a timeout so a failed peer cannot
// hang the test. Thread-safe. Uses std::mutex rather than absl::Mutex: the
// Debian Abseil library is not built with ThreadSanitizer annotations, so
// TSan cannot see absl::Mutex's ordering, while pthread-based primitives are
// intercepted.
class Rendezvous {
 public:
  explicit Rendezvous(int n) : n_(n) {}
  bool Arrive(absl::Duration timeout) {
    std::unique_lock<std::mutex> l(mu_);
    if (++arrived_ >= n_) {
      cv_.notify_all();
      return true;
    }
    return cv_.wait_for(l, absl::ToChronoNanoseconds(timeout), [this] { return arrived_ >= n_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const int n_;
  int arrived_ = 0;  // guarded by mu_
};

class PgOutcomesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PgTestServer(&conninfo_)) GTEST_SKIP() << PgTestSkipReason();
    auto admin = ConnectLibpq(conninfo_);
    ASSERT_TRUE(admin.ok()) << admin.status();
    admin_ = *std::move(admin);
    ASSERT_TRUE(admin_->Exec("SET statement_timeout = 10000").ok());
    schema_ = PgUniqueName("corral_pg");
    ASSERT_NO_FATAL_FAILURE(AdminOk(absl::StrCat("CREATE SCHEMA ", schema_)));
    ASSERT_NO_FATAL_FAILURE(AdminOk(
        absl::StrCat("CREATE TABLE ", schema_, ".acct (id int PRIMARY KEY, v int NOT NULL)")));
    ASSERT_NO_FATAL_FAILURE(
        AdminOk(absl::StrCat("INSERT INTO ", schema_, ".acct VALUES (1, 100), (2, 100)")));

    auto catalog = std::make_shared<PgCatalog>();
    ASSERT_TRUE(catalog->Add("sum", "SELECT sum(v) FROM acct").ok());
    ASSERT_TRUE(catalog->Add("sub", "UPDATE acct SET v = v - $2 WHERE id = $1").ok());
    ASSERT_TRUE(catalog->Add("ins", "INSERT INTO acct VALUES ($1, $2)").ok());
    options_.catalog = catalog;
    options_.statement_timeout_ms = 10000;
    options_.session_setup = {absl::StrCat("SET search_path = ", schema_),
                              "SET deadlock_timeout = '100ms'"};
    options_.reconnect_backoff = absl::Milliseconds(10);
  }

  void TearDown() override {
    if (admin_ == nullptr) return;
    if (!admin_->connected()) {
      ASSERT_TRUE(admin_->Reset().ok());
    }
    admin_->Exec("ROLLBACK");
    PgResult r = admin_->Exec(absl::StrCat("DROP SCHEMA IF EXISTS ", schema_, " CASCADE"));
    EXPECT_TRUE(r.ok()) << r.ToStatus();
  }

  void AdminOk(const std::string& sql) {
    PgResult r = admin_->Exec(sql);
    ASSERT_TRUE(r.ok()) << r.ToStatus(sql);
  }

  int64_t AdminInt(const std::string& sql) {
    PgResult r = admin_->Exec(sql);
    EXPECT_TRUE(r.ok()) << r.ToStatus(sql);
    if (!r.ok()) return -1;
    auto v = r.GetInt(0, 0);
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? *v : -1;
  }

  int64_t Sum() { return AdminInt(absl::StrCat("SELECT sum(v) FROM ", schema_, ".acct")); }

  std::unique_ptr<PgExecutor> NewExecutor() {
    auto ex = PgExecutor::Connect(conninfo_, options_);
    EXPECT_TRUE(ex.ok()) << ex.status();
    return ex.ok() ? *std::move(ex) : nullptr;
  }

  // Write skew: read the sum of all rows, meet the peer, take 10 from `row`.
  PgTxn WriteSkew(Rendezvous* meet, int row) {
    return PgTxn(std::make_unique<FunctionProcedure>([meet, row](PgSession& s) -> absl::Status {
      auto sum = s.Exec("sum");
      if (!sum.ok()) return sum.status();
      if (meet) meet->Arrive(absl::Seconds(5));
      return s.Exec("sub", {std::to_string(row), std::string("10")}).status();
    }));
  }

  // Runs a and b concurrently on two executors.
  static void RunPair(PgExecutor* xa, PgTxn* a, ExecResult* ra, PgExecutor* xb, PgTxn* b,
                      ExecResult* rb) {
    std::thread ta([&] { *ra = xa->Execute(*a); });
    std::thread tb([&] { *rb = xb->Execute(*b); });
    ta.join();
    tb.join();
  }

  std::string conninfo_, schema_;
  std::unique_ptr<PgConnection> admin_;
  PgExecutorOptions options_;
};

TEST_F(PgOutcomesTest, WriteSkewUnderSerializableIsOneCommitOneSerializationConflict) {
  auto x1 = NewExecutor(), x2 = NewExecutor();
  ASSERT_TRUE(x1 && x2);
  Rendezvous meet(2);
  PgTxn t1 = WriteSkew(&meet, 1), t2 = WriteSkew(&meet, 2);
  ExecResult r1, r2;
  RunPair(x1.get(), &t1, &r1, x2.get(), &t2, &r2);

  const int commits = (r1.outcome == Outcome::kCommitted) + (r2.outcome == Outcome::kCommitted);
  ASSERT_EQ(commits, 1) << OutcomeName(r1.outcome) << " " << r1.status << " / "
                        << OutcomeName(r2.outcome) << " " << r2.status;
  const ExecResult& lost = r1.outcome == Outcome::kCommitted ? r2 : r1;
  EXPECT_EQ(lost.outcome, Outcome::kConflictAbort);
  EXPECT_EQ(lost.cause, AbortCause::kSerialization);
  EXPECT_EQ(Sum(), 190);  // the aborted attempt left nothing behind

  // The scheduler's retry of the loser commits.
  PgExecutor* loser = r1.outcome == Outcome::kCommitted ? x2.get() : x1.get();
  PgTxn& again = r1.outcome == Outcome::kCommitted ? t2 : t1;
  EXPECT_EQ(loser->Execute(again).outcome, Outcome::kCommitted);
  EXPECT_EQ(Sum(), 180);
}

TEST_F(PgOutcomesTest, WriteSkewUnderReadCommittedCommitsBoth) {
  // The isolation flag reaches the server: the same interleaving that
  // SERIALIZABLE refuses commits twice under READ COMMITTED.
  options_.isolation = PgIsolation::kReadCommitted;
  auto xs = ConnectPgExecutors(conninfo_, 2, options_);
  ASSERT_TRUE(xs.ok()) << xs.status();
  ASSERT_EQ(xs->size(), 2u);
  EXPECT_NE((*xs)[0]->connection().backend_pid(), (*xs)[1]->connection().backend_pid());
  Rendezvous meet(2);
  PgTxn t1 = WriteSkew(&meet, 1), t2 = WriteSkew(&meet, 2);
  ExecResult r1, r2;
  RunPair((*xs)[0].get(), &t1, &r1, (*xs)[1].get(), &t2, &r2);
  EXPECT_EQ(r1.outcome, Outcome::kCommitted) << r1.status;
  EXPECT_EQ(r2.outcome, Outcome::kCommitted) << r2.status;
  EXPECT_EQ(Sum(), 180);
}

TEST_F(PgOutcomesTest, DeadlockUnderReadCommittedIsDeadlockDetected) {
  options_.isolation = PgIsolation::kReadCommitted;
  auto x1 = NewExecutor(), x2 = NewExecutor();
  ASSERT_TRUE(x1 && x2);
  Rendezvous meet(2);
  auto crossing = [&meet](int first, int second) {
    return PgTxn(std::make_unique<FunctionProcedure>([&meet, first, second](PgSession& s) {
      auto a = s.Exec("sub", {std::to_string(first), std::string("1")});
      if (!a.ok()) return a.status();
      meet.Arrive(absl::Seconds(5));
      return s.Exec("sub", {std::to_string(second), std::string("1")}).status();
    }));
  };
  PgTxn t1 = crossing(1, 2), t2 = crossing(2, 1);
  ExecResult r1, r2;
  RunPair(x1.get(), &t1, &r1, x2.get(), &t2, &r2);
  const int commits = (r1.outcome == Outcome::kCommitted) + (r2.outcome == Outcome::kCommitted);
  ASSERT_EQ(commits, 1) << OutcomeName(r1.outcome) << " " << r1.status << " / "
                        << OutcomeName(r2.outcome) << " " << r2.status;
  const ExecResult& lost = r1.outcome == Outcome::kCommitted ? r2 : r1;
  EXPECT_EQ(lost.outcome, Outcome::kConflictAbort);
  EXPECT_EQ(lost.cause, AbortCause::kDeadlockDetected);
  EXPECT_EQ(Sum(), 198);
}

TEST_F(PgOutcomesTest, LockTimeoutIsConflictWhenEnabled) {
  options_.lock_timeout_ms = 200;
  options_.lock_timeout_is_conflict = true;
  auto x = NewExecutor();
  ASSERT_TRUE(x);
  ASSERT_NO_FATAL_FAILURE(AdminOk("BEGIN"));
  // Holds the row lock until the ROLLBACK below.
  ASSERT_NO_FATAL_FAILURE(AdminOk(absl::StrCat("UPDATE ", schema_, ".acct SET v = v WHERE id = 1")));
  PgTxn t = WriteSkew(nullptr, 1);
  ExecResult r = x->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kConflictAbort) << r.status;
  EXPECT_EQ(r.cause, AbortCause::kLockTimeout);
  AdminOk("ROLLBACK");
  EXPECT_EQ(x->Execute(t).outcome, Outcome::kCommitted);
}

TEST_F(PgOutcomesTest, UniqueViolationIsFailedWithDetail) {
  auto x = NewExecutor();
  ASSERT_TRUE(x);
  PgTxn t(std::make_unique<FunctionProcedure>([](PgSession& s) {
    return s.Exec("ins", {std::string("1"), std::string("5")}).status();
  }));
  ExecResult r = x->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(SqlStateOf(r.status), "23505");
  EXPECT_TRUE(absl::StrContains(r.status.message(), "DETAIL: Key (id)=(1) already exists."))
      << r.status;
  // The executor rolled back: the connection is usable at once.
  EXPECT_EQ(x->Execute(*std::make_unique<PgTxn>(std::make_unique<FunctionProcedure>(
                [](PgSession& s) { return s.Exec("sum").status(); })))
                .outcome,
            Outcome::kCommitted);
}

TEST_F(PgOutcomesTest, TerminatedBackendFailsOnceThenReconnectsAndRePrepares) {
  auto x = NewExecutor();
  ASSERT_TRUE(x);
  int runs = 0;
  bool kill = true;
  PgConnection* admin = admin_.get();
  PgExecutor* ex = x.get();
  PgTxn t(std::make_unique<FunctionProcedure>([&](PgSession& s) -> absl::Status {
    ++runs;
    auto a = s.Exec("ins", {std::string("3"), std::string("7")});
    if (!a.ok()) return a.status();
    if (kill) {
      PgResult k = admin->Exec(absl::StrCat("SELECT pg_terminate_backend(",
                                            ex->connection().backend_pid(), ", 5000)"));
      if (!k.ok() || k.Get(0, 0) != "t") return absl::InternalError("could not terminate");
    }
    return s.Exec("sub", {std::string("3"), std::string("1")}).status();
  }));
  ExecResult r = x->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kUnavailable) << r.status;
  EXPECT_TRUE(absl::StrContains(r.status.message(), "connection lost")) << r.status;
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(x->stats().reconnects, 1);
  EXPECT_EQ(AdminInt(absl::StrCat("SELECT count(*) FROM ", schema_, ".acct WHERE id = 3")), 0);

  // Same executor, new backend: the templates are prepared again and work.
  kill = false;
  const int64_t prepares = x->stats().prepares;
  r = x->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kCommitted) << r.status;
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(x->stats().prepares, prepares + 2);
  EXPECT_EQ(AdminInt(absl::StrCat("SELECT v FROM ", schema_, ".acct WHERE id = 3")), 6);
}

// What the WorkerPool does with every attempt: a commit adds a commit to each
// of the transaction's references, a conflict abort an abort.
void Feed(history::History* h, const scheduler::Txn& t, const ExecResult& r) {
  if (r.outcome == Outcome::kCommitted || r.outcome == Outcome::kConflictAbort) {
    h->Record(t.refs, r.outcome == Outcome::kCommitted);
  }
}

TEST_F(PgOutcomesTest, ClassifiedOutcomesRaiseHistoryAbortCounts) {
  history::History h;
  auto x1 = NewExecutor(), x2 = NewExecutor();
  ASSERT_TRUE(x1 && x2);
  const RefId all = RefId::Of("acct.id=*"), row1 = RefId::Of("acct.id=1"),
              row2 = RefId::Of("acct.id=2");
  Rendezvous meet(2);
  PgTxn t1 = WriteSkew(&meet, 1), t2 = WriteSkew(&meet, 2);
  t1.refs = {all, row1};
  t2.refs = {all, row2};
  ExecResult r1, r2;
  RunPair(x1.get(), &t1, &r1, x2.get(), &t2, &r2);
  Feed(&h, t1, r1);
  Feed(&h, t2, r2);
  ASSERT_EQ((r1.outcome == Outcome::kConflictAbort) + (r2.outcome == Outcome::kConflictAbort), 1)
      << r1.status << " / " << r2.status;

  const RefId lost_row = r1.outcome == Outcome::kConflictAbort ? row1 : row2;
  const RefId won_row = lost_row == row1 ? row2 : row1;
  history::History::Counts c;
  ASSERT_TRUE(h.Get(all, &c));
  EXPECT_EQ(c.aborts, 1u);
  EXPECT_EQ(c.commits, 1u);
  ASSERT_TRUE(h.Get(lost_row, &c));
  EXPECT_EQ(c.aborts, 1u);
  EXPECT_EQ(c.commits, 0u);
  ASSERT_TRUE(h.Get(won_row, &c));
  EXPECT_EQ(c.aborts, 0u);
  EXPECT_GT(h.Weight(lost_row, Weighting::kFraction), h.Weight(won_row, Weighting::kFraction));

  // A failure (user error) says nothing about conflicts: History unchanged.
  PgTxn bad(std::make_unique<FunctionProcedure>([](PgSession& s) {
    return s.Exec("ins", {std::string("1"), std::string("0")}).status();
  }));
  bad.refs = {row1};
  ExecResult rb = x1->Execute(bad);
  EXPECT_EQ(rb.outcome, Outcome::kFailed);
  Feed(&h, bad, rb);
  ASSERT_TRUE(h.Get(row1, &c));
  EXPECT_EQ(c.aborts + c.commits, 1u);
}

}  // namespace
}  // namespace adapters
}  // namespace corral
