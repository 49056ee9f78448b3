// The PostgreSQL forms against a real server: the population loaded from the
// engine, the same transaction sequence run on both back ends (one thread),
// then the same aggregates on both, and TPC-C's consistency conditions in SQL.
// Skips without a server (scripts/pg.sh; --test_env=CORRAL_PG_CONNINFO).
#include "bench/workloads/pg_forms.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "adapters/libpq_connection.h"
#include "adapters/pg_executor.h"
#include "adapters/pg_test_server.h"
#include "bench/workloads/factory.h"
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

using adapters::PgConnection;
using adapters::PgResult;

// The engine's 0 in a nullable int64 column loads as NULL (both loaders).
TEST(ClassifyInt64Test, ZeroInNullableColumnsIsNull) {
  EXPECT_EQ(ClassifyInt64("o_entry_d", 0), Int64Form::kNull);
  EXPECT_EQ(ClassifyInt64("ol_delivery_d", 0), Int64Form::kNull);
  EXPECT_EQ(ClassifyInt64("o_carrier_id", 0), Int64Form::kNull);
  EXPECT_EQ(ClassifyInt64("o_entry_d", 1700000000), Int64Form::kTimestamp);
  EXPECT_EQ(ClassifyInt64("o_carrier_id", 3), Int64Form::kInteger);
  EXPECT_EQ(ClassifyInt64("o_id", 0), Int64Form::kInteger);
}

class PgFormsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!adapters::PgTestServer(&conninfo_)) GTEST_SKIP() << adapters::PgTestSkipReason();
    auto c = adapters::ConnectLibpq(conninfo_);
    ASSERT_TRUE(c.ok()) << c.status();
    conn_ = std::move(*c);
    schema_ = adapters::PgUniqueName("wl");
    ASSERT_TRUE(conn_->Exec(absl::StrCat("CREATE SCHEMA ", schema_)).ok());
    ASSERT_TRUE(conn_->Exec(absl::StrCat("SET search_path TO ", schema_)).ok());
  }
  void TearDown() override {
    if (conn_ != nullptr) conn_->Exec(absl::StrCat("DROP SCHEMA ", schema_, " CASCADE"));
  }

  // Loads `w` into a fresh engine and into PostgreSQL, then runs `n`
  // generated transactions on both; returns the engine database.
  std::unique_ptr<engine::Database> LoadAndRun(Workload& w, int n) {
    auto db = engine::Database::Create({}).value();
    EXPECT_TRUE(w.Load(db.get()).ok());
    auto ddl = ReadRepoFile(w.schema_file());
    EXPECT_TRUE(ddl.ok()) << ddl.status();
    PgResult r = conn_->Exec(*ddl);
    EXPECT_TRUE(r.ok()) << r.ToStatus();
    const int64_t t0 = MonoNanos();
    absl::Status st = LoadPg(w, *db, *conn_, 200);
    EXPECT_TRUE(st.ok()) << st;
    const int64_t t1 = MonoNanos();

    adapters::PgExecutorOptions o;
    o.session_setup = {absl::StrCat("SET search_path TO ", schema_)};
    auto pg = adapters::PgExecutor::Connect(conninfo_, o);
    EXPECT_TRUE(pg.ok()) << pg.status();
    auto ex = db->NewExecutor(0, {}).value();
    Rng rng(21);
    for (int i = 0; i < n; ++i) {
      std::unique_ptr<WorkloadTxn> t = w.Next(rng);
      scheduler::ExecResult e = ex->Execute(*t);
      auto pt = MakePgTxn(*t);
      EXPECT_TRUE(pt.ok()) << pt.status();
      scheduler::ExecResult p = (*pg)->Execute(**pt);
      EXPECT_EQ(static_cast<int>(e.outcome), static_cast<int>(p.outcome))
          << w.TxnTypeNames()[t->type.value()] << ": engine " << e.status << " / pg " << p.status;
      outcomes_[w.TxnTypeNames()[t->type.value()]][static_cast<int>(p.outcome)]++;
    }
    std::cout << w.name() << ": PostgreSQL load " << (t1 - t0) / 1e6 << " ms, " << n
              << " transactions on both " << (MonoNanos() - t1) / 1e6 << " ms\n";
    return db;
  }

  double PgNumber(const std::string& sql) {
    PgResult r = conn_->Exec(sql);
    EXPECT_TRUE(r.ok()) << r.ToStatus(sql);
    if (!r.ok() || r.num_rows() != 1 || r.IsNull(0, 0)) return -1;
    return r.GetDouble(0, 0).value();
  }

  // Sum of a column over the engine's rows of a table (via ForEachRow).
  static double EngineSum(const Workload& w, const engine::Database& db, const std::string& table,
                          const std::string& column) {
    double sum = 0;
    EXPECT_TRUE(w.ForEachRow(db, [&](const engine::Table& t, const engine::ConstRow& r) {
                  if (t.name() != table) return absl::OkStatus();
                  const int c = t.schema().Find(column);
                  sum += column.empty() ? 1
                         : t.schema().column(c).type == engine::ColumnType::kDouble
                             ? r.GetDouble(c)
                             : static_cast<double>(r.GetInt(c));
                  return absl::OkStatus();
                }).ok());
    return sum;
  }

  std::string conninfo_, schema_;
  std::unique_ptr<PgConnection> conn_;
  std::map<std::string, std::map<int, int>> outcomes_;
};

