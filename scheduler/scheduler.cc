#include "scheduler/scheduler.h"

#include "absl/strings/str_cat.h"

namespace corral {
namespace scheduler {

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(const Options& options,
                                                             std::vector<Executor*> executors,
                                                             CompletionHook hook,
                                                             const Clock* clock) {
  if (clock == nullptr) clock = Clock::Real();
  if (!executors.empty() && static_cast<int>(executors.size()) != options.num_queues) {
    return absl::InvalidArgumentError(absl::StrCat("need one executor per queue: ",
                                                   executors.size(), " executors, ",
                                                   options.num_queues, " queues"));
  }
  std::unique_ptr<Scheduler> s(new Scheduler());
  s->num_queues_ = options.num_queues;
  s->clock_ = clock;
  state::State::Options so = options.state;
  so.num_queues = options.num_queues;
  if (options.schedule.lead_seeds_rows) so.reinforce_only = true;
  auto st = state::State::Create(so, clock);
  if (!st.ok()) return st.status();
  s->state_ = std::move(st).value();
  s->history_ = std::make_unique<history::History>(options.history);
  s->schedule_ = std::make_unique<Schedule>(s->history_.get(), s->state_.get(), options.policy,
                                            options.seed, options.schedule);
  if (!executors.empty()) {
    RunQueues::Options qo;
    qo.num_queues = options.num_queues;
    qo.stealing = options.stealing;
    qo.capacity = options.queue_capacity;
    qo.seed = options.seed;
    auto q = RunQueues::Create(qo);
    if (!q.ok()) return q.status();
    s->queues_ = std::move(q).value();
    s->pool_ = std::make_unique<WorkerPool>(s->queues_.get(), s->history_.get(),
                                            std::move(executors), options.workers,
                                            std::move(hook), clock);
  }
  return s;
}

Scheduler::~Scheduler() { Stop(); }

absl::Status Scheduler::Start() {
  if (pool_ == nullptr) return absl::FailedPreconditionError("routing-only scheduler has no workers");
  return pool_->Start();
}

void Scheduler::Stop() {
  if (pool_ != nullptr) pool_->Stop();
}

void Scheduler::SetStealing(bool on) {
  if (queues_ != nullptr) queues_->SetStealing(on);
}

QueueId Scheduler::Route(Txn& txn) {
  if (txn.decision_start_ns == 0) txn.decision_start_ns = clock_->NowNanos();
  return schedule_->Place(txn);
}

QueueId Scheduler::Route(Txn& txn, bool* affinity) {
  const Policy p = schedule_->policy();
  *affinity = false;
  if (p.kind == PolicyKind::kHardPartition) {
    *affinity = true;
  } else if (p.kind == PolicyKind::kLearned) {
    thread_local std::vector<double> scores;
    schedule_->Decide(txn.refs, txn.partition_key, &scores, txn.ref_mult);
    for (double s : scores) {
      if (s > 0) {
        *affinity = true;
        break;
      }
    }
  }
  return Route(txn);
}

absl::Status Scheduler::Submit(std::unique_ptr<Txn> txn) {
  if (queues_ == nullptr) {
    return absl::FailedPreconditionError("routing-only scheduler: use Route()");
  }
  if (txn == nullptr) return absl::InvalidArgumentError("null transaction");
  if (queues_->is_shutdown()) return absl::FailedPreconditionError("scheduler is stopped");
  if (txn->decision_start_ns == 0) txn->decision_start_ns = clock_->NowNanos();
  bool recorded = false;
  const QueueId q = schedule_->Place(*txn, &recorded);
  txn->enqueue_ns = clock_->NowNanos();
  absl::Status st = queues_->TryPush(q, &txn);
  // Refused (full or stopped meanwhile): the placement did not happen, so its
  // State counts are taken back.
  if (!st.ok() && recorded && txn != nullptr) schedule_->Unplace(*txn, q);
  return st;
}

void Scheduler::ReportOutcome(const Txn& txn, Outcome outcome) {
  if (outcome == Outcome::kCommitted) {
    history_->RecordCommit(txn.refs);
  } else if (outcome == Outcome::kConflictAbort) {
    history_->RecordAbort(txn.refs);
  }
}

WorkerStats Scheduler::Stats() const {
  return pool_ == nullptr ? WorkerStats() : pool_->TotalStats();
}

WorkerStats Scheduler::WorkerStatsOf(int worker) const {
  return pool_ == nullptr ? WorkerStats() : pool_->Stats(worker);
}

}  // namespace scheduler
}  // namespace corral
