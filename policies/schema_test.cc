// Tests of the schema: DDL reading, FK-derived canonical classes, name
// collisions, the mapping file.
#include "policies/schema.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "gtest/gtest.h"
#include "policies/ref_extractor.h"

namespace corral {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::shared_ptr<const Schema> Load(const std::string& path, const std::string& mapping = "") {
  SchemaBuilder b;
  std::string ddl = ReadFile(path);
  EXPECT_FALSE(ddl.empty()) << path;
  absl::Status st = b.AddDdl(ddl);
  EXPECT_TRUE(st.ok()) << st;
  if (!mapping.empty()) {
    st = b.AddMappingText(mapping);
    EXPECT_TRUE(st.ok()) << st;
  }
  absl::StatusOr<std::shared_ptr<const Schema>> s = b.Build();
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : nullptr;
}

std::map<std::string, std::string> Classes(const Schema& s) {
  std::map<std::string, std::string> m;
  for (const auto& c : s.CanonicalClasses()) m[c.first] = c.second;
  return m;
}

TEST(Schema, TpccClassesFollowForeignKeys) {
  auto s = Load("schemas/tpcc.sql");
  ASSERT_NE(s, nullptr);
  std::map<std::string, std::string> want = {
      {"warehouse.w_id", "w_id"},       {"district.d_w_id", "w_id"},       {"customer.c_w_id", "w_id"},
      {"history.h_c_w_id", "w_id"},     {"history.h_w_id", "w_id"},        {"orders.o_w_id", "w_id"},
      {"new_order.no_w_id", "w_id"},    {"stock.s_w_id", "w_id"},          {"order_line.ol_w_id", "w_id"},
      {"order_line.ol_supply_w_id", "w_id"},
      {"district.d_id", "d_id"},        {"customer.c_d_id", "d_id"},       {"history.h_c_d_id", "d_id"},
      {"history.h_d_id", "d_id"},       {"orders.o_d_id", "d_id"},         {"new_order.no_d_id", "d_id"},
      {"order_line.ol_d_id", "d_id"},
      {"customer.c_id", "c_id"},        {"history.h_c_id", "c_id"},        {"orders.o_c_id", "c_id"},
      {"orders.o_id", "o_id"},          {"new_order.no_o_id", "o_id"},     {"order_line.ol_o_id", "o_id"},
      {"item.i_id", "i_id"},            {"stock.s_i_id", "i_id"},          {"order_line.ol_i_id", "i_id"},
  };
  EXPECT_EQ(Classes(*s), want);
  EXPECT_EQ(s->CanonicalName("stock", "s_w_id"), "w_id");
  EXPECT_EQ(s->CanonicalName("", "c_w_id"), "w_id");  // unique column: table found
  EXPECT_EQ(s->CanonicalName("stock", "s_quantity"), "s_quantity");
  EXPECT_EQ(s->LiteralName("stock", "s_w_id"), "s_w_id");
  EXPECT_EQ(s->ColumnType("customer", "c_last"), TypeClass::kText);
  EXPECT_EQ(s->ColumnType("", "ol_amount"), TypeClass::kNumeric);
  EXPECT_EQ(s->ColumnType("orders", "o_entry_d"), TypeClass::kUnknown);
  EXPECT_EQ(s->ColumnsOf("new_order"), (std::vector<std::string>{"no_o_id", "no_d_id", "no_w_id"}));
}

TEST(Schema, SmallBankAndTatpNameNonUniqueRootsByTable) {
  auto sb = Load("schemas/smallbank.sql");
  ASSERT_NE(sb, nullptr);
  EXPECT_EQ(Classes(*sb), (std::map<std::string, std::string>{{"accounts.custid", "accounts.custid"},
                                                              {"checking.custid", "accounts.custid"},
                                                              {"savings.custid", "accounts.custid"}}));
  EXPECT_EQ(sb->LiteralName("savings", "custid"), "savings.custid");
  EXPECT_EQ(sb->LiteralName("savings", "bal"), "savings.bal");
  EXPECT_EQ(sb->CanonicalName("savings", "bal"), "savings.bal");  // no FK: unrelated tables stay apart
  EXPECT_EQ(sb->LiteralName("accounts", "name"), "name");

  auto tatp = Load("schemas/tatp.sql");
  ASSERT_NE(tatp, nullptr);
  std::map<std::string, std::string> want = {
      {"subscriber.s_id", "subscriber.s_id"},      {"access_info.s_id", "subscriber.s_id"},
      {"special_facility.s_id", "subscriber.s_id"}, {"call_forwarding.s_id", "subscriber.s_id"},
      {"special_facility.sf_type", "special_facility.sf_type"},
      {"call_forwarding.sf_type", "special_facility.sf_type"},
  };
  EXPECT_EQ(Classes(*tatp), want);
  EXPECT_EQ(tatp->CanonicalName("call_forwarding", "s_id"), "subscriber.s_id");
  EXPECT_EQ(tatp->LiteralName("subscriber", "sub_nbr"), "sub_nbr");
}

TEST(Schema, BuilderApiAndNameCollisions) {
  SchemaBuilder b;
  ASSERT_TRUE(b.AddTable("customers", {{"id", TypeClass::kNumeric}, {"name", TypeClass::kText}}).ok());
  ASSERT_TRUE(b.AddTable("orders", {{"id", TypeClass::kNumeric}, {"customer_id", TypeClass::kNumeric}}).ok());
  ASSERT_TRUE(b.AddTable("products", {{"id", TypeClass::kNumeric}, {"name", TypeClass::kText}}).ok());
  ASSERT_TRUE(b.AddPrimaryKey("customers", {"id"}).ok());
  ASSERT_TRUE(b.AddForeignKey("orders", {"customer_id"}, "customers", {}).ok());  // -> primary key
  absl::StatusOr<std::shared_ptr<const Schema>> s = b.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->LiteralName("orders", "id"), "orders.id");
  EXPECT_EQ((*s)->CanonicalName("orders", "id"), "orders.id");
  EXPECT_EQ((*s)->CanonicalName("orders", "customer_id"), "customers.id");
  EXPECT_EQ((*s)->CanonicalName("customers", "id"), "customers.id");
  EXPECT_EQ((*s)->LiteralName("products", "name"), "products.name");
  EXPECT_EQ((*s)->LiteralName("orders", "customer_id"), "customer_id");
  EXPECT_NE((*s)->CanonicalName("products", "id"), (*s)->CanonicalName("customers", "id"));

