#include "adapters/proxy/retry_memory.h"

#include "gtest/gtest.h"

namespace corral {
namespace proxy {
namespace {

RefVec Refs(std::initializer_list<uint64_t> ids) {
  RefVec v;
  for (uint64_t i : ids) v.push_back(RefId(i));
  return v;
}

TEST(RetryStatementKeyTest, NormalizesTextAndKeepsParameters) {
  EXPECT_EQ(RetryStatementKey("  SELECT 1 ;\n"), "SELECT 1");
  EXPECT_EQ(RetryStatementKey("SELECT $1", "p1"), std::string("SELECT $1\0p1", 12));
  EXPECT_NE(RetryStatementKey("SELECT $1", "p1"), RetryStatementKey("SELECT $1", "p2"));
}

TEST(RetryMemoryTest, TakesTheEntryOnlyForTheSameClientAndStatement) {
  RetryMemory m(8);
  m.Remember(1, "k", Refs({5, 7}));
  RefVec got;
  EXPECT_FALSE(m.Take(2, "k", &got));      // another client
  EXPECT_FALSE(m.Take(1, "other", &got));  // another statement: the entry stays
  EXPECT_EQ(m.size(), 1u);
  ASSERT_TRUE(m.Take(1, "k", &got));
  EXPECT_EQ(got, Refs({5, 7}));
  EXPECT_EQ(m.size(), 0u);
  EXPECT_FALSE(m.Take(1, "k", &got));  // taken once
}

TEST(RetryMemoryTest, NewerFailureOfAClientReplacesItsOlder) {
  RetryMemory m(8);
  m.Remember(1, "a", Refs({1}));
  m.Remember(1, "b", Refs({2}));
  EXPECT_EQ(m.size(), 1u);
  RefVec got;
  EXPECT_FALSE(m.Take(1, "a", &got));
  ASSERT_TRUE(m.Take(1, "b", &got));
  EXPECT_EQ(got, Refs({2}));
}

TEST(RetryMemoryTest, CapacityIsHonoredOldestEvicted) {
  RetryMemory m(2);
  m.Remember(1, "a", Refs({1}));
  m.Remember(2, "b", Refs({2}));
  m.Remember(3, "c", Refs({3}));
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.evictions(), 1);
  RefVec got;
  EXPECT_FALSE(m.Take(1, "a", &got));  // the oldest went
  EXPECT_TRUE(m.Take(2, "b", &got));
  EXPECT_TRUE(m.Take(3, "c", &got));
  // References per entry are bounded too.
  RefVec many;
  for (uint64_t i = 0; i < 3 * RetryMemory::kMaxRefs; ++i) many.push_back(RefId(i));
  m.Remember(4, "d", many);
  ASSERT_TRUE(m.Take(4, "d", &got));
  EXPECT_EQ(got.size(), RetryMemory::kMaxRefs);
  RetryMemory off(0);
  off.Remember(1, "a", Refs({1}));
  EXPECT_EQ(off.size(), 0u);
}

TEST(RetryMemoryTest, ForgetDropsTheClientsEntry) {
  RetryMemory m(4);
  m.Remember(1, "a", Refs({1}));
  m.Forget(1);
  m.Forget(9);  // none: no effect
  EXPECT_EQ(m.size(), 0u);
}

TEST(PickHolderTest, TheEarliestReferenceThatARunningTransactionHolds) {
  const RefVec a = Refs({3, 7}), b = Refs({12}), c = Refs({5});
  // Backend 1 idle (null).
  const std::vector<const RefVec*> running = {&a, nullptr, &b, &c};
  EXPECT_EQ(PickHolder(Refs({7, 12}), running), 0);
  EXPECT_EQ(PickHolder(Refs({12, 7}), running), 2);
  EXPECT_EQ(PickHolder(Refs({5}), running), 3);
  EXPECT_EQ(PickHolder(Refs({99}), running), -1);
  EXPECT_EQ(PickHolder(RefVec(), running), -1);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
