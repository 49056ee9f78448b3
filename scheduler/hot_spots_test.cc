#include "scheduler/hot_spots.h"

#include <map>

#include "gtest/gtest.h"

namespace corral {
namespace scheduler {
namespace {

TEST(SplitRuleTest, GrowsWhenQueueWaitExceedsAbortAndRetryCost) {
  SplitRule rule;
  rule.max_k = 4;
  // Waiting 3 attempts' time with 10% retries: a retry is cheaper, spread.
  EXPECT_EQ(rule.Next(1, {3000, 1000, 0.1}), 2);
  // Waiting 5x: doubles.
  EXPECT_EQ(rule.Next(2, {5000, 1000, 0.1}), 4);
  // Never above max_k.
  EXPECT_EQ(rule.Next(4, {50000, 1000, 0.1}), 4);
  EXPECT_EQ(rule.Next(3, {50000, 1000, 0.1}), 4);
  // Wait shorter than an attempt plus its retries: hold.
  EXPECT_EQ(rule.Next(1, {1050, 1000, 0.1}), 1);
  EXPECT_EQ(rule.Next(2, {900, 1000, 0.3}), 2);
}

TEST(SplitRuleTest, ShrinksBackWhenAbortsRise) {
  SplitRule rule;
  // Spread over 3 queues, almost no wait left, 60% retries per commit:
  // retries cost 0.6 A, more than twice the 0.1 A wait they save.
  EXPECT_EQ(rule.Next(3, {100, 1000, 0.6}), 2);
  EXPECT_EQ(rule.Next(2, {100, 1000, 0.6}), 1);
  EXPECT_EQ(rule.Next(1, {100, 1000, 0.6}), 1);  // 1 is the floor
  // Few aborts: no reason to shrink even with no wait.
  EXPECT_EQ(rule.Next(3, {0, 1000, 0.01}), 3);
  // No attempts in the window: no evidence, hold.
  EXPECT_EQ(rule.Next(3, {5000, 0, 0}), 3);
}

TEST(SplitRuleTest, ClosedLoopOnSyntheticLoadSettlesBetweenTheBounds) {
  // A synthetic hot spot: the wait falls as k grows (load spread over k
  // queues), the retries rise with k (k concurrent transactions of one row).
  SplitRule rule;
  rule.max_k = 8;
  auto sample = [](int k) {
    SplitSample s;
    s.attempt_ns = 1000;
    s.wait_ns = 6000.0 / k - 500;  // 5500 at k=1, 1000 at k=4, 250 at k=8
    s.aborts_per_commit = 0.15 * (k - 1);
    return s;
  };
  int k = 1;
  std::map<int, int> seen;
  for (int w = 0; w < 50; ++w) {
    k = rule.Next(k, sample(k));
    if (w >= 10) ++seen[k];
  }
  // It grows off 1 and does not run to max_k: it holds where W is between
  // r A / 2 and (1 + r) A (k = 3 here: W = 1500, (1 + r) A = 1300 -> grow to 4;
  // k = 4: W = 1000 < 1450 hold).
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen.begin()->first, 4);
  // Load moves away (no wait): aborts make it shrink back to 1.
  for (int w = 0; w < 10; ++w) k = rule.Next(k, {0, 1000, 0.15 * (k - 1)});
  EXPECT_EQ(k, 1);
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

}  // namespace
}  // namespace scheduler
}  // namespace corral
