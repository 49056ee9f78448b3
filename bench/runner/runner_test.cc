#include "bench/runner/runner.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
  // The scheduling CPU is measured less the clock read's own cost, which
  // load inflates (a descheduled probe): past it the figure is clamped at 0,
  // so only the probe and a non-negative figure are load-proof.
  EXPECT_GT(res->runs[0].probe_cpu_ns, 0);
  EXPECT_GE(res->runs[0].sched_cpu_ns, 0);
  // Some user aborts happened and were not counted as conflicts.
  EXPECT_GT(res->runs[0].user_aborts + res->phase1.user_aborts, 0u);
}

// route_on: what routing sees before a transaction runs. The tiny
// workload's transfer names `from` in its first statement and a random
// `to` in its second: "first" routes on about half the references touched
// (the History still learns them all: the run's checks hold and phase I
// learns both accounts), "templates" predicts nothing of a random second
// account, "all" is the default (nothing counted).
TEST(Runner, RouteOnFirstStatementSeesOnlyItsReferences) {
  setenv("CORRAL_ROOT", ".", 0);
  for (const char* mode : {"all", "first", "templates"}) {
    SCOPED_TRACE(mode);
    Runner r(MakeEngineBackend(), TinyFactory());
    BenchConfig c = Short("occ", "count-max-canonical-single");
    c.route_on = mode;
    auto res = r.Run(c);
    ASSERT_TRUE(res.ok()) << res.status();
    ASSERT_EQ(res->runs.size(), 1u);
    const RunMetrics& m = res->runs[0];
    EXPECT_TRUE(res->all_checks_ok);
    EXPECT_GT(m.commits, 0u);
    if (std::string(mode) == "all") {
      EXPECT_EQ(m.route_all_refs, 0u);
      continue;
    }
    ASSERT_GT(m.route_all_refs, 0u);
    const double seen = static_cast<double>(m.route_seen_refs) / static_cast<double>(m.route_all_refs);
    EXPECT_GT(seen, 0.4);
    EXPECT_LT(seen, 0.7);
    EXPECT_EQ(m.route_predicted_txns, 0u);
  }
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

TEST(Runner, OnlineAutoRecordsItsChoiceInTheTimeline) {
  Runner r(MakeEngineBackend(), TinyFactory());
  BenchConfig c = Short("occ", "count-max-canonical-single");
  ASSERT_TRUE(ApplySetting(&c, "policy", "auto").ok());
  c.mode = RunMode::kOnline;
  c.duration_s = 1;
  c.sample_s = 0.1;
  auto res = r.Run(c);
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->runs.size(), 1u);
  ExpectAccounting(res->runs[0]);
  const std::string tl = TimelineCsv(*res);
  EXPECT_NE(tl.find(",chosen,hot_queues,switches"), std::string::npos);
  // Every sample names a policy; auto starts on its first arm and, 300 ms
  // windows in a 1 s run, has tried another by the end.
  ASSERT_FALSE(res->runs[0].timeline.empty());
  for (const Sample& smp : res->runs[0].timeline) EXPECT_FALSE(smp.chosen.empty());
  EXPECT_GE(res->runs[0].timeline.back().switches, 1);
  EXPECT_FALSE(res->runs[0].switch_log.empty());
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
  // Interleaved: round 1 ran every cell once before round 2 began.
  ASSERT_EQ(sum->runs.size(), 8u);
  for (size_t i = 0; i < sum->runs.size(); ++i) EXPECT_EQ(sum->runs[i].round, i < 4 ? 1 : 2);
  for (int round = 1; round <= 2; ++round) {
    std::vector<int> seen;
    for (const auto& rec : sum->runs) {
      if (rec.round == round) seen.push_back(rec.cell);
    }
    EXPECT_EQ(seen, RoundOrder(4, round, spec->base.seed)) << "round " << round;
  }
  // Paired verdicts, one per learned cell and baseline present.
  ASSERT_EQ(sum->ratios.size(), 2u);
  for (const auto& pr : sum->ratios) EXPECT_EQ(pr.tps.n, 2);
  EXPECT_NE(sum->table_md.find("occ, count-max-canonical-single:\n- tps"), std::string::npos) << sum->table_md;
  EXPECT_NE(sum->table_md.find("| count-max-canonical-single |"), std::string::npos) << sum->table_md;
  EXPECT_NE(sum->table_md.find("2pl-nowait abort rate"), std::string::npos);
  EXPECT_TRUE(sum->effects_md.empty());  // not all sixteen policies ran
  BenchResult br;
  br.config = sum->cells[0].config;
  br.runs.resize(1);
  EXPECT_NE(ToJson(br).find("\"policy\":\"original\""), std::string::npos);
  EXPECT_EQ(CsvRows(br).find("tiny,occ,original,2,"), 0u);
}

