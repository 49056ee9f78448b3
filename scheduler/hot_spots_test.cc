#include "scheduler/hot_spots.h"

#include <map>
#include <tuple>

#include "gtest/gtest.h"

namespace corral {
namespace scheduler {
namespace {

TEST(SplitRuleTest, GrowsWhenQueueWaitExceedsAbortAndRetryCost) {
  SplitRule rule;
  rule.max_k = 3;
  SplitState st;
  // Excess wait of 3 attempts with 10% retries: a retry is cheaper, spread
  // (once it held two windows in a row); split, a step a window.
  EXPECT_EQ(rule.Step(&st, {3000, 1000, 0.1}), 1);
  EXPECT_EQ(rule.Step(&st, {3000, 1000, 0.1}), 2);
  EXPECT_EQ(rule.Step(&st, {3000, 1000, 0.1}), 3);
  EXPECT_EQ(rule.Step(&st, {50000, 1000, 0.1}), 3);  // never above max_k
  // One window alone does not grow; wait shorter than an attempt plus its
  // retries: hold.
  SplitState fresh;
  EXPECT_EQ(rule.Step(&fresh, {3000, 1000, 0.1}), 1);
  EXPECT_EQ(rule.Step(&fresh, {1050, 1000, 0.1}), 1);
  EXPECT_EQ(rule.Step(&fresh, {3000, 1000, 0.1}), 1);
  EXPECT_EQ(rule.Step(&fresh, {-400, 1000, 0.0}), 1);
  // No attempts in the window: no evidence, hold.
  EXPECT_EQ(rule.Step(&fresh, {5000, 0, 0}), 1);
}

TEST(SplitRuleTest, ShrinksBackWhenAbortsRiseAboveTheWaitSaved) {
  SplitRule rule;
  rule.grow_windows = 1;
  rule.saved_decay = 0.8;
  SplitState st;
  ASSERT_EQ(rule.Step(&st, {4000, 1000, 0.05}), 2);  // r0 = 0.05, wait before 4000
  // Split: the wait fell to 500 (saved 3500), retries rose to 0.5 (cost 450):
  // worth it, hold.
  EXPECT_EQ(rule.Step(&st, {500, 1000, 0.5}), 2);
  EXPECT_EQ(rule.Step(&st, {500, 1000, 0.5}), 2);
  // Retries rise to 3 per commit (cost 2950 > the 3500 saved once it has
  // faded to 0.8 * 0.8 * 3500 = 2240): shrink back to 1.
  EXPECT_EQ(rule.Step(&st, {500, 1000, 3.0}), 1);
  EXPECT_TRUE(st.steps.empty());
}

// require_gain (the proxy's rule): a step that adds retries but no commits
// (one hot row: the row, not the backend, is the bottleneck) is taken back
// at once and k holds at 1 for hold_windows, twice as long the next time;
// a step that adds commits (a hot branch whose transactions mostly touch
// their own rows) stays and grows on, retries or not.
TEST(SplitRuleTest, RequireGainTakesBackAStepThatAddedOnlyRetries) {
  SplitRule rule;
  rule.grow_windows = 1;
  rule.require_gain = true;
  rule.hold_windows = 3;
  SplitSample waiting{8000, 1000, 0.0, 400};
  SplitState row;
  ASSERT_EQ(rule.Step(&row, waiting), 2);
  // Split: less wait, 0.8 retries per commit, 5% more commits: back to 1.
  EXPECT_EQ(rule.Step(&row, {1000, 1000, 0.8, 420}), 1);
  EXPECT_TRUE(row.no_gain);
  EXPECT_EQ(row.hold, 3);
  // Held for 3 windows although the wait says grow, then it probes again.
  EXPECT_EQ(rule.Step(&row, waiting), 1);
  EXPECT_FALSE(row.no_gain);
  EXPECT_EQ(rule.Step(&row, waiting), 1);
  EXPECT_EQ(rule.Step(&row, waiting), 2);
  EXPECT_EQ(rule.Step(&row, {1000, 1000, 0.8, 400}), 1);
  EXPECT_EQ(row.hold, 6);  // doubled
  // Off (the engine's rule): the same step stays while the wait it saved
  // outweighs the retries.
  SplitRule plain = rule;
  plain.require_gain = false;
  SplitState kept;
  ASSERT_EQ(plain.Step(&kept, waiting), 2);
  EXPECT_EQ(plain.Step(&kept, {1000, 1000, 0.8, 420}), 2);
  // A step that raises the commits stays, though it adds retries.
  SplitState branch;
  ASSERT_EQ(rule.Step(&branch, waiting), 2);
  EXPECT_EQ(rule.Step(&branch, {4000, 1000, 0.05, 700}), 3);
  EXPECT_FALSE(branch.no_gain);
  // Commits not known (< 0): no check.
  SplitState unknown;
  ASSERT_EQ(rule.Step(&unknown, {8000, 1000, 0.0}), 2);
  EXPECT_EQ(rule.Step(&unknown, {1000, 1000, 0.8}), 2);
}

TEST(SplitRuleTest, FollowsASyntheticHotSpotThatComesAndGoes) {
  // A synthetic hot spot: the excess wait falls as k grows, the retries rise
  // with k (k concurrent transactions of one row). Hot: grows to where the
  // wait no longer pays for a retry and holds there, but for a rare probe
  // one step back once the saving it measured has faded. Gone:
  // the saved wait fades and the retries take k back to 1.
  SplitRule rule;
  rule.max_k = 8;
  rule.grow_windows = 1;
  rule.saved_decay = 0.8;
  auto hot = [](int k) {
    return SplitSample{6000.0 / k - 1000, 1000, 0.1 * (k - 1)};  // 5000, 2000, 1000, 500, ...
  };
  SplitState st;
  std::map<int, int> seen;
  for (int w = 0; w < 40; ++w) {
    rule.Step(&st, hot(st.k));
    if (w >= 10) ++seen[st.k];
  }
  // k=3: W 1000 < (1 + 0.2) 1000 = 1200: hold; k=4 never (no wait to save),
  // k=2 only as a one-window probe.
  EXPECT_EQ(seen.count(4), 0u);
  EXPECT_EQ(seen.count(1), 0u);
  EXPECT_GE(seen[3], 25) << seen[2];
  int windows = 0;
  while (st.k > 1 && windows < 100) {
    rule.Step(&st, {0, 1000, 0.1 * (st.k - 1)});  // no excess wait any more
    ++windows;
  }
  EXPECT_EQ(st.k, 1);
  EXPECT_LE(windows, 40);
}

// The TPC-C shape that motivated it: two warehouses on queues 3 and 4 each,
// queue 1 idle. The busiest movable queue gives its lead to the idlest, when
// the lead carries less than the gap.
// Uniform TPC-C, 8 warehouses on 8 queues: each warehouse carries one
// queue's share, and a wait on its queue is not a hot spot; under a Zipf
// 0.99 warehouse the hottest carries ~37% of all, 3x a queue's share.
// A split reference back to about its queue's share (the hot phase ended)
// fits at once; between that and a candidate's share it takes windows.
TEST(SplitRuleTest, AReferenceBackToOneQueuesShareClearlyFits) {
  SplitRule rule;
  EXPECT_TRUE(rule.ClearlyFits(/*lead_load=*/130, /*window_commits=*/1000, /*queues=*/8));
  EXPECT_FALSE(rule.ClearlyFits(170, 1000, 8));
  EXPECT_FALSE(rule.Candidate(170, 1000, 8));  // 1.36 shares: neither
  EXPECT_FALSE(rule.ClearlyFits(370, 1000, 8));
  EXPECT_FALSE(rule.ClearlyFits(0, 0, 8));  // an empty window says nothing
}

TEST(SplitRuleTest, OnlyAReferenceThatOverflowsOneQueueIsACandidate) {
  SplitRule rule;
  EXPECT_FALSE(rule.Candidate(/*lead_load=*/125, /*window_started=*/1000, /*queues=*/8));
  EXPECT_FALSE(rule.Candidate(180, 1000, 8));
  EXPECT_TRUE(rule.Candidate(370, 1000, 8));
  EXPECT_FALSE(rule.Candidate(370, 0, 8));  // nothing measured
  rule.min_load_share = 1.0;
  EXPECT_TRUE(rule.Candidate(125, 1000, 8));
}

TEST(RebalanceRuleTest, MovesALeadFromADoubledQueueToAnIdleOne) {
  RebalanceRule rr;
  const std::vector<int64_t> started = {660, 2, 780, 1590, 1570, 770, 800, 790};
  const std::vector<bool> all(8, true);
  EXPECT_EQ(rr.Pick(started, all), std::make_pair(3, 1));
  // One of queue 3's two warehouses (~half its load) evens the pair.
  EXPECT_TRUE(rr.Worth(1590, 2, 795));
  // A queue with one hot reference (all its load): moving it only swaps
  // the two queues; splitting answers that, not moving.
  EXPECT_FALSE(rr.Worth(1590, 2, 1590));
  EXPECT_FALSE(rr.Worth(1590, 2, 0));   // no load measured for the lead
  EXPECT_FALSE(rr.Worth(1590, 2, 51));  // too light to even the two
  // Queues in a split set are neither source nor target.
  std::vector<bool> movable = all;
  movable[3] = false;
  movable[1] = false;
  EXPECT_EQ(rr.Pick(started, movable), std::make_pair(-1, -1));  // queue 0 is not underused
  std::vector<int64_t> two_idle = started;
  two_idle[0] = 5;
  EXPECT_EQ(rr.Pick(two_idle, movable), std::make_pair(4, 0));
  // Even enough: nothing below half the mean, or nothing above 1.3x.
  EXPECT_EQ(rr.Pick({100, 60, 120, 110, 100, 90, 100, 100}, all), std::make_pair(-1, -1));
  EXPECT_EQ(rr.Pick({100, 10, 110, 110, 100, 90, 100, 100}, all), std::make_pair(-1, -1));
}

TEST(RebalanceRuleTest, PairsEveryDoubledQueueWithAnIdleOneInOneWindow) {
  RebalanceRule rr;
  // Measured at 0.4 s of an online TPC-C run: queues 5 and 7 ran two
  // warehouses each, queues 1 and 6 none (mean 313).
  const std::vector<int64_t> started = {316, 20, 287, 341, 310, 571, 0, 659};
  const std::vector<bool> all(8, true);
  // Each doubled queue's lead carries about half its load.
  auto half = [&](int hi, int, int64_t est_hi, int64_t) { return est_hi == started[hi] ? est_hi / 2.0 : -1.0; };
  const std::vector<std::pair<int, int>> want = {{7, 6}, {5, 1}};
  EXPECT_EQ(rr.PlanMoves(started, all, half), want);
  // Pick alone finds only the first pair.
  EXPECT_EQ(rr.Pick(started, all), want[0]);
  // A queue outside the movable set is in no pair.
  std::vector<bool> movable = all;
  movable[6] = false;
  const std::vector<std::pair<int, int>> without6 = {{7, 1}};  // then 5 has no idle partner
  EXPECT_EQ(rr.PlanMoves(started, movable, half), without6);
  int calls = 0;
  auto count = [&](int, int, int64_t, int64_t) { ++calls; return 50.0; };
  EXPECT_TRUE(rr.PlanMoves({100, 90, 110, 100}, all, count).empty());
  EXPECT_EQ(calls, 0);
}

TEST(RebalanceRuleTest, ATripledQueueGivesALeadToEachIdleQueueInOneWindow) {
  RebalanceRule rr;
  // Three warehouses on queue 2, queues 1 and 5 idle (mean 300).
  const std::vector<int64_t> started = {300, 0, 900, 300, 300, 0, 300, 300};
  const std::vector<bool> all(8, true);
  std::vector<std::tuple<int, int, int64_t, int64_t>> seen;
  auto move = [&](int hi, int lo, int64_t est_hi, int64_t est_lo) {
    seen.emplace_back(hi, lo, est_hi, est_lo);
    return 300.0;  // one warehouse
  };
  const std::vector<std::pair<int, int>> want = {{2, 1}, {2, 5}};
  EXPECT_EQ(rr.PlanMoves(started, all, move), want);
  // The second move was judged on the loads the first left.
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], std::make_tuple(2, 5, int64_t{600}, int64_t{0}));
  // A busiest queue with nothing worth moving gives way to the next one.
  const std::vector<int64_t> two = {300, 0, 900, 300, 300, 0, 700, 300};
  auto not2 = [&](int hi, int, int64_t, int64_t) { return hi == 2 ? -1.0 : 350.0; };
  const std::vector<std::pair<int, int>> want6 = {{6, 1}};
  EXPECT_EQ(rr.PlanMoves(two, all, not2), want6);
}

TEST(HotSpotsTest, RoutesASplitReferenceToItsShortestQueue) {
  HotSpots hs(8, 4);
  const RefId hot = RefId::Of("w_id=1");
  QueueId q;
  EXPECT_TRUE(hs.empty());
  EXPECT_FALSE(hs.Route(hot, &q));
  ASSERT_TRUE(hs.Set(hot, {2, 5, 7}));
  EXPECT_EQ(hs.MaxK(), 3);
  EXPECT_EQ(hs.Get(hot), (std::vector<int>{2, 5, 7}));
  // Without a probe: round-robin over the set.
  std::map<int, int> hits;
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(hs.Route(hot, &q));
    ++hits[q.value()];
  }
  EXPECT_EQ(hits, (std::map<int, int>{{2, 10}, {5, 10}, {7, 10}}));
  // With a probe: the shortest run queue.
  hs.SetQueueLength([](int queue) -> int64_t { return queue == 5 ? 0 : 9; });
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(hs.Route(hot, &q));
    EXPECT_EQ(q.value(), 5);
  }
  EXPECT_FALSE(hs.Route(RefId::Of("w_id=2"), &q));
  // Back to one queue: no longer split.
  ASSERT_TRUE(hs.Set(hot, {2}));
  EXPECT_FALSE(hs.Route(hot, &q));
  EXPECT_TRUE(hs.empty());
  EXPECT_EQ(hs.MaxK(), 1);
}

