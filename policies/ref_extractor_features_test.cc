// Tests of reference extraction: the SQL features (IN lists, parameters,
// quoting, OR chains, ANY arrays, aliases, subqueries, functions, errors,
// name collisions, multiplicity, output as a set).
#include "policies/ref_extractor.h"

#include <map>
#include <random>

#include "gtest/gtest.h"
#include "policies/ref_extractor_testing.h"

namespace corral {
namespace {

using namespace testing_refs;  // NOLINT: the shared test helpers

// ---------------------------------------------------------------- features

TEST(Features, InLists) {
  RefExtractor ex(Tpcc());
  const std::string sql = "SELECT * FROM stock WHERE s_w_id = 5 AND s_i_id IN (1, 2, 3)";
  EXPECT_EQ(Refs(ex, sql, kCanSingle), (Texts{"w_id=5", "i_id=1", "i_id=2", "i_id=3"}));
  EXPECT_EQ(Refs(ex, sql, kCanAll), (Texts{"i_id=1 AND w_id=5", "i_id=2 AND w_id=5", "i_id=3 AND w_id=5"}));
  // Only the first IN list expands under All.
  const std::string two = "SELECT * FROM stock WHERE s_w_id IN (5, 6) AND s_i_id IN (1, 2)";
  EXPECT_EQ(Refs(ex, two, kCanSingle), (Texts{"w_id=5", "w_id=6", "i_id=1", "i_id=2"}));
  EXPECT_EQ(Refs(ex, two, kCanAll), (Texts{"w_id=5", "w_id=6"}));
  // NOT IN yields nothing.
  EXPECT_EQ(Refs(ex, "SELECT * FROM item WHERE i_id NOT IN (1, 2)", kCanSingle), Texts{});
}

TEST(Features, ParametersAndNormalization) {
  RefExtractor ex(Tpcc());
  // A text parameter "5", the literal 5, '5', 5.0 and 005 give one reference.
  RefId want = RefId::Of("w_id=5");
  for (const std::string& sql : {std::string("SELECT * FROM warehouse WHERE w_id = 5"),
                                 std::string("SELECT * FROM warehouse WHERE w_id = '5'"),
                                 std::string("SELECT * FROM warehouse WHERE w_id = 5.0"),
                                 std::string("SELECT * FROM warehouse WHERE w_id = 005"),
                                 std::string("SELECT * FROM warehouse WHERE w_id = '5'::int")}) {
    RefVec ids;
    ASSERT_TRUE(ex.Extract(sql, kCanSingle, &ids).ok()) << sql;
    EXPECT_EQ(ids, RefVec{want}) << sql;
  }
  std::vector<ParamValue> p = {{"5"}};
  EXPECT_EQ(Refs(ex, "SELECT * FROM warehouse WHERE w_id = $1", kCanSingle, p), Texts{"w_id=5"});
  EXPECT_EQ(Refs(ex, "SELECT * FROM warehouse WHERE w_id = $1::integer", kCanSingle, p), Texts{"w_id=5"});
  // Null and missing parameters yield nothing.
  EXPECT_EQ(Refs(ex, "SELECT * FROM warehouse WHERE w_id = $1", kCanSingle, {{"", true}}), Texts{});
  EXPECT_EQ(Refs(ex, "SELECT * FROM warehouse WHERE w_id = $2", kCanSingle, p), Texts{});
  // Text columns keep the text exactly: '05' and '5' differ; the parameter "5" equals '5'.
  EXPECT_EQ(Refs(ex, "SELECT * FROM customer WHERE c_last = '05'", kCanSingle), Texts{"c_last='05'"});
  EXPECT_EQ(Refs(ex, "SELECT * FROM customer WHERE c_last = $1", kCanSingle, p), Texts{"c_last='5'"});
  // Negative numbers, with and without a space.
  EXPECT_EQ(Refs(ex, "SELECT * FROM warehouse WHERE w_id = -7", kCanSingle), Texts{"w_id=-7"});
  EXPECT_EQ(Refs(ex, "SELECT * FROM warehouse WHERE w_id = - 7", kCanSingle), Texts{"w_id=-7"});
  EXPECT_EQ(Refs(ex, "SELECT * FROM warehouse WHERE w_id = -7.50", kCanSingle), Texts{"w_id=-7.5"});
  // Constant on the left.
  EXPECT_EQ(Refs(ex, "SELECT * FROM warehouse WHERE 9 = w_id", kCanSingle), Texts{"w_id=9"});
}

TEST(Features, StringQuotingAndEscaping) {
  RefExtractor ex(Tpcc());
  EXPECT_EQ(Refs(ex, "SELECT * FROM customer WHERE c_last = 'O''Brien'", kLitSingle), Texts{"c_last='O''Brien'"});
  EXPECT_EQ(Refs(ex, "SELECT * FROM customer WHERE c_last = E'O\\'Brien'", kLitSingle), Texts{"c_last='O''Brien'"});
  EXPECT_EQ(Refs(ex, "SELECT * FROM customer WHERE c_last = E'a\\tb'", kLitSingle), Texts{"c_last='a\tb'"});
  EXPECT_EQ(Refs(ex, "SELECT * FROM customer WHERE c_last = ''", kLitSingle), Texts{"c_last=''"});
  // A string value holding " AND " cannot be mistaken for two predicates.
  EXPECT_EQ(Refs(ex, "SELECT * FROM customer WHERE c_last = 'x AND c_id=1' AND c_id = 2", kLitAll),
            Texts{"c_id=2 AND c_last='x AND c_id=1'"});
  // Dollar quoting is handled (by the uncached path every time).
  EXPECT_EQ(Refs(ex, "SELECT * FROM customer WHERE c_last = $$O'B$$", kLitSingle), Texts{"c_last='O''B'"});
}

TEST(Features, OrChainsOnOneColumnAreInLists) {
  RefExtractor ex(Tpcc());
  const std::string sql = "SELECT * FROM stock WHERE s_w_id = 5 AND (s_i_id = 1 OR s_i_id = 2 OR s_i_id IN (3, 4))";
  EXPECT_EQ(Refs(ex, sql, kCanSingle), (Texts{"w_id=5", "i_id=1", "i_id=2", "i_id=3", "i_id=4"}));
  EXPECT_EQ(Refs(ex, sql, kCanAll), (Texts{"i_id=1 AND w_id=5", "i_id=2 AND w_id=5", "i_id=3 AND w_id=5",
                                           "i_id=4 AND w_id=5"}));
  // Constant on either side, parameters, nested parentheses, a top-level OR.
  EXPECT_EQ(Refs(ex, "SELECT * FROM item WHERE 7 = i_id OR (i_id = $1 OR i_id = ANY($2))", kCanSingle,
                 {{"8"}, {"{9,10}"}}),
            (Texts{"i_id=7", "i_id=8", "i_id=9", "i_id=10"}));
  // The same OR as an IN list gives the same references.
  EXPECT_EQ(Refs(ex, "SELECT * FROM item WHERE i_id = 1 OR i_id = 2", kLitAll),
            Refs(ex, "SELECT * FROM item WHERE i_id IN (1, 2)", kLitAll));
}

TEST(Features, AnyArraysAreInLists) {
  RefExtractor ex(Tpcc());
  const Texts want = {"w_id=5", "i_id=1", "i_id=2", "i_id=3"};
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE s_w_id = 5 AND s_i_id = ANY(ARRAY[1, 2, 3])", kCanSingle), want);
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE s_w_id = 5 AND s_i_id = ANY(ARRAY[1, 2, 3]::int[])", kCanSingle),
            want);
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE s_w_id = 5 AND s_i_id = ANY('{1, 2,3}')", kCanSingle), want);
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE s_w_id = 5 AND s_i_id = ANY('{1,2,3}'::int[])", kCanSingle), want);
  // An array parameter: a text array literal, or a typed array (elements).
  const std::string any = "SELECT * FROM stock WHERE s_w_id = $1 AND s_i_id = ANY($2)";
  EXPECT_EQ(Refs(ex, any, kCanSingle, {{"5"}, {"{1,2,3}"}}), want);
  ParamValue elems[] = {{"1"}, {"", true}, {"2.0"}, {"3"}};
  ParamValue arr;
  arr.is_array = true;
  arr.elements = elems;
  arr.num_elements = 4;
  EXPECT_EQ(Refs(ex, any, kCanSingle, {{"5"}, arr}), want);  // the NULL element yields nothing
  EXPECT_EQ(Refs(ex, any, kCanAll, {{"5"}, arr}), (Texts{"i_id=1 AND w_id=5", "i_id=2 AND w_id=5", "i_id=3 AND w_id=5"}));
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE s_w_id = $1 AND s_i_id = ANY($2::int[])", kCanSingle, {{"5"}, arr}),
            want);
  // Quoted elements keep their text; a text column quotes them.
  EXPECT_EQ(Refs(ex, "SELECT * FROM customer WHERE c_last = ANY($1)", kCanSingle, {{R"({"O'Brien", "a,b", BAR, NULL, "NULL"})"}}),
            (Texts{"c_last='O''Brien'", "c_last='a,b'", "c_last='BAR'", "c_last='NULL'"}));
  // Empty, malformed or multi-dimensional arrays, and NULL, yield nothing
  // from the ANY (but the statement's other references stay).
  for (const char* bad : {"{}", "{1,2", "{{1,2},{3,4}}", "1,2", ""}) {
    EXPECT_EQ(Refs(ex, any, kCanSingle, {{"5"}, {bad}}), Texts{"w_id=5"}) << bad;
  }
  EXPECT_EQ(Refs(ex, any, kCanSingle, {{"5"}, {"", true}}), Texts{"w_id=5"});
  // An array bound where a scalar is compared yields nothing; ALL and <> ANY nothing.
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE s_w_id = $1", kCanSingle, {arr}), Texts{});
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE s_i_id = ALL(ARRAY[1, 2])", kCanSingle), Texts{});
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE s_i_id <> ANY(ARRAY[1, 2])", kCanSingle), Texts{});
  // ANY over a sub-select is a sub-link: the sub-select's own references.
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE s_i_id = ANY(SELECT i_id FROM item WHERE i_id = 4)", kCanSingle),
            Texts{"i_id=4"});
}

TEST(Features, AliasesAndQualifiedNames) {
  RefExtractor ex(Tpcc());
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock s WHERE s.s_w_id = 5 AND stock_alias_free = 1", kCanSingle),
            (Texts{"w_id=5", "stock_alias_free=1"}));
  EXPECT_EQ(Refs(ex, "SELECT * FROM public.stock AS st WHERE st.s_i_id = 3", kCanSingle), Texts{"i_id=3"});
  EXPECT_EQ(Refs(ex, "UPDATE stock AS x SET s_quantity = 1 WHERE x.s_w_id = 2", kLitSingle),
            (Texts{"s_quantity=1", "s_w_id=2"}));
}

TEST(Features, OrAcrossColumnsAndNotYieldNothing) {
  RefExtractor ex(Tpcc());
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE s_w_id = 5 AND (s_i_id = 1 OR s_dist_01 = 'x')", kCanSingle),
            Texts{"w_id=5"});
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE s_w_id = 5 OR s_i_id = 1", kCanSingle), Texts{});
  // An OR with anything but equalities on its column yields nothing.
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE s_i_id = 1 OR s_i_id > 7", kCanSingle), Texts{});
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE s_i_id = 1 OR (s_i_id = 2 AND s_w_id = 3)", kCanSingle), Texts{});
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE NOT (s_w_id = 5) AND s_i_id = 1", kCanSingle), Texts{"i_id=1"});
  // Ranges, LIKE, IS NULL, <> and column=column yield nothing.
  EXPECT_EQ(Refs(ex,
                 "SELECT * FROM stock, item WHERE s_w_id > 5 AND s_i_id <> 1 AND s_data LIKE 'a%' "
                 "AND s_ytd IS NULL AND s_i_id = i_id AND s_quantity BETWEEN 1 AND 4",
                 kCanSingle),
            Texts{});
}

