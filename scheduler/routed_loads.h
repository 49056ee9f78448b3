// RoutedLoads: the per-queue load counters of a routing-only Scheduler,
// which its caller reports into (the proxy: each queue is a server
// connection of the pool; a transaction waits for it, runs on it, ends).
// Hot-spot splitting (Scheduler::Options::split) reads them where, driving
// executors, it reads the WorkerPool's (QueueLoad, worker_pool.h), and
// HotSpots::Route takes Length() as the run-queue length of a split
// reference's queues.
//
//   RoutedLoads* loads = scheduler->routed_loads();  // split on, routing only
//   loads->Enqueued(q);                 // a transaction waits for queue q
//   loads->Dequeued(q);                 // ... it stops waiting there
//   loads->Started(b, wait_ns);         // it starts on queue b (stolen: b != q)
//   loads->Attempt(b, exec_ns, Outcome::kConflictAbort);  // an attempt ended
//   loads->Stopped(b);                  // it left queue b
//
// Thread safety: every method from any thread (relaxed atomics; several
// event loops report into one Scheduler's counters).
#ifndef CORRAL_SCHEDULER_ROUTED_LOADS_H_
#define CORRAL_SCHEDULER_ROUTED_LOADS_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "scheduler/txn.h"
#include "scheduler/worker_pool.h"

namespace corral {
namespace scheduler {

class RoutedLoads {
 public:
  explicit RoutedLoads(int num_queues);
  RoutedLoads(const RoutedLoads&) = delete;
  RoutedLoads& operator=(const RoutedLoads&) = delete;

  int num_queues() const { return n_; }
  // Out-of-range queues are ignored (a caller's pool may be smaller or
  // larger than the queue count it routes over).
  void Enqueued(int q) { Add(q, &Counters::waiting, 1); }
  void Dequeued(int q) { Add(q, &Counters::waiting, -1); }
  // Taken off a queue (or run at once, wait 0) onto queue q: one start.
  void Started(int q, int64_t wait_ns);
  // One attempt on queue q ended after exec_ns with `o` (commits and
  // conflict aborts are counted; every outcome is an attempt).
  void Attempt(int q, int64_t exec_ns, Outcome o);
  // The transaction started on q left it (Started's pair).
  void Stopped(int q) { Add(q, &Counters::running, -1); }

  QueueLoad Load(int q) const;
  // Transactions waiting for q plus those running on it (>= 0).
  int64_t Length(int q) const;

 private:
  struct alignas(64) Counters {
    std::atomic<int64_t> started{0}, wait_ns{0}, exec_ns{0}, attempts{0}, aborts{0}, commits{0};
    std::atomic<int64_t> waiting{0}, running{0};
  };
  bool Valid(int q) const { return q >= 0 && q < n_; }
  void Add(int q, std::atomic<int64_t> Counters::*field, int64_t v) {
    if (Valid(q)) (queues_[q].*field).fetch_add(v, std::memory_order_relaxed);
  }

  const int n_;
  std::unique_ptr<Counters[]> queues_;
};

}  // namespace scheduler
}  // namespace corral

#endif  // CORRAL_SCHEDULER_ROUTED_LOADS_H_
