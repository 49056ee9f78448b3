#include "adapters/pg_executor.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "adapters/fake_pg_connection.h"
#include "gtest/gtest.h"

namespace corral {
namespace adapters {
namespace {

using scheduler::AbortCause;
using scheduler::ExecResult;
using scheduler::Outcome;

int Count(const std::vector<std::string>& log, absl::string_view needle) {
  int n = 0;
  for (const auto& l : log) n += absl::StrContains(l, needle) ? 1 : 0;
  return n;
}

class PgExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto catalog = std::make_shared<PgCatalog>();
    ASSERT_TRUE(catalog->Add("get", "SELECT v FROM t WHERE id = $1").ok());
    ASSERT_TRUE(catalog->Add("put", "UPDATE t SET v = $2 WHERE id = $1").ok());
    options_.catalog = catalog;
    options_.statement_timeout_ms = 1000;
    options_.sleep = [this](absl::Duration d) { sleeps_.push_back(d); };
  }

  // Makes the executor over a fresh fake; fake_ stays valid while ex_ lives.
  void Make() {
    auto fake = std::make_unique<FakePgConnection>();
    fake_ = fake.get();
    configure_(*fake_);
    auto ex = PgExecutor::Create(std::move(fake), options_);
    ASSERT_TRUE(ex.ok()) << ex.status();
    ex_ = *std::move(ex);
  }

  // A procedure that reads row 1 and writes row 1; counts its runs.
  PgTxn ReadWrite(int* runs = nullptr) {
    return PgTxn(std::make_unique<FunctionProcedure>([runs](PgSession& s) -> absl::Status {
      if (runs) ++*runs;
      auto r = s.Exec("get", {std::string("1")});
      if (!r.ok()) return r.status();
      return s.Exec("put", {std::string("1"), std::string("5")}).status();
    }));
  }

  PgExecutorOptions options_;
  std::function<void(FakePgConnection&)> configure_ = [](FakePgConnection&) {};
  std::vector<absl::Duration> sleeps_;
  FakePgConnection* fake_ = nullptr;
  std::unique_ptr<PgExecutor> ex_;
};

TEST_F(PgExecutorTest, CommitRunsBeginProcedureCommitAndPreparesOnce) {
  Make();
  PgTxn t = ReadWrite();
  EXPECT_EQ(ex_->Execute(t).outcome, Outcome::kCommitted);
  EXPECT_EQ(ex_->Execute(t).outcome, Outcome::kCommitted);
  std::vector<std::string> expected = {
      "EXEC SET statement_timeout = 1000",
      "EXEC BEGIN ISOLATION LEVEL SERIALIZABLE",
      "PREPARE get: SELECT v FROM t WHERE id = $1",
      "EXECP get(1)",
      "PREPARE put: UPDATE t SET v = $2 WHERE id = $1",
      "EXECP put(1,5)",
      "EXEC COMMIT",
      "EXEC BEGIN ISOLATION LEVEL SERIALIZABLE",  // second run: no PREPARE
      "EXECP get(1)",
      "EXECP put(1,5)",
      "EXEC COMMIT",
  };
  EXPECT_EQ(fake_->log(), expected);
  EXPECT_EQ(fake_->committed().size(), 4u);
  EXPECT_EQ(ex_->stats().commits, 2);
  EXPECT_EQ(ex_->stats().prepares, 2);
  EXPECT_EQ(ex_->stats().rollbacks, 0);
}

TEST_F(PgExecutorTest, IsolationFlagChoosesBegin) {
  for (auto [iso, sql] : std::vector<std::pair<PgIsolation, std::string>>{
           {PgIsolation::kSerializable, "SERIALIZABLE"},
           {PgIsolation::kRepeatableRead, "REPEATABLE READ"},
           {PgIsolation::kReadCommitted, "READ COMMITTED"}}) {
    options_.isolation = iso;
    Make();
    PgTxn t = ReadWrite();
    ex_->Execute(t);
    EXPECT_EQ(Count(fake_->log(), absl::StrCat("EXEC BEGIN ISOLATION LEVEL ", sql)), 1) << sql;
  }
}

TEST(PgIsolation, Parse) {
  EXPECT_EQ(*ParsePgIsolation("serializable"), PgIsolation::kSerializable);
  EXPECT_EQ(*ParsePgIsolation("Repeatable Read"), PgIsolation::kRepeatableRead);
  EXPECT_EQ(*ParsePgIsolation("read_committed"), PgIsolation::kReadCommitted);
  EXPECT_EQ(*ParsePgIsolation(PgIsolationName(PgIsolation::kReadCommitted)),
            PgIsolation::kReadCommitted);
  EXPECT_FALSE(ParsePgIsolation("snapshot").ok());
}

TEST_F(PgExecutorTest, SerializationFailureOnStatementIsConflictAndRollsBack) {
  configure_ = [](FakePgConnection& f) { f.FailWhen("UPDATE", "40001"); };
  Make();
  PgTxn t = ReadWrite();
  ExecResult r = ex_->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kConflictAbort);
  EXPECT_EQ(r.cause, AbortCause::kSerialization);
  std::vector<std::string> log = fake_->log();
  EXPECT_EQ(log.back(), "EXEC ROLLBACK");
  EXPECT_EQ(Count(log, "COMMIT"), 0);
  EXPECT_TRUE(fake_->committed().empty());
  EXPECT_FALSE(fake_->in_transaction());
  // The retry (the scheduler's job) then commits.
  EXPECT_EQ(ex_->Execute(t).outcome, Outcome::kCommitted);
  EXPECT_EQ(ex_->stats().conflicts, 1);
}

