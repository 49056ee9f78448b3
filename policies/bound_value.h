// A typed statement parameter as a workload binds it to a constant template
// (integer, decimal, text or NULL), without writing it out as text first.
// Reference extraction from a prepared template (policies/template_refs.h)
// turns integers into their reference value directly; AppendText gives the
// text a SQL client would send for the same parameter (what the text path,
// RefExtractor::Extract with ParamValues, consumes), so both paths agree.
//
//   BoundValue v[] = {BoundValue::Int(5), BoundValue::Num(12.5), BoundValue::Text("BARBAR"),
//                     BoundValue::Null()};
//   std::string t;
//   AppendText(v[1], &t);  // "12.5"
//
// Thread-safety: a plain value type; a Text value holds a view, whose bytes
// its owner keeps alive while the value is used.
#ifndef CORRAL_POLICIES_BOUND_VALUE_H_
#define CORRAL_POLICIES_BOUND_VALUE_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace corral {

struct BoundValue {
  enum class Kind : uint8_t { kNull, kInt, kNum, kText };
  Kind kind = Kind::kNull;
  int64_t i = 0;           // kInt
  double d = 0;            // kNum
  absl::string_view text;  // kText (not copied)

  static BoundValue Null() { return BoundValue(); }
  static BoundValue Int(int64_t v) {
    BoundValue b;
    b.kind = Kind::kInt;
    b.i = v;
    return b;
  }
  static BoundValue Num(double v) {
    BoundValue b;
    b.kind = Kind::kNum;
    b.d = v;
    return b;
  }
  static BoundValue Text(absl::string_view v) {
    BoundValue b;
    b.kind = Kind::kText;
    b.text = v;
    return b;
  }
  bool is_null() const { return kind == Kind::kNull; }
};
using BoundSpan = absl::Span<const BoundValue>;

// Appends the decimal text of v: an integral value below 1e15 in magnitude
// as an integer ("12"), otherwise the shortest fixed-point text that reads
// back as v ("12.5", "0.1").
void AppendDecimal(double v, std::string* out);

// Appends the parameter's text (nothing for NULL): the integer's decimal
// digits, AppendDecimal for kNum, the text as is.
void AppendText(const BoundValue& v, std::string* out);

}  // namespace corral

#endif  // CORRAL_POLICIES_BOUND_VALUE_H_
