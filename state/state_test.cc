#include "state/state.h"

#include <atomic>
#include <thread>
#include <vector>

#include "common/fake_clock.h"
#include "gtest/gtest.h"

namespace corral {
namespace state {
namespace {

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int64_t kStreamRefs = 50000;  // sanitizers are ~10-30x slower
#else
constexpr int64_t kStreamRefs = 2000000;
#endif

std::unique_ptr<State> Make(State::Options o, const Clock* c) {
  auto s = State::Create(o, c);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(s).value();
}

TEST(StateTest, CreateValidates) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 0;
  EXPECT_FALSE(State::Create(o, &clock).ok());
  o.num_queues = 64;
  EXPECT_TRUE(State::Create(o, &clock).ok());
  EXPECT_FALSE(State::Create(o, nullptr).ok());
  o.max_bytes = 10;
  EXPECT_FALSE(State::Create(o, &clock).ok());
  EXPECT_TRUE(ParseEvictionMode("Direct").ok());
  EXPECT_FALSE(ParseEvictionMode("lru").ok());
}

TEST(StateTest, RecordCountsTotalsAndMaxQueue) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 3;
  auto s = Make(o, &clock);
  RefVec a = {RefId::Of("w_id=5"), RefId::Of("i_id=2")};
  s->Record(a, QueueId(1));
  s->Record(a, QueueId(1));
  s->Record({RefId::Of("w_id=5")}, QueueId(2));
  uint64_t row[3];
  ASSERT_TRUE(s->ReadRow(RefId::Of("w_id=5"), row));
  EXPECT_EQ(row[0], 0u);
  EXPECT_EQ(row[1], 2u);
  EXPECT_EQ(row[2], 1u);
  EXPECT_FALSE(s->ReadRow(RefId::Of("nope"), row));
  State::Info info;
  ASSERT_TRUE(s->Get(RefId::Of("w_id=5"), &info));
  EXPECT_EQ(info.total, 3u);
  EXPECT_EQ(info.max_queue, QueueId(1));
  EXPECT_EQ(s->Total(QueueId(0)), 0);
  EXPECT_EQ(s->Total(QueueId(1)), 4);
  EXPECT_EQ(s->Total(QueueId(2)), 1);
  EXPECT_EQ(s->size(), 2);
}

TEST(StateTest, MaxQueueTiesGoToLowestIndex) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 4;
  auto s = Make(o, &clock);
  RefId r = RefId::Of("x=1");
  s->Record({r}, QueueId(3));
  s->Record({r}, QueueId(1));
  State::Info info;
  ASSERT_TRUE(s->Get(r, &info));
  EXPECT_EQ(info.max_queue, QueueId(1));
  s->Record({r}, QueueId(3));
  ASSERT_TRUE(s->Get(r, &info));
  EXPECT_EQ(info.max_queue, QueueId(3));
}

TEST(StateTest, SetAdjustsTotals) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 3;
  auto s = Make(o, &clock);
  s->Set(RefId::Of("a"), {2, 1, 1});
  s->Set(RefId::Of("b"), {0, 1, 1});
  s->Set(RefId::Of("a"), {1, 0, 0});
  int64_t t[3];
  s->ReadTotals(t);
  EXPECT_EQ(t[0], 1);
  EXPECT_EQ(t[1], 1);
  EXPECT_EQ(t[2], 1);
  State::Info info;
  ASSERT_TRUE(s->Get(RefId::Of("b"), &info));
  EXPECT_EQ(info.max_queue, QueueId(1));
  EXPECT_EQ(info.total, 2u);
}

// The rate tests' State: 2 queues, R smoothed with alpha 0.5.
std::unique_ptr<State> MakeRateState(const Clock* clock) {
  State::Options o;
  o.num_queues = 2;
  o.rate_alpha = 0.5;
  return Make(o, clock);
}

// n arrivals of r on q, the clock advancing gap_ns after each.
void Arrive(State* s, FakeClock* clock, RefId r, QueueId q, int n, int64_t gap_ns) {
  for (int i = 0; i < n; ++i) {
    s->Record({r}, q);
    clock->Advance(gap_ns);
  }
}

