// Tests of reference extraction on inputs that once broke it (most found
// by ref_extractor_fuzzer): each must give the same answer on every path.
#include "policies/ref_extractor.h"

#include "gtest/gtest.h"
#include "policies/ref_extractor_testing.h"
#include "policies/sql_lexer.h"

namespace corral {
namespace {

using namespace testing_refs;  // NOLINT: the shared test helpers

// ---------------------------------------------------------------- inputs that once broke it

// `sql` is InvalidArgument, with `why` in the message and no reference
// appended, on every path (cached twice, uncached, Prepare).
void ExpectRefusedOnEveryPath(RefExtractor& ex, const std::string& sql, absl::string_view why) {
  for (int round = 0; round < 2; ++round) {
    RefVec ids;
    RefMult mult;
    std::vector<std::string> texts;
    absl::Status st = ex.Extract(sql, kCanSingle, {}, &ids, &texts);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_NE(st.message().find(why), absl::string_view::npos) << st;
    EXPECT_TRUE(ids.empty());
    st = ex.ExtractUncached(sql, kCanSingle, {}, &ids, &mult, &texts);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_TRUE(ids.empty());
    absl::StatusOr<std::shared_ptr<const RefExtractor::Prepared>> p = ex.Prepare(sql);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
  }
}

// Found by the fuzzer: ~1,000 unary operators in a row parse (libpg_query's
// own depth limit is not reached) into a tree deeper than the JSON reader
// goes. That is bad input (InvalidArgument, as PostgreSQL's "stack depth
// limit exceeded" would be), not an internal error, on every path; a
// statement just as long but flat still extracts. (Unary operators are now
// refused before parsing, OperatorRunIsBounded; NOT nests as deep.)
TEST(Features, DeeplyNestedStatementIsInvalidArgument) {
  RefExtractor ex(Tpcc());
  std::string deep = "SELECT * FROM warehouse WHERE ";
  for (int i = 0; i < 1000; ++i) deep += "NOT ";
  deep += "w_id = 1";
  ExpectRefusedOnEveryPath(ex, deep, "nested too deeply");
  RefVec ids;
  std::vector<std::string> texts;
  const std::string flat = "SELECT * FROM warehouse WHERE w_id = 1" + std::string(1000, ' ');
  ASSERT_TRUE(ex.Extract(flat, kCanSingle, {}, &ids, &texts).ok());
  EXPECT_EQ(texts, std::vector<std::string>{"w_id=1"});
}

// PostgreSQL 15 does not take a vertical tab for whitespace: a text that is
// valid once it is dropped must not reuse that shape's cached plan
// (found by ref_extractor_fuzzer: ";\v" after ";" was OK through the cache).
TEST(Features, VerticalTabIsNotWhitespace) {
  RefExtractor ex(Tpcc());
  for (const char* valid : {";", "SELECT * FROM item WHERE i_id = 1"}) {
    RefVec ids;
    ASSERT_TRUE(ex.Extract(valid, kCanSingle, &ids).ok()) << valid;
  }
  for (const char* bad : {";\v", "SELECT * FROM item\vWHERE i_id = 2"}) {
    for (int round = 0; round < 2; ++round) {
      RefVec ids, cold;
      EXPECT_FALSE(ex.ExtractUncached(bad, kCanSingle, {}, &cold).ok()) << bad;
      EXPECT_FALSE(ex.Extract(bad, kCanSingle, &ids).ok()) << bad;
      EXPECT_TRUE(ids.empty());
    }
  }
}

// A '?' operator must not share a shape with a number (whose placeholder in
// the shape key is '?'): `new_order($1, $2, ?, $3)` is a syntax error even
// after `new_order($1, $2, 3, $3)` was cached (found by ref_extractor_fuzzer).
TEST(Features, QuestionMarkOperatorIsNotANumber) {
  RefExtractor ex(Tpcc());
  const std::vector<ParamValue> p = {{"1"}, {"2"}, {"5"}};
  RefVec ids;
  ASSERT_TRUE(ex.Extract("SELECT * FROM new_order($1, $2, 3, $3)", kCanAll, p, &ids).ok());
  for (int round = 0; round < 2; ++round) {
    RefVec got, cold;
    EXPECT_FALSE(ex.ExtractUncached("SELECT * FROM new_order($1, $2, ?, $3)", kCanAll, p, &cold).ok());
    EXPECT_FALSE(ex.Extract("SELECT * FROM new_order($1, $2, ?, $3)", kCanAll, p, &got).ok());
    EXPECT_TRUE(got.empty());
  }
  // A valid '?' (jsonb key test) still extracts, the same on every path.
  const std::string sql = "SELECT * FROM item WHERE i_data::jsonb ? 'k' AND i_id = 5";
  EXPECT_EQ(Refs(ex, sql, kCanSingle), Texts{"i_id=5"});
}

// A carriage return ends a -- comment, as in PostgreSQL: what follows it is
// SQL (found by ref_extractor_fuzzer: "... = 7 --\r AND" took the cached
// plan of "... = 7" while libpg_query said syntax error).
TEST(Features, CarriageReturnEndsALineComment) {
  RefExtractor ex(Tpcc());
  EXPECT_EQ(Refs(ex, "SELECT * FROM item WHERE i_id = 7", kCanSingle), Texts{"i_id=7"});
  for (int round = 0; round < 2; ++round) {
    RefVec got, cold;
    EXPECT_FALSE(ex.ExtractUncached("SELECT * FROM item WHERE i_id = 7 --\r AND", kCanSingle, {}, &cold).ok());
    EXPECT_FALSE(ex.Extract("SELECT * FROM item WHERE i_id = 7 --\r AND", kCanSingle, &got).ok());
  }
  EXPECT_EQ(Refs(ex, "SELECT * FROM item --c\rWHERE i_id = 5", kCanSingle), Texts{"i_id=5"});
}

// An escape string with bytes that are not UTF-8 is an error in PostgreSQL;
// it must not take the cached plan of a valid E'' string of the same shape
// (found by ref_extractor_fuzzer).
TEST(Features, InvalidUtf8EscapeStringIsNotCached) {
  RefExtractor ex(Tpcc());
  EXPECT_EQ(Refs(ex, "SELECT * FROM customer WHERE c_last = E'abc' AND c_w_id = 1", kLitSingle),
            (Texts{"c_last='abc'", "c_w_id=1"}));
  const std::string bad = "SELECT * FROM customer WHERE c_last = E'a\\\x8d' AND c_w_id = 1";
  for (int round = 0; round < 2; ++round) {
    RefVec got, cold;
    EXPECT_FALSE(ex.ExtractUncached(bad, kLitSingle, {}, &cold).ok());
    EXPECT_FALSE(ex.Extract(bad, kLitSingle, &got).ok());
  }
}

// libpg_query's lexer takes time quadratic in a run of operator characters
// (PostgreSQL's scan.l drops a trailing + or - and rescans the rest), so the
// fuzzer's `1 ++++...` inputs cost ~40 ms of CPU per parse at 4,000
// characters; written `+ + + ...` they parse in linear time but nest one
// tree level per operator (the fuzzer's corpus filled with 2 KB of them,
// each parsed four times to the JSON depth limit). A chain over
// kMaxOperatorRun (PostgreSQL's longest operator name) is refused before
// libpg_query on every path; one at the bound parses, and a long run inside
// a string or a comment is no operator.
TEST(Features, OperatorRunIsBounded) {
  RefExtractor ex(Tpcc());
  const std::string head = "SELECT * FROM warehouse WHERE w_id = 1 AND w_ytd = (";  // '(' ends the '=' chain
  std::string spaced;
  for (uint32_t i = 0; i <= kMaxOperatorRun; ++i) spaced += i % 2 ? "+ " : "- /* c */ ";
  for (const std::string& run : {std::string(kMaxOperatorRun + 1, '+'), std::string(4000, '+'),
                                 "-" + std::string(kMaxOperatorRun, '+'), "?" + std::string(kMaxOperatorRun, '+'),
                                 spaced}) {
    ExpectRefusedOnEveryPath(ex, head + run + "1)", "operator characters");
  }
  EXPECT_EQ(Refs(ex, head + std::string(kMaxOperatorRun, '+') + "1)", kCanSingle), Texts{"w_id=1"});
  const std::string long_run(1000, '+');
  EXPECT_EQ(Refs(ex, "SELECT * FROM warehouse WHERE w_id = 1 AND w_name = '" + long_run + "'", kCanSingle),
            (Texts{"w_id=1", "w_name='" + long_run + "'"}));
  EXPECT_EQ(Refs(ex, "SELECT * FROM warehouse /* " + long_run + " */ WHERE w_id = 1", kCanSingle), Texts{"w_id=1"});
  EXPECT_EQ(Refs(ex, "SELECT * FROM warehouse WHERE w_id = 1 -- " + long_run, kCanSingle), Texts{"w_id=1"});
}

}  // namespace
}  // namespace corral
