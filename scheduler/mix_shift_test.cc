#include "scheduler/mix_shift.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace corral {
namespace scheduler {
namespace {

// A TPC-C-like transaction: one home warehouse of 8 (warehouse 0 with
// probability `hot`, else uniform), one district of its 10, 12 items of 100k.
std::vector<RefId> TpccLike(std::mt19937_64& rng, double hot) {
  std::uniform_real_distribution<double> u(0, 1);
  const int w = u(rng) < hot ? 0 : static_cast<int>(rng() % 8);
  std::vector<RefId> refs = {RefId(1000 + w), RefId(2000 + w * 10 + static_cast<int>(rng() % 10))};
  for (int i = 0; i < 12; ++i) refs.push_back(RefId(100000 + rng() % 100000));
  return refs;
}

// A SmallBank-like transaction: two accounts, each one of 40 hot accounts
// starting at `hot_base` with probability 0.9, else one of 100k.
std::vector<RefId> HotSetTxn(std::mt19937_64& rng, int hot_base) {
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<RefId> refs;
  for (int i = 0; i < 2; ++i) {
    const uint64_t a = u(rng) < 0.9 ? static_cast<uint64_t>(hot_base + rng() % 40) : 1000000 + rng() % 100000;
    if (refs.empty() || refs[0] != RefId(a)) refs.push_back(RefId(a));
  }
  return refs;
}

MixShift::Options Opts() {
  MixShift::Options o;
  o.sample_every = 1;
  return o;
}

template <typename Gen>
MixShift::Window RunWindow(MixShift* m, int txns, Gen gen) {
  for (int i = 0; i < txns; ++i) m->Sample(gen());
  return m->EndWindow();
}

TEST(MixShiftTest, ASteadyMixIsNeverOff) {
  std::mt19937_64 rng(7);
  for (double hot : {0.0, 0.37}) {
    MixShift m(Opts());
    int off = 0, measured = 0;
    for (int w = 0; w < 200; ++w) {
      const MixShift::Window r = RunWindow(&m, 400, [&] { return TpccLike(rng, hot); });
      measured += r.measured;
      off += r.off;
    }
    EXPECT_EQ(measured, 199) << "hot " << hot;  // the first window is the base
    EXPECT_EQ(off, 0) << "hot " << hot;
  }
  MixShift m(Opts());
  int off = 0;
  for (int w = 0; w < 200; ++w) off += RunWindow(&m, 400, [&] { return HotSetTxn(rng, 0); }).off;
  EXPECT_EQ(off, 0);
}

TEST(MixShiftTest, AHotSpotThatAppearsOrEndsIsOffUntilRebased) {
  std::mt19937_64 rng(11);
  MixShift m(Opts());
  for (int w = 0; w < 10; ++w) ASSERT_FALSE(RunWindow(&m, 400, [&] { return TpccLike(rng, 0); }).off);
  // Warehouse 0 takes 40% of the transactions: off, and off again (an off
  // window is not folded into the base).
  for (int w = 0; w < 3; ++w) {
    const MixShift::Window r = RunWindow(&m, 400, [&] { return TpccLike(rng, 0.4); });
    EXPECT_TRUE(r.off) << w;
    EXPECT_EQ(r.ref, RefId(1000));
    EXPECT_GT(r.share, 0.35);
    EXPECT_LT(r.base_share, 0.2);
  }
  m.Rebase();
  for (int w = 0; w < 10; ++w) EXPECT_FALSE(RunWindow(&m, 400, [&] { return TpccLike(rng, 0.4); }).off) << w;
  // The hot spot ends.
  const MixShift::Window end = RunWindow(&m, 400, [&] { return TpccLike(rng, 0); });
  EXPECT_TRUE(end.off);
  EXPECT_EQ(end.ref, RefId(1000));
}

TEST(MixShiftTest, AHotSetThatMovesIsOff) {
  std::mt19937_64 rng(13);
  MixShift m(Opts());
  for (int w = 0; w < 10; ++w) ASSERT_FALSE(RunWindow(&m, 400, [&] { return HotSetTxn(rng, 0); }).off);
  // Every hot account's share is ~4.5%: the move is many small ones.
  const MixShift::Window r = RunWindow(&m, 400, [&] { return HotSetTxn(rng, 500); });
  EXPECT_TRUE(r.off);
  EXPECT_GT(r.mean_z2, 8);
}

TEST(MixShiftTest, TooFewSamplesAreNotJudgedAndSamplingKeepsOneInN) {
  MixShift::Options o;
  o.sample_every = 4;
  o.min_samples = 100;
  MixShift m(o);
  std::mt19937_64 rng(17);
  EXPECT_FALSE(RunWindow(&m, 396, [&] { return TpccLike(rng, 0); }).measured);  // 99 sampled
  const MixShift::Window base = RunWindow(&m, 400, [&] { return TpccLike(rng, 0); });
  EXPECT_EQ(base.samples, 100);
  EXPECT_FALSE(base.measured);  // it became the base
  // StartWindow drops what was sampled (a settling period).
  for (int i = 0; i < 400; ++i) m.Sample(TpccLike(rng, 1.0));
  m.StartWindow();
  const MixShift::Window r = RunWindow(&m, 400, [&] { return TpccLike(rng, 0); });
  EXPECT_TRUE(r.measured);
  EXPECT_FALSE(r.off);
}

}  // namespace
}  // namespace scheduler
}  // namespace corral
