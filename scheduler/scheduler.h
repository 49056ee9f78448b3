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
// Online tuning (issue #16), due every tick_ns on the injected clock, run
// off the decision path by a ticker thread while the workers run (Start to
// Stop, Options::background_tick), otherwise by whichever deciding thread
// finds a tick due (Route; one thread at a time, others go on); Tick() runs
// one by hand:
//   - Aging: History::MaybeAge() (Options::history.half_life_ns) and the
//     State aged by the same factor.
//   - Hot-spot splitting (Options::split; it measures queue wait: the
//     WorkerPool's with executors, routing only the caller's reports into
//     routed_loads()): every split.window_ns, per queue, the queue wait, attempt time
//     and retries per commit of the window; for each split reference (and
//     each queue whose wait says "grow" with a dominant lead reference)
//     SplitRule gives the next k; queues are added by the shortest measured
//     wait, removed last-added first (scheduler/hot_spots.h). With
//     split.rebalance, the same window moves a lead reference off a queue
//     that runs two busy ones onto an underused queue (RebalanceRule).
//     During the first window after Start, a look every quarter window
//     rebalances a start whose queues are far apart (EarlyRebalance).
//   - --policy=auto (Options::autopolicy): a PolicyBandit over the arms,
//     reward = commits per second over a window (after `settle_ns` following
//     a switch); each switch is logged with its reason (Options::log) and
//     kept (Switches()); PolicyLabel() names the current choice. A shift in
//     the workload is seen from the windows' throughput and abort rates and
//     from the references' mix among the transactions (MixShift).
//
// Thread safety: Submit, Route, ReportOutcome, SetPolicy, SetAuto, Tick,
// the accessors and Stats are thread-safe; Start/Stop from one controlling
// thread.
#ifndef CORRAL_SCHEDULER_SCHEDULER_H_
#define CORRAL_SCHEDULER_SCHEDULER_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "history/history.h"
#include "policies/policy.h"
#include "scheduler/hot_spots.h"
#include "scheduler/mix_shift.h"
#include "scheduler/policy_bandit.h"
#include "scheduler/routed_loads.h"
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
    // Online tuning (see above). Ticks at most every tick_ns.
    int64_t tick_ns = 50000000;
    // With workers: ticks (an aging pass walks the whole History and State)
    // run on a ticker thread between Start and Stop, not inside a Submit.
    bool background_tick = true;
    struct Split {
      bool enabled = false;
      SplitRule rule;
      int max_entries = 8;          // hot references split at once
      int64_t window_ns = 200000000;
      int64_t min_started = 20;     // a queue needs this many txns in a window to count
      // Also even out the queues' loads by moving a lead reference from an
      // overloaded queue to an underused one (hot_spots.h RebalanceRule).
      bool rebalance = true;
      RebalanceRule rebalance_rule;
    } split;
    struct Auto {
      bool enabled = false;
      std::vector<Policy> arms;     // empty: DefaultAutoArms()
      // 200 ms: an engine transaction takes tens of microseconds, so a window
      // holds thousands of commits; shorter windows make the first trial of
      // every arm and the re-trial after a shift cheaper (measured online,
      // TPC-C and YCSB: auto x0.90-0.97 of the best fixed policy per phase
      // at 200 ms against x0.86-0.95 at 300 ms).
      int64_t window_ns = 200000000;
      int64_t settle_ns = 40000000;  // not measured after a switch
      PolicyBandit::Options bandit;  // .arms is set from `arms`
      // The reference-mix shift signal (mix_shift.h): submitted (routed)
      // transactions sampled while auto is on, each window judged against
      // the mix before it and given to the bandit.
      bool mix = true;
      MixShift::Options mix_options;
    } autopolicy;
    // Where switch and split decisions are reported (null: stderr).
    std::function<void(const std::string&)> log;
  };

  // The arms `auto` uses by default: the learned policy of the paper's best
  // TPC-C result and its Fraction twin, and the two baselines (auto chooses
  // by measured throughput; where a baseline wins a phase, it takes it).
  static std::vector<Policy> DefaultAutoArms();

  struct SwitchEvent {
    int64_t t_ns = 0;
    std::string from, to, reason;
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
  // commits, conflict abort -> aborts (RecordConflictAbort's attribution,
  // `spare_lead` as there), others ignored (user errors); `texts` (may be
  // null) names new references. Also counted for auto (CommitsSoFar).
  void ReportOutcome(const Txn& txn, Outcome outcome, const history::History::TextProvider* texts = nullptr,
                     bool spare_lead = true);
  // Commits so far, and (if non-null) conflict aborts: the engine's
  // workers' counts, or (routing-only) those reported through
  // ReportOutcome. What auto's windows read.
  uint64_t CommitsSoFar(uint64_t* conflict_aborts = nullptr) const;

  // A fixed policy (turns auto off).
  void SetPolicy(const Policy& p);
  Policy policy() const { return schedule_->policy(); }
  // --policy=auto on or off (off keeps the current choice).
  void SetAuto(bool on);
  bool auto_policy() const { return auto_on_.load(std::memory_order_acquire); }
  // "auto (count-max-canonical-single)" while auto, else the policy's name.
  std::string PolicyLabel() const;
  std::vector<SwitchEvent> Switches() const;
  int64_t switch_count() const { return switch_count_.load(std::memory_order_relaxed); }
  // Online tuning step now if one is due (see above).
  void Tick();
  // The largest k of a split hot reference the current policy routes over
  // (1 when none is split, and under a baseline policy, which keeps the
  // split table for a learned one but does not consult it).
  int HotQueues() const;
  // Lead references moved between queues by rebalancing so far.
  int64_t rebalance_moves() const { return rebalance_moves_.load(std::memory_order_relaxed); }
  HotSpots* hot_spots() { return hot_spots_.get(); }
  // Routing only with split on: where the caller reports its queues' loads
  // (routed_loads.h), which the split windows read; null otherwise.
  RoutedLoads* routed_loads() { return routed_loads_.get(); }
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
  void MaybeTick(int64_t now);
  void TickerLoop();
  void StopTicker();
  void SplitStep(int64_t now);
  // The first split window (and early looks) measured from now; under tick_mu_.
  void StartSplitWindows();
  // Queue q's cumulative load: the WorkerPool's, or (routing only) the
  // caller's reports.
  QueueLoad LoadOf(int q) const;
  // Each queue's load now (*cur) and since `prev` (*d).
  void WindowLoads(const std::vector<QueueLoad>& prev, std::vector<QueueLoad>* cur,
                   std::vector<QueueLoad>* d) const;
  // Start's early look (see above); true when it moved a lead.
  bool EarlyRebalance(int64_t now);
  // Rebalancing (Options::split.rebalance) on the loads `d` of a window of
  // `window_ns` (SplitStep's, or an early look's quarter): whether a lead
  // reference moved.
  bool Rebalance(const std::vector<QueueLoad>& d, int64_t window_ns, bool early);
  // SplitRule::Candidate for a reference not split yet: its State arrival
  // rate against the window's commits (WindowCommits of its loads).
  bool WorthSplitting(RefId lead, int64_t window_commits) const;
  static int64_t WindowCommits(const std::vector<QueueLoad>& d);
  void AutoStep(int64_t now);
  // Hands a first attempt's references to the mix signal (auto on).
  void SampleMix(const Txn& txn);
  void Log(const std::string& line) const;

  Options options_;
  int num_queues_ = 0;
  const Clock* clock_ = nullptr;
  std::unique_ptr<history::History> history_;
  std::unique_ptr<state::State> state_;
  std::unique_ptr<Schedule> schedule_;
  std::unique_ptr<RunQueues> queues_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<HotSpots> hot_spots_;
  std::unique_ptr<RoutedLoads> routed_loads_;  // routing only, split on

  // Online tuning.
  std::atomic<int64_t> next_tick_{0};
  std::mutex tick_mu_;  // one tick at a time (try_lock: others skip)
  // The ticker thread (background_tick, with workers): while ticker_on_,
  // Submit leaves the ticks to it.
  std::atomic<bool> ticker_on_{false};
  std::thread ticker_;
  std::mutex ticker_mu_;
  std::condition_variable ticker_cv_;
  bool ticker_stop_ = false;  // guarded by ticker_mu_
  std::atomic<uint64_t> routed_commits_{0};  // routing-only: ReportOutcome commits
  std::atomic<uint64_t> routed_aborts_{0};   // ... and conflict aborts
  std::atomic<bool> auto_on_{false};
  std::atomic<int64_t> switch_count_{0};
  mutable std::mutex switches_mu_;
  std::vector<SwitchEvent> switches_;  // guarded by switches_mu_
  // Under tick_mu_:
  std::vector<Policy> arms_;
  std::unique_ptr<PolicyBandit> bandit_;
  std::unique_ptr<MixShift> mix_;  // null: the mix signal is off; Sample from any thread
  int64_t auto_measure_from_ns_ = 0;  // window start (after settling)
  uint64_t auto_commits0_ = 0;
  uint64_t auto_aborts0_ = 0;
  bool auto_measuring_ = false;
  int64_t next_split_ns_ = 0;
  std::vector<QueueLoad> split_prev_;
  int64_t split_prev_ns_ = 0;  // when split_prev_ was read (0: not yet)
  int64_t window_len_ns_ = 0;  // the last window's length
  // Start's early rebalancing looks (EarlyRebalance): the next (0: none
  // due), until when, and the loads at the last one.
  int64_t early_look_ns_ = 0;
  int64_t early_until_ns_ = 0;
  std::vector<QueueLoad> early_prev_;
  int64_t early_prev_ns_ = 0;
  struct SplitEntry {
    RefId ref;
    std::vector<int> queues;  // in the order added (home queue first)
    SplitState state;
    uint32_t routed = 0;    // HotSpots::Routed at the last window
    int unled_windows = 0;  // windows in a row with fewer than min_started of its decisions
    int fits_windows = 0;   // windows in a row in which it fit in one queue (WorthSplitting false)
    int max_k = 1;          // the most queues it ran on
    uint64_t aborts_before = 0;  // its History abort count when it became a candidate
    int64_t since_ns = 0;        // when
  };
  // A split reference back on one queue: its History aborts capped (see .cc).
  void UnsplitCounts(const SplitEntry& e, int64_t now);
  std::vector<SplitEntry> split_;
  std::vector<SplitState> split_probe_;  // per queue outside every set: its own k=1 rule state
  int64_t split_windows_ = 0;            // split windows so far
  // References whose split was taken back for no gain (SplitRule::
  // require_gain): not split again before window `until`; `next_hold`
  // carries the doubling over. Forgotten max_hold_windows after `until`.
  struct SplitHold {
    int64_t until = 0;
    int next_hold = 0;
  };
  std::map<uint64_t, SplitHold> split_held_;
  std::vector<RefId> rebalance_last_;    // the references moved in the last window with moves
  int rebalance_since_ = 1 << 20;        // windows since it (none yet: many)
  std::atomic<int64_t> rebalance_moves_{0};
};

}  // namespace scheduler
}  // namespace corral

#endif  // CORRAL_SCHEDULER_SCHEDULER_H_
