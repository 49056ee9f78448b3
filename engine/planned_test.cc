// The planned protocols (calvin, planned, qstore, orthrus): refusal and
// re-plan of an access outside the declared set, wrong reconnaissance
// guesses, hot transfers without conflict aborts, Q-Store's deterministic
// order, Orthrus's CC threads, settings and lock granules.
#include "engine/engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "engine/cc.h"
#include "engine/engine_testing.h"
#include "engine/latch.h"
#include "gtest/gtest.h"

namespace corral {
namespace engine {
namespace {

using engine_testing::Clock;
using engine_testing::OneTableDb;
using engine_testing::OptionsFor;
using engine_testing::ParamName;
using engine_testing::RunToEnd;
using scheduler::AbortCause;
using scheduler::ExecResult;
using scheduler::Outcome;

// A transaction with a (possibly wrong) up-front declaration.
class DeclaredTxn : public ProcedureTxn {
 public:
  DeclaredTxn(std::function<absl::Status(Tx&)> run, std::function<void(AccessSet&)> declare)
      : run_(std::move(run)), declare_(std::move(declare)) {}
  absl::Status Run(Tx& tx) override { return run_(tx); }
  bool DeclareAccesses(AccessSet& set) const override {
    declare_(set);
    return true;
  }

 private:
  std::function<absl::Status(Tx&)> run_;
  std::function<void(AccessSet&)> declare_;
};

class PlannedTest : public ::testing::TestWithParam<std::string>, protected OneTableDb {
 protected:
  void Make(DatabaseOptions o, int keys, int64_t balance) {
    const DatabaseOptions p = OptionsFor(GetParam());
    o.protocol = p.protocol;
    o.orthrus_cc_threads = p.orthrus_cc_threads;
    o.qstore_placement = p.qstore_placement;
    o.qstore_learn_txns = p.qstore_learn_txns;
    o.qstore_execution = p.qstore_execution;
    MakeDb(o, keys, balance);
  }
  bool speculative() const { return OptionsFor(GetParam()).qstore_execution == "speculative"; }
};

// A declared set that misses a row: the access outside it is refused (the
// procedure sees a conflict status, nothing is read or written), the attempt
// is rolled back and re-planned, and the transaction then commits.
TEST_P(PlannedTest, AccessOutsideTheDeclaredSetIsRefusedAndReplanned) {
  Make({}, 3, 10);
  auto ex = db_->NewExecutor(0, {}).value();
  int refused = 0, calls = 0;
  DeclaredTxn t(
      [&](Tx& tx) -> absl::Status {
        ++calls;
        Row a, b;
        ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, 0, &a));
        a.AddInt(bal_, 1);
        absl::Status s = tx.ReadForUpdate(t_, 2, &b);  // not declared
        if (IsConflict(s)) ++refused;
        ENGINE_RETURN_IF_ERROR(s);
        b.AddInt(bal_, 1);
        return absl::OkStatus();
      },
      [&](AccessSet& set) { set.Write(t_, 0); });
  ExecResult r = ex->Execute(t);
  ASSERT_EQ(r.outcome, Outcome::kCommitted) << r.status;
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(ex->stats().replans, 1u);
  EXPECT_EQ(ex->stats().declared, 1u);
  EXPECT_EQ(ex->stats().recons, 1u);  // the re-plan's reconnaissance
  EXPECT_EQ(calls, 3);                // refused execution, recon, execution
  EXPECT_EQ(Peek(0), 11);             // the refused attempt's +1 was rolled back
  EXPECT_EQ(Peek(2), 11);
  EXPECT_EQ(ex->stats().total_conflicts(), 0u);
  // A read-only declaration does not cover a write.
  DeclaredTxn w([&](Tx& tx) -> absl::Status {
        Row a;
        ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, 1, &a));
        a.AddInt(bal_, 5);
        return absl::OkStatus();
      },
      [&](AccessSet& set) { set.Read(t_, 1); });
  ASSERT_EQ(ex->Execute(w).outcome, Outcome::kCommitted);
  EXPECT_EQ(ex->stats().replans, 2u);
  EXPECT_EQ(Peek(1), 15);
}

