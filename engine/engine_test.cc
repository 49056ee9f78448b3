// Correctness tests of the engine under every protocol (one TEST_P suite):
// CRUD and rollback, money conservation under hot-key stress, a
// conflict-graph serializability check over recorded footprints, deadlock
// resolution, and concurrent inserts/deletes/scans on ordered and secondary
// indexes. Protocol-specific behaviour: protocol_test.cc (wait-die, OCC,
// Deneva's) and planned_test.cc (calvin, planned, qstore, orthrus).
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

class EngineTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    db_ = Database::Create(OptionsFor(GetParam())).value();
    Schema s;
    bal_ = s.AddInt64("balance");
    name_ = s.AddString("name", 24);
    accounts_ = db_->CreateTable("accounts", s, {}).value();
  }
  void LoadAccounts(int n, int64_t balance) {
    for (int k = 0; k < n; ++k) {
      ASSERT_TRUE(db_->Load(accounts_, k, [&](const Row& r) { r.SetInt(bal_, balance); }).ok());
    }
  }
  std::unique_ptr<EngineExecutor> Exec(int w, ExecutorOptions o = {}) {
    return db_->NewExecutor(w, o).value();
  }
  int64_t PeekBalance(uint64_t k) {
    ConstRow r;
    EXPECT_TRUE(db_->Peek(accounts_, k, &r).ok());
    return r.valid() ? r.GetInt(bal_) : -1;
  }

  std::unique_ptr<Database> db_;
  Table* accounts_ = nullptr;
  int bal_ = 0, name_ = 0;
};

TEST(DatabaseTest, UnknownProtocolIsRejected) {
  auto db = Database::Create({"mvcc-magic"});
  EXPECT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(Database::Create({"none"}).ok());
}

TEST_P(EngineTest, CrudAndRollback) {
  LoadAccounts(3, 100);
  auto ex = Exec(0);
  auto far = Clock::now() + std::chrono::seconds(5);
  // Update + read-your-write + insert + delete, committed.
  ExecResult r = RunToEnd(*ex, [&](Tx& tx) -> absl::Status {
    Row a;
    ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(accounts_, 0, &a));
    a.AddInt(bal_, 5);
    ConstRow again;
    ENGINE_RETURN_IF_ERROR(tx.Read(accounts_, 0, &again));
    if (again.GetInt(bal_) != 105) return absl::InternalError("no read-your-write");
    Row n;
    ENGINE_RETURN_IF_ERROR(tx.Insert(accounts_, 10, &n));
    n.SetInt(bal_, 7);
    n.SetString(name_, "new");
    ConstRow seen;
    ENGINE_RETURN_IF_ERROR(tx.Read(accounts_, 10, &seen));
    if (seen.GetInt(bal_) != 7) return absl::InternalError("own insert invisible");
    ENGINE_RETURN_IF_ERROR(tx.Delete(accounts_, 2));
    if (tx.Read(accounts_, 2, &seen).code() != absl::StatusCode::kNotFound) {
      return absl::InternalError("own delete visible");
    }
    Row dup;
    if (tx.Insert(accounts_, 1, &dup).code() != absl::StatusCode::kAlreadyExists) {
      return absl::InternalError("duplicate insert accepted");
    }
    return absl::OkStatus();
  }, far);
  ASSERT_EQ(r.outcome, Outcome::kCommitted) << r.status;
  EXPECT_EQ(PeekBalance(0), 105);
  EXPECT_EQ(PeekBalance(10), 7);
  ConstRow gone;
  EXPECT_EQ(db_->Peek(accounts_, 2, &gone).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(accounts_->CountPresent(), 3u);

  // User abort rolls back updates, inserts and deletes.
  r = RunToEnd(*ex, [&](Tx& tx) -> absl::Status {
    Row a;
    ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(accounts_, 0, &a));
    a.SetInt(bal_, -1);
    Row n;
    ENGINE_RETURN_IF_ERROR(tx.Insert(accounts_, 11, &n));
    ENGINE_RETURN_IF_ERROR(tx.Delete(accounts_, 1));
    return UserAbortError("changed my mind");
  }, far);
  EXPECT_EQ(r.outcome, Outcome::kUserAbort);
  EXPECT_EQ(PeekBalance(0), 105);
  EXPECT_EQ(PeekBalance(1), 100);
  EXPECT_EQ(db_->Peek(accounts_, 11, &gone).code(), absl::StatusCode::kNotFound);
  // A re-insert of the rolled-back key works.
  r = RunToEnd(*ex, [&](Tx& tx) -> absl::Status {
    Row n;
    ENGINE_RETURN_IF_ERROR(tx.Insert(accounts_, 11, &n));
    n.SetInt(bal_, 3);
    return absl::OkStatus();
  }, far);
  EXPECT_EQ(r.outcome, Outcome::kCommitted);
  EXPECT_EQ(PeekBalance(11), 3);
  // Other errors are Failed.
  r = ex->Run([](Tx&) { return absl::InternalError("bug"); }, nullptr);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(ex->stats().user_aborts, 1u);
  EXPECT_EQ(ex->stats().failed, 1u);
}

