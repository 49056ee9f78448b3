// How a reference's value is written: the normalization rule shared by the
// cold path (values from libpg_query's tree), the cache-hit path (values from
// the fast lexer) and bound parameters (text), so that one value always gives
// one reference text.
//
// Rule: if the column's type is not text-like (numeric, or unknown) and the
// value reads as a decimal number, it is written in canonical decimal: no '+',
// no leading zeros, no trailing fractional zeros, no '.' without a fraction,
// "-0" -> "0" (so 5, 005, 5.0, '5' and the parameter "5" all give `5`; 5.50
// gives `5.5`; exponents are kept, lower-cased, with the mantissa normalized).
// Otherwise the value is single-quoted with '' for an embedded quote
// (`'BARBARBAR'`, `'O''Brien'`). Text-typed columns (text, varchar, char)
// always quote, so '05' and '5' stay distinct there.
//
//   std::string out;
//   AppendRenderedValue("5.0", TypeClass::kUnknown, &out);  // "5"
//   AppendRenderedValue("5", TypeClass::kText, &out);       // "'5'"
//
// Thread-safety: pure functions.
#ifndef CORRAL_POLICIES_REF_VALUE_H_
#define CORRAL_POLICIES_REF_VALUE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace corral {

// What the schema knows about a column's type, as far as value
// normalization cares.
enum class TypeClass { kUnknown, kNumeric, kText };

// Appends the rendered form of `raw` (a literal's value, unescaped, or a
// parameter's text) to *out.
void AppendRenderedValue(absl::string_view raw, TypeClass type, std::string* out);

// Appends the canonical decimal form of `raw` if it reads as a number
// ([+-]digits[.digits][e[+-]digits], or .digits); returns false (appending
// nothing) otherwise.
bool AppendCanonicalNumber(absl::string_view raw, std::string* out);

}  // namespace corral

#endif  // CORRAL_POLICIES_REF_VALUE_H_
