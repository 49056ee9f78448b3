// Tests of `corral refs --params` parsing, and that what it parses decodes
// (policies/pg_params.h) to the values a driver's Bind would give.
#include "cli/param_spec.h"

#include "gtest/gtest.h"
#include "policies/pg_params.h"

namespace corral {
namespace cli {
namespace {

TEST(ParamSpec, FormsAndTypes) {
  auto p = ParseParamSpecs("int4:b:00000005,numeric:3.50,int4[]:{1,2,3},text:\"a,b\",NULL,12:30,bpchar:NULL,xyz");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), 8u);
  EXPECT_EQ((*p)[0].oid, pgoid::kInt4);
  EXPECT_EQ((*p)[0].format, 1);
  EXPECT_EQ((*p)[0].bytes, std::string("\0\0\0\5", 4));
  EXPECT_EQ((*p)[1].oid, pgoid::kNumeric);
  EXPECT_EQ((*p)[1].bytes, "3.50");
  EXPECT_EQ((*p)[2].oid, pgoid::kInt4Array);
  EXPECT_EQ((*p)[2].bytes, "{1,2,3}");  // the comma inside braces did not split
  EXPECT_EQ((*p)[3].bytes, "a,b");      // nor inside quotes, which are removed
  EXPECT_TRUE((*p)[4].is_null);
  EXPECT_EQ((*p)[4].oid, 0u);
  EXPECT_EQ((*p)[5].oid, 12u);  // a numeric prefix is a type OID
  EXPECT_EQ((*p)[5].bytes, "30");
  EXPECT_TRUE((*p)[6].is_null);
  EXPECT_EQ((*p)[6].oid, pgoid::kBpchar);
  EXPECT_EQ((*p)[7].oid, 0u);  // not a type: untyped text
  EXPECT_EQ((*p)[7].bytes, "xyz");
  auto u = ParseParamSpecs("unknown:12:30, text:\"say \\\"hi\\\"\"");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ((*u)[0].oid, 0u);
  EXPECT_EQ((*u)[0].bytes, "12:30");
  EXPECT_EQ((*u)[1].oid, pgoid::kText);  // blanks around the type name are ignored
  EXPECT_EQ((*u)[1].bytes, "say \"hi\"");
  EXPECT_TRUE(ParseParamSpecs("")->empty());
}

TEST(ParamSpec, Errors) {
  EXPECT_FALSE(ParseParamSpecs("int4:b:0005x").ok());
  EXPECT_FALSE(ParseParamSpecs("int4:b:000").ok());
  EXPECT_FALSE(ParseParamSpecs("int4[]:{1,2").ok());
  EXPECT_FALSE(ParseParamSpecs("text:\"abc").ok());
}

TEST(ParamSpec, DecodesLikeABind) {
  auto p = ParseParamSpecs("int4:b:00000005,numeric:b:0001 0000 0000 0002 0005,int8[]:{7,NULL},701:b:3ff8000000000000");
  ASSERT_TRUE(p.ok()) << p.status();
  BoundParams b;
  ASSERT_TRUE(DecodeCliParams(*p, &b).ok());
  EXPECT_EQ(b.params()[0].text, "5");
  EXPECT_EQ(b.params()[1].text, "5.00");
  ASSERT_TRUE(b.params()[2].is_array);
  ASSERT_EQ(b.params()[2].num_elements, 2u);
  EXPECT_EQ(b.params()[2].elements[0].text, "7");
  EXPECT_TRUE(b.params()[2].elements[1].is_null);
  EXPECT_EQ(b.outcomes()[3], DecodeOutcome::kUndecodable);
  EXPECT_EQ(b.undecodable(), 1);
}

}  // namespace
}  // namespace cli
}  // namespace corral
