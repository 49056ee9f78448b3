// Pipelined and batched drivers through `corral proxy` (issue 24), end to
// end against a real server (CORRAL_PG_CONNINFO; skipped without one, and
// each driver's cases without it): psycopg 3 pipeline mode (one Sync, a
// Sync read back at a time, executemany), libpq's own pipeline mode through
// psycopg.pq (several Syncs in flight), pgjdbc executeBatch (BEGIN in the
// first statement's unit, one Sync per chunk; reWriteBatchedInserts) and
// asyncpg executemany (Bind/Execute per row, one Sync). The client scripts
// in tests/proxy/clients/ check every value and row count they read back
// and the table after (each row written exactly once, or not at all after
// an error); here, what they printed and the proxy's counters.
// Without replay: the right results, and a real 40001 (the scripts' client
// a updates a row and commits while b's SERIALIZABLE pipeline waits on it)
// reaches the client cleanly, its connection usable for the next
// transaction. With `replay = on`: blind writes are replayed invisibly,
// also with several units in flight behind the failed one; a unit without
// its Sync, a log past replay_buffer_bytes, and a read of the changed row
// get the original error, counted.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

class PipelineTest : public ReplayClientsTest {
 protected:
  // A client script with the proxy's and the server's ports, the table,
  // then `args` (mode, rows).
  std::string Python(const std::string& script, const std::string& args) {
    // timeout: a client stuck behind a lock fails its case instead of the
    // whole target.
    return absl::StrCat("timeout 120 /usr/bin/python3 ", ClientPath(script), " ", proxy_.port(), " ", server_.port, " ", table_,
                        " ", args);
  }
  std::string Java(const std::string& args) {
    return absl::StrCat("timeout 120 java -XX:-UsePerfData -cp /usr/share/java/postgresql.jar ", ClientPath("PipelineJdbc.java"),
                        " ", proxy_.port(), " ", server_.port, " ", table_, " ", args);
  }
  static bool Has(const std::string& out, const std::string& line) {
    return out.find(line) != std::string::npos;
  }
  // The 40001 reached the client (no replay, or not replayable): the next
  // transaction on its connection worked (the script checked the rows).
  void ExpectPassedThrough(const std::string& out, const std::string& line) {
    EXPECT_TRUE(Has(out, line)) << out;
    EXPECT_TRUE(Has(out, "after: 1")) << out;
    EXPECT_EQ(stats().aborts_40001.load(), 1) << out;
    EXPECT_EQ(stats().replay_matches.load(), 0) << out;
  }
  // Replayed invisibly: the client saw no error, the rows each written once.
  void ExpectReplayed(const std::string& out, const std::string& line) {
    EXPECT_TRUE(Has(out, line)) << out;
    EXPECT_GE(stats().replays_extended.load(), 1) << out;
    EXPECT_EQ(stats().replay_matches.load(), 1) << out;
    EXPECT_EQ(stats().replay_mismatches.load(), 0) << out;
    EXPECT_EQ(stats().replay_unreplayable.load(), 0) << out;
    EXPECT_EQ(stats().aborts_40001.load(), 0) << out;
  }
};

class PsycopgPipelineTest : public PipelineTest {
 protected:
  void SetUp() override {
    PipelineTest::SetUp();
    if (IsSkipped()) return;
    if (!Have("/usr/bin/python3 -c 'import psycopg; assert psycopg.Pipeline.is_supported()'")) {
      GTEST_SKIP() << "no psycopg with pipeline mode for /usr/bin/python3";
    }
  }
};

TEST_F(PsycopgPipelineTest, ValuesReadBackWithoutReplay) {
  StartProxy(false);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "values 1 5"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(Has(out, "values: ok")) << out;
  EXPECT_EQ(Value(1), "2");
  EXPECT_EQ(Value(6), "20");
}

TEST_F(PsycopgPipelineTest, ConflictReachesTheClientWithoutReplay) {
  StartProxy(false);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "blind 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectPassedThrough(out, "blind: 40001");
}

TEST_F(PsycopgPipelineTest, ExecutemanyConflictReachesTheClientWithoutReplay) {
  StartProxy(false);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "many 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectPassedThrough(out, "many: 40001");
}

// One Sync for the whole pipeline (BEGIN held by the proxy, then Parse /
// Bind / Describe / Execute x3, Sync): the first UPDATE's results reached
// the client, the second failed, the server skipped the third.
TEST_F(PsycopgPipelineTest, OneSyncPipelineIsReplayedInvisibly) {
  StartProxy(true);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "blind 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectReplayed(out, "blind: 1 1 1 committed");
  EXPECT_EQ(Value(5), "2");
}

// Pipeline.sync() after each statement: psycopg 3.1 reads each Sync's
// results before it sends more, so the failed unit is the last one sent.
TEST_F(PsycopgPipelineTest, SyncedUnitsAreReplayedInvisibly) {
  StartProxy(true);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "syncs 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectReplayed(out, "syncs: 1 1 1 committed");
}

