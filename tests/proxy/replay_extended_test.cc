// Transparent replay (issue 24) of extended-protocol transactions, end to end
// against a real server (CORRAL_PG_CONNINFO; skipped without one) with the
// drivers production uses: asyncpg (named statements, and unnamed ones the
// proxy answers Parse/Describe for), psycopg 3 with server-side binding, and
// pgjdbc (BEGIN in the first statement's unit; unnamed, then named server
// statements). The server fails b's SERIALIZABLE transaction with a real
// 40001 (its UPDATE waits on a row client a updated, which then commits; the
// client scripts in tests/proxy/clients/ orchestrate it). Blind writes go on
// invisibly, each row updated exactly once; a transaction that read the row
// the other one changed gets the original 40001. Also implicit
// (autocommit) transactions through asyncpg and pgjdbc.
#include <libpq-fe.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

class ReplayExtendedTest : public ReplayClientsTest {
 protected:
  void StartProxy() { ReplayClientsTest::StartProxy(/*replay=*/true); }
  std::string Python(const std::string& script, const std::string& args) {
    return absl::StrCat("/usr/bin/python3 ", ClientPath(script), " ", proxy_.port(), " ", server_.port, " ", table_,
                        " ", args);
  }
  // b's blind writes replayed and matched: no client saw a conflict, the
  // replayed transaction committed, each row once (row_b also by a).
  void ExpectInvisibleReplay(const std::string& out, int row_a, int row_b) {
    EXPECT_GE(stats().replays.load(), 1) << out;
    EXPECT_GE(stats().replays_extended.load(), 1) << out;
    EXPECT_EQ(stats().replay_matches.load(), 1) << out;
    EXPECT_EQ(stats().replay_mismatches.load(), 0) << out;
    EXPECT_EQ(stats().replay_unreplayable.load(), 0) << out;
    EXPECT_EQ(stats().aborts_40001.load(), 0) << out;
    EXPECT_EQ(Value(row_a), "1");
    EXPECT_EQ(Value(row_b), "2");
  }
  // An implicit transaction replayed invisibly: `matches` so far.
  void ExpectImplicitReplay(const std::string& out, int matches) {
    EXPECT_EQ(stats().replays_implicit.load(), matches) << out;
    EXPECT_EQ(stats().replay_matches.load(), matches) << out;
    EXPECT_EQ(stats().replay_mismatches.load(), 0) << out;
    EXPECT_EQ(stats().replay_unreplayable.load(), 0) << out;
    EXPECT_EQ(stats().aborts_40001.load(), 0) << out;
  }
};

// The asyncpg cases: skipped without asyncpg, the proxy started.
class ReplayAsyncpgTest : public ReplayExtendedTest {
 protected:
  void SetUp() override {
    ReplayExtendedTest::SetUp();
    if (IsSkipped()) return;
    if (!Have("/usr/bin/python3 -c 'import asyncpg'")) GTEST_SKIP() << "no asyncpg for /usr/bin/python3";
    StartProxy();
  }
};

