#include "adapters/proxy/router.h"

#include <deque>
#include <string>

#include "adapters/proxy/wire.h"
#include "gtest/gtest.h"
#include "policies/schema.h"
#include "scheduler/scheduler.h"

namespace corral {
namespace proxy {
namespace {

std::shared_ptr<const Schema> TestSchema() {
  SchemaBuilder b;
  EXPECT_TRUE(b.AddDdl("CREATE TABLE acct (id INT PRIMARY KEY, v INT);").ok());
  auto s = b.Build();
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

std::unique_ptr<scheduler::Scheduler> TestScheduler(int queues) {
  scheduler::Scheduler::Options so;
  so.num_queues = queues;
  auto s = scheduler::Scheduler::Create(so, {});
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

Msg Message(char type, const std::string& body) {
  Msg m{type, ""};
  size_t at = wire::BeginMessage(&m.raw, type);
  m.raw += body;
  wire::EndMessage(&m.raw, at);
  return m;
}

std::string Z(const std::string& s) { return s + std::string(1, '\0'); }

// A Bind of `stmt` with one parameter in `format` (0 text, 1 binary).
Msg Bind(const std::string& stmt, const std::string& value, int16_t format) {
  std::string b = Z("") + Z(stmt);
  wire::PutInt16(&b, 1);
  wire::PutInt16(&b, format);
  wire::PutInt16(&b, 1);
  wire::PutInt32(&b, static_cast<int32_t>(value.size()));
  b += value;
  wire::PutInt16(&b, 0);
  return Message('B', b);
}

TEST(Router, ClassifiesTransactionControl) {
  EXPECT_EQ(ClassifyTxnControl(" begin ; "), TxnControl::kBegin);
  EXPECT_EQ(ClassifyTxnControl("START TRANSACTION ISOLATION LEVEL SERIALIZABLE"), TxnControl::kBegin);
  EXPECT_EQ(ClassifyTxnControl("COMMIT"), TxnControl::kCommit);
  EXPECT_EQ(ClassifyTxnControl("end"), TxnControl::kCommit);
  EXPECT_EQ(ClassifyTxnControl("ABORT"), TxnControl::kRollback);
  EXPECT_EQ(ClassifyTxnControl("ROLLBACK TO SAVEPOINT a"), TxnControl::kOther);
  EXPECT_EQ(ClassifyTxnControl("COMMIT PREPARED 'x'"), TxnControl::kOther);
  EXPECT_EQ(ClassifyTxnControl("COMMIT AND CHAIN"), TxnControl::kOther);
  EXPECT_EQ(ClassifyTxnControl("BEGIN; SELECT 1"), TxnControl::kOther);
}

TEST(Router, ReferencesFromQueryAndFromTextBindsOnly) {
  auto sched = TestScheduler(4);
  Router router(sched.get(), TestSchema());
  RoutedTxn q;
  router.AddQuery("UPDATE acct SET v = v + 1 WHERE id = 5", &q);
  ASSERT_EQ(q.txn.refs.size(), 1u);

  // The same reference through Parse + Bind with a text parameter.
  const std::string parse = Z("s") + Z("UPDATE acct SET v = v + 1 WHERE id = $1") + std::string(2, '\0');
  std::deque<Msg> unit{Message('P', parse), Bind("s", "5", 0), Message('E', Z("") + std::string(4, '\0')),
                       Message('S', "")};
  RoutedTxn e;
  router.AddUnit(unit, 3, {}, &e);
  ASSERT_EQ(e.txn.refs.size(), 1u);
  EXPECT_EQ(e.txn.refs[0], q.txn.refs[0]);

  // A statement known to the client (prepared earlier), binary parameter:
  // no reference from it (yet).
  StatementMap stmts;
  std::string name;
  stmts["s"] = PreparedDef::FromParse(parse, &name);
  std::deque<Msg> binary{Bind("s", std::string("\0\0\0\x05", 4), 1), Message('S', "")};
  RoutedTxn b;
  router.AddUnit(binary, 1, stmts, &b);
  EXPECT_TRUE(b.txn.refs.empty());
  // Unknown statement: skipped.
  std::deque<Msg> unknown{Bind("nope", "5", 0), Message('S', "")};
  RoutedTxn u;
  router.AddUnit(unknown, 1, stmts, &u);
  EXPECT_TRUE(u.txn.refs.empty());
}

TEST(Router, RoutesInRangeAndFeedsOutcomesBack) {
  auto sched = TestScheduler(3);
  Router router(sched.get(), TestSchema());
  RoutedTxn t;
  router.AddQuery("UPDATE acct SET v = 1 WHERE id = 9", &t);
  bool affine = true;
  const int q = router.Route(&t, true, &affine, 3);
  EXPECT_GE(q, 0);
  EXPECT_LT(q, 3);
  EXPECT_FALSE(affine);  // nothing learned yet
  t.conflict_state = "40001";
  EXPECT_EQ(t.outcome(), scheduler::Outcome::kConflictAbort);
  router.Finish(t, t.outcome());
  auto top = sched->history().TopByAborts(5);
  ASSERT_FALSE(t.txn.refs.empty());
  ASSERT_EQ(top.size(), t.txn.refs.size());
  for (const auto& e : top) EXPECT_EQ(e.counts.aborts, 1u);
  t.ClearOutcome();
  EXPECT_EQ(t.outcome(), scheduler::Outcome::kCommitted);
  t.had_error = true;
  EXPECT_EQ(t.outcome(), scheduler::Outcome::kFailed);
  t.had_error = false;
  t.rolled_back = true;
  EXPECT_EQ(t.outcome(), scheduler::Outcome::kUserAbort);
  EXPECT_EQ(router.CheckSyntax("SELEC 1").ok(), false);
  EXPECT_TRUE(router.CheckSyntax("SELECT * FROM missing_table").ok());
}

}  // namespace
}  // namespace proxy
}  // namespace corral
