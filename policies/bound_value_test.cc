// Tests of BoundValue's text: what the text path receives for a typed parameter.
#include "policies/bound_value.h"

#include <string>

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

// The in-place setters give the factories' values, whatever the slot held.
TEST(BoundValueTest, SettersEqualFactories) {
  const std::string text = "BARBAR";
  const BoundValue want[] = {BoundValue::Int(-42), BoundValue::Num(12.5), BoundValue::Text(text),
                             BoundValue::Null()};
  for (const BoundValue& before : want) {
    BoundValue v[5] = {before, before, before, before, before};
    v[0].SetInt(-42);
    v[1].SetNum(12.5);
    v[2].SetText(text);
    v[3].SetNull();
    v[4].Set(want[1]);
    for (int i = 0; i < 5; ++i) {
      const BoundValue& w = want[i == 4 ? 1 : i];
      EXPECT_EQ(v[i].kind(), w.kind()) << i;
      std::string got, expect;
      AppendText(v[i], &got);
      AppendText(w, &expect);
      EXPECT_EQ(got, expect) << i;
    }
    EXPECT_EQ(v[0].int_value(), -42);
    EXPECT_EQ(v[1].num_value(), 12.5);
    EXPECT_EQ(v[2].text().data(), text.data());
    EXPECT_EQ(v[2].text().size(), text.size());
    EXPECT_TRUE(v[3].is_null());
  }
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