TEST_F(PgExecutorTest, SerializationFailureOnCommitIsConflict) {
  configure_ = [](FakePgConnection& f) { f.FailWhen("COMMIT", "40001"); };
  Make();
  PgTxn t = ReadWrite();
  ExecResult r = ex_->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kConflictAbort);
  EXPECT_EQ(r.cause, AbortCause::kSerialization);
  EXPECT_EQ(fake_->log().back(), "EXEC ROLLBACK");
  EXPECT_TRUE(fake_->committed().empty());
}

TEST_F(PgExecutorTest, NthStatementDeadlockIsDeadlockDetected) {
  // Statement 1 is the session's SET, 2 BEGIN, 3 EXECP get.
  configure_ = [](FakePgConnection& f) { f.FailNth(3, "40P01", "deadlock detected"); };
  Make();
  PgTxn t = ReadWrite();
  ExecResult r = ex_->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kConflictAbort);
  EXPECT_EQ(r.cause, AbortCause::kDeadlockDetected);
  EXPECT_EQ(Count(fake_->log(), "EXECP put"), 0);  // stopped at the error
  EXPECT_EQ(fake_->log().back(), "EXEC ROLLBACK");
}

TEST_F(PgExecutorTest, LockTimeoutIsFailureUnlessEnabled) {
  configure_ = [](FakePgConnection& f) {
    f.FailWhen("UPDATE", "55P03", 1, "canceling statement due to lock timeout");
  };
  Make();
  PgTxn t = ReadWrite();
  ExecResult r = ex_->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(SqlStateOf(r.status), "55P03");
  EXPECT_TRUE(absl::StrContains(r.status.message(), "lock timeout")) << r.status;

  options_.lock_timeout_is_conflict = true;
  Make();
  r = ex_->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kConflictAbort);
  EXPECT_EQ(r.cause, AbortCause::kLockTimeout);
  EXPECT_EQ(fake_->log().back(), "EXEC ROLLBACK");
}

TEST_F(PgExecutorTest, UserErrorIsFailedWithAllFields) {
  configure_ = [](FakePgConnection& f) {
    f.FailWhen("UPDATE", "23505", 1, "duplicate key value violates unique constraint \"t_pkey\"",
               "Key (id)=(1) already exists.");
  };
  Make();
  PgTxn t = ReadWrite();
  ExecResult r = ex_->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(r.cause, AbortCause::kNone);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(SqlStateOf(r.status), "23505");
  EXPECT_TRUE(absl::StrContains(r.status.message(), "SQLSTATE 23505")) << r.status;
  EXPECT_TRUE(absl::StrContains(r.status.message(), "t_pkey")) << r.status;
  EXPECT_TRUE(absl::StrContains(r.status.message(), "DETAIL: Key (id)=(1) already exists."));
  EXPECT_TRUE(absl::StrContains(r.status.message(), "[in put]")) << r.status;
  EXPECT_EQ(fake_->log().back(), "EXEC ROLLBACK");
  EXPECT_EQ(ex_->stats().failures, 1);
}

TEST_F(PgExecutorTest, SwallowedErrorIsStillClassified) {
  configure_ = [](FakePgConnection& f) { f.FailWhen("SELECT", "40001"); };
  Make();
  int later_calls_failed = 0;
  PgTxn t(std::make_unique<FunctionProcedure>([&](PgSession& s) {
    s.Exec("get", {std::string("1")}).IgnoreError();  // a careless procedure
    auto r = s.Exec("put", {std::string("1"), std::string("2")});
    if (r.status().code() == absl::StatusCode::kFailedPrecondition) ++later_calls_failed;
    return absl::OkStatus();
  }));
  ExecResult r = ex_->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kConflictAbort);
  EXPECT_EQ(r.cause, AbortCause::kSerialization);
  EXPECT_EQ(later_calls_failed, 1);
  EXPECT_EQ(Count(fake_->log(), "EXECP put"), 0);  // not sent after the error
  EXPECT_EQ(Count(fake_->log(), "COMMIT"), 0);
}

