// Tests of the fast lexer, value normalization and the JSON reader.
#include "policies/sql_lexer.h"

#include <string>

#include "gtest/gtest.h"
#include "policies/json.h"
#include "policies/ref_value.h"

namespace corral {
namespace {

std::string Render(absl::string_view raw, TypeClass t = TypeClass::kUnknown) {
  std::string out;
  AppendRenderedValue(raw, t, &out);
  return out;
}

TEST(RefValue, NumbersAreCanonicalDecimal) {
  EXPECT_EQ(Render("5"), "5");
  EXPECT_EQ(Render("005"), "5");
  EXPECT_EQ(Render("+5"), "5");
  EXPECT_EQ(Render("5.0"), "5");
  EXPECT_EQ(Render("5.50"), "5.5");
  EXPECT_EQ(Render(".5"), "0.5");
  EXPECT_EQ(Render("-0"), "0");
  EXPECT_EQ(Render("-0.000"), "0");
  EXPECT_EQ(Render("-12.340"), "-12.34");
  EXPECT_EQ(Render("1E+03"), "1e3");
  EXPECT_EQ(Render("00"), "0");
  EXPECT_EQ(Render("5", TypeClass::kNumeric), "5");
}

TEST(RefValue, StringsAreQuotedWithDoubledQuotes) {
  EXPECT_EQ(Render("BARBARBAR"), "'BARBARBAR'");
  EXPECT_EQ(Render("O'Brien"), "'O''Brien'");
  EXPECT_EQ(Render(""), "''");
  EXPECT_EQ(Render("5 "), "'5 '");
  EXPECT_EQ(Render("1e"), "'1e'");
  EXPECT_EQ(Render("."), "'.'");
  // Text columns always quote: '05' and '5' stay distinct.
  EXPECT_EQ(Render("5", TypeClass::kText), "'5'");
  EXPECT_EQ(Render("05", TypeClass::kText), "'05'");
}

TEST(SqlLexer, ShapeKeyIgnoresLiteralValuesAndLayout) {
  LexResult a, b;
  LexSql("UPDATE stock SET s_quantity=6 WHERE s_i_id=2 AND s_w_id='x'", &a);
  LexSql("update  stock set s_quantity = 77 -- c\n WHERE s_i_id=/* x /* nested */ */2 AND s_w_id='it''s'", &b);
  EXPECT_TRUE(a.cacheable);
  EXPECT_TRUE(b.cacheable);
  EXPECT_EQ(a.key, "update stock set s_quantity = ? where s_i_id = ? and s_w_id = '?'");
  EXPECT_EQ(a.key, b.key);
  ASSERT_EQ(b.literals.size(), 3u);
  EXPECT_EQ(b.Value(b.literals[0], "update  stock set s_quantity = 77 -- c\n WHERE s_i_id=/* x /* nested */ */2 AND s_w_id='it''s'"), "77");
}

TEST(SqlLexer, StringsEscapesParamsAndIdentifiers) {
  std::string sql = "SELECT \"Mixed\"\"Q\" FROM t WHERE a=E'x\\ty\\'z' AND b=$12 AND c='' AND d=1.5e3 AND e=.5";
  LexResult lx;
  LexSql(sql, &lx);
  ASSERT_TRUE(lx.cacheable);
  EXPECT_EQ(lx.key,
            "select \"Mixed\"\"Q\" from t where a = '?' and b = $12 and c = '?' and d = ? and e = ?");
  ASSERT_EQ(lx.literals.size(), 4u);
  EXPECT_EQ(lx.Value(lx.literals[0], sql), "x\ty'z");
  EXPECT_EQ(lx.literals[0].offset, sql.find("E'"));
  EXPECT_EQ(lx.Value(lx.literals[1], sql), "");
  EXPECT_EQ(lx.Value(lx.literals[2], sql), "1.5e3");
  EXPECT_EQ(lx.Value(lx.literals[3], sql), ".5");
}

TEST(SqlLexer, OperatorsAndCastsKeepTheirTokens) {
  LexResult a, b;
  LexSql("SELECT 1 WHERE a<=5", &a);
  LexSql("SELECT 1 WHERE a< =5", &b);
  EXPECT_NE(a.key, b.key);
  LexSql("SELECT '5'::int", &a);
  LexSql("SELECT '5': :int", &b);
  EXPECT_NE(a.key, b.key);
  LexSql("SELECT 5", &a);
  LexSql("SELECT '5'", &b);
  EXPECT_NE(a.key, b.key);  // number and string literals are different shapes
}

TEST(SqlLexer, UnsupportedFormsAreNotCacheable) {
  for (const char* sql : {"SELECT $$x$$", "SELECT $tag$x$tag$", "SELECT B'101'", "SELECT X'1F'",
                          "SELECT U&'d\\0061t'", "SELECT E'\\x41'", "SELECT E'\\101'", "SELECT 'a'\n'b'",
                          "SELECT 'unterminated", "SELECT /* open", "SELECT 5abc", "SELECT N'x'"}) {
    LexResult lx;
    LexSql(sql, &lx);
    EXPECT_FALSE(lx.cacheable) << sql;
  }
  LexResult lx;
  LexSql("SELECT 'a' 'b'", &lx);  // same line: no continuation (a syntax error later)
  EXPECT_TRUE(lx.cacheable);
}

TEST(SqlLexer, SplitStatements) {
  std::vector<StatementSpan> s =
      SplitStatements("BEGIN; UPDATE t SET a=';' WHERE b=\"x;y\"; -- c;\n SELECT $$;$$ ;; /* ; */ COMMIT");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].text, "BEGIN");
  EXPECT_EQ(s[1].text, "UPDATE t SET a=';' WHERE b=\"x;y\"");
  EXPECT_EQ(s[2].text, "-- c;\n SELECT $$;$$");
  EXPECT_EQ(s[3].text, "/* ; */ COMMIT");
  EXPECT_EQ(s[1].offset, 7u);
}

