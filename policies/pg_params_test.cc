// Tests of Bind parameter decoding: every type's binary encoding (built by
// hand here; tests/pg/pg_params_server_test.cc takes them from PostgreSQL)
// gives the text PostgreSQL prints and the same references as the text path;
// arrays, format-code rules, undecodable values, and garbage that never
// crashes.
#include "policies/pg_params.h"

#include <fstream>
#include <random>
#include <sstream>

#include "gtest/gtest.h"
#include "policies/ref_extractor.h"

namespace corral {
namespace {

std::string Be16(uint16_t v) { return std::string{static_cast<char>(v >> 8), static_cast<char>(v & 0xff)}; }
std::string Be32(uint32_t v) { return Be16(v >> 16) + Be16(v & 0xffff); }
std::string Be64(uint64_t v) { return Be32(static_cast<uint32_t>(v >> 32)) + Be32(static_cast<uint32_t>(v)); }

std::string Numeric(int16_t weight, uint16_t sign, int16_t dscale, std::vector<uint16_t> digits) {
  std::string s = Be16(static_cast<uint16_t>(digits.size())) + Be16(static_cast<uint16_t>(weight)) + Be16(sign) +
                  Be16(static_cast<uint16_t>(dscale));
  for (uint16_t d : digits) s += Be16(d);
  return s;
}

// A one-dimensional binary array; absl::nullopt elements are NULL.
std::string Array(uint32_t elem_oid, const std::vector<absl::optional<std::string>>& elems) {
  bool nulls = false;
  for (const auto& e : elems) nulls |= !e.has_value();
  std::string s = Be32(1) + Be32(nulls ? 1 : 0) + Be32(elem_oid) + Be32(static_cast<uint32_t>(elems.size())) + Be32(1);
  for (const auto& e : elems) s += e.has_value() ? Be32(static_cast<uint32_t>(e->size())) + *e : Be32(0xffffffff);
  return s;
}

constexpr int64_t kUsecsPerDay = int64_t{86400} * 1000000;

// Decodes one value in `format`: its text, "{e1<sep>e2...}" for an array,
// or "<undecodable>".
std::string DecodeOne(uint32_t oid, int16_t format, const std::string& bytes, const char* sep) {
  BoundParams b;
  const uint32_t oids[] = {oid};
  const int16_t fmt[] = {format};
  const RawParam raw[] = {{bytes}};
  EXPECT_TRUE(b.Decode(oids, fmt, raw).ok());
  if (b.outcomes()[0] == DecodeOutcome::kUndecodable) {
    EXPECT_EQ(b.undecodable(), 1);
    EXPECT_TRUE(b.params()[0].is_null);
    return "<undecodable>";
  }
  EXPECT_EQ(b.undecodable(), 0);
  const ParamValue& p = b.params()[0];
  if (!p.is_array) return std::string(p.text);
  std::string out = "{";
  for (uint32_t i = 0; i < p.num_elements; ++i) {
    if (i > 0) out += sep;
    out += p.elements[i].is_null ? "NULL" : std::string(p.elements[i].text);
  }
  return out + "}";
}
std::string Binary(uint32_t oid, const std::string& bytes) { return DecodeOne(oid, 1, bytes, ","); }
// Text format with the declared type; elements joined by '|' (they may hold commas).
std::string Text(uint32_t oid, const std::string& text) { return DecodeOne(oid, 0, text, "|"); }

TEST(PgParams, IntegersBoolAndStrings) {
  EXPECT_EQ(Binary(pgoid::kInt2, Be16(0xfff6)), "-10");
  EXPECT_EQ(Binary(pgoid::kInt4, Be32(5)), "5");
  EXPECT_EQ(Binary(pgoid::kInt4, Be32(0x80000000)), "-2147483648");
  EXPECT_EQ(Binary(pgoid::kInt8, Be64(0x7fffffffffffffffULL)), "9223372036854775807");
  EXPECT_EQ(Binary(pgoid::kInt8, Be64(static_cast<uint64_t>(-42))), "-42");
  EXPECT_EQ(Binary(pgoid::kOid, Be32(0xffffffff)), "4294967295");
  EXPECT_EQ(Binary(pgoid::kBool, std::string(1, '\1')), "true");
  EXPECT_EQ(Binary(pgoid::kBool, std::string(1, '\0')), "false");
  EXPECT_EQ(Binary(pgoid::kText, "O'Brien"), "O'Brien");
  EXPECT_EQ(Binary(pgoid::kVarchar, ""), "");
  EXPECT_EQ(Binary(pgoid::kName, "pg_class"), "pg_class");
  EXPECT_EQ(Binary(pgoid::kBpchar, "ab   "), "ab");  // char(n) padding is not part of the value
  std::string u;
  for (int i = 0; i < 16; ++i) u.push_back(static_cast<char>(0xa0 + i));
  EXPECT_EQ(Binary(pgoid::kUuid, u), "a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
  // Wrong sizes are undecodable.
  EXPECT_EQ(Binary(pgoid::kInt4, Be16(5)), "<undecodable>");
  EXPECT_EQ(Binary(pgoid::kInt2, Be32(5)), "<undecodable>");
  EXPECT_EQ(Binary(pgoid::kInt8, Be32(5)), "<undecodable>");
  EXPECT_EQ(Binary(pgoid::kBool, ""), "<undecodable>");
  EXPECT_EQ(Binary(pgoid::kUuid, u.substr(1)), "<undecodable>");
}

TEST(PgParams, Numeric) {
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(0, 0, 0, {5})), "5");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(0, 0x4000, 3, {12, 3400})), "-12.340");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(-1, 0, 3, {10})), "0.001");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(-2, 0, 8, {1})), "0.00000001");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(2, 0, 1, {1, 2345, 6789, 5000})), "123456789.5");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(1, 0, 0, {1})), "10000");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(0, 0, 2, {})), "0.00");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(0, 0x4000, 0, {})), "0");  // no negative zero
  // Digits the scale hides are truncated (numeric_recv), and then no "-0".
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(-2, 0x4000, 2, {5})), "0.00");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(0, 0, 0, {3, 5000})), "3");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(0, 0xC000, 0, {})), "NaN");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(0, 0xD000, 0, {})), "Infinity");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(0, 0xF000, 0, {})), "-Infinity");
  // Malformed: a digit >= 10000, a bad sign, a length that disagrees with
  // ndigits, absurd weight or scale.
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(0, 0, 0, {10000})), "<undecodable>");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(0, 0x1234, 0, {1})), "<undecodable>");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(0, 0, 0, {1}) + "x"), "<undecodable>");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(0, 0, 0, {1, 2}).substr(0, 10)), "<undecodable>");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(32000, 0, 0, {1})), "<undecodable>");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(0, 0, 16000, {1})), "<undecodable>");
  EXPECT_EQ(Binary(pgoid::kNumeric, Numeric(0, 0, -1, {1})), "<undecodable>");
  EXPECT_EQ(Binary(pgoid::kNumeric, "\xff\xff"), "<undecodable>");
}

