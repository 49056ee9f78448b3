#include "policies/ref_value.h"

namespace corral {
namespace {

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool AppendCanonicalNumber(absl::string_view raw, std::string* out) {
  size_t i = 0, n = raw.size();
  bool neg = false;
  if (i < n && (raw[i] == '+' || raw[i] == '-')) {
    neg = raw[i] == '-';
    ++i;
  }
  size_t int_b = i;
  while (i < n && IsDigit(raw[i])) ++i;
  size_t int_e = i;
  size_t frac_b = i, frac_e = i;
  if (i < n && raw[i] == '.') {
    ++i;
    frac_b = i;
    while (i < n && IsDigit(raw[i])) ++i;
    frac_e = i;
  }
  if (int_e == int_b && frac_e == frac_b) return false;  // no digits at all
  size_t exp_b = 0, exp_e = 0;
  bool exp_neg = false, has_exp = false;
  if (i < n && (raw[i] == 'e' || raw[i] == 'E')) {
    ++i;
    if (i < n && (raw[i] == '+' || raw[i] == '-')) {
      exp_neg = raw[i] == '-';
      ++i;
    }
    exp_b = i;
    while (i < n && IsDigit(raw[i])) ++i;
    exp_e = i;
    if (exp_e == exp_b) return false;
    has_exp = true;
  }
  if (i != n) return false;
  // Strip leading zeros of the integer part and trailing zeros of the fraction.
  while (int_b < int_e && raw[int_b] == '0') ++int_b;
  while (frac_e > frac_b && raw[frac_e - 1] == '0') --frac_e;
  bool zero = int_b == int_e && frac_b == frac_e;
  if (neg && !zero) out->push_back('-');
  if (int_b == int_e) {
    out->push_back('0');
  } else {
    out->append(raw.data() + int_b, int_e - int_b);
  }
  if (frac_e > frac_b) {
    out->push_back('.');
    out->append(raw.data() + frac_b, frac_e - frac_b);
  }
  if (has_exp && !zero) {
    while (exp_b + 1 < exp_e && raw[exp_b] == '0') ++exp_b;
    if (!(exp_e - exp_b == 1 && raw[exp_b] == '0')) {
      out->push_back('e');
      if (exp_neg) out->push_back('-');
      out->append(raw.data() + exp_b, exp_e - exp_b);
    }
  }
  return true;
}

void AppendRenderedValue(absl::string_view raw, TypeClass type, std::string* out) {
  if (type != TypeClass::kText && AppendCanonicalNumber(raw, out)) return;
  out->push_back('\'');
  for (char c : raw) {
    if (c == '\'') out->push_back('\'');
    out->push_back(c);
  }
  out->push_back('\'');
}

}  // namespace corral
