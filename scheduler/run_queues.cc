#include "scheduler/run_queues.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/hash.h"

namespace corral {
namespace scheduler {

absl::StatusOr<std::unique_ptr<RunQueues>> RunQueues::Create(const Options& options) {
  if (options.num_queues < 1 || options.num_queues > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_queues must be in [1, 4096], got ", options.num_queues));
  }
  return std::unique_ptr<RunQueues>(new RunQueues(options));
}

RunQueues::RunQueues(const Options& options)
    : num_queues_(options.num_queues),
      capacity_(options.capacity),
      stealing_(options.stealing),
      queues_(new Queue[options.num_queues]) {
  for (int i = 0; i < num_queues_; ++i) queues_[i].rng = Mix64(options.seed + 0x1234567ULL * (i + 1));
}

absl::Status RunQueues::Push(QueueId q, std::unique_ptr<Txn> txn) {
  return TryPush(q, &txn);
}

absl::Status RunQueues::TryPush(QueueId q, std::unique_ptr<Txn>* txn) {
  if (q.value() < 0 || q.value() >= num_queues_) {
    return absl::InvalidArgumentError(absl::StrCat("no run queue ", q.value()));
  }
  Queue& queue = queues_[q.value()];
  {
    TsanVisibleMutexLock l(&queue.mu);
    if (closed_.load(std::memory_order_acquire)) {
      return absl::FailedPreconditionError("run queues are shut down");
    }
    if (capacity_ > 0 && queue.fifo.size() >= capacity_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("run queue ", q.value(), " is full (", capacity_, ")"));
    }
    queue.fifo.push_back(std::move(*txn));
    queue.size.fetch_add(1);  // seq_cst: pairs with sleepers_ in Pop
    total_.fetch_add(1);
  }
  if (sleepers_.load() > 0 && !WakeWorker(q.value()) && stealing()) {
    // q's worker is busy: one sleeping worker may steal it.
    const uint32_t start = wake_cursor_.fetch_add(1, std::memory_order_relaxed);
    for (int i = 0; i < num_queues_; ++i) {
      if (WakeWorker(static_cast<int>((start + i) % num_queues_))) break;
    }
  }
  return absl::OkStatus();
}

bool RunQueues::WakeWorker(int q) {
  Queue& queue = queues_[q];
  if (!queue.sleeping.load()) return false;  // seq_cst: pairs with Pop
  TsanVisibleMutexLock l(&queue.sleep_mu);
  queue.cv.Signal();
  return true;
}

std::unique_ptr<Txn> RunQueues::PopFrom(Queue& q) {
  TsanVisibleMutexLock l(&q.mu);
  if (q.fifo.empty()) return nullptr;
  std::unique_ptr<Txn> t = std::move(q.fifo.front());
  q.fifo.pop_front();
  q.size.fetch_sub(1);
  total_.fetch_sub(1);
  return t;
}

std::unique_ptr<Txn> RunQueues::TryPop(int worker, bool* stolen) {
  *stolen = false;
  Queue& own = queues_[worker];
  if (own.size.load(std::memory_order_relaxed) > 0) {
    if (auto t = PopFrom(own)) return t;
  }
  if (!stealing() || num_queues_ == 1 || total_.load(std::memory_order_relaxed) == 0) {
    return nullptr;
  }
  own.rng = Mix64(own.rng + 0x9e3779b97f4a7c15ULL);
  const int start = static_cast<int>(own.rng % static_cast<uint64_t>(num_queues_));
  for (int i = 0; i < num_queues_; ++i) {
    const int v = (start + i) % num_queues_;
    if (v == worker || queues_[v].size.load(std::memory_order_relaxed) == 0) continue;
    if (auto t = PopFrom(queues_[v])) {
      *stolen = true;
      return t;
    }
  }
  return nullptr;
}

bool RunQueues::Available(int worker) const {
  if (queues_[worker].size.load() > 0) return true;
  return stealing() && total_.load() > 0;
}

std::unique_ptr<Txn> RunQueues::Pop(int worker, bool* stolen) {
  Queue& own = queues_[worker];
  for (;;) {
    if (auto t = TryPop(worker, stolen)) return t;
    TsanVisibleMutexLock l(&own.sleep_mu);
    // seq_cst store, then the sizes are read (Available): a pusher that
    // incremented a size before this store is seen here; one after it sees
    // `sleeping` and signals under sleep_mu, i.e. once this thread waits.
    own.sleeping.store(true);
    sleepers_.fetch_add(1);
    while (!Available(worker)) {
      if (shutdown_.load(std::memory_order_acquire)) break;
      // The timeout is only a safety net; pushes and Shutdown() signal.
      own.cv.WaitWithTimeout(&own.sleep_mu, std::chrono::milliseconds(100));
    }
    own.sleeping.store(false);
    sleepers_.fetch_sub(1);
    if (!Available(worker) && shutdown_.load(std::memory_order_acquire)) return nullptr;
  }
}

void RunQueues::Shutdown() {
  // Close for pushes, then pass every queue lock once: a push in progress
  // has finished (its size is visible) before workers may exit on empty.
  closed_.store(true, std::memory_order_release);
  for (int i = 0; i < num_queues_; ++i) TsanVisibleMutexLock l(&queues_[i].mu);
  shutdown_.store(true, std::memory_order_release);
  for (int i = 0; i < num_queues_; ++i) {
    TsanVisibleMutexLock l(&queues_[i].sleep_mu);
    queues_[i].cv.SignalAll();
  }
}

}  // namespace scheduler
}  // namespace corral
