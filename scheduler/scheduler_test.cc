#include "scheduler/scheduler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/fake_clock.h"
#include "common/tsan_visible_mutex.h"
#include "gtest/gtest.h"

namespace corral {
namespace scheduler {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr int kPerProducer = 1500;
#else
constexpr int kPerProducer = 20000;
#endif

// Conflicts on roughly one attempt in four (deterministic per txn and
// attempt), user-aborts type 3, fails type 4; counts what it saw.
class FakeExecutor : public Executor {
 public:
  ExecResult Execute(Txn& t) override {
    attempts.fetch_add(1, std::memory_order_relaxed);
    const uint64_t h = Mix64(t.partition_key * 131 + t.attempts);
    if (t.type.value() == 3) return ExecResult::UserAbort();
    if (t.type.value() == 4) return ExecResult::Failed(absl::InternalError("boom"));
    if (h % 4 == 0) {
      conflicts.fetch_add(1, std::memory_order_relaxed);
      if (t.placed_by == shared_ref) conflicts_placed_by_shared.fetch_add(1, std::memory_order_relaxed);
      if (t.placed_by.value() != 0) conflicts_placed.fetch_add(1, std::memory_order_relaxed);
      return ExecResult::Conflict(h % 8 == 0 ? AbortCause::kValidation : AbortCause::kLockConflict);
    }
    commits.fetch_add(1, std::memory_order_relaxed);
    return ExecResult::Commit();
  }
  std::atomic<uint64_t> attempts{0}, conflicts{0}, commits{0};
  // Conflicts of transactions a lead placed on one queue (Txn::placed_by),
  // and of those the lead `shared_ref` placed.
  std::atomic<uint64_t> conflicts_placed{0}, conflicts_placed_by_shared{0};
  RefId shared_ref{0};
};

TEST(SchedulerTest, CreateValidates) {
  Scheduler::Options o;
  o.num_queues = 2;
  FakeExecutor e;
  EXPECT_FALSE(Scheduler::Create(o, {&e}).ok());
  auto routing = Scheduler::Create(o, {});
  ASSERT_TRUE(routing.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition((*routing)->Submit(std::make_unique<Txn>())));
  EXPECT_FALSE((*routing)->Start().ok());
}

TEST(SchedulerTest, RoutingOnlyForTheProxy) {
  Scheduler::Options o;
  o.num_queues = 4;
  auto s = Scheduler::Create(o, {}).value();
  Txn t;
  t.refs = {RefId::Of("w_id=3")};
  const QueueId q = s->Route(t);
  EXPECT_EQ(t.queue, q);
  EXPECT_GT(t.decision_start_ns, 0);
  s->ReportOutcome(t, Outcome::kConflictAbort);
  s->ReportOutcome(t, Outcome::kConflictAbort);
  s->ReportOutcome(t, Outcome::kUserAbort);
  history::History::Counts c;
  ASSERT_TRUE(s->history().Get(t.refs[0], &c));
  EXPECT_EQ(c.aborts, 2u);
  // The learned affinity now keeps w_id=3 on one queue. (Scoring-only State,
  // the default: w_id=3 got no row while it could not score, so its first
  // scoring placement picks the queue by the default rule.)
  QueueId home(-1);
  for (int i = 0; i < 10; ++i) {
    Txn u;
    u.refs = {RefId::Of("w_id=3"), RefId(100 + i)};
    const QueueId got = s->Route(u);
    if (i == 0) home = got;
    EXPECT_EQ(got, home);
  }
  uint64_t row[4];
  ASSERT_TRUE(s->state().ReadRow(RefId::Of("w_id=3"), row));
  EXPECT_EQ(row[home.value()], 10u);
  EXPECT_FALSE(s->state().ReadRow(RefId(100), row));  // never scored: no row
  s->history().Freeze();
  s->ReportOutcome(t, Outcome::kCommitted);
  ASSERT_TRUE(s->history().Get(t.refs[0], &c));
  EXPECT_EQ(c.commits, 0u);
}

// Several producers, executors that conflict sometimes, stealing on: every
// submitted transaction completes exactly once and the History holds exactly
// the attempts the executors saw.
TEST(SchedulerTest, ConcurrentStressExactCounts) {
  constexpr int kQueues = 4, kProducers = 3;
  Scheduler::Options o;
  o.num_queues = kQueues;
  o.policy = ParsePolicy("count-sum-canonical-single").value();
  o.stealing = true;
  o.schedule.state_scoring_only = false;  // rows for every reference: exact counts below
  o.schedule.lead_seeds_rows = false;     // every placement counts in every row (no reinforce-only)
  o.schedule.lead_attributed_aborts = true;
  std::vector<FakeExecutor> execs(kQueues);
  std::vector<Executor*> ptrs;
  for (auto& e : execs) ptrs.push_back(&e);
  for (auto& e : execs) e.shared_ref = RefId::Of("shared=1");
  const int total = kProducers * kPerProducer;
  std::vector<std::atomic<int>> done(total);
  std::atomic<uint64_t> hook_attempts{0};
  auto hook = [&](std::unique_ptr<Txn> t, const ExecResult& r, int worker) {
    done[t->partition_key].fetch_add(1);
    hook_attempts.fetch_add(t->attempts);
    if (t->type.value() == 3) {
      EXPECT_EQ(r.outcome, Outcome::kUserAbort);
    }
  };
  auto s = Scheduler::Create(o, ptrs, hook).value();
  ASSERT_TRUE(s->Start().ok());
  const RefId shared = RefId::Of("shared=1");
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        auto t = std::make_unique<Txn>();
        t->partition_key = p * kPerProducer + i;
        t->type = TxnTypeId(i % 50 == 0 ? 3 : i % 97 == 0 ? 4 : 1);
        t->refs = {shared, RefId::Of("w_id=" + std::to_string(i % 7))};
        ASSERT_TRUE(s->Submit(std::move(t)).ok());
        if (i == kPerProducer / 2 && p == 0) s->SetPolicy(ParsePolicy("fraction-max-literal-all").value());
      }
    });
  }
  for (auto& t : producers) t.join();
  s->Stop();
  for (int i = 0; i < total; ++i) ASSERT_EQ(done[i].load(), 1) << i;

  uint64_t attempts = 0, conflicts = 0, commits = 0, placed = 0, placed_by_shared = 0;
  for (auto& e : execs) {
    attempts += e.attempts;
    conflicts += e.conflicts;
    commits += e.commits;
    placed += e.conflicts_placed;
    placed_by_shared += e.conflicts_placed_by_shared;
  }
  const WorkerStats st = s->Stats();
  EXPECT_EQ(st.txns, static_cast<uint64_t>(total));
  EXPECT_EQ(st.attempts, attempts);
  EXPECT_EQ(hook_attempts.load(), attempts);
  EXPECT_EQ(st.commits, commits);
  EXPECT_EQ(st.conflict_aborts, conflicts);
  EXPECT_EQ(st.commits + st.user_aborts + st.failures, static_cast<uint64_t>(total));
  EXPECT_GT(st.user_aborts, 0u);
  EXPECT_GT(st.failures, 0u);
  EXPECT_EQ(st.latency.count(), st.commits);
  EXPECT_EQ(st.aborts_by_cause[static_cast<int>(AbortCause::kValidation)] +
                st.aborts_by_cause[static_cast<int>(AbortCause::kLockConflict)],
            conflicts);
  EXPECT_EQ(st.per_type.at(1).user_aborts, 0u);
  EXPECT_GT(st.per_type.at(1).commits, 0u);
  EXPECT_EQ(st.per_type.at(3).user_aborts + st.per_type.at(4).failures,
            st.user_aborts + st.failures);
  // History: the shared reference saw every commit, and every conflict abort
  // but those of transactions it placed itself (an abort there came from
  // another queue: evidence for the transaction's other references, not for
  // the lead that serialized it; Scheduler's header).
  history::History::Counts c;
  ASSERT_TRUE(s->history().Get(shared, &c));
  EXPECT_EQ(c.commits, commits);
  EXPECT_EQ(c.aborts, conflicts - placed_by_shared);
  EXPECT_GT(placed, 0u);
  uint64_t sum = 0, w_aborts = 0;
  for (int w = 0; w < 7; ++w) {
    ASSERT_TRUE(s->history().Get(RefId::Of("w_id=" + std::to_string(w)), &c));
    sum += c.commits + c.aborts;
    w_aborts += c.aborts;
  }
  EXPECT_EQ(sum - w_aborts, commits);
  // Each abort counted for both references but the one that placed it.
  EXPECT_EQ(w_aborts + conflicts - placed_by_shared, 2 * conflicts - placed);
  // State saw every placement of the shared reference.
  state::State::Info info;
  ASSERT_TRUE(s->state().Get(shared, &info));
  EXPECT_EQ(info.total, static_cast<uint64_t>(total));
  int64_t totals = 0;
  for (int q = 0; q < kQueues; ++q) totals += s->state().Total(QueueId(q));
  EXPECT_EQ(totals, 2 * total);  // two distinct references per placement
  EXPECT_TRUE(absl::IsFailedPrecondition(s->Submit(std::make_unique<Txn>())));
}

