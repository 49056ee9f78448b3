#include "engine/partitioned/partitioned.h"

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include <mutex>
#include "gtest/gtest.h"

namespace corral {
namespace partitioned {
namespace {

constexpr int64_t kKeysPerPartition = 24;  // small: many conflicts
constexpr int64_t kInitial = 1000;

struct Mix {
  double f = 0.5;            // multi-partition transfers
  double abort = 0.1;        // user aborts
  double multi_round = 0.3;  // of MP: read round, then write round
};

// Closed-loop clients: each keeps one transfer outstanding and submits the
// next from its completion callback until it has run `per_client`.
class Clients {
 public:
  Clients(PartitionedEngine* eng, int partitions, Mix mix, int clients,
          int per_client)
      : eng_(eng), P_(partitions), mix_(mix) {
    for (int i = 0; i < clients; ++i) {
      auto c = std::make_unique<Client>();
      c->rng.seed(1234 + i);
      c->left = per_client;
      clients_.push_back(std::move(c));
    }
  }
  void Start() {
    for (auto& c : clients_) Next(c.get());
  }
  int64_t committed() const { return committed_.load(); }
  int64_t aborted() const { return aborted_.load(); }
  int64_t mp_committed() const { return mp_committed_.load(); }

 private:
  struct Client {
    std::mt19937_64 rng;
    int left = 0;
  };
  int64_t Key(Client* c, int partition) {
    std::uniform_int_distribution<int64_t> d(0, kKeysPerPartition - 1);
    return d(c->rng) * P_ + partition;
  }
  void Next(Client* c) {
    if (c->left-- <= 0) return;
    std::uniform_real_distribution<double> u(0, 1);
    std::uniform_int_distribution<int> pd(0, P_ - 1);
    const bool mp = P_ > 1 && u(c->rng) < mix_.f;
    const int pa = pd(c->rng);
    int pb = pa;
    if (mp) pb = (pa + 1 + pd(c->rng) % (P_ - 1)) % P_;
    int64_t a = Key(c, pa), b = Key(c, pb);
    while (b == a) b = Key(c, pb);
    const int64_t amount = 1 + static_cast<int64_t>(u(c->rng) * 50);
    TxnRequest t;
    t.user_abort = u(c->rng) < mix_.abort;
    if (mp && u(c->rng) < mix_.multi_round) {
      t.rounds = {{Op::Read(a), Op::Read(b)},
                  {Op::Add(a, -amount), Op::Add(b, amount)}};
    } else {
      t.rounds = {{Op::Add(a, -amount), Op::Add(b, amount)}};
    }
    t.done = [this, c](const TxnResult& r) {
      if (r.committed) {
        committed_.fetch_add(1);
        if (r.multi_partition) mp_committed_.fetch_add(1);
      } else {
        aborted_.fetch_add(1);
      }
      Next(c);
    };
    ASSERT_TRUE(eng_->Submit(std::move(t)).ok());
  }