  SchemaBuilder bad;
  ASSERT_TRUE(bad.AddTable("a", {{"x"}}).ok());
  ASSERT_TRUE(bad.AddForeignKey("a", {"x"}, "missing", {"y"}).ok());
  EXPECT_FALSE(bad.Build().ok());
  EXPECT_FALSE(bad.AddTable("a", {{"x"}}).ok());
}

// qualify_all: names do not change when an unrelated table with a column
// of the same name appears (a proxy fleet reads the catalog at different
// times and must agree on names).
TEST(Schema, QualifyAllNamesDoNotDependOnOtherTables) {
  auto build = [](bool qualify, bool other) {
    SchemaBuilder b;
    b.SetQualifyAll(qualify);
    EXPECT_TRUE(b.AddTable("accounts", {{"k", TypeClass::kNumeric}, {"v", TypeClass::kNumeric}}).ok());
    EXPECT_TRUE(b.AddTable("branches", {{"bid", TypeClass::kNumeric}}).ok());
    EXPECT_TRUE(b.AddTable("tellers", {{"tid", TypeClass::kNumeric}, {"branch", TypeClass::kNumeric}}).ok());
    EXPECT_TRUE(b.AddPrimaryKey("branches", {"bid"}).ok());
    EXPECT_TRUE(b.AddForeignKey("tellers", {"branch"}, "branches", {}).ok());
    if (other) EXPECT_TRUE(b.AddTable("audit", {{"k", TypeClass::kNumeric}}).ok());
    absl::StatusOr<std::shared_ptr<const Schema>> s = b.Build();
    EXPECT_TRUE(s.ok()) << s.status();
    return *s;
  };
  // Without it the name follows the rest of the catalog.
  EXPECT_EQ(build(false, false)->LiteralName("accounts", "k"), "k");
  EXPECT_EQ(build(false, true)->LiteralName("accounts", "k"), "accounts.k");
  EXPECT_EQ(build(false, false)->CanonicalName("tellers", "branch"), "bid");
  for (bool other : {false, true}) {
    auto s = build(true, other);
    EXPECT_TRUE(s->qualify_all());
    EXPECT_EQ(s->LiteralName("accounts", "k"), "accounts.k") << other;
    EXPECT_EQ(s->CanonicalName("accounts", "k"), "accounts.k") << other;
    EXPECT_EQ(s->CanonicalName("tellers", "branch"), "branches.bid") << other;  // the class root, qualified
    EXPECT_EQ(s->CanonicalName("", "tid"), "tellers.tid") << other;  // the column's one table
  }
}

TEST(Schema, MappingOverridesAndFillsIn) {
  auto s = Load("schemas/tpcc.sql",
                "# comment line\n"
                "s_w_id = warehouse   # override an FK class\n"
                "\n"
                "stock.s_quantity=qty\n"
                "h_amount=amount\n");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->CanonicalName("stock", "s_w_id"), "warehouse");
  EXPECT_EQ(s->CanonicalName("district", "d_w_id"), "w_id");
  EXPECT_EQ(s->CanonicalName("stock", "s_quantity"), "qty");
  EXPECT_EQ(s->CanonicalName("history", "h_amount"), "amount");
}

