#include "bench/workloads/tpcc.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "bench/workloads/factory.h"
#include "bench/workloads/workload_testing.h"
#include "engine/engine.h"
#include "gtest/gtest.h"
#include "policies/ref_extractor.h"

namespace corral {
namespace workloads {
namespace {

TpccParams SmallParams() {
  TpccParams p;
  p.warehouses = 2;
  p.items = 1000;
  p.customers_per_district = 30;
  return p;
}

class TpccProtocolTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TpccProtocolTest, ConcurrentRunOfAllFiveTypesKeepsConsistency) {
  auto db = NewDb(GetParam());
  TpccWorkload w(SmallParams());
  ASSERT_TRUE(w.Load(db.get()).ok());
  ASSERT_TRUE(w.Check(*db).ok()) << w.Check(*db);
  RunOptions opt;
  opt.threads = 3;
  opt.seconds = 0.4;
  RunStats s = RunConcurrently(w, db.get(), opt);
  ExpectCleanRunOfEveryType(w, s);
  absl::Status st = w.Check(*db);
  EXPECT_TRUE(st.ok()) << st;
}

TEST_P(TpccProtocolTest, NewOrderPaymentMixKeepsConsistency) {
  auto db = NewDb(GetParam());
  TpccParams p = SmallParams();
  p.warehouses = 1;  // all threads on one warehouse: heavy contention
  p.mix = {50, 50, 0, 0, 0};
  TpccWorkload w(p, "tpcc-np");
  ASSERT_TRUE(w.Load(db.get()).ok());
  RunOptions opt;
  opt.threads = 3;
  opt.seconds = 0.25;
  RunStats s = RunConcurrently(w, db.get(), opt);
  EXPECT_EQ(s.failed, 0u) << s.first_failure;
  EXPECT_GT(s.commits_by_type[kNewOrder], 0u);
  EXPECT_GT(s.commits_by_type[kPayment], 0u);
  EXPECT_EQ(s.commits_by_type[kDelivery], 0u);
  EXPECT_TRUE(w.Check(*db).ok()) << w.Check(*db);
}

TEST_P(TpccProtocolTest, WithoutRowInsertsNoRowIsAddedAndCondition1Holds) {
  auto db = NewDb(GetParam());
  TpccParams p = SmallParams();
  p.warehouses = 1;
  p.mix = {50, 50, 0, 0, 0};
  p.insert_rows = false;  // DBx1000's TPC-C
  TpccWorkload w(p, "tpcc-np");
  ASSERT_TRUE(w.Load(db.get()).ok());
  const TpccTables& t = w.tables();
  const size_t orders = t.orders->CountPresent(), new_orders = t.new_order->CountPresent(),
               lines = t.order_line->CountPresent(), history = t.history->CountPresent();
  engine::ConstRow w0;
  ASSERT_TRUE(db->Peek(t.warehouse, 1, &w0).ok());
  const double ytd0 = w0.GetDouble(t.warehouse->schema().Find("w_ytd"));
  RunOptions opt;
  opt.threads = 3;
  opt.seconds = 0.25;
  RunStats s = RunConcurrently(w, db.get(), opt);
  EXPECT_EQ(s.failed, 0u) << s.first_failure;
  ASSERT_GT(s.commits_by_type[kNewOrder], 0u);
  ASSERT_GT(s.commits_by_type[kPayment], 0u);
  EXPECT_EQ(t.orders->CountPresent(), orders);
  EXPECT_EQ(t.new_order->CountPresent(), new_orders);
  EXPECT_EQ(t.order_line->CountPresent(), lines);
  EXPECT_EQ(t.history->CountPresent(), history);
  engine::ConstRow w1;
  ASSERT_TRUE(db->Peek(t.warehouse, 1, &w1).ok());
  EXPECT_GT(w1.GetDouble(t.warehouse->schema().Find("w_ytd")), ytd0);  // Payments did run
  absl::Status st = w.Check(*db);
  EXPECT_TRUE(st.ok()) << st;
}

INSTANTIATE_TEST_SUITE_P(AllProtocols, TpccProtocolTest,
                         ::testing::ValuesIn(TestProtocols()),
                         ProtocolParamName);

// Runs `fn` as one committed transaction.
void Mutate(engine::Database* db, std::function<absl::Status(engine::Tx&)> fn) {
  auto ex = db->NewExecutor(0, {}).value();
  engine::FunctionTxn t(std::move(fn));
  scheduler::ExecResult r = ex->Execute(t);
  ASSERT_EQ(r.outcome, scheduler::Outcome::kCommitted) << r.status;
}

class TpccCorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = NewDb("occ");
    ASSERT_TRUE(w_.Load(db_.get()).ok());
    ASSERT_TRUE(w_.Check(*db_).ok());
  }
  void ExpectViolation(const std::string& condition) {
    absl::Status st = w_.Check(*db_);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find(condition), absl::string_view::npos) << st;
  }
  std::unique_ptr<engine::Database> db_;
  TpccWorkload w_{SmallParams()};
};

