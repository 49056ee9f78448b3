// Tests of reference extraction: the paper's examples, every TPC-C statement,
// the SQL features, the cache against the cold path, and concurrency.
#include "policies/ref_extractor.h"

#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace corral {
namespace {

using Texts = std::vector<std::string>;
constexpr ExtractionPolicy kLitSingle{RefNaming::kLiteral, RefGrouping::kSingle};
constexpr ExtractionPolicy kLitAll{RefNaming::kLiteral, RefGrouping::kAll};
constexpr ExtractionPolicy kCanSingle{RefNaming::kCanonical, RefGrouping::kSingle};
constexpr ExtractionPolicy kCanAll{RefNaming::kCanonical, RefGrouping::kAll};

std::shared_ptr<const Schema> SchemaFrom(const std::string& ddl, const std::string& mapping = "") {
  SchemaBuilder b;
  absl::Status st = b.AddDdl(ddl);
  EXPECT_TRUE(st.ok()) << st;
  if (!mapping.empty()) EXPECT_TRUE(b.AddMappingText(mapping).ok());
  absl::StatusOr<std::shared_ptr<const Schema>> s = b.Build();
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

std::shared_ptr<const Schema> Tpcc() {
  std::ifstream in("schemas/tpcc.sql");
  std::stringstream ss;
  ss << in.rdbuf();
  return SchemaFrom(ss.str());
}

// Extracts through the cache (twice: cold then hit) and checks that the ids
// are the fingerprints of the texts and that both calls agree.
Texts Refs(RefExtractor& ex, const std::string& sql, ExtractionPolicy p, std::vector<ParamValue> params = {}) {
  Texts first;
  for (int round = 0; round < 2; ++round) {
    RefVec ids;
    Texts texts;
    absl::Status st = ex.Extract(sql, p, params, &ids, &texts);
    EXPECT_TRUE(st.ok()) << sql << ": " << st;
    EXPECT_EQ(ids.size(), texts.size());
    for (size_t i = 0; i < ids.size() && i < texts.size(); ++i) EXPECT_EQ(ids[i], RefId::Of(texts[i])) << texts[i];
    if (round == 0) {
      first = texts;
    } else {
      EXPECT_EQ(texts, first) << "cache hit differs for " << sql;
    }
  }
  // The prepared path agrees, and a multiplicity vector stays parallel.
  auto prep = ex.Prepare(sql);
  EXPECT_TRUE(prep.ok()) << sql << ": " << prep.status();
  if (prep.ok()) {
    RefVec ids;
    RefMult mult;
    Texts texts;
    EXPECT_TRUE(ex.ExtractPrepared(**prep, p, params, &ids, &mult, &texts).ok()) << sql;
    EXPECT_EQ(texts, first) << "prepared path differs for " << sql;
    EXPECT_EQ(mult.size(), ids.size()) << sql;
    for (uint16_t m : mult) EXPECT_GE(m, 1) << sql;
  }
  return first;
}

// ---------------------------------------------------------------- the paper

TEST(PaperFigure3, AllFourPolicies) {
  RefExtractor ex(Tpcc());
  const std::string fig3 = "UPDATE stock SET s_quantity=$1\nWHERE s_i_id=$2 AND s_w_id=$3";
  std::vector<ParamValue> params = {{"6"}, {"2"}, {"5"}};
  EXPECT_EQ(Refs(ex, fig3, kLitSingle, params), (Texts{"s_quantity=6", "s_i_id=2", "s_w_id=5"}));
  EXPECT_EQ(Refs(ex, fig3, kLitAll, params), (Texts{"s_quantity=6", "s_i_id=2 AND s_w_id=5"}));
  EXPECT_EQ(Refs(ex, fig3, kCanSingle, params), (Texts{"s_quantity=6", "i_id=2", "w_id=5"}));
  EXPECT_EQ(Refs(ex, fig3, kCanAll, params), (Texts{"s_quantity=6", "i_id=2 AND w_id=5"}));
  // The same statement with literals gives the same references.
  const std::string lit = "UPDATE stock SET s_quantity=6 WHERE s_i_id=2 AND s_w_id=5";
  EXPECT_EQ(Refs(ex, lit, kCanSingle), (Texts{"s_quantity=6", "i_id=2", "w_id=5"}));
  EXPECT_EQ(Refs(ex, lit, kCanAll), (Texts{"s_quantity=6", "i_id=2 AND w_id=5"}));
}

TEST(PaperTable1, CurrentTransactionsGiveTheHistoryKeys) {
  RefExtractor ex(Tpcc());
  EXPECT_EQ(Refs(ex, "UPDATE stock SET s_quantity=7 WHERE s_i_id=1 AND s_w_id=5", kLitSingle),
            (Texts{"s_quantity=7", "s_i_id=1", "s_w_id=5"}));
  EXPECT_EQ(Refs(ex, "UPDATE stock SET s_quantity=6 WHERE s_i_id=2 AND s_w_id=5", kLitSingle),
            (Texts{"s_quantity=6", "s_i_id=2", "s_w_id=5"}));
  EXPECT_EQ(Refs(ex, "UPDATE stock SET s_quantity=7 WHERE s_i_id=1 AND s_w_id=5", kLitAll),
            (Texts{"s_quantity=7", "s_i_id=1 AND s_w_id=5"}));
  EXPECT_EQ(Refs(ex, "UPDATE stock SET s_quantity=7 WHERE s_i_id=1 AND s_w_id=5", kCanAll),
            (Texts{"s_quantity=7", "i_id=1 AND w_id=5"}));
  // The RefIds are the History's keys.
  RefVec ids;
  ASSERT_TRUE(ex.Extract("UPDATE stock SET s_quantity=6 WHERE s_i_id=2 AND s_w_id=5", kLitSingle, &ids).ok());
  EXPECT_EQ(ids, (RefVec{RefId::Of("s_quantity=6"), RefId::Of("s_i_id=2"), RefId::Of("s_w_id=5")}));
}

TEST(PaperTable2, CanonicalReferencesShareDomains) {
  RefExtractor ex(Tpcc());
  // Table 2's History keys i_id=2, o_id=10, c_id=11, w_id=5 come from
  // different tables' columns.
  EXPECT_EQ(Refs(ex, "SELECT o_entry_d FROM orders WHERE o_id=10 AND o_c_id=11 AND o_w_id=5", kCanSingle),
            (Texts{"o_id=10", "c_id=11", "w_id=5"}));
  EXPECT_EQ(Refs(ex, "SELECT i_price FROM item WHERE i_id=2", kCanSingle), (Texts{"i_id=2"}));
  EXPECT_EQ(Refs(ex, "SELECT i_price FROM item WHERE i_id=2", kLitSingle), (Texts{"i_id=2"}));
  EXPECT_EQ(Refs(ex, "SELECT o_entry_d FROM orders WHERE o_id=10 AND o_c_id=11 AND o_w_id=5", kLitSingle),
            (Texts{"o_id=10", "o_c_id=11", "o_w_id=5"}));
  EXPECT_EQ(Refs(ex, "SELECT o_entry_d FROM orders WHERE o_id=10 AND o_c_id=11 AND o_w_id=5", kCanAll),
            (Texts{"c_id=11 AND o_id=10 AND w_id=5"}));
  EXPECT_EQ(Refs(ex, "SELECT o_entry_d FROM orders WHERE o_id=10 AND o_c_id=11 AND o_w_id=5", kLitAll),
            (Texts{"o_c_id=11 AND o_id=10 AND o_w_id=5"}));
}

// ---------------------------------------------------------------- TPC-C

struct Case {
  const char* sql;
  Texts literal;
  Texts canonical;
};

TEST(Tpcc, EveryStatementKind) {
  RefExtractor ex(Tpcc());
  const std::vector<Case> cases = {
      // NewOrder
      {"SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 3",
       {"c_w_id=1", "c_d_id=2", "c_id=3"}, {"w_id=1", "d_id=2", "c_id=3"}},
      {"SELECT w_tax FROM warehouse WHERE w_id = 1", {"w_id=1"}, {"w_id=1"}},
      {"SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = 1 AND d_id = 2 FOR UPDATE",
       {"d_w_id=1", "d_id=2"}, {"w_id=1", "d_id=2"}},
      {"UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 2",
       {"d_w_id=1", "d_id=2"}, {"w_id=1", "d_id=2"}},
      {"INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) "
       "VALUES (3001, 2, 1, 3, '2024-01-01 00:00:00', 5, 1)",
       {"o_id=3001", "o_d_id=2", "o_w_id=1", "o_c_id=3", "o_entry_d='2024-01-01 00:00:00'", "o_ol_cnt=5",
        "o_all_local=1"},
       {"o_id=3001", "d_id=2", "w_id=1", "c_id=3", "o_entry_d='2024-01-01 00:00:00'", "o_ol_cnt=5",
        "o_all_local=1"}},
      {"INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (3001, 2, 1)",
       {"no_o_id=3001", "no_d_id=2", "no_w_id=1"}, {"o_id=3001", "d_id=2", "w_id=1"}},
      {"SELECT i_price, i_name, i_data FROM item WHERE i_id = 77", {"i_id=77"}, {"i_id=77"}},
      {"SELECT s_quantity, s_data, s_dist_02 FROM stock WHERE s_i_id = 77 AND s_w_id = 1 FOR UPDATE",
       {"s_i_id=77", "s_w_id=1"}, {"i_id=77", "w_id=1"}},
      {"UPDATE stock SET s_quantity = 50, s_ytd = s_ytd + 5, s_order_cnt = s_order_cnt + 1 "
       "WHERE s_i_id = 77 AND s_w_id = 1",
       {"s_quantity=50", "s_i_id=77", "s_w_id=1"}, {"s_quantity=50", "i_id=77", "w_id=1"}},
      {"INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, "
       "ol_amount, ol_dist_info) VALUES (3001, 2, 1, 1, 77, 1, 5, 12.50, 'dist-info-xxxxx')",
       {"ol_o_id=3001", "ol_d_id=2", "ol_w_id=1", "ol_number=1", "ol_i_id=77", "ol_supply_w_id=1",
        "ol_quantity=5", "ol_amount=12.5", "ol_dist_info='dist-info-xxxxx'"},
       {"o_id=3001", "d_id=2", "w_id=1", "ol_number=1", "i_id=77", "ol_quantity=5", "ol_amount=12.5",
        "ol_dist_info='dist-info-xxxxx'"}},
      // Payment
      {"UPDATE warehouse SET w_ytd = w_ytd + 10.5 WHERE w_id = 1", {"w_id=1"}, {"w_id=1"}},
      {"SELECT w_street_1, w_street_2, w_city, w_state, w_zip, w_name FROM warehouse WHERE w_id = 1",
       {"w_id=1"}, {"w_id=1"}},
      {"UPDATE district SET d_ytd = d_ytd + 10.5 WHERE d_w_id = 1 AND d_id = 2", {"d_w_id=1", "d_id=2"},
       {"w_id=1", "d_id=2"}},
      {"SELECT d_street_1, d_street_2, d_city, d_state, d_zip, d_name FROM district WHERE d_w_id = 1 AND d_id = 2",
       {"d_w_id=1", "d_id=2"}, {"w_id=1", "d_id=2"}},
      {"SELECT count(c_id) FROM customer WHERE c_w_id = 1 AND c_d_id = 2 AND c_last = 'BARBARBAR'",
       {"c_w_id=1", "c_d_id=2", "c_last='BARBARBAR'"}, {"w_id=1", "d_id=2", "c_last='BARBARBAR'"}},
      {"SELECT c_first, c_middle, c_id, c_street_1, c_balance FROM customer WHERE c_w_id = 1 AND c_d_id = 2 "
       "AND c_last = 'BARBARBAR' ORDER BY c_first",
       {"c_w_id=1", "c_d_id=2", "c_last='BARBARBAR'"}, {"w_id=1", "d_id=2", "c_last='BARBARBAR'"}},
      {"SELECT c_first, c_credit, c_balance FROM customer WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 3 FOR UPDATE",
       {"c_w_id=1", "c_d_id=2", "c_id=3"}, {"w_id=1", "d_id=2", "c_id=3"}},
      {"UPDATE customer SET c_balance = -20.50, c_ytd_payment = 30.5, c_payment_cnt = 2 "
       "WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 3",
       {"c_balance=-20.5", "c_ytd_payment=30.5", "c_payment_cnt=2", "c_w_id=1", "c_d_id=2", "c_id=3"},
       {"c_balance=-20.5", "c_ytd_payment=30.5", "c_payment_cnt=2", "w_id=1", "d_id=2", "c_id=3"}},
      {"UPDATE customer SET c_data = 'new data' WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 3",
       {"c_data='new data'", "c_w_id=1", "c_d_id=2", "c_id=3"},
       {"c_data='new data'", "w_id=1", "d_id=2", "c_id=3"}},
      {"INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
       "VALUES (2, 1, 3, 2, 1, '2024-01-01', 10.5, 'w    d')",
       {"h_c_d_id=2", "h_c_w_id=1", "h_c_id=3", "h_d_id=2", "h_w_id=1", "h_date='2024-01-01'", "h_amount=10.5",
        "h_data='w    d'"},
       {"d_id=2", "w_id=1", "c_id=3", "h_date='2024-01-01'", "h_amount=10.5", "h_data='w    d'"}},
      // OrderStatus
      {"SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = 1 AND c_d_id = 2 AND c_id = 3",
       {"c_w_id=1", "c_d_id=2", "c_id=3"}, {"w_id=1", "d_id=2", "c_id=3"}},
      {"SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = 1 AND o_d_id = 2 AND o_c_id = 3 "
       "ORDER BY o_id DESC LIMIT 1",
       {"o_w_id=1", "o_d_id=2", "o_c_id=3"}, {"w_id=1", "d_id=2", "c_id=3"}},
      {"SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line "
       "WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id = 3001",
       {"ol_w_id=1", "ol_d_id=2", "ol_o_id=3001"}, {"w_id=1", "d_id=2", "o_id=3001"}},
      // Delivery
      {"SELECT no_o_id FROM new_order WHERE no_d_id = 2 AND no_w_id = 1 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE",
       {"no_d_id=2", "no_w_id=1"}, {"d_id=2", "w_id=1"}},
      {"DELETE FROM new_order WHERE no_o_id = 3001 AND no_d_id = 2 AND no_w_id = 1",
       {"no_o_id=3001", "no_d_id=2", "no_w_id=1"}, {"o_id=3001", "d_id=2", "w_id=1"}},
      {"SELECT o_c_id FROM orders WHERE o_id = 3001 AND o_d_id = 2 AND o_w_id = 1",
       {"o_id=3001", "o_d_id=2", "o_w_id=1"}, {"o_id=3001", "d_id=2", "w_id=1"}},
      {"UPDATE orders SET o_carrier_id = 7 WHERE o_id = 3001 AND o_d_id = 2 AND o_w_id = 1",
       {"o_carrier_id=7", "o_id=3001", "o_d_id=2", "o_w_id=1"}, {"o_carrier_id=7", "o_id=3001", "d_id=2", "w_id=1"}},
      {"UPDATE order_line SET ol_delivery_d = '2024-01-01 00:00:00' WHERE ol_o_id = 3001 AND ol_d_id = 2 "
       "AND ol_w_id = 1",
       {"ol_delivery_d='2024-01-01 00:00:00'", "ol_o_id=3001", "ol_d_id=2", "ol_w_id=1"},
       {"ol_delivery_d='2024-01-01 00:00:00'", "o_id=3001", "d_id=2", "w_id=1"}},
      {"SELECT SUM(ol_amount) FROM order_line WHERE ol_o_id = 3001 AND ol_d_id = 2 AND ol_w_id = 1",
       {"ol_o_id=3001", "ol_d_id=2", "ol_w_id=1"}, {"o_id=3001", "d_id=2", "w_id=1"}},
      {"UPDATE customer SET c_balance = c_balance + 99.5, c_delivery_cnt = c_delivery_cnt + 1 "
       "WHERE c_id = 3 AND c_d_id = 2 AND c_w_id = 1",
       {"c_id=3", "c_d_id=2", "c_w_id=1"}, {"c_id=3", "d_id=2", "w_id=1"}},
      // StockLevel
      {"SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = 2", {"d_w_id=1", "d_id=2"},
       {"w_id=1", "d_id=2"}},
      {"SELECT COUNT(DISTINCT (s_i_id)) FROM order_line, stock WHERE ol_w_id = 1 AND ol_d_id = 2 "
       "AND ol_o_id < 3001 AND ol_o_id >= 2981 AND s_w_id = 1 AND s_i_id = ol_i_id AND s_quantity < 15",
       {"ol_w_id=1", "ol_d_id=2", "s_w_id=1"}, {"w_id=1", "d_id=2"}},
      {"SELECT COUNT(DISTINCT s.s_i_id) FROM order_line ol JOIN stock s ON s.s_i_id = ol.ol_i_id "
       "AND s.s_w_id = ol.ol_w_id WHERE ol.ol_w_id = 1 AND ol.ol_d_id = 2 AND ol.ol_o_id < 3001 "
       "AND ol.ol_o_id >= 2981 AND s.s_quantity < 15",
       {"ol_w_id=1", "ol_d_id=2"}, {"w_id=1", "d_id=2"}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Refs(ex, c.sql, kLitSingle), c.literal) << c.sql;
    EXPECT_EQ(Refs(ex, c.sql, kCanSingle), c.canonical) << c.sql;
  }
  // All grouping: one conjunction per WHERE, sorted; INSERT rows one each.
  EXPECT_EQ(Refs(ex, cases[31].sql, kCanAll), (Texts{"d_id=2 AND w_id=1"}));
  EXPECT_EQ(Refs(ex, cases[31].sql, kLitAll), (Texts{"ol_d_id=2 AND ol_w_id=1 AND s_w_id=1"}));
  EXPECT_EQ(Refs(ex, cases[5].sql, kCanAll), (Texts{"d_id=2 AND o_id=3001 AND w_id=1"}));
  EXPECT_EQ(Refs(ex, cases[26].sql, kCanAll), (Texts{"o_carrier_id=7", "d_id=2 AND o_id=3001 AND w_id=1"}));
}

TEST(Tpcc, WholeTransactionInOneString) {
  RefExtractor ex(Tpcc());
  std::string txn =
      "BEGIN; SELECT w_tax FROM warehouse WHERE w_id = 4; "
      "UPDATE stock SET s_quantity = 9 WHERE s_i_id = 8 AND s_w_id = 4; COMMIT;";
  EXPECT_EQ(Refs(ex, txn, kCanSingle), (Texts{"w_id=4", "s_quantity=9", "i_id=8"}));
  EXPECT_EQ(Refs(ex, txn, kLitSingle), (Texts{"w_id=4", "s_quantity=9", "s_i_id=8", "s_w_id=4"}));
  EXPECT_EQ(Refs(ex, txn, kCanAll), (Texts{"w_id=4", "s_quantity=9", "i_id=8 AND w_id=4"}));
}

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

// Found by the fuzzer: ~1,000 unary operators in a row parse (libpg_query's
// own depth limit is not reached) into a tree deeper than the JSON reader
// goes. That is bad input (InvalidArgument, as PostgreSQL's "stack depth
// limit exceeded" would be), not an internal error, on every path; a
// statement just as long but flat still extracts.
TEST(Features, DeeplyNestedStatementIsInvalidArgument) {
  RefExtractor ex(Tpcc());
  const std::string deep = "SELECT * FROM warehouse WHERE w_id = " + std::string(1000, '+') + "1";
  for (int round = 0; round < 2; ++round) {
    RefVec ids;
    std::vector<std::string> texts;
    absl::Status st = ex.Extract(deep, kCanSingle, {}, &ids, &texts);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_NE(st.message().find("nested too deeply"), absl::string_view::npos) << st;
    EXPECT_TRUE(ids.empty());
    RefMult mult;
    st = ex.ExtractUncached(deep, kCanSingle, {}, &ids, &mult, &texts);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_TRUE(ids.empty());
    absl::StatusOr<std::shared_ptr<const RefExtractor::Prepared>> p = ex.Prepare(deep);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
  }
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

// ---------------------------------------------------------------- cache vs cold path

// TPC-C statement templates; each `#` is replaced by a random literal of the
// slot's kind ('n' number, 's' string, 'd' decimal, 'm' maybe-negative).
struct Template {
  const char* sql;
};

std::string RandomLiteral(char kind, std::mt19937_64& rng) {
  switch (kind) {
    case 'n':
      return std::to_string(rng() % 100000);
    case 'd': {
      std::string s = absl::StrCat(rng() % 1000, ".", rng() % 100);
      if (rng() % 4 == 0) s += "0";
      return s;
    }
    case 'm':
      return absl::StrCat(rng() % 2 ? "-" : "", rng() % 500, rng() % 2 ? ".25" : "");
    default: {
      static const char* const kParts[] = {"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
                                           "o'b", "x y", "AND c_id=1", "\\", ""};
      std::string v;
      int n = 1 + rng() % 3;
      for (int i = 0; i < n; ++i) v += kParts[rng() % 15];
      std::string q;
      bool e = rng() % 3 == 0;
      for (char c : v) {
        if (c == '\'') q += "''";
        else if (c == '\\' && e) q += "\\\\";
        else q += c;
      }
      return (e ? "E'" : "'") + q + "'";
    }
  }
}

std::string Instantiate(const std::string& tmpl, std::mt19937_64& rng) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] == '#' && i + 1 < tmpl.size()) {
      out += RandomLiteral(tmpl[++i], rng);
    } else {
      out += tmpl[i];
    }
  }
  return out;
}

