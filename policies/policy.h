// Scheduling policy: the four dimensions of the paper's 2^4 design, plus the
// two baselines, and their CLI spelling.
//
// A learned policy is {Literal|Canonical} x {Single|All} (how references are
// extracted) x {Count|Fraction} (the weight of a reference: aborts, or
// aborts/(aborts+commits)) x {Sum|Max} (how a queue's score combines its
// references). The CLI spells one as the four words joined by '-' in the
// order weight-aggregation-naming-grouping, e.g. "count-max-canonical-single"
// (the paper's best TPC-C policy); the baselines are "original" (uniform
// random queue) and "hard-partition" (partition key mod queues).
//
//   absl::StatusOr<Policy> p = ParsePolicy("fraction-sum-literal-all");
//   std::string s = PolicyName(*p);  // "fraction-sum-literal-all"
//   for (const Policy& q : AllLearnedPolicies()) ...  // the sixteen
//   for (const Policy& b : BaselinePolicies()) ...    // original, hard-partition
#ifndef CORRAL_POLICIES_POLICY_H_
#define CORRAL_POLICIES_POLICY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace corral {

enum class RefNaming { kLiteral, kCanonical };   // column as written / its domain
enum class RefGrouping { kSingle, kAll };        // one ref per predicate / per conjunction
enum class Weighting { kCount, kFraction };      // aborts / aborts/(aborts+commits)
enum class Aggregation { kSum, kMax };           // sum over refs / best single ref
enum class PolicyKind { kLearned, kOriginal, kHardPartition };

// How references are extracted from SQL (the front-end half of a policy).
struct ExtractionPolicy {
  RefNaming naming = RefNaming::kCanonical;
  RefGrouping grouping = RefGrouping::kSingle;
  friend bool operator==(const ExtractionPolicy& a, const ExtractionPolicy& b) {
    return a.naming == b.naming && a.grouping == b.grouping;
  }
};

struct Policy {
  PolicyKind kind = PolicyKind::kLearned;
  Weighting weighting = Weighting::kCount;
  Aggregation aggregation = Aggregation::kMax;
  ExtractionPolicy extraction;

  friend bool operator==(const Policy& a, const Policy& b) {
    return a.kind == b.kind && (a.kind != PolicyKind::kLearned ||
                                (a.weighting == b.weighting && a.aggregation == b.aggregation &&
                                 a.extraction == b.extraction));
  }
  friend bool operator!=(const Policy& a, const Policy& b) { return !(a == b); }
};

// "count-max-canonical-single", "original", "hard-partition". Case-insensitive;
// '_' accepted for '-'. The error names the bad word and lists the choices.
absl::StatusOr<Policy> ParsePolicy(absl::string_view name);
std::string PolicyName(const Policy& p);
// The sixteen learned policies in a fixed order (the 2^4 design's run order).
std::vector<Policy> AllLearnedPolicies();
// The baselines (every kind but kLearned): original, hard-partition.
std::vector<Policy> BaselinePolicies();

const char* RefNamingName(RefNaming n);      // "literal" / "canonical"
const char* RefGroupingName(RefGrouping g);  // "single" / "all"

}  // namespace corral

#endif  // CORRAL_POLICIES_POLICY_H_
