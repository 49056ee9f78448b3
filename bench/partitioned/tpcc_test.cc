// TPC-C partitioned by warehouse under each scheme: the adapted consistency
// conditions (tpcc.h), conflict-serializability of the committed history and
// the engine's protocol checks must hold after a closed-loop run with many
// remote (multi-partition) transactions; a corrupted value must be caught.
#include "bench/partitioned/tpcc.h"

#include <chrono>
#include <memory>
#include <thread>

#include "gtest/gtest.h"

namespace corral {
namespace partitioned {
namespace {

workloads::TpccParams SmallParams(double remote) {
  workloads::TpccParams p;
  p.warehouses = 4;  // 2 per partition: some remote warehouses are local
  p.items = 200;     // small: hot stock rows, many conflicts
  p.customers_per_district = 30;
  p.remote_item_prob = remote;
  p.remote_payment_prob = remote;
  p.invalid_item_prob = 0.05;
  return p;
}

struct TpccRun {
  std::unique_ptr<PartitionedTpcc> tpcc;
  std::unique_ptr<PartitionedEngine> eng;
  int64_t finished = 0, mp = 0;
};

TpccRun RunTpcc(Scheme s, double remote, int64_t txns) {
  TpccRun r;
  r.tpcc = std::make_unique<PartitionedTpcc>(SmallParams(remote), 2);
  PartitionedOptions o;
  o.partitions = 2;
  o.keys_per_partition = r.tpcc->keys_per_partition();
  o.scheme = s;
  o.network_stall_ns = 20000;
  o.record_history = true;
  r.eng = PartitionedEngine::Create(o).value();
  EXPECT_TRUE(r.tpcc->Load(r.eng.get()).ok());
  TpccDriver d(r.eng.get(), r.tpcc.get(), 16, 7);
  d.Start();
  // Not a timing assertion: waits for progress, gives up after 120 s.
  for (int i = 0; i < 12000 && d.finished() < txns; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  d.Stop();
  r.eng->Drain();
  r.finished = d.finished();
  r.mp = d.committed_mp();
  return r;
}

class TpccSchemeTest : public ::testing::TestWithParam<Scheme> {};

TEST_P(TpccSchemeTest, ConsistentAndSerializable) {
  TpccRun r = RunTpcc(GetParam(), 0.3, 10000);
  ASSERT_GE(r.finished, 10000);
  EXPECT_GT(r.mp, 100);  // remote items / customers made MP transactions
  EXPECT_GT(r.tpcc->committed_new_orders(), 500);
  EXPECT_GT(r.tpcc->committed_payments(), 500);
  EXPECT_EQ(r.eng->protocol_errors(), 0);
  absl::Status c = r.tpcc->Check(r.eng.get());
  EXPECT_TRUE(c.ok()) << c;
  absl::Status s = CheckSerializable(r.eng->TakeHistory());
  EXPECT_TRUE(s.ok()) << s;
}

TEST_P(TpccSchemeTest, SwitchingSchemesMidRunStaysConsistent) {
  auto tpcc = std::make_unique<PartitionedTpcc>(SmallParams(0.5), 2);
  PartitionedOptions o;
  o.partitions = 2;
  o.keys_per_partition = tpcc->keys_per_partition();
  o.scheme = GetParam();
  auto eng = PartitionedEngine::Create(o).value();
  ASSERT_TRUE(tpcc->Load(eng.get()).ok());
  TpccDriver d(eng.get(), tpcc.get(), 16, 11);
  d.Start();
  int64_t goal = 500;
  for (int k = 0; k < 3; ++k) {
    for (int i = 0; i < 12000 && d.finished() < goal; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(eng->SwitchScheme(static_cast<Scheme>((static_cast<int>(GetParam()) + k + 1) % 3)).ok());
    goal += 500;
  }
  d.Stop();
  eng->Drain();
  ASSERT_GE(d.finished(), 1500);
  absl::Status c = tpcc->Check(eng.get());
  EXPECT_TRUE(c.ok()) << c;
}

INSTANTIATE_TEST_SUITE_P(Schemes, TpccSchemeTest,
                         ::testing::Values(Scheme::kBlocking, Scheme::kSpeculation,
                                           Scheme::kLocking),
                         [](const ::testing::TestParamInfo<Scheme>& i) {
                           return std::string(SchemeName(i.param));
                         });

// The check is not vacuous: each kind of corruption is caught.
TEST(TpccCheck, CatchesCorruption) {
  TpccRun r = RunTpcc(Scheme::kSpeculation, 0.3, 500);
  ASSERT_TRUE(r.tpcc->Check(r.eng.get()).ok());
  const PartitionedTpcc& t = *r.tpcc;
  // A district's D_YTD off by one cent: W_YTD = sum D_YTD fails.
  const int64_t k = t.Key(2, t.DistrictSlot(3, PartitionedTpcc::kDYtd));
  const int64_t v = r.eng->Value(k).value();
  ASSERT_TRUE(r.eng->Load(k, v + 1).ok());
  EXPECT_FALSE(r.tpcc->Check(r.eng.get()).ok());
  ASSERT_TRUE(r.eng->Load(k, v).ok());
  ASSERT_TRUE(r.tpcc->Check(r.eng.get()).ok());
  // A lost NewOrder increment: D_NEXT_O_ID one lower.
  const int64_t n = t.Key(1, t.DistrictSlot(1, PartitionedTpcc::kDNextOId));
  const int64_t nv = r.eng->Value(n).value();
  ASSERT_TRUE(r.eng->Load(n, nv - 1).ok());
  EXPECT_FALSE(r.tpcc->Check(r.eng.get()).ok());
  ASSERT_TRUE(r.eng->Load(n, nv).ok());
  // Half of a remote payment: a D_PAY_CNT without its customer's count.
  const int64_t p = t.Key(3, t.DistrictSlot(2, PartitionedTpcc::kDPayCnt));
  ASSERT_TRUE(r.eng->Load(p, r.eng->Value(p).value() + 1).ok());
  EXPECT_FALSE(r.tpcc->Check(r.eng.get()).ok());
}

TEST(TpccRemote, RemoteFractionDrivesMultiPartitionShare) {
  TpccRun none = RunTpcc(Scheme::kLocking, 0.0, 1000);
  TpccRun half = RunTpcc(Scheme::kLocking, 0.5, 1000);
  EXPECT_EQ(none.mp, 0);
  EXPECT_GT(half.mp, 100);
  EXPECT_TRUE(none.tpcc->Check(none.eng.get()).ok());
  EXPECT_TRUE(half.tpcc->Check(half.eng.get()).ok());
}

}  // namespace
}  // namespace partitioned
}  // namespace corral
