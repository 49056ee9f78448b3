#include "bench/runner/spec.h"

#include <filesystem>

#include "gtest/gtest.h"

namespace corral {
namespace bench {
namespace {

TEST(Spec, ParsesKeysListsAndComments) {
  auto s = ParseSpec(R"(
# the quick comparison
name = quick
workload = tpcc
protocol = occ, 2pl-waitdie     # two protocols
policy = original, hard-partition, count-max-canonical-single
queues = 4, 8
warehouses = 8
repeat = 3
duration = 1.5
stealing = off
retry_wait_us = 0
throttle_target_ms = 2
skew_phases = 5:0 5:0.9
)");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->name, "quick");
  EXPECT_EQ(s->base.workload, "tpcc");
  EXPECT_EQ(s->base.warehouses, 8);
  EXPECT_EQ(s->base.repeat, 3);
  EXPECT_DOUBLE_EQ(s->base.duration_s, 1.5);
  EXPECT_FALSE(s->base.stealing);
  EXPECT_DOUBLE_EQ(s->base.retry_wait_us, 0);
  EXPECT_DOUBLE_EQ(s->throttle_target_ms, 2);
  ASSERT_EQ(s->base.skew_phases.size(), 2u);
  EXPECT_DOUBLE_EQ(s->base.skew_phases[1].zipf_theta, 0.9);
  ASSERT_EQ(s->sweeps.size(), 3u);
  EXPECT_EQ(s->sweeps[0].first, "protocol");
  EXPECT_EQ(s->sweeps[1].first, "queues");
  EXPECT_EQ(s->sweeps.back().first, "policy");  // innermost
  std::vector<BenchConfig> cells = ExpandCells(*s);
  ASSERT_EQ(cells.size(), 2u * 2u * 3u);
  EXPECT_EQ(cells[0].protocol, "occ");
  EXPECT_EQ(cells[0].queues, 4);
  EXPECT_EQ(cells[0].policy, "original");
  EXPECT_EQ(cells[2].policy, "count-max-canonical-single");
  EXPECT_EQ(cells[3].queues, 8);
  EXPECT_EQ(cells[11].protocol, "2pl-waitdie");
  EXPECT_EQ(cells[11].warehouses, 8);
  // Sweep dimensions other than policy/protocol label the cell.
  EXPECT_EQ(cells[0].sweep_label, "queues=4");
  EXPECT_EQ(cells[3].sweep_label, "queues=8");
}

TEST(Spec, SweepLabelNamesEveryOtherDimension) {
  auto s = ParseSpec("txn_delay_us = 0, 300\nstealing = off\nqueues = 2, 4\npolicy = original, hard-partition\n");
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<BenchConfig> cells = ExpandCells(*s);
  ASSERT_EQ(cells.size(), 8u);
  EXPECT_EQ(cells[0].sweep_label, "txn_delay_us=0 queues=2");
  EXPECT_EQ(cells[1].sweep_label, cells[0].sweep_label);  // policy is not part of it
  EXPECT_EQ(cells[7].sweep_label, "txn_delay_us=300 queues=4");
  EXPECT_DOUBLE_EQ(cells[7].txn_delay_us, 300);
}

TEST(Spec, FactorialExpandsToSixteenPolicies) {
  auto s = ParseSpec("policy = original, hard-partition, factorial\n");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(ExpandCells(*s).size(), 18u);
}

TEST(Spec, RoundKeys) {
  auto s = ParseSpec("repeat = 3\nmin_reps = 4\nmax_reps = 30\nci_target = 0.05\ntime_cap_s = 150\n"
                     "max_interference = 0.5\nmax_reruns = 1\nphase1_per_round = on\n");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->min_reps, 4);
  EXPECT_EQ(s->max_reps, 30);
  EXPECT_DOUBLE_EQ(s->ci_target, 0.05);
  EXPECT_DOUBLE_EQ(s->time_cap_s, 150);
  EXPECT_DOUBLE_EQ(s->max_interference, 0.5);
  EXPECT_EQ(s->max_reruns, 1);
  EXPECT_TRUE(s->phase1_per_round);
  EXPECT_FALSE(ParseSpec("repeat = 1\n")->phase1_per_round);
  auto bad = ParseSpec("min_reps = 5\nmax_reps = 3\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("max_reps (3) < min_reps (5)"), absl::string_view::npos) << bad.status();
}

TEST(Spec, EveryCheckedInSpecParses) {
  // Every file in bench/experiments: it parses and each of its cells is valid.
  int specs = 0;
  for (const auto& entry : std::filesystem::directory_iterator("bench/experiments")) {
    if (entry.path().extension() != ".spec") continue;
    ++specs;
    const std::string name = entry.path().stem().string();
    auto s = ReadSpecFile(entry.path().string());
    ASSERT_TRUE(s.ok()) << name << ": " << s.status();
    for (const BenchConfig& c : ExpandCells(*s)) EXPECT_TRUE(Validate(c).ok()) << name << " " << c.sweep_label;
  }
  EXPECT_GE(specs, 20);
  // The online specs of issue 16: the hot spot moves between phases.
  for (const char* name : {"online_shift_smallbank", "online_shift_ycsb"}) {
    auto s = ReadSpecFile(std::string("bench/experiments/") + name + ".spec");
    ASSERT_TRUE(s.ok()) << name << ": " << s.status();
    ASSERT_EQ(s->base.skew_phases.size(), 3u) << name;
    EXPECT_NE(s->base.skew_phases[0].hot_offset, s->base.skew_phases[1].hot_offset) << name;
    EXPECT_NE(s->base.skew_phases[1].hot_offset, s->base.skew_phases[2].hot_offset) << name;
  }
  // Deneva's figures: six protocols x {original, learned} at every point, every cell valid.
  for (const auto& [name, points] : std::vector<std::pair<std::string, size_t>>{
           {"deneva_ycsb_skew", 7}, {"deneva_ycsb_update", 6}, {"deneva_tpcc", 8}}) {
    auto s = ReadSpecFile("bench/experiments/" + name + ".spec");
    ASSERT_TRUE(s.ok()) << name << ": " << s.status();
    std::vector<BenchConfig> cells = ExpandCells(*s);
    EXPECT_EQ(cells.size(), points * 12) << name;
    for (const BenchConfig& c : cells) EXPECT_TRUE(Validate(c).ok()) << name << " " << c.sweep_label;
  }
  auto quick = ReadSpecFile("bench/experiments/quick.spec");
  ASSERT_TRUE(quick.ok());
  // The main command's budget: rounds stop by 150 s.
  EXPECT_GT(quick->time_cap_s, 0);
  EXPECT_LE(quick->time_cap_s, 150);
  EXPECT_GT(quick->max_interference, 0);
}

TEST(Spec, BadLinesNameTheLine) {
  struct Case {
    const char* text;
    const char* line;
    const char* detail;
  };
  const Case cases[] = {
      {"name = x\nqueues = 4\nthis is not a setting\n", "spec line 3:", "key = value"},
      {"# c\n\nqueues = many\n", "spec line 3:", "queues"},
      {"workload = tpcc\nbogus_key = 1\n", "spec line 2:", "unknown key 'bogus_key'"},
      // Keys of removed scheduler rules are unknown, not silently ignored.
      {"queues = 8\n# rules\nmax_queue_load = 1.25\n", "spec line 3:", "unknown key 'max_queue_load'"},
      {"max_over_rows = on\n", "spec line 1:", "unknown key 'max_over_rows'"},
      {"max_ref_share = 3\n", "spec line 1:", "unknown key 'max_ref_share'"},
      {"policy = count-max-canonical-single, nonsense\n", "spec line 1:", "nonsense"},
      {"repeat = 3\nrepeat = 4\n", "spec line 2:", "duplicate"},
      {"queues = 4,,8\n", "spec line 1:", "empty"},
      {"mode = sideways\n", "spec line 1:", "phased|online"},
      {"throttle_target_ms = -1\n", "spec line 1:", "throttle_target_ms"},
      {"a = 1\n\n\n\nskew_phases = 5:x\n", "spec line 1:", "unknown key 'a'"},
      {"queues = 1\n\n\n\nskew_phases = 5:x\n", "spec line 5:", "skew_phases"},
      {"duration =\n", "spec line 1:", "missing value"},
      {"name = x\nqueues = 4\nprotocol = occ, 3pl\nrepeat = 3\n", "spec line 3:", "unknown protocol '3pl'"},
      {"queues = 4, 100\nprotocol = occ\n", "spec line 1:", "queues=100"},
      {"min_reps = 0\n", "spec line 1:", "min_reps"},
      {"max_reruns = -1\n", "spec line 1:", "max_reruns"},
      {"ci_target = -0.1\n", "spec line 1:", "ci_target"},
      {"time_cap_s = soon\n", "spec line 1:", "time_cap_s"},
      {"max_interference = 1.5\n", "spec line 1:", "share in 0..1"},
      {"phase1_per_round = sometimes\n", "spec line 1:", "phase1_per_round"},
  };
  for (const Case& c : cases) {
    auto s = ParseSpec(c.text);
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    std::string msg(s.status().message());
    EXPECT_EQ(msg.rfind(c.line, 0), 0u) << msg;
    EXPECT_NE(msg.find(c.detail), std::string::npos) << msg;
  }
}

TEST(Config, ApplyAndValidate) {
  BenchConfig c;
  EXPECT_TRUE(ApplySetting(&c, "threads", "6").ok());
  EXPECT_EQ(c.queues, 6);
  EXPECT_EQ(EffectiveClients(c), 12);
  EXPECT_TRUE(ApplySetting(&c, "policy", "Fraction_Sum_Literal_All").ok());
  EXPECT_EQ(c.policy, "fraction-sum-literal-all");
  EXPECT_TRUE(Validate(c).ok());
  c.protocol = "3pl";
  EXPECT_FALSE(Validate(c).ok());
  c.protocol = "occ";
  c.queues = 100;
  EXPECT_FALSE(Validate(c).ok());
  EXPECT_FALSE(ApplySetting(&c, "seed", "-x").ok());
}

TEST(Config, SkewPhasesTakeAHotOffsetAndEmptyFields) {
  BenchConfig c;
  ASSERT_TRUE(ApplySetting(&c, "skew_phases", "5:0.99 5:0.99:::4 5::0.9:50:5000").ok());
  ASSERT_EQ(c.skew_phases.size(), 3u);
  EXPECT_EQ(c.skew_phases[0].hot_offset, 0);
  EXPECT_DOUBLE_EQ(c.skew_phases[1].zipf_theta, 0.99);
  EXPECT_DOUBLE_EQ(c.skew_phases[1].hot_fraction, -1);  // empty: the workload's
  EXPECT_EQ(c.skew_phases[1].hot_size, -1);
  EXPECT_EQ(c.skew_phases[1].hot_offset, 4);
  EXPECT_DOUBLE_EQ(c.skew_phases[2].zipf_theta, -1);
  EXPECT_DOUBLE_EQ(c.skew_phases[2].hot_fraction, 0.9);
  EXPECT_EQ(c.skew_phases[2].hot_size, 50);
  EXPECT_EQ(c.skew_phases[2].hot_offset, 5000);
  const absl::Status bad = ApplySetting(&c, "skew_phases", "5:0.9:0.5:50:x");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.message()).find("hot_offset"), std::string::npos) << bad;
  EXPECT_FALSE(ApplySetting(&c, "skew_phases", "5:1:2:3:4:5").ok());
}

TEST(Config, SetsAreDeclaredOrSqlAndASpecSweepsThem) {
  BenchConfig c;
  EXPECT_EQ(c.sets, "declared");
  ASSERT_TRUE(ApplySetting(&c, "sets", "SQL").ok());
  EXPECT_EQ(c.sets, "sql");
  EXPECT_FALSE(ApplySetting(&c, "sets", "guessed").ok());
  EXPECT_EQ(c.sets, "sql");  // a bad value changes nothing
  auto s = ParseSpec("workload = tpcc\nprotocol = calvin, planned\nsets = declared, sql\n");
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<BenchConfig> cells = ExpandCells(*s);
  ASSERT_EQ(cells.size(), 4u);
  int sql = 0;
  for (const BenchConfig& cell : cells) {
    sql += cell.sets == "sql";
    EXPECT_NE(cell.sweep_label.find("sets="), std::string::npos) << cell.sweep_label;
  }
  EXPECT_EQ(sql, 2);
}

TEST(Config, CalvinBatchIsTimeOrCount) {
  BenchConfig c;
  ASSERT_TRUE(ApplySetting(&c, "protocol", "calvin").ok());
  EXPECT_TRUE(Validate(c).ok());
  ASSERT_TRUE(ApplySetting(&c, "calvin_batch", "count:8").ok());
  EXPECT_EQ(c.calvin_batch_txns, 8);
  EXPECT_EQ(c.calvin_batch_us, 1000);
  ASSERT_TRUE(ApplySetting(&c, "calvin_batch", "count:4:250").ok());
  EXPECT_EQ(c.calvin_batch_txns, 4);
  EXPECT_EQ(c.calvin_batch_us, 250);
  ASSERT_TRUE(ApplySetting(&c, "calvin_batch", "time:50").ok());
  EXPECT_EQ(c.calvin_batch_txns, 0);
  EXPECT_EQ(c.calvin_batch_us, 50);
  for (const char* bad : {"count:0", "time:0", "time", "size:3", "count:2:-1"}) {
    EXPECT_FALSE(ApplySetting(&c, "calvin_batch", bad).ok()) << bad;
  }
  EXPECT_EQ(c.calvin_batch_us, 50);  // a bad value changes nothing
  c.protocol = "planned";
  EXPECT_TRUE(Validate(c).ok());
}

TEST(Config, QStoreBatchQueuesAndPlanners) {
  BenchConfig c;
  ASSERT_TRUE(ApplySetting(&c, "protocol", "qstore").ok());
  EXPECT_TRUE(Validate(c).ok());
  ASSERT_TRUE(ApplySetting(&c, "qstore_batch", "count:16:300").ok());
  EXPECT_EQ(c.qstore_batch_txns, 16);
  EXPECT_EQ(c.qstore_batch_us, 300);
  EXPECT_EQ(c.calvin_batch_txns, 0);  // calvin's batching is its own
  ASSERT_TRUE(ApplySetting(&c, "qstore_queues", "64").ok());
  ASSERT_TRUE(ApplySetting(&c, "qstore_planners", "2").ok());
  EXPECT_EQ(c.qstore_queues, 64);
  EXPECT_EQ(c.qstore_planners, 2);
  EXPECT_FALSE(ApplySetting(&c, "qstore_batch", "count:0").ok());
  EXPECT_FALSE(ApplySetting(&c, "qstore_queues", "0").ok());
  EXPECT_FALSE(ApplySetting(&c, "qstore_planners", "65").ok());
  EXPECT_FALSE(ApplySetting(&c, "qstore_planners", "x").ok());
  EXPECT_EQ(c.qstore_batch_txns, 16);  // bad values change nothing
  EXPECT_EQ(c.qstore_queues, 64);
  EXPECT_EQ(c.qstore_planners, 2);
}

TEST(Config, QStorePlacementAndLearningWindow) {
  BenchConfig c;
  EXPECT_EQ(c.qstore_placement, "hash");
  ASSERT_TRUE(ApplySetting(&c, "qstore_placement", "Range").ok());
  EXPECT_EQ(c.qstore_placement, "range");
  ASSERT_TRUE(ApplySetting(&c, "qstore_placement", "learned").ok());
  ASSERT_TRUE(ApplySetting(&c, "qstore_learn_txns", "500").ok());
  EXPECT_EQ(c.qstore_placement, "learned");
  EXPECT_EQ(c.qstore_learn_txns, 500);
  absl::Status bad = ApplySetting(&c, "qstore_placement", "modulo");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("hash|range|learned"), absl::string_view::npos) << bad;
  EXPECT_FALSE(ApplySetting(&c, "qstore_learn_txns", "0").ok());
  EXPECT_FALSE(ApplySetting(&c, "qstore_learn_txns", "x").ok());
  EXPECT_EQ(c.qstore_placement, "learned");  // bad values change nothing
  EXPECT_EQ(c.qstore_learn_txns, 500);
}