TEST(Json, ReadsPgQueryShapes) {
  absl::StatusOr<Json> j = ParseJson(R"({"a":[1,-2.5e3,"x\"\u00e9"],"b":{"c":true,"d":null},"e":{}})");
  ASSERT_TRUE(j.ok()) << j.status();
  ASSERT_NE(j->Get("a"), nullptr);
  ASSERT_EQ(j->Get("a")->items().size(), 3u);
  EXPECT_EQ(j->Get("a")->items()[1].str(), "-2.5e3");
  EXPECT_EQ(j->Get("a")->items()[2].str(), "x\"\xc3\xa9");
  EXPECT_TRUE(j->Get("b")->Get("c")->boolean());
  EXPECT_EQ(j->Get("b")->NodeType(), "");
  EXPECT_EQ(j->Get("missing"), nullptr);
  EXPECT_FALSE(ParseJson("{\"a\":").ok());
  EXPECT_FALSE(ParseJson("[1,]").ok());
  EXPECT_FALSE(ParseJson("{} x").ok());
}

// The longest chain of operator characters outside strings, whitespace and
// comments between them not counted (the extractor refuses one over
// kMaxOperatorRun before libpg_query).
TEST(SqlLexer, LongestOperatorRun) {
  LexResult lx;
  LexSql("SELECT a FROM t WHERE b >= 1 AND c <> 2", &lx);
  EXPECT_EQ(lx.longest_operator, 2u);
  LexSql("SELECT a FROM t WHERE b = ++++-+1", &lx);  // the '=' too
  EXPECT_EQ(lx.longest_operator, 7u);
  LexSql("SELECT 'x++++++++' /* ++++++++ */ + 1 -- ++++++++++", &lx);
  EXPECT_EQ(lx.longest_operator, 1u);
  LexSql("SELECT 1 +++/* c */++++ 2", &lx);  // two operator tokens, one chain
  EXPECT_EQ(lx.longest_operator, 7u);
  LexSql("SELECT 1 + + + - 2", &lx);  // nested prefix operators
  EXPECT_EQ(lx.longest_operator, 4u);
  LexSql("SELECT 1 + 2 + 3 + 4 - 5", &lx);  // a flat chain of binary operators
  EXPECT_EQ(lx.longest_operator, 1u);
  LexSql("SELECT 1 + '+' + + $1", &lx);  // a string or a parameter ends a chain
  EXPECT_EQ(lx.longest_operator, 2u);
  LexSql("SELECT 1 ?+++++ 2", &lx);  // a '?' run is measured, then not cacheable
  EXPECT_EQ(lx.longest_operator, 6u);
  EXPECT_FALSE(lx.cacheable);
  LexSql("SELECT 1", &lx);
  EXPECT_EQ(lx.longest_operator, 0u);
}

}  // namespace
}  // namespace corral