// A /proc seam that scripts what the machine did to each measured window:
// the runner reads it at the start and at the end of every window; each
// window's share of the machine taken by other processes comes from
// `shares` in order (0 once they run out).
class ScriptedProbe : public MachineProbe {
 public:
  explicit ScriptedProbe(std::vector<double> shares) : shares_(std::move(shares)) {}
  absl::StatusOr<MachineReading> Read() override {
    if (reads_++ % 2 == 1) {
      const double s = next_ < shares_.size() ? shares_[next_++] : 0.0;
      const uint64_t other = static_cast<uint64_t>(s * 200 + 0.5);
      now_.user += other;  // other processes' CPU (this process: 0 ticks)
      now_.idle += 200 - other;
    }
    return now_;
  }

 private:
  std::vector<double> shares_;
  size_t next_ = 0;
  int reads_ = 0;
  MachineReading now_;
};

absl::StatusOr<ExperimentSummary> RunScripted(const std::string& extra, std::vector<double> shares) {
  Runner r(MakeEngineBackend(), TinyFactory(), std::make_shared<ScriptedProbe>(std::move(shares)));
  auto spec = ParseSpec("name = tiny\nworkload = tiny\nqueues = 2\nwarmup = 0\nduration = 0.1\nprogress = 0\n"
                        "protocol = occ\npolicy = original\nmax_interference = 0.3\n" + extra);
  if (!spec.ok()) return spec.status();
  return RunExperiment(*spec, &r, "");
}

TEST(Experiment, ContaminatedRunIsMarkedAndRerunCleanOneKept) {
  // Round 1: the first window lost 60% of the machine (> 0.3): marked,
  // re-run; the re-run lost 10%: kept. Round 2: 20%: kept at once.
  auto sum = RunScripted("min_reps = 2\nmax_reps = 2\nmax_reruns = 2\n", {0.6, 0.1, 0.2});
  ASSERT_TRUE(sum.ok()) << sum.status();
  ASSERT_EQ(sum->runs.size(), 3u);
  EXPECT_EQ(sum->runs[0].round, 1);
  EXPECT_EQ(sum->runs[0].attempt, 0);
  EXPECT_TRUE(sum->runs[0].metrics.contaminated);
  EXPECT_NEAR(sum->runs[0].metrics.interference.share, 0.6, 1e-9);
  EXPECT_EQ(sum->runs[1].round, 1);
  EXPECT_EQ(sum->runs[1].attempt, 1);
  EXPECT_FALSE(sum->runs[1].metrics.contaminated);
  EXPECT_EQ(sum->runs[2].round, 2);
  EXPECT_FALSE(sum->runs[2].metrics.contaminated);
  EXPECT_EQ(sum->contaminated_runs, 1);
  ASSERT_EQ(sum->cells.size(), 1u);
  EXPECT_EQ(sum->cells[0].contaminated_runs, 1);
  // The mean is over the two clean runs only.
  EXPECT_EQ(sum->cells[0].tps.n, 2);
  EXPECT_NEAR(sum->cells[0].tps.mean, (sum->runs[1].metrics.tps + sum->runs[2].metrics.tps) / 2, 1e-6);
  // runs.csv's row carries the round, the share and the flag (then
  // queues_per_txn: 0, not qstore).
  BenchResult br;
  br.config = sum->cells[0].config;
  br.runs = {sum->runs[0].metrics};
  const std::string row = CsvRows(br);
  EXPECT_NE(row.find(",1,0.6000,0.0000,0.6000,0.00,1,0.000\n"), std::string::npos) << row;
}

TEST(Experiment, RunStillContaminatedAfterRerunsIsLeftOut) {
  auto sum = RunScripted("min_reps = 2\nmax_reps = 2\nmax_reruns = 1\n", {0.9, 0.31, 0.0});
  ASSERT_TRUE(sum.ok()) << sum.status();
  ASSERT_EQ(sum->runs.size(), 3u);  // round 1: two contaminated attempts; round 2: one clean
  EXPECT_TRUE(sum->runs[0].metrics.contaminated);
  EXPECT_TRUE(sum->runs[1].metrics.contaminated);
  EXPECT_FALSE(sum->runs[2].metrics.contaminated);
  EXPECT_EQ(sum->cells[0].tps.n, 1);
  EXPECT_EQ(sum->contaminated_runs, 2);
  EXPECT_NE(sum->table_md.find("2 run(s) lost more than 30%"), std::string::npos) << sum->table_md;
}