const std::vector<std::string>& Templates() {
  static const std::vector<std::string> kT = {
      "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = #n AND c_d_id = #n AND c_id = #n",
      "SELECT w_tax FROM warehouse WHERE w_id = #n",
      "SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = #n AND d_id = #n FOR UPDATE",
      "UPDATE district SET d_next_o_id = #n WHERE d_w_id = #n AND d_id = #n",
      "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) "
      "VALUES (#n, #n, #n, #n, #s, #n, #n)",
      "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (#n, #n, #n), (#n, #n, #n)",
      "SELECT i_price, i_name, i_data FROM item WHERE i_id = #n",
      "SELECT s_quantity, s_data FROM stock WHERE s_i_id = #n AND s_w_id = #n FOR UPDATE",
      "UPDATE stock SET s_quantity = #n, s_ytd = s_ytd + #n WHERE s_i_id = #n AND s_w_id = #n",
      "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, "
      "ol_amount, ol_dist_info) VALUES (#n, #n, #n, #n, #n, #n, #n, #d, #s)",
      "UPDATE warehouse SET w_ytd = w_ytd + #d WHERE w_id = #n",
      "SELECT count(c_id) FROM customer WHERE c_w_id = #n AND c_d_id = #n AND c_last = #s",
      "UPDATE customer SET c_balance = #m, c_data = #s WHERE c_w_id = #n AND c_d_id = #n AND c_id = #n",
      "INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
      "VALUES (#n, #n, #n, #n, #n, #s, #d, #s)",
      "SELECT o_id FROM orders WHERE o_w_id = #n AND o_d_id = #n AND o_c_id = #n ORDER BY o_id DESC LIMIT #n",
      "SELECT ol_i_id FROM order_line WHERE ol_w_id = #n AND ol_d_id = #n AND ol_o_id IN (#n, #n, #n)",
      "DELETE FROM new_order WHERE no_o_id = #n AND no_d_id = #n AND no_w_id = #n",
      "UPDATE order_line SET ol_delivery_d = #s WHERE ol_o_id = #n AND ol_d_id = #n AND ol_w_id = #n",
      "SELECT COUNT(DISTINCT (s_i_id)) FROM order_line, stock WHERE ol_w_id = #n AND ol_d_id = #n "
      "AND ol_o_id < #n AND s_w_id = #n AND s_i_id = ol_i_id AND s_quantity < #n",
      "BEGIN; SELECT w_tax FROM warehouse WHERE w_id = #n; UPDATE stock SET s_quantity = #m "
      "WHERE s_i_id = #n AND s_w_id = #n; COMMIT",
      "SELECT * FROM stock WHERE s_w_id = #n AND s_i_id = #n AND s_i_id = #n",
      "SELECT * FROM stock WHERE s_w_id = #n AND (s_i_id = #n OR s_i_id = #n OR s_i_id IN (#n, #n))",
      "SELECT * FROM stock WHERE s_w_id = ANY(ARRAY[#n, #n]) AND s_i_id = #n",
  };
  return kT;
}