TEST(StateTest, ArrivalRateIsSmoothedAndDecays) {
  FakeClock clock;
  auto s = MakeRateState(&clock);
  RefId r = RefId::Of("hot=1");
  // 100 arrivals per second for 10 seconds: R converges to 100/s.
  Arrive(s.get(), &clock, r, QueueId(0), 1000, 10000000);
  State::Info info;
  ASSERT_TRUE(s->Get(r, &info));
  EXPECT_NEAR(info.rate_per_s, 100.0, 1.0);
  // Silence for 5 seconds: R decays by (1 - alpha) per window.
  clock.Advance(5000000000LL);
  ASSERT_TRUE(s->Get(r, &info));
  EXPECT_LT(info.rate_per_s, 100.0 / 16);
  EXPECT_GT(info.rate_per_s, 0.0);
}

TEST(StateTest, ANewReferenceReadsAtItsPaceNotAFractionOfIt) {
  FakeClock clock;
  auto s = MakeRateState(&clock);
  RefId r = RefId::Of("w_id=3");
  // 1,000 arrivals a second, read 0.4 s into the first window: the pace
  // (400 / 0.4 s), not the 400 counted so far.
  Arrive(s.get(), &clock, r, QueueId(0), 400, 1000000);
  State::Info info;
  ASSERT_TRUE(s->Get(r, &info));
  EXPECT_NEAR(info.rate_per_s, 1000.0, 10.0);
  // Early in a window (less than a quarter gone) the count alone: 5 arrivals
  // 10 ms in do not read as 500/s.
  RefId young = RefId::Of("w_id=4");
  clock.Advance(600000000);  // t = 1.0 s: a new window
  clock.Advance(10000000);
  for (int i = 0; i < 5; ++i) s->Record({young}, QueueId(1));
  ASSERT_TRUE(s->Get(young, &info));
  EXPECT_NEAR(info.rate_per_s, 5.0, 0.01);
  // The first completed window is R itself: at 1.01 s, r's R is its first
  // window's 400 arrivals, not alpha x 400 (it saw none since).
  ASSERT_TRUE(s->Get(r, &info));
  EXPECT_NEAR(info.rate_per_s, 400.0, 0.01);
}

// A reference born late in a rate window reads its pace since it was born,
// in that window and in R after it (a run that begins late in a window read
// its warehouses at 0.1-0.4x their rates for its first second).
TEST(StateTest, AReferenceBornLateInAWindowReadsItsPace) {
  FakeClock clock;
  auto s = MakeRateState(&clock);
  clock.Advance(700000000);  // t = 0.7 s
  RefId r = RefId::Of("w_id=1");
  State::Info info;
  // 1,000 a second from 0.7 s: at 0.999 s, 300 arrivals in its 0.3 s.
  Arrive(s.get(), &clock, r, QueueId(0), 299, 1000000);
  s->Record({r}, QueueId(0));
  ASSERT_TRUE(s->Get(r, &info));
  EXPECT_NEAR(info.rate_per_s, 1000.0, 15.0);
  // Into the next window: R is the first window's 300 over its 0.3 s.
  clock.Advance(1000000);  // t = 1.0 s
  Arrive(s.get(), &clock, r, QueueId(0), 50, 1000000);
  ASSERT_TRUE(s->Get(r, &info));
  EXPECT_NEAR(info.rate_per_s, 1000.0, 15.0);
  // Born with less than a quarter of its window left (0.9 s of window 1 =
  // t 1.9 s): that window is not R; 64 arrivals since the next one began
  // read at their pace.
  RefId late = RefId::Of("w_id=2");
  clock.Advance(1900000000 - 1050000000);  // t = 1.9 s
  Arrive(s.get(), &clock, late, QueueId(1), 180, 1000000);
  ASSERT_TRUE(s->Get(late, &info));  // t = 2.08 s, 80 in this window
  EXPECT_NEAR(info.rate_per_s, 1000.0, 15.0);
  // The count alone below 64 arrivals and a quarter window.
  RefId young = RefId::Of("w_id=3");
  for (int i = 0; i < 20; ++i) s->Record({young}, QueueId(1));
  clock.Advance(10000000);
  ASSERT_TRUE(s->Get(young, &info));
  EXPECT_NEAR(info.rate_per_s, 20.0, 0.01);
}

TEST(StateTest, MaxBytesBoundsEntries) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 8;
  o.max_entries = 0;
  o.max_bytes = 1 << 20;
  auto s = Make(o, &clock);
  EXPECT_EQ(s->max_entries(), (1 << 20) / s->BytesPerEntry());
  for (int i = 0; i < kStreamRefs / 20; ++i) s->Record({RefId(i)}, QueueId(i % 8));
  EXPECT_LE(s->size(), s->max_entries());
  EXPECT_LE(s->ApproxBytes(), 2 << 20);
}

