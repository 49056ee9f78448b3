// Scheduler: the facade that wires History + State + Schedule + RunQueues +
// WorkerPool behind Submit(), with the online knobs.
//
// Two ways to use it:
//   - Driving executors (embedded engine, benchmarks): Create() with one
//     Executor per queue, Start(), Submit() transactions; workers run them,
//     retry conflict aborts, feed every attempt's outcome to the History and
//     hand finished transactions to the completion hook.
//   - Routing only (the PostgreSQL proxy): Create() with no executors; call
//     Route(txn) to pick (and record in the State) the backend/queue, run the
//     transaction yourself, then ReportOutcome() for each attempt.
//
//   Scheduler::Options o;
//   o.num_queues = 8;
//   o.policy = ParsePolicy("count-max-canonical-single").value();
//   auto s = Scheduler::Create(o, executors, hook).value();
//   CHECK_OK(s->Start());
//   CHECK_OK(s->Submit(std::move(txn)));   // decision_start_ns set here
//   s->SetPolicy(ParsePolicy("original").value());  // online switch
//   s->history().Freeze();                  // Phase II
//   s->Stop();
//
// Thread safety: Submit, Route, ReportOutcome, SetPolicy, the accessors and
// Stats are thread-safe; Start/Stop from one controlling thread.
#ifndef CORRAL_SCHEDULER_SCHEDULER_H_
#define CORRAL_SCHEDULER_SCHEDULER_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "history/history.h"
#include "policies/policy.h"
#include "scheduler/run_queues.h"
#include "scheduler/schedule.h"
#include "scheduler/txn.h"
#include "scheduler/worker_pool.h"
#include "state/state.h"

namespace corral {
namespace scheduler {

class Scheduler {
 public:
  struct Options {
    int num_queues = 8;
    Policy policy;  // default: count-max-canonical-single
    uint64_t seed = 1;
    // The Schedule's History read cache and rules (ScheduleOptions); here
    // the rules beyond the paper are on by default. With lead_seeds_rows the
    // State is also reinforce-only (State::Options::reinforce_only).
    ScheduleOptions schedule = ScheduleOptions::WithRules();
    history::History::Options history;
    state::State::Options state;  // its num_queues is overridden by num_queues
    bool stealing = true;
    size_t queue_capacity = 0;  // per queue, 0 = unbounded (see RunQueues)
    WorkerPool::Options workers;
  };

  // `executors` is empty (routing only) or has num_queues entries, which must
  // outlive the Scheduler. `clock` (default: the real one) drives State rates
  // and response times.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(const Options& options,
                                                           std::vector<Executor*> executors,
                                                           CompletionHook hook = nullptr,
                                                           const Clock* clock = nullptr);
  ~Scheduler();

  absl::Status Start();
  void Stop();  // drains queued transactions, joins the workers

  // Decides the queue (State updated) and enqueues. Sets decision_start_ns
  // when it is 0, enqueue_ns and queue. Fails when routing-only, stopped, or
  // the chosen queue is full (ResourceExhausted; the transaction is dropped
  // and its State counts are taken back: State::Unrecord).
  absl::Status Submit(std::unique_ptr<Txn> txn);
  // Decides the queue and records it in the State, without enqueueing.
  QueueId Route(Txn& txn);
  // As Route; *affinity says whether the decision placed the transaction by
  // affinity rather than by the default rule: a learned policy where some
  // queue scored above 0 (a reference with History weight > 0 has a State
  // row), or Hard Partition (the key decides). False for Original and for a
  // learned decision where every queue tied at 0 (the smallest-total rule
  // chose). A caller that moves transactions between queues (the proxy's
  // stealing) may move the latter freely. Costs one extra Decide (History
  // and State reads, no State update) for learned policies.
  QueueId Route(Txn& txn, bool* affinity);
  // Outcome feedback for one attempt of a routed transaction: commit ->
  // commits, conflict abort -> aborts, others ignored (user errors).
  void ReportOutcome(const Txn& txn, Outcome outcome);

  void SetPolicy(const Policy& p) { schedule_->SetPolicy(p); }
  Policy policy() const { return schedule_->policy(); }
  void SetStealing(bool on);

  history::History& history() { return *history_; }
  state::State& state() { return *state_; }
  Schedule& schedule() { return *schedule_; }
  RunQueues* run_queues() { return queues_.get(); }  // null when routing-only
  int num_queues() const { return num_queues_; }
  // Merged worker statistics (empty when routing-only).
  WorkerStats Stats() const;
  WorkerStats WorkerStatsOf(int worker) const;

 private:
  Scheduler() = default;

  int num_queues_ = 0;
  const Clock* clock_ = nullptr;
  std::unique_ptr<history::History> history_;
  std::unique_ptr<state::State> state_;
  std::unique_ptr<Schedule> schedule_;
  std::unique_ptr<RunQueues> queues_;
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace scheduler
}  // namespace corral

#endif  // CORRAL_SCHEDULER_SCHEDULER_H_