TEST(CacheProperty, HitsEqualTheColdPath) {
  RefExtractor ex(Tpcc());
  std::mt19937_64 rng(20261122);
  const ExtractionPolicy policies[] = {kLitSingle, kLitAll, kCanSingle, kCanAll};
  int compared = 0;
  // Each statement goes through the cache under all four policies and is
  // checked against the uncached path (libpg_query, values from the tree)
  // under one of them, in rotation (the uncached path is the slow part).
  for (int i = 0; i < 2000; ++i) {
    const std::string& t = Templates()[rng() % Templates().size()];
    std::string sql = Instantiate(t, rng);
    for (int k = 0; k < 4; ++k) {
      const ExtractionPolicy& p = policies[k];
      RefVec hot_ids;
      Texts hot;
      ASSERT_TRUE(ex.Extract(sql, p, &hot_ids, &hot).ok()) << sql;
      ASSERT_FALSE(hot.empty()) << sql;
      if (k != i % 4) continue;
      RefVec cold_ids;
      Texts cold;
      ASSERT_TRUE(ex.ExtractUncached(sql, p, {}, &cold_ids, &cold).ok()) << sql;
      ASSERT_EQ(hot, cold) << sql;
      ASSERT_EQ(hot_ids, cold_ids) << sql;
      ++compared;
    }
  }
  RefExtractor::Stats st = ex.stats();
  EXPECT_EQ(compared, 2000);
  // A negative literal ("- ?") is its own shape: the two #m templates have two.
  EXPECT_LE(st.entries, Templates().size() + 2);
  EXPECT_LE(st.misses, Templates().size() + 2);  // libpg_query ran once per shape: the rest hit
}