// executemany: a named statement, then Bind / Execute per row, one Sync.
TEST_F(PsycopgPipelineTest, ExecutemanyIsReplayedInvisibly) {
  StartProxy(true);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "many 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectReplayed(out, "many: 3 committed");
}

TEST_F(PsycopgPipelineTest, ReadOfTheChangedRowGetsTheOriginalError) {
  StartProxy(true);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "read 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectPassedThrough(out, "read: 40001");
  EXPECT_EQ(stats().replay_mismatches.load(), 1) << out;
}

// libpq's pipeline mode (psycopg.pq): BEGIN, then three units each with its
// Sync, all sent before any result is read. At the error of the second,
// the third is in flight: PostgreSQL answers it in the failed transaction
// (25P02), and so does the proxy without replay.
TEST_F(PsycopgPipelineTest, SeveralSyncsInFlightWithoutReplay) {
  StartProxy(false);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "libpq 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectPassedThrough(out, "libpq: 40001 25P02");
}

// With replay: the third unit's answer (25P02) is kept from the client as
// well; the replay re-runs the first unit (compared), the failed UPDATE,
// then the third unit, whose results and ReadyForQuery go to the client.
TEST_F(PsycopgPipelineTest, SeveralSyncsInFlightAreReplayedInvisibly) {
  StartProxy(true);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "libpq 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectReplayed(out, "libpq: 1 1 1 committed");
  EXPECT_EQ(Value(2), "1");
}

// The same after a read of the row the other transaction changed: the
// re-read differs, the client gets the original error and the third unit's
// answer in the failed transaction (re-sent after the proxy failed the
// block again), as without replay.
TEST_F(PsycopgPipelineTest, SeveralSyncsInFlightAfterAChangedReadGetTheOriginalError) {
  StartProxy(true);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "libpqread 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectPassedThrough(out, "libpqread: 40001 25P02");
  EXPECT_EQ(stats().replay_mismatches.load(), 1) << out;
}

// A COMMIT among the units in flight would end the failed block, and what
// follows it would run for real while its answers are kept: a shape not
// replayed; the client gets what the server answered (the failed block's
// COMMIT rolls back).
TEST_F(PsycopgPipelineTest, SeveralSyncsInFlightWithACommitGetTheOriginalError) {
  StartProxy(true);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "libpqcommitlast 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectPassedThrough(out, "libpqcommitlast: 40001 25P02 ROLLBACK");
  EXPECT_EQ(stats().replays.load(), 0) << out;
  EXPECT_EQ(stats().replay_unreplayable_shape.load(), 1) << out;
}

// The failed unit is a COMMIT (write skew, found at commit): it ends the
// transaction, and the UPDATE in flight behind it runs on its own,
// autocommitted. Not replayed (it must not run twice): the client gets the
// 40001, then the UPDATE's count; the script checks it ran once. The COMMIT
// fails at once, so whether the UPDATE's unit has reached the proxy by then
// is a race: if it has, the shape is not replayed; if not, the COMMIT's
// transaction is replayed alone, b's read differs, and the client gets the
// original error all the same. Either way one of the two is counted, never
// a matching replay.
TEST_F(PsycopgPipelineTest, UnitsBehindAFailedCommitRunOnce) {
  StartProxy(true);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "libpqcommit 1 5"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(Has(out, "libpqcommit: 40001 1")) << out;
  EXPECT_EQ(stats().aborts_40001.load(), 1) << out;
  EXPECT_EQ(stats().replay_matches.load(), 0) << out;
  EXPECT_EQ(stats().replay_unreplayable_shape.load() + stats().replay_mismatches.load(), 1) << out;
  EXPECT_EQ(Value(2), "1");
}

TEST_F(PsycopgPipelineTest, UnitsBehindAFailedCommitWithoutReplay) {
  StartProxy(false);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "libpqcommit 1 5"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(Has(out, "libpqcommit: 40001 1")) << out;
  EXPECT_EQ(Value(2), "1");
}

// The same with the conflict in the last unit: nothing in flight behind it,
// the units before it answered (their ReadyForQuery 'T' received).
TEST_F(PsycopgPipelineTest, SeveralSyncsFailingInTheLastUnitAreReplayed) {
  StartProxy(true);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "libpqlast 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectReplayed(out, "libpqlast: 1 1 1 committed");
}

// Autocommit: the pipeline up to its Sync is one implicit transaction,
// replayed in a block of the proxy's (the first UPDATE's results had
// reached the client).
TEST_F(PsycopgPipelineTest, ImplicitPipelineIsReplayedInvisibly) {
  StartProxy(true);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "auto 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectReplayed(out, "auto: 1 1 1 committed");
  EXPECT_EQ(stats().replays_implicit.load(), 1) << out;
}

