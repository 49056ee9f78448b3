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

// 16 bytes: a transaction binds dozens, so the size is the cost.
class BoundValue {
 public:
  enum class Kind : uint8_t { kNull, kInt, kNum, kText };

  static BoundValue Null() { return BoundValue(); }
  static BoundValue Int(int64_t v) {
    BoundValue b;
    b.kind_ = Kind::kInt;
    b.u_.i = v;
    return b;
  }
  static BoundValue Num(double v) {
    BoundValue b;
    b.kind_ = Kind::kNum;
    b.u_.d = v;
    return b;
  }
  // Not copied: the bytes must outlive the value's use.
  static BoundValue Text(absl::string_view v) {
    BoundValue b;
    b.kind_ = Kind::kText;
    b.u_.p = v.data();
    b.len_ = static_cast<uint32_t>(v.size());
    return b;
  }

  // Field-wise assignment: builds a value in place (a container's fresh
  // element). Copying a value just built field by field on the stack is a
  // 16-byte load from narrower stores, which stalls on store forwarding; a
  // workload binds ~200 values per TPC-C transaction (workloads::BoundSql).
  void SetInt(int64_t v) {
    u_.i = v;
    len_ = 0;
    kind_ = Kind::kInt;
  }
  void SetNum(double v) {
    u_.d = v;
    len_ = 0;
    kind_ = Kind::kNum;
  }
  void SetText(absl::string_view v) {
    u_.p = v.data();
    len_ = static_cast<uint32_t>(v.size());
    kind_ = Kind::kText;
  }
  void SetNull() {
    u_.i = 0;
    len_ = 0;
    kind_ = Kind::kNull;
  }
  // *this = v, field by field.
  void Set(const BoundValue& v) {
    u_ = v.u_;
    len_ = v.len_;
    kind_ = v.kind_;
  }

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  int64_t int_value() const { return u_.i; }    // kInt
  double num_value() const { return u_.d; }     // kNum
  absl::string_view text() const { return absl::string_view(u_.p, len_); }  // kText

 private:
  union {
    int64_t i;
    double d;
    const char* p;
  } u_{0};
  uint32_t len_ = 0;
  Kind kind_ = Kind::kNull;
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
