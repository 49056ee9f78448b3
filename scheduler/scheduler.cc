#include "scheduler/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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
  s->options_ = options;
  s->num_queues_ = options.num_queues;
  s->clock_ = clock;
  state::State::Options so = options.state;
  so.num_queues = options.num_queues;
  if (options.schedule.lead_seeds_rows) so.reinforce_only = true;
  auto st = state::State::Create(so, clock);
  if (!st.ok()) return st.status();
  s->state_ = std::move(st).value();
  s->history_ = std::make_unique<history::History>(options.history, clock);
  ScheduleOptions sched = options.schedule;
  if (options.split.enabled) {
    s->hot_spots_ = std::make_unique<HotSpots>(options.num_queues, options.split.max_entries);
    sched.hot_spots = s->hot_spots_.get();
  }
  s->schedule_ = std::make_unique<Schedule>(s->history_.get(), s->state_.get(), options.policy,
                                            options.seed, sched);
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
    if (s->hot_spots_ != nullptr) {
      RunQueues* rq = s->queues_.get();
      s->hot_spots_->SetQueueLength([rq](int q) { return rq->Size(QueueId(q)); });
    }
  } else if (s->hot_spots_ != nullptr) {
    // Routing only: the caller reports its queues' loads (routed_loads.h);
    // the split windows are measured from now (with workers, from Start).
    s->routed_loads_ = std::make_unique<RoutedLoads>(options.num_queues);
    RoutedLoads* rl = s->routed_loads_.get();
    s->hot_spots_->SetQueueLength([rl](int q) { return rl->Length(q); });
    std::lock_guard<std::mutex> l(s->tick_mu_);
    s->StartSplitWindows();
  }
  s->arms_ = options.autopolicy.arms.empty() ? DefaultAutoArms() : options.autopolicy.arms;
  PolicyBandit::Options bo = options.autopolicy.bandit;
  bo.arms = static_cast<int>(s->arms_.size());
  s->bandit_ = std::make_unique<PolicyBandit>(bo);
  if (options.autopolicy.mix) s->mix_ = std::make_unique<MixShift>(options.autopolicy.mix_options);
  s->next_tick_.store(clock->NowNanos() + options.tick_ns, std::memory_order_relaxed);
  s->next_split_ns_ = clock->NowNanos() + options.split.window_ns;
  if (options.autopolicy.enabled) s->SetAuto(true);
  return s;
}

Scheduler::~Scheduler() { Stop(); }

absl::Status Scheduler::Start() {
  if (pool_ == nullptr) return absl::FailedPreconditionError("routing-only scheduler has no workers");
  absl::Status st = pool_->Start();
  if (st.ok() && hot_spots_ != nullptr) {
    // The first split window is measured from here: a run's first moves (a
    // start that seeded two busy references on one queue, most runs of
    // online TPC-C: its first 0.4 s ran at 0.55x hard-partition's rate)
    // come one window in, not two. (Tried: a half first window. Moves at
    // 0.1 s, but the TPC-C spec's phase means did not move, and YCSB's first
    // phase fell from x0.82-0.88 to x0.60-0.63 of original under OCC.)
    std::lock_guard<std::mutex> l(tick_mu_);
    StartSplitWindows();
  }
  if (!st.ok() || !options_.background_tick || ticker_.joinable()) return st;
  {
    std::lock_guard<std::mutex> l(ticker_mu_);
    ticker_stop_ = false;
  }
  ticker_on_.store(true, std::memory_order_release);
  ticker_ = std::thread([this] { TickerLoop(); });
  return st;
}

void Scheduler::StartSplitWindows() {
  split_prev_.assign(static_cast<size_t>(num_queues_), QueueLoad());
  for (int q = 0; q < num_queues_; ++q) split_prev_[static_cast<size_t>(q)] = LoadOf(q);
  split_prev_ns_ = clock_->NowNanos();
  next_split_ns_ = split_prev_ns_ + options_.split.window_ns;
  if (options_.split.rebalance) {
    early_prev_ = split_prev_;
    early_prev_ns_ = split_prev_ns_;
    early_look_ns_ = split_prev_ns_ + options_.split.window_ns / 4;
    early_until_ns_ = split_prev_ns_ + options_.split.window_ns;
  }
}

