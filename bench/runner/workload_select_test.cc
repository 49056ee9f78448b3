#include "bench/runner/workload_select.h"

#include <memory>

#include "bench/runner/config.h"
#include "bench/workloads/tpcc.h"
#include "bench/workloads/ycsb.h"
#include "gtest/gtest.h"

namespace corral {
namespace bench {
namespace {

std::unique_ptr<workloads::Workload> Make(const BenchConfig& c) {
  auto w = MakeWorkloadFactory()(c);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? std::move(*w) : nullptr;
}

// Counts the TPC-C transaction types the workload draws.
std::vector<int> TpccTypes(const BenchConfig& c) {
  std::vector<int> n(5, 0);
  auto w = Make(c);
  if (w == nullptr) return n;
  workloads::Rng rng(7);
  for (int i = 0; i < 2000; ++i) {
    auto t = w->Next(rng);
    ++n[static_cast<workloads::TpccTxn*>(t.get())->tpcc_type()];
  }
  return n;
}

TEST(WorkloadSelect, TpccMixKeySelectsPaymentOnlyAndNewOrderOnly) {
  BenchConfig c;
  ASSERT_TRUE(ApplySetting(&c, "warehouses", "2").ok());
  std::vector<int> standard = TpccTypes(c);
  EXPECT_GT(standard[workloads::kOrderStatus], 0);  // the default mix has all five

  ASSERT_TRUE(ApplySetting(&c, "tpcc_mix", "Payment").ok());
  ASSERT_TRUE(Validate(c).ok());
  EXPECT_EQ(TpccTypes(c), (std::vector<int>{0, 2000, 0, 0, 0}));
  ASSERT_TRUE(ApplySetting(&c, "tpcc_mix", "neworder").ok());
  EXPECT_EQ(TpccTypes(c), (std::vector<int>{2000, 0, 0, 0, 0}));
  ASSERT_TRUE(ApplySetting(&c, "tpcc_mix", "np").ok());
  std::vector<int> np = TpccTypes(c);
  EXPECT_GT(np[workloads::kNewOrder], 800);
  EXPECT_GT(np[workloads::kPayment], 800);
  EXPECT_EQ(np[workloads::kNewOrder] + np[workloads::kPayment], 2000);

  absl::Status bad = ApplySetting(&c, "tpcc_mix", "delivery");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.message()).find("tpcc_mix"), std::string::npos) << bad;
  EXPECT_EQ(c.tpcc_mix, "np");  // unchanged by the bad value
  c.workload = "ycsb";
  EXPECT_FALSE(Validate(c).ok());  // the key names a TPC-C mix
}

TEST(WorkloadSelect, TpccRowsKeySelectsDbx1000WorkAndSizes) {
  BenchConfig c;
  c.workload = "tpcc-np";
  ASSERT_TRUE(ApplySetting(&c, "warehouses", "1").ok());
  ASSERT_TRUE(ApplySetting(&c, "tpcc_rows", "DBx1000").ok());
  ASSERT_TRUE(Validate(c).ok());
  auto w = Make(c);
  ASSERT_NE(w, nullptr);
  const auto& p = static_cast<workloads::TpccWorkload*>(w.get())->params();
  EXPECT_FALSE(p.insert_rows);
  EXPECT_EQ(p.items, 100000);
  EXPECT_EQ(p.customers_per_district, 3000);
  ASSERT_TRUE(ApplySetting(&c, "tpcc_rows", "all").ok());
  w = Make(c);
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(static_cast<workloads::TpccWorkload*>(w.get())->params().insert_rows);
  EXPECT_FALSE(ApplySetting(&c, "tpcc_rows", "none").ok());
  EXPECT_EQ(c.tpcc_rows, "all");  // unchanged by the bad value
  c.workload = "smallbank";
  EXPECT_FALSE(Validate(c).ok());  // the key names TPC-C rows
}

TEST(WorkloadSelect, UpdateRateKeyMakesHalfUpdateOrReadOnlyYcsbTransactions) {
  BenchConfig c;
  c.workload = "ycsb";
  ASSERT_TRUE(ApplySetting(&c, "update_rate", "0.3").ok());
  ASSERT_TRUE(Validate(c).ok());
  auto w = Make(c);
  ASSERT_NE(w, nullptr);
  workloads::Rng rng(3);
  int updates = 0;
  const int kTxns = 5000;
  for (int i = 0; i < kTxns; ++i) {
    auto t = w->Next(rng);
    int rmw = 0;
    for (const auto& op : static_cast<workloads::YcsbTxn*>(t.get())->ops) rmw += op.rmw;
    ASSERT_TRUE(rmw == 0 || rmw == 5) << rmw;  // 5 reads / 5 updates, or 10 reads
    updates += rmw == 5;
  }
  EXPECT_NEAR(updates / double(kTxns), 0.3, 0.03);

  ASSERT_TRUE(ApplySetting(&c, "update_rate", "1.5").ok());
  EXPECT_FALSE(Validate(c).ok());
  c.update_rate = 0.5;
  c.workload = "tpcc";
  EXPECT_FALSE(Validate(c).ok());
}

}  // namespace
}  // namespace bench
}  // namespace corral