TEST(PgParams, DatesAndTimestamps) {
  const int32_t jan31_2024 = 24 * 365 + 6 + 30;  // days since 2000-01-01
  EXPECT_EQ(Binary(pgoid::kDate, Be32(0)), "2000-01-01");
  EXPECT_EQ(Binary(pgoid::kDate, Be32(jan31_2024)), "2024-01-31");
  EXPECT_EQ(Binary(pgoid::kDate, Be32(static_cast<uint32_t>(-1))), "1999-12-31");
  EXPECT_EQ(Binary(pgoid::kDate, Be32(31 + 28)), "2000-02-29");
  EXPECT_EQ(Binary(pgoid::kDate, Be32(static_cast<uint32_t>(-2451545))), "4714-11-24 BC");  // Julian day 0
  EXPECT_EQ(Binary(pgoid::kDate, Be32(0x7fffffff)), "infinity");
  EXPECT_EQ(Binary(pgoid::kDate, Be32(0x80000000)), "-infinity");
  EXPECT_EQ(Binary(pgoid::kDate, Be32(static_cast<uint32_t>(-2451546))), "<undecodable>");
  const int64_t t = (int64_t{jan31_2024} * 86400 + 13 * 3600 + 45 * 60 + 7) * 1000000 + 250000;
  EXPECT_EQ(Binary(pgoid::kTimestamp, Be64(t)), "2024-01-31 13:45:07.25");
  EXPECT_EQ(Binary(pgoid::kTimestamptz, Be64(t)), "2024-01-31 13:45:07.25+00");
  EXPECT_EQ(Binary(pgoid::kTimestamp, Be64(t - 250000 + 1)), "2024-01-31 13:45:07.000001");
  EXPECT_EQ(Binary(pgoid::kTimestamp, Be64(0)), "2000-01-01 00:00:00");
  EXPECT_EQ(Binary(pgoid::kTimestamp, Be64(static_cast<uint64_t>(-1))), "1999-12-31 23:59:59.999999");
  EXPECT_EQ(Binary(pgoid::kTimestamptz, Be64(static_cast<uint64_t>(-int64_t{2451545} * kUsecsPerDay + 3600000000))),
            "4714-11-24 01:00:00+00 BC");
  EXPECT_EQ(Binary(pgoid::kTimestamp, Be64(0x7fffffffffffffffULL)), "infinity");
  EXPECT_EQ(Binary(pgoid::kTimestamptz, Be64(0x8000000000000000ULL)), "-infinity");
  EXPECT_EQ(Binary(pgoid::kTimestamp, Be64(0x7ffffffffffffff0ULL)), "<undecodable>");  // past 294276 AD
  EXPECT_EQ(Binary(pgoid::kTimestamp, Be32(0)), "<undecodable>");
}

