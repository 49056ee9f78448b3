#include "adapters/proxy/key_locks.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace corral {
namespace proxy {
namespace {

TEST(KeyLocksTest, GrantsFifoAndWakesOnRelease) {
  KeyLocks l;
  std::vector<uint64_t> woken;
  auto wake = [&](uint64_t t) { woken.push_back(t); };
  bool cross = true;
  EXPECT_TRUE(l.Acquire(0, 1, {7}, &cross, wake));
  EXPECT_FALSE(cross);
  EXPECT_FALSE(l.Acquire(1, 2, {7}, &cross, wake));
  EXPECT_TRUE(cross);  // behind worker 0's request
  EXPECT_FALSE(l.Acquire(1, 3, {7}, &cross, wake));
  EXPECT_TRUE(cross);  // still a request of worker 0 ahead
  EXPECT_TRUE(l.Holds(1));
  EXPECT_FALSE(l.Holds(2));
  l.Release(1);
  ASSERT_EQ(woken, std::vector<uint64_t>{2});  // the first waiter only
  EXPECT_TRUE(l.Holds(2));
  l.Release(2);
  EXPECT_EQ(woken, (std::vector<uint64_t>{2, 3}));
  KeyLocks::Counters c = l.counters();
  EXPECT_EQ(c.requests, 3);
  EXPECT_EQ(c.waits, 2);
  EXPECT_EQ(c.cross_waits, 2);
  EXPECT_EQ(c.held, 1);
  EXPECT_EQ(c.waiting, 0);
}

// ReleaseKey gives one key back (a gate, cycle_gates.h): its waiter runs,
// the rest stays held, no release epoch moves; a waiting ticket or a key
// not held changes nothing.
TEST(KeyLocksTest, ReleaseKeyGivesOneKeyBackAndKeepsTheRest) {
  KeyLocks l;
  std::vector<uint64_t> woken;
  auto wake = [&](uint64_t t) { woken.push_back(t); };
  ASSERT_TRUE(l.Acquire(0, 1, {7}, nullptr, wake));               // the gate
  ASSERT_TRUE(l.AcquireMore(0, 1, {3}, wake));                    // then a row
  EXPECT_FALSE(l.Acquire(0, 2, {7}, nullptr, wake));              // another gate request
  EXPECT_FALSE(l.Acquire(0, 3, {3}, nullptr, wake));              // the row's
  const uint64_t epoch = l.Epoch();
  l.ReleaseKey(2, 7);  // waiting: no-op
  l.ReleaseKey(1, 9);  // not held: no-op
  EXPECT_TRUE(woken.empty());
  l.ReleaseKey(1, 7);
  EXPECT_EQ(woken, std::vector<uint64_t>{2});
  EXPECT_TRUE(l.Holds(1));
  EXPECT_TRUE(l.Has(1, 3));
  EXPECT_FALSE(l.Has(1, 7));
  EXPECT_EQ(l.Epoch(), epoch);
  EXPECT_EQ(l.TakeIfFree(0, 4, 3, epoch), KeyLocks::Take::kHeld);  // the row still held
  l.Release(1);
  EXPECT_EQ(woken, (std::vector<uint64_t>{2, 3}));
  l.ReleaseKey(3, 3);  // its only key: the request goes
  EXPECT_FALSE(l.Holds(3));
  l.Release(2);
  KeyLocks::Counters c = l.counters();
  EXPECT_EQ(c.held, 0);
  EXPECT_EQ(c.waiting, 0);
}

TEST(KeyLocksTest, AllOrNothingAndWithdrawnWaiter) {
  KeyLocks l;
  std::vector<uint64_t> woken;
  auto wake = [&](uint64_t t) { woken.push_back(t); };
  EXPECT_TRUE(l.Acquire(0, 1, {1}, nullptr, wake));
  EXPECT_TRUE(l.Acquire(0, 2, {2}, nullptr, wake));
  // Wants both: holds neither while 1 and 2 run.
  EXPECT_FALSE(l.Acquire(1, 3, {2, 1, 2}, nullptr, wake));
  // Arrives later on key 1: behind 3 (FIFO), even though 3 is not granted.
  EXPECT_FALSE(l.Acquire(0, 4, {1}, nullptr, wake));
  l.Release(1);
  EXPECT_TRUE(woken.empty());  // 3 still waits for key 2; 4 is behind 3
  l.Release(2);
  EXPECT_EQ(woken, std::vector<uint64_t>{3});
  // 3 leaves (its client went away): 4 runs.
  l.Release(3);
  EXPECT_EQ(woken, (std::vector<uint64_t>{3, 4}));
  // A waiter withdrawn before its grant is never woken.
  EXPECT_FALSE(l.Acquire(1, 5, {1}, nullptr, wake));
  l.Release(5);
  l.Release(4);
  EXPECT_EQ(woken.size(), 2u);
  EXPECT_EQ(l.counters().held, 0);
  EXPECT_EQ(l.counters().waiting, 0);
  l.Release(99);  // unknown: no-op
  EXPECT_TRUE(l.Acquire(0, 6, {}, nullptr, wake));  // no keys: nothing recorded
  EXPECT_FALSE(l.Holds(6));
}

// Four threads run `take(w, i, ticket)` (which returns the keys it holds
// once granted) `rounds` times each, occupy those keys, release: at most
// one holder of a key at a time, and every request is eventually granted.
template <typename Take>
void Hammer(KeyLocks& l, int rounds, Take take) {
  std::atomic<int> on_key[3] = {{0}, {0}, {0}};
  std::atomic<bool> overlap{false};
  std::atomic<int> done{0};
  auto worker = [&](int w) {
    for (int i = 0; i < rounds; ++i) {
      const uint64_t ticket = (uint64_t(w) << 32) | uint64_t(i);
      const std::vector<uint64_t> keys = take(w, i, ticket);
      for (uint64_t k : keys) {
        if (on_key[k].fetch_add(1) != 0) overlap.store(true);
      }
      for (uint64_t k : keys) on_key[k].fetch_sub(1);
      l.Release(ticket);
      done++;
    }
  };
  std::vector<std::thread> ts;
  for (int w = 0; w < 4; ++w) ts.emplace_back(worker, w);
  for (auto& t : ts) t.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_EQ(done.load(), 4 * rounds);
  EXPECT_EQ(l.counters().held, 0);
  EXPECT_EQ(l.counters().waiting, 0);
}

// Threads hammer two overlapping keys.
TEST(KeyLocksTest, ThreadsNeverShareAKey) {
  KeyLocks l;
  Hammer(l, 2000, [&l](int w, int i, uint64_t ticket) {
    std::vector<uint64_t> keys = (i % 3 == 0) ? std::vector<uint64_t>{0, 1} : std::vector<uint64_t>{uint64_t(i % 2)};
    std::atomic<bool> granted{false};
    if (l.Acquire(w, ticket, keys, nullptr, [&granted](uint64_t) { granted.store(true); })) granted.store(true);
    while (!granted.load()) std::this_thread::yield();
    return keys;
  });
}

TEST(KeyLocksTest, TakeIfFreeSeesHoldersAndReleasesSinceTheSnapshot) {
  KeyLocks l;
  auto none = [](uint64_t) {};
  const uint64_t snap = l.Epoch();
  EXPECT_EQ(l.TakeIfFree(0, 1, 5, snap), KeyLocks::Take::kTaken);  // no request yet: made, granted
  EXPECT_TRUE(l.Holds(1));
  EXPECT_EQ(l.TakeIfFree(0, 1, 5, snap), KeyLocks::Take::kTaken);  // already its own
  EXPECT_EQ(l.TakeIfFree(0, 2, 5, snap), KeyLocks::Take::kHeld);   // 1 holds it
  EXPECT_FALSE(l.Has(2, 5));
  // 1 releases after 2's snapshot: free, but changed since.
  l.Release(1);
  EXPECT_GT(l.Epoch(), snap);
  EXPECT_EQ(l.TakeIfFree(0, 2, 5, snap), KeyLocks::Take::kReleased);
  EXPECT_FALSE(l.Holds(2));
  // A snapshot after that release may take it; another key still free.
  EXPECT_EQ(l.TakeIfFree(0, 2, 5, l.Epoch()), KeyLocks::Take::kTaken);
  EXPECT_EQ(l.TakeIfFree(0, 2, 6, snap), KeyLocks::Take::kTaken);
  EXPECT_TRUE(l.Has(2, 5) && l.Has(2, 6));
  // A waiting request takes nothing more.
  EXPECT_FALSE(l.Acquire(0, 3, {6}, nullptr, none));
  EXPECT_EQ(l.TakeIfFree(0, 3, 7, l.Epoch()), KeyLocks::Take::kHeld);
  l.Release(2);
  l.Release(3);
  EXPECT_EQ(l.counters().held, 0);
  EXPECT_EQ(l.counters().waiting, 0);
}

TEST(KeyLocksTest, WithdrawnWaiterStampsNothingItNeverHeld) {
  KeyLocks l;
  auto none = [](uint64_t) {};
  EXPECT_TRUE(l.Acquire(0, 1, {1}, nullptr, none));
  EXPECT_FALSE(l.Acquire(0, 2, {1, 2}, nullptr, none));  // at the front of key 2's queue only
  const uint64_t snap = l.Epoch();
  l.Release(2);  // its client left while waiting
  EXPECT_EQ(l.TakeIfFree(0, 3, 1, snap), KeyLocks::Take::kHeld);
  l.Release(1);
  EXPECT_EQ(l.TakeIfFree(0, 3, 1, snap), KeyLocks::Take::kReleased);  // 1 held it
}

TEST(KeyLocksTest, AcquireMoreKeepsItsKeysWhileItWaits) {
  KeyLocks l;
  std::vector<uint64_t> woken;
  auto wake = [&](uint64_t t) { woken.push_back(t); };
  EXPECT_TRUE(l.Acquire(0, 1, {1}, nullptr, wake));
  EXPECT_TRUE(l.Acquire(0, 2, {2}, nullptr, wake));
  // 1 needs key 2 too: it waits for 2, keeping key 1.
  EXPECT_FALSE(l.AcquireMore(0, 1, {2}, wake));
  EXPECT_TRUE(l.Has(1, 1));
  EXPECT_FALSE(l.Acquire(0, 3, {1}, nullptr, wake));  // behind 1 on key 1
  l.Release(2);
  EXPECT_EQ(woken, std::vector<uint64_t>{1});
  EXPECT_TRUE(l.Holds(1));
  EXPECT_FALSE(l.Holds(3));
  l.Release(1);
  EXPECT_EQ(woken, (std::vector<uint64_t>{1, 3}));
  l.Release(3);
  EXPECT_EQ(l.requeues(), 0);
}

TEST(KeyLocksTest, AcquireMoreThatWouldDeadlockRequeuesForTheUnion) {
  KeyLocks l;
  std::vector<uint64_t> woken;
  auto wake = [&](uint64_t t) { woken.push_back(t); };
  EXPECT_TRUE(l.Acquire(0, 1, {1}, nullptr, wake));
  EXPECT_TRUE(l.Acquire(1, 2, {2}, nullptr, wake));
  bool requeued = true;
  EXPECT_FALSE(l.AcquireMore(0, 1, {2}, wake, &requeued));  // 1 waits for 2
  EXPECT_FALSE(requeued);
  EXPECT_EQ(l.requeues(), 0);
  // 2 now wants key 1: waiting there closes 2 -> 1 -> 2. 2 gives up key 2
  // (1 gets it, holding both) and queues for {1, 2} behind 1.
  EXPECT_FALSE(l.AcquireMore(1, 2, {1}, wake, &requeued));
  EXPECT_TRUE(requeued);
  EXPECT_EQ(l.requeues(), 1);
  EXPECT_EQ(woken, std::vector<uint64_t>{1});
  EXPECT_TRUE(l.Holds(1));
  EXPECT_FALSE(l.Has(1, 3));
  l.Release(1);
  EXPECT_EQ(woken, (std::vector<uint64_t>{1, 2}));
  EXPECT_TRUE(l.Holds(2));
  l.Release(2);
  EXPECT_EQ(l.counters().held, 0);
  EXPECT_EQ(l.counters().waiting, 0);
}

TEST(KeyLocksTest, AcquireMoreUnderThreadsNeverOverlapsNorHangs) {
  // Each thread: take key a, then (like a restart) ask for key b too;
  // cycles are broken by requeueing, so every thread finishes.
  KeyLocks l;
  Hammer(l, 1000, [&l](int w, int i, uint64_t ticket) {
    const uint64_t a = (w + i) % 3, b = (w + 2 * i + 1) % 3;
    std::atomic<bool> granted{false};
    auto wake = [&granted](uint64_t) { granted.store(true); };
    if (l.Acquire(w, ticket, {a}, nullptr, wake)) granted.store(true);
    while (!granted.load()) std::this_thread::yield();
    granted.store(false);
    if (l.AcquireMore(w, ticket, {b}, wake)) granted.store(true);
    while (!granted.load()) std::this_thread::yield();
    return a == b ? std::vector<uint64_t>{a} : std::vector<uint64_t>{a, b};
  });
}

}  // namespace
}  // namespace proxy
}  // namespace corral
