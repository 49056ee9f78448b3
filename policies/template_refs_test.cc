// Tests of TemplateRefs: the slot path (with and without a transaction's
// memo) gives exactly the text path's references (RefExtractor::Extract over the parameters' texts), statement by
// statement and across a transaction's statements (de-duplication and
// statement counts), under every extraction policy, for templates that
// exercise what the extractor treats specially; and it takes the slot path.
#include "policies/template_refs.h"

#include <fstream>
#include <random>
#include <sstream>

#include "gtest/gtest.h"

namespace corral {
namespace {

constexpr ExtractionPolicy kPolicies[] = {{RefNaming::kLiteral, RefGrouping::kSingle},
                                          {RefNaming::kLiteral, RefGrouping::kAll},
                                          {RefNaming::kCanonical, RefGrouping::kSingle},
                                          {RefNaming::kCanonical, RefGrouping::kAll}};

std::shared_ptr<const Schema> Tpcc(InsertRefs mode) {
  std::ifstream in("schemas/tpcc.sql");
  std::stringstream ss;
  ss << in.rdbuf();
  SchemaBuilder b;
  b.SetInsertRefs(mode);
  EXPECT_TRUE(b.AddDdl(ss.str()).ok());
  auto s = b.Build();
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

// Templates with $n: equalities, IN lists of parameters and of constants,
// ranges, OR chains, NOT, UPDATE SET (foreign-key and other columns),
// INSERT rows, sub-selects, constants (negative too) next to parameters,
// text columns, a parameter used twice, and `= ANY($n)` (array: text path).
const char* const kTemplates[] = {
    "SELECT w_tax FROM warehouse WHERE w_id = $1",
    "SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = $1 AND d_id = $2 FOR UPDATE",
    "SELECT c_discount FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
    "SELECT c_id FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 ORDER BY c_first",
    "SELECT * FROM stock WHERE s_w_id = $1 AND s_i_id IN ($2, $3, $4)",
    "SELECT * FROM stock WHERE s_w_id IN ($1, 7) AND s_i_id IN ($2, -3)",
    "SELECT * FROM stock WHERE s_w_id = $1 AND (s_i_id = $2 OR s_i_id = $3 OR s_i_id IN (4, $4))",
    "SELECT * FROM item WHERE i_id NOT IN ($1, $2)",
    "SELECT * FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id < $3 AND ol_o_id >= $4",
    "SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = $1 AND ol_d_id = $2 "
    "AND ol_o_id < $3 AND ol_o_id >= $4 AND s_w_id = $5 AND s_i_id = ol_i_id AND s_quantity < $6",
    "UPDATE stock SET s_quantity = $1, s_remote_cnt = s_remote_cnt + $3 WHERE s_i_id = $2 AND s_w_id = $4",
    "UPDATE orders SET o_carrier_id = $1, o_c_id = $2 WHERE o_w_id = $3 AND o_d_id = $4 AND o_id = $5",
    "UPDATE customer SET c_balance = c_balance + $1 WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4",
    "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, "
    "ol_amount, ol_dist_info) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES ($1, $2, $3), ($4, $2, 5)",
    "INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_amount, h_data) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7)",
    "SELECT * FROM customer c WHERE c.c_w_id = $1 AND c.c_id IN "
    "(SELECT h_c_id FROM history WHERE h_amount = $2 AND h_w_id = $1)",
    "SELECT * FROM district WHERE d_w_id = -$1 AND d_id = 3 AND d_name = $2",
    "SELECT * FROM warehouse WHERE w_id = $1 OR w_id = $2",
    "SELECT * FROM warehouse WHERE w_name = 'O''Brien' AND w_id = $1",
    "DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3",
    "SELECT * FROM stock WHERE s_w_id = $1 AND s_i_id = ANY($2)",
    "SELECT * FROM warehouse WHERE w_id = $1 AND w_id = $1",
};

BoundValue RandomValue(std::mt19937_64& rng) {
  static const char* const kTexts[] = {"BARBAR", "O'Brien", "005", "5.50", "-0", "", "{1,2,NULL}", "7",
                                       "abc def", "1e3"};
  switch (rng() % 6) {
    case 0:
      return BoundValue::Null();
    case 1:
      return BoundValue::Text(kTexts[rng() % (sizeof(kTexts) / sizeof(kTexts[0]))]);
    case 2: {
      static const double kNums[] = {0.0, 12.5, -3.25, 1e15, 1e20, 0.1, 7.0, 4999.99, -0.0};
      return BoundValue::Num(kNums[rng() % (sizeof(kNums) / sizeof(kNums[0]))]);
    }
    case 3:
      return BoundValue::Int(-static_cast<int64_t>(rng() % 100000));
    case 4:
      return BoundValue::Int(static_cast<int64_t>(rng()));  // any int64, extremes included
    default:
      return BoundValue::Int(static_cast<int64_t>(1 + rng() % 10));  // small: repeats across statements
  }
}

// The text path's parameters for `values`.
std::vector<ParamValue> Texts(const std::vector<BoundValue>& values, std::vector<std::string>* storage) {
  storage->assign(values.size(), "");
  std::vector<ParamValue> out;
  for (size_t i = 0; i < values.size(); ++i) {
    AppendText(values[i], &(*storage)[i]);
    out.push_back(ParamValue{(*storage)[i], values[i].is_null()});
  }
  return out;
}

TEST(TemplateRefsTest, SlotPathEqualsTextPath) {
  for (InsertRefs mode : {InsertRefs::kAll, InsertRefs::kForeignKeys}) {
    RefExtractor ex(Tpcc(mode));
    std::vector<std::shared_ptr<const TemplateRefs>> compiled;
    int slotted = 0;
    for (const char* t : kTemplates) {
      auto c = TemplateRefs::Compile(ex, t);
      ASSERT_TRUE(c.ok()) << t << ": " << c.status();
      slotted += (*c)->slotted() ? 1 : 0;
      compiled.push_back(*c);
    }
    // Every template but the array one takes the slot path.
    EXPECT_EQ(slotted, static_cast<int>(sizeof(kTemplates) / sizeof(kTemplates[0])) - 1);
    std::mt19937_64 rng(42 + static_cast<int>(mode));
    int nonempty = 0;
    for (int txn = 0; txn < 3000; ++txn) {
      const ExtractionPolicy policy = kPolicies[txn % 4];
      RefVec want_ids, got_ids;
      RefMult want_mult, got_mult;
      const int statements = 1 + static_cast<int>(rng() % 6);
      // Half the transactions fill slots with a per-transaction memo (as SqlRefs does).
      const bool use_memo = (txn / 4) % 2 == 1;
      TemplateRefs::Memo memo;
      for (int k = 0; k < statements; ++k) {
        const size_t ti = rng() % compiled.size();
        std::vector<BoundValue> values;
        for (int p = 0; p < 9; ++p) values.push_back(RandomValue(rng));
        if (rng() % 4 == 0) values.resize(rng() % 4);  // fewer parameters than the template names
        std::vector<std::string> storage;
        const std::vector<ParamValue> params = Texts(values, &storage);
        ASSERT_TRUE(ex.Extract(kTemplates[ti], policy, params, &want_ids, &want_mult).ok());
        if (use_memo && policy.grouping == RefGrouping::kSingle && compiled[ti]->slotted()) {
          TemplateRefs::FillSlots(compiled[ti]->slots(policy.naming), values, &got_ids, &got_mult, &memo);
        } else {
          compiled[ti]->Extract(policy, values, &got_ids, &got_mult);
        }
        ASSERT_EQ(got_ids, want_ids) << kTemplates[ti] << " statement " << k;
        ASSERT_EQ(got_mult, want_mult) << kTemplates[ti] << " statement " << k;
      }
      nonempty += want_ids.empty() ? 0 : 1;
    }
    EXPECT_GT(nonempty, 2000);
  }
}

TEST(TemplateRefsTest, KnownReferences) {
  RefExtractor ex(Tpcc(InsertRefs::kAll));
  auto t = TemplateRefs::Compile(ex, "SELECT * FROM stock WHERE s_w_id = $1 AND s_i_id IN ($2, -3)");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE((*t)->slotted());
  const BoundValue p[] = {BoundValue::Int(5), BoundValue::Int(12)};
  RefVec ids;
  (*t)->Extract({RefNaming::kCanonical, RefGrouping::kSingle}, p, &ids);
  EXPECT_EQ(ids, (RefVec{RefId::Of("w_id=5"), RefId::Of("i_id=12"), RefId::Of("i_id=-3")}));
  // A text column quotes an integer; NULL yields nothing.
  auto c = TemplateRefs::Compile(ex, "SELECT * FROM customer WHERE c_last = $1 AND c_id = $2");
  ASSERT_TRUE(c.ok());
  const BoundValue q[] = {BoundValue::Int(7), BoundValue::Null()};
  ids.clear();
  (*c)->Extract({RefNaming::kLiteral, RefGrouping::kSingle}, q, &ids);
  EXPECT_EQ(ids, (RefVec{RefId::Of("c_last='7'")}));
}

TEST(TemplateRefsTest, SyntaxErrorIsReported) {
  RefExtractor ex(Tpcc(InsertRefs::kAll));
  auto t = TemplateRefs::Compile(ex, "SELEC w_tax FROM warehouse WHERE w_id = $1");
  EXPECT_FALSE(t.ok());
  EXPECT_TRUE(SyntaxErrorPosition(t.status()).has_value());
}

}  // namespace
}  // namespace corral
