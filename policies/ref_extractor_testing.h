// Helpers shared by the reference extractor's tests (ref_extractor_test.cc,
// ref_extractor_features_test.cc, ref_extractor_regression_test.cc,
// ref_extractor_cache_test.cc): the four extraction policies, a schema from
// DDL text or from schemas/tpcc.sql, and Refs(), which extracts one statement
// through every path (cache cold, cache hit, prepared) and checks they agree.
//
//   RefExtractor ex(testing_refs::Tpcc());
//   EXPECT_EQ(testing_refs::Refs(ex, "SELECT w_tax FROM warehouse WHERE w_id = 1", testing_refs::kCanSingle),
//             (testing_refs::Texts{"w_id=1"}));
//
// Thread safety: the functions keep no state; call them from test bodies
// (they report through gtest's EXPECT_*, which is thread-safe on POSIX).
#ifndef CORRAL_POLICIES_REF_EXTRACTOR_TESTING_H_
#define CORRAL_POLICIES_REF_EXTRACTOR_TESTING_H_

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "policies/ref_extractor.h"
#include "policies/schema.h"

namespace corral {
namespace testing_refs {

using Texts = std::vector<std::string>;
constexpr ExtractionPolicy kLitSingle{RefNaming::kLiteral, RefGrouping::kSingle};
constexpr ExtractionPolicy kLitAll{RefNaming::kLiteral, RefGrouping::kAll};
constexpr ExtractionPolicy kCanSingle{RefNaming::kCanonical, RefGrouping::kSingle};
constexpr ExtractionPolicy kCanAll{RefNaming::kCanonical, RefGrouping::kAll};

inline std::shared_ptr<const Schema> SchemaFrom(const std::string& ddl, const std::string& mapping = "") {
  SchemaBuilder b;
  absl::Status st = b.AddDdl(ddl);
  EXPECT_TRUE(st.ok()) << st;
  if (!mapping.empty()) EXPECT_TRUE(b.AddMappingText(mapping).ok());
  absl::StatusOr<std::shared_ptr<const Schema>> s = b.Build();
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

inline std::shared_ptr<const Schema> Tpcc() {
  std::ifstream in("schemas/tpcc.sql");
  std::stringstream ss;
  ss << in.rdbuf();
  return SchemaFrom(ss.str());
}

// Extracts through the cache (twice: cold then hit) and checks that the ids
// are the fingerprints of the texts and that both calls agree.
inline Texts Refs(RefExtractor& ex, const std::string& sql, ExtractionPolicy p, std::vector<ParamValue> params = {}) {
  Texts first;
  for (int round = 0; round < 2; ++round) {
    RefVec ids;
    Texts texts;
    absl::Status st = ex.Extract(sql, p, params, &ids, &texts);
    EXPECT_TRUE(st.ok()) << sql << ": " << st;
    EXPECT_EQ(ids.size(), texts.size());
    for (size_t i = 0; i < ids.size() && i < texts.size(); ++i) EXPECT_EQ(ids[i], RefId::Of(texts[i])) << texts[i];
    if (round == 0) {
      first = texts;
    } else {
      EXPECT_EQ(texts, first) << "cache hit differs for " << sql;
    }
  }
  // The prepared path agrees, and a multiplicity vector stays parallel.
  auto prep = ex.Prepare(sql);
  EXPECT_TRUE(prep.ok()) << sql << ": " << prep.status();
  if (prep.ok()) {
    RefVec ids;
    RefMult mult;
    Texts texts;
    EXPECT_TRUE(ex.ExtractPrepared(**prep, p, params, &ids, &mult, &texts).ok()) << sql;
    EXPECT_EQ(texts, first) << "prepared path differs for " << sql;
    EXPECT_EQ(mult.size(), ids.size()) << sql;
    for (uint16_t m : mult) EXPECT_GE(m, 1) << sql;
  }
  return first;
}

}  // namespace testing_refs
}  // namespace corral

#endif  // CORRAL_POLICIES_REF_EXTRACTOR_TESTING_H_