QueueLoad Scheduler::LoadOf(int q) const {
  if (pool_ != nullptr) return pool_->Load(q);
  return routed_loads_ != nullptr ? routed_loads_->Load(q) : QueueLoad();
}

void Scheduler::TickerLoop() {
  const auto period = std::chrono::nanoseconds(std::max<int64_t>(options_.tick_ns / 2, 1000000));
  std::unique_lock<std::mutex> l(ticker_mu_);
  while (!ticker_stop_) {
    ticker_cv_.wait_for(l, period, [this] { return ticker_stop_; });
    if (ticker_stop_) break;
    l.unlock();
    MaybeTick(clock_->NowNanos());
    l.lock();
  }
}

void Scheduler::StopTicker() {
  if (!ticker_.joinable()) return;
  {
    std::lock_guard<std::mutex> l(ticker_mu_);
    ticker_stop_ = true;
  }
  ticker_cv_.notify_all();
  ticker_.join();
  // Deciding threads tick again (a Route after Stop).
  ticker_on_.store(false, std::memory_order_release);
}

void Scheduler::Stop() {
  StopTicker();
  if (pool_ != nullptr) pool_->Stop();
}

void Scheduler::SetStealing(bool on) {
  if (queues_ != nullptr) queues_->SetStealing(on);
}

void Scheduler::SampleMix(const Txn& txn) {
  // First attempts only, while auto is on (retries would weigh aborting rows).
  if (mix_ != nullptr && txn.attempts == 0 && auto_on_.load(std::memory_order_relaxed)) {
    mix_->Sample(txn.learned_refs());
  }
}

QueueId Scheduler::Route(Txn& txn) {
  if (txn.decision_start_ns == 0) txn.decision_start_ns = clock_->NowNanos();
  SampleMix(txn);
  if (!ticker_on_.load(std::memory_order_relaxed)) MaybeTick(txn.decision_start_ns);
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
  SampleMix(*txn);
  if (!ticker_on_.load(std::memory_order_relaxed)) MaybeTick(txn->decision_start_ns);
  bool recorded = false;
  const QueueId q = schedule_->Place(*txn, &recorded);
  txn->enqueue_ns = clock_->NowNanos();
  absl::Status st = queues_->TryPush(q, &txn);
  // Refused (full or stopped meanwhile): the placement did not happen, so its
  // State counts are taken back.
  if (!st.ok() && recorded && txn != nullptr) schedule_->Unplace(*txn, q);
  return st;
}

void Scheduler::ReportOutcome(const Txn& txn, Outcome outcome, const history::History::TextProvider* texts,
                              bool spare_lead) {
  if (outcome == Outcome::kCommitted) {
    routed_commits_.fetch_add(1, std::memory_order_relaxed);
    history_->Record(txn.learned_refs(), /*committed=*/true, texts);
  } else if (outcome == Outcome::kConflictAbort) {
    routed_aborts_.fetch_add(1, std::memory_order_relaxed);
    RecordConflictAbort(*history_, txn, texts, spare_lead);
  }
}

std::vector<Policy> Scheduler::DefaultAutoArms() {
  std::vector<Policy> arms;
  for (const char* name : {"count-max-canonical-single", "fraction-max-canonical-single",
                           "hard-partition", "original"}) {
    arms.push_back(*ParsePolicy(name));
  }
  return arms;
}

void Scheduler::SetPolicy(const Policy& p) {
  std::lock_guard<std::mutex> l(tick_mu_);  // not overwritten by a tick in flight
  auto_on_.store(false, std::memory_order_release);
  schedule_->SetPolicy(p);
}