TEST_F(TpccCorruptionTest, BumpedDistrictYtdViolatesCondition1) {
  const engine::Table* d = w_.tables().district;
  Mutate(db_.get(), [&](engine::Tx& tx) {
    engine::Row r;
    ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(d, TpccDistrictKey(2, 3), &r));
    r.AddDouble(d->schema().Find("d_ytd"), 1.0);
    return absl::OkStatus();
  });
  ExpectViolation("condition 1");
}

TEST_F(TpccCorruptionTest, BumpedNextOrderIdViolatesCondition2) {
  const engine::Table* d = w_.tables().district;
  Mutate(db_.get(), [&](engine::Tx& tx) {
    engine::Row r;
    ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(d, TpccDistrictKey(1, 1), &r));
    r.AddInt(d->schema().Find("d_next_o_id"), 1);
    return absl::OkStatus();
  });
  ExpectViolation("condition 2");
}

TEST_F(TpccCorruptionTest, HoleInNewOrdersViolatesCondition3) {
  // 30 orders, the newest 9 undelivered: new_order holds 22..30.
  Mutate(db_.get(), [&](engine::Tx& tx) {
    return tx.Delete(w_.tables().new_order, TpccOrderKey(1, 4, 25));
  });
  ExpectViolation("condition 3");
}

TEST_F(TpccCorruptionTest, MissingOrderLineViolatesCondition4) {
  Mutate(db_.get(), [&](engine::Tx& tx) {
    return tx.Delete(w_.tables().order_line, TpccOrderLineKey(2, 5, 7, 1));
  });
  ExpectViolation("condition 4");
}

// ------------------------------------------------------------ SQL form

class TpccSqlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto schema = LoadPolicySchema("schemas/tpcc.sql");
    ASSERT_TRUE(schema.ok()) << schema.status();
    ex_ = std::make_unique<RefExtractor>(*schema);
  }
  std::vector<std::string> Texts(const WorkloadTxn& t, ExtractionPolicy policy,
                                 bool literal_form = false) {
    std::vector<SqlStatement> sql;
    t.AppendSql(&sql);
    RefVec ids;
    std::vector<std::string> texts;
    absl::Status st = ExtractRefs(*ex_, sql, policy, literal_form, &ids, &texts);
    EXPECT_TRUE(st.ok()) << st;
    return texts;
  }
  std::unique_ptr<RefExtractor> ex_;
};

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST_F(TpccSqlTest, NewOrderYieldsWarehouseDistrictCustomerAndItemReferences) {
  TpccWorkload w(SmallParams());
  TpccTxn t(&w.tables(), nullptr, kNewOrder);
  t.new_order.w_id = 1;
  t.new_order.d_id = 2;
  t.new_order.c_id = 3;
  t.new_order.lines = {{7, 1, 5}, {9, 2, 1}};
  t.new_order.all_local = false;
  const ExtractionPolicy canonical{RefNaming::kCanonical, RefGrouping::kSingle};
  std::vector<std::string> c = Texts(t, canonical);
  const std::string all = absl::StrJoin(c, " | ");
  EXPECT_TRUE(Has(c, "w_id=1")) << all;
  EXPECT_TRUE(Has(c, "d_id=2")) << all;
  EXPECT_TRUE(Has(c, "c_id=3")) << all;
  EXPECT_TRUE(Has(c, "i_id=7")) << all;
  EXPECT_TRUE(Has(c, "w_id=2")) << all;  // the remote supplying warehouse
  const ExtractionPolicy literal{RefNaming::kLiteral, RefGrouping::kSingle};
  std::vector<std::string> l = Texts(t, literal);
  const std::string lall = absl::StrJoin(l, " | ");
  EXPECT_TRUE(Has(l, "s_w_id=1")) << lall;
  EXPECT_TRUE(Has(l, "s_i_id=7")) << lall;
  EXPECT_TRUE(Has(l, "d_w_id=1")) << lall;
  EXPECT_TRUE(Has(l, "c_id=3")) << lall;
  EXPECT_TRUE(Has(l, "ol_supply_w_id=2")) << lall;
  // The unknown o_id yields nothing.
  for (const std::string& r : l) EXPECT_EQ(r.find("o_id="), std::string::npos) << r;
}