TEST(Features, SubqueriesAndJoins) {
  RefExtractor ex(Tpcc());
  EXPECT_EQ(Refs(ex,
                 "SELECT * FROM customer c JOIN orders o ON o.o_c_id = c.c_id AND o.o_w_id = 3 "
                 "WHERE c.c_w_id = 3 AND c.c_d_id = 4 AND c.c_id IN (SELECT h_c_id FROM history WHERE h_amount = 7)",
                 kCanAll),
            (Texts{"d_id=4 AND w_id=3", "h_amount=7"}));
  EXPECT_EQ(Refs(ex, "SELECT * FROM (SELECT * FROM item WHERE i_id = 4) AS sub WHERE sub.i_price = 3", kLitSingle),
            (Texts{"i_price=3", "i_id=4"}));
  EXPECT_EQ(Refs(ex, "WITH x AS (UPDATE item SET i_price = 1 WHERE i_id = 2 RETURNING *) SELECT * FROM x",
                 kLitSingle),
            (Texts{"i_price=1", "i_id=2"}));
}

TEST(Features, FunctionsAndProcedures) {
  std::ifstream in("schemas/tpcc.sql");
  std::stringstream ss;
  ss << in.rdbuf();
  auto schema = SchemaFrom(ss.str() +
                           "\nCREATE FUNCTION new_order(w_id int, d_id int, c_id int, note text) RETURNS int "
                           "LANGUAGE sql AS 'select 1';\n"
                           "CREATE PROCEDURE payment(p_w int, p_amount numeric) LANGUAGE sql AS $$ select 1 $$;\n",
                           "p_w=w_id\n");
  RefExtractor ex(schema);
  EXPECT_EQ(Refs(ex, "SELECT new_order(1, 2, 3, 'x')", kLitSingle),
            (Texts{"w_id=1", "d_id=2", "c_id=3", "note='x'"}));
  EXPECT_EQ(Refs(ex, "SELECT * FROM new_order($1, $2, 3, $3)", kCanAll, {{"1"}, {"2"}, {"5"}}),
            (Texts{"c_id=3 AND d_id=2 AND note='5' AND w_id=1"}));
  EXPECT_EQ(Refs(ex, "CALL payment(7, 10.50)", kLitSingle), (Texts{"p_w=7", "p_amount=10.5"}));
  EXPECT_EQ(Refs(ex, "CALL payment(7, 10.50)", kCanSingle), (Texts{"w_id=7", "p_amount=10.5"}));
  EXPECT_EQ(Refs(ex, "CALL payment(p_amount => 1, p_w => 2)", kLitSingle), (Texts{"p_amount=1", "p_w=2"}));
  EXPECT_EQ(Refs(ex, "SELECT unknown_fn(1, 2)", kLitSingle), Texts{});
}