// executemany(returning=True) ends its Bind / Execute pairs with a Flush
// and reads the rows before any Sync: at the error the unit has no Sync
// (the client waits for the error before it sends one), a shape not
// replayed; the error reaches the client cleanly, without replay the same.
TEST_F(PsycopgPipelineTest, ExecutemanyReturningBeforeItsSyncGetsTheOriginalError) {
  StartProxy(true);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "returning 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectPassedThrough(out, "returning: 40001");
  EXPECT_EQ(stats().replays.load(), 0) << out;
  EXPECT_EQ(stats().replay_unreplayable_shape.load(), 1) << out;
}

TEST_F(PsycopgPipelineTest, ExecutemanyReturningWithoutReplay) {
  StartProxy(false);
  auto [rc, out] = Run(Python("pipeline_psycopg.py", "returning 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectPassedThrough(out, "returning: 40001");
}

class JdbcBatchTest : public PipelineTest {
 protected:
  void SetUp() override {
    PipelineTest::SetUp();
    if (IsSkipped()) return;
    if (!Have("java -version && test -f /usr/share/java/postgresql.jar")) GTEST_SKIP() << "no java or pgjdbc";
  }
};

// Batches of 3 (one of a missing row) and of 600 (pgjdbc syncs it in
// chunks), a rewritten INSERT batch; every count and row checked.
TEST_F(JdbcBatchTest, ValuesReadBackWithoutReplay) {
  StartProxy(false);
  auto [rc, out] = Run(Java("values 1 5"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(Has(out, "values: ok")) << out;
  EXPECT_EQ(Value(1), "301");
}

TEST_F(JdbcBatchTest, ConflictReachesTheClientWithoutReplay) {
  StartProxy(false);
  auto [rc, out] = Run(Java("blind 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectPassedThrough(out, "blind: 40001");
}

TEST_F(JdbcBatchTest, BatchIsReplayedInvisibly) {
  StartProxy(true);
  auto [rc, out] = Run(Java("blind 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectReplayed(out, "blind: 1 1 1 committed");
  EXPECT_EQ(Value(5), "2");
}

// 600 UPDATEs, synced by pgjdbc in units of at most 256: the conflict in
// the second unit, the first one's results already received (compared).
TEST_F(JdbcBatchTest, LargeBatchIsReplayedInvisibly) {
  StartProxy(true);
  auto [rc, out] = Run(Java("bigblind 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectReplayed(out, "bigblind: 600 committed");
  EXPECT_EQ(Value(2), "599");
}

// reWriteBatchedInserts: the three upserts become a two-row INSERT and a
// one-row INSERT (pgjdbc's counts -2 -2 1); the two-row one waits and fails.
TEST_F(JdbcBatchTest, RewrittenBatchIsReplayedInvisibly) {
  StartProxy(true);
  auto [rc, out] = Run(Java("rewrite 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectReplayed(out, "rewrite: -2 -2 1 committed");
  EXPECT_EQ(Value(5), "2");
}

TEST_F(JdbcBatchTest, RewrittenBatchConflictReachesTheClientWithoutReplay) {
  StartProxy(false);
  auto [rc, out] = Run(Java("rewrite 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectPassedThrough(out, "rewrite: 40001");
}

class AsyncpgExecutemanyTest : public PipelineTest {
 protected:
  void SetUp() override {
    PipelineTest::SetUp();
    if (IsSkipped()) return;
    if (!Have("/usr/bin/python3 -c 'import asyncpg'")) GTEST_SKIP() << "no asyncpg for /usr/bin/python3";
  }
};

// executemany of 3 and of 3000 rows, an INSERT executemany, read back.
TEST_F(AsyncpgExecutemanyTest, ValuesReadBackWithoutReplay) {
  StartProxy(false);
  auto [rc, out] = Run(Python("pipeline_asyncpg.py", "values 1 5"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(Has(out, "values: ok")) << out;
  EXPECT_EQ(Value(5), "1501");
}

TEST_F(AsyncpgExecutemanyTest, ConflictReachesTheClientWithoutReplay) {
  StartProxy(false);
  auto [rc, out] = Run(Python("pipeline_asyncpg.py", "blind 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectPassedThrough(out, "blind: 40001");
}

TEST_F(AsyncpgExecutemanyTest, ExecutemanyIsReplayedInvisibly) {
  StartProxy(true);
  auto [rc, out] = Run(Python("pipeline_asyncpg.py", "blind 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectReplayed(out, "blind: None committed");
}

// 3000 Bind / Execute pairs: past replay_buffer_bytes (65536), the
// transaction is not replayable; the client gets the 40001 cleanly.
TEST_F(AsyncpgExecutemanyTest, ExecutemanyPastTheBufferGetsTheOriginalError) {
  StartProxy(true);
  auto [rc, out] = Run(Python("pipeline_asyncpg.py", "big 1 5"));
  ASSERT_EQ(rc, 0) << out;
  ExpectPassedThrough(out, "big: 40001");
  EXPECT_EQ(stats().replays.load(), 0) << out;
  EXPECT_EQ(stats().replay_overflows.load(), 1) << out;
  EXPECT_EQ(Value(2), "0");
}

}  // namespace
}  // namespace proxy
}  // namespace corral
