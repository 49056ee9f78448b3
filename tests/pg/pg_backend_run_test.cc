// Runs through the experiment runner on a real PostgreSQL (the runner's
// PostgreSQL backend, bench/pgbackend): short TPC-C runs under each isolation
// level complete and leave the consistency conditions holding; under
// SERIALIZABLE, SQLSTATE 40001 reaches the History as conflict aborts of the
// aborted transactions' references. Needs the server of scripts/pg.sh
// (--test_env=CORRAL_PG_CONNINFO); skips with the reason otherwise.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "adapters/libpq_connection.h"
#include "adapters/pg_test_server.h"
#include "bench/pgbackend/pg_backend.h"
#include "bench/runner/runner.h"
#include "bench/runner/workload_select.h"
#include "bench/workloads/factory.h"
#include "gtest/gtest.h"
#include "scheduler/txn.h"

namespace corral {
namespace bench {
namespace {

class PgBackendRunTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string conninfo;
    if (!adapters::PgTestServer(&conninfo)) return;
    PgBackendOptions o;
    o.conninfo = conninfo;
    // One runner (one template database) for the whole suite.
    runner_ = new Runner(MakePgBackend(o), MakeWorkloadFactory());
  }
  static void TearDownTestSuite() {
    delete runner_;
    runner_ = nullptr;
  }
  void SetUp() override {
    if (runner_ == nullptr) GTEST_SKIP() << adapters::PgTestSkipReason();
  }

  static BenchConfig Tpcc(const std::string& isolation, const std::string& policy) {
    BenchConfig c;
    c.backend = "postgres";
    c.workload = "tpcc";
    c.warehouses = 2;
    c.queues = 4;
    c.protocol = isolation;  // the backend reads an isolation level here
    c.policy = policy;
    c.duration_s = 0.8;
    c.warmup_s = 0.1;
    c.phase1_s = 1.0;
    c.repeat = 1;
    c.progress_s = 0;
    return c;
  }

  static Runner* runner_;
};

Runner* PgBackendRunTest::runner_ = nullptr;

void ExpectCompletedAndConsistent(const BenchResult& r) {
  ASSERT_EQ(r.runs.size(), 1u);
  const RunMetrics& m = r.runs[0];
  // Progress, not a throughput: a loaded machine may run few in 0.8 s.
  EXPECT_GT(m.commits, 0u) << "no commits in " << m.seconds << " s";
  EXPECT_EQ(m.failures, 0u);
  EXPECT_TRUE(m.check.ok()) << m.check;
  EXPECT_TRUE(r.all_checks_ok);
  // The executors' own counts agree with what the runner saw.
  ASSERT_TRUE(m.have_executor_counts);
  EXPECT_EQ(m.executor_commits, m.total_commits);
  EXPECT_EQ(m.executor_conflict_aborts, m.total_conflict_aborts);
}

TEST_F(PgBackendRunTest, TpccSerializableOriginal) {
  auto r = runner_->Run(Tpcc("serializable", "original"));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectCompletedAndConsistent(*r);
}

TEST_F(PgBackendRunTest, TpccRepeatableReadHardPartition) {
  auto r = runner_->Run(Tpcc("repeatable-read", "hard-partition"));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectCompletedAndConsistent(*r);
}

TEST_F(PgBackendRunTest, TpccReadCommittedOriginal) {
  auto r = runner_->Run(Tpcc("read-committed", "original"));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectCompletedAndConsistent(*r);
  // READ COMMITTED never reports serialization failures (conflicts are lock
  // waits, or deadlocks).
  EXPECT_EQ(r->runs[0].aborts_by_cause[static_cast<size_t>(scheduler::AbortCause::kSerialization)], 0u);
}

TEST_F(PgBackendRunTest, SerializableConflictsReachTheHistory) {
  BenchConfig c = Tpcc("serializable", "count-max-canonical-single");
  c.queues = 6;  // 6 connections over 2 warehouses: 40001s are certain
  LearnedHistory learned;
  auto r = runner_->Run(c, nullptr, &learned);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->has_phase1);
  const RunMetrics& p1 = r->phase1;
  const uint64_t serialization =
      p1.aborts_by_cause[static_cast<size_t>(scheduler::AbortCause::kSerialization)];
  EXPECT_GT(serialization, 0u) << "no SQLSTATE 40001 in Phase I";
  EXPECT_TRUE(p1.check.ok()) << p1.check;
  // Every conflict abort of Phase I counted at least one reference.
  uint64_t ref_aborts = 0, refs_with_aborts = 0;
  for (const auto& e : learned.entries) {
    ref_aborts += e.counts.aborts;
    refs_with_aborts += e.counts.aborts > 0 ? 1 : 0;
  }
  EXPECT_GT(refs_with_aborts, 0u);
  EXPECT_GE(ref_aborts, p1.total_conflict_aborts);
  ExpectCompletedAndConsistent(*r);
}

// Hard partition over 2 warehouses on 2 connections: each connection runs one
// warehouse's transactions, so under SERIALIZABLE only the remote payments
// and remote stock items (a few percent) can conflict. With sequential scans
// allowed the planner scans the 2-row warehouse and 20-row district tables,
// which takes relation-level SIRead locks, and the two connections fail each
// other with 40001 on about 4 attempts in 10 (bench/RESULTS.md, issue 7).
TEST_F(PgBackendRunTest, IndexScansKeepWarehousesApartUnderSerializable) {
  // Compared, not bounded: an absolute abort-rate bound from a short run is
  // crossed when the machine is loaded (0.104 against a bound of 0.10 while
  // another build ran, issue 23). The two settings run interleaved (index,
  // sequential, index, sequential) so load falls on both alike, and the
  // pooled 40001 rates must differ by 2x (measured: ~0.4 against ~0.05-0.1).
  BenchConfig c = Tpcc("serializable", "hard-partition");
  c.queues = 2;
  c.duration_s = 0.8;
  c.phase1_s = 0;
  ASSERT_FALSE(c.pg_seqscan);  // the default
  uint64_t aborts[2] = {0, 0}, commits[2] = {0, 0};
  for (int pair = 0; pair < 2; ++pair) {
    for (bool seqscan : {false, true}) {
      c.pg_seqscan = seqscan;
      c.seed = 1 + pair;
      auto r = runner_->Run(c);
      ASSERT_TRUE(r.ok()) << r.status();
      ExpectCompletedAndConsistent(*r);
      aborts[seqscan] += r->runs[0].conflict_aborts;
      commits[seqscan] += r->runs[0].commits;
    }
  }
  auto rate = [&](int k) { return static_cast<double>(aborts[k]) / std::max<uint64_t>(1, aborts[k] + commits[k]); };
  const double idx_rate = rate(0), seq_rate = rate(1);
  EXPECT_GT(seq_rate, 2 * idx_rate) << "sequential scans did not raise the 40001 rate well above index scans' ("
                                    << seq_rate << " vs " << idx_rate << ")";
}

}  // namespace
}  // namespace bench
}  // namespace corral