TEST_F(PgExecutorTest, ProcedureRollbackIsUserAbort) {
  Make();
  PgTxn t(std::make_unique<FunctionProcedure>([](PgSession& s) -> absl::Status {
    auto r = s.Exec("put", {std::string("1"), std::string("9")});
    if (!r.ok()) return r.status();
    return absl::AbortedError("NewOrder: invalid item id");
  }));
  ExecResult r = ex_->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kUserAbort);
  EXPECT_EQ(r.status.message(), "NewOrder: invalid item id");
  EXPECT_EQ(fake_->log().back(), "EXEC ROLLBACK");
  EXPECT_TRUE(fake_->committed().empty());
  EXPECT_EQ(ex_->stats().user_aborts, 1);
}

TEST_F(PgExecutorTest, UnknownTemplateIsFailedNotUserAbort) {
  Make();
  PgTxn t(std::make_unique<FunctionProcedure>(
      [](PgSession& s) { return s.Exec("no_such_template").status(); }));
  ExecResult r = ex_->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_TRUE(absl::StrContains(r.status.message(), "no_such_template")) << r.status;
  EXPECT_EQ(fake_->log().back(), "EXEC ROLLBACK");
}

TEST_F(PgExecutorTest, DroppedConnectionMidTransactionFailsOnceThenReconnects) {
  configure_ = [](FakePgConnection& f) { f.DropWhen("UPDATE"); };
  Make();
  int runs = 0;
  PgTxn t = ReadWrite(&runs);
  ExecResult r = ex_->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(r.status.message(), "connection lost")) << r.status;
  EXPECT_TRUE(absl::StrContains(r.status.message(), "reconnected")) << r.status;
  EXPECT_EQ(runs, 1);  // not re-run by the executor
  EXPECT_EQ(fake_->resets(), 1);
  EXPECT_TRUE(fake_->connected());
  EXPECT_TRUE(fake_->committed().empty());

  // The next transaction succeeds on the new connection; its templates are
  // prepared again and the session setup is re-run.
  EXPECT_EQ(ex_->Execute(t).outcome, Outcome::kCommitted);
  EXPECT_EQ(runs, 2);
  std::vector<std::string> log = fake_->log();
  EXPECT_EQ(Count(log, "PREPARE get"), 2);
  EXPECT_EQ(Count(log, "PREPARE put"), 2);
  EXPECT_EQ(Count(log, "SET statement_timeout"), 2);
  std::vector<std::string> committed = {"EXECP get(1)", "EXECP put(1,5)"};
  EXPECT_EQ(fake_->committed(), committed);  // exactly once: the second run
  PgExecutorStats st = ex_->stats();
  EXPECT_EQ(st.failures, 1);
  EXPECT_EQ(st.commits, 1);
  EXPECT_EQ(st.reconnects, 1);
  EXPECT_EQ(st.prepares, 4);
}

TEST_F(PgExecutorTest, LostCommitReplyIsUnknownOutcomeAndNotRetried) {
  configure_ = [](FakePgConnection& f) { f.DropWhen("COMMIT", 1, /*after_apply=*/true); };
  Make();
  int runs = 0;
  PgTxn t = ReadWrite(&runs);
  ExecResult r = ex_->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_TRUE(absl::StrContains(r.status.message(), "outcome unknown")) << r.status;
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(fake_->committed().size(), 2u);  // it did commit: only once
  EXPECT_EQ(Count(fake_->log(), "EXEC COMMIT"), 1);
  EXPECT_TRUE(fake_->connected());
}

TEST_F(PgExecutorTest, ReconnectIsBoundedWithBackoffAndRetriedLater) {
  options_.reconnect_attempts = 3;
  configure_ = [](FakePgConnection& f) {
    f.DropWhen("SELECT");
    f.FailResets(4);
  };
  Make();
  int runs = 0;
  PgTxn t = ReadWrite(&runs);
  ExecResult r = ex_->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_TRUE(absl::StrContains(r.status.message(), "gave up reconnecting after 3")) << r.status;
  EXPECT_EQ(fake_->resets(), 3);
  std::vector<absl::Duration> backoff = {absl::Milliseconds(20), absl::Milliseconds(40)};
  EXPECT_EQ(sleeps_, backoff);

  // Next attempt: one more failed reset, then success; the transaction runs.
  EXPECT_EQ(ex_->Execute(t).outcome, Outcome::kCommitted);
  EXPECT_EQ(fake_->resets(), 5);
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(ex_->stats().reconnect_failures, 4);
  EXPECT_EQ(ex_->stats().reconnects, 1);
}