TEST(Config, OrthrusCcThreadsIsACountInRange) {
  BenchConfig c;
  ASSERT_TRUE(ApplySetting(&c, "protocol", "orthrus").ok());
  EXPECT_TRUE(Validate(c).ok());
  EXPECT_EQ(c.orthrus_cc_threads, 1);
  ASSERT_TRUE(ApplySetting(&c, "orthrus_cc_threads", "3").ok());
  EXPECT_EQ(c.orthrus_cc_threads, 3);
  for (const char* bad : {"0", "-2", "17", "two", ""}) {
    EXPECT_FALSE(ApplySetting(&c, "orthrus_cc_threads", bad).ok()) << bad;
  }
  EXPECT_EQ(c.orthrus_cc_threads, 3);  // a bad value changes nothing
  EXPECT_TRUE(Validate(c).ok());
}

TEST(Config, OnlineTuningKeysAndDefaults) {
  BenchConfig c;
  ASSERT_TRUE(ApplySetting(&c, "policy", "AUTO").ok());
  EXPECT_TRUE(IsAutoPolicy(c));
  EXPECT_TRUE(Validate(c).ok());
  // Defaults: off in phased mode, 1 s / 4 queues online.
  EXPECT_EQ(EffectiveHalfLifeS(c), 0.0);
  EXPECT_EQ(EffectiveSplitMaxK(c), 1);
  ASSERT_TRUE(ApplySetting(&c, "mode", "online").ok());
  EXPECT_EQ(EffectiveHalfLifeS(c), 1.0);
  EXPECT_EQ(EffectiveSplitMaxK(c), 4);
  ASSERT_TRUE(ApplySetting(&c, "history_half_life_s", "0").ok());
  ASSERT_TRUE(ApplySetting(&c, "split_max_k", "1").ok());
  EXPECT_EQ(EffectiveHalfLifeS(c), 0.0);
  EXPECT_EQ(EffectiveSplitMaxK(c), 1);
  EXPECT_FALSE(ApplySetting(&c, "split_max_k", "many").ok());
  EXPECT_TRUE(c.rebalance);
  ASSERT_TRUE(ApplySetting(&c, "rebalance", "off").ok());
  EXPECT_FALSE(c.rebalance);
}

TEST(Config, BooleanKeysTakeOnOffAndNameTheKeyOnABadValue) {
  BenchConfig c;
  EXPECT_FALSE(c.pg_seqscan);
  EXPECT_TRUE(ApplySetting(&c, "pg_seqscan", "on").ok());
  EXPECT_TRUE(c.pg_seqscan);
  EXPECT_TRUE(ApplySetting(&c, "stealing", "No").ok());
  EXPECT_FALSE(c.stealing);
  EXPECT_TRUE(ApplySetting(&c, "ref_multiplicity", "false").ok());
  EXPECT_FALSE(c.ref_multiplicity);
  absl::Status bad = ApplySetting(&c, "pg_seqscan", "maybe");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.message()).find("pg_seqscan"), std::string::npos) << bad;
  EXPECT_TRUE(c.pg_seqscan);  // unchanged by the bad value
}

}  // namespace
}  // namespace bench
}  // namespace corral
