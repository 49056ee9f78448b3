// Correctness tests of the engine under every protocol: CRUD and rollback,
// money conservation under hot-key stress, a conflict-graph serializability
// check over recorded footprints, deadlock resolution, wait-die ordering,
// and concurrent inserts/deletes/scans on ordered indexes.
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

#include "engine/latch.h"
#include "engine/cc.h"
#include "gtest/gtest.h"

namespace corral {
namespace engine {
namespace {

using scheduler::AbortCause;
using scheduler::ExecResult;
using scheduler::Outcome;
using Clock = std::chrono::steady_clock;

// Runs `proc` until it does not conflict-abort (same logical txn: wait-die
// timestamp kept). Gives up after `deadline`.
template <typename F>
ExecResult RunToEnd(EngineExecutor& ex, F proc, Clock::time_point deadline, int* attempts = nullptr) {
  uint64_t ts = 0;
  int n = 0;
  for (;;) {
    ++n;
    ExecResult r = ex.Run(proc, &ts, n);
    if (r.outcome != Outcome::kConflictAbort || Clock::now() > deadline) {
      if (attempts) *attempts = n;
      return r;
    }
  }
}

// A test parameter: a protocol name, or "orthrus/N" (N CC threads).
DatabaseOptions OptionsFor(const std::string& param) {
  DatabaseOptions o;
  o.protocol = param;
  const size_t slash = param.find('/');
  if (slash != std::string::npos) {
    o.protocol = param.substr(0, slash);
    o.orthrus_cc_threads = std::stoi(param.substr(slash + 1));
  }
  return o;
}

std::string ParamName(const ::testing::TestParamInfo<std::string>& i) {
  std::string n = i.param;
  for (char& c : n) {
    if (c == '-' || c == '/') c = '_';
  }
  return n;
}

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

// WAIT_DIE: every wait is by an older transaction on younger holders.
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
TEST(ProtocolNamesTest, ListsDenevasProtocols) {
  for (const char* p : {"timestamp", "mvcc", "maat"}) {
    EXPECT_NE(std::find(ProtocolNames().begin(), ProtocolNames().end(), p), ProtocolNames().end()) << p;
    EXPECT_TRUE(Database::Create({p}).ok()) << p;
  }
}

// One table "t" of int64 balances, created under a chosen protocol.
class OneTableDb {
 protected:
  void MakeDb(const DatabaseOptions& o, int keys, int64_t balance) {
    db_ = Database::Create(o).value();
    Schema s;
    bal_ = s.AddInt64("balance");
    t_ = db_->CreateTable("t", s, {}).value();
    for (int k = 0; k < keys; ++k) {
      ASSERT_TRUE(db_->Load(t_, k, [&](const Row& r) { r.SetInt(bal_, balance); }).ok());
    }
  }
  int64_t Peek(uint64_t key) {
    ConstRow r;
    EXPECT_TRUE(db_->Peek(t_, key, &r).ok());
    return r.valid() ? r.GetInt(bal_) : -1;
  }
  std::unique_ptr<Database> db_;
  Table* t_ = nullptr;
  int bal_ = 0;
};

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

// ---------------------------------------------------------------- planned

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
    MakeDb(o, keys, balance);
  }
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
// count-based batching.
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
        if (r.outcome == Outcome::kCommitted) {
          ++commits;
        } else if (r.outcome == Outcome::kUserAbort) {
          ++user_aborts;
        } else {
          ++other;
        }
      }
      EXPECT_EQ(ex->stats().total_conflicts(), 0u);
      EXPECT_EQ(ex->stats().replans, 0u);
      EXPECT_EQ(ex->stats().recons, 0u);
      EXPECT_EQ(ex->stats().declared, 300u);
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
                         ::testing::Values("calvin", "planned", "qstore", "orthrus", "orthrus/4"),
                         ParamName);

// qstore: every transaction updates one hot row (and a cold one; 4 queues,
// so cold rows share queues with each other and with the hot one). They run
// on the hot row in exactly the order the planners placed them (batches of
// 3 split into 2 priority groups), and the outcome, user aborts included
// (a transaction that wrote the hot row and then aborts leaves no trace),
// is the serial replay of that order.
class QStoreTest : public ::testing::Test, protected OneTableDb {};

TEST_F(QStoreTest, HotKeyRunsInPlannedOrderAndUserAbortsAreDeterministic) {
  DatabaseOptions o;
  o.protocol = "qstore";
  o.qstore_batch_txns = 3;
  o.qstore_queues = 4;
  o.qstore_planners = 2;
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

TEST(QStoreOptionsTest, BadSettingsAreRejected) {
  DatabaseOptions o;
  o.protocol = "qstore";
  EXPECT_TRUE(Database::Create(o).ok());
  for (auto bad : std::vector<std::function<void(DatabaseOptions&)>>{
           [](DatabaseOptions& d) { d.qstore_batch_ns = 0; },
           [](DatabaseOptions& d) { d.qstore_batch_txns = -1; },
           [](DatabaseOptions& d) { d.qstore_queues = 0; },
           [](DatabaseOptions& d) { d.qstore_planners = 0; }}) {
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
