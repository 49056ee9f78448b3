// Tests of reference extraction: the paper's examples and every TPC-C
// statement. The SQL features are in ref_extractor_features_test.cc, inputs
// that once broke it in ref_extractor_regression_test.cc, the cache against
// the cold path and concurrency in ref_extractor_cache_test.cc.
#include "policies/ref_extractor.h"

#include "gtest/gtest.h"
#include "policies/ref_extractor_testing.h"

namespace corral {
namespace {

using namespace testing_refs;  // NOLINT: the shared test helpers

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

}  // namespace
}  // namespace corral
