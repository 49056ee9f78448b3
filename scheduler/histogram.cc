#include "scheduler/histogram.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace corral {
namespace scheduler {

int LatencyHistogram::BucketOf(uint64_t v) {
  if (v < static_cast<uint64_t>(kSub)) return static_cast<int>(v);
  const int e = 63 - __builtin_clzll(v);  // >= kSubBits
  const int m = static_cast<int>((v >> (e - kSubBits)) & (kSub - 1));
  return (e - kSubBits + 1) * kSub + m;
}

uint64_t LatencyHistogram::BucketLow(int b) {
  if (b < kSub) return static_cast<uint64_t>(b);
  const int e = b / kSub + kSubBits - 1;
  const uint64_t m = static_cast<uint64_t>(b % kSub);
  return (static_cast<uint64_t>(kSub) + m) << (e - kSubBits);
}

uint64_t LatencyHistogram::BucketWidth(int b) {
  if (b < kSub) return 1;
  return uint64_t{1} << (b / kSub - 1);
}

void LatencyHistogram::Record(int64_t v) {
  if (v < 0) v = 0;
  ++buckets_[BucketOf(static_cast<uint64_t>(v))];
  ++count_;
  sum_ += v;
  min_ = std::min(min_, v);
  max_ = std::max(max_, v);
}

void LatencyHistogram::Merge(const LatencyHistogram& o) {
  for (int i = 0; i < kBuckets; ++i) buckets_[i] += o.buckets_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
}

int64_t LatencyHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  p = std::min(100.0, std::max(0.0, p));
  // Rank of the wanted value, 1-based.
  uint64_t rank = static_cast<uint64_t>(p / 100.0 * static_cast<double>(count_) + 0.5);
  rank = std::max<uint64_t>(1, std::min(rank, count_));
  if (rank == count_) return max_;  // exact
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[b];
    if (seen >= rank) {
      const int64_t mid = static_cast<int64_t>(BucketLow(b) + (BucketWidth(b) - 1) / 2);
      return std::min(max_, std::max(min(), mid));
    }
  }
  return max_;
}

std::string LatencyHistogram::SummaryMicros() const {
  return absl::StrFormat("n=%d mean=%.1fus p50=%.1fus p95=%.1fus p99=%.1fus max=%.1fus", count_,
                         mean() / 1e3, Percentile(50) / 1e3, Percentile(95) / 1e3,
                         Percentile(99) / 1e3, max() / 1e3);
}

}  // namespace scheduler
}  // namespace corral
