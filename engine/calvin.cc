// Calvin ("calvin"): the sequencer and the deterministic lock manager
// behind the planned protocols' guard (planned_internal.h, planned.cc).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/hash.h"
#include "engine/planned_internal.h"

namespace corral {
namespace engine {
namespace planned_internal {
namespace {

// ---------------------------------------------------------------- calvin

// Sequencer + deterministic lock manager. Workers submit lock requests; the
// sequencer seals them into batches; the lock-manager thread, alone, owns
// the lock table (a FifoLockTable) and appends each batch's requests, in
// batch order. A request holding every lock is released to its worker. No
// request ever waits for a later one, so there are no deadlocks and no
// concurrency-control aborts.
class CalvinService final : public LockService {
 public:
  CalvinService(int batch_txns, int64_t batch_ns) {
    lock_manager_ = std::thread([this] { LockManagerLoop(); });
    sequencer_ = std::make_unique<BatchSequencer>(
        batch_txns, batch_ns, [this](std::vector<LockRequest*> batch) {
          {
            std::lock_guard<std::mutex> l(mu_);
            batches_.push_back(std::move(batch));
          }
          lock_manager_cv_.notify_one();
        });
  }
  ~CalvinService() override {
    sequencer_.reset();  // no more batches
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    lock_manager_cv_.notify_all();
    lock_manager_.join();
    for (LockRequest* r : releases_) delete r;
  }

  void Lock(LockRequest* req) override {
    sequencer_->Submit(req);
    AwaitGrant(req);
  }

  void Unlock(LockRequest* req) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      releases_.push_back(req);
    }
    lock_manager_cv_.notify_one();
  }

 private:
  void LockManagerLoop() {
    std::vector<std::vector<LockRequest*>> batches;
    std::vector<LockRequest*> releases;
    std::vector<LockRequest*> ready;
    for (;;) {
      {
        std::unique_lock<std::mutex> l(mu_);
        lock_manager_cv_.wait(
            l, [this] { return stop_ || !batches_.empty() || !releases_.empty(); });
        if (stop_) return;
        batches.swap(batches_);
        releases.swap(releases_);
      }
      for (LockRequest* r : releases) {
        table_.Release(r, 0, r->items.size(), &ready);
        delete r;
      }
      releases.clear();
      for (auto& b : batches) {
        for (LockRequest* r : b) table_.Enqueue(r, 0, r->items.size(), &ready);
      }
      batches.clear();
      for (LockRequest* r : ready) Grant(r);
      ready.clear();
    }
  }

  std::mutex mu_;
  std::condition_variable lock_manager_cv_;  // batches_, releases_ or stop_ changed
  bool stop_ = false;                                   // guarded by mu_
  std::vector<std::vector<LockRequest*>> batches_;      // guarded by mu_
  std::vector<LockRequest*> releases_;                  // guarded by mu_
  FifoLockTable table_;  // lock-manager thread only
  std::thread lock_manager_;
  std::unique_ptr<BatchSequencer> sequencer_;
};

}  // namespace

std::unique_ptr<LockService> NewCalvinService(int batch_txns, int64_t batch_ns) {
  return std::make_unique<CalvinService>(batch_txns, batch_ns);
}

}  // namespace planned_internal
}  // namespace engine
}  // namespace corral
