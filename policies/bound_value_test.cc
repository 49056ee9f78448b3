// Tests of BoundValue's text: what the text path receives for a typed parameter.
#include "policies/bound_value.h"

#include "gtest/gtest.h"

namespace corral {
namespace {

TEST(BoundValueTest, Texts) {
  std::string s;
  AppendText(BoundValue::Int(-42), &s);
  EXPECT_EQ(s, "-42");
  s.clear();
  AppendText(BoundValue::Num(12.5), &s);
  EXPECT_EQ(s, "12.5");
  s.clear();
  AppendText(BoundValue::Num(7.0), &s);
  EXPECT_EQ(s, "7");
  s.clear();
  AppendText(BoundValue::Num(0.1), &s);
  EXPECT_EQ(s, "0.1");
  s.clear();
  AppendText(BoundValue::Null(), &s);
  EXPECT_EQ(s, "");
}

TEST(BoundValueTest, DecimalIsShortestRoundTrip) {
  for (double v : {4999.99, 0.3, 1e-7, 123456.789, -2.5, 1e20}) {
    std::string s;
    AppendDecimal(v, &s);
    EXPECT_EQ(std::stod(s), v) << s;
    // One digit fewer no longer reads back (shortest).
    const size_t dot = s.find('.');
    if (dot != std::string::npos && s.size() - dot > 2) EXPECT_NE(std::stod(s.substr(0, s.size() - 1)), v) << s;
  }
}

}  // namespace
}  // namespace corral
