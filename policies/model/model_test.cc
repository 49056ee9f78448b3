#include "policies/model/model.h"

#include <algorithm>
#include <cmath>

#include "gtest/gtest.h"

namespace corral {
namespace model {
namespace {

// The paper's formulas written out literally (two partitions, stall taken as
// tmp - tmpC as in its simplified form).
double BaseBlocking(double f) { return 2e6 / (2 * f * 211 + (1 - f) * 64); }
double BaseSpec(double f, bool mp) {
  const double tmpl = std::max(211.0 - 55, 55.0), tmpi = tmpl - 55;
  const double nh = f > 0 ? std::min((1 - f) / (2 * f), tmpi / 73) : 0;
  const double period = mp ? 55 + nh * 73 : tmpl;
  return 2e6 / (2 * f * period + ((1 - f) - 2 * f * nh) * 64);
}
double BaseLocking(double f) {
  return 2e6 / (2 * f * 1.132 * 55 + (1 - f) * 1.132 * 73);
}

ModelParams At(double f) {
  ModelParams p = ModelParams::Paper();
  p.f = f;
  return p;
}

// Finds f in [lo, hi] where a(f) - b(f) changes sign (bisection).
template <typename A, typename B>
double Crossover(A a, B b, double lo, double hi) {
  for (int i = 0; i < 60; ++i) {
    double mid = (lo + hi) / 2;
    if ((a(lo) - b(lo)) * (a(mid) - b(mid)) <= 0) hi = mid; else lo = mid;
  }
  return (lo + hi) / 2;
}

TEST(ModelTest, PaperEndpoints) {
  EXPECT_NEAR(BlockingThroughput(At(0)), 31250, 1);
  EXPECT_NEAR(BlockingThroughput(At(1)), 1e6 / 211, 1);
  EXPECT_NEAR(SpeculationThroughput(At(0)), 31250, 1);
  EXPECT_NEAR(LocalSpeculationThroughput(At(0)), 31250, 1);
  // Local speculation at f = 1 is limited by the stall: 1 / (tmp - tmpC).
  EXPECT_NEAR(LocalSpeculationThroughput(At(1)), 1e6 / 156, 1);
  // MP speculation at f = 1: only CPU, 1 / tmpC.
  EXPECT_NEAR(SpeculationThroughput(At(1)), 1e6 / 55, 1);
  EXPECT_NEAR(LockingThroughput(At(1)), 1e6 / (1.132 * 55), 1);
  EXPECT_NEAR(At(0).StallUs(), 156, 1e-9);
}

TEST(ModelTest, PaperCrossovers) {
  // "If we force locks to always be acquired, blocking does outperform
  // locking from 0% to 6% multi-partition transactions."
  double f1 = Crossover([](double f) { return BlockingThroughput(At(f)); },
                        [](double f) { return LockingThroughput(At(f)); },
                        0.0, 0.5);
  EXPECT_NEAR(f1, 0.06, 0.005);
  EXPECT_GT(BlockingThroughput(At(0.03)), LockingThroughput(At(0.03)));
  EXPECT_LT(BlockingThroughput(At(0.10)), LockingThroughput(At(0.10)));
  // Local speculation hides the stall until tspS / (2 tmpI + tspS) = 26.5%.
  const double knee = 73.0 / (2 * 101 + 73);
  EXPECT_NEAR(knee, 0.265, 0.001);
  ModelParams a = At(knee - 0.01), b = At(knee + 0.01);
  EXPECT_NEAR(LocalSpeculationThroughput(a), SpeculationThroughput(a), 1);
  EXPECT_LT(LocalSpeculationThroughput(b), SpeculationThroughput(b) - 100);
  // Past the knee local speculation falls below locking (about 31%).
  double f2 =
      Crossover([](double f) { return LocalSpeculationThroughput(At(f)); },
                [](double f) { return LockingThroughput(At(f)); }, 0.2, 1.0);
  EXPECT_NEAR(f2, 0.306, 0.01);
  // "Speculation outperforms locking by up to 13%" (Figure 4/10).
  double max_gain = 0;
  for (double f = 0.3; f <= 1.0001; f += 0.01) {
    max_gain = std::max(max_gain, SpeculationThroughput(At(f)) /
                                      LockingThroughput(At(f)) - 1);
  }
  EXPECT_NEAR(max_gain, 0.132, 0.01);
  // Speculation beats locking everywhere on this no-conflict workload.
  for (double f = 0; f <= 1.0001; f += 0.05) {
    EXPECT_GT(SpeculationThroughput(At(f)), LockingThroughput(At(f))) << f;
  }
}

TEST(ModelTest, ExtensionsReduceToBaseFormulas) {
  for (double f = 0; f <= 1.0001; f += 0.05) {
    ModelParams p = At(f);
    p.abort_rate = 0;
    p.multi_round_share = 0;
    p.round_gap_us = 77;  // irrelevant when no transaction is multi-round
    p.round_cpu_us = 9;
    EXPECT_NEAR(BlockingThroughput(p), BaseBlocking(f), 1e-6 * BaseBlocking(f));
    EXPECT_NEAR(LocalSpeculationThroughput(p), BaseSpec(f, false),
                1e-6 * BaseSpec(f, false));
    EXPECT_NEAR(SpeculationThroughput(p), BaseSpec(f, true),
                1e-6 * BaseSpec(f, true));
    EXPECT_NEAR(LockingThroughput(p), BaseLocking(f), 1e-6 * BaseLocking(f));
    EXPECT_EQ(ExpectedReexecutions(ModelScheme::kSpeculation, p), 0);
  }
}

TEST(ModelTest, PartitionsScaleThroughput) {
  ModelParams p = At(0.2);
  p.partitions = 4;
  p.mp_width = 2;  // an MP txn touches 2 of 4 partitions
  EXPECT_NEAR(BlockingThroughput(p), 4e6 / (2 * 0.2 * 211 + 0.8 * 64), 1e-3);
  EXPECT_NEAR(LockingThroughput(p),
              4e6 / (2 * 0.2 * 1.132 * 55 + 0.8 * 1.132 * 73), 1e-3);
  p.mp_width = 4;  // touches all four: same as two partitions, doubled
  EXPECT_NEAR(BlockingThroughput(p), 4e6 / (4 * 0.2 * 211 + 0.8 * 64), 1e-3);
}

TEST(ModelTest, AbortsHurtOnlySpeculation) {
  ModelParams p = At(0.3), q = p;
  q.abort_rate = 0.1;
  EXPECT_EQ(BlockingThroughput(p), BlockingThroughput(q));
  EXPECT_EQ(LockingThroughput(p), LockingThroughput(q));
  EXPECT_LT(SpeculationThroughput(q), SpeculationThroughput(p));
  EXPECT_LT(LocalSpeculationThroughput(q), LocalSpeculationThroughput(p));
  // Expected re-executions: a * tmpI / tspS under MP speculation.
  EXPECT_NEAR(ExpectedReexecutions(ModelScheme::kSpeculation, q),
              0.1 * 101 / 73, 1e-9);
  EXPECT_EQ(ExpectedReexecutions(ModelScheme::kLocking, q), 0);
}

TEST(ModelTest, MultiRoundHurtsBlockingAndSpeculationMoreThanLocking) {
  ModelParams p = At(0.5), q = p;
  q.multi_round_share = 1;
  q.rounds = 2;
  q.round_gap_us = 150;
  q.round_cpu_us = 10;
  const double lb = BlockingThroughput(q) / BlockingThroughput(p);
  const double ls = SpeculationThroughput(q) / SpeculationThroughput(p);
  const double ll = LockingThroughput(q) / LockingThroughput(p);
  EXPECT_LT(lb, 1);
  EXPECT_LT(ls, ll);
  EXPECT_LT(ll, 1);
  EXPECT_NEAR(BlockingThroughput(q), 2e6 / (2 * 0.5 * (211 + 160) + 0.5 * 64),
              1e-3);
  // Paper 5.4: with general (two-round) transactions locking overtakes
  // speculation at a few percent MP transactions.
  q.f = 0.3;
  EXPECT_GT(LockingThroughput(q), SpeculationThroughput(q));
}

TEST(ModelTest, LockingLockFreeIdlePath) {
  ModelParams p = At(0);
  p.locking_lock_free_idle = true;
  EXPECT_NEAR(LockingThroughput(p), 31250, 1);  // no MP: no locks at all
  p.f = 1;
  EXPECT_NEAR(LockingThroughput(p), 1e6 / (1.132 * 55), 1);
  p.f = 0.02;
  ModelParams q = p;
  q.locking_lock_free_idle = false;
  EXPECT_GT(LockingThroughput(p), LockingThroughput(q));
}

TEST(ModelTest, CoreBudgetCaps) {
  ModelParams p = At(1.0);
  const double uncapped = SpeculationThroughput(p);
  p.cores = 1;
  p.coordinator_us = 100;
  EXPECT_LT(SpeculationThroughput(p), uncapped);
  EXPECT_LE(SpeculationThroughput(p), 1e6 / (2 * 55 + 100) + 1e-6);
  // The partitions' waiting CPU per MP transaction joins the budget.
  p.mp_wait_cpu_us = 40;
  EXPECT_NEAR(SpeculationThroughput(p), 1e6 / (2 * 55 + 100 + 40), 1e-6);
  EXPECT_NEAR(BlockingThroughput(p), 1e6 / (2 * 55 + 100 + 40), 1e-6);
}

TEST(SelectorTest, HysteresisNeedsTwoWindows) {
  SchemeSelector sel(SelectorOptions{});
  ModelParams p = At(0.5);  // speculation best, blocking far behind
  SelectorDecision d1 = sel.Observe(p, ModelScheme::kBlocking);
  EXPECT_EQ(d1.best, ModelScheme::kSpeculation);
  EXPECT_FALSE(d1.switch_now);
  EXPECT_EQ(d1.chosen, ModelScheme::kBlocking);
  SelectorDecision d2 = sel.Observe(p, ModelScheme::kBlocking);
  EXPECT_TRUE(d2.switch_now);
  EXPECT_EQ(d2.chosen, ModelScheme::kSpeculation);
  EXPECT_NE(d2.ToString().find("chosen=speculation"), std::string::npos);
  EXPECT_NE(d2.ToString().find("f=0.500"), std::string::npos);
  // Already on the best scheme: stay.
  SelectorDecision d3 = sel.Observe(p, ModelScheme::kSpeculation);
  EXPECT_FALSE(d3.switch_now);
  // A gain under 5% never switches.
  ModelParams q = At(0.06);  // blocking ~ locking
  SchemeSelector sel2(SelectorOptions{});
  for (int i = 0; i < 5; ++i) {
    SelectorDecision d = sel2.Observe(q, ModelScheme::kBlocking);
    if (d.best == ModelScheme::kLocking) {
      EXPECT_FALSE(d.switch_now);
    }
  }
}

SelectorOptions NoExploration() {
  SelectorOptions o;
  o.explore_margin = 0;
  return o;
}

TEST(SelectorTest, FeedbackCorrectsAnOptimisticModel) {
  SchemeSelector sel(NoExploration());  // the feedback alone
  ModelParams p = At(0.5);  // model: speculation > locking > blocking
  EXPECT_FALSE(sel.Observe(p, ModelScheme::kBlocking).switch_now);
  SelectorDecision d = sel.Observe(p, ModelScheme::kBlocking);
  ASSERT_TRUE(d.switch_now);
  ASSERT_EQ(d.chosen, ModelScheme::kSpeculation);
  // Speculation delivers half of its prediction: after two windows the
  // corrected prediction falls below locking's and the selector moves on.
  const double half = 0.5 * SpeculationThroughput(p);
  SelectorDecision e = sel.Observe(p, ModelScheme::kSpeculation, half);
  EXPECT_NEAR(e.correction[2], 0.75, 1e-9);
  EXPECT_FALSE(e.switch_now);
  SelectorDecision g = sel.Observe(p, ModelScheme::kSpeculation, half);
  EXPECT_NEAR(g.correction[2], 0.625, 1e-9);
  EXPECT_TRUE(g.switch_now);
  EXPECT_EQ(g.chosen, ModelScheme::kLocking);
  // An accurate model keeps the correction at 1.
  SchemeSelector sel2(SelectorOptions{});
  SelectorDecision h =
      sel2.Observe(p, ModelScheme::kLocking, LockingThroughput(p));
  EXPECT_NEAR(h.correction[3], 1.0, 1e-9);
}

TEST(SelectorTest, InterruptedStreakRestarts) {
  SchemeSelector sel(SelectorOptions{});
  ModelParams hi = At(0.5), lo = At(0);
  EXPECT_FALSE(sel.Observe(hi, ModelScheme::kBlocking).switch_now);
  EXPECT_FALSE(sel.Observe(lo, ModelScheme::kBlocking).switch_now);  // reset
  EXPECT_FALSE(sel.Observe(hi, ModelScheme::kBlocking).switch_now);
  EXPECT_TRUE(sel.Observe(hi, ModelScheme::kBlocking).switch_now);
}

// All three close: each is tried, in the balanced order A B C C B A.
TEST(SelectorTest, ExploresEveryCloseScheme) {
  ModelParams p = At(0.0);  // blocking = speculation, locking 22% behind
  SelectorOptions o;
  o.explore_windows = 2;
  o.explore_margin = 0.3;
  SchemeSelector sel(o);
  ModelScheme cur = ModelScheme::kLocking;
  SelectorDecision d = sel.Observe(p, cur, Throughput(cur, p));
  ASSERT_NE(d.reason.find("explore"), std::string::npos) << d.ToString();
  std::vector<ModelScheme> ran;
  if (d.switch_now) cur = d.chosen;
  for (int i = 0; i < 6; ++i) {
    ran.push_back(cur);
    // Reality: locking is the fastest, by far.
    d = sel.Observe(p, cur, cur == ModelScheme::kLocking ? 1e6 : 1e4);
    if (d.switch_now) cur = d.chosen;
  }
  ASSERT_EQ(ran.size(), 6u);
  EXPECT_EQ(ran[0], ModelScheme::kLocking);  // the running one first
  EXPECT_EQ(ran[5], ModelScheme::kLocking);
  EXPECT_EQ(ran[1], ran[4]);
  EXPECT_EQ(ran[2], ran[3]);
  EXPECT_NE(ran[1], ran[2]);
  EXPECT_EQ(cur, ModelScheme::kLocking) << d.ToString();
  EXPECT_NE(d.reason.find("keep locking"), std::string::npos) << d.ToString();
}

// Close predictions: the selector measures both (A B B A), keeps the
// measured winner against the model, and holds it.
TEST(SelectorTest, ExploresCloseSchemesAndKeepsTheMeasuredWinner) {
  ModelParams p = At(0.5);
  const double spec = SpeculationThroughput(p), lock = LockingThroughput(p);
  ASSERT_GT(spec, lock);
  SelectorOptions o;
  o.explore_margin = 1 - 0.99 * lock / spec;  // just wide enough
  o.explore_windows = 2;
  SchemeSelector sel(o);
  SelectorDecision d = sel.Observe(p, ModelScheme::kBlocking, 1000);
  ASSERT_TRUE(d.switch_now);
  EXPECT_TRUE(sel.exploring());
  EXPECT_EQ(d.chosen, ModelScheme::kSpeculation);  // best first
  EXPECT_NE(d.reason.find("explore"), std::string::npos);
  // Reality: locking measures 1.3x the model's speculation figure,
  // speculation only 0.8x of its own.
  auto tps = [&](ModelScheme s) {
    return s == ModelScheme::kLocking ? 1.3 * spec : 0.8 * spec;
  };
  std::vector<ModelScheme> ran;
  ModelScheme cur = d.chosen;
  for (int i = 0; i < 4; ++i) {
    ran.push_back(cur);
    d = sel.Observe(p, cur, tps(cur));
    if (d.switch_now) cur = d.chosen;
  }
  EXPECT_EQ(ran, (std::vector<ModelScheme>{ModelScheme::kSpeculation, ModelScheme::kLocking,
                                           ModelScheme::kLocking, ModelScheme::kSpeculation}));
  EXPECT_EQ(d.chosen, ModelScheme::kLocking);
  EXPECT_TRUE(d.switch_now);
  EXPECT_NE(d.reason.find("keep locking"), std::string::npos);
  EXPECT_FALSE(sel.exploring());
  EXPECT_NEAR(d.correction[3], 1.3 * spec / lock, 1e-6);
  // Held: the model (which still prefers speculation) does not switch back.
  for (int i = 0; i < 10; ++i) {
    d = sel.Observe(p, ModelScheme::kLocking, tps(ModelScheme::kLocking));
    EXPECT_FALSE(d.switch_now) << d.ToString();
  }
}

// The hold settles only the explored pair: when the model puts the third
// scheme far ahead (the parameters changed within the regime), the selector
// still moves to it. Measured throughputs equal the model's here.
TEST(SelectorTest, HoldDoesNotBlockAThirdSchemeFarAhead) {
  ModelParams p = At(0.0);  // blocking = speculation > locking (l > 0)
  p.multi_round_share = 1;  // (no MP transactions yet)
  SelectorOptions o;
  o.explore_windows = 1;
  o.explore_margin = 0.1;  // locking (22% behind) is not explored
  SchemeSelector sel(o);
  ModelScheme cur = ModelScheme::kLocking;
  SelectorDecision d = sel.Observe(p, cur, Throughput(cur, p));
  ASSERT_NE(d.reason.find("explore"), std::string::npos) << d.ToString();
  for (int i = 0; i < 3 && d.reason.find("explored") == std::string::npos; ++i) {
    if (d.switch_now) cur = d.chosen;
    d = sel.Observe(p, cur, Throughput(cur, p));
  }
  ASSERT_NE(d.reason.find("explored"), std::string::npos) << d.ToString();
  if (d.switch_now) cur = d.chosen;
  ASSERT_NE(cur, ModelScheme::kLocking);
  d = sel.Observe(p, cur, Throughput(cur, p));
  EXPECT_NE(d.reason.find("hold"), std::string::npos) << d.ToString();
  // Two-round MP transactions with a long gap between rounds at f = 5%
  // (within regime_f of 0): locking, which overlaps the gap with other
  // work, is now far ahead of both explored schemes.
  ModelParams q = At(0.05);
  q.multi_round_share = 1;
  q.round_gap_us = 5000;
  ASSERT_GT(LockingThroughput(q), 1.5 * SpeculationThroughput(q));
  for (int i = 0; i < 3 && cur != ModelScheme::kLocking; ++i) {
    d = sel.Observe(q, cur, Throughput(cur, q));
    if (d.switch_now) cur = d.chosen;
  }
  EXPECT_EQ(cur, ModelScheme::kLocking) << d.ToString();
}

TEST(SelectorTest, FarApartPredictionsDoNotExplore) {
  SchemeSelector sel(SelectorOptions{});
  ModelParams p = At(0.5);
  p.tmp_net_us = 2000;  // long stall: blocking far behind the others
  p.tsp_lock_us = 500;  // locking far behind speculation
  SelectorDecision d = sel.Observe(p, ModelScheme::kBlocking, 100);
  EXPECT_EQ(d.reason.find("explore"), std::string::npos) << d.ToString();
}

TEST(SelectorTest, HoldEndsWhenTheWorkloadMoves) {
  ModelParams p = At(0.5);
  SelectorOptions o;
  o.explore_margin = 0.99;  // always close
  o.explore_windows = 1;
  SchemeSelector sel(o);
  ModelScheme cur = ModelScheme::kSpeculation;
  SelectorDecision d = sel.Observe(p, cur, Throughput(cur, p));  // explore
  for (int i = 0; i < 3 && d.reason.find("explored") == std::string::npos; ++i) {
    if (d.switch_now) cur = d.chosen;
    d = sel.Observe(p, cur, Throughput(cur, p));
  }
  ASSERT_NE(d.reason.find("explored"), std::string::npos) << d.ToString();
  if (d.switch_now) cur = d.chosen;
  d = sel.Observe(p, cur, Throughput(cur, p));
  EXPECT_NE(d.reason.find("hold"), std::string::npos) << d.ToString();
  ModelParams q = At(0.05);  // f moved by 0.45
  d = sel.Observe(q, cur, Throughput(cur, q));
  EXPECT_EQ(d.reason.find("hold"), std::string::npos) << d.ToString();
}

}  // namespace
}  // namespace model
}  // namespace corral
