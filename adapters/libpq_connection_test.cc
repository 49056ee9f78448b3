// Real-server tests of the libpq connection; skipped without a server.
#include "adapters/libpq_connection.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "adapters/pg_test_server.h"
#include "gtest/gtest.h"

namespace corral {
namespace adapters {
namespace {

class LibpqConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PgTestServer(&conninfo_)) GTEST_SKIP() << PgTestSkipReason();
    auto c = ConnectLibpq(conninfo_);
    ASSERT_TRUE(c.ok()) << c.status();
    conn_ = *std::move(c);
    ASSERT_TRUE(conn_->Exec("SET statement_timeout = 5000").ok());
    table_ = PgUniqueName("libpq_t");
    ASSERT_TRUE(conn_->Exec(absl::StrCat("CREATE TABLE ", table_,
                                         " (id int PRIMARY KEY, v text)")).ok());
  }
  void TearDown() override {
    if (conn_ == nullptr) return;
    if (!conn_->connected()) {
      ASSERT_TRUE(conn_->Reset().ok());
    }
    conn_->Exec("ROLLBACK");
    EXPECT_TRUE(conn_->Exec(absl::StrCat("DROP TABLE IF EXISTS ", table_)).ok());
  }

  std::string conninfo_, table_;
  std::unique_ptr<PgConnection> conn_;
};

TEST_F(LibpqConnectionTest, RowsParamsAndNulls) {
  ASSERT_TRUE(conn_->Prepare("ins", absl::StrCat("INSERT INTO ", table_, " VALUES ($1, $2)")).ok());
  PgResult r = conn_->ExecPrepared("ins", {std::string("1"), std::string("one")});
  ASSERT_TRUE(r.ok()) << r.ToStatus();
  EXPECT_EQ(r.command_tag(), "INSERT 0 1");
  EXPECT_EQ(r.affected_rows(), 1);
  ASSERT_TRUE(conn_->ExecPrepared("ins", {std::string("2"), absl::nullopt}).ok());
  r = conn_->Exec(absl::StrCat("SELECT id, v FROM ", table_, " ORDER BY id"));
  ASSERT_TRUE(r.ok()) << r.ToStatus();
  ASSERT_EQ(r.num_rows(), 2);
  EXPECT_EQ(r.columns(), (std::vector<std::string>{"id", "v"}));
  EXPECT_EQ(*r.GetInt(1, 0), 2);
  EXPECT_EQ(r.Get(0, 1), "one");
  EXPECT_FALSE(r.IsNull(0, 1));
  EXPECT_TRUE(r.IsNull(1, 1));
  EXPECT_FALSE(r.GetInt(1, 1).ok());
  EXPECT_GT(conn_->backend_pid(), 0);
}

TEST_F(LibpqConnectionTest, ErrorFieldsAndFailedTransaction) {
  ASSERT_TRUE(conn_->Exec(absl::StrCat("INSERT INTO ", table_, " VALUES (1, 'a')")).ok());
  ASSERT_TRUE(conn_->Exec("BEGIN").ok());
  PgResult r = conn_->Exec(absl::StrCat("INSERT INTO ", table_, " VALUES (1, 'b')"));
  EXPECT_EQ(r.kind(), PgResult::Kind::kError);
  EXPECT_EQ(r.sqlstate(), "23505");
  EXPECT_TRUE(absl::StrContains(r.message(), "duplicate key")) << r.message();
  EXPECT_EQ(r.detail(), "Key (id)=(1) already exists.");
  absl::Status s = r.ToStatus("insert");
  EXPECT_EQ(SqlStateOf(s), "23505");
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(conn_->Exec("SELECT 1").sqlstate(), "25P02");
  EXPECT_EQ(conn_->Exec("COMMIT").command_tag(), "ROLLBACK");
  EXPECT_EQ(conn_->Exec("SELEC 1").sqlstate(), "42601");
}

TEST_F(LibpqConnectionTest, TerminatedBackendIsConnectionLostAndResetWorks) {
  ASSERT_TRUE(conn_->Prepare("one", "SELECT 1").ok());
  ASSERT_TRUE(conn_->Exec("BEGIN").ok());
  auto admin = ConnectLibpq(conninfo_);
  ASSERT_TRUE(admin.ok()) << admin.status();
  PgResult k = (*admin)->Exec(
      absl::StrCat("SELECT pg_terminate_backend(", conn_->backend_pid(), ", 5000)"));
  ASSERT_TRUE(k.ok()) << k.ToStatus();
  ASSERT_EQ(k.Get(0, 0), "t");
  PgResult r = conn_->Exec("SELECT 1");
  EXPECT_TRUE(r.connection_lost()) << r.ToStatus();
  EXPECT_EQ(r.ToStatus().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(conn_->connected());
  EXPECT_TRUE(conn_->Exec("SELECT 1").connection_lost());
  ASSERT_TRUE(conn_->Reset().ok());
  EXPECT_TRUE(conn_->Exec("SELECT 1").ok());
  EXPECT_EQ(conn_->ExecPrepared("one", {}).sqlstate(), "26000");  // forgotten
}

TEST(LibpqConnect, UnreachableServerFailsFast) {
  LibpqOptions o;
  o.connect_timeout_s = 2;
  auto c = ConnectLibpq("host=127.0.0.1 port=1 user=postgres dbname=postgres", o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(c.status().message(), "cannot connect")) << c.status();
}

}  // namespace
}  // namespace adapters
}  // namespace corral
