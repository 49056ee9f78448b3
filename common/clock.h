// Monotonic time in nanoseconds, and the Clock seam used where tests need to
// control time (State's arrival-rate smoothing, timeouts).
//
//   int64_t t0 = corral::MonoNanos();
//   ...
//   double us = (corral::MonoNanos() - t0) / 1e3;
#ifndef CORRAL_COMMON_CLOCK_H_
#define CORRAL_COMMON_CLOCK_H_

#include <cstdint>
#include <ctime>

namespace corral {

inline int64_t MonoNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// Time source. Thread-safe: implementations must allow concurrent NowNanos().
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowNanos() const = 0;
  // The process-wide monotonic clock.
  static const Clock* Real();
};

class RealClock final : public Clock {
 public:
  int64_t NowNanos() const override { return MonoNanos(); }
};

inline const Clock* Clock::Real() {
  static const RealClock kClock;
  return &kClock;
}

}  // namespace corral

#endif  // CORRAL_COMMON_CLOCK_H_
