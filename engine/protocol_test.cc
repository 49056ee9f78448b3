// Behaviour particular to one protocol: wait-die never waits for a younger
// holder, OCC's stale read is a conflict, and Deneva's protocols (timestamp
// ordering, MVCC snapshots and garbage collection, MaaT's ranges).
#include "engine/engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
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

TEST(WaitDieTest, NeverWaitsForAYoungerHolder) {
  auto db = Database::Create({"2pl-waitdie"}).value();
  std::atomic<int> waits{0}, violations{0};
  db->cc().SetWaitObserver([&](uint64_t waiter_ts, uint64_t holder_ts) {
    ++waits;
    if (!(waiter_ts < holder_ts)) ++violations;
  });
  Schema s;
  int bal = s.AddInt64("b");
  Table* t = db->CreateTable("t", s, {}).value();
  for (int k = 0; k < 4; ++k) ASSERT_TRUE(db->Load(t, k, [&](const Row& r) { r.SetInt(bal, 0); }).ok());
  const auto stop = Clock::now() + std::chrono::milliseconds(400);
  std::atomic<int> dies{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      auto ex = db->NewExecutor(w, {}).value();
      std::mt19937_64 rng(w);
      while (Clock::now() < stop || (waits.load() == 0 && Clock::now() < stop + std::chrono::seconds(5))) {
        uint64_t a = rng() % 4, b = rng() % 4;
        ExecResult r = RunToEnd(*ex, [&](Tx& tx) -> absl::Status {
          Row x, y;
          ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t, a, &x));
          std::this_thread::yield();  // widen the window
          ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t, b, &y));
          x.AddInt(bal, 1);
          return absl::OkStatus();
        }, stop + std::chrono::seconds(10));
        ASSERT_EQ(r.outcome, Outcome::kCommitted);
      }
      dies += ex->stats().conflicts[static_cast<size_t>(AbortCause::kWaitDie)];
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(violations.load(), 0) << "of " << waits.load() << " waits";
  EXPECT_GT(waits.load() + dies.load(), 0);
}

// OCC reads are not a consistent snapshot until validation: a user abort or
// error decided on a read that was already overwritten is a conflict (it is
// retried), not the procedure's own verdict.
TEST(OccTest, AbortDecidedOnStaleReadIsAConflict) {
  auto db = Database::Create({"occ"}).value();
  Schema s;
  int v = s.AddInt64("v");
  Table* t = db->CreateTable("t", s, {}).value();
  ASSERT_TRUE(db->Load(t, 1, [&](const Row& r) { r.SetInt(v, 0); }).ok());
  auto a = db->NewExecutor(0, {}).value();
  auto b = db->NewExecutor(1, {}).value();
  ExecResult inner;
  ExecResult outer = a->Run([&](Tx& tx) -> absl::Status {
    ConstRow row;
    ENGINE_RETURN_IF_ERROR(tx.Read(t, 1, &row));
    inner = b->Run([&](Tx& tx2) -> absl::Status {
      Row w;
      ENGINE_RETURN_IF_ERROR(tx2.ReadForUpdate(t, 1, &w));
      w.SetInt(v, 5);
      return absl::OkStatus();
    }, nullptr);
    return UserAbortError("decided on a stale value");
  }, nullptr);
  EXPECT_EQ(inner.outcome, Outcome::kCommitted);
  EXPECT_EQ(outer.outcome, Outcome::kConflictAbort);
  EXPECT_EQ(outer.cause, AbortCause::kValidation);
  // Without the interleaving the same abort is the user's.
  outer = a->Run([&](Tx& tx) -> absl::Status {
    ConstRow row;
    ENGINE_RETURN_IF_ERROR(tx.Read(t, 1, &row));
    return UserAbortError("really");
  }, nullptr);
  EXPECT_EQ(outer.outcome, Outcome::kUserAbort);
}

// Deneva's protocols are registered by name, and each aborts with its own cause.


class DenevaTest : public ::testing::Test, protected OneTableDb {
 protected:
  void Make(const std::string& protocol, int keys, int64_t balance) {
    MakeDb({protocol}, keys, balance);
  }
  absl::Status Add(Tx& tx, uint64_t key, int64_t d) {
    Row r;
    ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_, key, &r));
    r.AddInt(bal_, d);
    return absl::OkStatus();
  }
};

