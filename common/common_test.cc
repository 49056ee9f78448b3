#include "common/ids.h"

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"

namespace corral {
namespace {

TEST(HashTest, StableAcrossCallsAndDistinct) {
  EXPECT_EQ(Fingerprint64("w_id=5"), Fingerprint64("w_id=5"));
  EXPECT_NE(Fingerprint64("w_id=5"), Fingerprint64("w_id=6"));
  EXPECT_NE(Fingerprint64(""), Fingerprint64("a"));
}

TEST(HashTest, NoCollisionsOnSmallSpace) {
  absl::flat_hash_set<uint64_t> seen;
  for (int i = 0; i < 200000; ++i) {
    ASSERT_TRUE(seen.insert(Fingerprint64("k=" + std::to_string(i))).second) << i;
  }
}

TEST(IdsTest, RefIdOfIsFingerprint) {
  EXPECT_EQ(RefId::Of("i_id=2").value(), Fingerprint64("i_id=2"));
  EXPECT_TRUE(RefId::Of("x=1") == RefId::Of("x=1"));
  EXPECT_TRUE(QueueId(1) < QueueId(2));
}

}  // namespace
}  // namespace corral
