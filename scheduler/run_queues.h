// Run queues: one FIFO of transactions per executor, with work stealing.
//
// Worker w pops the oldest transaction of its own queue w; when that is empty
// and stealing is on, it takes the oldest transaction of a random non-empty
// other queue; when nothing is available it blocks until a push or
// Shutdown(). A queue may have a capacity: a push to a full queue is
// rejected at once with ResourceExhausted (open-loop runs count it as a
// dropped arrival; blocking the producer would hide the overload). After
// Shutdown() pushes fail with FailedPrecondition and pops drain what is left
// (a worker without stealing drains its own queue) and then return nullptr.
//
//   auto rq = RunQueues::Create({.num_queues = 4, .stealing = true}).value();
//   rq->Push(QueueId(2), std::move(txn));
//   bool stolen;
//   while (auto t = rq->Pop(/*worker=*/0, &stolen)) run(*t);
//
// Thread safety: thread-safe, with one restriction: Pop/TryPop for a given
// worker index are called by one thread at a time (the worker's own
// steal-victim generator is not shared).
//
// Wake-ups: each worker sleeps on its own condition variable. A push to
// queue q wakes q's worker if it sleeps; otherwise, with stealing on, one
// sleeping worker (which then steals). A push never wakes every worker: on a
// machine with fewer cores than workers a broadcast per push costs more CPU
// than the transactions (measured: a quarter of all samples in futex wake-ups
// and context switches of workers that found nothing to do).
#ifndef CORRAL_SCHEDULER_RUN_QUEUES_H_
#define CORRAL_SCHEDULER_RUN_QUEUES_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/tsan_visible_mutex.h"
#include "common/ids.h"
#include "scheduler/txn.h"

namespace corral {
namespace scheduler {

class RunQueues {
 public:
  struct Options {
    int num_queues = 8;
    bool stealing = true;
    size_t capacity = 0;  // per queue; 0 = unbounded
    uint64_t seed = 1;    // steal-victim choice
  };

  static absl::StatusOr<std::unique_ptr<RunQueues>> Create(const Options& options);
  RunQueues(const RunQueues&) = delete;
  RunQueues& operator=(const RunQueues&) = delete;

  int num_queues() const { return num_queues_; }
  void SetStealing(bool on) { stealing_.store(on, std::memory_order_relaxed); }
  bool stealing() const { return stealing_.load(std::memory_order_relaxed); }

  // Appends to queue q. Sets txn->enqueue_ns is left to the caller.
  absl::Status Push(QueueId q, std::unique_ptr<Txn> txn);
  // Push that leaves `*txn` with the caller when it fails (queue full,
  // shut down, bad queue), so the caller can undo what it did for it.
  absl::Status TryPush(QueueId q, std::unique_ptr<Txn>* txn);
  // Blocks until a transaction is available to `worker` (own queue first,
  // then stealing) or the queues are shut down and nothing is left for it.
  std::unique_ptr<Txn> Pop(int worker, bool* stolen);
  // Non-blocking Pop: nullptr when nothing is available now.
  std::unique_ptr<Txn> TryPop(int worker, bool* stolen);

  void Shutdown();
  bool is_shutdown() const { return closed_.load(std::memory_order_acquire); }

  int64_t Size(QueueId q) const {
    return queues_[q.value()].size.load(std::memory_order_relaxed);
  }
  int64_t TotalSize() const { return total_.load(std::memory_order_relaxed); }

 private:
  struct alignas(64) Queue {
    TsanVisibleMutex mu;
    std::deque<std::unique_ptr<Txn>> fifo ABSL_GUARDED_BY(mu);
    std::atomic<int64_t> size{0};
    uint64_t rng = 0;  // steal victims of this queue's worker (that worker only)
    // This queue's worker, asleep in Pop.
    TsanVisibleMutex sleep_mu;
    TsanVisibleCondVar cv;
    std::atomic<bool> sleeping{false};
  };
  // Wakes the worker of queue q if it sleeps (returns true), else nothing.
  bool WakeWorker(int q);

  explicit RunQueues(const Options& options);
  std::unique_ptr<Txn> PopFrom(Queue& q);
  bool Available(int worker) const;

  const int num_queues_;
  const size_t capacity_;
  std::atomic<bool> stealing_;
  std::unique_ptr<Queue[]> queues_;
  std::atomic<int64_t> total_{0};
  std::atomic<bool> closed_{false};    // pushes refused
  std::atomic<bool> shutdown_{false};  // workers may exit when empty
  std::atomic<int> sleepers_{0};
  std::atomic<uint32_t> wake_cursor_{0};  // where the search for a sleeper starts
};

}  // namespace scheduler
}  // namespace corral

#endif  // CORRAL_SCHEDULER_RUN_QUEUES_H_