TEST_P(EngineTest, ExecuteKeepsTimestampAcrossRetries) {
  LoadAccounts(1, 0);
  auto ex = Exec(0);
  FunctionTxn t([&](Tx& tx) -> absl::Status {
    Row a;
    return tx.ReadForUpdate(accounts_, 0, &a);
  });
  ASSERT_EQ(ex->Execute(t).outcome, Outcome::kCommitted);
  uint64_t ts = t.engine_ts;
  EXPECT_NE(ts, 0u);
  ASSERT_EQ(ex->Execute(t).outcome, Outcome::kCommitted);
  EXPECT_EQ(t.engine_ts, ts);
}

// Transfers among 100 accounts (5 hot) by 3 writers while a reader sums all
// accounts: every committed sum is exact, and so is the final total.
TEST_P(EngineTest, MoneyIsConservedUnderHotKeyStress) {
  constexpr int kAccounts = 100;
  constexpr int64_t kInit = 1000;
  LoadAccounts(kAccounts, kInit);
  const auto stop = Clock::now() + std::chrono::milliseconds(600);
  const auto far = stop + std::chrono::seconds(10);
  std::atomic<int> bad_sums{0}, sums{0}, commits{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      auto ex = Exec(w);
      std::mt19937_64 rng(w * 7919 + 1);
      // Past `stop`, keep going (up to `far`) until there is enough work to
      // judge: a loaded machine may give a thread little of the 600 ms.
      while (Clock::now() < stop || ((commits.load() <= 100 || sums.load() == 0) && Clock::now() < far)) {
        if (w == 3) {
          int64_t seen = 0;
          ExecResult r = RunToEnd(*ex, [&](Tx& tx) -> absl::Status {
            int64_t total = 0;
            for (int k = 0; k < kAccounts; ++k) {
              ConstRow row;
              ENGINE_RETURN_IF_ERROR(tx.Read(accounts_, k, &row));
              total += row.GetInt(bal_);
            }
            seen = total;
            return absl::OkStatus();
          }, far);
          if (r.outcome == Outcome::kCommitted) {
            ++sums;
            if (seen != kAccounts * kInit) ++bad_sums;
          }
          continue;
        }
        auto pick = [&]() -> uint64_t {
          return (rng() % 2) ? rng() % 5 : rng() % kAccounts;  // half the picks hot
        };
        uint64_t from = pick(), to = pick();
        if (from == to) continue;
        int64_t amount = 1 + rng() % 50;
        ExecResult r = RunToEnd(*ex, [&](Tx& tx) -> absl::Status {
          Row a, b;
          ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(accounts_, from, &a));
          ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(accounts_, to, &b));
          if (a.GetInt(bal_) < amount) return UserAbortError("insufficient");
          a.AddInt(bal_, -amount);
          b.AddInt(bal_, amount);
          return absl::OkStatus();
        }, far);
        if (r.outcome == Outcome::kCommitted) ++commits;
        ASSERT_NE(r.outcome, Outcome::kFailed) << r.status;
      }
    });
  }
  for (auto& t : threads) t.join();
  int64_t total = 0;
  for (int k = 0; k < kAccounts; ++k) {
    int64_t b = PeekBalance(k);
    EXPECT_GE(b, 0);
    total += b;
  }
  EXPECT_EQ(total, kAccounts * kInit);
  EXPECT_EQ(bad_sums.load(), 0) << "of " << sums.load() << " sums";
  EXPECT_GT(commits.load(), 100);
  EXPECT_GT(sums.load(), 0);
}

