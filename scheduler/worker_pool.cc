#include "scheduler/worker_pool.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/hash.h"

namespace corral {
namespace scheduler {

void RecordConflictAbort(history::History& history, const Txn& txn, const history::History::TextProvider* texts,
                         bool spare_lead) {
  if (txn.placed_split && txn.placed_by.value() != 0) {
    history.Record(absl::MakeConstSpan(&txn.placed_by, 1), /*committed=*/false);
  } else {
    history.Record(txn.learned_refs(), /*committed=*/false, texts, spare_lead ? txn.placed_by : RefId(0));
  }
}

void WorkerStats::Merge(const WorkerStats& o) {
  txns += o.txns;
  attempts += o.attempts;
  commits += o.commits;
  conflict_aborts += o.conflict_aborts;
  for (size_t i = 0; i < aborts_by_cause.size(); ++i) aborts_by_cause[i] += o.aborts_by_cause[i];
  user_aborts += o.user_aborts;
  failures += o.failures;
  gave_up += o.gave_up;
  steals += o.steals;
  latency.Merge(o.latency);
  for (const auto& kv : o.per_type) {
    TypeCounts& t = per_type[kv.first];
    t.commits += kv.second.commits;
    t.conflict_aborts += kv.second.conflict_aborts;
    t.user_aborts += kv.second.user_aborts;
    t.failures += kv.second.failures;
  }
}

double WorkerStats::AbortRate() const {
  const uint64_t n = conflict_aborts + commits;
  return n == 0 ? 0.0 : static_cast<double>(conflict_aborts) / static_cast<double>(n);
}

WorkerPool::WorkerPool(RunQueues* queues, history::History* history,
                       std::vector<Executor*> executors, const Options& options,
                       CompletionHook hook, const Clock* clock)
    : queues_(queues),
      history_(history),
      executors_(std::move(executors)),
      options_(options),
      hook_(std::move(hook)),
      clock_(clock),
      workers_(new Worker[executors_.size()]) {
  for (size_t i = 0; i < executors_.size(); ++i) workers_[i].rng = Mix64(0xabcdef + i);
}

WorkerPool::~WorkerPool() { Stop(); }

absl::Status WorkerPool::Start() {
  if (started_) return absl::FailedPreconditionError("worker pool already started");
  if (static_cast<int>(executors_.size()) != queues_->num_queues()) {
    return absl::InvalidArgumentError(absl::StrCat("need one executor per run queue: ",
                                                   executors_.size(), " executors, ",
                                                   queues_->num_queues(), " queues"));
  }
  for (Executor* e : executors_) {
    if (e == nullptr) return absl::InvalidArgumentError("null executor");
  }
  started_ = true;
  threads_.reserve(executors_.size());
  for (int w = 0; w < num_workers(); ++w) threads_.emplace_back([this, w] { Run(w); });
  return absl::OkStatus();
}

void WorkerPool::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  queues_->Shutdown();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::Run(int w) {
  bool stolen = false;
  while (std::unique_ptr<Txn> txn = queues_->Pop(w, &stolen)) RunTxn(w, std::move(txn), stolen);
}

void WorkerPool::RunTxn(int w, std::unique_ptr<Txn> txn, bool stolen) {
  Worker& me = workers_[w];
  Executor& exec = *executors_[w];
  const int64_t started = clock_->NowNanos();
  // Counted locally, published once per transaction.
  uint64_t attempts = 0, conflicts = 0;
  std::array<uint64_t, static_cast<size_t>(AbortCause::kCount)> by_cause{};
  ExecResult result;
  bool gave_up = false;
  for (;;) {
    ++txn->attempts;
    ++attempts;
    result = exec.Execute(*txn);
    if (result.outcome == Outcome::kCommitted) {
      if (history_ != nullptr) history_->RecordCommit(txn->learned_refs());
      break;
    }
    if (result.outcome != Outcome::kConflictAbort) break;  // user abort / failure
    ++conflicts;
    const size_t c = static_cast<size_t>(result.cause);
    if (c < by_cause.size()) ++by_cause[c];
    if (history_ != nullptr) RecordConflictAbort(*history_, *txn);
    if (options_.max_attempts > 0 && txn->attempts >= options_.max_attempts) {
      gave_up = true;
      break;
    }
    if (options_.backoff) {
      const int shift = std::min<int>(conflicts - 1, 20);
      const int64_t cap =
          std::min<int64_t>(options_.backoff_max_ns, options_.backoff_base_ns << shift);
      me.rng = Mix64(me.rng + 0x9e3779b97f4a7c15ULL);
      if (cap > 0) absl::SleepFor(absl::Nanoseconds(me.rng % static_cast<uint64_t>(cap)));
    }
  }
  const int64_t now = clock_->NowNanos();
  {
    constexpr auto kRelaxed = std::memory_order_relaxed;
    auto add = [](std::atomic<uint64_t>& a, uint64_t v) { a.store(a.load(kRelaxed) + v, kRelaxed); };
    add(me.started, 1);
    if (txn->enqueue_ns > 0 && started > txn->enqueue_ns) add(me.wait_ns, static_cast<uint64_t>(started - txn->enqueue_ns));
    if (now > started) add(me.exec_ns, static_cast<uint64_t>(now - started));
    add(me.attempts, attempts);
    add(me.aborts, conflicts);
    if (result.outcome == Outcome::kCommitted) add(me.commits, 1);
  }
  {
    TsanVisibleMutexLock l(&me.mu);
    WorkerStats& s = me.stats;
    ++s.txns;
    s.attempts += attempts;
    s.conflict_aborts += conflicts;
    for (size_t i = 0; i < by_cause.size(); ++i) s.aborts_by_cause[i] += by_cause[i];
    if (stolen) ++s.steals;
    if (gave_up) ++s.gave_up;
    TypeCounts& tc = s.per_type[txn->type.value()];
    tc.conflict_aborts += conflicts;
    switch (result.outcome) {
      case Outcome::kCommitted:
        ++s.commits;
        ++tc.commits;
        // Response time from the scheduling decision (or, for a transaction
        // pushed without one, from its enqueue).
        s.latency.Record(now - (txn->decision_start_ns > 0 ? txn->decision_start_ns
                                                           : txn->enqueue_ns));
        break;
      case Outcome::kUserAbort:
        ++s.user_aborts;
        ++tc.user_aborts;
        break;
      case Outcome::kFailed:
        ++s.failures;
        ++tc.failures;
        break;
      case Outcome::kConflictAbort:
        break;  // gave up: counted in conflict_aborts / gave_up
    }
  }
  if (hook_) hook_(std::move(txn), result, w);
}

WorkerStats WorkerPool::Stats(int worker) const {
  TsanVisibleMutexLock l(&workers_[worker].mu);
  return workers_[worker].stats;
}

QueueLoad WorkerPool::Load(int worker) const {
  const Worker& me = workers_[worker];
  constexpr auto kRelaxed = std::memory_order_relaxed;
  QueueLoad l;
  l.started = me.started.load(kRelaxed);
  l.wait_ns = me.wait_ns.load(kRelaxed);
  l.exec_ns = me.exec_ns.load(kRelaxed);
  l.attempts = me.attempts.load(kRelaxed);
  l.conflict_aborts = me.aborts.load(kRelaxed);
  l.commits = me.commits.load(kRelaxed);
  return l;
}

WorkerStats WorkerPool::TotalStats() const {
  WorkerStats total;
  for (int w = 0; w < num_workers(); ++w) total.Merge(Stats(w));
  return total;
}

}  // namespace scheduler
}  // namespace corral