TEST(HotSpotsTest, IsSplitOnlyWithTwoOrMoreQueues) {
  HotSpots hs(4, 2);
  const RefId a = RefId::Of("w_id=1"), b = RefId::Of("w_id=2");
  EXPECT_FALSE(hs.IsSplit(a));
  ASSERT_TRUE(hs.Set(a, {0, 3}));
  EXPECT_TRUE(hs.IsSplit(a));
  EXPECT_EQ(hs.K(a), 2);
  EXPECT_EQ(hs.K(b), 0);
  EXPECT_FALSE(hs.IsSplit(b));
  ASSERT_TRUE(hs.Set(a, {0}));  // one queue: not split any more
  EXPECT_FALSE(hs.IsSplit(a));
}

TEST(HotSpotsTest, TableIsBounded) {
  HotSpots hs(8, 2);
  EXPECT_TRUE(hs.Set(RefId(1), {0, 1}));
  EXPECT_TRUE(hs.Set(RefId(2), {2, 3}));
  EXPECT_FALSE(hs.Set(RefId(3), {4, 5}));
  EXPECT_TRUE(hs.Set(RefId(1), {0, 1, 2}));  // an update fits
  hs.Clear();
  EXPECT_TRUE(hs.Set(RefId(3), {4, 5}));
}

