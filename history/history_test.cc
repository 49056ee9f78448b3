#include "history/history.h"

#include <atomic>
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/fake_clock.h"
#include "gtest/gtest.h"

namespace corral {
namespace history {
namespace {

TEST(HistoryTest, RecordsCommitsAndAbortsForEveryReference) {
  History h;
  RefVec refs = {RefId::Of("w_id=5"), RefId::Of("i_id=2")};
  h.RecordAbort(refs);
  h.RecordAbort(refs);
  h.RecordCommit(refs);
  History::Counts c;
  ASSERT_TRUE(h.Get(RefId::Of("w_id=5"), &c));
  EXPECT_EQ(c.aborts, 2u);
  EXPECT_EQ(c.commits, 1u);
  ASSERT_TRUE(h.Get(RefId::Of("i_id=2"), &c));
  EXPECT_EQ(c.aborts, 2u);
  EXPECT_FALSE(h.Get(RefId::Of("d_id=1"), &c));
  EXPECT_EQ(h.size(), 2);
}

TEST(HistoryTest, WeightsCountAndFraction) {
  History h;
  h.Add(RefId::Of("s_quantity=6"), 20, 60);
  bool known = false;
  EXPECT_DOUBLE_EQ(h.Weight(RefId::Of("s_quantity=6"), Weighting::kCount, &known), 20.0);
  EXPECT_TRUE(known);
  EXPECT_DOUBLE_EQ(h.Weight(RefId::Of("s_quantity=6"), Weighting::kFraction), 0.25);
  EXPECT_DOUBLE_EQ(h.Weight(RefId::Of("nope"), Weighting::kFraction, &known), 0.0);
  EXPECT_FALSE(known);
  EXPECT_DOUBLE_EQ(History::WeightOf({0, 0}, Weighting::kFraction), 0.0);
}

TEST(HistoryTest, FreezeIgnoresRecords) {
  History h;
  RefVec refs = {RefId::Of("a=1")};
  h.RecordAbort(refs);
  h.Freeze();
  h.RecordAbort(refs);
  h.RecordCommit(refs);
  History::Counts c;
  ASSERT_TRUE(h.Get(refs[0], &c));
  EXPECT_EQ(c.aborts, 1u);
  EXPECT_EQ(c.commits, 0u);
  EXPECT_EQ(h.ignored_frozen(), 2);
  h.Unfreeze();
  h.RecordCommit(refs);
  ASSERT_TRUE(h.Get(refs[0], &c));
  EXPECT_EQ(c.commits, 1u);
}

TEST(HistoryTest, RegenerateEmptiesAndShrinks) {
  History::Options o;
  o.initial_capacity = 64;
  History h(o);
  const int64_t small = h.ApproxBytes();
  for (int i = 0; i < 50000; ++i) h.RecordAbort({RefId(i)});
  EXPECT_EQ(h.size(), 50000);
  EXPECT_GT(h.ApproxBytes(), small * 100);
  h.Regenerate();
  EXPECT_EQ(h.size(), 0);
  History::Counts c;
  EXPECT_FALSE(h.Get(RefId(7), &c));
  EXPECT_LE(h.ApproxBytes(), small * 2);
  EXPECT_EQ(h.regenerations(), 1);
}

TEST(HistoryTest, MaxEntriesDropsNewReferencesButKeepsCountingOld) {
  History::Options o;
  o.max_entries = 100;
  History h(o);
  for (int i = 0; i < 1000; ++i) h.RecordAbort({RefId(i)});
  EXPECT_EQ(h.size(), 100);
  EXPECT_EQ(h.dropped_full(), 900);
  h.RecordAbort({RefId(0)});
  History::Counts c;
  ASSERT_TRUE(h.Get(RefId(0), &c));
  EXPECT_EQ(c.aborts, 2u);
}

TEST(HistoryTest, MaxEntriesRegenerateMode) {
  History::Options o;
  o.max_entries = 100;
  o.on_full = History::OnFull::kRegenerate;
  History h(o);
  for (int i = 0; i < 1000; ++i) h.RecordAbort({RefId(i)});
  EXPECT_LE(h.size(), 100);
  EXPECT_GE(h.regenerations(), 9);
  History::Counts c;
  EXPECT_TRUE(h.Get(RefId(999), &c));
}

TEST(HistoryTest, TopByAbortsWithTexts) {
  History h;
  const std::vector<std::string> names = {"w_id=1", "w_id=2", "w_id=3"};
  RefVec refs;
  for (const auto& n : names) refs.push_back(RefId::Of(n));
  History::TextProvider tp = [&](size_t i) { return names[i]; };
  h.Record(refs, false, &tp);
  h.Record({refs[1]}, false, &tp);  // known: provider not needed
  h.Record({refs[1], refs[2]}, false);
  auto top = h.TopByAborts(2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].text, "w_id=2");
  EXPECT_EQ(top[0].counts.aborts, 3u);
  EXPECT_EQ(top[1].text, "w_id=3");
  EXPECT_EQ(top[1].counts.aborts, 2u);
  EXPECT_EQ(h.TopByAborts(10).size(), 3u);
}

// The k best of many references, in order (aborts, then commits, then
// id), as a full sort of every entry gives them.
TEST(HistoryTest, TopByAbortsIsTheFullSortsPrefix) {
  History h;
  std::mt19937 rng(7);
  std::vector<History::TopEntry> all;
  for (int i = 0; i < 3000; ++i) {
    const RefId r = RefId::Of("k=" + std::to_string(i));
    const int aborts = static_cast<int>(rng() % 6), commits = static_cast<int>(rng() % 4);
    for (int a = 0; a < aborts; ++a) h.Record({r}, false);
    for (int c = 0; c < commits; ++c) h.Record({r}, true);
    if (aborts + commits > 0) all.push_back({r, {uint64_t(aborts), uint64_t(commits)}, {}});
  }
  std::sort(all.begin(), all.end(), [](const History::TopEntry& a, const History::TopEntry& b) {
    if (a.counts.aborts != b.counts.aborts) return a.counts.aborts > b.counts.aborts;
    if (a.counts.commits != b.counts.commits) return a.counts.commits > b.counts.commits;
    return a.ref < b.ref;
  });
  for (size_t k : {size_t{0}, size_t{1}, size_t{64}, size_t{500}, all.size(), all.size() + 10}) {
    const auto top = h.TopByAborts(k);
    ASSERT_EQ(top.size(), std::min(k, all.size())) << k;
    for (size_t i = 0; i < top.size(); ++i) {
      EXPECT_EQ(top[i].ref, all[i].ref) << k << " " << i;
      EXPECT_EQ(top[i].counts.aborts, all[i].counts.aborts) << k << " " << i;
      EXPECT_EQ(top[i].counts.commits, all[i].counts.commits) << k << " " << i;
    }
  }
}

TEST(HistoryTest, ConcurrentRecordsLoseNothing) {
  History h;
  constexpr int kThreads = 4, kIters = 20000;
  RefVec hot = {RefId::Of("hot=1"), RefId::Of("hot=2")};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        h.Record(hot, (i % 3) == 0);
        h.RecordCommit({RefId(1000000 * (t + 1) + i % 100)});
        if (i % 1000 == 0) h.Weight(hot[0], Weighting::kFraction);
      }
    });
  }
  for (auto& t : ts) t.join();
  History::Counts c;
  ASSERT_TRUE(h.Get(hot[1], &c));
  uint64_t commits = 0;
  for (int i = 0; i < kIters; ++i) commits += (i % 3) == 0;
  EXPECT_EQ(c.commits, commits * kThreads);
  EXPECT_EQ(c.aborts + c.commits, uint64_t{kThreads} * kIters);
  EXPECT_EQ(h.size(), 2 + kThreads * 100);
}

