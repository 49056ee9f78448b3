// Bind parameter decoding against PostgreSQL itself: the server produces each
// value's binary wire form (int4send, numeric_send, array_send, ...), its
// text (`x::text`) and its type OID (pg_typeof); the decoder must give that
// text, and the binary value the references its text gives. Skipped (with
// the reason) without a server (scripts/pg.sh, CORRAL_PG_CONNINFO).
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "adapters/libpq_connection.h"
#include "adapters/pg_test_server.h"
#include "gtest/gtest.h"
#include "policies/pg_params.h"
#include "policies/ref_extractor.h"

namespace corral {
namespace {

struct ServerValue {
  std::string binary;  // the send function's bytes
  std::string text;    // x::text (arrays: elements joined by '|', NULL as "<null>")
  std::string literal; // arrays: x::text, the array literal
  uint32_t oid = 0;
};

class PgParamsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!adapters::PgTestServer(&conninfo_)) GTEST_SKIP() << adapters::PgTestSkipReason();
    auto c = adapters::ConnectLibpq(conninfo_);
    ASSERT_TRUE(c.ok()) << c.status();
    conn_ = std::move(*c);
    // The defaults the decoder prints (PostgreSQL's own: ISO DateStyle; UTC for timestamptz).
    ASSERT_TRUE(conn_->Exec("SET DateStyle = 'ISO, MDY'").ok());
    ASSERT_TRUE(conn_->Exec("SET TimeZone = 'UTC'").ok());
    SchemaBuilder b;
    ASSERT_TRUE(b.AddDdl("CREATE TABLE t (n numeric, s text);").ok());
    extractor_ = std::make_unique<RefExtractor>(*b.Build());
  }

  // `send` is the send function; `expr` the value.
  ServerValue Ask(const std::string& send, const std::string& expr) {
    ServerValue v;
    std::string q = absl::StrCat("SELECT encode(", send, "(x), 'hex'), x::text, pg_typeof(x)::oid::int8 FROM (SELECT ",
                                 expr, " AS x) s");
    adapters::PgResult r = conn_->Exec(q);
    EXPECT_TRUE(r.ok() && r.num_rows() == 1) << q << ": " << r.message();
    if (!r.ok() || r.num_rows() != 1) return v;
    v.binary = absl::HexStringToBytes(r.Get(0, 0));
    v.text = r.Get(0, 1);
    v.literal = v.text;
    v.oid = static_cast<uint32_t>(*r.GetInt(0, 2));
    if (send == "array_send") {
      adapters::PgResult e = conn_->Exec(absl::StrCat(
          "SELECT coalesce(string_agg(coalesce(e::text, '<null>'), '|' ORDER BY o), '') FROM (SELECT ", expr,
          " AS x) s, unnest(x) WITH ORDINALITY u(e, o)"));
      EXPECT_TRUE(e.ok()) << e.message();
      if (e.ok()) v.text = e.Get(0, 0);
    }
    return v;
  }

  // Decodes one value in `format`; the text ("|"-joined for arrays) or "<undecodable>".
  static std::string Decoded(const BoundParams& b) {
    if (b.outcomes()[0] == DecodeOutcome::kUndecodable) return "<undecodable>";
    const ParamValue& p = b.params()[0];
    if (!p.is_array) return std::string(p.text);
    std::vector<std::string> parts;
    for (uint32_t i = 0; i < p.num_elements; ++i) {
      parts.push_back(p.elements[i].is_null ? "<null>" : std::string(p.elements[i].text));
    }
    return absl::StrJoin(parts, "|");
  }

  std::vector<std::string> Refs(const std::string& sql, ParamSpan params) {
    RefVec ids;
    std::vector<std::string> texts;
    EXPECT_TRUE(extractor_->Extract(sql, {RefNaming::kLiteral, RefGrouping::kSingle}, params, &ids, &texts).ok());
    return texts;
  }

  // The whole check for one value.
  void Check(const std::string& send, const std::string& expr) {
    SCOPED_TRACE(absl::StrCat(send, "(", expr, ")"));
    ServerValue v = Ask(send, expr);
    ASSERT_NE(v.oid, 0u);
    const bool array = send == "array_send";
    EXPECT_TRUE(array ? ArrayElementOid(v.oid) != 0 : IsDecodableScalarOid(v.oid)) << TypeOidName(v.oid);
    BoundParams bin, txt;
    const uint32_t oids[] = {v.oid};
    const int16_t binary[] = {1};
    const RawParam braw[] = {{v.binary}};
    const RawParam traw[] = {{v.literal}};
    ASSERT_TRUE(bin.Decode(oids, binary, braw).ok());
    ASSERT_TRUE(txt.Decode(oids, {}, traw).ok());
    // 1. The binary value decodes to the text PostgreSQL prints; so does the
    //    text form sent with its type.
    EXPECT_EQ(Decoded(bin), v.text);
    EXPECT_EQ(Decoded(txt), v.text);
    // 2. Same references as the server's text: a scalar's x::text, an
    //    array's elements' e::text, on a numeric and a text column (arrays
    //    through = ANY($1)).
    std::vector<ParamValue> elems;
    std::vector<std::string> parts = absl::StrSplit(v.text, '|');
    if (v.text.empty()) parts.clear();
    for (const std::string& e : parts) elems.push_back(e == "<null>" ? ParamValue{"", true} : ParamValue{e});
    ParamValue server_value{v.text};
    if (array) {
      server_value = ParamValue{};
      server_value.is_array = true;
      server_value.elements = elems.data();
      server_value.num_elements = static_cast<uint32_t>(elems.size());
    }
    // Untyped text, as the runner sends it: the array literal is parsed by
    // the extractor; equal except where typed decoding normalizes (bool 't'
    // -> 'true', char(n) padding), which untyped text cannot know.
    const bool untyped_equal = ArrayElementOid(v.oid) != pgoid::kBool && ArrayElementOid(v.oid) != pgoid::kBpchar;
    ParamValue plain[] = {{v.literal}};
    const std::vector<std::string> sqls =
        array ? std::vector<std::string>{"SELECT * FROM t WHERE n = ANY($1)", "SELECT * FROM t WHERE s = ANY($1)"}
              : std::vector<std::string>{"SELECT * FROM t WHERE n = $1", "SELECT * FROM t WHERE s = $1"};
    for (const std::string& sql : sqls) {
      std::vector<std::string> want = Refs(sql, ParamSpan(&server_value, 1));
      EXPECT_EQ(Refs(sql, bin.params()), want) << sql;
      EXPECT_EQ(Refs(sql, txt.params()), want) << sql;
      if (untyped_equal) {
        EXPECT_EQ(Refs(sql, ParamSpan(plain, 1)), want) << sql;
      }
      if (!v.text.empty() && v.text != "<null>") {
        EXPECT_FALSE(want.empty()) << sql;
      }
    }
    ++checked_;
  }

  std::string conninfo_;
  std::unique_ptr<adapters::PgConnection> conn_;
  std::unique_ptr<RefExtractor> extractor_;
  int checked_ = 0;
};

