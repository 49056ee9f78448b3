#include "adapters/fake_pg_connection.h"

#include "gtest/gtest.h"

namespace corral {
namespace adapters {
namespace {

TEST(FakePgConnection, TransactionStateAndCommitLog) {
  FakePgConnection c;
  EXPECT_TRUE(c.Exec("BEGIN").ok());
  EXPECT_TRUE(c.in_transaction());
  EXPECT_TRUE(c.Exec("UPDATE t SET v = 1").ok());
  EXPECT_TRUE(c.committed().empty());
  EXPECT_EQ(c.Exec("COMMIT").command_tag(), "COMMIT");
  EXPECT_FALSE(c.in_transaction());
  ASSERT_EQ(c.committed().size(), 1u);
  EXPECT_EQ(c.committed()[0], "EXEC UPDATE t SET v = 1");
}

TEST(FakePgConnection, ErrorPoisonsTransactionUntilRollback) {
  FakePgConnection c;
  c.FailWhen("INSERT", "23505", 1, "duplicate key", "Key (id)=(1) already exists.");
  c.Exec("BEGIN");
  PgResult r = c.Exec("INSERT INTO t VALUES (1)");
  EXPECT_EQ(r.kind(), PgResult::Kind::kError);
  EXPECT_EQ(r.sqlstate(), "23505");
  EXPECT_EQ(r.detail(), "Key (id)=(1) already exists.");
  EXPECT_EQ(c.Exec("SELECT 1").sqlstate(), "25P02");
  // COMMIT of a failed transaction rolls back, as PostgreSQL does.
  EXPECT_EQ(c.Exec("COMMIT").command_tag(), "ROLLBACK");
  EXPECT_TRUE(c.committed().empty());
  EXPECT_TRUE(c.Exec("INSERT INTO t VALUES (1)").ok());  // the rule fired once
}

TEST(FakePgConnection, NthStatementAndDrop) {
  FakePgConnection c;
  c.FailNth(2, "40001");
  c.DropNth(4);
  EXPECT_TRUE(c.Exec("BEGIN").ok());
  EXPECT_EQ(c.Exec("SELECT 1").sqlstate(), "40001");
  EXPECT_TRUE(c.Exec("ROLLBACK").ok());
  EXPECT_TRUE(c.Exec("BEGIN").ok() == false);  // 4th: dropped
  EXPECT_FALSE(c.connected());
  EXPECT_TRUE(c.Exec("SELECT 1").connection_lost());
  EXPECT_EQ(c.backend_pid(), 0);
  EXPECT_TRUE(c.Reset().ok());
  EXPECT_TRUE(c.connected());
  EXPECT_EQ(c.resets(), 1);
}

TEST(FakePgConnection, PreparedStatementsAreForgottenOnReset) {
  FakePgConnection c;
  EXPECT_TRUE(c.Prepare("q", "SELECT $1").ok());
  EXPECT_EQ(c.Prepare("q", "SELECT $1").sqlstate(), "42P05");
  EXPECT_TRUE(c.ExecPrepared("q", {std::string("7"), absl::nullopt}).ok());
  ASSERT_TRUE(c.Reset().ok());
  EXPECT_EQ(c.ExecPrepared("q", {std::string("7")}).sqlstate(), "26000");
  std::vector<std::string> log = c.log();
  EXPECT_EQ(log[2], "EXECP q(7,\\N)");
}

TEST(FakePgConnection, DropAfterApplyCommitsButLosesReply) {
  FakePgConnection c;
  c.DropWhen("COMMIT", 1, /*after_apply=*/true);
  c.Exec("BEGIN");
  c.Exec("INSERT INTO t VALUES (1)");
  EXPECT_TRUE(c.Exec("COMMIT").connection_lost());
  EXPECT_EQ(c.committed().size(), 1u);
}

TEST(FakePgConnection, FailingResets) {
  FakePgConnection c;
  c.FailResets(2);
  EXPECT_FALSE(c.Reset().ok());
  EXPECT_FALSE(c.connected());
  EXPECT_FALSE(c.Reset().ok());
  EXPECT_TRUE(c.Reset().ok());
  EXPECT_EQ(c.resets(), 3);
}

}  // namespace
}  // namespace adapters
}  // namespace corral