// Keys that depend on a read (row 0 names the row to bump): the
// reconnaissance run finds them; when the pointer changes between the
// reconnaissance and the execution, the execution strays outside its locks
// and the transaction re-plans, bumping the row the pointer names at
// execution.
TEST_P(PlannedTest, WrongReconnaissanceGuessIsReplanned) {
  Make({}, 4, 0);
  auto a = db_->NewExecutor(0, {}).value();
  auto b = db_->NewExecutor(1, {}).value();
  // Row 0 points at row 1.
  ASSERT_EQ(b->Run([&](Tx& tx) -> absl::Status {
              Row p;
              ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, 0, &p));
              p.SetInt(bal_, 1);
              return absl::OkStatus();
            }, nullptr).outcome,
            Outcome::kCommitted);
  int calls = 0;
  ExecResult r = a->Run([&](Tx& tx) -> absl::Status {
    ++calls;
    ConstRow p;
    ENGINE_RETURN_IF_ERROR(tx.Read(t_, 0, &p));
    const uint64_t target = static_cast<uint64_t>(p.GetInt(bal_));
    if (calls == 1) {
      // During the first (reconnaissance) run, another transaction moves
      // the pointer to row 3.
      ExecResult moved = b->Run([&](Tx& tx2) -> absl::Status {
        Row q;
        ENGINE_RETURN_IF_ERROR(tx2.ReadForUpdate(t_, 0, &q));
        q.SetInt(bal_, 3);
        return absl::OkStatus();
      }, nullptr);
      if (moved.outcome != Outcome::kCommitted) return absl::InternalError("move failed");
    }
    Row x;
    ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, target, &x));
    x.AddInt(bal_, 100);
    return absl::OkStatus();
  }, nullptr);
  ASSERT_EQ(r.outcome, Outcome::kCommitted) << r.status;
  EXPECT_EQ(Peek(1), 0);    // the stale guess was never written
  EXPECT_EQ(Peek(3), 100);  // the row named at execution was
  EXPECT_EQ(a->stats().recons, 2u);
  EXPECT_EQ(a->stats().replans, 1u);
  EXPECT_EQ(a->stats().declared, 0u);
  EXPECT_EQ(calls, 4);  // recon, stray execution, recon, execution
}

// Hot-key transfers with crossed orders under contention: no transaction is
// ever aborted by concurrency control (no deadlocks, no retries), user
// aborts are outcomes, and money is conserved. Calvin also under
// count-based batching. Speculative qstore: the only aborts are cascades
// (a transaction that read a user-aborted one's write), retried here.
TEST_P(PlannedTest, HotTransfersNeverConflictAbort) {
  DatabaseOptions o;
  o.calvin_batch_txns = 3;
  o.qstore_batch_txns = 3;
  o.qstore_planners = 2;
  Make(o, 8, 100);
  std::atomic<int> commits{0}, user_aborts{0}, other{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      auto ex = db_->NewExecutor(w, {}).value();
      std::mt19937_64 rng(w + 11);
      for (int i = 0; i < 300; ++i) {
        uint64_t from = rng() % 3, to = (from + 1 + rng() % 7) % 8;  // 0..2 hot
        int64_t amount = 1 + rng() % 60;
        DeclaredTxn t(
            [&](Tx& tx) -> absl::Status {
              Row x, y;
              ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, from, &x));
              ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, to, &y));
              if (x.GetInt(bal_) < amount) return UserAbortError("insufficient");
              x.AddInt(bal_, -amount);
              y.AddInt(bal_, amount);
              return absl::OkStatus();
            },
            [&](AccessSet& set) {
              set.Write(t_, to);  // declared out of order on purpose
              set.Write(t_, from);
            });
        ExecResult r = ex->Execute(t);
        while (speculative() && r.outcome == Outcome::kConflictAbort && r.cause == AbortCause::kCascade) {
          r = ex->Execute(t);
        }
        if (r.outcome == Outcome::kCommitted) {
          ++commits;
        } else if (r.outcome == Outcome::kUserAbort) {
          ++user_aborts;
        } else {
          ++other;
        }
      }
      const uint64_t cascades = ex->stats().conflicts[static_cast<size_t>(AbortCause::kCascade)];
      EXPECT_EQ(ex->stats().total_conflicts(), cascades);
      if (!speculative()) EXPECT_EQ(cascades, 0u);
      EXPECT_EQ(ex->stats().replans, 0u);
      EXPECT_EQ(ex->stats().recons, 0u);
      EXPECT_EQ(ex->stats().declared, 300u + cascades);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(commits.load() + user_aborts.load(), 1200);
  int64_t total = 0;
  for (int k = 0; k < 8; ++k) {
    EXPECT_GE(Peek(k), 0);
    total += Peek(k);
  }
  EXPECT_EQ(total, 800);
}

INSTANTIATE_TEST_SUITE_P(Planned, PlannedTest,
                         ::testing::Values("calvin", "planned", "qstore", "qstore/range",
                                           "qstore/learned", "qstore/speculative", "orthrus", "orthrus/4"),
                         ParamName);