// Regenerate frees the old table while other threads record and read: they
// land in the old or the fresh table, never in freed memory (the grace
// period), and a reference's counters never exceed what was recorded.
TEST(HistoryTest, RegenerateWhileRecordingAndReading) {
  History h;
#if defined(__SANITIZE_THREAD__)
  constexpr int kIters = 3000;
#else
  constexpr int kIters = 30000;
#endif
  std::atomic<bool> stop{false};
  std::atomic<int64_t> too_big{0};
  std::atomic<uint64_t> recorded{0};  // Records begun, both threads
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; ++t) {
    ts.emplace_back([&, t] {
      // At least kIters, and on until two regenerations overlapped the
      // recording (however late the regenerating thread gets a core).
      for (int i = 0; i < kIters || h.regenerations() < 2; ++i) {
        recorded.fetch_add(1);
        h.Record({RefId(7), RefId(1000 * (t + 1) + i % 300)}, i % 2 == 0);
        History::Counts c[2];
        bool known[2];
        const RefVec refs = {RefId(7), RefId(1000 * (t + 1) + i % 300)};
        h.GetMany(refs, c, known);
        // A count never exceeds the records made so far (no double counting
        // when an entry moves to the regenerated table).
        if (known[0] && c[0].aborts + c[0].commits > recorded.load()) too_big.fetch_add(1);
        if (i % 64 == 63) std::this_thread::yield();
      }
    });
  }
  ts.emplace_back([&] {
    while (!stop.load()) {
      h.Regenerate();
      std::this_thread::yield();
    }
  });
  for (int t = 0; t < 2; ++t) ts[t].join();
  stop.store(true);
  ts[2].join();
  EXPECT_EQ(too_big.load(), 0);
  EXPECT_GE(h.regenerations(), 2);
  h.Regenerate();
  h.RecordAbort({RefId(7)});
  History::Counts c;
  ASSERT_TRUE(h.Get(RefId(7), &c));
  EXPECT_EQ(c.aborts, 1u);
  EXPECT_EQ(h.size(), 1);
}

