#include "scheduler/histogram.h"

#include <random>

#include "gtest/gtest.h"

namespace corral {
namespace scheduler {
namespace {

TEST(LatencyHistogramTest, BucketsCoverValuesContiguously) {
  for (uint64_t v : {0ull, 1ull, 31ull, 32ull, 33ull, 63ull, 64ull, 1000ull, 123456789ull,
                     (1ull << 62) + 5, ~0ull}) {
    const int b = LatencyHistogram::BucketOf(v);
    ASSERT_LT(b, LatencyHistogram::kBuckets);
    EXPECT_LE(LatencyHistogram::BucketLow(b), v);
    EXPECT_GE(LatencyHistogram::BucketLow(b) + (LatencyHistogram::BucketWidth(b) - 1), v);
  }
  for (int b = 1; b < LatencyHistogram::kBuckets; ++b) {
    EXPECT_EQ(LatencyHistogram::BucketLow(b - 1) + LatencyHistogram::BucketWidth(b - 1),
              LatencyHistogram::BucketLow(b));
  }
}

TEST(LatencyHistogramTest, PercentilesWithinThreePercent) {
  LatencyHistogram h;
  for (int v = 1; v <= 100000; ++v) h.Record(v);
  EXPECT_EQ(h.count(), 100000u);
  EXPECT_NEAR(h.Percentile(50), 50000, 1500);
  EXPECT_NEAR(h.Percentile(95), 95000, 2900);
  EXPECT_NEAR(h.Percentile(99), 99000, 3000);
  EXPECT_EQ(h.Percentile(100), 100000);
  EXPECT_EQ(h.Percentile(0), 1);
  EXPECT_DOUBLE_EQ(h.mean(), 50000.5);
}

TEST(LatencyHistogramTest, MergeEqualsRecordingEverything) {
  LatencyHistogram a, b, all;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const int64_t v = rng() % 10000000;
    (i % 2 ? a : b).Record(v);
    all.Record(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_EQ(a.min(), all.min());
  for (double p : {50.0, 95.0, 99.0}) EXPECT_EQ(a.Percentile(p), all.Percentile(p));
  LatencyHistogram empty;
  EXPECT_EQ(empty.Percentile(50), 0);
  EXPECT_FALSE(a.SummaryMicros().empty());
}

}  // namespace
}  // namespace scheduler
}  // namespace corral