TEST_F(PgFormsTest, TpccSameResultsAsEngineAndConsistent) {
  TpccParams p;
  p.warehouses = 2;
  p.items = 300;
  p.customers_per_district = 20;
  TpccWorkload w(p);
  auto db = LoadAndRun(w, 100);
  for (const std::string& t : w.TxnTypeNames()) {
    EXPECT_GT(outcomes_[t][static_cast<int>(scheduler::Outcome::kCommitted)], 0) << t;
  }
  EXPECT_NEAR(PgNumber("SELECT sum(w_ytd) FROM warehouse"), EngineSum(w, *db, "warehouse", "w_ytd"),
              0.01);
  EXPECT_EQ(PgNumber("SELECT sum(d_next_o_id) FROM district"),
            EngineSum(w, *db, "district", "d_next_o_id"));
  EXPECT_EQ(PgNumber("SELECT count(*) FROM new_order"), EngineSum(w, *db, "new_order", ""));
  EXPECT_EQ(PgNumber("SELECT count(*) FROM order_line"), EngineSum(w, *db, "order_line", ""));
  EXPECT_EQ(PgNumber("SELECT sum(s_quantity) FROM stock"), EngineSum(w, *db, "stock", "s_quantity"));
  EXPECT_NEAR(PgNumber("SELECT sum(c_balance) FROM customer"),
              EngineSum(w, *db, "customer", "c_balance"), 0.05);
  // Consistency conditions 1-4 in SQL: number of violating warehouses/districts.
  EXPECT_EQ(PgNumber("SELECT count(*) FROM warehouse w WHERE w_ytd <> (SELECT sum(d_ytd) FROM "
                     "district WHERE d_w_id = w.w_id)"),
            0);
  EXPECT_EQ(PgNumber("SELECT count(*) FROM district d WHERE d_next_o_id - 1 <> (SELECT max(o_id) "
                     "FROM orders WHERE o_w_id = d.d_w_id AND o_d_id = d.d_id)"),
            0);
  EXPECT_EQ(PgNumber("SELECT count(*) FROM (SELECT no_w_id, no_d_id FROM new_order GROUP BY "
                     "no_w_id, no_d_id HAVING max(no_o_id) - min(no_o_id) + 1 <> count(*)) x"),
            0);
  EXPECT_EQ(PgNumber("SELECT count(*) FROM district d WHERE (SELECT sum(o_ol_cnt) FROM orders "
                     "WHERE o_w_id = d.d_w_id AND o_d_id = d.d_id) <> (SELECT count(*) FROM "
                     "order_line WHERE ol_w_id = d.d_w_id AND ol_d_id = d.d_id)"),
            0);
}

TEST_F(PgFormsTest, SmallBankSameBalancesAsEngine) {
  SmallBankParams p;
  p.accounts = 500;
  p.mix = {4, 24, 24, 24, 24, 10};
  SmallBankWorkload w(p);
  auto db = LoadAndRun(w, 400);
  EXPECT_EQ(PgNumber("SELECT sum(bal) FROM savings"), EngineSum(w, *db, "savings", "bal"));
  EXPECT_EQ(PgNumber("SELECT sum(bal) FROM checking"), EngineSum(w, *db, "checking", "bal"));
  EXPECT_EQ(PgNumber("SELECT count(*) FROM accounts"), 500);
}

TEST_F(PgFormsTest, TatpSameCallForwardingAsEngine) {
  TatpParams p;
  p.subscribers = 300;
  p.mix = {30, 5, 5, 10, 30, 10, 10};
  TatpWorkload w(p);
  auto db = LoadAndRun(w, 400);
  EXPECT_EQ(PgNumber("SELECT count(*) FROM call_forwarding"),
            EngineSum(w, *db, "call_forwarding", ""));
  EXPECT_EQ(PgNumber("SELECT sum(vlr_location) FROM subscriber"),
            EngineSum(w, *db, "subscriber", "vlr_location"));
  EXPECT_GT(outcomes_["InsertCallForwarding"][static_cast<int>(scheduler::Outcome::kUserAbort)],
            0);
}

TEST_F(PgFormsTest, YcsbSameCountersAsEngine) {
  YcsbParams p;
  p.records = 1000;
  p.read_fraction = 0.5;
  p.field_size = 20;
  YcsbWorkload w(p);
  auto db = LoadAndRun(w, 100);
  EXPECT_EQ(PgNumber("SELECT sum(counter) FROM usertable"), EngineSum(w, *db, "usertable", "counter"));
}

}  // namespace
}  // namespace workloads
}  // namespace corral