// T/O: an older transaction that reads a row a younger one already
// overwrote aborts with kTimestampTooOld; MVCC reads the older version.
TEST_F(DenevaTest, ReadOfYoungerWriteIsTooOldUnderTimestampButNotMvcc) {
  for (const std::string p : {"timestamp", "mvcc"}) {
    Make(p, 2, 10);
    auto a = db_->NewExecutor(0, {}).value();
    auto b = db_->NewExecutor(1, {}).value();
    ExecResult inner;
    int64_t seen = -1;
    ExecResult outer = a->Run([&](Tx& tx) -> absl::Status {
      // a began first (older); b commits a write of key 1 in between.
      inner = b->Run([&](Tx& tx2) { return Add(tx2, 1, 5); }, nullptr);
      ConstRow r;
      ENGINE_RETURN_IF_ERROR(tx.Read(t_, 1, &r));
      seen = r.GetInt(bal_);
      return absl::OkStatus();
    }, nullptr);
    EXPECT_EQ(inner.outcome, Outcome::kCommitted) << p;
    if (p == "timestamp") {
      EXPECT_EQ(outer.outcome, Outcome::kConflictAbort);
      EXPECT_EQ(outer.cause, AbortCause::kTimestampTooOld);
      EXPECT_EQ(a->stats().conflicts[static_cast<size_t>(AbortCause::kTimestampTooOld)], 1u);
    } else {
      EXPECT_EQ(outer.outcome, Outcome::kCommitted);
      EXPECT_EQ(seen, 10);  // the snapshot at a's timestamp
    }
    EXPECT_EQ(Peek(1), 15) << p;
  }
}

// MaaT: a reader of a row that a committed writer overwrote is ordered
// before it; if it also overwrites a row that writer read, it cannot be
// ordered at all (kRangeEmpty). A pure reader is not aborted.
TEST_F(DenevaTest, MaatOrdersReadersBeforeWritersAndAbortsOnEmptyRange) {
  Make("maat", 2, 10);
  auto a = db_->NewExecutor(0, {}).value();
  auto b = db_->NewExecutor(1, {}).value();
  ExecResult inner;
  ExecResult outer = a->Run([&](Tx& tx) -> absl::Status {
    ConstRow r;
    ENGINE_RETURN_IF_ERROR(tx.Read(t_, 0, &r));
    inner = b->Run([&](Tx& tx2) { return Add(tx2, 0, 1); }, nullptr);
    return absl::OkStatus();  // read-only: commits before b
  }, nullptr);
  EXPECT_EQ(inner.outcome, Outcome::kCommitted);
  EXPECT_EQ(outer.outcome, Outcome::kCommitted);
  // Now a reads 0 and writes 1, b reads 1 (via its write) and writes 0.
  outer = a->Run([&](Tx& tx) -> absl::Status {
    ConstRow r;
    ENGINE_RETURN_IF_ERROR(tx.Read(t_, 0, &r));
    ENGINE_RETURN_IF_ERROR(Add(tx, 1, r.GetInt(bal_)));
    inner = b->Run([&](Tx& tx2) -> absl::Status {
      ENGINE_RETURN_IF_ERROR(Add(tx2, 1, 100));
      return Add(tx2, 0, 100);
    }, nullptr);
    return absl::OkStatus();
  }, nullptr);
  EXPECT_EQ(inner.outcome, Outcome::kCommitted);
  EXPECT_EQ(outer.outcome, Outcome::kConflictAbort);
  EXPECT_EQ(outer.cause, AbortCause::kRangeEmpty);
  EXPECT_EQ(Peek(0), 111);
  EXPECT_EQ(Peek(1), 110);
}

