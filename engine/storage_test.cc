// Tests of the storage layer: the hash index (including growth under
// concurrent inserts, erases and lookups) and ordered-index range collection.
#include "engine/storage.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace corral {
namespace engine {
namespace {

TEST(HashIndexTest, InsertFindEraseAndDuplicates) {
  RecordArena arena;
  HashIndex h(16);
  std::vector<Record*> recs;
  for (uint64_t k = 0; k < 5000; ++k) {  // forces several doublings
    Record* r = arena.Allocate(8);
    r->key = k * 7919;
    ASSERT_EQ(h.Insert(r), nullptr);
    recs.push_back(r);
  }
  Record* dup = arena.Allocate(8);
  dup->key = 7919;
  EXPECT_EQ(h.Insert(dup), recs[1]);
  for (uint64_t k = 0; k < 5000; ++k) EXPECT_EQ(h.Find(k * 7919), recs[k]);
  EXPECT_EQ(h.Find(5), nullptr);
  for (uint64_t k = 0; k < 5000; k += 2) h.Erase(recs[k]);
  h.Erase(dup);  // not linked: no effect
  for (uint64_t k = 0; k < 5000; ++k) {
    EXPECT_EQ(h.Find(k * 7919), k % 2 ? recs[k] : nullptr);
  }
  size_t n = 0;
  h.ForEach([&n](Record*) { ++n; });
  EXPECT_EQ(n, 2500u);
}

// Writers insert fresh keys (the array grows many times) and erase some,
// while readers keep finding a set of stable keys that are never erased.
TEST(HashIndexTest, ConcurrentGrowthNeverHidesStableKeys) {
  HashIndex h(16);
  RecordArena stable_arena;
  constexpr uint64_t kStable = 2000;
  std::vector<Record*> stable;
  for (uint64_t k = 0; k < kStable; ++k) {
    Record* r = stable_arena.Allocate(8);
    r->key = k;
    ASSERT_EQ(h.Insert(r), nullptr);
    stable.push_back(r);
  }
  std::atomic<bool> stop{false};
  std::atomic<int> misses{0};
  std::vector<std::thread> threads;
  std::vector<RecordArena> arenas(2);
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      for (uint64_t i = 0; i < 40000; ++i) {
        Record* r = arenas[w].Allocate(8);
        r->key = (uint64_t{1} << 40) + i * 2 + w;
        if (h.Insert(r) != nullptr) misses.fetch_add(1000);  // duplicates impossible
        if (i % 3 == 0) h.Erase(r);
      }
    });
  }
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      uint64_t k = w;
      while (!stop.load(std::memory_order_relaxed)) {
        k = (k + 7) % kStable;
        if (h.Find(k) != stable[k]) misses.fetch_add(1);
      }
    });
  }
  threads[0].join();
  threads[1].join();
  stop.store(true);
  threads[2].join();
  threads[3].join();
  EXPECT_EQ(misses.load(), 0);
  size_t n = 0;
  h.ForEach([&n](Record*) { ++n; });
  EXPECT_EQ(n, kStable + 2 * (40000 - 40000 / 3 - 1));
}

TEST(OrderedIndexTest, CollectsRangesBothWaysWithCursor) {
  OrderedIndex idx("i", nullptr, nullptr);
  RecordArena arena;
  for (uint64_t k = 10; k < 20; ++k) idx.Insert(k, k, arena.Allocate(8));
  std::vector<OrderedIndex::Entry> out;
  idx.Collect(12, 15, false, false, {0, 0}, 100, &out);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out.front().key, 12u);
  EXPECT_EQ(out.back().key, 15u);
  out.clear();
  idx.Collect(12, 15, true, false, {0, 0}, 2, &out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].key, 15u);
  EXPECT_EQ(out[1].key, 14u);
  out.clear();
  idx.Collect(12, 15, true, true, {14, 14}, 10, &out);  // continue after 14
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].key, 13u);
  out.clear();
  idx.Collect(12, 15, false, true, {13, 13}, 10, &out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].key, 14u);
  out.clear();
  idx.Collect(30, 40, false, false, {0, 0}, 10, &out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(idx.size(), 10u);
}

}  // namespace
}  // namespace engine
}  // namespace corral