// Each committed transaction's footprint: reads (key, version seen) and
// writes (key, version produced). The conflict graph must be acyclic.
TEST_P(EngineTest, ConflictGraphOfCommittedHistoryIsAcyclic) {
  constexpr int kKeys = 8;
  LoadAccounts(kKeys, 0);
  const auto stop = Clock::now() + std::chrono::milliseconds(400);
  const auto far = stop + std::chrono::seconds(10);
  RwLatch mu;
  std::vector<Footprint> history;  // guarded by mu
  std::atomic<int> committed{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      ExecutorOptions o;
      o.record_footprint = true;
      auto ex = Exec(w, o);
      std::mt19937_64 rng(w + 100);
      std::vector<Footprint> mine;
      // Past `stop`, on (up to `far`) until 60 commits: a loaded machine may
      // give the threads little of the 400 ms.
      while ((Clock::now() < stop || (committed.load() <= 60 && Clock::now() < far)) && mine.size() < 3000) {
        uint64_t r1 = rng() % kKeys, r2 = rng() % kKeys, w1 = rng() % kKeys;
        bool blind = rng() % 2;
        ExecResult r = RunToEnd(*ex, [&](Tx& tx) -> absl::Status {
          ConstRow a, b;
          ENGINE_RETURN_IF_ERROR(tx.Read(accounts_, r1, &a));
          ENGINE_RETURN_IF_ERROR(tx.Read(accounts_, r2, &b));
          int64_t v = a.GetInt(bal_) + b.GetInt(bal_);
          Row c;
          ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(accounts_, w1, &c));
          c.SetInt(bal_, blind ? v : c.GetInt(bal_) + 1);
          return absl::OkStatus();
        }, far);
        if (r.outcome == Outcome::kCommitted) {
          mine.push_back(ex->last_footprint());
          ++committed;
        }
      }
      WriteGuard l(&mu);
      for (auto& f : mine) history.push_back(std::move(f));
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_GT(history.size(), 50u);

  // Versions written per key -> writer; each version written once.
  std::vector<std::map<uint64_t, int>> writer(kKeys);
  for (int t = 0; t < static_cast<int>(history.size()); ++t) {
    for (const auto& w : history[t].writes) {
      ASSERT_TRUE(writer[w.key].emplace(w.version, t).second)
          << "version " << w.version << " of key " << w.key << " written twice";
    }
  }
  std::vector<std::set<int>> edges(history.size());
  for (int k = 0; k < kKeys; ++k) {  // ww: version order
    int prev = -1;
    for (const auto& vw : writer[k]) {
      if (prev >= 0 && prev != vw.second) edges[prev].insert(vw.second);
      prev = vw.second;
    }
  }
  for (int t = 0; t < static_cast<int>(history.size()); ++t) {
    for (const auto& r : history[t].reads) {
      const auto& vers = writer[r.key];
      auto it = vers.find(r.version);
      if (it != vers.end() && it->second != t) edges[it->second].insert(t);  // wr
      // Read a version nobody in the history wrote: only the loaded one.
      if (it == vers.end()) EXPECT_EQ(r.version, 1u) << "read of an unknown version";
      auto next = vers.upper_bound(r.version);
      if (next != vers.end() && next->second != t) edges[t].insert(next->second);  // rw
    }
  }
  // Kahn's algorithm: every node must be removable.
  std::vector<int> indeg(history.size(), 0);
  for (const auto& e : edges) for (int d : e) ++indeg[d];
  std::vector<int> ready;
  for (int i = 0; i < static_cast<int>(indeg.size()); ++i) if (indeg[i] == 0) ready.push_back(i);
  size_t removed = 0;
  while (!ready.empty()) {
    int n = ready.back();
    ready.pop_back();
    ++removed;
    for (int d : edges[n]) if (--indeg[d] == 0) ready.push_back(d);
  }
  EXPECT_EQ(removed, history.size()) << "conflict graph has a cycle";
}