TEST(HistoryTest, RecordSkipsTheReferenceItIsToldTo) {
  History h;
  const RefId a = RefId::Of("w_id=5"), b = RefId::Of("d_id=2");
  RefVec refs = {a, b, a};
  h.Record(refs, /*committed=*/false, nullptr, /*skip=*/a);  // named twice: skipped both times
  h.Record(refs, false, nullptr, RefId(0));                 // 0: skips nothing
  History::Counts c;
  ASSERT_TRUE(h.Get(a, &c));
  EXPECT_EQ(c.aborts, 1u);
  ASSERT_TRUE(h.Get(b, &c));
  EXPECT_EQ(c.aborts, 2u);
}

TEST(HistoryTest, CapAbortsLowersOnlyAndKeepsCommits) {
  History h;
  const RefId a = RefId::Of("w_id=5");
  h.Add(a, 800, 40);
  EXPECT_TRUE(h.CapAborts(a, 25));
  EXPECT_TRUE(h.CapAborts(a, 100));  // a cap above the count changes nothing
  History::Counts c;
  ASSERT_TRUE(h.Get(a, &c));
  EXPECT_EQ(c.aborts, 25u);
  EXPECT_EQ(c.commits, 40u);
  EXPECT_FALSE(h.CapAborts(RefId::Of("w_id=6"), 1));
}

TEST(HistoryTest, ReferenceNamedTwiceInOneAttemptCountsOnce) {
  History h;
  const RefId a = RefId::Of("w_id=5"), b = RefId::Of("i_id=2");
  RefVec refs = {a, b, a};
  h.RecordAbort(refs);
  h.RecordCommit(refs);
  History::Counts c;
  ASSERT_TRUE(h.Get(a, &c));
  EXPECT_EQ(c.aborts, 1u);
  EXPECT_EQ(c.commits, 1u);
  ASSERT_TRUE(h.Get(b, &c));
  EXPECT_EQ(c.aborts, 1u);
  EXPECT_EQ(h.size(), 2);
}

TEST(HistoryTest, RefTableHelpers) {
  RefVec refs = {RefId(1), RefId(2), RefId(1), RefId(3), RefId(2)};
  EXPECT_FALSE(RefSeenBefore(refs, 0));
  EXPECT_FALSE(RefSeenBefore(refs, 1));
  EXPECT_TRUE(RefSeenBefore(refs, 2));
  EXPECT_FALSE(RefSeenBefore(refs, 3));
  EXPECT_TRUE(RefSeenBefore(refs, 4));
  EXPECT_EQ(DistinctRefs(refs), 3u);
  // Small hand-made ids spread over the low bits (libcuckoo's bucket index).
  RefTableHash h;
  std::vector<int> seen(64, 0);
  for (uint64_t i = 0; i < 64; ++i) ++seen[h(RefId(i)) & 63];
  int used = 0;
  for (int v : seen) used += v > 0 ? 1 : 0;
  EXPECT_GT(used, 32);
}


History::Options Aging(int64_t half_life_ns) {
  History::Options o;
  o.half_life_ns = half_life_ns;
  return o;
}

TEST(HistoryAdmissionTest, AReferenceCommittedOnceIsNotAddedItsSecondCommitIs) {
  History::Options o;
  o.commit_doorkeeper_log2_bits = 16;
  History h(o);
  const RefId r = RefId::Of("aid=7");
  History::Counts c;
  h.RecordCommit({r});
  EXPECT_FALSE(h.Get(r, &c));
  EXPECT_EQ(h.size(), 0);
  EXPECT_EQ(h.unadmitted_commits(), 1);
  h.RecordCommit({r});
  ASSERT_TRUE(h.Get(r, &c));
  EXPECT_EQ(c.commits, 1u);  // the first sighting is not counted
  h.RecordCommit({r});
  ASSERT_TRUE(h.Get(r, &c));
  EXPECT_EQ(c.commits, 2u);
  EXPECT_EQ(h.unadmitted_commits(), 1);
}

