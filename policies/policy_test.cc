#include "policies/policy.h"

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"

namespace corral {
namespace {

TEST(PolicyTest, RoundTripsAllSixteen) {
  absl::flat_hash_set<std::string> names;
  for (const Policy& p : AllLearnedPolicies()) {
    std::string n = PolicyName(p);
    names.insert(n);
    auto parsed = ParsePolicy(n);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_TRUE(*parsed == p) << n;
  }
  EXPECT_EQ(names.size(), 16u);
}

TEST(PolicyTest, Baselines) {
  EXPECT_EQ(ParsePolicy("original")->kind, PolicyKind::kOriginal);
  EXPECT_EQ(ParsePolicy("Hard_Partition")->kind, PolicyKind::kHardPartition);
  EXPECT_EQ(PolicyName(*ParsePolicy("hard-partition")), "hard-partition");
}

// BaselinePolicies() is every kind but kLearned, each once, and round-trips.
TEST(PolicyTest, BaselinePoliciesAreTheNonLearnedKinds) {
  std::vector<std::string> names;
  for (const Policy& p : BaselinePolicies()) {
    EXPECT_NE(p.kind, PolicyKind::kLearned);
    names.push_back(PolicyName(p));
    auto parsed = ParsePolicy(names.back());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_TRUE(*parsed == p) << names.back();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"original", "hard-partition"}));
}

TEST(PolicyTest, PaperBestPolicyParses) {
  auto p = ParsePolicy("COUNT-max-canonical-single");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->weighting, Weighting::kCount);
  EXPECT_EQ(p->aggregation, Aggregation::kMax);
  EXPECT_EQ(p->extraction.naming, RefNaming::kCanonical);
  EXPECT_EQ(p->extraction.grouping, RefGrouping::kSingle);
}

TEST(PolicyTest, BadNamesNameTheWord) {
  auto p = ParsePolicy("count-avg-canonical-single");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("'avg'"), std::string::npos);
  EXPECT_FALSE(ParsePolicy("count-max").ok());
  EXPECT_FALSE(ParsePolicy("").ok());
}

}  // namespace
}  // namespace corral