// Two transactions lock A then B and B then A, meeting at a barrier: the
// protocol must resolve it and both must eventually commit.
TEST_P(EngineTest, CrossedLockOrderIsResolved) {
  LoadAccounts(2, 0);
  std::atomic<int> barrier{0};
  std::vector<ExecResult> first(2);
  std::vector<int> attempts(2, 0);
  std::vector<std::thread> threads;
  const auto far = Clock::now() + std::chrono::seconds(10);
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      auto ex = Exec(w);
      uint64_t ts = 0;
      for (int n = 1;; ++n) {
        ExecResult r = ex->Run([&](Tx& tx) -> absl::Status {
          Row a, b;
          ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(accounts_, w, &a));
          if (n == 1) {
            barrier.fetch_add(1);
            while (barrier.load() < 2 && Clock::now() < far) std::this_thread::yield();
          }
          ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(accounts_, 1 - w, &b));
          a.AddInt(bal_, 1);
          b.AddInt(bal_, 1);
          return absl::OkStatus();
        }, &ts, n);
        if (n == 1) first[w] = r;
        if (r.outcome != Outcome::kConflictAbort || Clock::now() > far) {
          attempts[w] = n;
          ASSERT_EQ(r.outcome, Outcome::kCommitted);
          break;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(PeekBalance(0), 2);
  EXPECT_EQ(PeekBalance(1), 2);
  const std::string p = GetParam();
  if (p == "2pl-dldetect") {
    // Both held one lock and waited for the other: a real cycle.
    bool victim = first[0].cause == AbortCause::kDeadlock || first[1].cause == AbortCause::kDeadlock;
    EXPECT_TRUE(victim);
  } else if (p == "2pl-waitdie") {
    EXPECT_TRUE(first[0].cause == AbortCause::kWaitDie || first[1].cause == AbortCause::kWaitDie);
  } else if (p == "2pl-nowait") {
    EXPECT_TRUE(first[0].cause == AbortCause::kLockConflict ||
                first[1].cause == AbortCause::kLockConflict);
  } else if (p == "timestamp" || p == "mvcc") {
    // The older one finds the younger's pre-write on its second record.
    EXPECT_TRUE(first[0].cause == AbortCause::kTimestampTooOld ||
                first[1].cause == AbortCause::kTimestampTooOld);
  } else if (p == "maat") {
    // Whoever commits second read a row the first overwrote and overwrites
    // a row the first read: no commit timestamp fits both.
    EXPECT_TRUE(first[0].cause == AbortCause::kRangeEmpty ||
                first[1].cause == AbortCause::kRangeEmpty);
  } else if (p == "calvin" || p == "planned" || p == "qstore" || p.rfind("orthrus", 0) == 0) {
    // Both lock sets are taken whole, in one order: no deadlock, no abort.
    EXPECT_EQ(first[0].outcome, Outcome::kCommitted);
    EXPECT_EQ(first[1].outcome, Outcome::kCommitted);
  }
}