// StatementFacts::plain_read: a SELECT that only reads, through the cached
// path, the per-thread raw-text path and the uncached path alike.
TEST(Features, PlainReads) {
  std::ifstream in("schemas/tpcc.sql");
  std::stringstream ss;
  ss << in.rdbuf();
  auto schema = SchemaFrom(ss.str() + "\nCREATE FUNCTION lower_stock(w int) RETURNS int LANGUAGE sql AS 'select 1';\n"
                                      "CREATE FUNCTION max(w_id int) RETURNS int LANGUAGE sql AS 'select 1';\n");
  RefExtractor ex(schema);
  const std::map<std::string, bool> cases = {
      {"SELECT * FROM warehouse WHERE w_id = 5", true},
      {"select w_tax from warehouse where w_id = 5; SELECT 1", true},
      {"SELECT count(*), sum(s_quantity) FROM stock WHERE s_w_id = 5 AND s_i_id IN (1, 2)", true},
      {"SELECT lower(c_last) FROM customer c JOIN district d ON d.d_id = c.c_d_id WHERE c.c_w_id = 2", true},
      {"SELECT * FROM stock WHERE s_w_id = 5 AND s_i_id = (SELECT max(i_id) FROM item)", false},  // the database's max
      {"SELECT pg_catalog.count(*) FROM item WHERE i_id = 1", true},
      {"SELECT * FROM warehouse WHERE w_id = 5 FOR UPDATE", false},
      {"SELECT * FROM warehouse WHERE w_id IN (SELECT d_w_id FROM district FOR SHARE)", false},
      {"SELECT * INTO TEMP t FROM warehouse WHERE w_id = 5", false},
      {"WITH u AS (UPDATE warehouse SET w_ytd = 0 WHERE w_id = 5 RETURNING *) SELECT * FROM u", false},
      {"SELECT nextval('s')", false},
      {"SELECT set_config('default_transaction_isolation', 'serializable', false)", false},
      {"SELECT pg_advisory_lock(7)", false},
      {"SELECT lower_stock(5)", false},
      {"SELECT myschema.lower(c_last) FROM customer", false},
      {"SELECT 1; UPDATE warehouse SET w_ytd = 0 WHERE w_id = 5", false},
      {"UPDATE warehouse SET w_ytd = 0 WHERE w_id = 5", false},
      {"BEGIN", false},
      {"SHOW search_path", false},
      {"SELEC 1", false},
  };
  for (int pass = 0; pass < 3; ++pass) {  // compile, shape cache, raw-text cache
    for (const auto& [sql, want] : cases) {
      StatementFacts facts;
      RefVec ids;
      (void)ex.Extract(sql, kCanSingle, ParamSpan(), &ids, nullptr, nullptr, &facts);
      EXPECT_EQ(facts.plain_read, want) << sql << " pass " << pass;
      StatementFacts uncached;
      RefVec ids2;
      (void)ex.ExtractUncached(sql, kCanSingle, ParamSpan(), &ids2, nullptr, nullptr, &uncached);
      EXPECT_EQ(uncached.plain_read, want) << sql;
      EXPECT_EQ(ids, ids2) << sql;
    }
  }
  // skip_plain_read: a plain read appends nothing, anything else as before.
  for (const auto& [sql, want] : cases) {
    RefVec all, skipped;
    (void)ex.Extract(sql, kCanSingle, &all);
    StatementFacts facts;
    facts.skip_plain_read = true;
    (void)ex.Extract(sql, kCanSingle, ParamSpan(), &skipped, nullptr, nullptr, &facts);
    EXPECT_EQ(skipped, want ? RefVec{} : all) << sql;
  }
  EXPECT_FALSE(Refs(ex, "SELECT * FROM warehouse WHERE w_id = 5", kCanSingle).empty());
  // A prepared template tells the same.
  auto prepared = ex.Prepare("SELECT * FROM warehouse WHERE w_id = $1");
  ASSERT_TRUE(prepared.ok());
  StatementFacts facts;
  facts.skip_plain_read = true;
  RefVec ids;
  ASSERT_TRUE(ex.ExtractPrepared(**prepared, kCanSingle, {{"5"}}, &ids, nullptr, nullptr, &facts).ok());
  EXPECT_TRUE(facts.plain_read);
  EXPECT_TRUE(ids.empty());
}

