#include "bench/workloads/smallbank.h"

#include <algorithm>
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

SmallBankParams SmallParams() {
  SmallBankParams p;
  p.accounts = 1000;
  p.mix = {4, 24, 24, 24, 24, 10};  // SendPayment too
  return p;
}

class SmallBankProtocolTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SmallBankProtocolTest, ConcurrentRunConservesMoney) {
  auto db = NewDb(GetParam());
  SmallBankWorkload w(SmallParams());
  ASSERT_TRUE(w.Load(db.get()).ok());
  ASSERT_TRUE(w.Check(*db).ok());
  RunOptions opt;
  opt.threads = 4;
  opt.seconds = 0.3;
  RunStats s = RunConcurrently(w, db.get(), opt);
  ExpectCleanRunOfEveryType(w, s);
  absl::Status st = w.Check(*db);
  EXPECT_TRUE(st.ok()) << st;
  std::cout << GetParam() << ": " << s.commits << " commits, " << s.conflicts << " conflicts, "
            << s.user_aborts << " user aborts\n";
}

INSTANTIATE_TEST_SUITE_P(AllProtocols, SmallBankProtocolTest,
                         ::testing::ValuesIn(TestProtocols()),
                         ProtocolParamName);

TEST(SmallBankTest, UnauditedChangeViolatesConservation) {
  auto db = NewDb("occ");
  SmallBankWorkload w(SmallParams());
  ASSERT_TRUE(w.Load(db.get()).ok());
  auto ex = db->NewExecutor(0, {}).value();
  engine::FunctionTxn t([&](engine::Tx& tx) {
    engine::Row r;
    ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(w.tables().checking, 17, &r));
    r.AddDouble(1, 5);  // money from nowhere
    return absl::OkStatus();
  });
  ASSERT_EQ(ex->Execute(t).outcome, scheduler::Outcome::kCommitted);
  absl::Status st = w.Check(*db);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("conservation"), absl::string_view::npos) << st;
}

TEST(SmallBankTest, MixAndHotSpot) {
  SmallBankWorkload w(SmallBankParams{});  // paper defaults
  Rng rng(2);
  const int kDraws = 100000;
  std::vector<int> by_type(6);
  int accesses = 0, hot = 0;
  for (int i = 0; i < kDraws; ++i) {
    auto g = w.Next(rng);
    auto* t = static_cast<SmallBankTxn*>(g.get());
    by_type[t->type.value()]++;
    ASSERT_EQ(t->partition_key, static_cast<uint64_t>(t->c1));
    ASSERT_GE(t->c1, 1);
    ASSERT_LE(t->c1, 10000);
    ++accesses;
    hot += t->c1 <= 50;
    if (t->sb_type() == kAmalgamate) {
      ASSERT_NE(t->c1, t->c2);
      ++accesses;
      hot += t->c2 <= 50;
    }
  }
  const double expect[6] = {0.04, 0.24, 0.24, 0.24, 0.24, 0};
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(by_type[k] / double(kDraws), expect[k], 0.01) << k;
  EXPECT_NEAR(hot / double(accesses), 0.90, 0.01);
}

TEST(SmallBankTest, PhaseOverridesHotSpot) {
  SmallBankWorkload w(SmallBankParams{});
  SkewPhase wide;
  wide.hot_fraction = 0.5;
  wide.hot_size = 1000;
  SkewPhase uniform;
  uniform.zipf_theta = 0;
  w.SetPhaseSchedule({wide, uniform}, nullptr);
  Rng rng(3);
  int in_hot = 0;
  for (int i = 0; i < 20000; ++i) in_hot += w.RandomAccount(rng) <= 1000;
  EXPECT_NEAR(in_hot / 20000.0, 0.5, 0.02);
  w.SetPhase(1);
  in_hot = 0;
  for (int i = 0; i < 20000; ++i) in_hot += w.RandomAccount(rng) <= 1000;
  EXPECT_NEAR(in_hot / 20000.0, 0.1, 0.02);
}

// A later phase's hot_offset moves the hot accounts (the online spec's
// "hot accounts move"); Zipf heads move the same way.
TEST(SmallBankTest, PhaseHotOffsetMovesTheHotAccounts) {
  SmallBankWorkload w(SmallBankParams{});
  SkewPhase here, moved, zipf_moved;
  here.hot_fraction = moved.hot_fraction = 0.9;
  here.hot_size = moved.hot_size = 50;
  moved.hot_offset = 5000;
  zipf_moved.zipf_theta = 0.99;
  zipf_moved.hot_offset = 5000;
  w.SetPhaseSchedule({here, moved, zipf_moved}, nullptr);
  Rng rng(5);
  auto shares = [&] {
    int first = 0, shifted = 0;
    for (int i = 0; i < 20000; ++i) {
      const int64_t a = w.RandomAccount(rng);
      first += a <= 50;
      shifted += a > 5000 && a <= 5050;
    }
    return std::make_pair(first / 20000.0, shifted / 20000.0);
  };
  auto s = shares();
  EXPECT_NEAR(s.first, 0.9, 0.02);
  EXPECT_LT(s.second, 0.01);
  w.SetPhase(1);
  s = shares();
  EXPECT_LT(s.first, 0.01);
  EXPECT_NEAR(s.second, 0.9, 0.02);
  w.SetPhase(2);
  s = shares();
  EXPECT_LT(s.first, 0.02);
  EXPECT_GT(s.second, 0.3);  // the Zipf head now at 5001..
}

TEST(SmallBankTest, SqlReferencesAndFormsAgree) {
  auto schema = LoadPolicySchema("schemas/smallbank.sql");
  ASSERT_TRUE(schema.ok()) << schema.status();
  RefExtractor ex(*schema);
  SmallBankWorkload w(SmallParams());
  SmallBankTxn t(&w.tables(), kSendPayment);
  t.c1 = 7;
  t.c2 = 42;
  t.amount = 5;
  std::vector<SqlStatement> sql;
  t.AppendSql(&sql);
  RefVec ids;
  std::vector<std::string> texts;
  ASSERT_TRUE(ExtractRefs(ex, sql, {RefNaming::kCanonical, RefGrouping::kSingle}, false, &ids,
                          &texts)
                  .ok());
  const std::string all = absl::StrJoin(texts, " | ");
  EXPECT_NE(std::find(texts.begin(), texts.end(), "accounts.custid=7"), texts.end()) << all;
  EXPECT_NE(std::find(texts.begin(), texts.end(), "accounts.custid=42"), texts.end()) << all;
  texts.clear();
  ids.clear();
  ASSERT_TRUE(
      ExtractRefs(ex, sql, {RefNaming::kLiteral, RefGrouping::kSingle}, false, &ids, &texts).ok());
  EXPECT_NE(std::find(texts.begin(), texts.end(), "checking.custid=42"), texts.end())
      << absl::StrJoin(texts, " | ");

  ExpectFormsAgree(w, ex, 8, 300);
}

}  // namespace
}  // namespace workloads
}  // namespace corral