TEST(HistoryAdmissionTest, AbortsAreAdmittedAtOnceAndCommitsOfHeldReferencesCount) {
  History::Options o;
  o.commit_doorkeeper_log2_bits = 16;
  History h(o);
  const RefId hot = RefId::Of("w_id=1");
  h.RecordAbort({hot});
  History::Counts c;
  ASSERT_TRUE(h.Get(hot, &c));
  EXPECT_EQ(c.aborts, 1u);
  h.RecordCommit({hot});
  ASSERT_TRUE(h.Get(hot, &c));
  EXPECT_EQ(c.commits, 1u);
  EXPECT_EQ(h.unadmitted_commits(), 0);
  // Count weights read aborts only: the same as without admission.
  EXPECT_EQ(h.Weight(hot, Weighting::kCount), 1.0);
  EXPECT_EQ(h.Weight(RefId::Of("w_id=2"), Weighting::kCount), 0.0);
}

TEST(HistoryAdmissionTest, AStreamOfOnceReadReferencesAddsAlmostNothing) {
  // A million distinct references committed once each (pgbench -S over a
  // large table): without admission every one is a node; with a 2^16-bit
  // doorkeeper only its false positives (< 1/8 of first sightings) are.
  History::Options o;
  o.commit_doorkeeper_log2_bits = 16;
  History with(o);
  History without;
  constexpr int kRefs = 1 << 17;
  for (int i = 0; i < kRefs; ++i) {
    const RefId r = RefId::Of("aid=" + std::to_string(i));
    with.RecordCommit({r});
    without.RecordCommit({r});
  }
  EXPECT_EQ(without.size(), kRefs);
  EXPECT_LT(with.size(), kRefs / 8);
  EXPECT_GT(with.unadmitted_commits(), kRefs * 7 / 8);
  EXPECT_EQ(with.size() + with.unadmitted_commits(), kRefs);
}

TEST(DoorkeeperTest, FirstSightingOnceThenClearedAfterAnEighthOfItsBits) {
  Doorkeeper d(10);  // 1024 bits, clears every 128 first sightings
  EXPECT_EQ(d.clear_every(), 128);
  const RefId r = RefId::Of("x=1");
  EXPECT_TRUE(d.FirstSighting(r));
  EXPECT_FALSE(d.FirstSighting(r));
  int firsts = 1;
  for (int i = 0; firsts < 128; ++i) firsts += d.FirstSighting(RefId::Of("y=" + std::to_string(i)));
  EXPECT_EQ(d.clears(), 1);
  EXPECT_TRUE(d.FirstSighting(r));  // forgotten by the clear
}

TEST(DoorkeeperTest, ConcurrentSightingsOfOneReferenceHaveOneFirst) {
  for (int round = 0; round < 50; ++round) {
    Doorkeeper d(20);
    const RefId r = RefId::Of("hot=" + std::to_string(round));
    std::atomic<int> firsts{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t) ts.emplace_back([&] { firsts += d.FirstSighting(r); });
    for (auto& t : ts) t.join();
    EXPECT_EQ(firsts.load(), 1);
  }
}

TEST(HistoryAgingTest, CountHalvesAfterOneHalfLife) {
  FakeClock clock;
  History h(Aging(1000000000), &clock);
  const RefId r = RefId::Of("w_id=1");
  h.Add(r, 1000, 400);
  EXPECT_EQ(h.MaybeAge(), 1.0);  // nothing due yet
  clock.Advance(1000000000);
  EXPECT_DOUBLE_EQ(h.MaybeAge(), 0.5);
  History::Counts c;
  ASSERT_TRUE(h.Get(r, &c));
  EXPECT_EQ(c.aborts, 500u);
  EXPECT_EQ(c.commits, 200u);
  // Another half-life, in two quarter... halves: the same total decay.
  clock.Advance(500000000);
  h.MaybeAge();
  clock.Advance(500000000);
  h.MaybeAge();
  ASSERT_TRUE(h.Get(r, &c));
  EXPECT_NEAR(static_cast<double>(c.aborts), 250.0, 1.0);
  EXPECT_NEAR(static_cast<double>(c.commits), 100.0, 1.0);
  EXPECT_EQ(h.aging_passes(), 3);
}