TEST(CacheProperty, EvictionKeepsResultsCorrect) {
  RefExtractor::Options opt;
  opt.max_shapes = 4;
  opt.shards = 2;
  RefExtractor ex(Tpcc(), opt);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 500; ++i) {
    std::string sql = Instantiate(Templates()[rng() % Templates().size()], rng);
    RefVec a, b;
    Texts ta, tb;
    ASSERT_TRUE(ex.Extract(sql, kCanAll, &a, &ta).ok());
    ASSERT_TRUE(ex.ExtractUncached(sql, kCanAll, {}, &b, &tb).ok());
    ASSERT_EQ(ta, tb) << sql;
  }
  EXPECT_LE(ex.stats().entries, 4u);
}

TEST(CacheConcurrency, ThreadsHammeringTheCacheAgreeWithTheColdPath) {
  RefExtractor::Options opt;
  opt.max_shapes = 12;  // smaller than the template count: evictions race with hits
  opt.shards = 4;
  RefExtractor ex(Tpcc(), opt);
  std::mt19937_64 rng(99);
  std::vector<std::string> corpus;
  std::vector<RefVec> want;
  for (int i = 0; i < 200; ++i) {
    corpus.push_back(Instantiate(Templates()[rng() % Templates().size()], rng));
    RefVec ids;
    ASSERT_TRUE(ex.ExtractUncached(corpus.back(), kCanSingle, {}, &ids).ok());
    want.push_back(ids);
  }
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1500; ++i) {
        size_t k = (i * 7 + t * 13) % corpus.size();
        RefVec ids;
        if (!ex.Extract(corpus[k], kCanSingle, &ids).ok() || ids != want[k]) mismatches.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_LE(ex.stats().entries, 12u + 4u);
}