TEST_F(TpccSqlTest, PaymentByLastNameBindsNameNotCustomerId) {
  TpccWorkload w(SmallParams());
  TpccTxn t(&w.tables(), nullptr, kPayment);
  t.payment = {1, 4, 2, 5, 0, TpccLastName(123), true, 17.5};
  std::vector<std::string> l = Texts(t, {RefNaming::kLiteral, RefGrouping::kSingle});
  const std::string all = absl::StrJoin(l, " | ");
  EXPECT_TRUE(Has(l, "w_id=1")) << all;
  EXPECT_TRUE(Has(l, "c_w_id=2")) << all;
  EXPECT_TRUE(Has(l, "c_d_id=5")) << all;
  EXPECT_TRUE(Has(l, "c_last='" + TpccLastName(123) + "'")) << all;
  for (const std::string& r : l) EXPECT_EQ(r.find("c_id="), std::string::npos) << r;
}

TEST_F(TpccSqlTest, TextAndTemplateFormsGiveIdenticalReferences) {
  TpccWorkload w(SmallParams());
  Rng rng(5);
  for (int i = 0; i < 300; ++i) {
    std::unique_ptr<WorkloadTxn> t = w.Next(rng);
    std::vector<SqlStatement> sql;
    t->AppendSql(&sql);
    ASSERT_FALSE(sql.empty());
    for (RefNaming n : {RefNaming::kLiteral, RefNaming::kCanonical}) {
      for (RefGrouping g : {RefGrouping::kSingle, RefGrouping::kAll}) {
        RefVec a, b;
        ASSERT_TRUE(ExtractRefs(*ex_, sql, {n, g}, false, &a, nullptr).ok());
        ASSERT_TRUE(ExtractRefs(*ex_, sql, {n, g}, true, &b, nullptr).ok());
        ASSERT_FALSE(a.empty());
        EXPECT_EQ(a, b) << "type " << t->type.value() << ": " << sql[0].Literal();
      }
    }
  }
}

// ------------------------------------------------------------ generation

// SqlParam::Int keeps its text inline and Num formats with to_chars: both
// must give exactly the text the string path gave (std::to_string, and the
// smallest round-tripping "%.Nf"), or the references' RefIds would change.
std::string PrintfShortest(double v) {
  char buf[400];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*f", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

TEST(SqlParamTest, IntAndNumTextsMatchTheStringForms) {
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{7}, int64_t{3000}, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(std::string(SqlParam::Int(v).value()), std::to_string(v));
    SqlStatement s("SELECT 1 WHERE a = $1");
    s.Int(v);
    EXPECT_EQ(std::string(s.params[0].value()), std::to_string(v));
    EXPECT_EQ(s.Literal(), "SELECT 1 WHERE a = " + std::to_string(v));
  }
  Rng rng(5);
  for (int i = 0; i < 20000; ++i) {
    double v;
    switch (i % 3) {
      case 0: v = static_cast<double>(rng.Uniform(100, 500000)) / 100.0; break;  // Payment amounts
      case 1: v = (rng.Double() - 0.5) * 1e6; break;
      default: v = rng.Double() * 1e-2; break;
    }
    ASSERT_EQ(std::string(SqlParam::Num(v).value()), v == static_cast<double>(static_cast<int64_t>(v))
                                                          ? std::to_string(static_cast<int64_t>(v))
                                                          : PrintfShortest(v))
        << v;
  }
  EXPECT_EQ(std::string(SqlParam::Num(12.5).value()), "12.5");
  EXPECT_EQ(std::string(SqlParam::Num(0.1).value()), "0.1");
  EXPECT_EQ(std::string(SqlParam::Num(-3.0).value()), "-3");
  EXPECT_TRUE(SqlParam::Null().is_null);
  EXPECT_EQ(std::string(SqlParam::Str("O'Brien").value()), "O'Brien");
}

