#include "bench/runner/interference.h"

#include "gtest/gtest.h"

namespace corral {
namespace bench {
namespace {

// Two recorded /proc readings 1 s apart on a 2-core machine (USER_HZ 100:
// 200 ticks of CPU capacity in the window).
constexpr char kStat0[] =
    "cpu  1000 10 500 8000 40 5 5 0 0 0\n"
    "cpu0 500 5 250 4000 20 3 2 0 0 0\n";
constexpr char kStat1[] =
    // +user 120 +nice 0 +system 30 +idle 40 +iowait 0 +irq 2 +softirq 2 +steal 6 = 200
    "cpu  1120 10 530 8040 40 7 7 6 0 0\n"
    "cpu0 560 5 265 4020 20 4 3 3 0 0\n";
// "corral (a b) x" has a space and parentheses in comm; utime 14th, stime 15th.
constexpr char kSelf0[] = "4242 (corral (a b) x) S 1 4242 4242 0 -1 4194304 100 0 0 0 300 100 0 0 20 0 10 0 5 0";
constexpr char kSelf1[] = "4242 (corral (a b) x) S 1 4242 4242 0 -1 4194304 100 0 0 0 380 130 0 0 20 0 10 0 5 0";

MachineReading Parse(const char* stat, const char* self, const char* load) {
  MachineReading r;
  EXPECT_TRUE(ParseProcStat(stat, &r).ok());
  EXPECT_TRUE(ParseProcSelfStat(self, &r).ok());
  EXPECT_TRUE(ParseLoadAvg(load, &r).ok());
  return r;
}

TEST(Interference, FromRecordedProcText) {
  MachineReading a = Parse(kStat0, kSelf0, "0.50 0.40 0.30 1/200 999\n");
  MachineReading b = Parse(kStat1, kSelf1, "1.75 0.60 0.35 3/201 1000\n");
  EXPECT_EQ(a.self_ticks, 400u);
  EXPECT_EQ(b.self_ticks, 510u);
  EXPECT_EQ(b.steal, 6u);
  Interference i = ComputeInterference(a, b);
  ASSERT_TRUE(i.valid);
  // total 200; busy = 120 + 30 + 2 + 2 + 6 = 160; self = 110; steal = 6;
  // other = 160 - 6 - 110 = 44; share = (44 + 6) / 200 = 0.25.
  EXPECT_DOUBLE_EQ(i.self_share, 110.0 / 200);
  EXPECT_DOUBLE_EQ(i.steal_share, 6.0 / 200);
  EXPECT_DOUBLE_EQ(i.other_share, 44.0 / 200);
  EXPECT_DOUBLE_EQ(i.share, 50.0 / 200);
  EXPECT_DOUBLE_EQ(i.loadavg1, 1.75);
  // The rule: a share above the bound is contaminated, at or below it is not;
  // 0 turns the rule off.
  EXPECT_TRUE(Contaminated(i, 0.2));
  EXPECT_FALSE(Contaminated(i, 0.25));
  EXPECT_FALSE(Contaminated(i, 0.3));
  EXPECT_FALSE(Contaminated(i, 0));
  // No window (same reading twice): not valid, never contaminated.
  Interference none = ComputeInterference(a, a);
  EXPECT_FALSE(none.valid);
  EXPECT_FALSE(Contaminated(none, 0.01));
}

TEST(Interference, BadTextIsAnErrorNotAZero) {
  MachineReading r;
  EXPECT_FALSE(ParseProcStat("intr 1 2 3\n", &r).ok());
  EXPECT_FALSE(ParseProcStat("cpu  1 x 3 4\n", &r).ok());
  EXPECT_FALSE(ParseProcSelfStat("4242 corral S", &r).ok());
  EXPECT_FALSE(ParseProcSelfStat("4242 (corral) S 1 2", &r).ok());
  EXPECT_FALSE(ParseLoadAvg("", &r).ok());
}

TEST(Interference, RealProbeReadsThisMachine) {
  auto probe = MakeProcMachineProbe();
  auto a = probe->Read();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_GT(a->user + a->system + a->idle, 0u);
  // Burn some CPU in this process: its ticks never go backwards.
  volatile double x = 0;
  for (int i = 0; i < 2000000; ++i) x += i * 0.5;
  auto b = probe->Read();
  ASSERT_TRUE(b.ok());
  EXPECT_GE(b->self_ticks, a->self_ticks);
  Interference i = ComputeInterference(*a, *b);
  if (i.valid) {
    EXPECT_GE(i.share, 0.0);
    EXPECT_LE(i.share, 1.0);
  }
}

}  // namespace
}  // namespace bench
}  // namespace corral