TEST(SchedulerTest, MaxAttemptsGivesUp) {
  class AlwaysConflict : public Executor {
    ExecResult Execute(Txn&) override { return ExecResult::Conflict(AbortCause::kDeadlock); }
  } e;
  Scheduler::Options o;
  o.num_queues = 1;
  o.workers.max_attempts = 5;
  o.workers.backoff = true;
  o.workers.backoff_base_ns = 100;
  o.workers.backoff_max_ns = 1000;
  TsanVisibleMutex mu;
  std::vector<Outcome> outs;
  auto s = Scheduler::Create(o, {&e}, [&](std::unique_ptr<Txn> t, const ExecResult& r, int) {
             TsanVisibleMutexLock l(&mu);
             outs.push_back(r.outcome);
             EXPECT_EQ(t->attempts, 5);
           }).value();
  ASSERT_TRUE(s->Start().ok());
  auto t = std::make_unique<Txn>();
  t->refs = {RefId::Of("k=1")};
  ASSERT_TRUE(s->Submit(std::move(t)).ok());
  s->Stop();
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0], Outcome::kConflictAbort);
  const WorkerStats st = s->Stats();
  EXPECT_EQ(st.gave_up, 1u);
  EXPECT_EQ(st.aborts_by_cause[static_cast<int>(AbortCause::kDeadlock)], 5u);
  history::History::Counts c;
  ASSERT_TRUE(s->history().Get(RefId::Of("k=1"), &c));
  EXPECT_EQ(c.aborts, 5u);
}