TEST(HotSpotsTest, DominantLeadFollowsTheMajority) {
  HotSpots hs(2, 1);
  const RefId a = RefId::Of("w_id=1"), b = RefId::Of("w_id=2");
  for (int i = 0; i < 30; ++i) {
    hs.NoteLead(0, a);
    if (i % 3 == 0) hs.NoteLead(0, b);
  }
  EXPECT_EQ(hs.DominantLead(0), a);
  // The hot spot moves: b takes over.
  for (int i = 0; i < 200; ++i) hs.NoteLead(0, b);
  int64_t w = 0;
  EXPECT_EQ(hs.DominantLead(0, &w), b);
  EXPECT_GT(w, 0);
  EXPECT_EQ(hs.DominantLead(1), RefId(0));
}

// A queue running three equally busy references: a majority vote names none
// of them; the lead table names each, heaviest first, and one that stops
// leading there fades as the windows age the counts.
TEST(HotSpotsTest, LeadsNamesEachOfSeveralBusyReferences) {
  HotSpots hs(2, 1);
  const RefId a = RefId::Of("w_id=1"), b = RefId::Of("w_id=2"), c = RefId::Of("w_id=3");
  for (int i = 0; i < 40; ++i) {
    hs.NoteLead(0, a);
    hs.NoteLead(0, b);
    hs.NoteLead(0, c);
    if (i % 2 == 0) hs.NoteLead(0, a);  // a leads half as often again
  }
  HotSpots::Lead leads[HotSpots::kLeadSlots];
  ASSERT_EQ(hs.Leads(0, leads), 3);
  EXPECT_EQ(leads[0].ref, a);
  EXPECT_EQ(leads[0].weight, 60);
  EXPECT_EQ(leads[1].weight, 40);
  EXPECT_EQ(leads[2].weight, 40);
  EXPECT_TRUE((leads[1].ref == b && leads[2].ref == c) || (leads[1].ref == c && leads[2].ref == b));
  EXPECT_EQ(hs.Leads(1, leads), 0);
  // c stops leading on queue 0; a and b go on. Each window halves the counts.
  for (int w = 0; w < 6; ++w) {
    hs.AgeLeads();
    for (int i = 0; i < 20; ++i) {
      hs.NoteLead(0, a);
      hs.NoteLead(0, b);
    }
  }
  ASSERT_EQ(hs.Leads(0, leads), 2);  // c: 40 halved six times is gone
  EXPECT_NE(leads[0].ref, c);
  EXPECT_NE(leads[1].ref, c);
  EXPECT_GE(leads[1].weight, 38);
  // A fourth and fifth reference: Misra-Gries keeps the heavy ones.
  for (int i = 0; i < 10; ++i) {
    hs.NoteLead(0, RefId::Of("w_id=4"));
    hs.NoteLead(0, RefId::Of("w_id=5"));
  }
  ASSERT_GE(hs.Leads(0, leads), 2);
  EXPECT_TRUE(leads[0].ref == a || leads[0].ref == b);
  EXPECT_TRUE(leads[1].ref == a || leads[1].ref == b);
}

