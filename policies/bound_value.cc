#include "policies/bound_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace corral {

void AppendDecimal(double v, std::string* out) {
  char buf[400];  // fixed form of the largest double: 309 digits
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    const auto r = std::to_chars(buf, buf + sizeof(buf), static_cast<int64_t>(v));
    out->append(buf, r.ptr - buf);
    return;
  }
  // The shortest fixed-point text that reads back as v: the same text as the
  // smallest "%.Nf" precision that round-trips (the correctly rounded one at
  // the shortest length), without a printf/strtod pair per precision (TPC-C
  // Payment's amount, on every generated transaction). A value that needs
  // more than 17 decimals keeps the capped printf search's text.
  const auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
  if (r.ec == std::errc() && std::isfinite(v)) {
    const absl::string_view t(buf, r.ptr - buf);
    const size_t dot = t.find('.');
    if (dot != absl::string_view::npos && t.size() - dot - 1 <= 17) {
      out->append(t.data(), t.size());
      return;
    }
  }
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*f", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  out->append(buf);
}

void AppendText(const BoundValue& v, std::string* out) {
  switch (v.kind()) {
    case BoundValue::Kind::kNull:
      return;
    case BoundValue::Kind::kInt: {
      char buf[24];
      const auto r = std::to_chars(buf, buf + sizeof(buf), v.int_value());
      out->append(buf, r.ptr - buf);
      return;
    }
    case BoundValue::Kind::kNum:
      AppendDecimal(v.num_value(), out);
      return;
    case BoundValue::Kind::kText:
      out->append(v.text().data(), v.text().size());
      return;
  }
}

}  // namespace corral