TEST(SchedulerTest, StealingOffKeepsTransactionsOnTheirQueue) {
  class Recorder : public Executor {
   public:
    explicit Recorder(int id) : id_(id) {}
    ExecResult Execute(Txn& t) override {
      if (t.queue.value() != id_) wrong.fetch_add(1);
      return ExecResult::Commit();
    }
    std::atomic<int> wrong{0};

   private:
    int id_;
  };
  Recorder a(0), b(1);
  Scheduler::Options o;
  o.num_queues = 2;
  o.stealing = false;
  o.policy = ParsePolicy("hard-partition").value();
  auto s = Scheduler::Create(o, {&a, &b}).value();
  ASSERT_TRUE(s->Start().ok());
  for (int i = 0; i < 200; ++i) {
    auto t = std::make_unique<Txn>();
    t->partition_key = i;
    ASSERT_TRUE(s->Submit(std::move(t)).ok());
  }
  s->Stop();
  EXPECT_EQ(a.wrong.load() + b.wrong.load(), 0);
  EXPECT_EQ(s->Stats().steals, 0u);
  EXPECT_EQ(s->WorkerStatsOf(0).commits, 100u);
}

// A Submit refused by a full run queue leaves no State counts behind.
TEST(SchedulerTest, RefusedSubmitLeavesNoStateCounts) {
  FakeExecutor e0, e1;
  Scheduler::Options o;
  o.num_queues = 2;
  o.queue_capacity = 1;
  auto s = Scheduler::Create(o, {&e0, &e1}).value();  // not started: nothing is popped
  // Two scoring references; each seeds its row on a queue of its own (the
  // fewest seeded), so each queue takes one transaction and refuses the
  // rest. k=2 counts in the totals only.
  const RefId r[2] = {RefId::Of("k=1"), RefId::Of("k=3")};
  s->history().Add(r[0], 1, 0);
  s->history().Add(r[1], 1, 0);
  int accepted = 0, refused = 0;
  for (int i = 0; i < 6; ++i) {
    auto t = std::make_unique<Txn>();
    t->refs = {r[i % 2], RefId::Of("k=2"), r[i % 2]};
    const absl::Status st = s->Submit(std::move(t));
    if (st.ok()) {
      ++accepted;
    } else {
      EXPECT_TRUE(absl::IsResourceExhausted(st)) << st;
      ++refused;
    }
  }
  EXPECT_EQ(accepted, 2);
  EXPECT_EQ(refused, 4);
  uint64_t row0[2], row1[2];
  ASSERT_TRUE(s->state().ReadRow(r[0], row0));
  ASSERT_TRUE(s->state().ReadRow(r[1], row1));
  EXPECT_EQ(row0[0] + row0[1], 1u);
  EXPECT_EQ(row1[0] + row1[1], 1u);
  EXPECT_EQ(row0[0] + row1[0], 1u);  // one row on each queue
  EXPECT_EQ(s->state().Total(QueueId(0)), 2);
  EXPECT_EQ(s->state().Total(QueueId(1)), 2);
  EXPECT_EQ(s->run_queues()->TotalSize(), 2);
}