TEST(Features, UnsupportedStatementsYieldNothing) {
  RefExtractor ex(Tpcc());
  for (const char* sql : {"CREATE TABLE x (a int)", "SET search_path = public", "SHOW search_path", "BEGIN",
                          "COMMIT", "VACUUM", "DROP TABLE x", "SELECT 1", "EXPLAIN SELECT * FROM item WHERE i_id = 1",
                          "UPDATE item SET i_price = NULL WHERE i_id = NULL", "   ", ""}) {
    EXPECT_EQ(Refs(ex, sql, kCanSingle), Texts{}) << sql;
  }
}

TEST(Features, SyntaxErrorsCarryThePosition) {
  RefExtractor ex(Tpcc());
  for (int round = 0; round < 2; ++round) {
    RefVec ids;
    absl::Status st = ex.Extract("SELECT * FROM item WHERE i_id = = 1", kCanSingle, &ids);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    ASSERT_TRUE(SyntaxErrorPosition(st).has_value()) << st;
    EXPECT_EQ(*SyntaxErrorPosition(st), 33);
    EXPECT_NE(st.message().find("position 33"), absl::string_view::npos) << st;
    EXPECT_TRUE(ids.empty());
  }
  RefVec ids;
  EXPECT_FALSE(ex.Extract("SELECT 'unterminated", kCanSingle, &ids).ok());
  EXPECT_FALSE(SyntaxErrorPosition(absl::OkStatus()).has_value());
}