// Streams `n` fresh references (one per transaction, round-robin queues), with
// a hot reference on queue 5 in every 10th transaction, one ms apart.
void StreamWithHotRef(State* s, FakeClock* clock, int64_t n, RefId hot, int64_t* hot_seen,
                      int64_t* max_size) {
  for (int64_t i = 0; i < n; ++i) {
    s->Record({RefId(0x1000000000ULL + i)}, QueueId(static_cast<int32_t>(i % 8)));
    if (i % 10 == 0) {
      s->Record({hot}, QueueId(5));
      ++*hot_seen;
    }
    *max_size = std::max(*max_size, s->size());
    clock->Advance(1000000 / 10);
  }
}

TEST(StateTest, StableDeleteMeetsBoundAndKeepsHotAffinity) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 8;
  o.max_entries = 2000;
  o.eviction = EvictionMode::kStable;
  auto s = Make(o, &clock);
  RefId hot = RefId::Of("w_id=1");
  int64_t hot_seen = 0, max_size = 0;
  StreamWithHotRef(s.get(), &clock, kStreamRefs, hot, &hot_seen, &max_size);
  EXPECT_LE(max_size, 2000);
  EXPECT_GT(s->evictions(), kStreamRefs - 2000 - 1);
  EXPECT_EQ(s->forced_evictions(), 0);
  State::Info info;
  ASSERT_TRUE(s->Get(hot, &info));
  EXPECT_EQ(info.max_queue, QueueId(5));
  EXPECT_EQ(info.counts[5], static_cast<uint64_t>(hot_seen));  // never evicted
  // Totals equal the sum over held entries.
  int64_t totals[8];
  s->ReadTotals(totals);
  int64_t sum = 0;
  for (int64_t t : totals) sum += t;
  EXPECT_EQ(sum, s->size() - 1 + hot_seen);
}

TEST(StateTest, DirectDeleteLosesHotAffinity) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 8;
  o.max_entries = 2000;
  o.eviction = EvictionMode::kDirect;
  auto s = Make(o, &clock);
  RefId hot = RefId::Of("w_id=1");
  int64_t hot_seen = 0, max_size = 0;
  StreamWithHotRef(s.get(), &clock, kStreamRefs / 10, hot, &hot_seen, &max_size);
  EXPECT_LE(max_size, 2000);
  State::Info info;
  // The hot entry was evicted at least once: its counts restarted.
  if (s->Get(hot, &info)) {
    EXPECT_LT(info.counts[5], static_cast<uint64_t>(hot_seen) / 2);
  }
}

TEST(StateTest, StableDeletePrefersCrowdedColdEntries) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 4;
  o.max_entries = 0;
  o.protect_per_queue = 1;
  auto s = Make(o, &clock);
  // Queue 0 is crowded with 30 cold entries; queue 3 holds 5 cold entries.
  for (int i = 0; i < 30; ++i) s->Record({RefId(100 + i)}, QueueId(0));
  for (int i = 0; i < 5; ++i) s->Record({RefId(200 + i)}, QueueId(3));
  clock.Advance(10LL * 1000000000);  // everything is cold now
  EXPECT_EQ(s->EvictTo(20), 15);
  uint64_t row[4];
  int kept3 = 0;
  for (int i = 0; i < 5; ++i) kept3 += s->ReadRow(RefId(200 + i), row);
  EXPECT_EQ(kept3, 5);
  EXPECT_EQ(s->Total(QueueId(0)), 15);
}

TEST(StateTest, ConcurrentRecordsKeepTotalsExact) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 4;
  o.max_entries = 500;
  auto s = Make(o, &clock);
  constexpr int kThreads = 4;
#if defined(__SANITIZE_THREAD__)
  constexpr int kIters = 1500;
#else
  constexpr int kIters = 50000;
#endif
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        RefVec refs = {RefId::Of("hot"), RefId(uint64_t{1} << 40 | (t * kIters + i))};
        s->Record(refs, QueueId(t));
        uint64_t row[4];
        s->ReadRow(RefId::Of("hot"), row);
      }
    });
  }
  for (auto& t : ts) t.join();
  State::Info info;
  ASSERT_TRUE(s->Get(RefId::Of("hot"), &info));
  EXPECT_EQ(info.total, uint64_t{kThreads} * kIters);
  EXPECT_LE(s->size(), 500 + kThreads);
  int64_t totals[4];
  s->ReadTotals(totals);
  int64_t sum = 0;
  for (int64_t v : totals) sum += v;
  EXPECT_EQ(sum, static_cast<int64_t>(info.total) + s->size() - 1);
}