// MVCC: a long reader neither blocks writers nor sees a partial write. It
// reads half the accounts, then writers commit transfers touching all of them
// while it stays open, then it reads the rest: it commits on its first
// attempt and sees exactly the balances as of its start.
TEST_F(DenevaTest, MvccLongReaderSeesSnapshotWithoutBlockingWriters) {
  constexpr int kAccounts = 20;
  constexpr int kTransfers = 200;
  Make("mvcc", kAccounts, 100);
  std::atomic<int> phase{0};  // 1: reader read half; 2: writers done
  std::atomic<int> writer_commits{0};
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  std::vector<int64_t> seen(kAccounts, -1);
  ExecResult reader_result;
  std::thread reader([&] {
    auto ex = db_->NewExecutor(0, {}).value();
    reader_result = ex->Run([&](Tx& tx) -> absl::Status {
      for (int k = 0; k < kAccounts; ++k) {
        if (k == kAccounts / 2) {
          phase.store(1);
          while (phase.load() != 2 && Clock::now() < deadline) std::this_thread::yield();
        }
        ConstRow r;
        ENGINE_RETURN_IF_ERROR(tx.Read(t_, k, &r));
        seen[k] = r.GetInt(bal_);
      }
      return absl::OkStatus();
    }, nullptr);
  });
  std::vector<std::thread> writers;
  for (int w = 1; w <= 2; ++w) {
    writers.emplace_back([&, w] {
      auto ex = db_->NewExecutor(w, {}).value();
      while (phase.load() != 1 && Clock::now() < deadline) std::this_thread::yield();
      std::mt19937_64 rng(w);
      for (int i = 0; i < kTransfers / 2; ++i) {
        uint64_t from = rng() % kAccounts, to = (from + 1 + rng() % (kAccounts - 1)) % kAccounts;
        ExecResult r = RunToEnd(*ex, [&](Tx& tx) -> absl::Status {
          ENGINE_RETURN_IF_ERROR(Add(tx, from, -1));
          return Add(tx, to, 1);
        }, deadline);
        if (r.outcome == Outcome::kCommitted) ++writer_commits;
      }
    });
  }
  for (auto& t : writers) t.join();
  // The writers finished while the reader was open (it waits for phase 2).
  EXPECT_EQ(writer_commits.load(), kTransfers);
  EXPECT_EQ(phase.load(), 1);
  phase.store(2);
  reader.join();
  ASSERT_EQ(reader_result.outcome, Outcome::kCommitted);
  int64_t total = 0;
  bool changed = false;
  for (int k = 0; k < kAccounts; ++k) {
    EXPECT_EQ(seen[k], 100) << "account " << k;  // nothing after its start
    total += Peek(k);
    changed |= Peek(k) != 100;
  }
  EXPECT_EQ(total, kAccounts * 100);
  EXPECT_TRUE(changed);
}

// MVCC garbage collection keeps exactly the versions running readers read:
// none without readers, the reader's one while a reader is open, and frees
// it once the reader ends.
TEST_F(DenevaTest, MvccCollectsVersionsNoRunningTxnReads) {
  Make("mvcc", 1, 0);
  auto reader = db_->NewExecutor(0, {}).value();
  auto writer = db_->NewExecutor(1, {}).value();
  auto bump = [&] {
    return writer->Run([&](Tx& tx) { return Add(tx, 0, 1); }, nullptr).outcome;
  };
  for (int i = 0; i < 50; ++i) ASSERT_EQ(bump(), Outcome::kCommitted);
  EXPECT_EQ(db_->cc().RetainedVersions(), 0);
  int64_t inside = -1, before = -1;
  ExecResult r = reader->Run([&](Tx& tx) -> absl::Status {
    ConstRow row;
    ENGINE_RETURN_IF_ERROR(tx.Read(t_, 0, &row));
    before = row.GetInt(bal_);
    for (int i = 0; i < 50; ++i) {
      if (bump() != Outcome::kCommitted) return absl::InternalError("writer failed");
    }
    inside = db_->cc().RetainedVersions();
    ENGINE_RETURN_IF_ERROR(tx.Read(t_, 0, &row));
    if (row.GetInt(bal_) != before) return absl::InternalError("snapshot moved");
    return absl::OkStatus();
  }, nullptr);
  ASSERT_EQ(r.outcome, Outcome::kCommitted) << r.status;
  EXPECT_EQ(before, 50);
  EXPECT_EQ(inside, 1);  // the reader's version only, not the 49 in between
  ASSERT_EQ(bump(), Outcome::kCommitted);
  EXPECT_EQ(db_->cc().RetainedVersions(), 0);
  EXPECT_EQ(Peek(0), 101);
}

}  // namespace
}  // namespace engine
}  // namespace corral