void Scheduler::SetAuto(bool on) {
  std::lock_guard<std::mutex> l(tick_mu_);
  const bool was = auto_on_.exchange(on, std::memory_order_acq_rel);
  if (!on || was) return;
  // Starts on the bandit's current arm, measured after settling.
  const Policy next = arms_[bandit_->current()];
  const std::string from = PolicyName(schedule_->policy());
  schedule_->SetPolicy(next);
  auto_measuring_ = false;
  auto_measure_from_ns_ = clock_->NowNanos() + options_.autopolicy.settle_ns;
  const std::string to = PolicyName(next);
  if (from != to) {
    const std::string reason = "auto on: start with arm " + std::to_string(bandit_->current());
    {
      std::lock_guard<std::mutex> sl(switches_mu_);
      switches_.push_back(SwitchEvent{clock_->NowNanos(), from, to, reason});
    }
    switch_count_.fetch_add(1, std::memory_order_relaxed);
    Log(absl::StrCat("auto: ", from, " -> ", to, " (", reason, ")"));
  }
}

int Scheduler::HotQueues() const {
  if (hot_spots_ == nullptr || schedule_->policy().kind != PolicyKind::kLearned) return 1;
  return hot_spots_->MaxK();
}

std::string Scheduler::PolicyLabel() const {
  const std::string name = PolicyName(schedule_->policy());
  return auto_policy() ? absl::StrCat("auto (", name, ")") : name;
}

std::vector<Scheduler::SwitchEvent> Scheduler::Switches() const {
  std::lock_guard<std::mutex> l(switches_mu_);
  return switches_;
}