TEST(Features, NameCollisionsAreTableQualified) {
  auto schema = SchemaFrom(
      "CREATE TABLE customers (id int PRIMARY KEY, name text);\n"
      "CREATE TABLE products (id int PRIMARY KEY, name text);\n"
      "CREATE TABLE orders (id int PRIMARY KEY, customer_id int REFERENCES customers, qty int);\n");
  RefExtractor ex(schema);
  EXPECT_EQ(Refs(ex, "SELECT * FROM orders WHERE id = 5", kLitSingle), Texts{"orders.id=5"});
  EXPECT_EQ(Refs(ex, "SELECT * FROM products p WHERE p.id = 5", kLitSingle), Texts{"products.id=5"});
  EXPECT_EQ(Refs(ex, "SELECT * FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id = 5 "
                     "AND c.name = 'x' AND qty = 2",
                 kLitSingle),
            (Texts{"orders.id=5", "customers.name='x'", "qty=2"}));
  EXPECT_EQ(Refs(ex, "SELECT * FROM orders WHERE customer_id = 3", kCanSingle), Texts{"customers.id=3"});
  EXPECT_EQ(Refs(ex, "SELECT * FROM customers WHERE id = 3", kCanSingle), Texts{"customers.id=3"});
  EXPECT_EQ(Refs(ex, "SELECT * FROM products WHERE id = 3", kCanSingle), Texts{"products.id=3"});
  EXPECT_EQ(Refs(ex, "UPDATE products SET name = 'n' WHERE id = 3", kLitAll),
            (Texts{"products.name='n'", "products.id=3"}));
}

