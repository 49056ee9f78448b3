// Tests of SqlRefs, the runner's extraction: over every workload's
// generated transactions (all templates, random parameters), the template
// path (AppendBound + compiled slots) gives exactly the references and
// statement counts of the text path (AppendSql + RefExtractor::Extract per
// statement), under every extraction policy and both INSERT/UPDATE modes.
#include "bench/runner/sql_refs.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bench/workloads/factory.h"
#include "bench/workloads/workload_testing.h"
#include "gtest/gtest.h"

namespace corral {
namespace bench {
namespace {

constexpr ExtractionPolicy kPolicies[] = {{RefNaming::kLiteral, RefGrouping::kSingle},
                                          {RefNaming::kLiteral, RefGrouping::kAll},
                                          {RefNaming::kCanonical, RefGrouping::kSingle},
                                          {RefNaming::kCanonical, RefGrouping::kAll}};

class SqlRefsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SqlRefsTest, TemplatePathEqualsTextPath) {
  auto w = workloads::MakeWorkload(GetParam());
  ASSERT_TRUE(w.ok()) << w.status();
  auto ddl = workloads::ReadRepoFile((*w)->schema_file());
  ASSERT_TRUE(ddl.ok()) << ddl.status();
  for (InsertRefs mode : {InsertRefs::kAll, InsertRefs::kForeignKeys}) {
    SchemaBuilder b;
    b.SetInsertRefs(mode);
    ASSERT_TRUE(b.AddDdl(*ddl).ok());
    auto schema = b.Build();
    ASSERT_TRUE(schema.ok()) << schema.status();
    auto ex = std::make_shared<RefExtractor>(*schema);
    RefExtractor text_ex(*schema);
    SqlRefs refs(ex);
    SqlRefs::Local local;
    workloads::Rng rng(7 + static_cast<int>(mode));
    workloads::BoundSql bound;
    std::vector<workloads::SqlStatement> sql;
    std::vector<ParamValue> params;
    int with_refs = 0;
    const int kTxns = 2000;
    for (int i = 0; i < kTxns; ++i) {
      auto t = (*w)->Next(rng);
      const ExtractionPolicy policy = kPolicies[i % 4];
      RefVec want, got;
      RefMult want_mult, got_mult;
      sql.clear();
      t->AppendSql(&sql);
      for (const auto& s : sql) {
        params.clear();
        for (const auto& p : s.params) params.push_back(ParamValue{p.value(), p.is_null});
        ASSERT_TRUE(text_ex.Extract(s.tmpl, policy, ParamSpan(params), &want, &want_mult).ok()) << s.Literal();
      }
      bound.clear();
      t->AppendBound(&bound);
      ASSERT_EQ(bound.size(), sql.size());
      ASSERT_EQ(refs.Extract(bound, policy, &local, &got, &got_mult), 0);
      ASSERT_EQ(got, want) << sql[0].Literal();
      ASSERT_EQ(got_mult, want_mult) << sql[0].Literal();
      with_refs += want.empty() ? 0 : 1;
    }
    EXPECT_GT(with_refs, kTxns / 2);
  }
}

INSTANTIATE_TEST_SUITE_P(Workloads, SqlRefsTest, ::testing::Values("tpcc", "smallbank", "tatp", "ycsb"));

// A template that does not parse counts as an error and yields nothing; the
// other statements still contribute.
TEST(SqlRefsErrorsTest, BadTemplateCounted) {
  auto schema = SchemaBuilder().Build();
  ASSERT_TRUE(schema.ok());
  SqlRefs refs(std::make_shared<RefExtractor>(*schema));
  SqlRefs::Local local;
  workloads::BoundSql bound;
  bound.Add("SELEC x FROM t WHERE a = $1").Int(1);
  bound.Add("SELECT x FROM t WHERE a = $1").Int(2);
  bound.AddOwned("SELECT x FROM t WHERE b = $1").Int(3);
  RefVec ids;
  EXPECT_EQ(refs.Extract(bound, {RefNaming::kLiteral, RefGrouping::kSingle}, &local, &ids, nullptr), 1);
  EXPECT_EQ(ids, (RefVec{RefId::Of("a=2"), RefId::Of("b=3")}));
}

// Every static template is looked up by its text once per thread, however
// many transactions repeat it (no collisions in the address index).
TEST(SqlRefsIndexTest, EachTemplateFoundByTextOnce) {
  auto w = workloads::MakeWorkload("tpcc");
  ASSERT_TRUE(w.ok()) << w.status();
  auto ddl = workloads::ReadRepoFile((*w)->schema_file());
  ASSERT_TRUE(ddl.ok()) << ddl.status();
  SchemaBuilder b;
  ASSERT_TRUE(b.AddDdl(*ddl).ok());
  auto schema = b.Build();
  ASSERT_TRUE(schema.ok()) << schema.status();
  SqlRefs refs(std::make_shared<RefExtractor>(*schema));
  SqlRefs::Local local;
  workloads::Rng rng(11);
  workloads::BoundSql bound;
  std::set<std::pair<const char*, size_t>> distinct;
  for (int i = 0; i < 3000; ++i) {
    auto t = (*w)->Next(rng);
    bound.clear();
    t->AppendBound(&bound);
    for (const auto& s : bound.statements()) {
      ASSERT_TRUE(s.static_tmpl());
      distinct.insert({s.tmpl.data(), s.tmpl.size()});
    }
    RefVec ids;
    ASSERT_EQ(refs.Extract(bound, {RefNaming::kCanonical, RefGrouping::kSingle}, &local, &ids, nullptr), 0);
  }
  EXPECT_GT(distinct.size(), 20u);
  EXPECT_LT(distinct.size(), SqlRefs::Local::kMaxUsed);
  EXPECT_EQ(local.text_lookups, distinct.size());
}

// More templates than the index keeps: it starts over and the references
// stay those of the text path.
TEST(SqlRefsIndexTest, ManyTemplatesStartOver) {
  auto schema = SchemaBuilder().Build();
  ASSERT_TRUE(schema.ok());
  SqlRefs refs(std::make_shared<RefExtractor>(*schema));
  SqlRefs::Local local;
  std::vector<std::string> texts;
  const int kTemplates = 3 * static_cast<int>(SqlRefs::Local::kSlots);
  for (int k = 0; k < kTemplates; ++k) {
    texts.push_back("SELECT x FROM t WHERE a" + std::to_string(k) + " = $1 AND b = 7");
  }
  for (int round = 0; round < 3; ++round) {
    for (ExtractionPolicy policy : kPolicies) {
      workloads::BoundSql bound;
      RefVec want;
      RefMult want_mult;
      for (int k = 0; k < kTemplates; ++k) {
        const int v = (k * 37 + round) % 11;
        bound.Add(texts[k]).Int(v);
        want.push_back(RefId::Of("a" + std::to_string(k) + "=" + std::to_string(v)));
        want_mult.push_back(1);
        if (k == 0) {
          want.push_back(RefId::Of("b=7"));
          want_mult.push_back(static_cast<uint16_t>(kTemplates + 4));
        }
      }
      // Four more statements naming a reference first seen far into the
      // transaction (position 151) and b=7 (position 1): each counts once more.
      for (int j = 0; j < 4; ++j) bound.Add(texts[150]).Int((150 * 37 + round) % 11);
      want_mult[151] = 5;
      RefVec got;
      RefMult got_mult;
      ASSERT_EQ(refs.Extract(bound, policy, &local, &got, &got_mult), 0);
      if (policy.grouping == RefGrouping::kSingle) {
        EXPECT_EQ(got, want) << round;
        EXPECT_EQ(got_mult, want_mult) << round;
      } else {
        EXPECT_EQ(got.size(), static_cast<size_t>(kTemplates)) << round;
      }
    }
  }
  EXPECT_LE(local.used, SqlRefs::Local::kMaxUsed);
}

}  // namespace
}  // namespace bench
}  // namespace corral
