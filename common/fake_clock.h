// A Clock that tests move by hand (common/clock.h's seam).
//
//   FakeClock clock;                 // starts at 1e12 ns
//   State::Create(options, &clock);
//   clock.Advance(1000000000);       // one second later
//
// Thread safety: NowNanos, Advance and Set may be called concurrently.
#ifndef CORRAL_COMMON_FAKE_CLOCK_H_
#define CORRAL_COMMON_FAKE_CLOCK_H_

#include <atomic>
#include <cstdint>

#include "common/clock.h"

namespace corral {

class FakeClock : public Clock {
 public:
  explicit FakeClock(int64_t start_ns = 1000000000000) : now_(start_ns) {}
  int64_t NowNanos() const override { return now_.load(std::memory_order_relaxed); }
  void Advance(int64_t ns) { now_.fetch_add(ns, std::memory_order_relaxed); }
  void Set(int64_t ns) { now_.store(ns, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace corral

#endif  // CORRAL_COMMON_FAKE_CLOCK_H_