TEST(RebalanceRuleTest, PickLeadMovesALighterLeadWhenTheHeaviestWouldSwapTheQueues) {
  RebalanceRule rr;
  // Measured after a TPC-C hot phase: a queue with 473 started (a warehouse
  // of ~350 beside one of ~120) and an idle one with 39. Moving the
  // heaviest (0.81 of the gap) would leave 350 vs 162: it is not worth it;
  // the lighter one evens them.
  EXPECT_EQ(rr.PickLead(473, 39, {{64, 350, false}, {20, 120, false}}), 1);
  // Only the heaviest worth it: it.
  EXPECT_EQ(rr.PickLead(650, 0, {{60, 320, false}, {50, 300, false}}), 0);
  // Moved lately: the next one.
  EXPECT_EQ(rr.PickLead(650, 0, {{60, 320, true}, {50, 300, false}}), 1);
  // A hot one (a split candidate) is split, not moved.
  EXPECT_EQ(rr.PickLead(650, 66, {{120, 450, false, /*hot=*/true}}), -1);
  // Too few samples, or nothing worth it: none.
  EXPECT_EQ(rr.PickLead(650, 0, {{3, 320, false}}), -1);
  EXPECT_EQ(rr.PickLead(473, 39, {{64, 350, false}, {20, 40, false}}), -1);
  EXPECT_EQ(rr.PickLead(473, 39, {}), -1);
}

// Route counts a split reference's decisions (the scheduler drops one whose
// decisions stopped: its hot spot moved).
TEST(HotSpotsTest, RoutedCountsEachSplitReferencesDecisions) {
  HotSpots hs(4, 2);
  const RefId hot = RefId::Of("k=0"), other = RefId::Of("k=7");
  EXPECT_EQ(hs.Routed(hot), 0u);
  ASSERT_TRUE(hs.Set(hot, {1, 2}));
  const uint32_t before = hs.Routed(hot);
  QueueId q;
  for (int i = 0; i < 25; ++i) ASSERT_TRUE(hs.Route(hot, &q));
  EXPECT_FALSE(hs.Route(other, &q));
  EXPECT_EQ(hs.Routed(hot) - before, 25u);
  EXPECT_EQ(hs.Routed(other), 0u);
  ASSERT_TRUE(hs.Set(hot, {}));  // dropped
  EXPECT_EQ(hs.Routed(hot), 0u);
}

}  // namespace
}  // namespace scheduler
}  // namespace corral