  PartitionedEngine* eng_;
  const int P_;
  const Mix mix_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::atomic<int64_t> committed_{0}, aborted_{0}, mp_committed_{0};
};

std::unique_ptr<PartitionedEngine> MakeEngine(Scheme s, int partitions,
                                              bool record) {
  PartitionedOptions o;
  o.partitions = partitions;
  o.keys_per_partition = kKeysPerPartition;
  o.scheme = s;
  o.network_stall_ns = 20000;
  o.lock_timeout_ns = 2000000;
  o.record_history = record;
  auto eng = PartitionedEngine::Create(o);
  EXPECT_TRUE(eng.ok()) << eng.status();
  for (int64_t k = 0; k < partitions * kKeysPerPartition; ++k) {
    EXPECT_TRUE((*eng)->Load(k, kInitial).ok());
  }
  return std::move(eng).value();
}

class SchemeTest : public ::testing::TestWithParam<Scheme> {};

TEST_P(SchemeTest, SingleTransferMovesMoney) {
  auto eng = MakeEngine(GetParam(), 2, false);
  std::mutex mu;
  std::vector<TxnResult> got;
  auto record = [&](const TxnResult& r) {
    std::lock_guard<std::mutex> l(mu);
    got.push_back(r);
  };
  TxnRequest mp;
  mp.rounds = {{Op::Read(0), Op::Read(1)}, {Op::Add(0, -7), Op::Add(1, 7)}};
  mp.done = record;
  ASSERT_TRUE(eng->Submit(std::move(mp)).ok());
  eng->Drain();
  TxnRequest sp;
  sp.rounds = {{Op::Add(2, -3), Op::Add(4, 3), Op::Read(2)}};
  sp.done = record;
  ASSERT_TRUE(eng->Submit(std::move(sp)).ok());
  TxnRequest ab;
  ab.rounds = {{Op::Add(3, 100), Op::Add(0, 100)}};
  ab.user_abort = true;
  ab.done = record;
  ASSERT_TRUE(eng->Submit(std::move(ab)).ok());
  eng->Drain();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(got[0].committed);
  EXPECT_TRUE(got[0].multi_partition);
  EXPECT_EQ(got[0].rounds, 2);
  EXPECT_EQ(got[0].reads.size(), 2u);
  EXPECT_EQ(*eng->Value(0), kInitial - 7);
  EXPECT_EQ(*eng->Value(1), kInitial + 7);
  EXPECT_EQ(*eng->Value(2), kInitial - 3);
  EXPECT_EQ(*eng->Value(4), kInitial + 3);
  EXPECT_EQ(*eng->Value(3), kInitial);  // the aborted MP txn left nothing
  int aborted = 0;
  for (const auto& r : got) aborted += !r.committed && r.user_aborted;
  EXPECT_EQ(aborted, 1);
  EXPECT_EQ(eng->protocol_errors(), 0);
}

// Money conservation and serializability under concurrent MP transfers,
// multi-round transfers and user aborts.
TEST_P(SchemeTest, StressConservesMoneyAndIsSerializable) {
  for (int partitions : {2, 3}) {
    auto eng = MakeEngine(GetParam(), partitions, true);
    Clients clients(eng.get(), partitions, Mix{}, 12, 250);
    clients.Start();
    eng->Drain();
    Window w = eng->TakeWindow();
    EXPECT_EQ(clients.committed() + clients.aborted(), 12 * 250);
    EXPECT_GT(clients.mp_committed(), 100);
    EXPECT_GT(clients.aborted(), 100);
    EXPECT_EQ(*eng->Sum(), partitions * kKeysPerPartition * kInitial);
    EXPECT_EQ(eng->protocol_errors(), 0);
    auto history = eng->TakeHistory();
    EXPECT_GT(history.size(), 1000u);
    absl::Status s = CheckSerializable(history);
    EXPECT_TRUE(s.ok()) << s;
    if (GetParam() == Scheme::kSpeculation) {
      // User aborts of MP txns cascade into re-executions.
      EXPECT_GT(w.reexecuted, 0) << w.ToString();
      EXPECT_GT(w.params.tsp_spec_us, 0);
    }
    EXPECT_NEAR(w.params.f, 0.5, 0.1) << w.ToString();
    EXPECT_NEAR(w.params.abort_rate, 0.1, 0.05) << w.ToString();
    EXPECT_GT(w.params.tmp_us, w.params.tmp_cpu_us) << w.ToString();
  }
}

INSTANTIATE_TEST_SUITE_P(AllSchemes, SchemeTest,
                         ::testing::Values(Scheme::kBlocking,
                                           Scheme::kSpeculation,
                                           Scheme::kLocking),
                         [](const auto& info) {
                           return std::string(SchemeName(info.param));
                         });

TEST(PartitionedTest, SwitchingUnderLoadKeepsInvariants) {
  auto eng = MakeEngine(Scheme::kBlocking, 2, true);
  Clients clients(eng.get(), 2, Mix{}, 12, 400);
  clients.Start();
  const Scheme order[] = {Scheme::kSpeculation, Scheme::kLocking,
                          Scheme::kBlocking, Scheme::kLocking,
                          Scheme::kSpeculation, Scheme::kBlocking};
  for (Scheme s : order) {
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    ASSERT_TRUE(eng->SwitchScheme(s).ok());
    EXPECT_EQ(eng->scheme(), s);
  }
  eng->Drain();
  EXPECT_EQ(clients.committed() + clients.aborted(), 12 * 400);
  EXPECT_EQ(*eng->Sum(), 2 * kKeysPerPartition * kInitial);
  EXPECT_EQ(eng->protocol_errors(), 0);
  absl::Status s = CheckSerializable(eng->TakeHistory());
  EXPECT_TRUE(s.ok()) << s;
}

TEST(PartitionedTest, QueueChoiceMakesTransactionsMultiPartition) {
  PartitionedOptions o;
  o.keys_per_partition = 8;
  // Everything goes to queue 1: a txn on partition 0's keys only is MP.
  o.queue_choice = [](const TxnRequest&) { return 1; };
  auto eng = PartitionedEngine::Create(o).value();
  std::atomic<int> mp{0};
  TxnRequest t;
  t.rounds = {{Op::Add(0, 1), Op::Add(2, -1)}};
  t.done = [&](const TxnResult& r) { mp += r.multi_partition && r.committed; };
  ASSERT_TRUE(eng->Submit(std::move(t)).ok());
  eng->Drain();
  EXPECT_EQ(mp.load(), 1);
  EXPECT_EQ(*eng->Value(0), 1);
  EXPECT_EQ(*eng->Value(2), -1);
}

TEST(PartitionedTest, RejectsBadInput) {
  PartitionedOptions o;
  o.partitions = 0;
  EXPECT_FALSE(PartitionedEngine::Create(o).ok());
  o.partitions = 2;
  o.keys_per_partition = 4;
  auto eng = PartitionedEngine::Create(o).value();
  TxnRequest t;
  EXPECT_FALSE(eng->Submit(t).ok());  // no rounds
  t.rounds = {{Op::Read(8)}};
  EXPECT_FALSE(eng->Submit(t).ok());  // out of range
  EXPECT_FALSE(ParseScheme("nope").ok());
  EXPECT_EQ(*ParseScheme("locking"), Scheme::kLocking);
}

TEST(SerializabilityTest, DetectsCyclesAndLostWrites) {
  // T1 reads x@0, T2 writes x@1 and reads y@0, T1 writes y@1: cycle.
  std::vector<AccessRecord> cyc = {
      {1, 10, 0, false}, {2, 10, 0, false}, {2, 10, 1, true},
      {2, 20, 0, false}, {1, 20, 0, false}, {1, 20, 1, true}};
  EXPECT_FALSE(CheckSerializable(cyc).ok());
  // Serial: T1 then T2 on both keys.
  std::vector<AccessRecord> ok = {
      {1, 10, 0, false}, {1, 10, 1, true},  {1, 20, 0, false},
      {1, 20, 1, true},  {2, 10, 1, false}, {2, 10, 2, true},
      {2, 20, 1, false}, {2, 20, 2, true}};
  EXPECT_TRUE(CheckSerializable(ok).ok());
  // Two writers of the same version (a lost update).
  std::vector<AccessRecord> lost = {{1, 10, 1, true}, {2, 10, 1, true}};
  EXPECT_FALSE(CheckSerializable(lost).ok());
  std::vector<AccessRecord> gap = {{1, 10, 2, true}};
  EXPECT_FALSE(CheckSerializable(gap).ok());
}

}  // namespace
}  // namespace partitioned
}  // namespace corral