// qstore: every transaction updates one hot row (and a cold one; 4 queues,
// so cold rows share queues with each other and with the hot one). They run
// on the hot row in exactly the order the planners placed them (batches of
// 3 split into 2 priority groups), and the outcome, user aborts included
// (a transaction that wrote the hot row and then aborts leaves no trace),
// is the serial replay of that order. Under each placement (learned
// switches from hash part-way, after kTestLearnTxns transactions).
class QStoreTest : public ::testing::Test, protected OneTableDb {};
class QStorePlacementTest : public ::testing::TestWithParam<std::string>, protected OneTableDb {};

TEST_P(QStorePlacementTest, HotKeyRunsInPlannedOrderAndUserAbortsAreDeterministic) {
  DatabaseOptions o;
  o.protocol = "qstore";
  o.qstore_batch_txns = 3;
  o.qstore_queues = 4;
  o.qstore_planners = 2;
  o.qstore_placement = GetParam();
  o.qstore_learn_txns = engine_testing::kTestLearnTxns;
  MakeDb(o, 8, 1);
  std::mutex mu;
  std::vector<int> planned, executed;
  db_->cc().SetPlanObserver([&](int w) {
    std::lock_guard<std::mutex> l(mu);
    planned.push_back(w);
  });
  auto step = [](int64_t v, int w) { return (v * 31 + w + 1) % 1000003; };
  auto aborts = [](int64_t v, int w) { return v % 5 == w; };
  constexpr int kWorkers = 4, kTxns = 150;
  std::atomic<uint64_t> user_aborts{0}, other{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      auto ex = db_->NewExecutor(w, {}).value();
      for (int i = 0; i < kTxns; ++i) {
        const uint64_t cold = 1 + (w + i) % 7;
        DeclaredTxn t(
            [&](Tx& tx) -> absl::Status {
              Row hot, c;
              ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, 0, &hot));
              ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, cold, &c));
              const int64_t v = hot.GetInt(bal_);
              {
                std::lock_guard<std::mutex> l(mu);
                executed.push_back(w);
              }
              c.AddInt(bal_, 1);
              if (aborts(v, w)) {
                hot.SetInt(bal_, -1);  // rolled back
                return UserAbortError("deterministic");
              }
              hot.SetInt(bal_, step(v, w));
              return absl::OkStatus();
            },
            [&](AccessSet& set) {
              set.Write(t_, cold);
              set.Write(t_, 0);
            });
        ExecResult r = ex->Execute(t);
        if (r.outcome == Outcome::kUserAbort) {
          ++user_aborts;
        } else if (r.outcome != Outcome::kCommitted) {
          ++other;
        }
      }
      EXPECT_EQ(ex->stats().total_conflicts(), 0u);
      EXPECT_EQ(ex->stats().replans, 0u);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(other.load(), 0u);
  ASSERT_EQ(planned.size(), size_t{kWorkers * kTxns});
  EXPECT_EQ(executed, planned);
  // Serial replay of the planned order.
  int64_t v = 1;
  uint64_t replay_aborts = 0;
  for (int w : planned) {
    if (aborts(v, w)) {
      ++replay_aborts;
    } else {
      v = step(v, w);
    }
  }
  EXPECT_EQ(Peek(0), v);
  EXPECT_EQ(user_aborts.load(), replay_aborts);
  EXPECT_GT(replay_aborts, 0u);  // the run exercised aborts
  int64_t cold_sum = 0;
  for (int k = 1; k < 8; ++k) cold_sum += Peek(k) - 1;
  EXPECT_EQ(cold_sum, static_cast<int64_t>(kWorkers * kTxns - replay_aborts));
}

INSTANTIATE_TEST_SUITE_P(Placements, QStorePlacementTest,
                         ::testing::Values("hash", "range", "learned"));

// Runs `txns` transactions per worker on `workers` threads, each writing the
// rows keys(worker, i) returns (declared), and returns the mean number of
// execution queues a transaction spanned.
template <typename Keys>
double MeanQueuesPerTxn(Database* db, Table* t, int workers, int txns, Keys keys) {
  std::vector<std::thread> threads;
  std::atomic<uint64_t> requests{0}, spans{0};
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      auto ex = db->NewExecutor(w, {}).value();
      for (int i = 0; i < txns; ++i) {
        const std::vector<uint64_t> ks = keys(w, i);
        DeclaredTxn txn(
            [&](Tx& tx) -> absl::Status {
              for (uint64_t k : ks) {
                Row r;
                ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t, k, &r));
                r.AddInt(0, 1);
              }
              return absl::OkStatus();
            },
            [&](AccessSet& set) {
              for (uint64_t k : ks) set.Write(t, k);
            });
        EXPECT_EQ(ex->Execute(txn).outcome, Outcome::kCommitted);
      }
      requests += ex->stats().lock_requests;
      spans += ex->stats().queue_spans;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(requests.load(), static_cast<uint64_t>(workers * txns));
  return static_cast<double>(spans.load()) / requests.load();
}

