// Decoding a PostgreSQL Bind message's parameters (text or binary wire
// format) into the ParamValues reference extraction consumes
// (policies/param_value.h), so that a value yields the same reference
// whatever format the driver chose: `w_id = $1` with binary int4 5, numeric
// 5.00 or text '5' all give `w_id=5`.
//
// What a type decodes to (the text PostgreSQL itself prints by default, so a
// decoded value equals the value's `x::text`):
//   int2 int4 int8 oid    decimal ("5", "-12")
//   numeric               numeric_out's text ("-12.340", "NaN", "Infinity");
//                         the reference then drops trailing zeros (ref_value.h)
//   bool                  "true" / "false" (as the SQL literal TRUE / FALSE)
//   text varchar name     the bytes
//   bpchar                the bytes without trailing blanks (char(n) padding)
//   uuid                  lower-case 8-4-4-4-12 hex
//   date                  ISO DateStyle: "2024-01-31", "0044-03-15 BC", "infinity"
//   timestamp             "2024-01-31 13:45:07.25" (fraction without trailing zeros)
//   timestamptz           the same in UTC with "+00": "2024-01-31 13:45:07.25+00"
//   T[] of the above      a one-dimensional array: one element ParamValue each
//                         (binary array format with its null bitmap, or a
//                         text literal '{1,2,"a b",NULL}')
// Text-format parameters are taken as sent (numbers are canonicalized later
// by ref_value.h), except bool ('t', 'yes', 'on', '1' -> "true"), bpchar
// (trailing blanks dropped), uuid (lower-cased, canonical dashes) and numbers
// (surrounding blanks dropped); a date or timestamp sent as text is compared
// as sent, so '2024-01-31' matches a binary date but '01/31/2024' does not.
// A binary value of a type not listed (or of type 0, unspecified, which the
// caller should first resolve from the server's ParameterDescription), a
// multi-dimensional array, or malformed bytes yield no value: the parameter
// reads as NULL (no reference) and is counted as undecodable. Nothing here
// throws or aborts on any input; lengths are checked against the bytes
// present before anything is read or allocated.
//
//   BindMessage bind;                                   // reuse per connection
//   BoundParams bound;                                  // reuse per connection
//   absl::Status st = ParseBindMessage(bind_body, &bind);
//   if (st.ok()) st = bound.Decode(parse_oids,          // ParseParseMessageOids (0 = unspecified)
//                                  bind.param_formats,  // 0, 1 or n codes
//                                  bind.values);        // RawParam per value
//   if (!st.ok()) { /* protocol error: malformed Bind, format count or code */ }
//   metrics.undecodable += bound.undecodable();
//   extractor.ExtractPrepared(*prepared, policy, bound.params(), &ids);
//
// Thread-safety: the free functions are pure; a BoundParams is
// thread-compatible (one thread at a time), and its params() stay valid until
// its next Decode.
#ifndef CORRAL_POLICIES_PG_PARAMS_H_
#define CORRAL_POLICIES_PG_PARAMS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "policies/param_value.h"