TEST(Features, WithoutASchemaNamesAreAsWritten) {
  RefExtractor ex(nullptr);
  EXPECT_EQ(Refs(ex, "UPDATE stock s SET s_quantity = 6 WHERE s.s_i_id = 2 AND s_w_id = 5", kCanAll),
            (Texts{"s_quantity=6", "s_i_id=2 AND s_w_id=5"}));
  EXPECT_EQ(Refs(ex, "INSERT INTO t VALUES (1, 2)", kLitSingle), Texts{});  // no column list, no schema
}

TEST(Features, MultiplicityCountsStatementsNamingAReference) {
  RefExtractor ex(Tpcc());
  RefVec ids;
  RefMult mult;
  Texts texts;
  // w_id=5 named by three statements, the customer's w_id=7 by one.
  ASSERT_TRUE(ex.Extract("UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 5", kCanSingle, {}, &ids, &mult, &texts).ok());
  ASSERT_TRUE(ex.Extract("SELECT d_name FROM district WHERE d_w_id = $1 AND d_id = $2", kCanSingle,
                         {ParamValue{"5"}, ParamValue{"3"}}, &ids, &mult, &texts).ok());
  ASSERT_TRUE(ex.Extract("SELECT c_balance FROM customer WHERE c_w_id = 7 AND c_d_id = 3 AND c_id = 9", kCanSingle,
                         {}, &ids, &mult, &texts).ok());
  auto prep = ex.Prepare("UPDATE district SET d_ytd = d_ytd + $1 WHERE d_w_id = $2 AND d_id = $3");
  ASSERT_TRUE(prep.ok()) << prep.status();
  ASSERT_TRUE(ex.ExtractPrepared(**prep, kCanSingle, {ParamValue{"10"}, ParamValue{"5"}, ParamValue{"3"}}, &ids,
                                 &mult, &texts).ok());
  // One statement naming w_id=5 and d_id=3 twice each counts once.
  ASSERT_TRUE(ex.Extract("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_amount) "
                         "VALUES (9, 3, 5, 3, 5, 10)",
                         kCanSingle, {}, &ids, &mult, &texts).ok());
  ASSERT_EQ(ids.size(), mult.size());
  std::map<std::string, int> got;
  for (size_t i = 0; i < texts.size(); ++i) got[texts[i]] = mult[i];
  EXPECT_EQ(got["w_id=5"], 4);
  EXPECT_EQ(got["d_id=3"], 4);
  EXPECT_EQ(got["c_id=9"], 2);
  EXPECT_EQ(got["w_id=7"], 1);
  // A RefVec filled without counts is counted as once each.
  RefVec ids2 = {RefId::Of("w_id=5")};
  RefMult mult2;
  ASSERT_TRUE(ex.Extract("SELECT w_tax FROM warehouse WHERE w_id = 5", kCanSingle, {}, &ids2, &mult2).ok());
  ASSERT_EQ(mult2.size(), 1u);
  EXPECT_EQ(mult2[0], 2);
}