TEST(StateTest, ReferenceNamedTwiceCountsOnce) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 3;
  auto s = Make(o, &clock);
  const RefId a = RefId::Of("w_id=5"), b = RefId::Of("i_id=2");
  s->Record({a, b, a, a}, QueueId(2));
  uint64_t row[3];
  ASSERT_TRUE(s->ReadRow(a, row));
  EXPECT_EQ(row[2], 1u);
  State::Info info;
  ASSERT_TRUE(s->Get(a, &info));
  EXPECT_EQ(info.total, 1u);
  EXPECT_EQ(s->Total(QueueId(2)), 2);
  EXPECT_EQ(s->size(), 2);
}

TEST(StateTest, RecordChosenScoresTheLeadRowThenRecordsAll) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 3;
  auto s = Make(o, &clock);
  const RefId a = RefId::Of("a"), b = RefId::Of("b"), c = RefId::Of("c");
  s->Set(b, {0, 4, 1});
  int calls = 0;
  std::vector<uint64_t> seen;
  const QueueId q = s->RecordChosen({a, b, c, b}, 1, [&](const State::RowView& row) {
    ++calls;
    for (int i = 0; i < row.size(); ++i) seen.push_back(row[i]);
    return QueueId(1);
  });
  EXPECT_EQ(q, QueueId(1));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, (std::vector<uint64_t>{0, 4, 1}));
  uint64_t row[3];
  ASSERT_TRUE(s->ReadRow(b, row));
  EXPECT_EQ(row[1], 5u);  // b named twice, counted once
  ASSERT_TRUE(s->ReadRow(a, row));
  EXPECT_EQ(row[1], 1u);
  ASSERT_TRUE(s->ReadRow(c, row));
  EXPECT_EQ(row[1], 1u);
  EXPECT_EQ(s->Total(QueueId(1)), 4 + 3);
  // A lead that is not held gets an empty row and is inserted.
  const RefId d = RefId::Of("d");
  bool empty = false;
  s->RecordChosen({d}, 0, [&](const State::RowView& r) {
    empty = r.empty();
    return QueueId(0);
  });
  EXPECT_TRUE(empty);
  ASSERT_TRUE(s->ReadRow(d, row));
  EXPECT_EQ(row[0], 1u);
  // An invalid choice records nothing.
  const int64_t before = s->Total(QueueId(0));
  EXPECT_EQ(s->RecordChosen({d}, 0, [](const State::RowView&) { return QueueId(-1); }), QueueId(-1));
  EXPECT_EQ(s->Total(QueueId(0)), before);
}

TEST(StateTest, UnrecordTakesBackARecord) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 3;
  auto s = Make(o, &clock);
  const RefId a = RefId::Of("a"), b = RefId::Of("b");
  s->Set(a, {3, 2, 0});
  s->Record({a, b}, QueueId(1));
  s->Record({a, b}, QueueId(1));
  s->Unrecord({a, b, a}, QueueId(1));
  uint64_t row[3];
  ASSERT_TRUE(s->ReadRow(a, row));
  EXPECT_EQ(row[1], 3u);
  State::Info info;
  ASSERT_TRUE(s->Get(a, &info));
  EXPECT_EQ(info.max_queue, QueueId(0));  // 3 vs 3: lowest index
  s->Unrecord({b}, QueueId(1));
  s->Unrecord({b}, QueueId(1));  // nothing left to take back
  ASSERT_TRUE(s->ReadRow(b, row));
  EXPECT_EQ(row[1], 0u);
  EXPECT_EQ(s->Total(QueueId(1)), 3);
  EXPECT_EQ(s->Total(QueueId(0)), 3);
}

TEST(StateTest, CountsSaturateAndTotalsMatchRows) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 2;
  auto s = Make(o, &clock);
  const RefId a = RefId::Of("a");
  s->Set(a, {(uint64_t{1} << 32) + 5, 1});
  uint64_t row[2];
  ASSERT_TRUE(s->ReadRow(a, row));
  EXPECT_EQ(row[0], 0xffffffffu);
  s->Record({a}, QueueId(0));
  ASSERT_TRUE(s->ReadRow(a, row));
  EXPECT_EQ(row[0], 0xffffffffu);
  EXPECT_EQ(s->Total(QueueId(0)), 0xffffffffLL);
}

