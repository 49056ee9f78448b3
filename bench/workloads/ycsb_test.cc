#include "bench/workloads/ycsb.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "bench/workloads/workload_testing.h"
#include "engine/engine.h"
#include "gtest/gtest.h"

namespace corral {
namespace workloads {
namespace {

YcsbParams SmallParams() {
  YcsbParams p;
  p.records = 2000;
  p.read_fraction = 0.5;
  p.theta = 0.9;
  p.field_size = 20;
  return p;
}

class YcsbProtocolTest : public ::testing::TestWithParam<std::string> {};

TEST_P(YcsbProtocolTest, CounterSumEqualsCommittedReadModifyWrites) {
  auto db = NewDb(GetParam());
  YcsbWorkload w(SmallParams());
  ASSERT_TRUE(w.Load(db.get()).ok());
  RunOptions opt;
  opt.threads = 4;
  opt.seconds = 0.3;
  RunStats s = RunConcurrently(w, db.get(), opt);
  EXPECT_EQ(s.failed, 0u) << s.first_failure;
  EXPECT_EQ(s.gave_up, 0u);
  EXPECT_GT(s.commits, 0u);
  absl::Status st = w.Check(*db);
  EXPECT_TRUE(st.ok()) << st;
  std::cout << GetParam() << ": " << s.commits << " commits, " << s.conflicts << " conflicts\n";
}

INSTANTIATE_TEST_SUITE_P(AllProtocols, YcsbProtocolTest,
                         ::testing::ValuesIn(TestProtocols()),
                         ProtocolParamName);

// Orthrus's microbenchmark: ten read-modify-writes, two from the hot set.
TEST(YcsbTest, HotSetMixDrawsTwoHotKeysAndEightColdOnes) {
  YcsbParams p = SmallParams();
  p.hot_records = 10;
  YcsbWorkload w(p);
  auto db = NewDb("occ");
  ASSERT_TRUE(w.Load(db.get()).ok());
  Rng rng(3);
  for (int i = 0; i < 200; ++i) {
    auto t = w.Next(rng);
    auto* y = static_cast<YcsbTxn*>(t.get());
    ASSERT_EQ(y->ops.size(), 10u);
    int hot = 0;
    for (const YcsbOp& op : y->ops) {
      EXPECT_TRUE(op.rmw);
      ASSERT_GE(op.key, 0);
      ASSERT_LT(op.key, p.records);
      hot += op.key < p.hot_records;
    }
    EXPECT_EQ(hot, 2);
  }
  p.hot_records = 1;  // two hot operations cannot draw distinct keys from one
  YcsbWorkload bad(p);
  auto db2 = NewDb("occ");
  EXPECT_FALSE(bad.Load(db2.get()).ok());
}

TEST(YcsbTest, UncountedIncrementIsDetected) {
  auto db = NewDb("occ");
  YcsbWorkload w(SmallParams());
  ASSERT_TRUE(w.Load(db.get()).ok());
  ASSERT_TRUE(w.Check(*db).ok());
  auto ex = db->NewExecutor(0, {}).value();
  engine::FunctionTxn t([&](engine::Tx& tx) {
    engine::Row r;
    ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(w.tables().usertable, 5, &r));
    r.AddInt(static_cast<int>(r.schema().num_columns()) - 1, 1);
    return absl::OkStatus();
  });
  ASSERT_EQ(ex->Execute(t).outcome, scheduler::Outcome::kCommitted);
  absl::Status st = w.Check(*db);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("sum(counter)"), absl::string_view::npos) << st;
}

TEST(YcsbTest, ZipfSkewReadRatioAndDistinctKeys) {
  YcsbParams p;
  p.records = 10000;
  p.theta = 0.9;
  p.read_fraction = 0.8;
  YcsbWorkload w(p);
  Rng rng(4);
  int ops = 0, reads = 0, key0 = 0, low_range = 0;
  for (int i = 0; i < 10000; ++i) {
    auto g = w.Next(rng);
    auto* t = static_cast<YcsbTxn*>(g.get());
    ASSERT_EQ(t->ops.size(), 10u);
    ASSERT_EQ(t->partition_key, static_cast<uint64_t>(w.PartitionOf(t->ops[0].key)));
    std::vector<int64_t> keys;
    for (const YcsbOp& op : t->ops) {
      ASSERT_GE(op.key, 0);
      ASSERT_LT(op.key, p.records);
      keys.push_back(op.key);
      ++ops;
      reads += !op.rmw;
      key0 += op.key == 0;
      low_range += op.key < 100;
    }
    std::sort(keys.begin(), keys.end());
    ASSERT_EQ(std::unique(keys.begin(), keys.end()), keys.end());
  }
  EXPECT_NEAR(reads / double(ops), 0.8, 0.01);
  // Zipf(0.9) over 10,000 keys: the top 1% of keys gets far more than 1%.
  EXPECT_GT(low_range / double(ops), 0.3);
  EXPECT_GT(key0, 0);

  // theta 0 is uniform; scrambling spreads the hot keys.
  Zipf u(1000, 0);
  int low = 0;
  for (int i = 0; i < 20000; ++i) low += u.Draw(rng) < 100;
  EXPECT_NEAR(low / 20000.0, 0.1, 0.015);
  p.scrambled = true;
  YcsbWorkload s(p);
  low = 0;
  for (int i = 0; i < 20000; ++i) low += s.RandomKey(rng) < 100;
  EXPECT_LT(low / 20000.0, 0.2);
}

TEST(YcsbTest, PhaseHotOffsetMovesTheZipfHead) {
  YcsbParams p;
  p.records = 10000;
  YcsbWorkload w(p);
  SkewPhase head, moved;
  head.zipf_theta = moved.zipf_theta = 0.99;
  moved.hot_offset = 9990;  // wraps: keys 9990..9999, then 0..
  w.SetPhaseSchedule({head, moved}, nullptr);
  Rng rng(6);
  auto share = [&](int64_t lo, int64_t hi) {
    int n = 0;
    for (int i = 0; i < 20000; ++i) {
      const int64_t k = w.RandomKey(rng);
      EXPECT_GE(k, 0);
      EXPECT_LT(k, p.records);
      n += k >= lo && k < hi;
    }
    return n / 20000.0;
  };
  w.SetPhase(0);
  EXPECT_GT(share(0, 10), 0.2);
  w.SetPhase(1);
  EXPECT_GT(share(9990, 10000), 0.2);
  EXPECT_LT(share(10, 20), 0.05);
}

TEST(YcsbTest, SqlFormsAgree) {
  auto schema = LoadPolicySchema("bench/workloads/ycsb.sql");
  ASSERT_TRUE(schema.ok()) << schema.status();
  RefExtractor ex(*schema);
  YcsbWorkload w(SmallParams());
  Rng rng(8);
  for (int i = 0; i < 100; ++i) {
    auto g = w.Next(rng);
    std::vector<SqlStatement> sql;
    g->AppendSql(&sql);
    auto* t = static_cast<YcsbTxn*>(g.get());
    RefVec a, b;
    std::vector<std::string> texts;
    ASSERT_TRUE(
        ExtractRefs(ex, sql, {RefNaming::kLiteral, RefGrouping::kSingle}, false, &a, &texts).ok());
    ASSERT_TRUE(ExtractRefs(ex, sql, {RefNaming::kLiteral, RefGrouping::kSingle}, true, &b,
                            nullptr)
                    .ok());
    EXPECT_EQ(a, b);
    const std::string want = "ycsb_key=" + std::to_string(t->ops[0].key);
    EXPECT_NE(std::find(texts.begin(), texts.end(), want), texts.end())
        << absl::StrJoin(texts, " | ");
  }
}

}  // namespace
}  // namespace workloads
}  // namespace corral