// Placement decides how many queues a transaction spans: four neighbouring
// keys share one range (1024 keys, 8 queues: 128 keys a range) but hash to
// several queues.
TEST_F(QStoreTest, RangePlacementKeepsNeighbouringKeysOnOneQueue) {
  auto keys = [](int w, int i) {
    const uint64_t base = 8 * static_cast<uint64_t>((w * 37 + i * 11) % 128);
    return std::vector<uint64_t>{base, base + 1, base + 2, base + 3};
  };
  double mean[2];
  for (int p = 0; p < 2; ++p) {
    DatabaseOptions o;
    o.protocol = "qstore";
    o.qstore_queues = 8;
    o.qstore_placement = p == 0 ? "hash" : "range";
    MakeDb(o, 1024, 0);
    mean[p] = MeanQueuesPerTxn(db_.get(), t_, 2, 50, keys);
    for (int w = 0; w < 2; ++w) {
      for (int i = 0; i < 50; ++i) {
        for (uint64_t k : keys(w, i)) EXPECT_GE(Peek(k), 1);
      }
    }
  }
  EXPECT_EQ(db_->ProtocolReport(), "placement range");
  EXPECT_EQ(mean[1], 1.0);  // range: every transaction on one queue
  EXPECT_GT(mean[0], 2.0);  // hash: 4 keys over 8 queues
}

// Learned placement: two hot rows that every transaction writes (hash puts
// them on different queues) are learned to conflict and share one queue
// once the learning window is over; the rows' values stay exact.
TEST_F(QStoreTest, LearnedPlacementPutsConflictingRowsOnOneQueue) {
  constexpr int kQueues = 64;
  uint64_t a = 0, b = 1;
  while (HashQueue(0, b, kQueues) == HashQueue(0, a, kQueues)) ++b;  // split by hash
  DatabaseOptions o;
  o.protocol = "qstore";
  o.qstore_batch_txns = 4;
  o.qstore_queues = kQueues;
  o.qstore_placement = "learned";
  o.qstore_learn_txns = engine_testing::kTestLearnTxns;
  MakeDb(o, 8, 0);
  EXPECT_EQ(db_->ProtocolReport(), "placement learned: still learning (hash)");
  constexpr int kWorkers = 4, kTxns = 100;
  const double mean =
      MeanQueuesPerTxn(db_.get(), t_, kWorkers, kTxns, [&](int, int) { return std::vector<uint64_t>{a, b}; });
  // At most the learning window spans two queues; every later one, one.
  EXPECT_LE(mean * kWorkers * kTxns, kWorkers * kTxns + engine_testing::kTestLearnTxns);
  EXPECT_EQ(db_->ProtocolReport(), "placement learned: 2 hot granules in 1 clusters");
  EXPECT_EQ(Peek(a), kWorkers * kTxns);
  EXPECT_EQ(Peek(b), kWorkers * kTxns);
}

// Readers at the head of a queue run together: a reader of the hot row runs
// (nested, on another executor) while an earlier reader of it is still
// executing. (Were the queue strictly one at a time, the nested run would
// wait for its caller forever.)
TEST_F(QStoreTest, ReadersShareAQueueHead) {
  DatabaseOptions o;
  o.protocol = "qstore";
  o.qstore_queues = 1;  // every row on one queue
  MakeDb(o, 4, 7);
  auto a = db_->NewExecutor(0, {}).value();
  auto b = db_->NewExecutor(1, {}).value();
  auto reader = [&](uint64_t key, int64_t* seen) {
    return DeclaredTxn(
        [&, key, seen](Tx& tx) -> absl::Status {
          ConstRow r;
          ENGINE_RETURN_IF_ERROR(tx.Read(t_, key, &r));
          *seen = r.GetInt(bal_);
          return absl::OkStatus();
        },
        [&, key](AccessSet& set) { set.Read(t_, key); });
  };
  int64_t outer = 0, inner = 0;
  Outcome nested = Outcome::kFailed;
  DeclaredTxn outer_txn(
      [&](Tx& tx) -> absl::Status {
        ConstRow r;
        ENGINE_RETURN_IF_ERROR(tx.Read(t_, 0, &r));
        outer = r.GetInt(bal_);
        DeclaredTxn in = reader(3, &inner);
        nested = b->Execute(in).outcome;
        return absl::OkStatus();
      },
      [&](AccessSet& set) { set.Read(t_, 0); });
  ASSERT_EQ(a->Execute(outer_txn).outcome, Outcome::kCommitted);
  EXPECT_EQ(nested, Outcome::kCommitted);
  EXPECT_EQ(outer, 7);
  EXPECT_EQ(inner, 7);
}