TEST_F(PgParamsServerTest, ScalarsDecodeToTheServersText) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"int2send", "(-7)::int2"},
      {"int4send", "5"},
      {"int4send", "(-2147483648)::int4"},
      {"int8send", "9223372036854775807::int8"},
      {"int8send", "(-42)::int8"},
      {"oidsend", "4294967295::oid"},
      {"numeric_send", "5::numeric"},
      {"numeric_send", "5.00::numeric"},
      {"numeric_send", "(-12.340)::numeric"},
      {"numeric_send", "0.000001::numeric"},
      {"numeric_send", "10000::numeric"},
      {"numeric_send", "0::numeric"},
      {"numeric_send", "1e-20::numeric"},
      {"numeric_send", "123456789012345678901234567890.123::numeric"},
      {"numeric_send", "'NaN'::numeric"},
      {"numeric_send", "'-Infinity'::numeric"},
      {"boolsend", "true"},
      {"boolsend", "false"},
      {"textsend", "'abc'::text"},
      {"textsend", "'O''Brien, é'::text"},
      {"textsend", "''::text"},
      {"varcharsend", "'x y'::varchar"},
      {"bpcharsend", "'ab'::char(5)"},
      {"namesend", "'pg_class'::name"},
      {"uuid_send", "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid"},
      {"date_send", "'2024-01-31'::date"},
      {"date_send", "'2000-02-29'::date"},
      {"date_send", "'0044-03-15 BC'::date"},
      {"date_send", "'4713-01-01 BC'::date"},
      {"date_send", "'5874897-12-31'::date"},
      {"date_send", "'infinity'::date"},
      {"timestamp_send", "'2024-01-31 13:45:07.25'::timestamp"},
      {"timestamp_send", "'1999-12-31 23:59:59.999999'::timestamp"},
      {"timestamp_send", "'0044-03-15 12:00:00 BC'::timestamp"},
      {"timestamp_send", "'294276-12-31 23:59:59.999999'::timestamp"},
      {"timestamp_send", "'-infinity'::timestamp"},
      {"timestamptz_send", "'2024-01-31 13:45:07.25+02'::timestamptz"},
      {"timestamptz_send", "'0044-03-15 12:00:00+00 BC'::timestamptz"},
      {"timestamptz_send", "'infinity'::timestamptz"},
  };
  for (const auto& c : cases) Check(c.first, c.second);
  EXPECT_EQ(checked_, static_cast<int>(cases.size()));
}

