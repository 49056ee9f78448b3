// A reader-writer latch for the engine's short critical sections (ordered
// index operations, executor registration).
//
// Why not absl::Mutex: Debian's Abseil is built without ThreadSanitizer
// annotations, so TSan cannot see its synchronization and reports false
// races; std::shared_mutex goes through pthread, which TSan intercepts. The
// class carries Abseil's thread-safety attributes so ABSL_GUARDED_BY works.
//
//   RwLatch latch;
//   int x ABSL_GUARDED_BY(latch);
//   { WriteGuard g(&latch); ++x; }
//   { ReadGuard g(&latch); use(x); }
//
// Thread-safety: thread-safe (it is the lock).
#ifndef CORRAL_ENGINE_LATCH_H_
#define CORRAL_ENGINE_LATCH_H_

#include <shared_mutex>

#include "absl/base/thread_annotations.h"

namespace corral {
namespace engine {

class ABSL_LOCKABLE RwLatch {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { m_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { m_.unlock(); }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() { m_.lock_shared(); }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() { m_.unlock_shared(); }

 private:
  std::shared_mutex m_;
};

class ABSL_SCOPED_LOCKABLE WriteGuard {
 public:
  explicit WriteGuard(RwLatch* l) ABSL_EXCLUSIVE_LOCK_FUNCTION(l) : l_(l) { l_->Lock(); }
  ~WriteGuard() ABSL_UNLOCK_FUNCTION() { l_->Unlock(); }
  WriteGuard(const WriteGuard&) = delete;
  WriteGuard& operator=(const WriteGuard&) = delete;

 private:
  RwLatch* const l_;
};

class ABSL_SCOPED_LOCKABLE ReadGuard {
 public:
  explicit ReadGuard(RwLatch* l) ABSL_SHARED_LOCK_FUNCTION(l) : l_(l) { l_->ReaderLock(); }
  ~ReadGuard() ABSL_UNLOCK_FUNCTION() { l_->ReaderUnlock(); }
  ReadGuard(const ReadGuard&) = delete;
  ReadGuard& operator=(const ReadGuard&) = delete;

 private:
  RwLatch* const l_;
};

}  // namespace engine
}  // namespace corral

#endif  // CORRAL_ENGINE_LATCH_H_
