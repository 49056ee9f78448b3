// libFuzzer target for Bind parameter decoding (policies/pg_params.h), which
// reads untrusted network bytes. Input, by byte 0:
//   0xff  the rest is a Bind message body (ParseBindMessage); byte 1 picks
//         the declared type OIDs its values are decoded with;
//   0xfe  the rest is a ParameterDescription body (ParseParameterDescription);
//   else  one parameter: byte 0 picks the declared type (a decodable scalar
//         or array, or an unknown OID), byte 1's low bit the format, the rest
//         is the value.
// The target abort()s (fuzz/check.h) when
//  - Decode fails where the format codes are valid, or undecodable() is not
//    the number of kUndecodable outcomes;
//  - a message body parses but one of its truncations (the body less its
//    last byte, less its last two, its first half, nothing) parses too;
//  - a binary value decodes but its text (for an array, a literal of its
//    elements) sent as text of the same type does not decode to the same
//    value, or the two give different references for `a = $1` /
//    `a = ANY($1)`: a driver's choice of format must not change the routing.
// ASan/UBSan (scripts/fuzz.sh) catch reads out of bounds and overflow.
// The corpus is replayed by //policies:pg_params_fuzzer_replay_test.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz/check.h"
#include "policies/pg_params.h"
#include "policies/ref_extractor.h"

