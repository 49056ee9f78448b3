// A bound statement parameter as reference extraction consumes it: the text
// of a scalar value, NULL, or a one-dimensional array of such values. Plain
// text parameters (the embedded runner, psql-style clients) fill only `text`
// and `is_null`; typed parameters decoded from a PostgreSQL Bind message
// (policies/pg_params.h) also fill arrays.
//
//   ParamValue five{"5"};                       // text '5'
//   ParamValue null_value{"", /*is_null=*/true};
//   ParamValue elems[] = {{"1"}, {"2"}};
//   ParamValue arr;  arr.is_array = true;  arr.elements = elems;  arr.num_elements = 2;
//
// Thread-safety: a plain value type holding views; whoever owns the bytes
// (and the element array) keeps them alive while extraction runs.
#ifndef CORRAL_POLICIES_PARAM_VALUE_H_
#define CORRAL_POLICIES_PARAM_VALUE_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace corral {

struct ParamValue {
  // A scalar's text, in the form the reference should carry before the
  // column-type normalization of policies/ref_value.h (e.g. "5", "abc",
  // "2024-01-02"). Unused for arrays.
  absl::string_view text;
  bool is_null = false;
  // A one-dimensional array (`col = ANY($n)`): its elements, each a scalar
  // ParamValue (NULL elements have is_null). A plain text parameter bound to
  // `= ANY($n)` is read as a PostgreSQL array literal ('{1,2,3}') instead.
  bool is_array = false;
  const ParamValue* elements = nullptr;
  uint32_t num_elements = 0;
};
using ParamSpan = absl::Span<const ParamValue>;

}  // namespace corral

#endif  // CORRAL_POLICIES_PARAM_VALUE_H_
