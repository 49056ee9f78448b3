#include "bench/workloads/tatp.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "bench/workloads/workload_testing.h"
#include "engine/engine.h"
#include "gtest/gtest.h"

namespace corral {
namespace workloads {
namespace {

TatpParams SmallParams() {
  TatpParams p;
  p.subscribers = 1000;
  p.mix = {30, 5, 5, 10, 30, 10, 10};  // more inserts/deletes than the paper's
  return p;
}

class TatpProtocolTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TatpProtocolTest, ConcurrentRunKeepsCallForwardingConsistent) {
  auto db = NewDb(GetParam());
  TatpWorkload w(SmallParams());
  ASSERT_TRUE(w.Load(db.get()).ok());
  ASSERT_TRUE(w.Check(*db).ok()) << w.Check(*db);
  RunOptions opt;
  opt.threads = 4;
  opt.seconds = 0.3;
  RunStats s = RunConcurrently(w, db.get(), opt);
  ExpectCleanRunOfEveryType(w, s);
  EXPECT_GT(s.user_aborts, 0u);  // failed inserts / deletes / missing facilities
  absl::Status st = w.Check(*db);
  EXPECT_TRUE(st.ok()) << st;
  std::cout << GetParam() << ": " << s.commits << " commits, " << s.conflicts << " conflicts, "
            << s.user_aborts << " user aborts\n";
}

INSTANTIATE_TEST_SUITE_P(AllProtocols, TatpProtocolTest,
                         ::testing::ValuesIn(TestProtocols()),
                         ProtocolParamName);

TEST(TatpTest, CorruptionsAreNamed) {
  auto db = NewDb("occ");
  TatpWorkload w(SmallParams());
  ASSERT_TRUE(w.Load(db.get()).ok());
  auto ex = db->NewExecutor(0, {}).value();
  // A call_forwarding row inserted without the audit: the count check fails.
  int64_t s_id = 0;
  int sf = 0;
  for (int64_t s = 1; s <= 1000 && s_id == 0; ++s) {
    for (int t = 1; t <= 4 && s_id == 0; ++t) {
      engine::ConstRow r;
      if (db->Peek(w.tables().special_facility, TatpSfKey(s, t), &r).ok() &&
          !db->Peek(w.tables().call_forwarding, TatpCfKey(s, t, 8), &r).ok()) {
        s_id = s;
        sf = t;
      }
    }
  }
  ASSERT_NE(s_id, 0);
  engine::FunctionTxn ins([&](engine::Tx& tx) {
    engine::Row r;
    ENGINE_RETURN_IF_ERROR(tx.Insert(w.tables().call_forwarding, TatpCfKey(s_id, sf, 8), &r));
    r.SetInt(0, s_id);
    r.SetInt(1, sf);
    r.SetInt(2, 8);
    r.SetInt(3, 10);
    return absl::OkStatus();
  });
  ASSERT_EQ(ex->Execute(ins).outcome, scheduler::Outcome::kCommitted);
  absl::Status st = w.Check(*db);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("inserted - deleted"), absl::string_view::npos) << st;
  // Deleting its special facility orphans call_forwarding rows.
  engine::FunctionTxn del(
      [&](engine::Tx& tx) { return tx.Delete(w.tables().special_facility, TatpSfKey(s_id, sf)); });
  ASSERT_EQ(ex->Execute(del).outcome, scheduler::Outcome::kCommitted);
  st = w.Check(*db);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("foreign key"), absl::string_view::npos) << st;
}

TEST(TatpTest, InsertOfExistingRowIsAUserAbort) {
  auto db = NewDb("occ");
  TatpWorkload w(SmallParams());
  ASSERT_TRUE(w.Load(db.get()).ok());
  auto ex = db->NewExecutor(0, {}).value();
  Rng rng(1);
  int aborted = 0, committed = 0;
  for (int i = 0; i < 200; ++i) {
    auto t = w.Make(rng, kInsertCallForwarding);
    scheduler::ExecResult r = ex->Execute(*t);
    ASSERT_NE(r.outcome, scheduler::Outcome::kFailed) << r.status;
    ASSERT_NE(r.outcome, scheduler::Outcome::kConflictAbort);
    if (r.outcome == scheduler::Outcome::kUserAbort) ++aborted;
    if (r.outcome == scheduler::Outcome::kCommitted) {
      ++committed;
      // The same insert again fails as a user abort.
      EXPECT_EQ(ex->Execute(*t).outcome, scheduler::Outcome::kUserAbort);
    }
  }
  EXPECT_GT(aborted, 0);
  EXPECT_GT(committed, 0);
  EXPECT_TRUE(w.Check(*db).ok()) << w.Check(*db);
}

TEST(TatpTest, MixAndHotSpot) {
  TatpWorkload w(TatpParams{});
  Rng rng(2);
  const int kDraws = 100000;
  std::vector<int> by_type(7);
  int hot = 0;
  for (int i = 0; i < kDraws; ++i) {
    auto g = w.Next(rng);
    auto* t = static_cast<TatpTxn*>(g.get());
    by_type[t->type.value()]++;
    ASSERT_EQ(t->partition_key, static_cast<uint64_t>(t->s_id));
    ASSERT_EQ(t->sub_nbr, TatpSubNbr(t->s_id));
    ASSERT_GE(t->s_id, 1);
    ASSERT_LE(t->s_id, 10000);
    hot += t->s_id <= 20;
  }
  const double expect[7] = {0.40, 0.03, 0.03, 0.10, 0.40, 0.02, 0.02};
  for (int k = 0; k < 7; ++k) EXPECT_NEAR(by_type[k] / double(kDraws), expect[k], 0.01) << k;
  EXPECT_NEAR(hot / double(kDraws), 0.90, 0.01);
}

TEST(TatpTest, SqlReferencesAndFormsAgree) {
  auto schema = LoadPolicySchema("schemas/tatp.sql");
  ASSERT_TRUE(schema.ok()) << schema.status();
  RefExtractor ex(*schema);
  TatpWorkload w(SmallParams());
  TatpTxn t(&w.tables(), kInsertCallForwarding);
  t.s_id = 12;
  t.sub_nbr = TatpSubNbr(12);
  t.sf_type = 2;
  t.start_time = 8;
  t.end_time = 11;
  t.numberx = "123456789012345";
  std::vector<SqlStatement> sql;
  t.AppendSql(&sql);
  RefVec ids;
  std::vector<std::string> texts;
  ASSERT_TRUE(ExtractRefs(ex, sql, {RefNaming::kCanonical, RefGrouping::kSingle}, false, &ids,
                          &texts)
                  .ok());
  const std::string all = absl::StrJoin(texts, " | ");
  bool has_sid = false, has_nbr = false;
  for (const std::string& r : texts) {
    has_sid |= r.find("s_id=12") != std::string::npos;
    has_nbr |= r.find("sub_nbr='000000000000012'") != std::string::npos;
  }
  EXPECT_TRUE(has_sid) << all;
  EXPECT_TRUE(has_nbr) << all;

  ExpectFormsAgree(w, ex, 8, 300);
}

}  // namespace
}  // namespace workloads
}  // namespace corral