TEST(TpccGenerationTest, MixNURandAndRemoteFractions) {
  TpccParams p;  // paper defaults, 4 warehouses
  TpccWorkload w(p);
  Rng rng(11);
  const int kDraws = 100000;
  std::vector<int> by_type(5);
  int lines = 0, remote_lines = 0, rollbacks = 0, payments = 0, remote_payments = 0,
      by_name = 0, named = 0;
  for (int i = 0; i < kDraws; ++i) {
    std::unique_ptr<WorkloadTxn> g = w.Next(rng);
    auto* t = static_cast<TpccTxn*>(g.get());
    ASSERT_EQ(t->type.value(), t->tpcc_type());
    by_type[t->tpcc_type()]++;
    ASSERT_GE(t->partition_key, 1u);
    ASSERT_LE(t->partition_key, 4u);
    if (t->tpcc_type() == kNewOrder) {
      const NewOrderInput& in = t->new_order;
      ASSERT_GE(in.c_id, 1);
      ASSERT_LE(in.c_id, p.customers_per_district);
      ASSERT_GE(in.lines.size(), 5u);
      ASSERT_LE(in.lines.size(), 15u);
      rollbacks += in.rollback;
      for (size_t k = 0; k < in.lines.size(); ++k) {
        const NewOrderLine& l = in.lines[k];
        if (in.rollback && k + 1 == in.lines.size()) {
          ASSERT_EQ(l.i_id, p.items + 1);
        } else {
          ASSERT_GE(l.i_id, 1);
          ASSERT_LE(l.i_id, p.items);
        }
        ++lines;
        remote_lines += l.supply_w_id != in.w_id;
      }
    } else if (t->tpcc_type() == kPayment) {
      ++payments;
      remote_payments += t->payment.c_w_id != t->payment.w_id;
      ++named;
      by_name += t->payment.by_last_name;
    } else if (t->tpcc_type() == kOrderStatus) {
      ++named;
      by_name += t->order_status.by_last_name;
    }
  }
  const double expect[5] = {0.45, 0.43, 0.04, 0.04, 0.04};
  for (int k = 0; k < 5; ++k) EXPECT_NEAR(by_type[k] / double(kDraws), expect[k], 0.01) << k;
  EXPECT_NEAR(remote_lines / double(lines), 0.01, 0.002);
  EXPECT_NEAR(remote_payments / double(payments), 0.15, 0.01);
  EXPECT_NEAR(by_name / double(named), 0.60, 0.015);
  EXPECT_NEAR(rollbacks / double(by_type[kNewOrder]), 0.01, 0.003);
}

TEST(TpccGenerationTest, NURandIsNonUniformAndInRange) {
  Rng rng(3);
  std::vector<int> hist(3001);
  for (int i = 0; i < 200000; ++i) {
    int v = TpccWorkload::NURand(rng, 1023, 259, 1, 3000);
    ASSERT_GE(v, 1);
    ASSERT_LE(v, 3000);
    hist[v]++;
  }
  const int mx = *std::max_element(hist.begin(), hist.end());
  EXPECT_GT(mx, 3 * 200000 / 3000);  // far from uniform
}

