#include "adapters/proxy/cycle_gates.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace corral {
namespace proxy {
namespace {

TEST(CycleGatesTest, ATemplateIsGatedFromItsSecondCycleAndOnlyThatTemplate) {
  CycleGates g(CycleGates::Options{});
  EXPECT_FALSE(g.Admit("a"));  // never cycled
  g.Cycle("a");
  EXPECT_FALSE(g.Admit("a"));  // one cycle: score 1 < 1.5
  g.Cycle("a");
  EXPECT_TRUE(g.Admit("a"));
  EXPECT_TRUE(g.Gated("a"));
  EXPECT_FALSE(g.Admit("b"));
  EXPECT_EQ(g.gated(), 1u);
}

TEST(CycleGatesTest, AGateWithoutCyclesOpensAfterAboutLnOnOverOffOverOneMinusDecayAdmissions) {
  CycleGates::Options o;
  o.decay = 0.99;
  CycleGates g(o);
  g.Cycle("a");
  g.Cycle("a");  // score 2 (no admission between)
  // 2 * 0.99^n < 0.5 from n = ceil(ln 4 / -ln 0.99) = 138.
  const int expect = static_cast<int>(std::ceil(std::log(4.0) / -std::log(0.99)));
  int n = 0;
  while (g.Admit("a")) ++n;
  EXPECT_EQ(n + 1, expect);
  EXPECT_FALSE(g.Gated("a"));
  // Cycles again: gated again once the score is back at on_score.
  g.Cycle("a");  // ~0.5 + 1 < 2
  EXPECT_FALSE(g.Gated("a"));
  g.Cycle("a");
  EXPECT_TRUE(g.Gated("a"));
}

TEST(CycleGatesTest, MemoryIsBoundedAndTheLowestScoreMakesRoom) {
  CycleGates::Options o;
  o.max_templates = 3;
  CycleGates g(o);
  for (int i = 0; i < 3; ++i) {
    g.Cycle("t" + std::to_string(i));
    g.Cycle("t" + std::to_string(i));
  }
  g.Admit("t1");  // t1 decays below the others
  g.Cycle("new");
  EXPECT_EQ(g.size(), 3u);
  EXPECT_FALSE(g.Gated("t1"));
  EXPECT_TRUE(g.Gated("t0"));
  EXPECT_TRUE(g.Gated("t2"));
  for (int i = 0; i < 100; ++i) g.Cycle("s" + std::to_string(i));
  EXPECT_EQ(g.size(), 3u);
}

TEST(CycleGatesTest, LastGrowthIsTheLatestStatementAtWhichATemplateTookANewKey) {
  CycleGates g(CycleGates::Options{});
  g.Grew("a", 2);  // a template that never cycled keeps nothing
  EXPECT_EQ(g.LastGrowth("a"), 0);
  g.Cycle("a");
  g.Cycle("a");
  EXPECT_EQ(g.LastGrowth("a"), 0);  // unknown until a gated transaction reports
  g.Grew("a", 2);
  g.Grew("a", 1);  // an earlier growth does not lower it
  EXPECT_EQ(g.LastGrowth("a"), 2);
  g.Grew("a", 3);  // a later one raises it for the next transactions
  EXPECT_EQ(g.LastGrowth("a"), 3);
  EXPECT_EQ(g.LastGrowth("b"), 0);
}

TEST(CycleGatesTest, GateKeysDifferByTemplateAndSaltAndFromTheRawHash) {
  EXPECT_NE(CycleGates::Key("a", 0), CycleGates::Key("b", 0));
  EXPECT_NE(CycleGates::Key("a", 0), CycleGates::Key("a", 1));
  EXPECT_EQ(CycleGates::Key("a", 7), CycleGates::Key("a", 7));
}

}  // namespace
}  // namespace proxy
}  // namespace corral