// The per-thread raw-text cache: entries are keyed by a hash of the text, so
// a hit must be verified against the text itself. A constant hash makes
// every statement collide; equal lengths, equal shapes and equal pointers
// must not fool it, and a template's own literals must come from its text.
uint64_t ConstantHash(absl::string_view) { return 42; }

TEST(RawTextCache, CollisionsAndLiteralsAreVerified) {
  for (bool collide : {false, true}) {
    RefExtractor::Options opt;
    if (collide) opt.text_hash_for_testing = &ConstantHash;
    RefExtractor ex(Tpcc(), opt);
    // Same length, same shape (one literal, one parameter), different
    // literal value or different column.
    const std::string stmts[] = {
        "UPDATE stock SET s_quantity = 5 WHERE s_i_id = 7 AND s_w_id = $1",
        "UPDATE stock SET s_quantity = 6 WHERE s_i_id = 7 AND s_w_id = $1",
        "UPDATE stock SET s_quantity = 5 WHERE s_i_id = 8 AND s_w_id = $1",
        "UPDATE stock SET s_quantity = 5 WHERE s_w_id = 7 AND s_i_id = $1",
        "SELECT w_tax FROM warehouse WHERE w_id = $1",
        "SELECT d_tax FROM district  WHERE d_id = $1",
    };
    const std::vector<ParamValue> params[] = {{ParamValue{"3"}}, {ParamValue{"11"}}, {ParamValue{"", true}}};
    // One buffer reused for every statement: same address, same length.
    std::string buffer(stmts[0].size(), ' ');
    for (int round = 0; round < 3; ++round) {
      for (size_t i = 0; i < 6; ++i) {
        for (const ExtractionPolicy& p : {kLitSingle, kCanAll}) {
          const std::vector<ParamValue>& pv = params[(i + round) % 3];
          absl::string_view sql = stmts[i];
          if (stmts[i].size() == buffer.size()) {
            buffer.replace(0, buffer.size(), stmts[i]);
            sql = buffer;
          }
          RefVec hot_ids, cold_ids;
          Texts hot, cold;
          ASSERT_TRUE(ex.Extract(sql, p, pv, &hot_ids, &hot).ok()) << sql;
          ASSERT_TRUE(ex.ExtractUncached(sql, p, pv, &cold_ids, &cold).ok()) << sql;
          EXPECT_EQ(hot, cold) << "collide=" << collide << " " << sql;
          EXPECT_EQ(hot_ids, cold_ids) << sql;
          if (!pv[0].is_null) EXPECT_FALSE(hot.empty()) << sql;
        }
      }
    }
  }
  // The literal values really come from each statement's own text.
  RefExtractor::Options opt;
  opt.text_hash_for_testing = &ConstantHash;
  RefExtractor ex(Tpcc(), opt);
  std::vector<ParamValue> pv = {ParamValue{"9"}};
  EXPECT_EQ(Refs(ex, "UPDATE stock SET s_quantity = 5 WHERE s_i_id = 7 AND s_w_id = $1", kLitSingle, pv),
            (Texts{"s_quantity=5", "s_i_id=7", "s_w_id=9"}));
  EXPECT_EQ(Refs(ex, "UPDATE stock SET s_quantity = 6 WHERE s_i_id = 8 AND s_w_id = $1", kLitSingle, pv),
            (Texts{"s_quantity=6", "s_i_id=8", "s_w_id=9"}));
}

// A statement with literals and no parameters is not entered in the raw-text
// cache (literal SQL rarely repeats), one with parameters is; both give the
// same references on every call.
TEST(RawTextCache, RepeatedTextHitsAgreeWithTheColdPath) {
  RefExtractor ex(Tpcc());
  for (int i = 0; i < 50; ++i) {
    std::string lit = absl::StrCat("SELECT c_id FROM customer WHERE c_w_id = ", i % 5, " AND c_d_id = $1");
    std::vector<ParamValue> pv = {ParamValue{i % 2 ? "4" : "-0004"}};
    for (const ExtractionPolicy& p : {kLitAll, kCanSingle}) {
      RefVec a, b;
      Texts ta, tb;
      ASSERT_TRUE(ex.Extract(lit, p, pv, &a, &ta).ok());
      ASSERT_TRUE(ex.ExtractUncached(lit, p, pv, &b, &tb).ok());
      EXPECT_EQ(ta, tb) << lit;
      EXPECT_EQ(a, b);
    }
  }
  EXPECT_EQ(ex.stats().misses, 1u);
}

}  // namespace
}  // namespace corral
