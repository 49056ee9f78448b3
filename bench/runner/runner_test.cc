#include "bench/runner/runner.h"

#include <cstdlib>

#include "bench/runner/experiment.h"
#include "bench/runner/tiny_workload_testing.h"
#include "gtest/gtest.h"

namespace corral {
namespace bench {
namespace {

WorkloadFactory TinyFactory() {
  return [](const BenchConfig&) -> absl::StatusOr<std::unique_ptr<workloads::Workload>> {
    return std::unique_ptr<workloads::Workload>(new TinyWorkload(64, 4));
  };
}

BenchConfig Short(const std::string& protocol, const std::string& policy) {
  BenchConfig c;
  c.workload = "tiny";
  c.protocol = protocol;
  c.policy = policy;
  c.queues = 4;
  c.phase1_s = 0.25;
  c.warmup_s = 0;
  c.duration_s = 0.3;
  c.progress_s = 0;
  c.sample_s = 0.1;
  return c;
}

void ExpectAccounting(const RunMetrics& m) {
  EXPECT_TRUE(m.check.ok()) << m.check;
  EXPECT_GT(m.commits, 0u);
  // Scheduler-side totals equal the executors' own counts.
  ASSERT_TRUE(m.have_executor_counts);
  EXPECT_EQ(m.total_commits, m.executor_commits);
  EXPECT_EQ(m.total_conflict_aborts, m.executor_conflict_aborts);
  EXPECT_EQ(m.hook_commits, m.total_commits);
  // Per-type counts sum to the totals of the window; user aborts kept apart.
  uint64_t commits = 0, aborts = 0, user = 0;
  for (const TypeResult& t : m.per_type) {
    commits += t.commits;
    aborts += t.conflict_aborts;
    user += t.user_aborts;
    if (t.name == "bad_transfer") {
      EXPECT_EQ(t.commits, 0u);
    }
  }
  EXPECT_EQ(commits, m.commits);
  EXPECT_EQ(aborts, m.conflict_aborts);
  EXPECT_EQ(user, m.user_aborts);
  uint64_t by_cause = 0;
  for (uint64_t n : m.aborts_by_cause) by_cause += n;
  EXPECT_EQ(by_cause, m.conflict_aborts);
  EXPECT_NEAR(m.abort_rate,
              m.commits + m.conflict_aborts ? double(m.conflict_aborts) / (m.commits + m.conflict_aborts) : 0, 1e-12);
  EXPECT_GT(m.p99_us, 0);
  EXPECT_GE(m.p99_us, m.p50_us);
  EXPECT_GT(m.sched_cost_ns, 0);
  EXPECT_FALSE(m.timeline.empty());
}

TEST(Runner, PhasedRunAccountingOcc) {
  setenv("CORRAL_ROOT", ".", 0);
  Runner r(MakeEngineBackend(), TinyFactory());
  auto res = r.Run(Short("occ", "count-max-canonical-single"));
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_TRUE(res->has_phase1);
  EXPECT_GT(res->learned_refs, 0);
  ExpectAccounting(res->phase1);
  ASSERT_EQ(res->runs.size(), 1u);
  ExpectAccounting(res->runs[0]);
  EXPECT_TRUE(res->all_checks_ok);
  EXPECT_GT(res->runs[0].extract_cache_hits, 0u);
  EXPECT_GT(res->runs[0].sched_cpu_ns, 0);
  // Some user aborts happened and were not counted as conflicts.
  EXPECT_GT(res->runs[0].user_aborts + res->phase1.user_aborts, 0u);
}

TEST(Runner, PhaseTwoHistoryIsFrozenPhaseOneLearns) {
  Runner r(MakeEngineBackend(), TinyFactory());
  BenchConfig c = Short("2pl-nowait", "count-sum-literal-single");
  c.repeat = 2;
  LearnedHistory learned;
  auto res = r.Run(c, nullptr, &learned);
  ASSERT_TRUE(res.ok()) << res.status();
  // Phase I starts empty and learns.
  EXPECT_EQ(res->phase1.history_counts_start, 0u);
  EXPECT_GT(res->phase1.history_counts_end, 0u);
  EXPECT_EQ(static_cast<int64_t>(learned.entries.size()), res->learned_refs);
  ASSERT_EQ(res->runs.size(), 2u);
  for (const RunMetrics& m : res->runs) {
    ExpectAccounting(m);
    // Phase II: the learned History, loaded and then unchanged by the run.
    EXPECT_EQ(m.history_counts_start, res->phase1.history_counts_end);
    EXPECT_EQ(m.history_counts_end, m.history_counts_start);
    EXPECT_EQ(m.history_entries, res->learned_refs);
  }
  EXPECT_EQ(res->tps.n, 2);
  // Given a learned History, no Phase I runs.
  c.repeat = 1;
  auto again = r.Run(c, &learned, nullptr);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->has_phase1);
  EXPECT_EQ(again->runs[0].history_counts_start, res->phase1.history_counts_end);
}

TEST(Runner, OnlineModeKeepsLearning) {
  Runner r(MakeEngineBackend(), TinyFactory());
  BenchConfig c = Short("occ", "fraction-max-canonical-all");
  c.mode = RunMode::kOnline;
  auto res = r.Run(c);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_FALSE(res->has_phase1);
  ASSERT_EQ(res->runs.size(), 1u);
  ExpectAccounting(res->runs[0]);
  EXPECT_EQ(res->runs[0].history_counts_start, 0u);
  EXPECT_GT(res->runs[0].history_counts_end, 0u);
}

TEST(Runner, BaselinesAndOpenLoop) {
  Runner r(MakeEngineBackend(), TinyFactory());
  BenchConfig c = Short("2pl-waitdie", "hard-partition");
  auto hp = r.Run(c);
  ASSERT_TRUE(hp.ok()) << hp.status();
  EXPECT_FALSE(hp->has_phase1);
  ExpectAccounting(hp->runs[0]);
  // Open loop at 3000 txn/s for 0.3 s: about 900 arrivals, far below capacity.
  c.policy = "original";
  c.arrival_rate = 3000;
  auto open = r.Run(c);
  ASSERT_TRUE(open.ok()) << open.status();
  const RunMetrics& m = open->runs[0];
  EXPECT_TRUE(m.check.ok());
  EXPECT_GT(m.commits + m.user_aborts, 400u);
  EXPECT_LT(m.commits + m.user_aborts, 1600u);
}

TEST(Runner, OutputsAndExperimentTable) {
  Runner r(MakeEngineBackend(), TinyFactory());
  auto spec = ParseSpec(
      "name = tiny\nworkload = tiny\nqueues = 2\nphase1 = 0.1\nwarmup = 0\nduration = 0.15\nprogress = 0\n"
      "repeat = 2\nprotocol = occ, 2pl-nowait\npolicy = original, count-max-canonical-single\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto sum = RunExperiment(*spec, &r, "");
  ASSERT_TRUE(sum.ok()) << sum.status();
  ASSERT_EQ(sum->cells.size(), 4u);
  for (const auto& c : sum->cells) {
    EXPECT_EQ(c.tps.n, 2);
    EXPECT_TRUE(c.checks_ok);
  }
  EXPECT_NE(sum->table_md.find("| count-max-canonical-single |"), std::string::npos) << sum->table_md;
  EXPECT_NE(sum->table_md.find("2pl-nowait abort rate"), std::string::npos);
  EXPECT_TRUE(sum->effects_md.empty());  // not all sixteen policies ran
  BenchResult br;
  br.config = sum->cells[0].config;
  br.runs.resize(1);
  EXPECT_NE(ToJson(br).find("\"policy\":\"original\""), std::string::npos);
  EXPECT_EQ(CsvRows(br).find("tiny,occ,original,2,"), 0u);
}

TEST(Experiment, TablesSplitBySweepDimension) {
  // Two cells per policy that differ only in a swept key must not share a row.
  std::vector<CellResult> cells;
  for (const char* label : {"txn_delay_us=0", "txn_delay_us=300"}) {
    for (const char* pol : {"original", "count-max-canonical-single"}) {
      CellResult c;
      c.config.workload = "w";
      c.config.protocol = "occ";
      c.config.policy = pol;
      c.config.sweep_label = label;
      c.tps.mean = std::string(label) == "txn_delay_us=0" ? 1000 : 500;
      cells.push_back(c);
    }
  }
  std::string md = Table3Markdown("t", cells);
  EXPECT_NE(md.find("txn_delay_us=0\n"), std::string::npos) << md;
  EXPECT_NE(md.find("txn_delay_us=300\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| original | 1000 ± 0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| original | 500 ± 0 |"), std::string::npos) << md;
}

TEST(Experiment, EffectsTableFromSixteenCells) {
  std::vector<CellResult> cells;
  for (const Policy& p : AllLearnedPolicies()) {
    CellResult c;
    c.config.policy = PolicyName(p);
    c.config.workload = "w";
    // tps = 100 + 10 if canonical + 4 if max: only Naming and Aggregation matter.
    c.tps.mean = 100 + (p.extraction.naming == RefNaming::kCanonical ? 10 : 0) +
                 (p.aggregation == Aggregation::kMax ? 4 : 0);
    c.abort_rate.mean = 0.1;
    cells.push_back(c);
  }
  std::string md = EffectsMarkdown(cells);
  EXPECT_NE(md.find("| Naming(L-/C+) | 5.0 | 86.2% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Aggr(Sum-/Max+) | 2.0 | 13.8% |"), std::string::npos) << md;
}

}  // namespace
}  // namespace bench
}  // namespace corral