// Speculative qstore: T1 writes row a, moves on to row b (so it gives a's
// queue up) and waits there until T2, placed after it, has read a. T2 sees
// T1's uncommitted write. If T1 then commits, T2 commits after it on that
// value; if T1 aborts, T2 is rolled back (a cascade), re-run on the
// restored row, and commits; a and b end as the serial history says.
TEST_F(QStoreTest, SpeculativeReadsSeeUncommittedWritesAndCascadeOnAbort) {
  constexpr int kQueues = 64;
  uint64_t a = 0, b = 1;
  while (HashQueue(0, b, kQueues) == HashQueue(0, a, kQueues)) ++b;  // a and b on two queues
  for (const bool t1_aborts : {false, true}) {
    SCOPED_TRACE(t1_aborts ? "T1 aborts" : "T1 commits");
    DatabaseOptions o;
    o.protocol = "qstore";
    o.qstore_execution = "speculative";
    o.qstore_queues = kQueues;
    MakeDb(o, 8, 10);
    auto e1 = db_->NewExecutor(0, {}).value();
    auto e2 = db_->NewExecutor(1, {}).value();
    std::atomic<bool> t1_past_a{false};
    std::atomic<int64_t> t2_first{-1};
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    ExecResult r1;
    std::thread th1([&] {
      DeclaredTxn t1(
          [&](Tx& tx) -> absl::Status {
            Row x, y;
            ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, a, &x));
            x.SetInt(bal_, 100);
            ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, b, &y));
            y.AddInt(bal_, 5);
            t1_past_a = true;
            while (t2_first.load() < 0 && Clock::now() < deadline) {
              std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            if (t1_aborts) return UserAbortError("after T2 read a");
            return absl::OkStatus();
          },
          [&](AccessSet& set) {
            set.Write(t_, a);
            set.Write(t_, b);
          });
      r1 = e1->Execute(t1);
    });
    while (!t1_past_a.load() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::vector<int64_t> t2_reads;
    DeclaredTxn t2(
        [&](Tx& tx) -> absl::Status {
          Row x;
          ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, a, &x));
          t2_reads.push_back(x.GetInt(bal_));
          if (t2_first.load() < 0) t2_first = x.GetInt(bal_);
          x.AddInt(bal_, 1);
          return absl::OkStatus();
        },
        [&](AccessSet& set) { set.Write(t_, a); });
    ExecResult r2;
    int attempts = 0;
    do {
      r2 = e2->Execute(t2);
      ++attempts;
    } while (r2.outcome == Outcome::kConflictAbort && r2.cause == AbortCause::kCascade && attempts < 10);
    th1.join();
    ASSERT_EQ(r2.outcome, Outcome::kCommitted) << r2.status;
    ASSERT_FALSE(t2_reads.empty());
    EXPECT_EQ(t2_reads.front(), 100);  // T1's write, before T1 finished
    EXPECT_GE(e1->stats().spec_early_releases, 1u);
    EXPECT_GE(e2->stats().spec_dependencies, 1u);
    if (t1_aborts) {
      EXPECT_EQ(r1.outcome, Outcome::kUserAbort);
      EXPECT_GE(attempts, 2);
      EXPECT_EQ(t2_reads.back(), 10);  // re-run on the restored row
      EXPECT_EQ(e2->stats().conflicts[static_cast<size_t>(AbortCause::kCascade)],
                static_cast<uint64_t>(attempts - 1));
      EXPECT_EQ(Peek(a), 11);
      EXPECT_EQ(Peek(b), 10);
    } else {
      EXPECT_EQ(r1.outcome, Outcome::kCommitted);
      EXPECT_EQ(attempts, 1);
      EXPECT_EQ(Peek(a), 101);
      EXPECT_EQ(Peek(b), 15);
    }
  }
}

