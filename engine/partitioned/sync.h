// Locks for the partitioned engine (internal). Why not absl::Mutex: Debian's
// Abseil is built without ThreadSanitizer annotations, so TSan cannot see its
// synchronization and reports false races (see engine/latch.h); std::mutex
// and std::condition_variable_any go through pthread, which TSan intercepts.
// Mu carries Abseil's thread-safety attributes so ABSL_GUARDED_BY works.
//
//   Mu mu;  int x ABSL_GUARDED_BY(mu);
//   { MuLock l(&mu); ++x; }
//
// Thread-safety: thread-safe (it is the lock).
#ifndef CORRAL_ENGINE_PARTITIONED_SYNC_H_
#define CORRAL_ENGINE_PARTITIONED_SYNC_H_

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace corral {
namespace partitioned {

class ABSL_LOCKABLE Mu {
 public:
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { m_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { m_.unlock(); }

 private:
  std::mutex m_;
};

class ABSL_SCOPED_LOCKABLE MuLock {
 public:
  explicit MuLock(Mu* m) ABSL_EXCLUSIVE_LOCK_FUNCTION(m) : m_(m) { m_->lock(); }
  ~MuLock() ABSL_UNLOCK_FUNCTION() { m_->unlock(); }
  MuLock(const MuLock&) = delete;
  MuLock& operator=(const MuLock&) = delete;

 private:
  Mu* const m_;
};

using CondVar = std::condition_variable_any;

// A one-shot event.
class Event {
 public:
  void Notify() {
    {
      MuLock l(&mu_);
      done_ = true;
    }
    cv_.notify_all();
  }
  void Wait() {
    MuLock l(&mu_);
    cv_.wait(mu_, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return done_; });
  }

 private:
  Mu mu_;
  CondVar cv_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace partitioned
}  // namespace corral

#endif  // CORRAL_ENGINE_PARTITIONED_SYNC_H_