TEST(Schema, BadMappingLineNamesItsNumber) {
  SchemaBuilder b;
  absl::Status st = b.AddMappingText("a=b\n# ok\nthis line is bad\n");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("line 3"), absl::string_view::npos) << st;
  st = SchemaBuilder().AddMappingText("x=\n");
  EXPECT_NE(st.message().find("line 1"), absl::string_view::npos) << st;
}

TEST(Schema, DdlSyntaxErrorNamesTheLine) {
  SchemaBuilder b;
  absl::Status st = b.AddDdl("CREATE TABLE a (x int);\nCREATE TABLE b (y int,);\n");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("line 2"), absl::string_view::npos) << st;
}

TEST(Schema, FunctionsAndAlterTable) {
  SchemaBuilder b;
  absl::Status st = b.AddDdl(
      "CREATE TABLE w (w_id int PRIMARY KEY);\n"
      "CREATE TABLE d (d_w_id int, d_id int);\n"
      "ALTER TABLE d ADD CONSTRAINT fk FOREIGN KEY (d_w_id) REFERENCES w;\n"
      "CREATE FUNCTION pay(w_id int, amount numeric, OUT ok boolean) LANGUAGE sql AS 'select true';\n"
      "CREATE PROCEDURE deliver(wh int, carrier text) LANGUAGE sql AS $$ select 1 $$;\n");
  ASSERT_TRUE(st.ok()) << st;
  absl::StatusOr<std::shared_ptr<const Schema>> s = b.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->CanonicalName("d", "d_w_id"), "w_id");
  const FunctionDef* pay = (*s)->FindFunction("pay");
  ASSERT_NE(pay, nullptr);
  ASSERT_EQ(pay->params.size(), 2u);  // OUT parameter is not an argument
  EXPECT_EQ(pay->params[1].name, "amount");
  EXPECT_EQ(pay->params[1].type, TypeClass::kNumeric);
  ASSERT_NE((*s)->FindFunction("deliver"), nullptr);
  EXPECT_EQ((*s)->FindFunction("deliver")->params[1].type, TypeClass::kText);
}

}  // namespace
}  // namespace corral

namespace corral {
namespace {

std::vector<std::string> InsertRefTexts(InsertRefs mode, const std::string& sql) {
  SchemaBuilder b;
  b.SetInsertRefs(mode);
  EXPECT_TRUE(b.AddDdl(ReadFile("schemas/tpcc.sql")).ok());
  auto s = b.Build();
  EXPECT_TRUE(s.ok()) << s.status();
  RefExtractor ex(*s);
  RefVec ids;
  std::vector<std::string> texts;
  absl::Status st = ex.Extract(sql, {RefNaming::kCanonical, RefGrouping::kSingle}, {}, &ids, &texts);
  EXPECT_TRUE(st.ok()) << st;
  std::sort(texts.begin(), texts.end());
  return texts;
}

// Under kForeignKeys an INSERT yields only the columns that name existing
// rows (foreign-key classes): the order line's order and item, not its line
// number or quantity. SET values likewise (the stock row's quantity is not
// data a transaction can contend on; its item and warehouse are). WHERE
// references are not affected.
TEST(SchemaTest, InsertForeignKeysOnly) {
  const std::string ins =
      "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, "
      "ol_quantity, ol_amount, ol_dist_info) VALUES (3001, 4, 2, 7, 555, 2, 5, 12.5, 'abc')";
  EXPECT_EQ(InsertRefTexts(InsertRefs::kForeignKeys, ins),
            (std::vector<std::string>{"d_id=4", "i_id=555", "o_id=3001", "w_id=2"}));
  std::vector<std::string> all = InsertRefTexts(InsertRefs::kAll, ins);
  EXPECT_NE(std::find(all.begin(), all.end(), "ol_number=7"), all.end());
  EXPECT_NE(std::find(all.begin(), all.end(), "ol_quantity=5"), all.end());
  const std::string upd = "UPDATE stock SET s_quantity = 6 WHERE s_i_id = 2 AND s_w_id = 5";
  EXPECT_EQ(InsertRefTexts(InsertRefs::kForeignKeys, upd), (std::vector<std::string>{"i_id=2", "w_id=5"}));
  EXPECT_EQ(InsertRefTexts(InsertRefs::kAll, upd),
            (std::vector<std::string>{"i_id=2", "s_quantity=6", "w_id=5"}));
  // A SET column that is itself in a foreign-key class still yields one.
  const std::string fk_set = "UPDATE customer SET c_d_id = 3 WHERE c_w_id = 1 AND c_id = 9";
  std::vector<std::string> fk = InsertRefTexts(InsertRefs::kForeignKeys, fk_set);
  EXPECT_NE(std::find(fk.begin(), fk.end(), "d_id=3"), fk.end());
}

}  // namespace
}  // namespace corral
