// A log-linear latency histogram: mergeable, fixed size, no allocation after
// construction, percentiles within ~3% (32 linear sub-buckets per power of 2).
//
//   LatencyHistogram h;
//   h.Record(response_ns);
//   other.Merge(h);
//   int64_t p99 = h.Percentile(99.0);  // ns
//
// Thread-compatible: one writer, or external locking (WorkerPool keeps one
// per worker under that worker's stats mutex and merges snapshots).
#ifndef CORRAL_SCHEDULER_HISTOGRAM_H_
#define CORRAL_SCHEDULER_HISTOGRAM_H_

#include <array>
#include <cstdint>
#include <string>

namespace corral {
namespace scheduler {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 5;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kBuckets = (64 - kSubBits + 1) * kSub;

  // Records one value (negative values count as 0).
  void Record(int64_t v);
  void Merge(const LatencyHistogram& other);
  void Clear() { *this = LatencyHistogram(); }

  uint64_t count() const { return count_; }
  int64_t min() const { return count_ ? min_ : 0; }
  int64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }
  // The value below which `p` percent of the recorded values lie (bucket
  // midpoint, clamped to [min, max]); 0 when empty. p in [0, 100].
  int64_t Percentile(double p) const;
  // "n=... mean=... p50=... p95=... p99=... max=..." with values in us.
  std::string SummaryMicros() const;

  static int BucketOf(uint64_t v);
  static uint64_t BucketLow(int b);
  static uint64_t BucketWidth(int b);

 private:
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  int64_t sum_ = 0;
  int64_t min_ = INT64_MAX;
  int64_t max_ = 0;
};

}  // namespace scheduler
}  // namespace corral

#endif  // CORRAL_SCHEDULER_HISTOGRAM_H_