TEST(TpccGenerationTest, DeterministicUnderSeedAndNpMix) {
  auto a = MakeWorkload("tpcc-np").value();
  Rng r1(9), r2(9);
  for (int i = 0; i < 200; ++i) {
    auto t1 = a->Next(r1), t2 = a->Next(r2);
    ASSERT_LE(t1->type.value(), kPayment);
    std::vector<SqlStatement> s1, s2;
    t1->AppendSql(&s1);
    t2->AppendSql(&s2);
    ASSERT_EQ(s1.size(), s2.size());
    for (size_t k = 0; k < s1.size(); ++k) ASSERT_EQ(s1[k].Literal(), s2[k].Literal());
  }
}

class FakeClock : public Clock {
 public:
  int64_t NowNanos() const override { return now; }
  int64_t now = 0;
};

TEST(TpccGenerationTest, PhaseScheduleSkewsHomeWarehouse) {
  TpccParams p;
  p.warehouses = 10;
  TpccWorkload w(p);
  FakeClock clock;
  SkewPhase uniform, skewed;
  uniform.duration_s = 1;
  skewed.duration_s = 1;
  skewed.zipf_theta = 0.9;
  w.SetPhaseSchedule({uniform, skewed, uniform}, &clock);
  auto share_of_w1 = [&] {
    Rng rng(4);
    int n1 = 0;
    for (int i = 0; i < 20000; ++i) n1 += w.HomeWarehouse(rng) == 1;
    return n1 / 20000.0;
  };
  EXPECT_EQ(w.phase(), 0);
  EXPECT_NEAR(share_of_w1(), 0.1, 0.02);
  clock.now = 1500000000;
  EXPECT_EQ(w.phase(), 1);
  EXPECT_GT(share_of_w1(), 0.25);
  clock.now = 9000000000;
  EXPECT_EQ(w.phase(), 2);
  EXPECT_NEAR(share_of_w1(), 0.1, 0.02);
  // Explicit phases without a clock.
  w.SetPhaseSchedule({uniform, skewed}, nullptr);
  w.SetPhase(1);
  EXPECT_EQ(w.phase(), 1);
  EXPECT_GT(share_of_w1(), 0.25);
}

TEST(TpccGenerationTest, PhaseHotOffsetMovesTheHotWarehouse) {
  TpccParams p;
  p.warehouses = 10;
  TpccWorkload w(p);
  SkewPhase skewed, moved;
  skewed.zipf_theta = moved.zipf_theta = 0.99;
  moved.hot_offset = 4;
  w.SetPhaseSchedule({skewed, moved}, nullptr);
  auto share_of = [&](int wh) {
    Rng rng(4);
    int n = 0;
    for (int i = 0; i < 20000; ++i) n += w.HomeWarehouse(rng) == wh;
    return n / 20000.0;
  };
  w.SetPhase(0);
  const double w1 = share_of(1);
  EXPECT_GT(w1, 0.25);
  w.SetPhase(1);
  EXPECT_NEAR(share_of(5), w1, 0.02);  // the same draws, moved by 4
  EXPECT_LT(share_of(1), 0.1);
}

TEST(TpccLoadTest, PaperScaleOneWarehouseLoadsAndChecks) {
  TpccParams p;
  p.warehouses = 1;
  TpccWorkload w(p);
  auto db = NewDb("occ");
  ASSERT_TRUE(w.Load(db.get()).ok());
  EXPECT_EQ(w.tables().customer->CountPresent(), 3000u);
  EXPECT_EQ(w.tables().new_order->CountPresent(), 900u);  // 90 per district
  EXPECT_EQ(w.tables().stock->CountPresent(), 10000u);
  EXPECT_TRUE(w.Check(*db).ok());
}

TEST(FactoryTest, KnowsTheNames) {
  for (const std::string& n : WorkloadNames()) {
    auto w = MakeWorkload(n);
    ASSERT_TRUE(w.ok()) << n;
    EXPECT_EQ((*w)->name(), n);
    EXPECT_FALSE((*w)->TxnTypeNames().empty());
  }
  EXPECT_FALSE(MakeWorkload("tpch").ok());
}

}  // namespace
}  // namespace workloads
}  // namespace corral