TEST_F(PgExecutorTest, UnreachableServerDoesNotStartTheTransaction) {
  options_.reconnect_attempts = 2;
  configure_ = [](FakePgConnection& f) {
    f.DropWhen("SELECT");
    f.FailResets(100);
  };
  Make();
  int runs = 0;
  PgTxn t = ReadWrite(&runs);
  EXPECT_EQ(ex_->Execute(t).outcome, Outcome::kFailed);
  ExecResult r = ex_->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_TRUE(absl::StrContains(r.status.message(), "transaction not started")) << r.status;
  EXPECT_EQ(runs, 1);
}

TEST_F(PgExecutorTest, ExecuteRejectsOtherTxnTypes) {
  Make();
  scheduler::Txn plain;
  ExecResult r = ex_->Execute(plain);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PgExecutorTest, StatementSequenceUsesEarlierResults) {
  configure_ = [](FakePgConnection& f) {
    f.SetResponder([](absl::string_view sql, absl::Span<const absl::optional<std::string>>) {
      if (absl::StartsWith(sql, "SELECT")) {
        return PgResult::Rows({"d_next_o_id"}, {{std::string("41")}});
      }
      return PgResult::Ok("UPDATE 1");
    });
  };
  Make();
  const PgTemplate get{"next_o_id", "SELECT d_next_o_id FROM district WHERE d_id = $1"};
  const PgTemplate ins{"ins_order", "INSERT INTO oorder (o_d_id, o_id) VALUES ($1, $2)"};
  auto seq = std::make_unique<PgStatementSequence>(
      [&](const std::vector<PgResult>& so_far) -> absl::StatusOr<absl::optional<PgStep>> {
        if (so_far.empty()) return absl::optional<PgStep>(PgStep{get, {std::string("3")}});
        if (so_far.size() == 1) {
          auto o_id = so_far[0].GetInt(0, 0);
          if (!o_id.ok()) return o_id.status();
          return absl::optional<PgStep>(PgStep{ins, {std::string("3"), std::to_string(*o_id + 1)}});
        }
        return absl::optional<PgStep>();
      });
  PgStatementSequence* raw = seq.get();
  PgTxn t(std::move(seq));
  EXPECT_EQ(ex_->Execute(t).outcome, Outcome::kCommitted);
  std::vector<std::string> committed = {"EXECP next_o_id(3)", "EXECP ins_order(3,42)"};
  EXPECT_EQ(fake_->committed(), committed);
  EXPECT_EQ(raw->results().size(), 2u);
  EXPECT_EQ(raw->results()[1].affected_rows(), 1);
}

TEST_F(PgExecutorTest, FixedSequenceWithSqlText) {
  Make();
  PgTxn t(std::make_unique<PgStatementSequence>(std::vector<PgStep>{
      {{"", "UPDATE a SET v = v + 1"}, {}}, {{"", "UPDATE b SET v = v - 1"}, {}}}));
  EXPECT_EQ(ex_->Execute(t).outcome, Outcome::kCommitted);
  std::vector<std::string> committed = {"EXEC UPDATE a SET v = v + 1", "EXEC UPDATE b SET v = v - 1"};
  EXPECT_EQ(fake_->committed(), committed);
}

TEST_F(PgExecutorTest, TemplateNameReusedWithOtherSqlIsAnError) {
  Make();
  PgTxn t(std::make_unique<FunctionProcedure>([](PgSession& s) -> absl::Status {
    auto a = s.ExecTemplate({"q", "SELECT 1"});
    if (!a.ok()) return a.status();
    return s.ExecTemplate({"q", "SELECT 2"}).status();
  }));
  ExecResult r = ex_->Execute(t);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_TRUE(absl::StrContains(r.status.message(), "different SQL")) << r.status;
}

TEST(ClassifyPgError, Table) {
  EXPECT_EQ(ClassifyPgError(PgResult::Error("40001", "x"), false, "").cause,
            AbortCause::kSerialization);
  EXPECT_EQ(ClassifyPgError(PgResult::Error("40P01", "x"), false, "").cause,
            AbortCause::kDeadlockDetected);
  EXPECT_EQ(ClassifyPgError(PgResult::Error("55P03", "x"), false, "").outcome, Outcome::kFailed);
  EXPECT_EQ(ClassifyPgError(PgResult::Error("55P03", "x"), true, "").cause,
            AbortCause::kLockTimeout);
  EXPECT_EQ(ClassifyPgError(PgResult::Error("42601", "syntax"), true, "").outcome,
            Outcome::kFailed);
  EXPECT_EQ(ClassifyPgError(PgResult::Lost("gone"), true, "").outcome, Outcome::kFailed);
  EXPECT_EQ(ClassifyPgError(PgResult::Ok(), true, "").outcome, Outcome::kCommitted);
}

}  // namespace
}  // namespace adapters
}  // namespace corral
