#include "bench/runner/stats.h"

#include "gtest/gtest.h"

namespace corral {
namespace bench {
namespace {

TEST(MeanCi, ThreeSamples) {
  MeanCi m = ComputeMeanCi({1.0, 2.0, 3.0});
  EXPECT_EQ(m.n, 3);
  EXPECT_DOUBLE_EQ(m.mean, 2.0);
  EXPECT_DOUBLE_EQ(m.stddev, 1.0);
  EXPECT_NEAR(m.half_width, 4.303 / std::sqrt(3.0), 1e-9);  // t(0.975, 2) = 4.303
}

TEST(MeanCi, SingleAndEmpty) {
  EXPECT_EQ(ComputeMeanCi({}).n, 0);
  MeanCi one = ComputeMeanCi({7});
  EXPECT_DOUBLE_EQ(one.mean, 7);
  EXPECT_DOUBLE_EQ(one.half_width, 0);
}

TEST(MeanCi, LargeSampleUsesNormalQuantile) {
  std::vector<double> xs;
  for (int i = 0; i < 200; ++i) xs.push_back(i % 2 ? 1.0 : -1.0);
  MeanCi m = ComputeMeanCi(xs);
  EXPECT_NEAR(m.mean, 0, 1e-12);
  EXPECT_NEAR(m.half_width, 1.960 * m.stddev / std::sqrt(200.0), 1e-12);
  EXPECT_DOUBLE_EQ(StudentT975(10), 2.228);
}

// Jain, Art of Computer Systems Performance Analysis, Example 17.1 (memory x
// cache, MIPS 15, 45, 25, 75): q0 = 40, qA = 20, qB = 10, qAB = 5; A explains
// 76%, B 19%, AB 5%.
TEST(Factorial2k, JainTwoSquared) {
  auto r = Factorial2k({"A", "B"}, {15, 45, 25, 75});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->q0, 40);
  ASSERT_EQ(r->effects.size(), 3u);
  EXPECT_EQ(r->effects[0].name, "A");
  EXPECT_DOUBLE_EQ(r->effects[0].q, 20);
  EXPECT_EQ(r->effects[1].name, "B");
  EXPECT_DOUBLE_EQ(r->effects[1].q, 10);
  EXPECT_EQ(r->effects[2].name, "AB");
  EXPECT_DOUBLE_EQ(r->effects[2].q, 5);
  EXPECT_DOUBLE_EQ(r->sst, 2100);
  EXPECT_NEAR(r->effects[0].share, 1600.0 / 2100, 1e-12);
  EXPECT_NEAR(r->effects[1].share, 400.0 / 2100, 1e-12);
  EXPECT_NEAR(r->effects[2].share, 100.0 / 2100, 1e-12);
}

// Jain Example 17.3 (2^3: memory, cache, processors; 14 22 10 34 46 58 50 86):
// q0 40, qA 10, qB 5, qAB 5, qC 20, qAC 2, qBC 3, qABC 1; shares 18%, 4%, 4%,
// 71%, 1%, 2%, 0%.
TEST(Factorial2k, JainTwoCubed) {
  auto r = Factorial2k({"A", "B", "C"}, {14, 22, 10, 34, 46, 58, 50, 86});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->q0, 40);
  const std::vector<std::pair<std::string, double>> want = {{"A", 10}, {"B", 5},  {"AB", 5}, {"C", 20},
                                                            {"AC", 2}, {"BC", 3}, {"ABC", 1}};
  ASSERT_EQ(r->effects.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r->effects[i].name, want[i].first);
    EXPECT_DOUBLE_EQ(r->effects[i].q, want[i].second) << want[i].first;
  }
  EXPECT_DOUBLE_EQ(r->sst, 4512);
  EXPECT_NEAR(r->effects[0].share, 0.177, 0.001);
  EXPECT_NEAR(r->effects[3].share, 0.709, 0.001);
  double total = 0;
  for (const auto& e : r->effects) total += e.share;
  EXPECT_NEAR(total, 1.0, 1e-12);
}

TEST(Factorial2k, RejectsWrongSizes) {
  EXPECT_FALSE(Factorial2k({"A", "B"}, {1, 2, 3}).ok());
  EXPECT_FALSE(Factorial2k({}, {}).ok());
  auto r = Factorial2k({"Naming", "Grouping"}, {1, 1, 1, 1});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->effects[2].name, "Naming*Grouping");
  EXPECT_DOUBLE_EQ(r->effects[2].share, 0);  // SST = 0
}

}  // namespace
}  // namespace bench
}  // namespace corral