// Speculative qstore under contention: 4 workers, every transaction reads
// and rewrites one hot row, then bumps a cold one (by then the hot row's
// queue is given up, when the two are on different queues), and some then
// abort on purpose depending on the value they read; cascades are retried.
// Each committed attempt must have read the value the one before it in the
// hot row's history wrote: the committed attempts form one chain from the
// loaded value to the final one, and every user abort read a value of that
// chain.
TEST_F(QStoreTest, SpeculativeHotRowHistoryIsOneSerialChain) {
  DatabaseOptions o;
  o.protocol = "qstore";
  o.qstore_execution = "speculative";
  o.qstore_queues = 4;
  o.qstore_batch_txns = 3;
  o.qstore_planners = 2;
  MakeDb(o, 8, 1);
  // Each commit moves the hot row one up, so a value is read by at most one
  // committed attempt in a serial history (a lost update reads one twice).
  auto step = [](int64_t v, int) { return v + 1; };
  auto aborts = [](int64_t v, int w) { return v % 7 == w; };
  constexpr int kWorkers = 4, kTxns = 150;
  std::mutex mu;
  std::map<int64_t, int64_t> next;  // committed: value read -> value written
  std::vector<int64_t> aborted_reads;
  std::atomic<uint64_t> cascades{0}, other{0}, early{0}, late{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      auto ex = db_->NewExecutor(w, {}).value();
      for (int i = 0; i < kTxns; ++i) {
        const uint64_t cold = 1 + (w + i) % 7;
        int64_t seen = -1;
        DeclaredTxn t(
            [&](Tx& tx) -> absl::Status {
              Row hot, c;
              ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, 0, &hot));
              seen = hot.GetInt(bal_);
              hot.SetInt(bal_, step(seen, w));  // rolled back if it aborts
              ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, cold, &c));
              c.AddInt(bal_, 1);
              // Time for the next transaction to read the hot row's uncommitted image.
              std::this_thread::sleep_for(std::chrono::microseconds(200));
              if (aborts(seen, w)) return UserAbortError("deterministic");
              return absl::OkStatus();
            },
            [&](AccessSet& set) {
              set.Write(t_, 0);
              set.Write(t_, cold);
            });
        ExecResult r = ex->Execute(t);
        while (r.outcome == Outcome::kConflictAbort && r.cause == AbortCause::kCascade) {
          ++cascades;
          r = ex->Execute(t);
        }
        std::lock_guard<std::mutex> l(mu);
        if (r.outcome == Outcome::kCommitted) {
          EXPECT_TRUE(next.emplace(seen, step(seen, w)).second) << "two commits read " << seen;
        } else if (r.outcome == Outcome::kUserAbort) {
          aborted_reads.push_back(seen);
        } else {
          ++other;
        }
      }
      early += ex->stats().spec_early_releases;
      late += ex->stats().spec_late_accesses;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(other.load(), 0u);
  EXPECT_GT(early.load(), 0u);  // the hot row's queue was given up before commits
  EXPECT_EQ(late.load(), 0u);   // the procedure never comes back to the hot row
  std::cout << "cascades retried: " << cascades.load() << "\n";
  std::set<int64_t> chain{1};
  int64_t v = 1;
  size_t links = 0;
  for (auto it = next.find(v); it != next.end() && links <= next.size(); it = next.find(v)) {
    v = it->second;
    chain.insert(v);
    ++links;
  }
  EXPECT_EQ(links, next.size()) << "committed attempts that read no committed value";
  EXPECT_EQ(Peek(0), v);
  for (int64_t r : aborted_reads) EXPECT_EQ(chain.count(r), 1u) << "a user abort read " << r;
  EXPECT_GT(aborted_reads.size(), 0u);
  int64_t cold_sum = 0;
  for (int k = 1; k < 8; ++k) cold_sum += Peek(k) - 1;
  EXPECT_EQ(cold_sum, static_cast<int64_t>(next.size()));
}

// Speculative qstore: a procedure that changes a row after it moved on
// (its image was already installed for the next transaction) is caught when
// it ends, rolled back and re-run holding its queues; the rows end right.
TEST_F(QStoreTest, SpeculativeWriteAfterMovingOnIsReRun) {
  constexpr int kQueues = 64;
  uint64_t a = 0, b = 1;
  while (HashQueue(0, b, kQueues) == HashQueue(0, a, kQueues)) ++b;
  DatabaseOptions o;
  o.protocol = "qstore";
  o.qstore_execution = "speculative";
  o.qstore_queues = kQueues;
  MakeDb(o, 8, 10);
  auto ex = db_->NewExecutor(0, {}).value();
  int calls = 0;
  DeclaredTxn t(
      [&](Tx& tx) -> absl::Status {
        ++calls;
        Row x, y;
        ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, a, &x));
        ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, b, &y));  // a's queue given up here
        x.AddInt(bal_, 1);                                    // too late for that
        y.AddInt(bal_, 2);
        return absl::OkStatus();
      },
      [&](AccessSet& set) {
        set.Write(t_, a);
        set.Write(t_, b);
      });
  ASSERT_EQ(ex->Execute(t).outcome, Outcome::kCommitted);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(ex->stats().spec_late_accesses, 1u);
  EXPECT_EQ(ex->stats().total_conflicts(), 0u);
  EXPECT_EQ(Peek(a), 11);
  EXPECT_EQ(Peek(b), 12);
  // A second read of a row it moved past is caught the same way.
  calls = 0;
  DeclaredTxn back(
      [&](Tx& tx) -> absl::Status {
        ++calls;
        Row x, y;
        ConstRow again;
        ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, a, &x));
        x.AddInt(bal_, 1);
        ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, b, &y));
        y.AddInt(bal_, static_cast<int>(x.GetInt(bal_)));
        ENGINE_RETURN_IF_ERROR(tx.Read(t_, a, &again));
        return absl::OkStatus();
      },
      [&](AccessSet& set) {
        set.Write(t_, a);
        set.Write(t_, b);
      });
  ASSERT_EQ(ex->Execute(back).outcome, Outcome::kCommitted);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(ex->stats().spec_late_accesses, 2u);
  EXPECT_EQ(Peek(a), 12);
  EXPECT_EQ(Peek(b), 24);
}

