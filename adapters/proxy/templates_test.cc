#include "adapters/proxy/templates.h"

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "adapters/proxy/router.h"
#include "gtest/gtest.h"
#include "policies/schema.h"
#include "scheduler/scheduler.h"

namespace corral {
namespace proxy {
namespace {

TEST(Stmt, SimpleShapeTakesLiteralsOut) {
  const Stmt s = Stmt::FromSimple("UPDATE acct  SET v = v - 12 WHERE id = 5 AND name = 'o''k' AND x1 = 3;");
  EXPECT_EQ(s.values, (std::vector<std::string>{"12", "5", "'o''k'", "3"}));
  EXPECT_EQ(s.Render(s.values), "update acct set v = v - 12 where id = 5 and name = 'o''k' and x1 = 3");
  EXPECT_EQ(Stmt::FromSimple("select v from acct where id = 9").shape,
            Stmt::FromSimple("SELECT v FROM acct WHERE id = 10").shape);
  // A negative number is one literal: pgbench's "v - -37" is "v - 37"'s shape.
  const Stmt neg = Stmt::FromSimple("UPDATE acct SET v = v - -37 WHERE id = 5");
  EXPECT_EQ(neg.shape, Stmt::FromSimple("UPDATE acct SET v = v - 37 WHERE id = 5").shape);
  EXPECT_EQ(neg.values, (std::vector<std::string>{"-37", "5"}));
  EXPECT_EQ(Stmt::FromSimple("SELECT v-1 FROM acct").values, (std::vector<std::string>{"1"}));
  const Stmt e = Stmt::FromExtended("SELECT v FROM acct WHERE id = $1 AND n = $2", {"7", "a'b"});
  EXPECT_EQ(e.Render(e.values), "SELECT v FROM acct WHERE id = 7 AND n = 'a''b'");
}

// A transfer: the first statement names account a, then a debit of a and
// a credit of a + 1 (a random amount d in both).
TxnTrace Transfer(int a, int b, int d) {
  return {Stmt::FromSimple(absl::StrCat("SELECT v FROM acct WHERE id = ", a)),
          Stmt::FromSimple(absl::StrCat("UPDATE acct SET v = v - ", d, " WHERE id = ", a)),
          Stmt::FromSimple(absl::StrCat("UPDATE acct SET v = v + ", d, " WHERE id = ", b))};
}

std::shared_ptr<const Schema> TestSchema() {
  SchemaBuilder b;
  EXPECT_TRUE(b.AddDdl("CREATE TABLE acct (id INT PRIMARY KEY, v INT);").ok());
  auto s = b.Build();
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

class TemplatesRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scheduler::Scheduler::Options so;
    so.num_queues = 4;
    sched_ = std::move(*scheduler::Scheduler::Create(so, {}));
    router_ = std::make_unique<Router>(sched_.get(), TestSchema());
    router_->SetTemplates(std::make_unique<Templates>(Templates::Options{}));
  }
  // One transaction through the router as the proxy runs it: the first
  // statement, a prediction, the rest, the outcome. Returns the texts of
  // the predicted references it touched (sorted); *npredicted: how many
  // were predicted.
  std::vector<std::string> Run(const TxnTrace& stmts, size_t* npredicted = nullptr) {
    RoutedTxn t;
    router_->AddQuery(stmts[0].Render(stmts[0].values), &t);
    router_->PredictRefs(&t);
    RoutedTxn probe;  // the texts of the predicted references
    std::vector<std::string> predicted;
    for (size_t i = 1; i < stmts.size(); ++i) router_->AddQuery(stmts[i].Render(stmts[i].values), &t);
    for (size_t i = 0; i < t.txn.refs.size(); ++i) {
      if (std::find(t.predicted.begin(), t.predicted.end(), t.txn.refs[i]) != t.predicted.end()) {
        predicted.push_back(std::string(t.ref_texts[i]));
      }
    }
    if (npredicted != nullptr) *npredicted = t.predicted.size();
    router_->Finish(&t, scheduler::Outcome::kCommitted);
    std::sort(predicted.begin(), predicted.end());
    return predicted;
  }
  std::unique_ptr<scheduler::Scheduler> sched_;
  std::unique_ptr<Router> router_;
};

TEST_F(TemplatesRouterTest, LearnedFrom100TransactionsPredictsTheNextOnesReferences) {
  std::mt19937 rng(7);
  for (int i = 0; i < 100; ++i) {
    const int a = 1 + static_cast<int>(rng() % 1000);
    size_t n = 0;
    EXPECT_EQ(Run(Transfer(a, a + 1, 1 + static_cast<int>(rng() % 100)), &n).size(), i < 20 ? 0u : 2u)
        << "transaction " << i;  // reliable after min_observations
    EXPECT_EQ(n, i < 20 ? 0u : 2u);  // and nothing predicted it did not touch
  }
  // The next one: its first statement alone predicts both rows.
  EXPECT_EQ(Run(Transfer(500, 501, 42)), (std::vector<std::string>{"id=500", "id=501"}));
  const Templates& t = *router_->templates();
  EXPECT_EQ(t.counters().learned, 101);
  EXPECT_GE(t.counters().predictions, 70);
  EXPECT_EQ(t.size(), 1u);
  // SHOW TEMPLATES: the amount is unpredictable, the rows are not.
  auto rows = router_->templates()->Rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1][4], "?, p1+1");
  EXPECT_EQ(rows[0][4], "?, =p1");
  EXPECT_EQ(rows[1][5], "yes");
}