namespace corral {
namespace {

constexpr char kTarget[] = "pg_params_fuzzer";

constexpr uint32_t kOids[] = {
    pgoid::kBool,       pgoid::kName,         pgoid::kInt8,         pgoid::kInt2,          pgoid::kInt4,
    pgoid::kText,       pgoid::kOid,          pgoid::kBpchar,       pgoid::kVarchar,       pgoid::kDate,
    pgoid::kTimestamp,  pgoid::kTimestamptz,  pgoid::kNumeric,      pgoid::kUuid,          pgoid::kBoolArray,
    pgoid::kNameArray,  pgoid::kInt2Array,    pgoid::kInt4Array,    pgoid::kTextArray,     pgoid::kBpcharArray,
    pgoid::kVarcharArray, pgoid::kInt8Array,  pgoid::kOidArray,     pgoid::kTimestampArray, pgoid::kDateArray,
    pgoid::kTimestamptzArray, pgoid::kNumericArray, pgoid::kUuidArray, 0, 701};
constexpr size_t kNumOids = sizeof(kOids) / sizeof(kOids[0]);

absl::string_view View(const uint8_t* data, size_t size) {
  return absl::string_view(reinterpret_cast<const char*>(data), size);
}

// The prefixes of a body that parsed: each must be rejected.
template <typename Parse>
void CheckTruncationsRejected(absl::string_view body, const char* what, Parse parse) {
  const size_t cuts[] = {1, 2, body.size() - body.size() / 2, body.size()};
  for (size_t cut : cuts) {
    if (cut == 0 || cut > body.size()) continue;
    if (parse(body.substr(0, body.size() - cut))) fuzz::Fail(kTarget, what, body);
  }
}

void CheckCounts(const BoundParams& bound, absl::string_view input) {
  int undecodable = 0;
  for (DecodeOutcome o : bound.outcomes()) undecodable += o == DecodeOutcome::kUndecodable;
  fuzz::Check(undecodable == bound.undecodable(), kTarget, "undecodable() != kUndecodable outcomes", input);
  fuzz::Check(bound.outcomes().size() == bound.params().size(), kTarget, "outcomes != params", input);
}

void FuzzBind(uint8_t oid_seed, absl::string_view body) {
  static BindMessage* bind = new BindMessage;
  auto parse = [](absl::string_view b) { return ParseBindMessage(b, bind).ok(); };
  if (!parse(body)) return;
  CheckTruncationsRejected(body, "a truncated Bind parsed", parse);
  if (!ParseBindMessage(body, bind).ok()) fuzz::Fail(kTarget, "Bind parsed once, not twice", body);
  std::vector<uint32_t> oids;
  for (size_t i = 0; i < bind->values.size(); ++i) oids.push_back(kOids[(oid_seed + i) % kNumOids]);
  bool formats_valid = bind->param_formats.size() <= 1 || bind->param_formats.size() == bind->values.size();
  for (int16_t f : bind->param_formats) formats_valid &= f == 0 || f == 1;
  static BoundParams* bound = new BoundParams;
  const absl::Status st = bound->Decode(oids, bind->param_formats, bind->values);
  fuzz::Check(st.ok() == formats_valid, kTarget, "Decode's status disagrees with the format codes", body);
  if (st.ok()) {
    fuzz::Check(bound->params().size() == bind->values.size(), kTarget, "one ParamValue per value", body);
    CheckCounts(*bound, body);
  } else {
    fuzz::Check(st.code() == absl::StatusCode::kInvalidArgument, kTarget, "Decode error not InvalidArgument", body);
  }
}

void FuzzParameterDescription(absl::string_view body) {
  auto parse = [](absl::string_view b) { return ParseParameterDescription(b).ok(); };
  absl::StatusOr<std::vector<uint32_t>> oids = ParseParameterDescription(body);
  if (!oids.ok()) return;
  fuzz::Check(body.size() == 2 + 4 * oids->size(), kTarget, "ParameterDescription size", body);
  CheckTruncationsRejected(body, "a truncated ParameterDescription parsed", parse);
}

// A PostgreSQL array literal of `array`'s elements, every one quoted.
std::string ArrayLiteral(const ParamValue& array) {
  std::string out = "{";
  for (uint32_t i = 0; i < array.num_elements; ++i) {
    if (i > 0) out += ',';
    const ParamValue& e = array.elements[i];
    if (e.is_null) {
      out += "NULL";
      continue;
    }
    out += '"';
    for (char c : e.text) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

std::string Show(const ParamValue& p) {
  if (p.is_null) return "NULL";
  if (!p.is_array) return std::string(p.text);
  return absl::StrCat("array ", ArrayLiteral(p));
}

bool SameValue(const ParamValue& a, const ParamValue& b) {
  if (a.is_null != b.is_null || a.is_array != b.is_array) return false;
  if (a.is_null) return true;
  if (!a.is_array) return a.text == b.text;
  if (a.num_elements != b.num_elements) return false;
  for (uint32_t i = 0; i < a.num_elements; ++i) {
    if (!SameValue(a.elements[i], b.elements[i])) return false;
  }
  return true;
}

void Refs(const ParamValue& p, RefVec* ids, std::vector<std::string>* texts, absl::string_view input) {
  static RefExtractor* ex = new RefExtractor(nullptr);
  ids->clear();
  texts->clear();
  const absl::Status st = ex->Extract("SELECT * FROM t WHERE a = $1 OR a = ANY($1)",
                                      {RefNaming::kLiteral, RefGrouping::kAll}, ParamSpan(&p, 1), ids, texts);
  fuzz::Check(st.ok(), kTarget, "extraction failed on a decoded value", input);
}

void FuzzValue(uint32_t oid, int16_t format, absl::string_view bytes, absl::string_view input) {
  static BoundParams* bound = new BoundParams;
  static BoundParams* as_text = new BoundParams;
  const RawParam raw[] = {{bytes}};
  const uint32_t oids[] = {oid};
  const int16_t formats[] = {format};
  fuzz::Check(bound->Decode(oids, formats, raw).ok(), kTarget, "Decode failed with valid format codes", input);
  CheckCounts(*bound, input);
  fuzz::Check(bound->params().size() == 1, kTarget, "one ParamValue", input);
  if (format != 1 || bound->outcomes()[0] != DecodeOutcome::kValue) return;

  // Binary decoded: the same value sent as text must decode alike.
  const ParamValue& binary = bound->params()[0];
  const std::string text = binary.is_array ? ArrayLiteral(binary) : std::string(binary.text);
  const RawParam text_raw[] = {{text}};
  const int16_t text_format[] = {0};
  fuzz::Check(as_text->Decode(oids, text_format, text_raw).ok(), kTarget, "text Decode failed", input);
  const std::string detail = absl::StrCat("type ", TypeOidName(oid), ": binary gives ", Show(binary),
                                          "; as text ", Show(as_text->params()[0]));
  fuzz::Check(as_text->outcomes()[0] == DecodeOutcome::kValue, kTarget, "binary value undecodable as text", detail);
  fuzz::Check(SameValue(binary, as_text->params()[0]), kTarget, "binary and text decode differently", detail);
  static RefVec* ids_binary = new RefVec;
  static RefVec* ids_text = new RefVec;
  static std::vector<std::string>* texts_binary = new std::vector<std::string>;
  static std::vector<std::string>* texts_text = new std::vector<std::string>;
  Refs(binary, ids_binary, texts_binary, input);
  Refs(as_text->params()[0], ids_text, texts_text, input);
  fuzz::Check(*texts_binary == *texts_text && ids_binary->size() == ids_text->size(), kTarget,
              "binary and text give different references", detail);
}

}  // namespace
}  // namespace corral

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral;
  if (size < 2) return 0;
  if (data[0] == 0xff) {
    FuzzBind(data[1], View(data + 2, size - 2));
  } else if (data[0] == 0xfe) {
    FuzzParameterDescription(View(data + 1, size - 1));
  } else {
    FuzzValue(kOids[data[0] % kNumOids], data[1] & 1, View(data + 2, size - 2), View(data, size));
  }
  return 0;
}