TEST(Features, OutputIsASetAndAppends) {
  RefExtractor ex(Tpcc());
  RefVec ids = {RefId::Of("w_id=1")};
  Texts texts;
  ASSERT_TRUE(ex.Extract("SELECT * FROM district WHERE d_w_id = 1 AND d_id = 2", kCanSingle, &ids, &texts).ok());
  EXPECT_EQ(ids, (RefVec{RefId::Of("w_id=1"), RefId::Of("d_id=2")}));
  EXPECT_EQ(texts, Texts{"d_id=2"});
  EXPECT_EQ(Refs(ex, "SELECT * FROM stock WHERE s_w_id = 1 AND s_w_id = 1 AND s_i_id = 2", kCanAll),
            Texts{"i_id=2 AND w_id=1"});
}

TEST(Features, GarbageNeverCrashesAndCacheAgrees) {
  RefExtractor ex(Tpcc());
  std::mt19937_64 rng(5);
  const char kAlphabet[] = "ab_$'\"eE;-/*().,=<>: 0123456789\n\\";
  int ok = 0;
  for (int i = 0; i < 400; ++i) {
    std::string sql = "SELECT * FROM stock WHERE s_w_id = ";
    int n = rng() % 24;
    for (int k = 0; k < n; ++k) sql += kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
    RefVec a, b;
    Texts ta, tb;
    absl::Status sa = ex.Extract(sql, kCanAll, &a, &ta);
    absl::Status sb = ex.ExtractUncached(sql, kCanAll, {}, &b, &tb);
    ASSERT_EQ(sa.ok(), sb.ok()) << sql;
    ASSERT_EQ(ta, tb) << sql;
    ok += sa.ok();
  }
  EXPECT_GT(ok, 0);
}

TEST(Features, ForShareAndMultiRowInsert) {
  RefExtractor ex(Tpcc());
  EXPECT_EQ(Refs(ex, "SELECT * FROM item WHERE i_id = 3 FOR SHARE", kCanSingle), Texts{"i_id=3"});
  EXPECT_EQ(Refs(ex, "INSERT INTO new_order VALUES (1, 2, 3), (4, 2, 3)", kCanSingle),
            (Texts{"o_id=1", "d_id=2", "w_id=3", "o_id=4"}));
}

}  // namespace
}  // namespace corral
