// WorkerPool: N worker threads driving N injected Executors from RunQueues.
//
// Worker i owns run queue i and executors[i]. Its loop: pop (own queue, else
// steal when stealing is on, else wait), run attempts until the transaction
// ends. A conflict abort (Outcome::kConflictAbort) is retried at once on the
// same worker (optionally after a randomized exponential backoff), up to
// max_attempts (0 = no limit). EVERY attempt reaches the History: a commit
// adds a commit to each of the transaction's references, a conflict abort an
// abort. User aborts and failures end the transaction without a retry and do
// not touch the History (they say nothing about conflicts); they are counted
// apart. When a transaction ends the completion hook (if any) receives it.
//
// Per-worker statistics: transactions, attempts, commits, conflict aborts by
// AbortCause, user aborts, failures, steals, response-time histogram (from
// Txn::decision_start_ns to commit, retries included; commits only) and
// per-TxnTypeId counts. Stats() returns merged snapshots. Load(w) is a
// lighter read for online controllers (hot-spot splitting, --policy=auto):
// per-queue sums of queue wait (enqueue to start), execution time, attempts,
// conflict aborts and commits, as relaxed atomics.
//
//   WorkerPool pool(queues.get(), &history, executors, {}, hook, Clock::Real());
//   pool.Start();
//   ... queues->Push(...) ...
//   pool.Stop();   // drains the queues, then joins
//   WorkerStats s = pool.TotalStats();
//
// Thread safety: Start/Stop from one controlling thread; Stats() from any
// thread at any time. The hook runs on worker threads, concurrently.
#ifndef CORRAL_SCHEDULER_WORKER_POOL_H_
#define CORRAL_SCHEDULER_WORKER_POOL_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "common/tsan_visible_mutex.h"
#include "common/clock.h"
#include "history/history.h"
#include "scheduler/histogram.h"
#include "scheduler/run_queues.h"
#include "scheduler/txn.h"

namespace corral {
namespace scheduler {

struct TypeCounts {
  uint64_t commits = 0;
  uint64_t conflict_aborts = 0;
  uint64_t user_aborts = 0;
  uint64_t failures = 0;
};

struct WorkerStats {
  uint64_t txns = 0;       // transactions finished (any final outcome)
  uint64_t attempts = 0;   // executor calls
  uint64_t commits = 0;
  uint64_t conflict_aborts = 0;  // attempts that ended in a conflict abort
  std::array<uint64_t, static_cast<size_t>(AbortCause::kCount)> aborts_by_cause{};
  uint64_t user_aborts = 0;
  uint64_t failures = 0;
  uint64_t gave_up = 0;    // transactions that hit max_attempts
  uint64_t steals = 0;
  LatencyHistogram latency;  // response time of committed transactions, ns
  absl::flat_hash_map<int32_t, TypeCounts> per_type;

  void Merge(const WorkerStats& o);
  // Conflict aborts / (conflict aborts + commits), the paper's abort rate.
  double AbortRate() const;
};

// Cumulative per-queue load counters (WorkerPool::Load).
struct QueueLoad {
  uint64_t started = 0;          // transactions taken off the queue
  uint64_t wait_ns = 0;          // sum of their queue waits
  uint64_t exec_ns = 0;          // sum of their execution times (all attempts)
  uint64_t attempts = 0;
  uint64_t conflict_aborts = 0;
  uint64_t commits = 0;
};

// Called once per finished transaction with its final result (a commit, a
// user abort, a failure, or the last conflict abort when it gave up).
using CompletionHook =
    std::function<void(std::unique_ptr<Txn> txn, const ExecResult& result, int worker)>;

// One conflict abort of `txn` into the History: every reference of
// txn.learned_refs() counts it, but as its lead decided (Txn::placed_by,
// ScheduleOptions::lead_attributed_aborts): a lead that placed it on its own
// queue does not (unless `spare_lead` is false: the proxy, whose queues do
// not serialize what stealing and several backends may run at once), a
// split lead counts it alone. `texts` (may be null) names new references.
void RecordConflictAbort(history::History& history, const Txn& txn,
                         const history::History::TextProvider* texts = nullptr, bool spare_lead = true);

class WorkerPool {
 public:
  struct Options {
    int max_attempts = 0;           // 0 = retry conflict aborts forever
    bool backoff = false;           // randomized exponential backoff on retry
    int64_t backoff_base_ns = 1000;
    int64_t backoff_max_ns = 1000000;
  };

  // `queues` and `history` (may be null: no learning) must outlive the pool;
  // executors.size() must equal queues->num_queues() (checked by Start).
  WorkerPool(RunQueues* queues, history::History* history, std::vector<Executor*> executors,
             const Options& options, CompletionHook hook, const Clock* clock);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  absl::Status Start();
  // Shuts the queues down, lets the workers drain them, joins. Idempotent.
  void Stop();

  int num_workers() const { return static_cast<int>(executors_.size()); }
  WorkerStats Stats(int worker) const;
  WorkerStats TotalStats() const;
  QueueLoad Load(int worker) const;

 private:
  struct alignas(64) Worker {
    mutable TsanVisibleMutex mu;
    WorkerStats stats ABSL_GUARDED_BY(mu);
    uint64_t rng = 0;  // backoff jitter, worker thread only
    // Load(): written by the worker thread only, read by anyone.
    std::atomic<uint64_t> started{0}, wait_ns{0}, exec_ns{0}, attempts{0}, aborts{0}, commits{0};
  };

  void Run(int w);
  void RunTxn(int w, std::unique_ptr<Txn> txn, bool stolen);

  RunQueues* const queues_;
  history::History* const history_;
  const std::vector<Executor*> executors_;
  const Options options_;
  const CompletionHook hook_;
  const Clock* const clock_;
  std::unique_ptr<Worker[]> workers_;
  std::vector<std::thread> threads_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace scheduler
}  // namespace corral

#endif  // CORRAL_SCHEDULER_WORKER_POOL_H_