TEST(PgParams, BinaryArrays) {
  EXPECT_EQ(Binary(pgoid::kInt4Array, Array(pgoid::kInt4, {Be32(1), absl::nullopt, Be32(3)})), "{1,NULL,3}");
  EXPECT_EQ(Binary(pgoid::kTextArray, Array(pgoid::kText, {std::string("a,b"), std::string("")})), "{a,b,}");
  EXPECT_EQ(Binary(pgoid::kNumericArray, Array(pgoid::kNumeric, {Numeric(0, 0, 1, {5})})), "{5.0}");
  EXPECT_EQ(Binary(pgoid::kInt8Array, Be32(0) + Be32(0) + Be32(pgoid::kInt8)), "{}");  // empty: ndim 0
  // Malformed: element type other than declared, 2 dimensions, truncated,
  // trailing bytes, a count larger than the bytes, a bad element, flags.
  const std::string ok = Array(pgoid::kInt4, {Be32(1), Be32(2)});
  EXPECT_EQ(Binary(pgoid::kInt8Array, ok), "<undecodable>");
  std::string two_dims = Be32(2) + Be32(0) + Be32(pgoid::kInt4) + Be32(1) + Be32(1) + Be32(1) + Be32(1) + Be32(4) +
                         Be32(7);
  EXPECT_EQ(Binary(pgoid::kInt4Array, two_dims), "<undecodable>");
  for (size_t cut = 0; cut < ok.size(); ++cut) {
    EXPECT_EQ(Binary(pgoid::kInt4Array, ok.substr(0, cut)), "<undecodable>") << cut;
  }
  EXPECT_EQ(Binary(pgoid::kInt4Array, ok + "z"), "<undecodable>");
  std::string huge = Be32(1) + Be32(0) + Be32(pgoid::kInt4) + Be32(0x7fffffff) + Be32(1);
  EXPECT_EQ(Binary(pgoid::kInt4Array, huge), "<undecodable>");
  EXPECT_EQ(Binary(pgoid::kInt4Array, Array(pgoid::kInt4, {Be16(1)})), "<undecodable>");
  std::string bad_flags = ok;
  bad_flags[7] = 2;
  EXPECT_EQ(Binary(pgoid::kInt4Array, bad_flags), "<undecodable>");
  std::string neg_len = Be32(1) + Be32(0) + Be32(pgoid::kInt4) + Be32(1) + Be32(1) + Be32(0xfffffff0);
  EXPECT_EQ(Binary(pgoid::kInt4Array, neg_len), "<undecodable>");
}