TEST(HistoryAgingTest, NoPassBeforeThePeriodAndNoneWhileFrozen) {
  FakeClock clock;
  History h(Aging(1000000000), &clock);  // period: a quarter half-life
  const RefId r = RefId::Of("w_id=1");
  h.Add(r, 64, 0);
  clock.Advance(200000000);
  EXPECT_EQ(h.MaybeAge(), 1.0);
  h.Freeze();
  clock.Advance(5000000000);
  EXPECT_EQ(h.MaybeAge(), 1.0);  // frozen time does not count
  h.Unfreeze();
  clock.Advance(250000000);
  EXPECT_NEAR(h.MaybeAge(), std::exp2(-0.25), 1e-12);
  History::Counts c;
  ASSERT_TRUE(h.Get(r, &c));
  EXPECT_NEAR(static_cast<double>(c.aborts), 64 * std::exp2(-0.25), 1.0);
}

TEST(HistoryAgingTest, OffByDefault) {
  FakeClock clock;
  History h(History::Options(), &clock);
  h.Add(RefId::Of("a=1"), 10, 10);
  clock.Advance(int64_t{1000} * 1000000000);
  EXPECT_EQ(h.MaybeAge(), 1.0);
  History::Counts c;
  ASSERT_TRUE(h.Get(RefId::Of("a=1"), &c));
  EXPECT_EQ(c.aborts, 10u);
}

TEST(HistoryAgingTest, ReferencesThatStopRecurringAreDropped) {
  FakeClock clock;
  History h(Aging(1000000000), &clock);
  const RefId old_hot = RefId::Of("w_id=1"), new_hot = RefId::Of("w_id=2");
  h.Add(old_hot, 300, 100);
  for (int s = 0; s < 40; ++s) {  // 40 half-lives; the new hot spot keeps recording
    for (int i = 0; i < 10; ++i) h.RecordAbort({new_hot});
    clock.Advance(1000000000);
    h.MaybeAge();
  }
  History::Counts c;
  EXPECT_FALSE(h.Get(old_hot, &c));  // decayed to nothing: memory back
  ASSERT_TRUE(h.Get(new_hot, &c));
  EXPECT_GT(c.aborts, 5u);  // steady state ~ 10 per half-life * 1/(1 - 1/2) / 2
  EXPECT_LT(c.aborts, 40u);
  EXPECT_EQ(h.size(), 1);
}

TEST(HistoryAgingTest, DecayCountKeepsTheExpectation) {
  // Stochastic rounding: the mean over many salts is c * f, and a count of 3
  // decayed by 0.3 (0.9) becomes 1 nine times in ten and 0 otherwise (plain
  // rounding would keep it at 1 for ever, floor would drop it at once).
  double sum = 0;
  int zeros = 0;
  for (uint64_t salt = 0; salt < 20000; ++salt) {
    const uint64_t v = DecayCount(3, 0.3, salt);
    EXPECT_LE(v, 1u);
    sum += static_cast<double>(v);
    zeros += v == 0 ? 1 : 0;
  }
  EXPECT_NEAR(sum / 20000, 0.9, 0.02);
  EXPECT_NEAR(zeros, 2000, 300);
  EXPECT_EQ(DecayCount(1000, 0.5, 7), 500u);  // exact products are exact
  EXPECT_EQ(DecayCount(7, 1.0, 7), 7u);
  EXPECT_EQ(DecayCount(7, 0.0, 7), 0u);
}

TEST(HistoryAgingTest, RecordsDuringAgingAreNotLost) {
  FakeClock clock;
  History h(Aging(1000000000), &clock);
  const RefId r = RefId::Of("w_id=1");
  std::atomic<bool> stop{false};
  std::atomic<int64_t> recorded{0};
  std::thread rec([&] {
    while (!stop.load()) {
      h.RecordCommit({r});
      recorded.fetch_add(1);
    }
  });
  while (recorded.load() < 1000) std::this_thread::yield();
  for (int i = 0; i < 200; ++i) h.Age(0.999999);  // rounds down only by chance
  const int64_t floor_at_stop = recorded.load();
  stop.store(true);
  rec.join();
  History::Counts c;
  ASSERT_TRUE(h.Get(r, &c));
  // Each pass may take back at most one count (0.999999 * c rounds to c - 1
  // at most); every record otherwise survives.
  EXPECT_GE(static_cast<int64_t>(c.commits), recorded.load() - 200);
  EXPECT_LE(static_cast<int64_t>(c.commits), recorded.load());
  EXPECT_GE(recorded.load(), floor_at_stop);
}

}  // namespace
}  // namespace history
}  // namespace corral