TEST(StateTest, EvictionKeepsTotalsEqualToHeldRows) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 4;
  o.max_entries = 1000;
  auto s = Make(o, &clock);
  std::vector<RefId> all;
  for (int i = 0; i < 5000; ++i) {
    all.push_back(RefId(0x777000000ULL + i));
    s->Record({all.back(), RefId(0x42)}, QueueId(i % 4));
  }
  EXPECT_LE(s->size(), 1000);
  EXPECT_GT(s->eviction_passes(), 0);
  int64_t sum[4] = {0, 0, 0, 0};
  all.push_back(RefId(0x42));
  int64_t held = 0;
  for (RefId r : all) {
    uint64_t row[4];
    if (!s->ReadRow(r, row)) continue;
    ++held;
    for (int q = 0; q < 4; ++q) sum[q] += static_cast<int64_t>(row[q]);
  }
  EXPECT_EQ(held, s->size());
  for (int q = 0; q < 4; ++q) EXPECT_EQ(s->Total(QueueId(q)), sum[q]) << q;
}

}  // namespace
}  // namespace state
}  // namespace corral

namespace corral {
namespace state {
namespace {

// Reinforce only: a non-lead reference's row grows only on its own queue;
// the lead's row grows wherever its transaction goes.
TEST(StateReinforceOnly, NonLeadRowsOnlyGrowOnTheirOwnQueue) {
  for (bool reinforce : {false, true}) {
    State::Options o;
    o.num_queues = 3;
    o.reinforce_only = reinforce;
    auto st = State::Create(o, Clock::Real()).value();
    const RefId home = RefId::Of("w_id=2"), away = RefId::Of("w_id=5");
    st->Set(home, {0, 3, 0});
    st->Set(away, {0, 0, 9});
    RefVec refs = {away, home};
    // away leads: the transaction goes to queue 2.
    const QueueId q = st->RecordChosen(refs, 0, [](const State::RowView&) { return QueueId(2); });
    EXPECT_EQ(q, QueueId(2));
    uint64_t row[3];
    ASSERT_TRUE(st->ReadRow(home, row));
    EXPECT_EQ(row[2], reinforce ? 0u : 1u);
    ASSERT_TRUE(st->ReadRow(away, row));
    EXPECT_EQ(row[2], 10u);
    EXPECT_EQ(st->Total(QueueId(2)), 11);  // both references count in the total
    // On its own queue the non-lead row grows either way.
    st->RecordChosen(refs, 0, [](const State::RowView&) { return QueueId(1); });
    ASSERT_TRUE(st->ReadRow(home, row));
    EXPECT_EQ(row[1], 4u);
  }
}

TEST(StateAgingTest, RowsAndTotalsDecayAndEmptyRowsGo) {
  FakeClock clock;
  State::Options o;
  o.num_queues = 4;
  auto st = Make(o, &clock);
  const RefId hot = RefId::Of("w_id=1"), cold = RefId::Of("w_id=2");
  st->Set(hot, {400, 0, 40, 0});
  st->Set(cold, {0, 1, 0, 0});
  st->Record({}, QueueId(3), /*untracked=*/100);  // totals only
  st->Age(0.5);
  State::Info info;
  ASSERT_TRUE(st->Get(hot, &info));
  EXPECT_EQ(info.counts[0], 200u);
  EXPECT_EQ(info.counts[2], 20u);
  EXPECT_EQ(info.total, 220u);
  EXPECT_EQ(info.max_queue, QueueId(0));
  EXPECT_EQ(st->Total(QueueId(0)), 200);
  EXPECT_EQ(st->Total(QueueId(2)), 20);
  EXPECT_EQ(st->Total(QueueId(3)), 50);  // untracked placements decay too
  // The cold row (1 * 0.5) either survives as 1 or is gone with its total.
  for (int i = 0; i < 8; ++i) st->Age(0.5);
  EXPECT_FALSE(st->Contains(cold));
  EXPECT_EQ(st->Total(QueueId(1)), 0);
  ASSERT_TRUE(st->Get(hot, &info));
  EXPECT_EQ(info.max_queue, QueueId(0));
  EXPECT_LE(info.counts[0], 2u);
  EXPECT_EQ(st->aging_passes(), 9);
  int64_t sum_rows = 0;
  for (int q = 0; q < 3; ++q) sum_rows += st->Total(QueueId(q));
  EXPECT_EQ(sum_rows, static_cast<int64_t>(info.counts[0] + info.counts[1] + info.counts[2]));
}

}  // namespace
}  // namespace state
}  // namespace corral