// TPC-C-like district/order/new-order: inserts, scans for the latest and the
// oldest rows, deletes, and the consistency conditions between them.
TEST_P(EngineTest, OrderedIndexesStayConsistentUnderInsertDeleteScan) {
  constexpr int kDistricts = 3;
  Schema ds;
  int next_o = ds.AddInt64("next_o_id");
  Table* district = db_->CreateTable("district", ds, {}).value();
  Schema os;
  int o_d = os.AddInt64("o_d_id");
  int o_id = os.AddInt64("o_id");
  int carrier = os.AddInt64("o_carrier_id");
  Table* orders = db_->CreateTable("orders", os, {true}).value();
  Schema ns;
  ns.AddInt64("no_o_id");
  Table* new_order = db_->CreateTable("new_order", ns, {true}).value();
  auto key = [](uint64_t d, uint64_t o) { return KeyPacker().Add(d, 8).Add(o, 32).key(); };
  for (int d = 0; d < kDistricts; ++d) {
    ASSERT_TRUE(db_->Load(district, d, [&](const Row& r) { r.SetInt(next_o, 1); }).ok());
  }
  const auto stop = Clock::now() + std::chrono::milliseconds(500);
  const auto far = stop + std::chrono::seconds(10);
  std::atomic<int> inconsistent{0}, delivered{0}, placed{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      auto ex = Exec(w);
      std::mt19937_64 rng(w + 7);
      std::vector<ConstRow> rows;
      while (Clock::now() < stop || (placed.load() == 0 && Clock::now() < far)) {
        uint64_t d = rng() % kDistricts;
        int kind = rng() % 3;
        if (kind == 0) {  // new order
          ExecResult r = RunToEnd(*ex, [&](Tx& tx) -> absl::Status {
            Row dist, o, no;
            ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(district, d, &dist));
            int64_t id = dist.GetInt(next_o);
            dist.SetInt(next_o, id + 1);
            ENGINE_RETURN_IF_ERROR(tx.Insert(orders, key(d, id), &o));
            o.SetInt(o_d, d);
            o.SetInt(o_id, id);
            ENGINE_RETURN_IF_ERROR(tx.Insert(new_order, key(d, id), &no));
            no.SetInt(0, id);
            return absl::OkStatus();
          }, far);
          if (r.outcome == Outcome::kCommitted) ++placed;
        } else if (kind == 1) {  // delivery of the oldest new order
          bool did = false;
          ExecResult r = RunToEnd(*ex, [&](Tx& tx) -> absl::Status {
            did = false;
            ScanSpec s;
            s.index = new_order->primary_ordered();
            s.lo = key(d, 0);
            s.hi = key(d, 0xffffffff);
            s.limit = 1;
            s.for_update = true;
            ENGINE_RETURN_IF_ERROR(tx.Scan(s, &rows));
            if (rows.empty()) return absl::OkStatus();
            uint64_t k = rows[0].key();
            ENGINE_RETURN_IF_ERROR(tx.Delete(new_order, k));
            Row o;
            ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(orders, k, &o));
            if (o.GetInt(carrier) != 0) return absl::InternalError("delivered twice");
            o.SetInt(carrier, 1 + w);
            did = true;
            return absl::OkStatus();
          }, far);
          ASSERT_NE(r.outcome, Outcome::kFailed) << r.status;
          if (r.outcome == Outcome::kCommitted && did) ++delivered;
        } else {  // order status: the latest order is next_o_id - 1
          int64_t seen_next = 0, latest = 0;
          ExecResult r = RunToEnd(*ex, [&](Tx& tx) -> absl::Status {
            ConstRow dist;
            ENGINE_RETURN_IF_ERROR(tx.Read(district, d, &dist));
            seen_next = dist.GetInt(next_o);
            ScanSpec s;
            s.index = orders->primary_ordered();
            s.lo = key(d, 0);
            s.hi = key(d, 0xffffffff);
            s.limit = 1;
            s.descending = true;
            ENGINE_RETURN_IF_ERROR(tx.Scan(s, &rows));
            latest = rows.empty() ? 0 : rows[0].GetInt(o_id);
            return absl::OkStatus();
          }, far);
          if (r.outcome == Outcome::kCommitted && latest != seen_next - 1) ++inconsistent;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(inconsistent.load(), 0);
  EXPECT_GT(placed.load(), 0);
  // Final state: orders 1..next-1 per district; new orders = undelivered ones.
  size_t total_orders = 0, total_new = 0;
  for (int d = 0; d < kDistricts; ++d) {
    ConstRow dist;
    ASSERT_TRUE(db_->Peek(district, d, &dist).ok());
    int64_t next = dist.GetInt(next_o);
    for (int64_t o = 1; o < next; ++o) {
      ConstRow row, no;
      ASSERT_TRUE(db_->Peek(orders, key(d, o), &row).ok()) << d << "/" << o;
      bool undelivered = row.GetInt(carrier) == 0;
      EXPECT_EQ(db_->Peek(new_order, key(d, o), &no).ok(), undelivered) << d << "/" << o;
      total_new += undelivered;
    }
    total_orders += next - 1;
  }
  EXPECT_EQ(total_orders, static_cast<size_t>(placed.load()));
  EXPECT_EQ(total_new + delivered.load(), total_orders);
  EXPECT_EQ(orders->primary_ordered()->size(), total_orders);
  EXPECT_EQ(new_order->primary_ordered()->size(), total_new);
  EXPECT_EQ(new_order->CountPresent(), total_new);
}

TEST_P(EngineTest, SecondaryIndexScanFindsRowsByNonUniqueKey) {
  Schema s;
  int last = s.AddInt64("last_id");
  int first = s.AddString("first", 16);
  Table* cust = db_->CreateTable("customer", s, {}).value();
  OrderedIndex* by_last = db_->CreateIndex(cust, "by_last", [last](const ConstRow& r) {
    return static_cast<uint64_t>(r.GetInt(last));
  }).value();
  for (int c = 0; c < 30; ++c) {
    ASSERT_TRUE(db_->Load(cust, c, [&](const Row& r) {
      r.SetInt(last, c % 3);
      r.SetString(first, c % 2 ? "odd" : "even");
    }).ok());
  }
  auto ex = Exec(0);
  std::vector<ConstRow> rows;
  ExecResult r = RunToEnd(*ex, [&](Tx& tx) -> absl::Status {
    Row n;
    ENGINE_RETURN_IF_ERROR(tx.Insert(cust, 100, &n));
    n.SetInt(last, 1);
    return absl::OkStatus();
  }, Clock::now() + std::chrono::seconds(5));
  ASSERT_EQ(r.outcome, Outcome::kCommitted);
  r = RunToEnd(*ex, [&](Tx& tx) -> absl::Status {
    ScanSpec sp;
    sp.index = by_last;
    sp.lo = sp.hi = 1;
    return tx.Scan(sp, &rows);
  }, Clock::now() + std::chrono::seconds(5));
  ASSERT_EQ(r.outcome, Outcome::kCommitted);
  ASSERT_EQ(rows.size(), 11u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(rows[i].key(), 3 * i + 1);
  EXPECT_EQ(rows[10].key(), 100u);
  EXPECT_EQ(db_->CreateIndex(cust, "late", [](const ConstRow&) { return 0; }).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

INSTANTIATE_TEST_SUITE_P(Protocols, EngineTest, ::testing::ValuesIn(ProtocolNames()), ParamName);
// Orthrus with several CC threads: requests span partitions and are
// forwarded from one CC thread to the next.
INSTANTIATE_TEST_SUITE_P(OrthrusCcThreads, EngineTest, ::testing::Values("orthrus/2", "orthrus/5"),
                         ParamName);
// Q-Store under its other placements (ProtocolNames' "qstore" is hash):
// learned switches from hash to the learned placement part-way; and under
// speculative execution.
INSTANTIATE_TEST_SUITE_P(QStorePlacements, EngineTest,
                         ::testing::Values("qstore/range", "qstore/learned", "qstore/speculative",
                                           "qstore/speculative+learned"),
                         ParamName);

// WAIT_DIE: every wait is by an older transaction on younger holders.

TEST(ProtocolNamesTest, ListsDenevasProtocols) {
  for (const char* p : {"timestamp", "mvcc", "maat"}) {
    EXPECT_NE(std::find(ProtocolNames().begin(), ProtocolNames().end(), p), ProtocolNames().end()) << p;
    EXPECT_TRUE(Database::Create({p}).ok()) << p;
  }
}

}  // namespace
}  // namespace engine
}  // namespace corral