TEST(QStoreOptionsTest, BadSettingsAreRejected) {
  DatabaseOptions o;
  o.protocol = "qstore";
  EXPECT_TRUE(Database::Create(o).ok());
  for (auto bad : std::vector<std::function<void(DatabaseOptions&)>>{
           [](DatabaseOptions& d) { d.qstore_batch_ns = 0; },
           [](DatabaseOptions& d) { d.qstore_batch_txns = -1; },
           [](DatabaseOptions& d) { d.qstore_queues = 0; },
           [](DatabaseOptions& d) { d.qstore_planners = 0; },
           [](DatabaseOptions& d) { d.qstore_placement = "modulo"; },
           [](DatabaseOptions& d) { d.qstore_learn_txns = 0; },
           [](DatabaseOptions& d) { d.qstore_execution = "optimistic"; }}) {
    DatabaseOptions b = o;
    bad(b);
    EXPECT_EQ(Database::Create(b).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(OrthrusTest, BadCcThreadCountIsRejected) {
  DatabaseOptions o;
  o.protocol = "orthrus";
  for (int n : {0, -1, kMaxOrthrusCcThreads + 1}) {
    o.orthrus_cc_threads = n;
    EXPECT_EQ(Database::Create(o).status().code(), absl::StatusCode::kInvalidArgument) << n;
  }
  for (int n : {1, kMaxOrthrusCcThreads}) {
    o.orthrus_cc_threads = n;
    EXPECT_TRUE(Database::Create(o).ok()) << n;
  }
}

class OrthrusTest : public ::testing::TestWithParam<int>, protected OneTableDb {};

// Opposite-order conflicting transactions (each pair of workers takes the
// same rows, declared and accessed in opposite orders) hold their locks for
// a while before commit, so acquisitions overlap: under the planned
// (partition, key) order nobody deadlocks or conflict-aborts, every
// transaction commits, and each row's increments add up. Rows span the CC
// partitions, so requests are forwarded between CC threads.
TEST_P(OrthrusTest, OppositeOrderConflictsNeverDeadlock) {
  constexpr int kKeys = 12, kWorkers = 6, kTxns = 150;
  DatabaseOptions o;
  o.protocol = "orthrus";
  o.orthrus_cc_threads = GetParam();
  MakeDb(o, kKeys, 0);
  std::vector<std::thread> threads;
  std::atomic<int> committed{0};
  std::atomic<int64_t> expected[kKeys];
  for (auto& e : expected) e.store(0);
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      ExecutorOptions eo;
      eo.txn_delay_ns = 20000;  // hold the locks 20 us: acquisitions overlap
      auto ex = db_->NewExecutor(w, eo).value();
      std::mt19937_64 rng(w + 101);
      for (int i = 0; i < kTxns; ++i) {
        // Four rows; odd workers take them in the reverse order.
        std::vector<uint64_t> keys;
        while (keys.size() < 4) {
          uint64_t k = rng() % kKeys;
          if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
        }
        if (w % 2 == 1) std::reverse(keys.begin(), keys.end());
        DeclaredTxn t(
            [&](Tx& tx) -> absl::Status {
              for (uint64_t k : keys) {
                Row r;
                ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, k, &r));
                r.AddInt(bal_, 1);
              }
              return absl::OkStatus();
            },
            [&](AccessSet& set) {
              for (uint64_t k : keys) set.Write(t_, k);
            });
        ExecResult r = ex->Execute(t);
        ASSERT_EQ(r.outcome, Outcome::kCommitted) << r.status;
        ++committed;
        for (uint64_t k : keys) expected[k].fetch_add(1);
      }
      EXPECT_EQ(ex->stats().total_conflicts(), 0u);
      EXPECT_EQ(ex->stats().replans, 0u);
      EXPECT_EQ(ex->stats().declared, static_cast<uint64_t>(kTxns));
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(committed.load(), kWorkers * kTxns);
  for (int k = 0; k < kKeys; ++k) EXPECT_EQ(Peek(k), expected[k].load()) << k;
}

// Readers share a lock, a writer excludes them: exact-sum readers of all
// rows never see a transfer half done, with one and with several CC threads.
TEST_P(OrthrusTest, ReadersSeeNoHalfDoneTransfer) {
  constexpr int kKeys = 8;
  DatabaseOptions o;
  o.protocol = "orthrus";
  o.orthrus_cc_threads = GetParam();
  MakeDb(o, kKeys, 100);
  std::atomic<bool> stop{false};
  std::atomic<int> bad_sums{0}, sums{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      auto ex = db_->NewExecutor(w, {}).value();
      std::mt19937_64 rng(w + 7);
      for (int i = 0; i < 300; ++i) {
        uint64_t from = rng() % kKeys, to = (from + 1 + rng() % (kKeys - 1)) % kKeys;
        DeclaredTxn t(
            [&](Tx& tx) -> absl::Status {
              Row x, y;
              ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, from, &x));
              ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, to, &y));
              x.AddInt(bal_, -3);
              y.AddInt(bal_, 3);
              return absl::OkStatus();
            },
            [&](AccessSet& set) {
              set.Write(t_, from);
              set.Write(t_, to);
            });
        ASSERT_EQ(ex->Execute(t).outcome, Outcome::kCommitted);
      }
    });
  }
  for (int w = 4; w < 6; ++w) {
    threads.emplace_back([&, w] {
      auto ex = db_->NewExecutor(w, {}).value();
      while (!stop.load()) {
        int64_t sum = 0;
        DeclaredTxn t(
            [&](Tx& tx) -> absl::Status {
              sum = 0;
              for (int k = 0; k < kKeys; ++k) {
                ConstRow r;
                ENGINE_RETURN_IF_ERROR(tx.Read(t_, k, &r));
                sum += r.GetInt(bal_);
              }
              return absl::OkStatus();
            },
            [&](AccessSet& set) {
              for (int k = kKeys - 1; k >= 0; --k) set.Read(t_, k);
            });
        ASSERT_EQ(ex->Execute(t).outcome, Outcome::kCommitted);
        ++sums;
        if (sum != 100 * kKeys) ++bad_sums;
      }
    });
  }
  for (int w = 0; w < 4; ++w) threads[w].join();
  stop.store(true);
  for (size_t w = 4; w < threads.size(); ++w) threads[w].join();
  EXPECT_EQ(bad_sums.load(), 0);
  EXPECT_GT(sums.load(), 0);
  int64_t total = 0;
  for (int k = 0; k < kKeys; ++k) total += Peek(k);
  EXPECT_EQ(total, 100 * kKeys);
}

