// Aging: exponential decay of the learned counters (History's aborts and
// commits, State's per-queue counts), so that evidence from a workload phase
// that has ended fades out with a half-life instead of steering transactions
// for ever (issue #16: a hot spot that has moved stops attracting them).
//
// A count c decays by a factor f in (0, 1] to floor(c f) + 1 with probability
// frac(c f) (stochastic rounding: the expected value is exactly c f, and small
// counts still reach 0 instead of sticking at 1 under plain rounding, or
// vanishing after a single pass under floor). The rounding draw is a hash of
// (salt, c): deterministic for a given table and pass, so tests are repeatable.
//
// AgingClock turns elapsed time into factors: Due(now) returns 2^(-dt/H) for
// the time dt since the last pass once at least `period` has passed (and
// claims that pass: concurrent callers get 1), else 1.
//
//   AgingClock ac(/*half_life_ns=*/1'000'000'000, /*period_ns=*/0, clock->NowNanos());
//   double f = ac.Due(clock->NowNanos());     // 1: nothing due
//   if (f < 1) table.Age(f);
//   uint64_t c2 = DecayCount(c, 0.5, salt);   // 1000 -> 500
//
// Thread safety: DecayCount and FactorFor are pure; AgingClock is thread-safe
// (one caller wins each pass).
#ifndef CORRAL_HISTORY_AGING_H_
#define CORRAL_HISTORY_AGING_H_

#include <atomic>
#include <cmath>
#include <cstdint>

#include "common/hash.h"

namespace corral {
namespace history {

// c * f, stochastically rounded (see above). f >= 1 returns c; f <= 0 returns 0.
inline uint64_t DecayCount(uint64_t c, double f, uint64_t salt) {
  if (f >= 1.0 || c == 0) return c;
  if (f <= 0.0) return 0;
  const double x = static_cast<double>(c) * f;
  const double fl = std::floor(x);
  const double frac = x - fl;
  uint64_t out = static_cast<uint64_t>(fl);
  if (frac > 0) {
    const double u = static_cast<double>(Mix64(salt ^ (c * 0x9e3779b97f4a7c15ULL)) >> 11) * 0x1.0p-53;
    if (u < frac) ++out;
  }
  return out < c ? out : c;
}

// The decay factor for `dt_ns` at half-life `half_life_ns` (<= 0: no decay).
inline double FactorFor(int64_t dt_ns, int64_t half_life_ns) {
  if (half_life_ns <= 0 || dt_ns <= 0) return 1.0;
  return std::exp2(-static_cast<double>(dt_ns) / static_cast<double>(half_life_ns));
}

class AgingClock {
 public:
  // half_life_ns <= 0: never due. period_ns <= 0: a quarter of the half-life.
  AgingClock(int64_t half_life_ns, int64_t period_ns, int64_t now_ns)
      : half_life_ns_(half_life_ns),
        period_ns_(period_ns > 0 ? period_ns : half_life_ns / 4),
        last_ns_(now_ns) {}

  bool enabled() const { return half_life_ns_ > 0; }
  int64_t half_life_ns() const { return half_life_ns_; }

  // The factor due at `now_ns` (claims it), or 1.
  double Due(int64_t now_ns) {
    if (half_life_ns_ <= 0) return 1.0;
    int64_t last = last_ns_.load(std::memory_order_relaxed);
    if (now_ns - last < period_ns_) return 1.0;
    if (!last_ns_.compare_exchange_strong(last, now_ns, std::memory_order_acq_rel)) return 1.0;
    return FactorFor(now_ns - last, half_life_ns_);
  }
  // Forgets the time since the last pass (a frozen table does not age).
  void Skip(int64_t now_ns) { last_ns_.store(now_ns, std::memory_order_relaxed); }

 private:
  const int64_t half_life_ns_;
  const int64_t period_ns_;
  std::atomic<int64_t> last_ns_;
};

}  // namespace history
}  // namespace corral

#endif  // CORRAL_HISTORY_AGING_H_
