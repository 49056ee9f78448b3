#include "adapters/proxy/template_cap.h"

#include <algorithm>
#include <map>
#include <vector>

#include "gtest/gtest.h"

namespace corral {
namespace proxy {
namespace {

CapRule::Window Win(int64_t good, int64_t conflicts, double cost_per_good) {
  CapRule::Window w;
  w.good = good;
  w.conflicts = conflicts;
  w.attempt_ns = cost_per_good * static_cast<double>(good);
  return w;
}

TEST(CapRule, ShrinksTowardOneWhileAbortsCostThenGrowsBack) {
  CapRule rule;
  rule.max_k = 8;
  CapRule::State st;
  // Heavy conflicts (r = 0.6) and the same client time at every k: no k
  // is known to be worse below, so k halves each window.
  std::vector<int> ks;
  for (int i = 0; i < 3; ++i) ks.push_back(rule.Step(&st, Win(100, 60, 1e6)));
  EXPECT_EQ(ks, (std::vector<int>{4, 2, 1}));
  // Still at 1 while they go on (k = 2, probed, is as costly and conflicts).
  for (int i = 0; i < 60; ++i) {
    rule.Step(&st, Win(100, st.k > 1 ? 60 : 0, 1e6));
    EXPECT_LE(st.k, 2);
  }
  // Moderate conflicts step down by one.
  CapRule::State mid;
  EXPECT_EQ(rule.Step(&mid, Win(100, 10, 1e6)), 7);
  EXPECT_EQ(rule.Step(&mid, Win(100, 10, 1e6)), 6);
  // Rare ones (below min_abort_rate) do not shrink it.
  CapRule::State rare;
  for (int i = 0; i < 20; ++i) EXPECT_EQ(rule.Step(&rare, Win(100, 3, 1e6)), 8);
  // Conflicts stop: k = 1 probes 2 once k = 2's measurement is missing or
  // expired, then calm windows grow it back to uncapped.
  int windows = 0;
  while (st.k < rule.max_k && windows < 200) {
    rule.Step(&st, Win(100, 0, 1e6));
    ++windows;
  }
  EXPECT_EQ(st.k, rule.max_k);
  EXPECT_LT(windows, 2 * rule.memory_windows + rule.max_k * rule.grow_windows + 2);
}

TEST(CapRule, HoldsWhereLessConcurrencyMeasuredWorse) {
  CapRule rule;
  rule.max_k = 4;
  CapRule::State st;
  // Client time per good end: k=4: 1.0, k=3: 0.8, k=2: 2.0 (worse), k=1: 3.0.
  auto cost = [](int k) { return k == 4 ? 1.0e6 : k == 3 ? 0.8e6 : k == 2 ? 2.0e6 : 3.0e6; };
  for (int i = 0; i < 8; ++i) rule.Step(&st, Win(100, 10, cost(st.k)));
  // 4 -> 3 -> 2 -> 1 (unknown: tried) -> 2 -> 3 (each measured better
  // above) and stays there while the measurements are fresh.
  EXPECT_EQ(st.k, 3);
  for (int i = 0; i < rule.memory_windows / 2; ++i) {
    rule.Step(&st, Win(100, 10, cost(st.k)));
    EXPECT_EQ(st.k, 3) << "window " << i;
  }
}

TEST(CapRule, NoEndsNoStep) {
  CapRule rule;
  CapRule::State st;
  EXPECT_EQ(rule.Step(&st, CapRule::Window()), rule.max_k);
  EXPECT_EQ(rule.Step(&st, CapRule::Window()), rule.max_k);
}

// A template whose k was driven to `k` (every window: conflicts).
TemplateCap::Options SmallWindows(int max_k) {
  TemplateCap::Options o;
  o.rule.max_k = max_k;
  o.window_ns = 10;
  o.min_window_ends = 1;
  return o;
}

void DriveTo(TemplateCap* cap, const std::string& key, int k, int64_t* now) {
  uint64_t id = 1000;
  std::vector<uint64_t> admitted;
  while (cap->k(key) > k) {
    ASSERT_TRUE(cap->Arrive(key, id++, *now));
    *now += 100;
    cap->Finish(key, TemplateCap::End::kConflict, *now - 100, *now, &admitted);
    ASSERT_TRUE(admitted.empty());
  }
}

TEST(TemplateCap, UncappedAdmitsEverything) {
  TemplateCap cap(SmallWindows(4));
  for (uint64_t i = 0; i < 10; ++i) EXPECT_TRUE(cap.Arrive("t", i, 0));
  EXPECT_EQ(cap.counters().waits, 0);
  EXPECT_EQ(cap.capped(), 0);
}

TEST(TemplateCap, AdmitsKAtATimeFifoAndDropsGoneWaiters) {
  TemplateCap cap(SmallWindows(4));
  int64_t now = 0;
  DriveTo(&cap, "t", 2, &now);
  ASSERT_EQ(cap.k("t"), 2);
  EXPECT_EQ(cap.capped(), 1);
  // Five arrive: two run, three wait in order.
  std::vector<uint64_t> running;
  for (uint64_t id = 1; id <= 5; ++id) {
    if (cap.Arrive("t", id, now)) running.push_back(id);
  }
  EXPECT_EQ(running, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(cap.counters().waits, 3);
  // Another template is not held by this one's cap.
  EXPECT_TRUE(cap.Arrive("other", 99, now));
  // Waiter 4's client leaves: removed, and not admitted later.
  EXPECT_TRUE(cap.Cancel("t", 4));
  EXPECT_FALSE(cap.Cancel("t", 4));
  EXPECT_FALSE(cap.Cancel("t", 1));  // running, not waiting
  // Ends without conflicts, before a window closes (now unchanged): each
  // admits the oldest waiter.
  std::vector<uint64_t> admitted;
  cap.Finish("t", TemplateCap::End::kGood, now, now, &admitted);
  EXPECT_EQ(admitted, (std::vector<uint64_t>{3}));
  admitted.clear();
  cap.Finish("t", TemplateCap::End::kGood, now, now, &admitted);
  EXPECT_EQ(admitted, (std::vector<uint64_t>{5}));
  admitted.clear();
  cap.Finish("t", TemplateCap::End::kGood, now, now, &admitted);
  EXPECT_TRUE(admitted.empty());
  const std::vector<TemplateCap::Row> rows = cap.Rows();
  auto t = std::find_if(rows.begin(), rows.end(), [](const TemplateCap::Row& r) { return r.key == "t"; });
  ASSERT_NE(t, rows.end());
  EXPECT_EQ(t->running, 1);
  EXPECT_EQ(t->waiting, 0u);
  EXPECT_EQ(cap.counters().cancels, 1);
}

TEST(TemplateCap, FullTableOfBusyTemplatesDoesNotCap) {
  TemplateCap::Options o = SmallWindows(4);
  o.max_templates = 1;
  TemplateCap cap(o);
  ASSERT_TRUE(cap.Arrive("a", 1, 0));             // busy
  EXPECT_TRUE(cap.Arrive("b", 2, 0));             // no room: runs, untracked
  EXPECT_EQ(cap.counters().untracked, 1);
  std::vector<uint64_t> admitted;
  cap.Finish("b", TemplateCap::End::kGood, 0, 1, &admitted);  // harmless
  cap.Finish("a", TemplateCap::End::kGood, 0, 1, &admitted);
  EXPECT_TRUE(cap.Arrive("b", 3, 2));             // "a" idle: evicted
  EXPECT_EQ(cap.Rows().size(), 1u);
  EXPECT_EQ(cap.Rows()[0].key, "b");
}

// Closed loop on a fake clock: `clients` clients run the template back to
// back, each attempt 1 ms; while `conflicting`, an attempt that overlapped
// another fails (a hot spot no router can see). Returns the k after `ms`.
struct Sim {
  TemplateCap cap;
  int64_t now = 0;
  std::map<uint64_t, int64_t> started;  // running: client -> admission
  std::map<uint64_t, bool> overlapped;
  std::vector<uint64_t> idle;
  int max_running = 0;
  int64_t conflicts = 0;
  explicit Sim(const TemplateCap::Options& o, int clients) : cap(o) {
    for (int i = 0; i < clients; ++i) idle.push_back(static_cast<uint64_t>(i));
  }
  void Start(uint64_t id) {
    started[id] = now;
    overlapped[id] = started.size() > 1;
    if (started.size() > 1) {
      for (auto& [other, o] : overlapped) o = true;
    }
    max_running = std::max<int>(max_running, static_cast<int>(started.size()));
  }
  void Run(int64_t ms, bool conflicting) {
    const int64_t until = now + ms * 1000000;
    while (now < until) {
      for (uint64_t id : idle) {
        if (cap.Arrive("t", id, now)) Start(id);
      }
      idle.clear();
      now += 1000000;
      std::vector<uint64_t> ending;
      for (auto& [id, s] : started) ending.push_back(id);
      for (uint64_t id : ending) {
        const bool conflict = conflicting && overlapped[id];
        if (conflict) ++conflicts;
        const int64_t s = started[id];
        started.erase(id);
        overlapped.erase(id);
        std::vector<uint64_t> admitted;
        cap.Finish("t", conflict ? TemplateCap::End::kConflict : TemplateCap::End::kGood, s, now, &admitted);
        for (uint64_t a : admitted) Start(a);
        idle.push_back(id);
      }
    }
  }
};

TEST(TemplateCap, ClosedLoopShrinksUnderConflictsAndGrowsBack) {
  TemplateCap::Options o;
  o.rule.max_k = 6;
  o.window_ns = 20 * 1000000LL;
  o.min_window_ends = 10;
  Sim sim(o, 12);
  sim.Run(2000, /*conflicting=*/true);
  EXPECT_LE(sim.cap.k("t"), 2);  // 1, or probing 2
  // At k = 1 conflicts are gone except for the probes of k = 2.
  const int64_t before = sim.conflicts;
  sim.max_running = 0;
  sim.Run(1000, true);
  EXPECT_LE(sim.max_running, 2);
  EXPECT_LT(sim.conflicts - before, 1000 / 4);  // of ~1000 ends
  // Conflicts stop: back to uncapped.
  sim.Run(4000, /*conflicting=*/false);
  EXPECT_EQ(sim.cap.k("t"), o.rule.max_k);
  EXPECT_GT(sim.cap.counters().grows, 0);
  EXPECT_GT(sim.cap.counters().shrinks, 0);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
