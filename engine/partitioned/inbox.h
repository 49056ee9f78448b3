// A thread's message inbox with delayed delivery (internal to the
// partitioned engine): messages pushed with PushNow are visible at once,
// messages pushed with PushDelayed become visible at their delivery time
// (the modeled network stall). Delayed messages are delivered in push order
// (their times are made monotone), so a channel is FIFO.
//
//   Inbox<Msg> in(StallMode::kSleep);
//   in.PushDelayed(m, MonoNanos() + 20000);
//   std::vector<Msg> got; in.Pop(&got, /*block=*/true, /*wake_at=*/0);
//
// Thread-safety: any number of producers, one consumer.
#ifndef CORRAL_ENGINE_PARTITIONED_INBOX_H_
#define CORRAL_ENGINE_PARTITIONED_INBOX_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/clock.h"
#include "engine/partitioned/partitioned.h"
#include "engine/partitioned/sync.h"

namespace corral {
namespace partitioned {

template <typename M>
class Inbox {
 public:
  explicit Inbox(StallMode mode) : mode_(mode) {}

  void PushNow(M m) {
    {
      MuLock l(&mu_);
      now_.push_back(std::move(m));
    }
    cv_.notify_one();
  }
  void PushDelayed(M m, int64_t at) {
    {
      MuLock l(&mu_);
      at = std::max(at, last_at_);
      last_at_ = at;
      delayed_.emplace_back(at, std::move(m));
    }
    cv_.notify_one();
  }
  void Stop() {
    {
      MuLock l(&mu_);
      stop_ = true;
    }
    cv_.notify_all();
  }
  bool stopped() {
    MuLock l(&mu_);
    return stop_;
  }

  // Appends the visible messages to `out`. With block, waits until one is
  // visible, `wake_at` (if > 0) passes, or Stop.
  void Pop(std::vector<M>* out, bool block, int64_t wake_at)
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    mu_.lock();
    while (true) {
      const int64_t now = MonoNanos();
      while (!now_.empty()) {
        out->push_back(std::move(now_.front()));
        now_.pop_front();
      }
      while (!delayed_.empty() && delayed_.front().first <= now) {
        out->push_back(std::move(delayed_.front().second));
        delayed_.pop_front();
      }
      if (!out->empty() || !block || stop_) break;
      int64_t deadline = wake_at > 0 ? wake_at
                                     : std::numeric_limits<int64_t>::max();
      if (!delayed_.empty()) deadline = std::min(deadline, delayed_.front().first);
      if (deadline <= now) break;
      const size_t nd = delayed_.size();
      auto changed = [this, nd]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return !now_.empty() || stop_ || delayed_.size() != nd;
      };
      if (mode_ == StallMode::kSpin &&
          deadline - now < 2000000 /* spin only short waits */) {
        while (!changed() && MonoNanos() < deadline) {
          mu_.unlock();
          std::this_thread::yield();
          mu_.lock();
        }
      } else if (deadline == std::numeric_limits<int64_t>::max()) {
        cv_.wait(mu_, changed);
      } else {
        cv_.wait_for(mu_, std::chrono::nanoseconds(deadline - MonoNanos()),
                     changed);
      }
      if (wake_at > 0 && MonoNanos() >= wake_at) {
        // Deliver what is ready, then let the caller run its timers.
        block = false;
      }
    }
    mu_.unlock();
  }

 private:
  const StallMode mode_;
  Mu mu_;
  CondVar cv_;
  std::deque<M> now_ ABSL_GUARDED_BY(mu_);
  std::deque<std::pair<int64_t, M>> delayed_ ABSL_GUARDED_BY(mu_);
  int64_t last_at_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace partitioned
}  // namespace corral

#endif  // CORRAL_ENGINE_PARTITIONED_INBOX_H_