TEST_F(PgParamsServerTest, ArraysDecodeToTheServersElements) {
  const std::vector<std::string> cases = {
      "ARRAY[1, 2, 3]",
      "ARRAY[1, NULL, 3]::int4[]",
      "ARRAY[]::int4[]",
      "ARRAY[(-1)::int2, 7::int2]",
      "ARRAY[1::int8, 9223372036854775807]",
      "ARRAY[26::oid]",
      "ARRAY[5.0, -1.250, NULL]::numeric[]",
      "ARRAY[true, false]",
      "ARRAY['a,b', 'O''x', 'say \"hi\"', 'back\\slash', 'NULL', '', ' pad ', NULL]::text[]",
      "ARRAY['x'::varchar, 'y z']",
      "ARRAY['ab'::char(4), 'c']",
      "ARRAY['pg_class'::name]",
      "ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid]",
      "ARRAY['2024-01-31'::date, '0044-03-15 BC']",
      "ARRAY['2024-01-31 13:45:07.25'::timestamp]",
      "ARRAY['2024-01-31 13:45:07.25+02'::timestamptz, 'infinity']",
  };
  for (const std::string& c : cases) Check("array_send", c);
  EXPECT_EQ(checked_, static_cast<int>(cases.size()));
}

TEST_F(PgParamsServerTest, UndecodableTypesAreCountedNotFatal) {
  ServerValue f8 = Ask("float8send", "1.5::float8");
  ServerValue md = Ask("array_send", "ARRAY[[1, 2], [3, 4]]");
  ServerValue five = Ask("int4send", "5");
  BoundParams b;
  const uint32_t oids[] = {f8.oid, md.oid, five.oid};
  const int16_t binary[] = {1};
  const RawParam raw[] = {{f8.binary}, {md.binary}, {five.binary}};
  ASSERT_TRUE(b.Decode(oids, binary, raw).ok());
  EXPECT_EQ(b.undecodable(), 2);  // float8 (not decoded), a 2-dimensional array
  EXPECT_EQ(Refs("SELECT * FROM t WHERE n = $1 OR n = $2 OR n = $3", b.params()), std::vector<std::string>{"n=5"});
}

}  // namespace
}  // namespace corral
