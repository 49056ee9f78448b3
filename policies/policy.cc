#include "policies/policy.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace corral {

const char* RefNamingName(RefNaming n) {
  return n == RefNaming::kLiteral ? "literal" : "canonical";
}
const char* RefGroupingName(RefGrouping g) { return g == RefGrouping::kSingle ? "single" : "all"; }

std::string PolicyName(const Policy& p) {
  switch (p.kind) {
    case PolicyKind::kOriginal: return "original";
    case PolicyKind::kHardPartition: return "hard-partition";
    case PolicyKind::kLearned: break;
  }
  return absl::StrCat(p.weighting == Weighting::kCount ? "count" : "fraction", "-",
                      p.aggregation == Aggregation::kSum ? "sum" : "max", "-",
                      RefNamingName(p.extraction.naming), "-",
                      RefGroupingName(p.extraction.grouping));
}

absl::StatusOr<Policy> ParsePolicy(absl::string_view name) {
  std::string n = absl::AsciiStrToLower(absl::StrReplaceAll(name, {{"_", "-"}}));
  Policy p;
  if (n == "original" || n == "random") {
    p.kind = PolicyKind::kOriginal;
    return p;
  }
  if (n == "hard-partition" || n == "hard") {
    p.kind = PolicyKind::kHardPartition;
    return p;
  }
  std::vector<std::string> w = absl::StrSplit(n, '-');
  const std::string kHelp =
      "expected 'original', 'hard-partition' or <count|fraction>-<sum|max>-"
      "<literal|canonical>-<single|all>, e.g. count-max-canonical-single";
  if (w.size() != 4) {
    return absl::InvalidArgumentError(absl::StrCat("bad policy '", name, "': ", kHelp));
  }
  auto bad = [&](const std::string& word) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad policy '", name, "': unknown word '", word, "'; ", kHelp));
  };
  if (w[0] == "count") p.weighting = Weighting::kCount;
  else if (w[0] == "fraction") p.weighting = Weighting::kFraction;
  else return bad(w[0]);
  if (w[1] == "sum") p.aggregation = Aggregation::kSum;
  else if (w[1] == "max") p.aggregation = Aggregation::kMax;
  else return bad(w[1]);
  if (w[2] == "literal") p.extraction.naming = RefNaming::kLiteral;
  else if (w[2] == "canonical") p.extraction.naming = RefNaming::kCanonical;
  else return bad(w[2]);
  if (w[3] == "single") p.extraction.grouping = RefGrouping::kSingle;
  else if (w[3] == "all") p.extraction.grouping = RefGrouping::kAll;
  else return bad(w[3]);
  return p;
}

std::vector<Policy> AllLearnedPolicies() {
  std::vector<Policy> out;
  for (RefNaming n : {RefNaming::kLiteral, RefNaming::kCanonical})
    for (RefGrouping g : {RefGrouping::kSingle, RefGrouping::kAll})
      for (Weighting w : {Weighting::kCount, Weighting::kFraction})
        for (Aggregation a : {Aggregation::kSum, Aggregation::kMax}) {
          Policy p;
          p.weighting = w;
          p.aggregation = a;
          p.extraction = {n, g};
          out.push_back(p);
        }
  return out;
}

std::vector<Policy> BaselinePolicies() {
  std::vector<Policy> out;
  for (PolicyKind k : {PolicyKind::kOriginal, PolicyKind::kHardPartition}) {
    Policy p;
    p.kind = k;
    out.push_back(p);
  }
  return out;
}

}  // namespace corral