namespace corral {

// PostgreSQL type OIDs (pg_type.dat) of the types decoded here.
namespace pgoid {
inline constexpr uint32_t kUnspecified = 0;
inline constexpr uint32_t kBool = 16;
inline constexpr uint32_t kName = 19;
inline constexpr uint32_t kInt8 = 20;
inline constexpr uint32_t kInt2 = 21;
inline constexpr uint32_t kInt4 = 23;
inline constexpr uint32_t kText = 25;
inline constexpr uint32_t kOid = 26;
inline constexpr uint32_t kBpchar = 1042;
inline constexpr uint32_t kVarchar = 1043;
inline constexpr uint32_t kDate = 1082;
inline constexpr uint32_t kTimestamp = 1114;
inline constexpr uint32_t kTimestamptz = 1184;
inline constexpr uint32_t kNumeric = 1700;
inline constexpr uint32_t kUuid = 2950;
inline constexpr uint32_t kBoolArray = 1000;
inline constexpr uint32_t kNameArray = 1003;
inline constexpr uint32_t kInt2Array = 1005;
inline constexpr uint32_t kInt4Array = 1007;
inline constexpr uint32_t kTextArray = 1009;
inline constexpr uint32_t kBpcharArray = 1014;
inline constexpr uint32_t kVarcharArray = 1015;
inline constexpr uint32_t kInt8Array = 1016;
inline constexpr uint32_t kOidArray = 1028;
inline constexpr uint32_t kTimestampArray = 1115;
inline constexpr uint32_t kDateArray = 1182;
inline constexpr uint32_t kTimestamptzArray = 1185;
inline constexpr uint32_t kNumericArray = 1231;
inline constexpr uint32_t kUuidArray = 2951;
}  // namespace pgoid

// The element type of one of the array types above, or 0.
uint32_t ArrayElementOid(uint32_t array_oid);
// Whether `oid` is one of the scalar types above.
bool IsDecodableScalarOid(uint32_t oid);
// A type by its SQL name: "int4", "integer", "bigint", "text[]", "_int4",
// "timestamptz", ...; 0 when unknown. Case-insensitive.
uint32_t TypeOidByName(absl::string_view name);
// The canonical name ("int4", "int4[]"), or "type <oid>" for others.
std::string TypeOidName(uint32_t oid);

// One value of a Bind message: its bytes, or NULL (length -1).
struct RawParam {
  absl::string_view bytes;
  bool is_null = false;
};

enum class DecodeOutcome : uint8_t {
  kValue,        // a scalar or an array
  kNull,         // SQL NULL
  kUndecodable,  // unknown binary type, malformed bytes: reads as NULL
};

// One element of a text array literal; `text` views the literal or the
// caller's unescape buffer.
struct ArrayLiteralElement {
  absl::string_view text;
  bool is_null = false;
};
// Parses a one-dimensional PostgreSQL array literal ('{1, 2,"a\"b",NULL}',
// optionally with a '[1:3]=' dimension prefix) into *out (cleared first).
// *unescaped is cleared and used for elements that needed unescaping; the
// views stay valid until it next changes. Returns false for a malformed or
// multi-dimensional literal (*out then holds nothing useful).
bool ParseArrayLiteral(absl::string_view literal, std::string* unescaped,
                       std::vector<ArrayLiteralElement>* out);

// A Bind's parameters, decoded; reusable (no allocation once warm for
// parameters of similar sizes).
class BoundParams {
 public:
  // Decodes `values` (one per Bind parameter). `declared_oids` are the
  // statement's parameter types from Parse (or ParameterDescription); a
  // missing entry or 0 means unspecified (text taken as sent, binary
  // undecodable). `format_codes` follows the Bind rules: none = all text, one
  // = all values, else one per value. InvalidArgument (and nothing decoded)
  // if the format codes' count is not 0, 1 or values.size(), or a code is
  // not 0 or 1: a protocol error for the caller to report.
  absl::Status Decode(absl::Span<const uint32_t> declared_oids, absl::Span<const int16_t> format_codes,
                      absl::Span<const RawParam> values);

  // The decoded parameters ($1 is params()[0]); valid until the next Decode.
  ParamSpan params() const { return params_; }
  const std::vector<DecodeOutcome>& outcomes() const { return outcomes_; }
  // How many parameters were undecodable in the last Decode.
  int undecodable() const { return undecodable_; }

 private:
  struct Slot {
    uint32_t begin = 0, len = 0;  // text in arena_
    bool is_null = false;
    bool is_array = false;
    uint32_t elem_begin = 0, elem_count = 0;  // in elem_slots_
  };
  DecodeOutcome DecodeOne(uint32_t oid, int16_t format, const RawParam& value, Slot* slot);
  bool DecodeBinaryArray(uint32_t elem_oid, absl::string_view bytes, Slot* slot);
  bool DecodeTextArray(uint32_t elem_oid, absl::string_view text, Slot* slot);

  std::string arena_;
  std::vector<Slot> slots_, elem_slots_;
  std::vector<ParamValue> params_, elements_;
  std::vector<DecodeOutcome> outcomes_;
  std::string unescape_;
  std::vector<ArrayLiteralElement> literal_elems_;
  int undecodable_ = 0;
};

// Appends the text of one binary-format scalar of type `oid` (see the table
// above) to *out; false (appending nothing) for an unknown type or malformed
// bytes.
bool AppendBinaryScalarText(uint32_t oid, absl::string_view bytes, std::string* out);
// Appends the normalized text of one text-format scalar of type `oid`
// (as sent, except bool, bpchar, uuid and numbers, see above); always true
// except a bool that is not a boolean word.
bool AppendTextScalar(uint32_t oid, absl::string_view text, std::string* out);

// Pure parsers of the protocol message bodies decoding needs (the body: the
// bytes after the type byte and the Int32 length). Each returns
// InvalidArgument for a body that is short, has trailing bytes, or holds a
// negative count or a length past its end; nothing is read out of bounds.
//
// The parameter type OIDs of a backend ParameterDescription ('t'): Int16
// count, then count Int32 OIDs.
absl::StatusOr<std::vector<uint32_t>> ParseParameterDescription(absl::string_view body);
// The declared parameter type OIDs of a frontend Parse ('P'): name, query,
// Int16 count, count Int32 OIDs (0 = unspecified).
absl::StatusOr<std::vector<uint32_t>> ParseParseMessageOids(absl::string_view body);
// A frontend Bind ('B'), as views into `body`: portal, statement, parameter
// format codes, values (result format codes are checked and skipped).
struct BindMessage {
  absl::string_view portal, statement;
  std::vector<int16_t> param_formats;
  std::vector<RawParam> values;
};
// Fills *out (its vectors are reused: no allocation once warm).
absl::Status ParseBindMessage(absl::string_view body, BindMessage* out);

}  // namespace corral

#endif  // CORRAL_POLICIES_PG_PARAMS_H_