INSTANTIATE_TEST_SUITE_P(CcThreads, OrthrusTest, ::testing::Values(1, 2, 4));

TEST(CalvinTest, BadBatchingIsRejected) {
  DatabaseOptions o;
  o.protocol = "calvin";
  o.calvin_batch_ns = 0;
  EXPECT_EQ(Database::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.calvin_batch_ns = 1000;
  o.calvin_batch_txns = -1;
  EXPECT_EQ(Database::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.calvin_batch_txns = 8;
  EXPECT_TRUE(Database::Create(o).ok());
}

// Lock granules: declaring one key of a granule covers its other keys (an
// insert whose key the transaction learns by reading), keys of another
// granule are not covered.
TEST(PlannedGranuleTest, OneKeyOfAGranuleCoversTheGranule) {
  for (const char* p : {"calvin", "planned", "qstore", "orthrus"}) {
    auto db = Database::Create({p}).value();
    Schema s;
    int v = s.AddInt64("v");
    Table* t = db->CreateTable("t", s, {}).value();
    ASSERT_TRUE(db->SetLockGranule(t, 8).ok());
    EXPECT_FALSE(db->SetLockGranule(t, 65).ok());
    auto ex = db->NewExecutor(0, {}).value();
    DeclaredTxn ins([&](Tx& tx) -> absl::Status {
          Row r;
          ENGINE_RETURN_IF_ERROR(tx.Insert(t, 0x1234, &r));  // granule 0x12
          r.SetInt(v, 1);
          return absl::OkStatus();
        },
        [&](AccessSet& set) { set.Write(t, 0x1200); });
    ASSERT_EQ(ex->Execute(ins).outcome, Outcome::kCommitted) << p;
    EXPECT_EQ(ex->stats().replans, 0u) << p;
    DeclaredTxn other([&](Tx& tx) -> absl::Status {
          Row r;
          return tx.Insert(t, 0x1334, &r);  // granule 0x13: not declared
        },
        [&](AccessSet& set) { set.Write(t, 0x1200); });
    ASSERT_EQ(ex->Execute(other).outcome, Outcome::kCommitted) << p;
    EXPECT_EQ(ex->stats().replans, 1u) << p;
    EXPECT_EQ(t->CountPresent(), 2u) << p;
  }
}

}  // namespace
}  // namespace engine
}  // namespace corral
