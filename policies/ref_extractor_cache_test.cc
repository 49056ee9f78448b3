// Tests of the reference extractor's caches (shape cache, per-thread raw-text
// cache) against the cold path: random TPC-C statements, eviction, threads,
// hash collisions.
#include "policies/ref_extractor.h"

#include <atomic>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "policies/ref_extractor_testing.h"

namespace corral {
namespace {

using namespace testing_refs;  // NOLINT: the shared test helpers

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