TEST_F(TemplatesRouterTest, AMappingThatStopsHoldingIsDroppedAndRelearned) {
  std::mt19937 rng(9);
  for (int i = 0; i < 100; ++i) {
    const int a = 1 + static_cast<int>(rng() % 1000);
    Run(Transfer(a, a + 1, 5));
  }
  EXPECT_EQ(Run(Transfer(10, 11, 5)), (std::vector<std::string>{"id=10", "id=11"}));
  // The second row becomes independent of the first: no longer predicted.
  int first_unpredicted = -1;
  for (int i = 0; i < 100; ++i) {
    const int a = 1 + static_cast<int>(rng() % 1000);
    size_t n = 0;
    Run(Transfer(a, 2000 + static_cast<int>(rng() % 1000), 5), &n);
    if (first_unpredicted < 0 && n == 1) first_unpredicted = i;
  }
  ASSERT_GE(first_unpredicted, 0);
  EXPECT_LE(first_unpredicted, 5);  // dropped within a few transactions, not a whole window
  EXPECT_GE(router_->templates()->counters().mappings_dropped, 1);
  size_t n = 0;
  EXPECT_EQ(Run(Transfer(10, 2500, 5), &n), (std::vector<std::string>{"id=10"}));
  EXPECT_EQ(n, 1u);
  // A new mapping (a + 2) is learned again.
  for (int i = 0; i < 100; ++i) {
    const int a = 1 + static_cast<int>(rng() % 1000);
    Run(Transfer(a, a + 2, 5));
  }
  EXPECT_EQ(Run(Transfer(10, 12, 5)), (std::vector<std::string>{"id=10", "id=12"}));
}

TEST(Templates, MemoryIsBounded) {
  Templates::Options o;
  o.max_templates = 2;
  Templates t(o);
  for (const char* table : {"a", "b", "c"}) {
    t.Learn({Stmt::FromSimple(absl::StrCat("SELECT v FROM ", table, " WHERE id = 1")),
             Stmt::FromSimple("SELECT 2")});
  }
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.counters().evictions, 1);
  EXPECT_TRUE(t.Predict(Stmt::FromSimple("SELECT v FROM a WHERE id = 1")).empty());
}

TEST(Templates, ATransactionThatFailedPartWayIsNoEvidenceAgainstLaterStatements) {
  Templates t(Templates::Options{});
  auto first = [](int a) { return Stmt::FromSimple(absl::StrCat("SELECT v FROM acct WHERE id = ", a)); };
  auto second = [](int a) { return Stmt::FromSimple(absl::StrCat("UPDATE acct SET v = 0 WHERE id = ", a + 1)); };
  for (int i = 0; i < 60; ++i) {
    if (i % 2 == 0) {
      t.Learn({first(i), second(i)});
    } else {
      t.Learn({first(i)}, /*complete=*/false);  // aborted after its first statement
    }
  }
  EXPECT_EQ(t.Predict(first(7)), (std::vector<std::string>{"update acct set v = 0 where id = 8"}));
  // The same ending alone, complete: the second statement is not a rule.
  Templates u(Templates::Options{});
  for (int i = 0; i < 60; ++i) {
    if (i % 2 == 0) {
      u.Learn({first(i), second(i)});
    } else {
      u.Learn({first(i)});
    }
  }
  EXPECT_TRUE(u.Predict(first(7)).empty());
}

}  // namespace
}  // namespace proxy
}  // namespace corral