TEST(PgParams, TextFormat) {
  EXPECT_EQ(Text(pgoid::kInt4, " 5 "), "5");
  EXPECT_EQ(Text(pgoid::kText, " 5 "), " 5 ");
  EXPECT_EQ(Text(pgoid::kBool, "t"), "true");
  EXPECT_EQ(Text(pgoid::kBool, "YES"), "true");
  EXPECT_EQ(Text(pgoid::kBool, "off"), "false");
  EXPECT_EQ(Text(pgoid::kBool, "maybe"), "<undecodable>");
  EXPECT_EQ(Text(pgoid::kBool, "o"), "<undecodable>");
  EXPECT_EQ(Text(pgoid::kBpchar, "ab  "), "ab");
  EXPECT_EQ(Text(pgoid::kUuid, "{A0EEBC99-9C0B4EF8-BB6D-6BB9BD380A11}"), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
  EXPECT_EQ(Text(pgoid::kUuid, "not-a-uuid"), "not-a-uuid");
  EXPECT_EQ(Text(pgoid::kDate, "01/31/2024"), "01/31/2024");  // compared as sent
  EXPECT_EQ(Text(701 /* float8 */, "5.0"), "5.0");            // any type: as sent
  EXPECT_EQ(Text(pgoid::kUnspecified, "{1,2}"), "{1,2}");
  EXPECT_EQ(Text(pgoid::kInt4Array, "{1, 2 ,NULL,\"3\"}"), "{1|2|NULL|3}");
  EXPECT_EQ(Text(pgoid::kTextArray, R"({"a\"b", c\,d ,"NULL",""})"), "{a\"b|c,d|NULL|}");
  EXPECT_EQ(Text(pgoid::kBoolArray, "{t,f}"), "{true|false}");
  EXPECT_EQ(Text(pgoid::kBpcharArray, "[0:1]={\"x \",y}"), "{x|y}");
  EXPECT_EQ(Text(pgoid::kInt4Array, "{}"), "{}");
  for (const char* bad : {"", "1,2", "{1,2", "{{1},{2}}", "{1,,2}", "{\"a}", "{1} x", "{a\"b}", "[1:2]{1,2}"}) {
    EXPECT_EQ(Text(pgoid::kInt4Array, bad), "<undecodable>") << bad;
  }
}

TEST(PgParams, FormatCodesFollowBindRules) {
  BoundParams b;
  const uint32_t oids[] = {pgoid::kInt4, pgoid::kInt4};
  const std::string five = Be32(5);
  const RawParam raw[] = {{five}, {"6"}};
  // One code per value.
  const int16_t per[] = {1, 0};
  ASSERT_TRUE(b.Decode(oids, per, raw).ok());
  ASSERT_EQ(b.params().size(), 2u);
  EXPECT_EQ(b.params()[0].text, "5");
  EXPECT_EQ(b.params()[1].text, "6");
  // One code for all: the text "6" is not a binary int4.
  const int16_t all_binary[] = {1};
  ASSERT_TRUE(b.Decode(oids, all_binary, raw).ok());
  EXPECT_EQ(b.params()[0].text, "5");
  EXPECT_EQ(b.outcomes()[1], DecodeOutcome::kUndecodable);
  EXPECT_EQ(b.undecodable(), 1);
  // No codes: all text; fewer declared types than values: the rest unspecified.
  const RawParam texts[] = {{"7"}, {"x"}, {"", true}};
  ASSERT_TRUE(b.Decode(absl::Span<const uint32_t>(oids, 1), {}, texts).ok());
  ASSERT_EQ(b.params().size(), 3u);
  EXPECT_EQ(b.params()[0].text, "7");
  EXPECT_EQ(b.params()[1].text, "x");
  EXPECT_TRUE(b.params()[2].is_null);
  EXPECT_EQ(b.outcomes()[2], DecodeOutcome::kNull);
  EXPECT_EQ(b.undecodable(), 0);
  // Binary with an unspecified or unknown type: undecodable, counted.
  const uint32_t unknown[] = {0, 701};
  const RawParam two_binary[] = {{five}, {Be64(0)}};
  ASSERT_TRUE(b.Decode(unknown, all_binary, two_binary).ok());
  EXPECT_EQ(b.undecodable(), 2);
  EXPECT_TRUE(b.params()[0].is_null && b.params()[1].is_null);
  // Protocol errors: two codes for three values, a code of 2.
  const RawParam three[] = {{"1"}, {"2"}, {"3"}};
  EXPECT_EQ(b.Decode({}, per, three).code(), absl::StatusCode::kInvalidArgument);
  const int16_t two[] = {2};
  EXPECT_EQ(b.Decode({}, two, three).code(), absl::StatusCode::kInvalidArgument);
  // Views stay valid across many values (the arena grows before views are taken).
  std::vector<std::string> many;
  for (int i = 0; i < 200; ++i) many.push_back(std::string(100, static_cast<char>('a' + i % 26)));
  std::vector<RawParam> rp;
  for (const auto& m : many) rp.push_back(RawParam{m});
  ASSERT_TRUE(b.Decode({}, {}, rp).ok());
  for (size_t i = 0; i < many.size(); ++i) EXPECT_EQ(b.params()[i].text, many[i]);
}

std::shared_ptr<const Schema> Tpcc() {
  std::ifstream in("schemas/tpcc.sql");
  std::stringstream ss;
  ss << in.rdbuf();
  SchemaBuilder b;
  EXPECT_TRUE(b.AddDdl(ss.str()).ok());
  return *b.Build();
}

std::vector<std::string> RefTexts(RefExtractor& ex, const std::string& sql, ParamSpan params) {
  RefVec ids;
  std::vector<std::string> texts;
  EXPECT_TRUE(ex.Extract(sql, {RefNaming::kCanonical, RefGrouping::kSingle}, params, &ids, &texts).ok()) << sql;
  return texts;
}

// The point of it all: a binary value gives the reference its text form gives.
TEST(PgParams, BinaryGivesTheTextPathsReferences) {
  RefExtractor ex(Tpcc());
  struct Case {
    const char* sql;
    uint32_t oid;
    std::string binary;
    const char* text;  // what a text-format client sends
    const char* want;
  };
  const int32_t jan31_2024 = 24 * 365 + 6 + 30;
  const std::vector<Case> cases = {
      {"UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = $1", pgoid::kInt4, Be32(5), "5", "w_id=5"},
      {"UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = $1", pgoid::kInt2, Be16(5), "5", "w_id=5"},
      {"UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = $1", pgoid::kInt8, Be64(5), "5", "w_id=5"},
      {"UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = $1", pgoid::kOid, Be32(5), "5", "w_id=5"},
      {"UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = $1", pgoid::kNumeric, Numeric(0, 0, 2, {5}), "5",
       "w_id=5"},
      {"SELECT * FROM history WHERE h_amount = $1", pgoid::kNumeric, Numeric(0, 0x4000, 3, {12, 3400}), "-12.34",
       "h_amount=-12.34"},
      {"SELECT * FROM customer WHERE c_last = $1", pgoid::kText, "BARBAR", "BARBAR", "c_last='BARBAR'"},
      {"SELECT * FROM customer WHERE c_last = $1", pgoid::kVarchar, "O'Brien", "O'Brien", "c_last='O''Brien'"},
      {"SELECT * FROM customer WHERE c_last = $1", pgoid::kName, "5", "5", "c_last='5'"},
      {"SELECT * FROM customer WHERE c_credit = $1", pgoid::kBpchar, "GC", "GC", "c_credit='GC'"},
      {"SELECT * FROM customer WHERE c_middle = $1", pgoid::kBool, std::string(1, '\1'), "true", "c_middle='true'"},
      {"SELECT * FROM customer WHERE c_data = $1", pgoid::kUuid, std::string(16, '\x11'),
       "11111111-1111-1111-1111-111111111111", "c_data='11111111-1111-1111-1111-111111111111'"},
      {"SELECT * FROM customer WHERE c_since = $1", pgoid::kDate, Be32(jan31_2024), "2024-01-31",
       "c_since='2024-01-31'"},
      {"SELECT * FROM customer WHERE c_since = $1", pgoid::kTimestamp, Be64(int64_t{jan31_2024} * kUsecsPerDay),
       "2024-01-31 00:00:00", "c_since='2024-01-31 00:00:00'"},
      {"SELECT * FROM customer WHERE c_since = $1", pgoid::kTimestamptz, Be64(int64_t{jan31_2024} * kUsecsPerDay),
       "2024-01-31 00:00:00+00", "c_since='2024-01-31 00:00:00+00'"},
  };
  for (const Case& c : cases) {
    BoundParams bin, txt;
    const uint32_t oids[] = {c.oid};
    const int16_t binary[] = {1};
    const RawParam braw[] = {{c.binary}};
    const RawParam traw[] = {{c.text}};
    ASSERT_TRUE(bin.Decode(oids, binary, braw).ok());
    ASSERT_TRUE(txt.Decode(oids, {}, traw).ok());
    EXPECT_EQ(bin.undecodable(), 0) << c.sql << " " << TypeOidName(c.oid);
    const std::vector<std::string> want = {c.want};
    EXPECT_EQ(RefTexts(ex, c.sql, bin.params()), want) << TypeOidName(c.oid);
    EXPECT_EQ(RefTexts(ex, c.sql, txt.params()), want) << TypeOidName(c.oid);
    // And the untyped text API (what the runner passes) agrees.
    ParamValue plain[] = {{c.text}};
    EXPECT_EQ(RefTexts(ex, c.sql, ParamSpan(plain, 1)), want) << TypeOidName(c.oid);
  }
  // Arrays: binary int4[], text-format int4[] and the literal IN list agree.
  BoundParams bin, txt;
  const uint32_t oids[] = {pgoid::kInt4Array};
  const int16_t binary[] = {1};
  const std::string arr = Array(pgoid::kInt4, {Be32(1), absl::nullopt, Be32(3)});
  const RawParam braw[] = {{arr}};
  const RawParam traw[] = {{"{1,NULL,3}"}};
  ASSERT_TRUE(bin.Decode(oids, binary, braw).ok());
  ASSERT_TRUE(txt.Decode(oids, {}, traw).ok());
  const std::vector<std::string> want = {"i_id=1", "i_id=3"};
  EXPECT_EQ(RefTexts(ex, "SELECT * FROM item WHERE i_id = ANY($1)", bin.params()), want);
  EXPECT_EQ(RefTexts(ex, "SELECT * FROM item WHERE i_id = ANY($1)", txt.params()), want);
  EXPECT_EQ(RefTexts(ex, "SELECT * FROM item WHERE i_id IN (1, NULL, 3)", {}), want);
  // An undecodable parameter yields no reference, the others still do.
  BoundParams mixed;
  const uint32_t moids[] = {pgoid::kInt4, 701};
  const std::string five = Be32(5), f8 = Be64(0);
  const RawParam mraw[] = {{five}, {f8}};
  ASSERT_TRUE(mixed.Decode(moids, binary, mraw).ok());
  EXPECT_EQ(mixed.undecodable(), 1);
  EXPECT_EQ(RefTexts(ex, "SELECT * FROM stock WHERE s_w_id = $1 AND s_i_id = $2", mixed.params()),
            std::vector<std::string>{"w_id=5"});
}

TEST(PgParams, GarbageNeverCrashes) {
  std::mt19937_64 rng(27);
  const uint32_t oids[] = {pgoid::kBool,      pgoid::kInt2,        pgoid::kInt4,      pgoid::kInt8,
                           pgoid::kOid,       pgoid::kNumeric,     pgoid::kText,      pgoid::kBpchar,
                           pgoid::kUuid,      pgoid::kDate,        pgoid::kTimestamp, pgoid::kTimestamptz,
                           pgoid::kInt4Array, pgoid::kNumericArray, pgoid::kTextArray, pgoid::kDateArray};
  BoundParams b;
  RefExtractor ex(nullptr);
  int decoded = 0;
  for (int i = 0; i < 20000; ++i) {
    const uint32_t oid = oids[rng() % (sizeof(oids) / sizeof(oids[0]))];
    std::string bytes;
    // Mostly valid-looking prefixes (array headers, numeric headers) with random tails.
    if (ArrayElementOid(oid) != 0 && rng() % 2 == 0) {
      bytes = Be32(1) + Be32(rng() % 3) + Be32(ArrayElementOid(oid)) + Be32(rng() % 6) + Be32(1);
    } else if (oid == pgoid::kNumeric && rng() % 2 == 0) {
      bytes = Numeric(static_cast<int16_t>(rng() % 8) - 4, (rng() % 2) * 0x4000, rng() % 10, {});
      bytes[1] = static_cast<char>(rng() % 4);
    }
    const size_t n = rng() % 24;
    for (size_t k = 0; k < n; ++k) bytes.push_back(static_cast<char>(rng()));
    const uint32_t one[] = {oid};
    const int16_t fmt[] = {static_cast<int16_t>(rng() % 2)};
    const RawParam raw[] = {{bytes}};
    ASSERT_TRUE(b.Decode(one, fmt, raw).ok());
    if (b.undecodable() == 0) ++decoded;
    RefVec ids;
    ASSERT_TRUE(ex.Extract("SELECT * FROM t WHERE a = ANY($1) OR a = $1", {RefNaming::kLiteral, RefGrouping::kAll},
                           b.params(), &ids)
                    .ok());
  }
  EXPECT_GT(decoded, 0);  // some random inputs are valid, so the decoders ran
}

TEST(PgParams, ParameterDescription) {
  auto oids = ParseParameterDescription(Be16(2) + Be32(pgoid::kInt4) + Be32(pgoid::kTextArray));
  ASSERT_TRUE(oids.ok());
  EXPECT_EQ(*oids, (std::vector<uint32_t>{pgoid::kInt4, pgoid::kTextArray}));
  EXPECT_TRUE(ParseParameterDescription(Be16(0))->empty());
  EXPECT_FALSE(ParseParameterDescription("").ok());
  EXPECT_FALSE(ParseParameterDescription(Be16(2) + Be32(23)).ok());
  EXPECT_FALSE(ParseParameterDescription(Be16(1) + Be32(23) + "x").ok());
  EXPECT_FALSE(ParseParameterDescription(Be16(0x8000)).ok());
}

std::string CStr(const std::string& s) { return s + std::string(1, '\0'); }

TEST(PgParams, BindAndParseMessages) {
  // Bind: portal "", statement "s1", formats {1}, values int4 5, NULL, text "ab"; result formats {0}.
  const std::string five = Be32(5);
  const std::string bind = CStr("") + CStr("s1") + Be16(2) + Be16(1) + Be16(0) + Be16(3) + Be32(4) + five +
                           Be32(0xffffffff) + Be32(2) + "ab" + Be16(1) + Be16(0);
  BindMessage m;
  ASSERT_TRUE(ParseBindMessage(bind, &m).ok());
  EXPECT_EQ(m.portal, "");
  EXPECT_EQ(m.statement, "s1");
  EXPECT_EQ(m.param_formats, (std::vector<int16_t>{1, 0}));
  ASSERT_EQ(m.values.size(), 3u);
  EXPECT_EQ(m.values[0].bytes, five);
  EXPECT_TRUE(m.values[1].is_null);
  EXPECT_EQ(m.values[2].bytes, "ab");
  // Every truncation, trailing bytes, a negative length or count: an error.
  for (size_t cut = 0; cut < bind.size(); ++cut) EXPECT_FALSE(ParseBindMessage(bind.substr(0, cut), &m).ok()) << cut;
  EXPECT_FALSE(ParseBindMessage(bind + "x", &m).ok());
  EXPECT_FALSE(ParseBindMessage(CStr("") + CStr("") + Be16(0) + Be16(1) + Be32(0xfffffff0) + Be16(0), &m).ok());
  EXPECT_FALSE(ParseBindMessage(CStr("") + CStr("") + Be16(0x8000), &m).ok());
  EXPECT_FALSE(ParseBindMessage(CStr("") + CStr("") + Be16(0) + Be16(0x7fff) + Be32(1), &m).ok());
  // Parse: name, query, declared OIDs.
  auto oids = ParseParseMessageOids(CStr("s1") + CStr("SELECT $1, $2") + Be16(2) + Be32(pgoid::kInt4) + Be32(0));
  ASSERT_TRUE(oids.ok());
  EXPECT_EQ(*oids, (std::vector<uint32_t>{pgoid::kInt4, 0}));
  EXPECT_TRUE(ParseParseMessageOids(CStr("") + CStr("SELECT 1") + Be16(0))->empty());
  EXPECT_FALSE(ParseParseMessageOids(CStr("") + CStr("SELECT 1") + Be16(1)).ok());
  EXPECT_FALSE(ParseParseMessageOids(CStr("") + "SELECT 1").ok());
}

TEST(PgParams, TypeNames) {
  EXPECT_EQ(TypeOidByName("int4"), pgoid::kInt4);
  EXPECT_EQ(TypeOidByName("INTEGER"), pgoid::kInt4);
  EXPECT_EQ(TypeOidByName("bigint[]"), pgoid::kInt8Array);
  EXPECT_EQ(TypeOidByName("_text"), pgoid::kTextArray);
  EXPECT_EQ(TypeOidByName("timestamp with time zone"), pgoid::kTimestamptz);
  EXPECT_EQ(TypeOidByName("float8"), 0u);
  EXPECT_EQ(TypeOidName(pgoid::kUuidArray), "uuid[]");
  EXPECT_EQ(TypeOidName(701), "type 701");
  for (uint32_t oid : {pgoid::kBool, pgoid::kName, pgoid::kInt8, pgoid::kInt2, pgoid::kInt4, pgoid::kText,
                       pgoid::kOid, pgoid::kBpchar, pgoid::kVarchar, pgoid::kDate, pgoid::kTimestamp,
                       pgoid::kTimestamptz, pgoid::kNumeric, pgoid::kUuid}) {
    EXPECT_TRUE(IsDecodableScalarOid(oid)) << oid;
    EXPECT_EQ(TypeOidByName(TypeOidName(oid)), oid);
    EXPECT_EQ(ArrayElementOid(TypeOidByName(TypeOidName(oid) + "[]")), oid);
  }
}

}  // namespace
}  // namespace corral
