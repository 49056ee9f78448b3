#include "bench/workloads/sql_sets.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bench/workloads/smallbank.h"
#include "bench/workloads/tatp.h"
#include "bench/workloads/tpcc.h"
#include "bench/workloads/workload_testing.h"
#include "bench/workloads/ycsb.h"
#include "engine/engine.h"
#include "gtest/gtest.h"

namespace corral {
namespace workloads {
namespace {

using Entry = engine::AccessSet::Entry;
using Entries = std::vector<Entry>;

// (table name, key, write), sorted, for readable comparisons.
std::vector<std::tuple<std::string, uint64_t, bool>> Named(const Entries& e) {
  std::vector<std::tuple<std::string, uint64_t, bool>> out;
  for (const Entry& x : e) out.emplace_back(x.table->name(), x.key, x.write);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::unique_ptr<SqlSets> SetsFor(const Workload& w, const engine::Database& db) {
  auto schema = LoadPolicySchema(w.schema_file());
  EXPECT_TRUE(schema.ok()) << schema.status();
  auto s = SqlSets::Create(w.name(), db, *schema);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

// A workload loaded into a fresh database under `protocol`, with its SqlSets.
template <typename W>
struct Loaded {
  template <typename P>
  explicit Loaded(const P& params, const std::string& protocol = "occ") : db(NewDb(protocol)), w(params) {
    EXPECT_TRUE(w.Load(db.get()).ok());
    sets = SetsFor(w, *db);
  }
  std::unique_ptr<engine::Database> db;
  W w;
  std::unique_ptr<SqlSets> sets;
};

Entries Derive(const SqlSets& sets, const BoundSql& b, int worker = 0) {
  engine::AccessSet set;
  set.set_worker_id(worker);
  EXPECT_EQ(sets.DeriveBound(b, &set), 0);
  return set.entries();
}

// The first generated transaction `pick` accepts.
std::unique_ptr<WorkloadTxn> Find(const Workload& w, const std::function<bool(const WorkloadTxn&)>& pick) {
  Rng rng(11);
  for (int i = 0; i < 100000; ++i) {
    std::unique_ptr<WorkloadTxn> t = w.Next(rng);
    if (pick(*t)) return t;
  }
  ADD_FAILURE() << "no such transaction generated";
  return nullptr;
}

// The accesses of one single-threaded execution of `t` on `ex`.
Entries Execute(engine::EngineExecutor* ex, WorkloadTxn& t, scheduler::Outcome* outcome = nullptr) {
  Entries log;
  engine::FunctionTxn run([&](engine::Tx& tx) {
    log.clear();
    RecordingTx rec(&tx, &log);
    return t.Run(rec);
  });
  scheduler::ExecResult r = ex->Execute(run);
  if (outcome != nullptr) *outcome = r.outcome;
  return log;
}

TpccParams SmallTpcc() {
  TpccParams p;
  p.warehouses = 2;
  p.items = 1000;
  p.customers_per_district = 30;
  return p;
}

TEST(SqlSetsTest, SmallBankStatementsNameTheirAccountsAndTheAuditSlot) {
  SmallBankParams p;
  p.accounts = 100;
  Loaded<SmallBankWorkload> l(p);
  const SqlSets* sets = l.sets.get();
  const SmallBankTables& t = l.w.tables();
  BoundSql b;
  b.Add("SELECT bal FROM savings WHERE custid = $1").Int(7);
  EXPECT_EQ(Named(Derive(*sets, b)), Named({{t.savings, 7, false}}));
  b.Add("UPDATE checking SET bal = bal + $1 WHERE custid = $2").Num(5.5).Int(9);
  // The write also names the slot's audit row, which the SQL never does.
  EXPECT_EQ(Named(Derive(*sets, b, 3)),
            Named({{t.savings, 7, false}, {t.checking, 9, true}, {t.audit, 3, true}}));
  BoundSql unknown;  // a NULL key names nothing
  unknown.Add("SELECT bal FROM savings WHERE custid = $1").Null();
  EXPECT_TRUE(Derive(*sets, unknown).empty());
}

TEST(SqlSetsTest, SmallBankSqlSetsAreCompleteForEveryType) {
  SmallBankParams p;
  p.accounts = 100;
  p.mix = {4, 24, 24, 24, 24, 10};  // SendPayment too
  Loaded<SmallBankWorkload> l(p);
  const SmallBankWorkload& w = l.w;
  const SqlSets* sets = l.sets.get();
  auto ex = l.db->NewExecutor(0, {}).value();
  Rng rng(5);
  std::vector<int> seen(w.TxnTypeNames().size(), 0);
  for (int i = 0; i < 300; ++i) {
    auto t = w.Next(rng);
    engine::AccessSet set;
    ASSERT_TRUE(sets->Derive(*t, set));
    const Entries actual = Execute(ex.get(), *t);
    const SetDiff d = CompareAccessSets(set.entries(), actual);
    EXPECT_TRUE(d.complete()) << w.TxnTypeNames()[t->type.value()] << ": " << d.missed << " missed";
    ++seen[t->type.value()];
  }
  for (size_t k = 0; k < seen.size(); ++k) EXPECT_GT(seen[k], 0) << w.TxnTypeNames()[k];
}

TEST(SqlSetsTest, TpccNewOrderSqlSetIsTheDeclaredSet) {
  Loaded<TpccWorkload> l(SmallTpcc());
  const TpccWorkload& w = l.w;
  const SqlSets* sets = l.sets.get();
  auto t = Find(w, [](const WorkloadTxn& x) { return x.type.value() == kNewOrder; });
  ASSERT_NE(t, nullptr);
  engine::AccessSet sql, own;
  sql.set_worker_id(2);
  own.set_worker_id(2);
  ASSERT_TRUE(sets->Derive(*t, sql));
  ASSERT_TRUE(t->DeclareOwnAccesses(own));
  // Same granules and modes: the order's insert (o_id unknown, a NULL
  // parameter) still names its district's order granule.
  const SetDiff d = CompareAccessSets(sql.entries(), own.entries());
  EXPECT_TRUE(d.exact()) << d.missed << " missed, " << d.over << " over";
  const auto& in = static_cast<const TpccTxn&>(*t).new_order;
  const auto named = Named(sql.entries());
  EXPECT_TRUE(std::count(named.begin(), named.end(),
                         std::make_tuple(std::string("stock"),
                                         TpccStockKey(in.lines[0].supply_w_id, in.lines[0].i_id), true)) == 1);
  EXPECT_TRUE(std::count(named.begin(), named.end(),
                         std::make_tuple(std::string("orders"), TpccOrderKey(in.w_id, in.d_id, 0), true)) == 1);
}

TEST(SqlSetsTest, TpccPaymentByLastNameMissesTheCustomerAndIsReplanned) {
  Loaded<TpccWorkload> l(SmallTpcc(), "planned");
  const TpccWorkload& w = l.w;
  engine::Database* db = l.db.get();
  const SqlSets* sets = l.sets.get();
  auto t = Find(w, [](const WorkloadTxn& x) {
    return x.type.value() == kPayment && static_cast<const TpccTxn&>(x).payment.by_last_name;
  });
  ASSERT_NE(t, nullptr);
  const PaymentInput& in = static_cast<const TpccTxn&>(*t).payment;
  engine::AccessSet sql;
  sql.set_worker_id(0);
  ASSERT_TRUE(sets->Derive(*t, sql));
  const auto named = Named(sql.entries());
  // Warehouse and district (written), the slot's history granule; no customer:
  // the SQL names it by (c_w_id, c_d_id, c_last) only.
  EXPECT_TRUE(std::count(named.begin(), named.end(),
                         std::make_tuple(std::string("warehouse"), uint64_t(in.w_id), true)) == 1);
  EXPECT_TRUE(std::count(named.begin(), named.end(),
                         std::make_tuple(std::string("district"), TpccDistrictKey(in.w_id, in.d_id), true)) == 1);
  EXPECT_TRUE(std::count(named.begin(), named.end(),
                         std::make_tuple(std::string("history"), TpccHistorySlotKey(0), true)) == 1);
  for (const auto& e : named) EXPECT_NE(std::get<0>(e), "customer");

  // Under "planned" with the SQL set: the customer access is refused, the
  // transaction re-planned (reconnaissance) and committed.
  t->set_access_deriver(sets);
  auto ex = db->NewExecutor(0, {}).value();
  scheduler::ExecResult r = ex->Execute(*t);
  EXPECT_EQ(r.outcome, scheduler::Outcome::kCommitted) << r.status;
  EXPECT_GE(ex->stats().replans, 1u);
  EXPECT_GE(ex->stats().recons, 1u);
  EXPECT_EQ(ex->stats().declared, 1u);
  // With the workload's own declaration it is not complete: reconnaissance
  // up front, no re-plan.
  auto t2 = Find(w, [](const WorkloadTxn& x) {
    return x.type.value() == kPayment && static_cast<const TpccTxn&>(x).payment.by_last_name;
  });
  auto ex2 = db->NewExecutor(1, {}).value();
  EXPECT_EQ(ex2->Execute(*t2).outcome, scheduler::Outcome::kCommitted);
  EXPECT_EQ(ex2->stats().replans, 0u);
  EXPECT_EQ(ex2->stats().recons, 1u);
  EXPECT_TRUE(w.Check(*db).ok()) << w.Check(*db);
}

TEST(SqlSetsTest, TatpDeleteCallForwardingNamesTheRowAndTheAuditSlot) {
  TatpParams p;
  p.subscribers = 100;
  Loaded<TatpWorkload> l(p);
  const SqlSets* sets = l.sets.get();
  const TatpTables& t = l.w.tables();
  BoundSql b;
  b.Add(tatp_sql::kGetSubscriberId).Str("000000000000042");
  b.Add(tatp_sql::kDeleteCallForwarding).Int(42).Int(2).Int(8);
  EXPECT_EQ(Named(Derive(*sets, b, 1)),
            Named({{t.call_forwarding, TatpCfKey(42, 2, 8), true}, {t.audit, 1, true}}));
  // A join through `cf.s_id = sf.s_id` names only the special facility.
  BoundSql j;
  j.Add(tatp_sql::kGetNewDestination).Int(42).Int(2).Int(8).Int(12);
  EXPECT_EQ(Named(Derive(*sets, j)), Named({{t.special_facility, TatpSfKey(42, 2), false}}));
}

TEST(SqlSetsTest, YcsbReadsAndReadModifyWrites) {
  YcsbParams p;
  p.records = 100;
  p.field_size = 10;
  Loaded<YcsbWorkload> l(p);
  const YcsbWorkload& w = l.w;
  const SqlSets* sets = l.sets.get();
  auto ex = l.db->NewExecutor(0, {}).value();
  Rng rng(3);
  for (int i = 0; i < 100; ++i) {
    auto t = w.Next(rng);
    engine::AccessSet sql, own;
    ASSERT_TRUE(sets->Derive(*t, sql));
    ASSERT_TRUE(t->DeclareOwnAccesses(own));
    const SetDiff d = CompareAccessSets(sql.entries(), own.entries());
    EXPECT_TRUE(d.exact()) << d.missed << " missed, " << d.over << " over";
    EXPECT_TRUE(CompareAccessSets(sql.entries(), Execute(ex.get(), *t)).exact());
  }
}

// The compiled templates (parameters into sentinel slots) give exactly
// what the RefExtractor's text path gives, for every workload's generated
// transactions (NULL parameters, IN lists of constants, joins included).
TEST(SqlSetsTest, CompiledTemplatesAgreeWithTheTextPath) {
  SmallBankParams sb;
  sb.accounts = 100;
  sb.mix = {4, 24, 24, 24, 24, 10};
  TatpParams tp;
  tp.subscribers = 100;
  YcsbParams yp;
  yp.records = 100;
  yp.field_size = 10;
  std::vector<std::unique_ptr<Workload>> ws;
  ws.push_back(std::make_unique<TpccWorkload>(SmallTpcc()));
  ws.push_back(std::make_unique<SmallBankWorkload>(sb));
  ws.push_back(std::make_unique<TatpWorkload>(tp));
  ws.push_back(std::make_unique<YcsbWorkload>(yp));
  for (auto& w : ws) {
    auto db = NewDb("occ");
    ASSERT_TRUE(w->Load(db.get()).ok());
    auto sets = SetsFor(*w, *db);
    Rng rng(9);
    size_t entries = 0;
    for (int i = 0; i < 500; ++i) {
      auto t = w->Next(rng);
      BoundSql b;
      t->AppendBound(&b);
      engine::AccessSet compiled, text;
      compiled.set_worker_id(4);
      text.set_worker_id(4);
      ASSERT_EQ(sets->DeriveBound(b, &compiled), 0);
      ASSERT_EQ(sets->DeriveBoundByText(b, &text), 0);
      EXPECT_EQ(Named(compiled.entries()), Named(text.entries())) << w->name() << " " << b.statements()[0].tmpl;
      entries += compiled.entries().size();
    }
    EXPECT_GT(entries, 500u) << w->name();
  }
}

TEST(SqlSetsTest, CompareCountsMissesOverApproximationAndModes) {
  auto db = NewDb("occ");
  engine::Schema s;
  s.AddInt64("v");
  engine::Table* a = db->CreateTable("a", s, {}).value();
  const Entries set = {{a, 1, false}, {a, 2, true}, {a, 3, true}};
  const Entries actual = {{a, 1, true}, {a, 2, false}, {a, 4, false}, {a, 2, false}};
  const SetDiff d = CompareAccessSets(set, actual);
  EXPECT_EQ(d.set, 3);
  EXPECT_EQ(d.actual, 3);
  EXPECT_EQ(d.missed, 2);  // 1 written but declared read; 4 absent
  EXPECT_EQ(d.over, 2);    // 2 declared write but read; 3 not accessed
  EXPECT_FALSE(d.complete());
  EXPECT_TRUE(CompareAccessSets(actual, actual).exact());
}

TEST(SqlSetsTest, UnknownWorkloadAndSchemaModeAreRefused) {
  auto db = NewDb("occ");
  auto schema = LoadPolicySchema("schemas/smallbank.sql");
  ASSERT_TRUE(schema.ok());
  EXPECT_EQ(SqlSets::Create("nosuch", *db, *schema).status().code(), absl::StatusCode::kInvalidArgument);
  // Tables the rules need are not in this (empty) database.
  EXPECT_EQ(SqlSets::Create("smallbank", *db, *schema).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(SqlSets::Create("smallbank", *db, nullptr).ok());
}

// The planned protocols with sets=sql keep every workload's consistency
// conditions under concurrency (misses are re-planned, never executed).
class SqlSetsProtocolTest : public ::testing::TestWithParam<std::string> {
 protected:
  void RunAndCheck(Workload& w, bool every_type, int threads = 3) {
    auto db = NewDb(GetParam());
    ASSERT_TRUE(w.Load(db.get()).ok());
    auto sets = SetsFor(w, *db);
    RunOptions opt;
    opt.threads = threads;
    opt.seconds = 0.3;
    opt.access_deriver = sets.get();
    RunStats s = RunConcurrently(w, db.get(), opt);
    if (every_type) {
      ExpectCleanRunOfEveryType(w, s);
    } else {
      EXPECT_EQ(s.failed, 0u) << s.first_failure;
      EXPECT_EQ(s.gave_up, 0u);
      EXPECT_GT(s.commits, 0u);
    }
    absl::Status st = w.Check(*db);
    EXPECT_TRUE(st.ok()) << st;
  }
};

TEST_P(SqlSetsProtocolTest, Tpcc) {
  TpccWorkload w(SmallTpcc());
  RunAndCheck(w, true);
}

TEST_P(SqlSetsProtocolTest, TpccNewOrderPaymentOneWarehouse) {
  TpccParams p = SmallTpcc();
  p.warehouses = 1;
  p.mix = {50, 50, 0, 0, 0};
  TpccWorkload w(p, "tpcc-np");
  RunAndCheck(w, false);
}

TEST_P(SqlSetsProtocolTest, SmallBank) {
  SmallBankParams p;
  p.accounts = 1000;
  p.mix = {4, 24, 24, 24, 24, 10};
  SmallBankWorkload w(p);
  RunAndCheck(w, true, 4);
}

TEST_P(SqlSetsProtocolTest, Tatp) {
  TatpParams p;
  p.subscribers = 1000;
  p.mix = {30, 5, 5, 10, 30, 10, 10};
  TatpWorkload w(p);
  RunAndCheck(w, true, 4);
}

TEST_P(SqlSetsProtocolTest, Ycsb) {
  YcsbParams p;
  p.records = 2000;
  p.read_fraction = 0.5;
  p.theta = 0.9;
  p.field_size = 20;
  YcsbWorkload w(p);
  RunAndCheck(w, false, 4);
}

INSTANTIATE_TEST_SUITE_P(Planned, SqlSetsProtocolTest, ::testing::Values("calvin", "planned"),
                         ProtocolParamName);

}  // namespace
}  // namespace workloads
}  // namespace corral