TEST(SchedulerOnlineTest, AgingDecaysHistoryAndStateTogether) {
  FakeClock clock;
  Scheduler::Options o;
  o.num_queues = 4;
  o.history.half_life_ns = 1000000000;
  auto s = Scheduler::Create(o, {}, nullptr, &clock).value();
  const RefId hot = RefId::Of("w_id=1");
  s->history().Add(hot, 400, 0);
  for (int i = 0; i < 64; ++i) {
    Txn t;
    t.refs = {hot};
    s->Route(t);
  }
  uint64_t row[4];
  ASSERT_TRUE(s->state().ReadRow(hot, row));
  const int home = static_cast<int>(std::max_element(row, row + 4) - row);
  EXPECT_EQ(row[home], 64u);
  clock.Advance(1000000000);
  s->Tick();
  history::History::Counts c;
  ASSERT_TRUE(s->history().Get(hot, &c));
  EXPECT_EQ(c.aborts, 200u);
  ASSERT_TRUE(s->state().ReadRow(hot, row));
  EXPECT_EQ(row[home], 32u);
  EXPECT_EQ(s->state().Total(QueueId(home)), 32);
}

// With workers, ticks run on the ticker thread: the History ages while no
// transaction is submitted, and Submit runs none (background_tick off: the
// first Submit after the half-life ages it, as Route does).
TEST(SchedulerOnlineTest, AgingRunsOnTheTickerNotInSubmit) {
  const RefId hot = RefId::Of("w_id=1");
  for (bool background : {true, false}) {
    FakeClock clock;
    FakeExecutor e0, e1;
    Scheduler::Options o;
    o.num_queues = 2;
    o.history.half_life_ns = 1000000000;
    o.tick_ns = 2000000;
    o.background_tick = background;
    auto s = Scheduler::Create(o, {&e0, &e1}, nullptr, &clock).value();
    s->history().Add(hot, 400, 0);
    ASSERT_TRUE(s->Start().ok());
    clock.Advance(1000000000);
    history::History::Counts c;
    if (background) {
      // Waits for the ticker (every 1 ms of real time); no Submit meanwhile.
      for (int i = 0; i < 60000; ++i) {
        ASSERT_TRUE(s->history().Get(hot, &c));
        if (c.aborts < 400) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      ASSERT_TRUE(s->history().Get(hot, &c));
      EXPECT_EQ(c.aborts, 200u);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ASSERT_TRUE(s->history().Get(hot, &c));
      EXPECT_EQ(c.aborts, 400u);  // nobody ticked
      auto t = std::make_unique<Txn>();
      t->refs = {RefId::Of("k=1")};
      ASSERT_TRUE(s->Submit(std::move(t)).ok());
      ASSERT_TRUE(s->history().Get(hot, &c));
      EXPECT_EQ(c.aborts, 200u);
    }
    s->Stop();
  }
}

TEST(SchedulerTest, ConflictAbortsCountAsTheLeadThatPlacedThemSays) {
  const RefId lead = RefId::Of("w_id=1"), other = RefId::Of("d_id=3");
  auto aborts_after = [&](RefId placed_by, bool split) {
    history::History h;
    Txn t;
    t.refs = {lead, other};
    t.placed_by = placed_by;
    t.placed_split = split;
    RecordConflictAbort(h, t);
    history::History::Counts c;
    std::pair<uint64_t, uint64_t> out{0, 0};
    if (h.Get(lead, &c)) out.first = c.aborts;
    if (h.Get(other, &c)) out.second = c.aborts;
    return out;
  };
  EXPECT_EQ(aborts_after(RefId(0), false), std::make_pair(uint64_t{1}, uint64_t{1}));  // no lead: all
  EXPECT_EQ(aborts_after(lead, false), std::make_pair(uint64_t{0}, uint64_t{1}));     // spared
  EXPECT_EQ(aborts_after(lead, true), std::make_pair(uint64_t{1}, uint64_t{0}));      // split: alone
}

// Commits every attempt.
class CommitExecutor : public Executor {
 public:
  ExecResult Execute(Txn&) override { return ExecResult::Commit(); }
};

// Four queues of CommitExecutors, stealing off, ticks run in Submit on a
// fake clock, hot-spot splitting on (200 ms windows, rebalancing on).
struct SplitTestSetup {
  std::vector<CommitExecutor> execs{4};
  std::vector<Executor*> ptrs;
  Scheduler::Options o;
  SplitTestSetup() {
    for (auto& e : execs) ptrs.push_back(&e);
    o.num_queues = 4;
    o.stealing = false;
    o.background_tick = false;
    o.tick_ns = 1000000;
    o.split.enabled = true;
  }
};

// A start that placed two busy references on one queue beside an idle one
// is mended by an early look a quarter window in, before the first split
// window; a start whose queues are even is left alone.
TEST(SchedulerOnlineTest, EarlyLookMovesADoubledUpReferenceToAnIdleQueue) {
  const RefId r[4] = {RefId::Of("w_id=1"), RefId::Of("w_id=2"), RefId::Of("w_id=3"), RefId::Of("w_id=4")};
  for (bool doubled : {true, false}) {
    SCOPED_TRACE(doubled ? "two references on queue 0, queue 3 idle" : "one reference a queue");
    FakeClock clock;
    SplitTestSetup setup;
    Scheduler::Options& o = setup.o;
    std::vector<Executor*>& ptrs = setup.ptrs;
    std::vector<std::string> logged;
    o.log = [&logged](const std::string& line) { logged.push_back(line); };
    std::atomic<int> done{0};
    auto hook = [&](std::unique_ptr<Txn>, const ExecResult&, int) { done.fetch_add(1); };
    auto s = Scheduler::Create(o, ptrs, hook, &clock).value();
    // Equal learned weights; rows: r0 and r1 on queue 0 (doubled) or on
    // queues 0 and 3, r2 on 1, r3 on 2.
    const int home[4] = {0, doubled ? 0 : 3, 1, 2};
    for (int i = 0; i < 4; ++i) {
      s->history().Add(r[i], 100, 0);
      std::vector<uint64_t> row(4, 0);
      row[home[i]] = 50;
      s->state().Set(r[i], row);
    }
    ASSERT_TRUE(s->Start().ok());
    // 40 ms of arrivals, 100 per reference (in turn: the Schedule samples
    // every 8th decision's lead), so each reference's rate is known.
    const int kTxns = 400;
    for (int i = 0; i < kTxns; ++i) {
      auto t = std::make_unique<Txn>();
      t->refs = {r[i / 100]};
      ASSERT_TRUE(s->Submit(std::move(t)).ok());
      clock.Advance(100000);
    }
    for (int i = 0; i < 60000 && done.load() < kTxns; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(done.load(), kTxns);
    EXPECT_EQ(s->rebalance_moves(), 0);  // no look yet
    // A quarter window (50 ms) in: the next decision's tick looks.
    clock.Advance(11000000);
    auto t = std::make_unique<Txn>();
    t->refs = {r[2]};
    ASSERT_TRUE(s->Submit(std::move(t)).ok());
    if (!doubled) {
      EXPECT_EQ(s->rebalance_moves(), 0);
      EXPECT_TRUE(logged.empty());
      s->Stop();
      continue;
    }
    EXPECT_EQ(s->rebalance_moves(), 1);
    ASSERT_EQ(logged.size(), 1u);
    EXPECT_NE(logged[0].find("queue 0 -> 3"), std::string::npos) << logged[0];
    // One of the two now has its row on queue 3, the other stays on 0.
    uint64_t row0[4], row1[4];
    ASSERT_TRUE(s->state().ReadRow(r[0], row0));
    ASSERT_TRUE(s->state().ReadRow(r[1], row1));
    EXPECT_EQ((row0[3] > 0) + (row1[3] > 0), 1);
    EXPECT_EQ((row0[0] > 0) + (row1[0] > 0), 1);
    s->Stop();
  }
}

// A baseline policy (auto exploring original or hard-partition) neither
// consults nor measures the split table, and leaves it as the learned
// policy left it: the learned arm's next trial resumes on its k queues
// instead of starting unsplit (online TPC-C's hot phase: count-max's 4-queue
// split ran at 14.7k, its trial after the baselines, cleared, at 7.9k).
TEST(SchedulerOnlineTest, ABaselinePolicyKeepsTheSplitTableForTheLearnedOne) {
  FakeClock clock;
  SplitTestSetup setup;
  std::atomic<int> done{0};
  auto hook = [&](std::unique_ptr<Txn>, const ExecResult&, int) { done.fetch_add(1); };
  auto s = Scheduler::Create(setup.o, setup.ptrs, hook, &clock).value();
  ASSERT_TRUE(s->Start().ok());
  const RefId hot = RefId::Of("w_id=1");
  ASSERT_TRUE(s->hot_spots()->Set(hot, {0, 1, 2}));
  EXPECT_EQ(s->HotQueues(), 3);
  int submitted = 0;
  auto windows = [&](int n) {  // n split windows, a decision in each
    for (int w = 0; w < n; ++w) {
      clock.Advance(210000000);
      auto t = std::make_unique<Txn>();
      t->refs = {RefId::Of("w_id=2")};
      ASSERT_TRUE(s->Submit(std::move(t)).ok());
      ++submitted;
    }
  };
  s->SetPolicy(ParsePolicy("original").value());
  windows(3);
  EXPECT_EQ(s->HotQueues(), 1);  // not routed over meanwhile
  EXPECT_EQ(s->hot_spots()->Get(hot), (std::vector<int>{0, 1, 2}));
  s->SetPolicy(ParsePolicy("count-max-canonical-single").value());
  EXPECT_EQ(s->HotQueues(), 3);
  for (int i = 0; i < 60000 && done.load() < submitted; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(done.load(), submitted);
  s->Stop();
}

// Routing-only options with splitting on (4 queues, 1 ms ticks, no
// rebalancing), the log kept in *logged.
Scheduler::Options RoutingSplitOptions(std::vector<std::string>* logged) {
  Scheduler::Options o;
  o.num_queues = 4;
  o.tick_ns = 1000000;
  o.split.enabled = true;
  o.split.rebalance = false;
  o.log = [logged](const std::string& line) { logged->push_back(line); };
  return o;
}

// One routed transaction as the proxy reports it: started on q after
// wait_ns, `aborts` conflicting attempts then a commit, attempt_ns each.
void ReportRun(RoutedLoads* loads, int q, int64_t wait_ns, int64_t attempt_ns, int aborts) {
  loads->Enqueued(q);
  loads->Dequeued(q);
  loads->Started(q, wait_ns);
  for (int a = 0; a < aborts; ++a) loads->Attempt(q, attempt_ns, Outcome::kConflictAbort);
  loads->Attempt(q, attempt_ns, Outcome::kCommitted);
  loads->Stopped(q);
}

// Routing only (the proxy), split on: the caller's reports into
// routed_loads() drive the split windows. A reference whose queue waits far
// longer than the others, with no conflicts, is split over more queues and
// its transactions go to several of them; once the split costs retries
// worth more than the wait it saved, it goes back to one queue.
TEST(SchedulerOnlineTest, RoutingOnlySplitsOnTheCallersReportedLoads) {
  FakeClock clock;
  std::vector<std::string> logged;
  auto s = Scheduler::Create(RoutingSplitOptions(&logged), {}, nullptr, &clock).value();
  RoutedLoads* loads = s->routed_loads();
  ASSERT_NE(loads, nullptr);
  const RefId hot = RefId::Of("w_id=1");
  const RefId cold[3] = {RefId::Of("w_id=2"), RefId::Of("w_id=3"), RefId::Of("w_id=4")};
  s->history().Add(hot, 100, 0);
  for (int i = 0; i < 3; ++i) s->history().Add(cold[i], 100, 0);
  for (int i = 0; i < 4; ++i) {
    std::vector<uint64_t> row(4, 0);
    row[i] = 50;
    s->state().Set(i == 0 ? hot : cold[i - 1], row);
  }
  // One 200 ms window: 60 decisions led by `hot`, 10 by each cold one,
  // each reported as the proxy would (waited, started, one attempt, left).
  // Queue `slow_q`'s transactions wait 2 ms, others 100 us; an attempt takes
  // attempt_ns and conflicts `aborts` times before it commits.
  std::set<int> hot_queues;
  auto window = [&](int slow_q, int64_t attempt_ns, int aborts) {
    hot_queues.clear();
    for (int i = 0; i < 90; ++i) {
      Txn t;
      const bool is_hot = i % 3 != 2;
      t.refs = {is_hot ? hot : cold[(i / 3) % 3], RefId(1000 + i)};
      const int q = s->Route(t).value();
      if (is_hot) hot_queues.insert(q);
      ReportRun(loads, q, q == slow_q ? 2000000 : 100000, attempt_ns, aborts);
      EXPECT_EQ(loads->Length(q), 0);
      clock.Advance(2200000);
    }
  };
  window(-1, 200000, 0);
  EXPECT_EQ(hot_queues, std::set<int>{0});  // its row's queue
  for (int w = 0; w < 6 && s->HotQueues() == 1; ++w) window(0, 200000, 0);
  ASSERT_GE(s->HotQueues(), 2);
  ASSERT_FALSE(logged.empty());
  EXPECT_NE(logged[0].find("k 1 -> 2"), std::string::npos) << logged[0];
  EXPECT_EQ(s->hot_spots()->Get(hot).front(), 0);
  window(-1, 200000, 0);
  EXPECT_GE(hot_queues.size(), 2u);  // its decisions use its queue set
  // Now every attempt on its queues conflicts twice and takes 1 ms: the
  // retries cost more than the wait the split saved.
  for (int w = 0; w < 10 && s->HotQueues() > 1; ++w) window(-1, 1000000, 2);
  EXPECT_EQ(s->HotQueues(), 1);
  window(-1, 200000, 0);
  EXPECT_EQ(hot_queues, std::set<int>{0});
}

// The proxy's rule (require_gain) in the Scheduler: a split that only
// added retries (the hot reference's queues commit no more) is taken back,
// logged, and the reference is not split again until its hold is over,
// though its queue still waits.
TEST(SchedulerOnlineTest, RoutingOnlySplitWithNoGainIsHeldBack) {
  FakeClock clock;
  std::vector<std::string> logged;
  Scheduler::Options o = RoutingSplitOptions(&logged);
  o.split.rule.require_gain = true;
  o.split.rule.hold_windows = 4;
  auto s = Scheduler::Create(o, {}, nullptr, &clock).value();
  RoutedLoads* loads = s->routed_loads();
  const RefId hot = RefId::Of("aid=7");
  s->history().Add(hot, 100, 0);
  std::vector<uint64_t> row(4, 0);
  row[0] = 50;
  s->state().Set(hot, row);
  // A window of 60 decisions, all led by `hot`: queue 0 waits 2 ms; on a
  // split, every attempt conflicts once and the commits stay at 60.
  auto window = [&] {
    const int k = s->HotQueues();
    for (int i = 0; i < 60; ++i) {
      Txn t;
      t.refs = {hot, RefId(5000 + i)};
      const int q = s->Route(t).value();
      ReportRun(loads, q, k == 1 ? 2000000 : 100000, 200000, k > 1 ? 1 : 0);
      clock.Advance(3400000);
    }
  };
  // k after each window: 1 until it splits, 2 for the split's window,
  // then 1 for the hold (hold_windows windows: the candidate check at each
  // window's end), then 2 again (a probe).
  std::string ks;
  for (int w = 0; w < 14; ++w) {
    window();
    ks += std::to_string(s->HotQueues());
  }
  const size_t first = ks.find('2');
  ASSERT_NE(first, std::string::npos) << ks;
  const size_t back = ks.find('1', first);
  ASSERT_NE(back, std::string::npos) << ks;
  EXPECT_EQ(back, first + 1) << ks;  // taken back after one window
  const size_t again = ks.find('2', back);
  ASSERT_NE(again, std::string::npos) << ks;
  EXPECT_EQ(again - back, 4u) << ks;  // held 4 windows
  ASSERT_GE(logged.size(), 3u);
  EXPECT_NE(logged[1].find("no more commits, held 4 windows"), std::string::npos) << logged[1];
  EXPECT_NE(logged[2].find("k 1 -> 2"), std::string::npos) << logged[2];
}

// Routing-only options with auto on over the two named arms (4 queues,
// 200 ms windows, 50 ms settling), the log kept in *logged.
Scheduler::Options AutoOptions(const char* arm0, const char* arm1, std::vector<std::string>* logged) {
  Scheduler::Options o;
  o.num_queues = 4;
  o.autopolicy.enabled = true;
  o.autopolicy.arms = {ParsePolicy(arm0).value(), ParsePolicy(arm1).value()};
  o.autopolicy.window_ns = 200000000;
  o.autopolicy.settle_ns = 50000000;
  o.log = [logged](const std::string& line) { logged->push_back(line); };
  return o;
}

TEST(SchedulerOnlineTest, AutoPicksTheArmWithMoreCommitsAndLogsWhy) {
  FakeClock clock;
  std::vector<std::string> logged;
  const Scheduler::Options o = AutoOptions("original", "hard-partition", &logged);
  auto s = Scheduler::Create(o, {}, nullptr, &clock).value();
  EXPECT_TRUE(s->auto_policy());
  EXPECT_EQ(s->PolicyLabel(), "auto (original)");
  // Synthetic throughput: hard-partition commits twice as much per tick.
  for (int tick = 0; tick < 400; ++tick) {
    const int commits = s->policy().kind == PolicyKind::kHardPartition ? 20 : 10;
    for (int i = 0; i < commits; ++i) {
      Txn t;
      t.refs = {RefId(1 + i)};
      t.partition_key = i;
      s->Route(t);
      s->ReportOutcome(t, Outcome::kCommitted);
    }
    clock.Advance(50000000);
  }
  EXPECT_EQ(s->PolicyLabel(), "auto (hard-partition)");
  const auto switches = s->Switches();
  // The first switch is auto's start (from the Options' policy to arm 0).
  ASSERT_GE(switches.size(), 2u);
  EXPECT_EQ(s->switch_count(), static_cast<int64_t>(switches.size()));
  EXPECT_EQ(switches[0].from, "count-max-canonical-single");
  EXPECT_EQ(switches[0].to, "original");
  EXPECT_EQ(switches[1].from, "original");
  EXPECT_EQ(switches[1].to, "hard-partition");
  for (const auto& e : switches) EXPECT_FALSE(e.reason.empty());
  ASSERT_EQ(logged.size(), switches.size());
  EXPECT_NE(logged[1].find("auto: original -> hard-partition"), std::string::npos) << logged[1];
  // Having tried both, it stays on the better one (exploration of the worse
  // arm is rare: at most a few of the 400 ticks' windows).
  EXPECT_LE(switches.size(), 8u);
  // A fixed policy turns auto off.
  s->SetPolicy(ParsePolicy("count-max-canonical-single").value());
  EXPECT_FALSE(s->auto_policy());
  EXPECT_EQ(s->PolicyLabel(), "count-max-canonical-single");
}

// Phase A: hard-partition commits 200 per tick, original 100; phase B (from
// tick 200): original 300, hard-partition still 200, and reference 1, one of
// eight in A, is named by half the transactions. Hard-partition's throughput
// does not move, so only the reference mix shows the shift. Returns the
// ticks of B until auto runs original (400: not in 400).
int TicksUntilAutoSeesTheMixMove(bool mix) {
  FakeClock clock;
  std::vector<std::string> logged;
  Scheduler::Options o = AutoOptions("hard-partition", "original", &logged);
  o.autopolicy.mix = mix;
  auto s = Scheduler::Create(o, {}, nullptr, &clock).value();
  uint64_t unique = 1000;
  for (int tick = 0; tick < 600; ++tick) {
    const bool b = tick >= 200;
    const bool hp = s->policy().kind == PolicyKind::kHardPartition;
    if (tick == 200) {
      EXPECT_TRUE(hp) << "phase A ends on hard-partition";
    }
    if (b && !hp) {
      bool said = false;
      for (const std::string& l : logged) said |= l.find("reference mix off") != std::string::npos;
      EXPECT_EQ(said, mix);
      return tick - 200;
    }
    const int commits = hp ? 200 : (b ? 300 : 100);
    for (int i = 0; i < commits; ++i) {
      Txn t;
      t.refs = {RefId(b && i % 2 == 0 ? 1 : 1 + i % 8), RefId(++unique)};
      t.partition_key = i;
      s->Route(t);
      s->ReportOutcome(t, Outcome::kCommitted);
    }
    clock.Advance(50000000);
  }
  return 400;
}

TEST(SchedulerOnlineTest, AutoRetriesAStaleArmWhenTheReferenceMixMoves) {
  // Two windows off (and a settle), then the stale arm's re-trial.
  EXPECT_LE(TicksUntilAutoSeesTheMixMove(true), 15);
  EXPECT_GE(TicksUntilAutoSeesTheMixMove(false), 40);
}

}  // namespace
}  // namespace scheduler
}  // namespace corral