TEST_F(ReplayAsyncpgTest, BlindWritesReplayInvisibly) {
  auto [rc, out] = Run(Python("replay_asyncpg.py", "blind 100 1 5"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("blind: UPDATE 1 UPDATE 1 committed"), std::string::npos) << out;
  ExpectInvisibleReplay(out, 1, 5);
}

TEST_F(ReplayAsyncpgTest, UnnamedStatementsReplayInvisibly) {
  // Warm the proxy's Describe cache: b's Parse/Describe units are then
  // answered by the proxy, only its Bind/Execute/Sync reach the server.
  auto [rc0, out0] = Run(Python("replay_asyncpg.py", "blind 0 2 6"));
  ASSERT_EQ(rc0, 0) << out0;
  EXPECT_GE(stats().describes_answered.load(), 1) << out0;
  auto [rc, out] = Run(Python("replay_asyncpg.py", "blind 0 3 7"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("blind: UPDATE 1 UPDATE 1 committed"), std::string::npos) << out;
  EXPECT_EQ(stats().replay_matches.load(), 2) << out0 << out;
  EXPECT_EQ(stats().aborts_40001.load(), 0);
  EXPECT_EQ(Value(2), "1");
  EXPECT_EQ(Value(6), "2");
  EXPECT_EQ(Value(3), "1");
  EXPECT_EQ(Value(7), "2");
}

// executemany: Bind/Execute x3 and one Sync; the second Execute fails, the
// server skips the third. The replay re-runs the first (compared: the
// client saw its BindComplete and CommandComplete) and the second's Bind,
// then the failed Execute and the skipped pair, whose results go to the
// client once.
TEST_F(ReplayAsyncpgTest, PipelinedUnitReplaysTheSkippedMessages) {
  auto [rc, out] = Run(Python("replay_asyncpg.py", "many 100 1 5"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("many: UPDATE 1 None committed"), std::string::npos) << out;
  ExpectInvisibleReplay(out, 1, 5);
  EXPECT_EQ(Value(2), "1");
  EXPECT_EQ(Value(3), "1");
}

// Two conflicts in one transaction: the second unit's split must count the
// results the client got from the first unit's replay as that unit's.
TEST_F(ReplayAsyncpgTest, SecondConflictAfterAReplayIsReplayedToo) {
  auto [rc, out] = Run(Python("replay_asyncpg.py", "twice 0 1 5"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("twice: UPDATE 1 UPDATE 1 UPDATE 1 committed"), std::string::npos) << out;
  EXPECT_EQ(stats().replay_matches.load(), 2) << out;
  EXPECT_EQ(stats().replay_unreplayable.load(), 0) << out;
  EXPECT_EQ(stats().aborts_40001.load(), 0);
  EXPECT_EQ(Value(1), "1");
  EXPECT_EQ(Value(5), "2");
  EXPECT_EQ(Value(6), "2");
}

TEST_F(ReplayAsyncpgTest, ReadOfTheChangedRowGetsTheOriginalError) {
  auto [rc, out] = Run(Python("replay_asyncpg.py", "read 100 1 4"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("read: 40001"), std::string::npos) << out;
  EXPECT_NE(out.find("read after: 1"), std::string::npos) << out;
  EXPECT_EQ(stats().replays.load(), 1) << out;
  EXPECT_EQ(stats().replay_mismatches.load(), 1) << out;
  EXPECT_EQ(stats().replay_matches.load(), 0) << out;
  EXPECT_EQ(stats().aborts_40001.load(), 1);
  EXPECT_EQ(Value(4), "1");  // a's update only
}

TEST_F(ReplayExtendedTest, PsycopgPreparedReadGetsTheOriginalErrorAndBlindWritesGoOn) {
  if (!Have("/usr/bin/python3 -c 'import psycopg'")) GTEST_SKIP() << "no psycopg for /usr/bin/python3";
  StartProxy();
  auto [rc, out] = Run(Python("replay_psycopg.py", "read 1 4"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("read: 40001"), std::string::npos) << out;
  EXPECT_EQ(stats().replays.load(), 1) << out;
  EXPECT_EQ(stats().replays_extended.load(), 1) << out;
  EXPECT_EQ(stats().replay_mismatches.load(), 1) << out;
  EXPECT_EQ(Value(4), "1");
  auto [rc2, out2] = Run(Python("replay_psycopg.py", "blind 2 6"));
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_NE(out2.find("blind: UPDATE 1 UPDATE 1 committed"), std::string::npos) << out2;
  EXPECT_EQ(stats().replay_matches.load(), 1) << out2;
  EXPECT_EQ(Value(2), "1");
  EXPECT_EQ(Value(6), "2");
}

TEST_F(ReplayExtendedTest, JdbcBlindWritesReplayInvisibly) {
  if (!Have("java -version && test -f /usr/share/java/postgresql.jar")) GTEST_SKIP() << "no java or pgjdbc";
  StartProxy();
  const std::string java = absl::StrCat("java -XX:-UsePerfData -cp /usr/share/java/postgresql.jar ",
                                        ClientPath("ReplayJdbc.java"), " ", proxy_.port(), " ", server_.port, " ",
                                        table_, " ");
  // Unnamed statements (first executions), then named ones (past pgjdbc's
  // prepareThreshold of 5).
  auto [rc, out] = Run(java + "1 5 0");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("blind: 1 1 committed"), std::string::npos) << out;
  ExpectInvisibleReplay(out, 1, 5);
  auto [rc2, out2] = Run(java + "2 6 6");
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_NE(out2.find("blind: 1 1 committed"), std::string::npos) << out2;
  EXPECT_EQ(stats().replay_matches.load(), 2) << out2;
  EXPECT_EQ(stats().aborts_40001.load(), 0);
  EXPECT_EQ(Value(2), "1");
  EXPECT_EQ(Value(6), "2");
  EXPECT_EQ(Value(0), "12");  // the warm-up: 6 transactions each of a and b
}

// Implicit transactions (autocommit, default_transaction_isolation =
// serializable): asyncpg outside transaction(), pgjdbc autoCommit=true.
// asyncpg outside transaction(): Bind / Execute / Sync of a cached
// statement (the client saw its BindComplete before the error: compared in
// the proxy's block), named (cache) and unnamed (no cache).
TEST_F(ReplayAsyncpgTest, AsyncpgAutocommitExecuteIsReplayedInvisibly) {
  auto [rc, out] = Run(Python("replay_implicit.py", "auto 100 1 1"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("auto: UPDATE 1"), std::string::npos) << out;
  ExpectImplicitReplay(out, 1);
  EXPECT_GE(stats().replays_extended.load(), 1) << out;
  EXPECT_EQ(Value(1), "2");
  auto [rc2, out2] = Run(Python("replay_implicit.py", "auto 0 2 2"));
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_NE(out2.find("auto: UPDATE 1"), std::string::npos) << out2;
  ExpectImplicitReplay(out2, 2);
  EXPECT_EQ(Value(2), "2");
  EXPECT_EQ(Value(0), "2");  // the warm-ups
}

// executemany outside transaction(): one implicit unit of three Bind /
// Execute pairs and one Sync; the first Execute's results reached the
// client, the second failed, the server skipped the third. Replayed in a
// block: every row once.
TEST_F(ReplayAsyncpgTest, AsyncpgAutocommitExecutemanyIsReplayedInABlock) {
  auto [rc, out] = Run(Python("replay_implicit.py", "many 100 3 1"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("many: None"), std::string::npos) << out;
  ExpectImplicitReplay(out, 1);
  EXPECT_EQ(Value(3), "1");
  EXPECT_EQ(Value(1), "2");
  EXPECT_EQ(Value(4), "1");
}

TEST_F(ReplayExtendedTest, JdbcAutoCommitIsReplayedInvisibly) {
  if (!Have("java -version && test -f /usr/share/java/postgresql.jar")) GTEST_SKIP() << "no java or pgjdbc";
  StartProxy();
  const std::string java = absl::StrCat("java -XX:-UsePerfData -cp /usr/share/java/postgresql.jar ",
                                        ClientPath("ReplayJdbc.java"), " ", proxy_.port(), " ", server_.port, " ",
                                        table_, " ");
  // Unnamed statements, then named ones (past prepareThreshold of 5).
  auto [rc, out] = Run(java + "0 1 0 auto");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("auto: 1"), std::string::npos) << out;
  ExpectImplicitReplay(out, 1);
  EXPECT_EQ(Value(1), "2");
  auto [rc2, out2] = Run(java + "0 2 6 auto");
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_NE(out2.find("auto: 1"), std::string::npos) << out2;
  ExpectImplicitReplay(out2, 2);
  EXPECT_EQ(Value(2), "2");
  EXPECT_EQ(Value(0), "12");  // the warm-up: 6 executions each of a and b
}

}  // namespace
}  // namespace proxy
}  // namespace corral
