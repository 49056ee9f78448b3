// libFuzzer target for the reference extractor (ref_extractor.h). Input:
// byte 0 picks the schema (bits 0-1: TPC-C, SmallBank, TATP, none) and the
// ExtractionPolicy (bit 2: Canonical, bit 3: All); then the SQL text up to
// the first NUL; then the bound parameters, each ended by NUL (a parameter
// that is exactly "\xff" is NULL). Every input goes through the uncached
// path (libpg_query every time), the cached path twice (a cold or shape hit,
// then a raw-text hit) and Prepare + ExtractPrepared, on one extractor per
// schema that lives for the whole run (so the shape caches fill, evict and
// are hit by later inputs). The target abort()s when
//  - the paths disagree: success or failure, the references, their texts
//    or their multiplicities;
//  - a reference's id is not RefId::Of(its text), an id repeats, or the
//    multiplicities are not all 1 after one statement;
//  - extracting the same statement again into the same RefVec appends
//    anything or does not count every reference up to 2.
// The schemas are read from schemas/ (run from the repository root, as
// scripts/fuzz.sh and the replay test do). Its corpus is replayed by
// //policies:ref_extractor_fuzzer_replay_test in the normal test run.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/ids.h"
#include "fuzz/check.h"
#include "policies/ref_extractor.h"
#include "policies/schema.h"

namespace corral {
namespace {

std::string Describe(absl::string_view sql, const std::vector<ParamValue>& params) {
  std::string out(sql);
  for (const ParamValue& p : params) absl::StrAppend(&out, " | ", p.is_null ? "NULL" : p.text);
  return out;
}

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  fuzz::Fail("ref_extractor_fuzzer", what, detail);
}

std::shared_ptr<const Schema> Load(const char* path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "ref_extractor_fuzzer: cannot read %s (run from the repository root)\n", path);
    std::abort();
  }
  std::stringstream ss;
  ss << in.rdbuf();
  SchemaBuilder b;
  absl::Status st = b.AddDdl(ss.str());
  absl::StatusOr<std::shared_ptr<const Schema>> s = st.ok() ? b.Build() : st;
  if (!s.ok()) {
    std::fprintf(stderr, "ref_extractor_fuzzer: %s: %s\n", path, std::string(s.status().message()).c_str());
    std::abort();
  }
  return *s;
}

RefExtractor& Extractor(int which) {
  // Built once per process and kept for the run (never destroyed: the
  // extractors' per-thread caches outlive any static destruction order).
  static RefExtractor* const extractors[4] = {
      new RefExtractor(Load("schemas/tpcc.sql"), RefExtractor::Options{512, 4}),
      new RefExtractor(Load("schemas/smallbank.sql"), RefExtractor::Options{512, 4}),
      new RefExtractor(Load("schemas/tatp.sql"), RefExtractor::Options{512, 4}),
      new RefExtractor(std::make_shared<const Schema>(), RefExtractor::Options{512, 4}),
  };
  return *extractors[which];
}

struct Result {
  absl::Status status;
  RefVec ids;
  RefMult mult;
  std::vector<std::string> texts;
};

void Same(const Result& want, const Result& got, const char* path, const std::string& what) {
  if (want.status.ok() != got.status.ok()) {
    Fail(path, absl::StrCat(what, "\n  uncached: ", want.status.ToString(), "\n  this path: ", got.status.ToString()));
  }
  if (want.ids != got.ids || want.texts != got.texts || want.mult != got.mult) {
    Fail(path, absl::StrCat(what, "\n  uncached: ", absl::StrJoin(want.texts, ", "),
                            "\n  this path: ", absl::StrJoin(got.texts, ", ")));
  }
}

}  // namespace
}  // namespace corral

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral;  // NOLINT
  if (size == 0) return 0;
  const uint8_t control = data[0];
  const absl::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<absl::string_view> fields = absl::StrSplit(rest, absl::ByChar('\0'));
  const absl::string_view sql = fields[0];
  std::vector<ParamValue> params;
  for (size_t i = 1; i < fields.size(); ++i) {
    if (i + 1 == fields.size() && fields[i].empty()) break;  // the last NUL ends the list
    params.push_back(fields[i] == "\xff" ? ParamValue{"", true} : ParamValue{fields[i], false});
  }
  const ExtractionPolicy policy{(control & 4) ? RefNaming::kCanonical : RefNaming::kLiteral,
                                (control & 8) ? RefGrouping::kAll : RefGrouping::kSingle};
  RefExtractor& ex = Extractor(control & 3);
  const std::string what = Describe(sql, params);

  Result uncached;
  uncached.status = ex.ExtractUncached(sql, policy, params, &uncached.ids, &uncached.mult, &uncached.texts);
  if (uncached.status.ok()) {
    if (uncached.ids.size() != uncached.texts.size() || uncached.mult.size() != uncached.ids.size()) {
      Fail("ids, texts and multiplicities differ in length", what);
    }
    absl::flat_hash_set<RefId, RefIdHash> seen;
    for (size_t i = 0; i < uncached.ids.size(); ++i) {
      if (uncached.ids[i] != RefId::Of(uncached.texts[i])) Fail("id is not RefId::Of(text)", what);
      if (!seen.insert(uncached.ids[i]).second) Fail("a reference appended twice", what);
      if (uncached.mult[i] != 1) Fail("multiplicity after one statement is not 1", what);
    }
  } else if (uncached.status.code() != absl::StatusCode::kInvalidArgument) {
    Fail("error other than InvalidArgument", absl::StrCat(what, "\n  ", uncached.status.ToString()));
  } else if (!uncached.ids.empty() || !uncached.texts.empty()) {
    Fail("a failed extraction appended references", what);
  }

  for (const char* path : {"cached (first)", "cached (again)"}) {
    Result cached;
    cached.status = ex.Extract(sql, policy, params, &cached.ids, &cached.mult, &cached.texts);
    Same(uncached, cached, path, what);
  }

  auto prepared = ex.Prepare(sql);
  if (prepared.ok() != uncached.status.ok()) {
    Fail("Prepare and the uncached path disagree on the text's validity", what);
  }
  if (prepared.ok()) {
    Result p;
    p.status = ex.ExtractPrepared(**prepared, policy, params, &p.ids, &p.mult, &p.texts);
    Same(uncached, p, "prepared", what);

    // The same statement again into the same set: nothing new, all counted twice.
    Result twice = uncached;
    twice.status = ex.Extract(sql, policy, params, &twice.ids, &twice.mult, &twice.texts);
    if (!twice.status.ok() || twice.ids != uncached.ids) Fail("a repeated statement changed the set", what);
    for (uint16_t m : twice.mult) {
      if (m != 2) Fail("a repeated statement did not count its references up once", what);
    }
  }
  return 0;
}