void Scheduler::Log(const std::string& line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

uint64_t Scheduler::CommitsSoFar(uint64_t* conflict_aborts) const {
  if (pool_ == nullptr) {
    if (conflict_aborts != nullptr) *conflict_aborts = routed_aborts_.load(std::memory_order_relaxed);
    return routed_commits_.load(std::memory_order_relaxed);
  }
  uint64_t n = 0, a = 0;
  for (int w = 0; w < pool_->num_workers(); ++w) {
    const QueueLoad l = pool_->Load(w);
    n += l.commits;
    a += l.conflict_aborts;
  }
  if (conflict_aborts != nullptr) *conflict_aborts = a;
  return n;
}

void Scheduler::Tick() {
  next_tick_.store(0, std::memory_order_relaxed);
  MaybeTick(clock_->NowNanos());
}

void Scheduler::MaybeTick(int64_t now) {
  if (now < next_tick_.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> l(tick_mu_, std::try_to_lock);
  if (!l.owns_lock()) return;
  next_tick_.store(now + options_.tick_ns, std::memory_order_relaxed);
  // Aging: the State follows the History.
  const double f = history_->MaybeAge();
  if (f < 1.0) state_->Age(f);
  if (hot_spots_ != nullptr && early_look_ns_ > 0 && now >= early_look_ns_) {
    EarlyRebalance(now);
    early_look_ns_ = now + options_.split.window_ns / 4;
    if (early_look_ns_ >= early_until_ns_) early_look_ns_ = 0;  // the last one was due
  }
  if (hot_spots_ != nullptr && now >= next_split_ns_) {
    SplitStep(now);
    hot_spots_->AgeLeads();  // the next window's leads weigh most
    next_split_ns_ = now + options_.split.window_ns;
  }
  if (auto_on_.load(std::memory_order_acquire)) AutoStep(now);
}

// Windows (split steps) in a row with fewer than min_started decisions led
// by a split reference before it is dropped.
constexpr int kUnledWindowsToDrop = 3;

void Scheduler::SplitStep(int64_t now) {
  const int n = num_queues_;
  const bool first = split_prev_.empty();
  if (first) split_prev_.assign(n, QueueLoad());
  std::vector<QueueLoad> cur, d;
  WindowLoads(split_prev_, &cur, &d);
  split_prev_ = cur;
  // This window's length (a tick comes up to half a tick late), for a
  // reference's transactions a window from its rate.
  window_len_ns_ = split_prev_ns_ > 0 ? now - split_prev_ns_ : options_.split.window_ns;
  split_prev_ns_ = now;
  if (first) return;
  // Only learned decisions consult the split table; measurements under a
  // baseline say nothing about it, so the table stays as the learned policy
  // left it (HotQueues() reports 1 meanwhile) and the rule resumes from it
  // when a learned arm comes back (auto). Clearing it instead made every
  // learned arm's trial after a baseline arm start unsplit: online TPC-C's
  // hot phase, count-max's 4-queue split ran at 14.7k, its next trial,
  // after hard-partition and original, at 7.9k, so auto stayed on original
  // (12.9k). A set gone stale (the hot spot ended meanwhile) is back under
  // 1.25 queue shares and given back in the learned arm's first window
  // (SplitRule::ClearlyFits).
  if (schedule_->policy().kind != PolicyKind::kLearned) return;
  auto mean_wait = [&](int q) {
    return d[q].started > 0 ? static_cast<double>(d[q].wait_ns) / static_cast<double>(d[q].started) : 0.0;
  };
  std::vector<bool> taken(n, false);
  for (const SplitEntry& e : split_) {
    for (int q : e.queues) taken[q] = true;
  }
  // The queues outside every set, least waiting first: where growth adds.
  auto free_queues = [&] {
    std::vector<int> free;
    for (int q = 0; q < n; ++q) {
      if (!taken[q]) free.push_back(q);
    }
    std::sort(free.begin(), free.end(), [&](int a, int b) {
      return mean_wait(a) != mean_wait(b) ? mean_wait(a) < mean_wait(b) : a < b;
    });
    return free;
  };
  auto sum_of = [&](const std::vector<int>& qs) {
    QueueLoad t;
    for (int q : qs) {
      t.started += d[q].started;
      t.wait_ns += d[q].wait_ns;
      t.exec_ns += d[q].exec_ns;
      t.attempts += d[q].attempts;
      t.conflict_aborts += d[q].conflict_aborts;
      t.commits += d[q].commits;
    }
    return t;
  };
  auto sample_of = [&](const std::vector<int>& qs) {
    const QueueLoad t = sum_of(qs);
    const QueueLoad other = sum_of(free_queues());
    SplitSample s;
    s.wait_ns = t.started > 0 ? static_cast<double>(t.wait_ns) / t.started : 0;
    // The excess over the other queues' mean wait.
    if (other.started > 0) s.wait_ns -= static_cast<double>(other.wait_ns) / other.started;
    s.attempt_ns = t.attempts > 0 ? static_cast<double>(t.exec_ns) / t.attempts : 0;
    s.aborts_per_commit = t.commits > 0 ? static_cast<double>(t.conflict_aborts) / t.commits
                                        : (t.conflict_aborts > 0 ? 1.0 : 0.0);
    s.commits = static_cast<double>(t.commits);
    return std::make_pair(s, static_cast<int64_t>(t.started));
  };
  const int64_t window_commits = WindowCommits(d);
  ++split_windows_;
  // A reference whose split was taken back for no gain (SplitRule::
  // require_gain) is not split again until its hold is over.
  for (auto it = split_held_.begin(); it != split_held_.end();) {
    const auto cur = it++;
    if (cur->second.until < split_windows_ - options_.split.rule.max_hold_windows) split_held_.erase(cur);
  }
  // Rebalancing first: a queue that waits because it runs two busy leads
  // while another queue idles is evened by a move, which costs no conflicts;
  // a split of it would. A window with a move starts no split.
  const bool moved = options_.split.rebalance && Rebalance(d, window_len_ns_, /*early=*/false);
  // New candidates: a queue outside every set whose own rule (k = 1) says
  // "grow", led by one reference.
  split_probe_.resize(static_cast<size_t>(n));
  for (int q = 0; q < n && !moved; ++q) {
    if (taken[q] || static_cast<int64_t>(d[q].started) < options_.split.min_started) {
      split_probe_[q] = SplitState();
      continue;
    }
    if (static_cast<int>(split_.size()) >= options_.split.max_entries) break;
    taken[q] = true;  // not its own alternative
    const auto [s, started] = sample_of({q});
    SplitState& probe = split_probe_[q];
    probe.k = 1;
    if (options_.split.rule.Step(&probe, s) <= 1) {
      taken[q] = false;
      continue;
    }
    probe = SplitState();
    int64_t weight = 0;
    const RefId lead = hot_spots_->DominantLead(q, &weight);
    bool known = false;
    for (const SplitEntry& e : split_) known |= e.ref == lead;
    const auto held = split_held_.find(lead.value());
    const bool holding = held != split_held_.end() && held->second.until > split_windows_;
    if (lead.value() == 0 || weight < 4 || known || holding || !WorthSplitting(lead, window_commits)) {
      taken[q] = false;
      continue;
    }
    // At k = 1 on its home queue, with the windows the probe saw: the loop
    // below takes the growth step on this window's figures.
    SplitState st;
    st.grow_streak = options_.split.rule.grow_windows - 1;
    if (held != split_held_.end()) st.next_hold = held->second.next_hold;  // the next hold doubles
    SplitEntry e{lead, {q}, st};
    history::History::Counts counts;
    if (history_->Get(lead, &counts)) e.aborts_before = counts.aborts;
    e.since_ns = now;
    split_.push_back(std::move(e));
  }
  for (size_t i = 0; i < split_.size();) {
    SplitEntry& e = split_[i];
    const auto [s, started] = sample_of(e.queues);
    const int k = static_cast<int>(e.queues.size());
    e.state.k = k;
    if (started >= options_.split.min_started) options_.split.rule.Step(&e.state, s);
    // A reference that has led fewer than min_started decisions a window for
    // a few windows is not hot any more (the hot spot moved): it gives its
    // queues back, so that the reference hot now can be split there.
    // Without this, a moved hot spot found every queue taken and ran
    // serialized on one (online YCSB: a third of original's rate).
    const uint32_t routed = hot_spots_->Routed(e.ref);
    const int64_t led = static_cast<int64_t>(static_cast<uint32_t>(routed - e.routed));
    e.routed = routed;
    e.unled_windows = led >= options_.split.min_started ? 0 : e.unled_windows + 1;
    // Nor is one that fits in one queue again (the hot spot cooled): its
    // load here is the decisions it led this window (its State rate counts
    // only the placements on its row's own queue once it is split).
    e.fits_windows = options_.split.rule.Candidate(static_cast<double>(led), window_commits, num_queues_)
                         ? 0
                         : e.fits_windows + 1;
    // Well under that share, at once (only over a window it ran split:
    // Route counts its decisions then).
    if (k > 1 && options_.split.rule.ClearlyFits(static_cast<double>(led), window_commits, num_queues_)) {
      e.fits_windows = kUnledWindowsToDrop;
    }
    const bool dropped = e.unled_windows >= kUnledWindowsToDrop || e.fits_windows >= kUnledWindowsToDrop;
    if (dropped) e.state.k = 1;
    const int next = e.state.k;
    if (next > k) {
      const std::vector<int> free = free_queues();
      for (int j = 0; j < next - k && j < static_cast<int>(free.size()); ++j) {
        e.queues.push_back(free[j]);
        taken[free[j]] = true;
      }
    } else if (next < k) {
      for (int j = 0; j < k - next; ++j) {
        taken[e.queues.back()] = false;
        e.queues.pop_back();
      }
    }
    if (static_cast<int>(e.queues.size()) != k) {
      Log(absl::StrFormat("split: ref %016x k %d -> %d (excess queue wait %.0f us, attempt %.0f us, "
                          "retries/commit %.3f%s)",
                          e.ref.value(), k, static_cast<int>(e.queues.size()), s.wait_ns / 1e3,
                          s.attempt_ns / 1e3, s.aborts_per_commit,
                          e.unled_windows >= kUnledWindowsToDrop ? "; its decisions stopped"
                          : e.fits_windows >= kUnledWindowsToDrop ? "; it fits in one queue"
                          : e.state.no_gain ? absl::StrFormat("; no more commits, held %d windows", e.state.hold)
                                            : std::string()));
    }
    hot_spots_->Set(e.ref, e.queues);
    e.max_k = std::max(e.max_k, static_cast<int>(e.queues.size()));
    if (e.queues.size() <= 1) {
      if (e.max_k > 1) UnsplitCounts(e, now);
      if (e.state.no_gain) split_held_[e.ref.value()] = {split_windows_ + e.state.hold, e.state.next_hold};
      split_.erase(split_.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    ++i;
  }
}

void Scheduler::UnsplitCounts(const SplitEntry& e, int64_t now) {
  // The aborts a split reference gathered on its k queues were its own
  // queues' conflicts, accepted by the split and over with it; left in
  // place, they kept it 5-16x heavier than the references around it for
  // seconds (half-lives), and as the heaviest reference of every remote
  // transaction that named it, it pulled those off their home queues
  // (measured online, TPC-C after a hot phase: a third of the last phase's
  // aborts were remote Payments the once-hot warehouse led, 1% aborts for
  // the whole 5 s phase against 0.2% in the first). Its count goes back to
  // where it stood when it became a candidate, aged as the History ages.
  const int64_t half_life = options_.history.half_life_ns;
  double before = static_cast<double>(e.aborts_before);
  if (half_life > 0 && now > e.since_ns) {
    before *= std::exp2(-static_cast<double>(now - e.since_ns) / static_cast<double>(half_life));
  }
  history_->CapAborts(e.ref, static_cast<uint64_t>(before + 0.5));
}

int64_t Scheduler::WindowCommits(const std::vector<QueueLoad>& d) {
  // Commits, not starts: under a hot spot every retry is a start, and the
  // retries would raise the fair share a reference is held to.
  int64_t sum = 0;
  for (const QueueLoad& l : d) sum += static_cast<int64_t>(l.commits);
  return sum;
}

bool Scheduler::WorthSplitting(RefId lead, int64_t window_commits) const {
  state::State::Info info;
  if (window_commits <= 0 || !state_->Get(lead, &info)) return false;
  const double lead_load = info.rate_per_s * static_cast<double>(window_len_ns_) / 1e9;
  return options_.split.rule.Candidate(lead_load, window_commits, num_queues_);
}

void Scheduler::WindowLoads(const std::vector<QueueLoad>& prev, std::vector<QueueLoad>* cur,
                            std::vector<QueueLoad>* d) const {
  const int n = num_queues_;
  cur->assign(static_cast<size_t>(n), QueueLoad());
  d->assign(static_cast<size_t>(n), QueueLoad());
  for (int q = 0; q < n; ++q) {
    const QueueLoad c = LoadOf(q);
    const QueueLoad& p = prev[static_cast<size_t>(q)];
    QueueLoad& x = (*d)[static_cast<size_t>(q)];
    x.started = c.started - p.started;
    x.wait_ns = c.wait_ns - p.wait_ns;
    x.exec_ns = c.exec_ns - p.exec_ns;
    x.attempts = c.attempts - p.attempts;
    x.conflict_aborts = c.conflict_aborts - p.conflict_aborts;
    x.commits = c.commits - p.commits;
    (*cur)[static_cast<size_t>(q)] = c;
  }
}

bool Scheduler::EarlyRebalance(int64_t now) {
  // The first placements of new busy references are blind (nothing learned
  // yet, and a row is seeded when its reference first leads, which for some
  // comes only after the first looks): a start that put two busy references
  // on one queue beside an idle one (online TPC-C: two warehouses on each of
  // two queues, or three on one, in most runs; the first 0.2-0.4 s at
  // 0.5-0.8x hard-partition) is mended by looks every quarter window during
  // the first window, each on its own quarter's loads, and only when the
  // queues are far apart: the busiest started at least 1.5x the mean and
  // the idlest at most a quarter of it. Splitting waits for whole windows
  // (a quarter window's aborts misjudge a hot key: a half first window cost
  // YCSB a quarter of its first phase).
  if (early_prev_.empty()) return false;
  const int n = num_queues_;
  std::vector<QueueLoad> cur, d;
  WindowLoads(early_prev_, &cur, &d);
  const int64_t len_ns = now - early_prev_ns_;
  early_prev_ = cur;
  early_prev_ns_ = now;
  if (schedule_->policy().kind != PolicyKind::kLearned) return false;
  int64_t sum = 0, hi = 0, lo = std::numeric_limits<int64_t>::max();
  for (int q = 0; q < n; ++q) {
    const int64_t s = static_cast<int64_t>(d[q].started);
    sum += s;
    hi = std::max(hi, s);
    lo = std::min(lo, s);
  }
  if (2 * hi * n < 3 * sum || 4 * lo * n > sum) return false;
  if (!Rebalance(d, len_ns, /*early=*/true)) return false;
  // The first window is measured from the move.
  split_prev_ = early_prev_;  // the loads now
  split_prev_ns_ = now;
  next_split_ns_ = now + options_.split.window_ns;
  return true;
}

bool Scheduler::Rebalance(const std::vector<QueueLoad>& d, int64_t window_ns, bool early) {
  const RebalanceRule& rule = options_.split.rebalance_rule;
  // The last moves are measured first; not an early look's (they are a
  // quarter window apart, each on loads the last move already shaped; the
  // references moved stay put: RebalanceRule's moved_lately).
  if (!early && ++rebalance_since_ <= rule.cooldown_windows) return false;
  const int n = num_queues_;
  std::vector<int64_t> started(n);
  std::vector<bool> movable(n, true);
  int64_t sum = 0;
  for (int q = 0; q < n; ++q) {
    started[q] = static_cast<int64_t>(d[q].started);
    sum += started[q];
  }
  if (sum < options_.split.min_started * n) return false;  // too little to say
  for (const SplitEntry& e : split_) {
    for (int q : e.queues) movable[q] = false;
  }
  const int64_t window_commits = WindowCommits(d);
  std::vector<RefId> moved;
  rule.PlanMoves(started, movable, [&](int hi, int lo, int64_t est_hi, int64_t est_lo) -> double {
    // hi's leads, heaviest first, with their loads (RebalanceRule::PickLead);
    // a lead moved in this window is not a candidate again.
    HotSpots::Lead leads[HotSpots::kLeadSlots];
    const int num_leads = hot_spots_->Leads(hi, leads);
    std::vector<RebalanceRule::LeadCandidate> cands;
    std::vector<state::State::Info> infos;
    for (int i = 0; i < num_leads; ++i) {
      state::State::Info info;
      if (!state_->Get(leads[i].ref, &info) || info.total == 0) info = state::State::Info();
      const bool gone = std::find(moved.begin(), moved.end(), leads[i].ref) != moved.end();
      RebalanceRule::LeadCandidate c;
      c.weight = info.total == 0 || gone ? 0 : leads[i].weight;  // no row: nothing to move
      // Its transactions a window, from its smoothed arrival rate.
      c.load = info.rate_per_s * static_cast<double>(window_ns) / 1e9;
      c.hot = options_.split.rule.Candidate(c.load, window_commits, n);
      c.moved_lately = rebalance_since_ < 5 * rule.cooldown_windows &&
                       std::find(rebalance_last_.begin(), rebalance_last_.end(), leads[i].ref) !=
                           rebalance_last_.end();
      cands.push_back(c);
      infos.push_back(info);
    }
    const int pick = rule.PickLead(est_hi, est_lo, cands);
    if (pick < 0) return -1;
    const RefId lead = leads[pick].ref;
    const state::State::Info& info = infos[static_cast<size_t>(pick)];
    const double lead_load = cands[static_cast<size_t>(pick)].load;
    std::vector<uint64_t> row(static_cast<size_t>(n), 0);
    row[static_cast<size_t>(lo)] = info.total;
    state_->Set(lead, row);
    moved.push_back(lead);
    rebalance_moves_.fetch_add(1, std::memory_order_relaxed);
    Log(absl::StrFormat("rebalance: ref %016x queue %d -> %d (window: %lld vs %lld transactions started, "
                        "mean %.0f; the reference ~%.0f)",
                        lead.value(), hi, lo, static_cast<long long>(est_hi),
                        static_cast<long long>(est_lo), static_cast<double>(sum) / n, lead_load));
    return lead_load;
  });
  if (moved.empty()) return false;
  rebalance_last_ = std::move(moved);
  // After an early look the first window may move again.
  rebalance_since_ = early ? rule.cooldown_windows : 0;
  return true;
}

void Scheduler::AutoStep(int64_t now) {
  if (!auto_measuring_) {
    if (now < auto_measure_from_ns_) return;  // settling after a switch
    auto_measuring_ = true;
    auto_measure_from_ns_ = now;
    auto_commits0_ = CommitsSoFar(&auto_aborts0_);
    if (mix_ != nullptr) mix_->StartWindow();  // not the settling transactions
    return;
  }
  if (now - auto_measure_from_ns_ < options_.autopolicy.window_ns) return;
  uint64_t aborts = 0;
  const uint64_t commits = CommitsSoFar(&aborts);
  const double reward = static_cast<double>(commits - auto_commits0_) * 1e9 /
                        static_cast<double>(now - auto_measure_from_ns_);
  const uint64_t attempts = (commits - auto_commits0_) + (aborts - auto_aborts0_);
  const double abort_rate =
      attempts > 0 ? static_cast<double>(aborts - auto_aborts0_) / static_cast<double>(attempts) : -1.0;
  int mix_off = -1;
  MixShift::Window mw;
  if (mix_ != nullptr) {
    mw = mix_->EndWindow();
    if (mw.measured) mix_off = mw.off ? 1 : 0;
  }
  const int from_arm = bandit_->current();
  const PolicyBandit::Step step = bandit_->Update(reward, abort_rate, mix_off);
  if (step.shifted && mix_ != nullptr) {
    mix_->Rebase();  // the mix of the window that found the shift is the new base
    if (mix_off == 1) Log(absl::StrCat("auto: ", mw.Describe()));
  }
  if (!step.switched) {
    auto_measure_from_ns_ = now;  // the next window starts at once
    auto_commits0_ = commits;
    auto_aborts0_ = aborts;
    return;
  }
  const std::string from = PolicyName(arms_[from_arm]);
  const std::string to = PolicyName(arms_[step.arm]);
  schedule_->SetPolicy(arms_[step.arm]);
  const std::string reason = absl::StrFormat("window %.0f tps; %s", reward, step.reason);
  {
    std::lock_guard<std::mutex> sl(switches_mu_);
    switches_.push_back(SwitchEvent{now, from, to, reason});
  }
  switch_count_.fetch_add(1, std::memory_order_relaxed);
  Log(absl::StrCat("auto: ", from, " -> ", to, " (", reason, ")"));
  auto_measuring_ = false;
  auto_measure_from_ns_ = now + options_.autopolicy.settle_ns;
}

WorkerStats Scheduler::Stats() const {
  return pool_ == nullptr ? WorkerStats() : pool_->TotalStats();
}

WorkerStats Scheduler::WorkerStatsOf(int worker) const {
  return pool_ == nullptr ? WorkerStats() : pool_->Stats(worker);
}

}  // namespace scheduler
}  // namespace corral
