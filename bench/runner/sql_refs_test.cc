// Tests of SqlRefs, the runner's extraction: over every workload's
// generated transactions (all templates, random parameters), the template
// path (AppendBound + compiled slots) gives exactly the references and
// statement counts of the text path (AppendSql + RefExtractor::Extract per
// statement), under every extraction policy and both INSERT/UPDATE modes.
#include "bench/runner/sql_refs.h"

#include <string>
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

}  // namespace
}  // namespace bench
}  // namespace corral
