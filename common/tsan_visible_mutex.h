// A mutex and condition variable that ThreadSanitizer can see.
//
// Debian's Abseil is a prebuilt library compiled without -fsanitize=thread:
// absl::Mutex synchronizes through futexes and atomics inside that library,
// which ThreadSanitizer does not observe, so `bazel test --config=tsan`
// reports false races on every field guarded by an absl::Mutex. This thin
// wrapper over std::mutex / std::condition_variable (pthread, intercepted by
// TSan) keeps the absl::Mutex-style API and the thread-safety annotations.
// Use it in code that the TSan pass covers.
//
//   corral::TsanVisibleMutex mu;
//   int n ABSL_GUARDED_BY(mu);
//   { corral::TsanVisibleMutexLock l(&mu); ++n; }
//   cv.WaitWithTimeout(&mu, std::chrono::milliseconds(10));  // mu held
//
// Thread safety: thread-safe (it is the lock).
#ifndef CORRAL_COMMON_TSAN_VISIBLE_MUTEX_H_
#define CORRAL_COMMON_TSAN_VISIBLE_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace corral {

class ABSL_LOCKABLE TsanVisibleMutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mu_.try_lock(); }
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE TsanVisibleMutexLock {
 public:
  explicit TsanVisibleMutexLock(TsanVisibleMutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~TsanVisibleMutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  TsanVisibleMutexLock(const TsanVisibleMutexLock&) = delete;
  TsanVisibleMutexLock& operator=(const TsanVisibleMutexLock&) = delete;

 private:
  TsanVisibleMutex* const mu_;
};

class TsanVisibleCondVar {
 public:
  // `mu` must be held; it is released while waiting and held again on return.
  template <typename Rep, typename Period>
  void WaitWithTimeout(TsanVisibleMutex* mu, std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock<std::mutex> l(mu->native(), std::adopt_lock);
    cv_.wait_for(l, timeout);
    l.release();
  }
  void Wait(TsanVisibleMutex* mu) {
    std::unique_lock<std::mutex> l(mu->native(), std::adopt_lock);
    cv_.wait(l);
    l.release();
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace corral

#endif  // CORRAL_COMMON_TSAN_VISIBLE_MUTEX_H_
