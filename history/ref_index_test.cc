#include "history/ref_index.h"

#include <atomic>
#include <new>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace corral {
namespace history {
namespace {

struct Node : RefNode {
  std::atomic<uint64_t> value{0};
};

void InitNode(RefNode* n, uint64_t v) { new (&static_cast<Node*>(n)->value) std::atomic<uint64_t>(v); }

TEST(RefIndexTest, InsertFindEraseGrowAndZeroKey) {
  RefIndex idx(16, sizeof(Node));
  ReaderDomain::Guard g(idx.domain());
  for (uint64_t k = 0; k < 5000; ++k) {
    auto [n, fresh] = idx.FindOrInsert(k, [k](RefNode* x) { InitNode(x, k * 2); });
    ASSERT_TRUE(fresh);
    ASSERT_NE(n, nullptr);
  }
  EXPECT_EQ(idx.size(), 5000);
  EXPECT_GE(idx.bucket_count(), 4096u);  // doubled from 256
  for (uint64_t k = 0; k < 5000; ++k) {
    Node* n = static_cast<Node*>(idx.Find(k));
    ASSERT_NE(n, nullptr) << k;
    EXPECT_EQ(n->value.load(), k * 2);
    EXPECT_EQ(RefIndex::IdOf(n->key.load()), k);
  }
  EXPECT_EQ(idx.Find(5001), nullptr);
  EXPECT_FALSE(idx.FindOrInsert(7, [](RefNode*) { FAIL(); }).second);
  EXPECT_FALSE(idx.Erase(3, [](RefNode*) { return false; }));  // declined
  EXPECT_TRUE(idx.Erase(3, [](RefNode*) { return true; }));
  EXPECT_FALSE(idx.Erase(3, [](RefNode*) { return true; }));
  EXPECT_EQ(idx.Find(3), nullptr);
  EXPECT_EQ(idx.size(), 4999);
  int64_t seen = 0;
  idx.ForEach([&](RefNode*) { ++seen; });
  EXPECT_EQ(seen, 4999);
}

TEST(RefIndexTest, ClearShrinksAndReclaimReusesNodes) {
  RefIndex idx(256, sizeof(Node));
  const int64_t empty = idx.ApproxBytes();
  {
    ReaderDomain::Guard g(idx.domain());
    for (uint64_t k = 1; k <= 20000; ++k) idx.FindOrInsert(k, [](RefNode* x) { InitNode(x, 1); });
  }
  EXPECT_GT(idx.ApproxBytes(), empty * 10);
  idx.Clear();
  EXPECT_EQ(idx.size(), 0);
  EXPECT_EQ(idx.ApproxBytes(), empty);
  {
    ReaderDomain::Guard g(idx.domain());
    EXPECT_EQ(idx.Find(5), nullptr);
    idx.FindOrInsert(5, [](RefNode* x) { InitNode(x, 1); });
  }
  const int64_t one = idx.ApproxBytes();
  // Erase + Reclaim: the node is reused, no new memory.
  for (int i = 0; i < 1000; ++i) {
    {
      ReaderDomain::Guard g(idx.domain());
      ASSERT_TRUE(idx.Erase(5, [](RefNode*) { return true; }));
      idx.FindOrInsert(5, [](RefNode* x) { InitNode(x, 1); });
    }
    idx.Reclaim();
  }
  EXPECT_EQ(idx.ApproxBytes(), one);
}

// Readers never miss a key that stays present while other threads insert
// (growing the array), erase other keys and reclaim.
TEST(RefIndexTest, ConcurrentReadersNeverMissStableKeys) {
  RefIndex idx(256, sizeof(Node));
  {
    ReaderDomain::Guard g(idx.domain());
    for (uint64_t k = 1; k <= 100; ++k) idx.FindOrInsert(k, [k](RefNode* x) { InitNode(x, k); });
  }
  std::atomic<bool> stop{false};
  std::atomic<int64_t> misses{0}, wrong{0};
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r) {
    ts.emplace_back([&] {
      while (!stop.load()) {
        ReaderDomain::Guard g(idx.domain());
        for (uint64_t k = 1; k <= 100; ++k) {
          Node* n = static_cast<Node*>(idx.Find(k));
          if (n == nullptr) {
            misses.fetch_add(1);
          } else if (n->value.load(std::memory_order_relaxed) != k) {
            wrong.fetch_add(1);
          }
        }
      }
    });
  }
#if defined(__SANITIZE_THREAD__)
  constexpr uint64_t kEnd = 4000;  // several doublings (256 -> 4096 buckets)
#else
  constexpr uint64_t kEnd = 8000;
#endif
  ts.emplace_back([&] {
    for (uint64_t k = 1000; k < kEnd; ++k) {
      {
        ReaderDomain::Guard g(idx.domain());
        idx.FindOrInsert(k, [k](RefNode* x) { InitNode(x, k); });
        if (k % 3 == 0) idx.Erase(k - 500, [](RefNode*) { return true; });
      }
      if (k % 500 == 0) idx.Reclaim();
    }
    stop.store(true);
  });
  for (auto& t : ts) t.join();
  EXPECT_EQ(misses.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace history
}  // namespace corral
