#include "bench/runner/rounds.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "gtest/gtest.h"

namespace corral {
namespace bench {
namespace {

TEST(RoundOrder, EveryRoundCoversAllCellsOnce) {
  for (int round = 1; round <= 20; ++round) {
    std::vector<int> order = RoundOrder(7, round, 42);
    ASSERT_EQ(order.size(), 7u);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < 7; ++i) EXPECT_EQ(sorted[i], i) << "round " << round;
  }
}

TEST(RoundOrder, ReproducibleBySeedAndShuffledPerRound) {
  // Same (cells, round, seed): same order.
  EXPECT_EQ(RoundOrder(6, 3, 1), RoundOrder(6, 3, 1));
  // Across 20 rounds the orders differ (6! = 720 orders: 20 draws all equal
  // would be a broken shuffle), and not every round is the identity.
  std::set<std::vector<int>> seen;
  int identity = 0;
  std::vector<int> id = {0, 1, 2, 3, 4, 5};
  for (int round = 1; round <= 20; ++round) {
    seen.insert(RoundOrder(6, round, 1));
    identity += RoundOrder(6, round, 1) == id;
  }
  EXPECT_GE(seen.size(), 10u);
  EXPECT_LT(identity, 3);
  // Another seed gives other orders.
  int same = 0;
  for (int round = 1; round <= 20; ++round) same += RoundOrder(6, round, 1) == RoundOrder(6, round, 2);
  EXPECT_LT(same, 5);
  // Every cell leads some round (position 0 is not stuck).
  std::set<int> first;
  for (int round = 1; round <= 60; ++round) first.insert(RoundOrder(6, round, 9)[0]);
  EXPECT_EQ(first.size(), 6u);
  EXPECT_TRUE(RoundOrder(0, 1, 1).empty());
  EXPECT_EQ(RoundOrder(1, 1, 1), std::vector<int>{0});
}

TEST(PairedLogRatioCi, HandComputedThreeRounds) {
  // Learned tps 1200, 1100, 1320 against the baseline's 1000, 1000, 1100 in
  // the same rounds: ratios 1.2, 1.1, 1.2.
  //   y = ln(ratio) = 0.1823216, 0.0953102, 0.1823216
  //   mean m = 0.1533178
  //   sd s = sqrt(((0.0290038)^2 + (-0.0580076)^2 + (0.0290038)^2) / 2) = 0.0502360
  //   h = t(0.975, 2) * s / sqrt(3) = 4.303 * 0.0290038 = 0.1248033
  //   estimate = exp(m) = 1.165695 (= (1.2 * 1.1 * 1.2)^(1/3))
  //   interval [exp(m - h), exp(m + h)] = [1.028925, 1.320646]
  RatioCi ci = PairedLogRatioCi({1200, 1100, 1320}, {1000, 1000, 1100});
  EXPECT_EQ(ci.n, 3);
  EXPECT_NEAR(ci.log_mean, 0.1533178, 1e-6);
  EXPECT_NEAR(ci.log_half_width, 0.1248033, 1e-6);
  EXPECT_NEAR(ci.estimate, 1.165695, 1e-5);
  EXPECT_NEAR(ci.lo, 1.028925, 1e-5);
  EXPECT_NEAR(ci.hi, 1.320646, 1e-5);
  EXPECT_FALSE(ci.includes_one());
  // +-5% target: exp(h) - 1 = 0.133 > 0.05, another round is needed.
  EXPECT_FALSE(WithinTarget(ci, 0.05));
  EXPECT_TRUE(WithinTarget(ci, 0.14));
  EXPECT_EQ(VerdictLine("tps", ci, "vs original"), "tps x1.17 [1.03, 1.32] vs original (3 rounds)");
}

TEST(PairedLogRatioCi, SkipsMissingRoundsAndSaysNoDifference) {
  // Round 2 has no clean baseline run (0): left out of the pairs.
  RatioCi ci = PairedLogRatioCi({1000, 900, 1050, 980}, {1010, 0, 1000, 1000});
  EXPECT_EQ(ci.n, 3);
  EXPECT_TRUE(ci.includes_one());
  const std::string line = VerdictLine("tps", ci, "vs original");
  EXPECT_EQ(line.rfind("tps: no measurable difference vs original (x1.01, 95% interval [", 0), 0u) << line;
  EXPECT_NE(line.find("includes 1, 3 rounds)"), std::string::npos) << line;
  // One pair: an estimate, no interval, never "within target".
  RatioCi one = PairedLogRatioCi({1200}, {1000});
  EXPECT_EQ(one.n, 1);
  EXPECT_FALSE(one.has_interval());
  EXPECT_FALSE(WithinTarget(one, 0.05));
  EXPECT_EQ(VerdictLine("tps", one, "vs original"),
            "tps vs original: cannot tell, 1 paired round gives no interval (that round: x1.20)");
  EXPECT_EQ(VerdictLine("tps", PairedLogRatioCi({}, {}), "vs original"), "tps vs original: no paired rounds");
}

TEST(PairedLogRatioCi, TightRatiosMeetTheTarget) {
  // Ratios 1.20, 1.21, 1.19, 1.20: h = 3.182 * sd(ln) / 2, exp(h) - 1 = 0.0109.
  RatioCi ci = PairedLogRatioCi({120, 121, 119, 120}, {100, 100, 100, 100});
  EXPECT_NEAR(std::exp(ci.log_half_width) - 1, 0.0109, 1e-3);
  EXPECT_TRUE(WithinTarget(ci, 0.05));
}

TEST(SmoothedAbortRate, FiniteWithNoAborts) {
  EXPECT_DOUBLE_EQ(SmoothedAbortRate(0, 999), 0.5 / 1000);
  EXPECT_DOUBLE_EQ(SmoothedAbortRate(99, 900), 99.5 / 1000);
  // Small abort-rate ratios print with three significant digits.
  RatioCi ci = PairedLogRatioCi({0.002, 0.0021}, {0.2, 0.21});
  EXPECT_EQ(VerdictLine("abort rate", ci, "vs original").rfind("abort rate x0.01 [", 0), 0u)
      << VerdictLine("abort rate", ci, "vs original");
}

}  // namespace
}  // namespace bench
}  // namespace corral
