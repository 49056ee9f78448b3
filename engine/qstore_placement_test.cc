#include "engine/qstore_placement.h"

#include <set>
#include <vector>

#include "engine/schema.h"
#include "gtest/gtest.h"

namespace corral {
namespace engine {
namespace {

TEST(QueuePlacement, ParsesTheThreeNames) {
  EXPECT_EQ(*ParseQueuePlacement("hash"), PlacementKind::kHash);
  EXPECT_EQ(*ParseQueuePlacement(" Range "), PlacementKind::kRange);
  EXPECT_EQ(*ParseQueuePlacement("learned"), PlacementKind::kLearned);
  auto bad = ParseQueuePlacement("modulo");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("hash, range or learned"), absl::string_view::npos);
  EXPECT_STREQ(QueuePlacementName(PlacementKind::kLearned), "learned");
}

TEST(QueuePlacement, HashIsStableAndInRange) {
  HashPlacement h(7);
  std::set<uint32_t> seen;
  for (uint64_t g = 0; g < 200; ++g) {
    const uint32_t q = h.QueueOf(3, g);
    EXPECT_LT(q, 7u);
    EXPECT_EQ(q, h.QueueOf(3, g));
    seen.insert(q);
  }
  EXPECT_EQ(seen.size(), 7u);  // 200 granules reach every queue
}

// Hand-computed: the granule of rank k (of n) goes to floor(k * queues / n).
TEST(QueuePlacement, RangeCutsEachTableIntoEqualContiguousRanges) {
  RangePlacement r(2, {{40, 10, 30, 20, 20}, {}, {10, 20, 30}});
  // Table 0: 10, 20 | 30, 40.
  EXPECT_EQ(r.QueueOf(0, 10), 0u);
  EXPECT_EQ(r.QueueOf(0, 20), 0u);
  EXPECT_EQ(r.QueueOf(0, 30), 1u);
  EXPECT_EQ(r.QueueOf(0, 40), 1u);
  // Outside the loaded granules: the nearest range.
  EXPECT_EQ(r.QueueOf(0, 5), 0u);
  EXPECT_EQ(r.QueueOf(0, 25), 0u);
  EXPECT_EQ(r.QueueOf(0, 35), 1u);
  EXPECT_EQ(r.QueueOf(0, 1000), 1u);
  // Table 2 (3 granules, 2 queues): ranks 0, 1, 2 -> 0, 0, 1.
  EXPECT_EQ(r.QueueOf(2, 10), 0u);
  EXPECT_EQ(r.QueueOf(2, 20), 0u);
  EXPECT_EQ(r.QueueOf(2, 30), 1u);
  // Table 1 (empty at load) and table 9 (unknown): hash.
  for (uint64_t g : {1, 2, 3, 77}) {
    EXPECT_EQ(r.QueueOf(1, g), HashQueue(1, g, 2));
    EXPECT_EQ(r.QueueOf(9, g), HashQueue(9, g, 2));
  }
  // More queues than granules: ranks 0, 1, 2 of 3 over 8 queues -> 0, 2, 5.
  RangePlacement wide(8, {{10, 20, 30}});
  EXPECT_EQ(wide.QueueOf(0, 10), 0u);
  EXPECT_EQ(wide.QueueOf(0, 20), 2u);
  EXPECT_EQ(wide.QueueOf(0, 30), 5u);
}

// TPC-C-style keys (warehouse first): with as many queues as warehouses,
// every table's rows of one warehouse land on that warehouse's queue; with
// more queues, on one contiguous block of queues.
TEST(QueuePlacement, RangeKeepsAWarehousesRowsTogether) {
  std::vector<uint64_t> warehouse, district, stock;
  for (int w = 1; w <= 4; ++w) {
    warehouse.push_back(w);
    for (int d = 1; d <= 10; ++d) district.push_back(KeyPacker().Add(w, 16).Add(d, 8).key());
    for (int i = 1; i <= 100; ++i) stock.push_back(KeyPacker().Add(w, 16).Add(i, 24).key());
  }
  RangePlacement four(4, {warehouse, district, stock});
  RangePlacement many(64, {warehouse, district, stock});
  for (int w = 1; w <= 4; ++w) {
    EXPECT_EQ(four.QueueOf(0, w), static_cast<uint32_t>(w - 1));
    for (int d = 1; d <= 10; ++d) {
      EXPECT_EQ(four.QueueOf(1, KeyPacker().Add(w, 16).Add(d, 8).key()), static_cast<uint32_t>(w - 1));
      const uint32_t q = many.QueueOf(1, KeyPacker().Add(w, 16).Add(d, 8).key());
      EXPECT_GE(q, static_cast<uint32_t>(16 * (w - 1)));
      EXPECT_LT(q, static_cast<uint32_t>(16 * w));
    }
    for (int i = 1; i <= 100; ++i) {
      EXPECT_EQ(four.QueueOf(2, KeyPacker().Add(w, 16).Add(i, 24).key()), static_cast<uint32_t>(w - 1));
      const uint32_t q = many.QueueOf(2, KeyPacker().Add(w, 16).Add(i, 24).key());
      EXPECT_GE(q, static_cast<uint32_t>(16 * (w - 1)));
      EXPECT_LT(q, static_cast<uint32_t>(16 * w));
    }
  }
}

GranuleAccess W(int table, uint64_t g) { return {table, g, true}; }
GranuleAccess R(int table, uint64_t g) { return {table, g, false}; }

// Batches where granules 1 and 2 of table 0 are written together by two
// transactions at once (they conflict), as are granules 3 and 4 of table 1;
// granule 5 is read by both (reads commute), and every transaction also
// writes a granule of its own.
std::vector<std::vector<GranuleAccess>> ConflictingBatch(uint64_t* own) {
  std::vector<std::vector<GranuleAccess>> b;
  b.push_back({W(0, 1), W(0, 2), R(0, 5), W(2, (*own)++)});
  b.push_back({W(0, 1), W(0, 2), R(0, 5), W(2, (*own)++)});
  b.push_back({W(1, 3), W(1, 4), W(2, (*own)++)});
  b.push_back({R(1, 3), W(1, 4), W(2, (*own)++)});
  return b;
}

TEST(QueuePlacement, LearnedPutsConflictingGranulesOnOneQueue) {
  PlacementLearner l(/*queues=*/64, /*learn_txns=*/40);
  uint64_t own = 1000;
  for (int i = 0; i < 9; ++i) l.ObserveBatch(ConflictingBatch(&own));
  EXPECT_FALSE(l.done());
  EXPECT_EQ(l.observed(), 36);
  l.ObserveBatch(ConflictingBatch(&own));
  EXPECT_TRUE(l.done());
  EXPECT_EQ(l.observed(), 40);
  l.ObserveBatch(ConflictingBatch(&own));  // past the window: ignored
  EXPECT_EQ(l.observed(), 40);

  // The History holds the conflict evidence: 20 aborts on granule 1, none on 5.
  history::History::Counts c;
  ASSERT_TRUE(l.history().Get(PlacementLearner::RefOf(0, 1), &c));
  EXPECT_EQ(c.aborts, 20u);
  EXPECT_EQ(c.commits, 0u);
  ASSERT_TRUE(l.history().Get(PlacementLearner::RefOf(0, 5), &c));
  EXPECT_EQ(c.aborts, 0u);
  EXPECT_EQ(c.commits, 20u);

  std::unique_ptr<LearnedPlacement> p = l.Build();
  EXPECT_EQ(p->kind(), PlacementKind::kLearned);
  EXPECT_EQ(p->hot_granules(), 4u);
  EXPECT_EQ(p->clusters(), 2);
  EXPECT_EQ(p->QueueOf(0, 1), p->QueueOf(0, 2));
  EXPECT_EQ(p->QueueOf(1, 3), p->QueueOf(1, 4));
  EXPECT_NE(p->QueueOf(0, 1), p->QueueOf(1, 3));  // two clusters, two queues
  // Hash placement would split at least one pair (checked, so the test means something).
  EXPECT_TRUE(HashQueue(0, 1, 64) != HashQueue(0, 2, 64) || HashQueue(1, 3, 64) != HashQueue(1, 4, 64));
  // Not hot (only read, written once, never seen): hash.
  for (auto [t, g] : std::vector<std::pair<int, uint64_t>>{{0, 5}, {2, 1000}, {2, 1001}, {7, 42}}) {
    EXPECT_EQ(p->QueueOf(t, g), HashQueue(t, g, 64)) << t << "/" << g;
  }
}

// Hot granules that meet only now and then (each pair in half of their
// accesses) are not clustered: each gets a queue of its own, so no two of
// them share one (hash placement might put two together).
TEST(QueuePlacement, LearnedKeepsHotGranulesAccessedApartOnSeparateQueues) {
  PlacementLearner l(/*queues=*/16, /*learn_txns=*/1000);
  for (int round = 0; round < 10; ++round) {
    std::vector<std::vector<GranuleAccess>> b;
    for (uint64_t g = 0; g < 8; ++g) {
      b.push_back({W(0, g), W(0, g + 1)});  // pairs (g, g+1) chain all 9 granules
    }
    l.ObserveBatch(b);
  }
  std::unique_ptr<LearnedPlacement> p = l.Build();
  // Granules 0 and 8 are in one transaction each (no conflict); 1..7 carry
  // 20 accesses each, 10 with each neighbour: below 3/4, no pair clusters.
  EXPECT_EQ(p->hot_granules(), 7u);
  EXPECT_EQ(p->clusters(), 7);
  std::set<uint32_t> queues;
  for (uint64_t g = 1; g <= 7; ++g) queues.insert(p->QueueOf(0, g));
  EXPECT_EQ(queues.size(), 7u);
}

}  // namespace
}  // namespace engine
}  // namespace corral