TEST(Experiment, StopsAtTargetOrTimeCap) {
  // Two cells so a headline ratio exists; a target of x1e6 either way is met
  // as soon as min_reps rounds ran (every run commits something: 0.5 s
  // measured, so a loaded machine that starves a run for 100 ms cannot
  // leave a cell at 0 tps and the ratio undefined).
  Runner r(MakeEngineBackend(), TinyFactory(), std::make_shared<ScriptedProbe>(std::vector<double>{}));
  auto spec = ParseSpec("name = t\nworkload = tiny\nqueues = 2\nwarmup = 0\nduration = 0.5\nphase1 = 0.1\n"
                        "progress = 0\nprotocol = occ\npolicy = original, count-max-canonical-single\n"
                        "min_reps = 2\nmax_reps = 6\nci_target = 1000000\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto sum = RunExperiment(*spec, &r, "");
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(sum->rounds, 2);
  EXPECT_NE(sum->stop_reason.find("interval within +-"), std::string::npos) << sum->stop_reason;
  ASSERT_EQ(sum->ratios.size(), 1u);
  EXPECT_EQ(sum->ratios[0].baseline, "original");
  EXPECT_EQ(sum->ratios[0].tps.n, 2);
  // A time cap already spent: two rounds (an interval needs two), then stop.
  spec->ci_target = 0;
  spec->time_cap_s = 0.001;
  sum = RunExperiment(*spec, &r, "");
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(sum->rounds, 2);
  EXPECT_NE(sum->stop_reason.find("time cap"), std::string::npos) << sum->stop_reason;
}

TEST(Experiment, PhaseOnePerRoundLearnsAFreshHistoryEachRound) {
  for (bool per_round : {false, true}) {
    Runner r(MakeEngineBackend(), TinyFactory(), std::make_shared<ScriptedProbe>(std::vector<double>{}));
    auto spec = ParseSpec(absl::StrCat("name = t\nworkload = tiny\nqueues = 2\nwarmup = 0\nduration = 0.1\n",
                                       "phase1 = 0.1\nprogress = 0\nprotocol = occ\n",
                                       "policy = original, count-max-canonical-single, count-sum-canonical-single\n",
                                       "min_reps = 2\nmax_reps = 2\nphase1_per_round = ", per_round ? "on" : "off",
                                       "\n"));
    ASSERT_TRUE(spec.ok()) << spec.status();
    auto sum = RunExperiment(*spec, &r, "");
    ASSERT_TRUE(sum.ok()) << sum.status();
    // The two learned policies share an extraction half, so one History per
    // round (per_round) or one for the whole experiment.
    int learned_in[3] = {0, 0, 0};
    for (const auto& rec : sum->runs) {
      if (rec.ran_phase1) ++learned_in[rec.round];
      if (sum->cells[rec.cell].config.policy == "original") EXPECT_FALSE(rec.ran_phase1);
    }
    EXPECT_EQ(learned_in[1], 1) << per_round;
    EXPECT_EQ(learned_in[2], per_round ? 1 : 0);
  }
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

// Deneva's protocols run through the scheduler like the others: their
// conflict aborts are counted under their own causes (runs.csv columns) and
// the accounting adds up.
TEST(Runner, DenevaProtocolsReportTheirOwnAbortCauses) {
  setenv("CORRAL_ROOT", ".", 0);
  const std::string header = CsvHeader();
  EXPECT_NE(header.find(",aborts_timestamp_too_old"), std::string::npos) << header;
  EXPECT_NE(header.find(",aborts_range_empty"), std::string::npos) << header;
  for (const std::string p : {"timestamp", "mvcc", "maat"}) {
    Runner r(MakeEngineBackend(), TinyFactory());
    auto res = r.Run(Short(p, "count-max-canonical-single"));
    ASSERT_TRUE(res.ok()) << p << ": " << res.status();
    ASSERT_EQ(res->runs.size(), 1u);
    EXPECT_TRUE(res->all_checks_ok) << p;
    const scheduler::AbortCause own = p == "maat" ? scheduler::AbortCause::kRangeEmpty
                                                  : scheduler::AbortCause::kTimestampTooOld;
    for (const RunMetrics* m : {&res->phase1, &res->runs[0]}) {
      ExpectAccounting(*m);
      EXPECT_EQ(m->aborts_by_cause[static_cast<size_t>(own)], m->conflict_aborts) << p;
    }
  }
}

// The planned protocols run the tiny workload (sets found by
// reconnaissance) without a single conflict abort, consistently, and report
// their planning counts and phase times; the others report none.
TEST(Runner, PlannedProtocolsNeverConflictAbortAndReportTheirPhases) {
  setenv("CORRAL_ROOT", ".", 0);
  for (const std::string p : {"calvin", "planned", "qstore", "orthrus"}) {
    Runner r(MakeEngineBackend(), TinyFactory());
    BenchConfig c = Short(p, "original");
    ASSERT_TRUE(ApplySetting(&c, "calvin_batch", "count:2:200").ok());
    ASSERT_TRUE(ApplySetting(&c, "qstore_batch", "count:2:200").ok());
    ASSERT_TRUE(ApplySetting(&c, "qstore_planners", "2").ok());
    ASSERT_TRUE(ApplySetting(&c, "orthrus_cc_threads", "2").ok());
    auto res = r.Run(c);
    ASSERT_TRUE(res.ok()) << p << ": " << res.status();
    ASSERT_EQ(res->runs.size(), 1u);
    EXPECT_TRUE(res->all_checks_ok) << p;
    const RunMetrics& m = res->runs[0];
    ExpectAccounting(m);
    EXPECT_EQ(m.conflict_aborts, 0u) << p;
    EXPECT_NE(m.plan_report.find("reconnaissance runs"), std::string::npos) << m.plan_report;
  }
  Runner r(MakeEngineBackend(), TinyFactory());
  auto res = r.Run(Short("occ", "original"));
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->runs[0].plan_report, "");
  EXPECT_EQ(res->runs[0].queues_per_txn, 0);
}

// qstore under each placement (learned with a window short enough to switch
// during the run): a consistent run, and the queues a transaction spanned
// in its report and runs.csv.
TEST(Runner, QStorePlacementsRunAndReportQueuesPerTransaction) {
  setenv("CORRAL_ROOT", ".", 0);
  for (const std::string placement : {"hash", "range", "learned"}) {
    Runner r(MakeEngineBackend(), TinyFactory());
    BenchConfig c = Short("qstore", "original");
    ASSERT_TRUE(ApplySetting(&c, "qstore_placement", placement).ok());
    ASSERT_TRUE(ApplySetting(&c, "qstore_learn_txns", "50").ok());
    auto res = r.Run(c);
    ASSERT_TRUE(res.ok()) << placement << ": " << res.status();
    EXPECT_TRUE(res->all_checks_ok) << placement;
    const RunMetrics& m = res->runs[0];
    EXPECT_EQ(m.conflict_aborts, 0u) << placement;
    EXPECT_GE(m.queues_per_txn, 1.0) << placement;
    EXPECT_NE(m.plan_report.find("qstore placement " + placement), std::string::npos) << m.plan_report;
    const std::string csv = CsvRows(*res);
    EXPECT_NE(csv.find(absl::StrFormat(",%.3f\n", m.queues_per_txn)), std::string::npos) << csv;
  }
}

// qstore's speculative execution: a consistent run whose only aborts are
// cascades, with its speculation counters in the report.
TEST(Runner, QStoreSpeculativeRunsAndReportsSpeculation) {
  setenv("CORRAL_ROOT", ".", 0);
  Runner r(MakeEngineBackend(), TinyFactory());
  BenchConfig c = Short("qstore", "original");
  ASSERT_TRUE(ApplySetting(&c, "qstore_execution", "Speculative").ok());
  EXPECT_EQ(c.qstore_execution, "speculative");
  EXPECT_FALSE(ApplySetting(&c, "qstore_execution", "eager").ok());
  auto res = r.Run(c);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_TRUE(res->all_checks_ok);
  const RunMetrics& m = res->runs[0];
  EXPECT_GT(m.commits, 0u);
  EXPECT_NE(m.plan_report.find("; speculative: "), std::string::npos) << m.plan_report;
  EXPECT_NE(m.plan_report.find("speculation dependencies"), std::string::npos) << m.plan_report;
}

// sets=sql needs a workload whose SQL the key mapping knows
// (bench/workloads/sql_sets.h); the tiny test workload is refused by name.
TEST(Runner, SqlSetsRefuseAWorkloadWithoutAKeyMapping) {
  setenv("CORRAL_ROOT", ".", 0);
  Runner r(MakeEngineBackend(), TinyFactory());
  BenchConfig c = Short("planned", "original");
  ASSERT_TRUE(ApplySetting(&c, "sets", "sql").ok());
  EXPECT_EQ(c.sets, "sql");
  auto res = r.Run(c);
  ASSERT_FALSE(res.ok());
  EXPECT_NE(res.status().message().find("no SQL key mapping for workload 'tiny'"), absl::string_view::npos)
      << res.status();
  EXPECT_FALSE(ApplySetting(&c, "sets", "guess").ok());
  BenchConfig pg = Short("planned", "original");
  pg.backend = "postgres";
  pg.sets = "sql";
  EXPECT_FALSE(Validate(pg).ok());
}

}  // namespace
}  // namespace bench
}  // namespace corral
