#include <algorithm>
#include "scheduler/schedule.h"

#include <vector>

#include "absl/strings/str_cat.h"

#include "gtest/gtest.h"

namespace corral {
namespace scheduler {
namespace {

Policy P(absl::string_view name) {
  auto p = ParsePolicy(name);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

// Schedule options: scoring-only State, lead-seeded rows, multiplicity.
ScheduleOptions Rules(bool scoring_only, bool lead_seeds = false, bool multiplicity = false) {
  ScheduleOptions o;
  o.state_scoring_only = scoring_only;
  o.lead_seeds_rows = lead_seeds;
  o.ref_multiplicity = multiplicity;
  return o;
}

std::unique_ptr<state::State> MakeState(int queues, state::EvictionMode mode = state::EvictionMode::kStable,
                                        int64_t max_entries = 1 << 20) {
  state::State::Options o;
  o.num_queues = queues;
  o.eviction = mode;
  o.max_entries = max_entries;
  return state::State::Create(o, Clock::Real()).value();
}

// DESIGN.md Table 1 (queues 1..3 are indices 0..2).
class Table1Test : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = MakeState(3);
    history_.Add(RefId::Of("s_quantity=6"), 20, 60);
    history_.Add(RefId::Of("s_quantity=7"), 40, 20);
    history_.Add(RefId::Of("s_i_id=1"), 20, 20);
    history_.Add(RefId::Of("s_i_id=2"), 0, 20);
    history_.Add(RefId::Of("s_w_id=5"), 20, 20);
    state_->Set(RefId::Of("s_i_id=1"), {2, 0, 0});
    state_->Set(RefId::Of("s_w_id=5"), {2, 1, 1});
    state_->Set(RefId::Of("s_i_id=2"), {0, 1, 1});
    state_->Set(RefId::Of("s_quantity=7"), {2, 1, 1});
    state_->Set(RefId::Of("s_quantity=6"), {2, 1, 1});
    refs_ = {RefId::Of("s_quantity=6"), RefId::Of("s_i_id=2"), RefId::Of("s_w_id=5")};
  }
  void Expect(absl::string_view policy, std::vector<double> want, int want_q) {
    Schedule s(&history_, state_.get(), P(policy), 1);
    std::vector<double> scores;
    EXPECT_EQ(s.Decide(refs_, 0, &scores), QueueId(want_q)) << policy;
    ASSERT_EQ(scores.size(), want.size());
    for (size_t q = 0; q < want.size(); ++q) EXPECT_DOUBLE_EQ(scores[q], want[q]) << policy << " q" << q;
  }
  history::History history_;
  std::unique_ptr<state::State> state_;
  RefVec refs_;
};

// DESIGN.md prints totals [6, 4, 4] for Table 1, but its five rows sum to
// [8, 4, 4]; totals here are always the sum over held rows. No Table 1
// decision depends on the totals (no top-score tie).
TEST_F(Table1Test, TotalsAreTheSumOfRows) {
  EXPECT_EQ(state_->Total(QueueId(0)), 8);
  EXPECT_EQ(state_->Total(QueueId(1)), 4);
  EXPECT_EQ(state_->Total(QueueId(2)), 4);
}
TEST_F(Table1Test, CountSum) { Expect("count-sum-literal-single", {80, 40, 40}, 0); }
TEST_F(Table1Test, FractionSum) { Expect("fraction-sum-literal-single", {1.5, 0.75, 0.75}, 0); }
TEST_F(Table1Test, CountMaxTie) { Expect("count-max-literal-single", {40, 20, 20}, 0); }
TEST_F(Table1Test, FractionMax) { Expect("fraction-max-literal-single", {1.0, 0.5, 0.5}, 0); }
TEST_F(Table1Test, ExtractionDimensionsDoNotChangeScoring) {
  Expect("count-sum-canonical-all", {80, 40, 40}, 0);
  Expect("fraction-max-canonical-all", {1.0, 0.5, 0.5}, 0);
}
TEST_F(Table1Test, ReferenceOrderDoesNotMatter) {
  std::reverse(refs_.begin(), refs_.end());
  Expect("count-max-literal-single", {40, 20, 20}, 0);
  Expect("fraction-sum-literal-single", {1.5, 0.75, 0.75}, 0);
}

// DESIGN.md Table 2: Fraction/Max three-way tie -> default -> q2 (index 1).
TEST(Table2Test, FractionMaxTieGoesToSmallestTotal) {
  history::History h;
  auto st = MakeState(3);
  h.Add(RefId::Of("i_id=2"), 10, 10);
  h.Add(RefId::Of("o_id=10"), 10, 10);
  h.Add(RefId::Of("c_id=11"), 10, 10);
  h.Add(RefId::Of("w_id=5"), 30, 10);
  h.Add(RefId::Of("s_quantity=7"), 20, 20);
  st->Set(RefId::Of("i_id=2"), {1, 0, 0});
  st->Set(RefId::Of("w_id=5"), {1, 1, 1});
  st->Set(RefId::Of("c_id=11"), {0, 1, 1});
  st->Set(RefId::Of("s_quantity=7"), {1, 0, 0});
  st->Set(RefId::Of("o_id=10"), {0, 0, 1});
  int64_t totals[3];
  st->ReadTotals(totals);
  EXPECT_EQ(totals[0], 3);
  EXPECT_EQ(totals[1], 2);
  EXPECT_EQ(totals[2], 3);
  Schedule s(&h, st.get(), P("fraction-max-canonical-single"), 1);
  RefVec refs = {RefId::Of("s_quantity=6"), RefId::Of("i_id=2"), RefId::Of("w_id=5")};
  std::vector<double> scores;
  EXPECT_EQ(s.Decide(refs, 0, &scores), QueueId(1));
  EXPECT_DOUBLE_EQ(scores[0], 0.75);
  EXPECT_DOUBLE_EQ(scores[1], 0.75);
  EXPECT_DOUBLE_EQ(scores[2], 0.75);
}

TEST(ScheduleTest, UnknownReferencesGoToSmallestTotalThenLowestIndex) {
  history::History h;
  auto st = MakeState(4);
  st->Set(RefId::Of("x"), {5, 2, 2, 7});
  Schedule s(&h, st.get(), P("count-max-canonical-single"), 1);
  RefVec refs = {RefId::Of("never=1"), RefId::Of("seen=2")};
  std::vector<double> scores;
  EXPECT_EQ(s.Decide(refs, 0, &scores), QueueId(1));  // totals 5,2,2,7: tie 1,2 -> 1
  for (double v : scores) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(s.Decide({}, 0), QueueId(1));
}

TEST(ScheduleTest, FreshTablesSpreadByTheDefaultRule) {
  history::History h;
  auto st = MakeState(3);
  Schedule s(&h, st.get(), P("fraction-sum-literal-single"), 1);
  std::vector<int> seen;
  for (int i = 0; i < 6; ++i) {
    Txn t;
    t.refs = {RefId(1000 + i)};
    seen.push_back(s.Place(t).value());
    EXPECT_EQ(t.queue.value(), seen.back());
  }
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

TEST(ScheduleTest, PartialTieUsesTotalsOnlyAmongTiedQueues) {
  history::History h;
  auto st = MakeState(4);
  h.Add(RefId::Of("r"), 3, 0);
  st->Set(RefId::Of("r"), {0, 2, 2, 1});
  st->Set(RefId::Of("other"), {0, 9, 0, 0});  // totals 0, 11, 2, 1
  Schedule s(&h, st.get(), P("count-sum-canonical-single"), 1);
  std::vector<double> scores;
  // q0 has the smallest total but is not among the tied best (6, 6).
  EXPECT_EQ(s.Decide({RefId::Of("r")}, 0, &scores), QueueId(2));
  EXPECT_EQ(scores, (std::vector<double>{0, 6, 6, 3}));
}

TEST(ScheduleTest, MaxTiedWeightsTakeTheBestRowPerQueue) {
  history::History h;
  auto st = MakeState(3);
  h.Add(RefId::Of("a"), 10, 0);
  h.Add(RefId::Of("b"), 10, 5);
  h.Add(RefId::Of("c"), 4, 4);
  st->Set(RefId::Of("a"), {1, 0, 3});
  st->Set(RefId::Of("b"), {0, 2, 1});
  st->Set(RefId::Of("c"), {0, 50, 0});  // lower weight: ignored by Max
  Schedule s(&h, st.get(), P("count-max-literal-all"), 1);
  std::vector<double> scores;
  RefVec ab = {RefId::Of("c"), RefId::Of("b"), RefId::Of("a")};
  EXPECT_EQ(s.Decide(ab, 0, &scores), QueueId(2));
  EXPECT_EQ(scores, (std::vector<double>{10, 20, 30}));
  // Under Fraction, a (1.0) beats b (0.67): only a's row counts.
  s.SetPolicy(P("fraction-max-literal-all"));
  EXPECT_EQ(s.Decide(ab, 0, &scores), QueueId(2));
  EXPECT_EQ(scores, (std::vector<double>{1, 0, 3}));
  // Sum adds them all, c included.
  s.SetPolicy(P("count-sum-literal-all"));
  EXPECT_EQ(s.Decide(ab, 0, &scores), QueueId(1));
  EXPECT_EQ(scores, (std::vector<double>{10, 220, 40}));
}

TEST(ScheduleTest, ZeroWeightReferencesDoNotScore) {
  history::History h;
  auto st = MakeState(2);
  h.Add(RefId::Of("z"), 0, 100);
  st->Set(RefId::Of("z"), {0, 9});
  st->Set(RefId::Of("y"), {1, 0});  // totals 1, 9
  Schedule s(&h, st.get(), P("count-sum-literal-single"), 1);
  EXPECT_EQ(s.Decide({RefId::Of("z")}, 0), QueueId(0));
}

TEST(ScheduleTest, PlaceRecordsStateForLearnedPolicyOnly) {
  history::History h;
  auto st = MakeState(2);
  h.Add(RefId::Of("w=1"), 5, 0);
  st->Set(RefId::Of("w=1"), {0, 1});
  Schedule s(&h, st.get(), P("count-max-canonical-single"), 1);
  Txn t;
  t.refs = {RefId::Of("w=1"), RefId::Of("new=1")};
  EXPECT_EQ(s.Place(t), QueueId(1));
  uint64_t row[2];
  ASSERT_TRUE(st->ReadRow(RefId::Of("w=1"), row));
  EXPECT_EQ(row[1], 2u);
  ASSERT_TRUE(st->ReadRow(RefId::Of("new=1"), row));
  EXPECT_EQ(row[1], 1u);
  s.SetPolicy(P("original"));
  EXPECT_EQ(s.policy(), P("original"));
  s.Place(t);
  ASSERT_TRUE(st->ReadRow(RefId::Of("w=1"), row));
  EXPECT_EQ(row[0] + row[1], 2u);
}

TEST(ScheduleTest, HardPartitionIsKeyModQueues) {
  history::History h;
  auto st = MakeState(4);
  Schedule s(&h, st.get(), P("hard-partition"), 1);
  EXPECT_EQ(s.Decide({}, 7), QueueId(3));
  EXPECT_EQ(s.Decide({}, 8), QueueId(0));
}

TEST(ScheduleTest, OriginalIsUniformAndDeterministicUnderASeed) {
  history::History h;
  auto st = MakeState(8);
  Schedule a(&h, st.get(), P("original"), 42), b(&h, st.get(), P("original"), 42),
      c(&h, st.get(), P("original"), 43);
  std::vector<int> counts(8, 0);
  bool differs = false;
  for (int i = 0; i < 8000; ++i) {
    const QueueId qa = a.Decide({}, 0);
    EXPECT_EQ(qa, b.Decide({}, 0));
    differs |= qa != c.Decide({}, 0);
    ++counts[qa.value()];
  }
  EXPECT_TRUE(differs);
  for (int n : counts) {
    EXPECT_GT(n, 800);
    EXPECT_LT(n, 1200);
  }
}

TEST(ScheduleTest, WeightCacheServesStaleReadsUntilRegenerate) {
  history::History h;
  auto st = MakeState(2);
  h.Add(RefId::Of("a"), 1, 0);
  h.Add(RefId::Of("b"), 2, 0);
  st->Set(RefId::Of("a"), {1, 0});
  st->Set(RefId::Of("b"), {0, 1});
  ScheduleOptions hour;
  hour.weight_cache_ns = int64_t{3600} * 1000000000;
  Schedule cached(&h, st.get(), P("count-max-canonical-single"), 1, hour);
  Schedule fresh(&h, st.get(), P("count-max-canonical-single"), 1);
  RefVec refs = {RefId::Of("a"), RefId::Of("b")};
  EXPECT_EQ(cached.Decide(refs), QueueId(1));
  h.Add(RefId::Of("a"), 10, 0);  // a now outweighs b
  EXPECT_EQ(fresh.Decide(refs), QueueId(0));
  EXPECT_EQ(cached.Decide(refs), QueueId(1));  // stale within the hour
  h.Regenerate();
  h.Add(RefId::Of("a"), 10, 0);
  EXPECT_EQ(cached.Decide(refs), QueueId(0));  // regeneration invalidates
}

// The paper's Figure 15 effect: with direct delete a hot reference's State
// row is evicted under a stream of fresh references and its transactions stop
// following it; stable delete keeps it.
int HotTxnsOffQueue(state::EvictionMode mode) {
  history::History h;
  auto st = MakeState(4, mode, 2000);
  const RefId hot = RefId::Of("w_id=1");
  h.Add(hot, 100, 100);
  Schedule s(&h, st.get(), P("count-max-canonical-single"), 1);
  Txn first;
  first.refs = {hot};
  const QueueId home = s.Place(first);
  int off = 0;
  for (int i = 0; i < 50000; ++i) {
    Txn cold;
    cold.refs = {RefId(0x777000000ULL + i)};
    s.Place(cold);
    if (i % 50 == 0) {
      Txn t;
      t.refs = {hot};
      off += s.Place(t) != home;
    }
  }
  return off;
}

TEST(ScheduleTest, StableDeleteKeepsAffinityDirectDeleteLosesIt) {
  EXPECT_EQ(HotTxnsOffQueue(state::EvictionMode::kStable), 0);
  EXPECT_GT(HotTxnsOffQueue(state::EvictionMode::kDirect), 0);
}

// Place (which for Max scores inside the lead reference's State update) picks
// what Decide picks on the same tables, for every policy, with ties in
// weights and rows, duplicates and unknown references.
TEST(ScheduleTest, PlaceAgreesWithDecide) {
  for (const char* name : {"count-max-canonical-single", "fraction-max-canonical-single",
                           "count-sum-canonical-single", "fraction-sum-canonical-single"}) {
    history::History h;
    auto st = MakeState(5);
    for (int i = 0; i < 40; ++i) {
      if (i % 7 != 0) h.Add(RefId(1000 + i), i % 4, i % 3);
      if (i % 5 != 0) {
        const uint64_t v = Mix64(i);
        st->Set(RefId(1000 + i), {v % 3, (v >> 8) % 3, (v >> 16) % 3, 0, (v >> 24) % 2});
      }
    }
    Schedule s(&h, st.get(), P(name), 1);
    uint64_t x = 7;
    for (int t = 0; t < 400; ++t) {
      Txn txn;
      const int k = 1 + t % 6;
      for (int j = 0; j < k; ++j) {
        x = Mix64(x);
        txn.refs.push_back(RefId(1000 + x % 45));
      }
      if (t % 9 == 0) txn.refs.push_back(txn.refs.front());  // a duplicate
      const QueueId want = s.Decide(txn.refs);
      const int64_t before = st->Total(want);
      ASSERT_EQ(s.Place(txn), want) << name << " txn " << t;
      EXPECT_EQ(txn.queue, want);
      EXPECT_EQ(st->Total(want) - before, static_cast<int64_t>(history::DistinctRefs(txn.refs)));
    }
  }
}

// refs_distinct (the extractor's references, never repeated) skips the
// duplicate scans and must decide and record exactly as without it: two
// identical Schedules over identical tables, one told, one not.
TEST(ScheduleTest, DistinctFlagDecidesAndRecordsAsTheScan) {
  for (const char* name : {"count-max-canonical-single", "fraction-sum-canonical-single"}) {
    history::History h;
    auto st_a = MakeState(4);
    auto st_b = MakeState(4);
    for (int i = 0; i < 30; ++i) h.Add(RefId(500 + i), i % 5, i % 2);
    Schedule a(&h, st_a.get(), P(name), 3);
    Schedule b(&h, st_b.get(), P(name), 3);
    uint64_t x = 11;
    for (int t = 0; t < 300; ++t) {
      Txn ta, tb;
      for (int j = 0; j < 1 + t % 7; ++j) {
        x = Mix64(x);
        const RefId r(500 + x % 40);
        if (std::find(ta.refs.begin(), ta.refs.end(), r) != ta.refs.end()) continue;
        ta.refs.push_back(r);
        tb.refs.push_back(r);
      }
      tb.refs_distinct = true;
      ASSERT_EQ(a.Place(ta), b.Place(tb)) << name << " txn " << t;
      for (int q = 0; q < 4; ++q) ASSERT_EQ(st_a->Total(QueueId(q)), st_b->Total(QueueId(q)));
    }
  }
}

TEST(ScheduleTest, SumCountsADuplicateReferenceOnce) {
  history::History h;
  auto st = MakeState(2);
  h.Add(RefId(1), 1, 0);
  h.Add(RefId(2), 1, 0);
  st->Set(RefId(1), {3, 0});
  st->Set(RefId(2), {0, 4});
  Schedule s(&h, st.get(), P("count-sum-canonical-single"), 1);
  std::vector<double> scores;
  // Counted twice, RefId(1) would score 6 and win queue 0.
  EXPECT_EQ(s.Decide({RefId(1), RefId(2), RefId(1)}, 0, &scores), QueueId(1));
  EXPECT_DOUBLE_EQ(scores[0], 3.0);
  EXPECT_DOUBLE_EQ(scores[1], 4.0);
}

// Scoring-only State: rows only for references with weight > 0; totals
// count every distinct reference.
TEST(ScheduleTest, ScoringOnlyRecordsRowsOnlyForScoringReferences) {
  for (const char* name : {"count-max-canonical-single", "count-sum-canonical-single",
                           "fraction-max-canonical-single"}) {
    history::History h;
    auto st = MakeState(2);
    h.Add(RefId(1), 3, 1);   // scores
    h.Add(RefId(2), 0, 9);   // known, weight 0
    Schedule s(&h, st.get(), P(name), 1, Rules(/*scoring_only=*/true));
    Txn t;
    t.refs = {RefId(1), RefId(2), RefId(3), RefId(3)};  // RefId(3) unknown, twice
    const QueueId q = s.Place(t);
    uint64_t row[2];
    ASSERT_TRUE(st->ReadRow(RefId(1), row)) << name;
    EXPECT_EQ(row[q.value()], 1u) << name;
    EXPECT_FALSE(st->ReadRow(RefId(2), row)) << name;
    EXPECT_FALSE(st->ReadRow(RefId(3), row)) << name;
    EXPECT_EQ(st->size(), 1) << name;
    EXPECT_EQ(st->Total(q), 3) << name;  // three distinct references
    EXPECT_EQ(st->Total(QueueId(1 - q.value())), 0) << name;
    // Nothing scores: no row at all, totals still count.
    Txn cold;
    cold.refs = {RefId(7), RefId(8)};
    const QueueId q2 = s.Place(cold);
    EXPECT_EQ(q2, QueueId(1 - q.value())) << name;  // the default rule: smaller total
    EXPECT_EQ(st->size(), 1) << name;
    EXPECT_EQ(st->Total(q2), 2) << name;
  }
}

// References that cannot score never change a decision, so with the same
// History, scoring-only and full State place every transaction alike (the
// totals, which count every reference, agree too).
TEST(ScheduleTest, ScoringOnlyPlacesLikeTheFullState) {
  for (const char* name : {"count-max-canonical-single", "fraction-max-canonical-single",
                           "count-sum-canonical-single", "fraction-sum-canonical-single"}) {
    history::History h;
    for (int r = 0; r < 60; ++r) h.Add(RefId(100 + r), r % 3 == 0 ? 0 : r % 7, 10);
    auto full_st = MakeState(4), part_st = MakeState(4);
    Schedule full(&h, full_st.get(), P(name), 1, Rules(false));
    Schedule part(&h, part_st.get(), P(name), 1, Rules(true));
    uint64_t x = 12345;
    int64_t partial_rows_smaller = 0;
    for (int i = 0; i < 3000; ++i) {
      Txn a, b;
      for (int j = 0; j < 5; ++j) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        a.refs.push_back(RefId(100 + (x >> 33) % 80));  // 20 of 80 unknown
      }
      b.refs = a.refs;
      ASSERT_EQ(full.Place(a), part.Place(b)) << name << " txn " << i;
    }
    for (int q = 0; q < 4; ++q) EXPECT_EQ(full_st->Total(QueueId(q)), part_st->Total(QueueId(q))) << name;
    partial_rows_smaller = full_st->size() - part_st->size();
    EXPECT_GT(partial_rows_smaller, 0) << name;
  }
}

// Unplace takes back exactly what the latest Place recorded.
TEST(ScheduleTest, UnplaceUndoesAScoringOnlyPlace) {
  history::History h;
  auto st = MakeState(2);
  h.Add(RefId(1), 3, 1);
  st->Set(RefId(1), {0, 4});
  Schedule s(&h, st.get(), P("count-sum-canonical-single"), 1, Rules(true));
  Txn t;
  t.refs = {RefId(1), RefId(2), RefId(3)};
  const QueueId q = s.Place(t);
  EXPECT_EQ(q, QueueId(1));
  EXPECT_EQ(st->Total(q), 7);
  s.Unplace(t, q);
  EXPECT_EQ(st->Total(QueueId(0)), 0);
  EXPECT_EQ(st->Total(QueueId(1)), 4);
  uint64_t row[2];
  ASSERT_TRUE(st->ReadRow(RefId(1), row));
  EXPECT_EQ(row[1], 4u);
}

// Frozen History: the read cache keeps reads while frozen, and a change
// through Add (which ignores the freeze), Unfreeze or Regenerate is seen at
// once, whatever weight_cache_ns says.
TEST(ScheduleTest, FrozenHistoryReadsStayExact) {
  history::History h;
  auto st = MakeState(2);
  h.Add(RefId::Of("a"), 1, 0);
  h.Add(RefId::Of("b"), 2, 0);
  st->Set(RefId::Of("a"), {1, 0});
  st->Set(RefId::Of("b"), {0, 1});
  Schedule s(&h, st.get(), P("count-max-canonical-single"), 1);
  const RefVec refs = {RefId::Of("a"), RefId::Of("b")};
  h.Freeze();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s.Decide(refs), QueueId(1));
  h.RecordAbort({RefId::Of("a")});  // ignored: frozen
  h.RecordAbort({RefId::Of("a")});
  EXPECT_EQ(s.Decide(refs), QueueId(1));
  h.Add(RefId::Of("a"), 10, 0);  // a now outweighs b
  EXPECT_EQ(s.Decide(refs), QueueId(0));
  h.Unfreeze();
  for (int i = 0; i < 20; ++i) h.RecordAbort({RefId::Of("b")});  // b: 22 > a: 11
  EXPECT_EQ(s.Decide(refs), QueueId(1));
  h.Freeze();
  EXPECT_EQ(s.Decide(refs), QueueId(1));
  h.Regenerate();
  h.Add(RefId::Of("a"), 1, 0);
  EXPECT_EQ(s.Decide(refs), QueueId(0));  // b unknown now
}


// A remote payment names its home warehouse (w_id=2, no row yet) beside a
// heavier warehouse (w_id=5, row on queue 3). With lead-seeded rows w_id=2
// gets no row there, so its own next transaction is placed by the default
// rule instead of following w_id=5 to queue 3 for good.
TEST(ScheduleTest, LeadSeededRowsDoNotInheritAHeavierReferencesQueue) {
  for (bool seeded : {false, true}) {
    history::History h;
    h.Add(RefId::Of("w_id=5"), 50, 100);
    h.Add(RefId::Of("w_id=2"), 40, 100);
    auto st = MakeState(4);
    st->Set(RefId::Of("w_id=5"), {0, 0, 0, 6});
    st->Set(RefId::Of("w_id=9"), {2, 0, 3, 0});  // totals 2, 0, 3, 6
    Schedule s(&h, st.get(), P("count-max-canonical-single"), 1, Rules(true, seeded));
    Txn remote;
    remote.refs = {RefId::Of("w_id=2"), RefId::Of("w_id=5")};
    EXPECT_EQ(s.Place(remote), QueueId(3));
    EXPECT_EQ(st->Contains(RefId::Of("w_id=2")), !seeded);
    EXPECT_EQ(st->Total(QueueId(3)), 8);  // both references count in the total
    Txn home;
    home.refs = {RefId::Of("w_id=2")};
    EXPECT_EQ(s.Place(home), seeded ? QueueId(1) : QueueId(3)) << "seeded=" << seeded;
    // The lead created its own row on the queue it was placed on.
    uint64_t row[4];
    ASSERT_TRUE(st->ReadRow(RefId::Of("w_id=2"), row));
    EXPECT_EQ(row[seeded ? 1 : 3], seeded ? 1u : 2u);
  }
}


// Online TPC-C under canonical single naming: d_id=3 names district 3 of
// every warehouse and can outweigh a warehouse a little. With an
// established-lead share, the warehouse whose row has placed most of its
// transactions keeps them; a rival twice as heavy still takes over.
TEST(ScheduleEstablishedLead, TheReferenceThatLedAllAlongKeepsItsTransactions) {
  for (double share : {0.0, 0.5}) {
    history::History h;
    h.Add(RefId::Of("w_id=5"), 100, 1000);
    h.Add(RefId::Of("d_id=3"), 120, 1000);
    auto st = MakeState(4);
    st->Set(RefId::Of("w_id=5"), {0, 0, 400, 0});
    st->Set(RefId::Of("d_id=3"), {0, 30, 0, 0});
    ScheduleOptions o = Rules(true, true);
    o.established_lead_share = share;
    Schedule s(&h, st.get(), P("count-max-canonical-single"), 1, o);
    Txn t;
    t.refs = {RefId::Of("w_id=5"), RefId::Of("d_id=3")};
    EXPECT_EQ(s.Place(t), share > 0 ? QueueId(2) : QueueId(1)) << "share=" << share;
    h.Add(RefId::Of("d_id=3"), 200, 0);  // now 320 against 100: clearly heavier
    Txn u;
    u.refs = t.refs;
    EXPECT_EQ(s.Place(u), QueueId(1)) << "share=" << share;
  }
}

// Deciders that read the same totals (here: placements that add nothing to
// them, as concurrent first transactions all read zeros) go to different
// queues rather than all to queue 0.
TEST(ScheduleTest, EqualTotalsRotateOverQueues) {
  history::History h;
  auto st = MakeState(8);
  Schedule s(&h, st.get(), P("count-max-canonical-single"), 1);
  std::vector<int> seen;
  for (int i = 0; i < 8; ++i) {
    Txn t;  // no references: nothing recorded, totals stay 0
    const QueueId d = s.Decide(t.refs, 0);
    EXPECT_EQ(s.Place(t), d);  // Decide agrees with the next Place
    seen.push_back(t.queue.value());
  }
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}


// Multiplicity: a remote payment names its home warehouse in 5 statements
// and its customer's in 3. Their History weights are about equal (the
// customer's slightly higher); without multiplicity Max follows the
// customer's warehouse, with it the home warehouse.
TEST(ScheduleMultiplicity, TheReferenceNamedMostLeadsAmongSimilarWeights) {
  history::History h;
  const RefId home = RefId::Of("w_id=2"), away = RefId::Of("w_id=5");
  h.Add(home, 640, 2500);
  h.Add(away, 660, 2500);
  for (bool on : {false, true}) {
    auto st = MakeState(4);
    st->Set(home, {0, 50, 0, 0});
    st->Set(away, {0, 0, 0, 50});
    Schedule s(&h, st.get(), P("count-max-canonical-single"), 1, Rules(false, false, on));
    Txn t;
    t.refs = {away, home};
    t.ref_mult = {3, 5};
    EXPECT_EQ(s.Decide(t.refs, 0, nullptr, t.ref_mult), QueueId(on ? 1 : 3)) << on;
    // Without counts the weights are the paper's, on or off.
    EXPECT_EQ(s.Decide(t.refs, 0, nullptr), QueueId(3)) << on;
    // Sum weighs each row by its multiplicity too: 640*5*50 on q1 vs
    // 660*3*50 on q3.
    s.SetPolicy(ParsePolicy("count-sum-canonical-single").value());
    std::vector<double> scores;
    EXPECT_EQ(s.Decide(t.refs, 0, &scores, t.ref_mult), QueueId(on ? 1 : 3)) << on;
    EXPECT_DOUBLE_EQ(scores[1], on ? 640.0 * 5 * 50 : 640.0 * 50);
    EXPECT_DOUBLE_EQ(scores[3], on ? 660.0 * 3 * 50 : 660.0 * 50);
    s.SetPolicy(ParsePolicy("count-max-canonical-single").value());
    EXPECT_EQ(s.Place(t), QueueId(on ? 1 : 3)) << on;
  }
}


// A new row goes where the fewest rows were seeded, even if another queue's
// State total is smaller (early in a run totals are a few placements).
TEST(ScheduleSeeding, NewRowsGoWhereFewestRowsWereSeeded) {
  {
    history::History h;
    const RefId a = RefId::Of("w_id=1"), b = RefId::Of("w_id=2");
    h.Add(a, 10, 10);
    h.Add(b, 10, 10);
    auto st = MakeState(3);
    Schedule s(&h, st.get(), P("count-max-canonical-single"), 1,
               Rules(/*scoring_only=*/true, /*lead_seeds=*/true));
    Txn ta;
    ta.refs = {a};
    const QueueId qa = s.Place(ta);
    // Unknown references (weight 0) fill the other two queues' totals.
    for (int i = 0; i < 2; ++i) {
      Txn u;
      for (int k = 0; k < 5; ++k) u.refs.push_back(RefId::Of(absl::StrCat("u", i, "_", k)));
      EXPECT_NE(s.Place(u), qa);
    }
    EXPECT_LT(st->Total(qa), st->Total(QueueId((qa.value() + 1) % 3)));
    Txn tb;
    tb.refs = {b};
    EXPECT_NE(s.Decide(tb.refs), qa);
    EXPECT_NE(s.Place(tb), qa);  // the smallest total is qa's, but a row was seeded there
    // Later transactions of a and b follow their rows.
    EXPECT_EQ(s.Place(ta), qa);
  }
}

}  // namespace
}  // namespace scheduler
}  // namespace corral
