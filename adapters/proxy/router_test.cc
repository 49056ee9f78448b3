#include "adapters/proxy/router.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <string>
#include <utility>
#include <vector>

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

// What a block of the proxy's (table locks) must not wrap.
TEST(Router, MayEndTxnBlock) {
  for (const char* sql : {"COMMIT", "rollback to savepoint a", "COMMIT PREPARED 'x'", "SAVEPOINT a", "release a",
                          " CALL transfer(1, 2)", "DO $$ BEGIN COMMIT; END $$", "PREPARE TRANSACTION 'x'", "begin"}) {
    EXPECT_TRUE(MayEndTxnBlock(sql)) << sql;
  }
  for (const char* sql : {"UPDATE t SET v = 1 WHERE k = 2", "SELECT do_it(1)", "INSERT INTO calls VALUES (1)",
                          "select commit_count from t"}) {
    EXPECT_FALSE(MayEndTxnBlock(sql)) << sql;
  }
}

std::string ParseBody(const std::string& name, const std::string& sql, std::vector<int32_t> oids) {
  std::string b = Z(name) + Z(sql);
  wire::PutInt16(&b, static_cast<int16_t>(oids.size()));
  for (int32_t o : oids) wire::PutInt32(&b, o);
  return b;
}

PreparedDef Def(const std::string& sql, std::vector<int32_t> oids) {
  std::string name;
  return PreparedDef::FromParse(ParseBody("s", sql, std::move(oids)), &name);
}

// A ParameterDescription body.
std::string Description(std::vector<int32_t> oids) {
  std::string b;
  wire::PutInt16(&b, static_cast<int16_t>(oids.size()));
  for (int32_t o : oids) wire::PutInt32(&b, o);
  return b;
}

const std::string kUpdate = "UPDATE acct SET v = v + 1 WHERE id = $1";
const std::string kInt4Five("\0\0\0\x05", 4);
// numeric 5: ndigits 1, weight 0, sign +, dscale 0, digit 5.
const std::string kNumericFive("\0\x01\0\0\0\0\0\0\0\x05", 10);

TEST(Router, BinaryAndTextBindsYieldTheSameReferences) {
  auto sched = TestScheduler(4);
  std::atomic<int64_t> undecodable{0};
  Router router(sched.get(), TestSchema(), &undecodable);
  RoutedTxn q;
  router.AddQuery("UPDATE acct SET v = v + 1 WHERE id = 5", &q);
  ASSERT_EQ(q.txn.refs.size(), 1u);
  EXPECT_EQ(q.ref_texts.ToVector(), std::vector<std::string>{"id=5"});

  // Parse + Bind in one unit, text parameter.
  std::deque<Msg> unit{Message('P', ParseBody("s", kUpdate, {})), Bind("s", "5", 0),
                       Message('E', Z("") + std::string(4, '\0')), Message('S', "")};
  RoutedTxn e;
  router.AddUnit(unit, 3, {}, &e);
  EXPECT_EQ(e.txn.refs, q.txn.refs);

  // A statement prepared earlier with declared types, binary int4 and numeric.
  for (const auto& [oid, value] : {std::pair<int32_t, std::string>{23, kInt4Five}, {1700, kNumericFive}}) {
    StatementMap stmts;
    stmts["s"] = Def(kUpdate, {oid});
    std::deque<Msg> binary{Bind("s", value, 1), Message('S', "")};
    RoutedTxn b;
    router.AddUnit(binary, 1, stmts, &b);
    EXPECT_EQ(b.txn.refs, q.txn.refs) << "oid " << oid;
    EXPECT_EQ(b.ref_texts.ToVector(), q.ref_texts.ToVector()) << "oid " << oid;
    EXPECT_TRUE(b.deferred.empty());
  }
  EXPECT_EQ(undecodable.load(), 0);
  // Unknown statement: skipped.
  std::deque<Msg> unknown{Bind("nope", "5", 0), Message('S', "")};
  RoutedTxn u;
  router.AddUnit(unknown, 1, {}, &u);
  EXPECT_TRUE(u.txn.refs.empty());
}

TEST(Router, UnspecifiedTypesComeFromTheParameterDescription) {
  auto sched = TestScheduler(4);
  std::atomic<int64_t> undecodable{0};
  Router router(sched.get(), TestSchema(), &undecodable);
  const PreparedDef d = Def(kUpdate, {0});  // type left to the server
  const std::string bind = Bind("s", kInt4Five, 1).raw.substr(5);
  const std::string text_bind = Bind("s", "5", 0).raw.substr(5);
  // A text value needs no type; a binary one does.
  EXPECT_FALSE(router.NeedsParamTypes(d, text_bind));
  EXPECT_TRUE(router.NeedsParamTypes(d, bind));

  // Before the server answered: kept, decoded at the outcome.
  RoutedTxn t;
  router.AddBind(d, bind, &t);
  EXPECT_TRUE(t.txn.refs.empty());
  ASSERT_EQ(t.deferred.size(), 1u);
  router.LearnParamTypes(d.key, Description({23}));
  EXPECT_FALSE(router.NeedsParamTypes(d, bind));
  t.conflict_state = "40001";
  router.Finish(&t, t.outcome());
  EXPECT_EQ(t.txn.refs.size(), 1u);  // decoded at the outcome; its text moved to the History:
  auto top = sched->history().TopByAborts(5);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].text, "id=5");
  EXPECT_EQ(top[0].counts.aborts, 1u);

  // Learned: later Binds decode at once.
  RoutedTxn later;
  router.AddBind(d, bind, &later);
  EXPECT_TRUE(later.deferred.empty());
  EXPECT_EQ(later.ref_texts.ToVector(), std::vector<std::string>{"id=5"});
  EXPECT_EQ(undecodable.load(), 0);

  // A malformed ParameterDescription teaches nothing.
  const PreparedDef other = Def("UPDATE acct SET v = v + 2 WHERE id = $1", {0});
  router.LearnParamTypes(other.key, std::string("\0\x02\0\0", 4));
  EXPECT_TRUE(router.NeedsParamTypes(other, bind));
  // Never answered (the Describe failed): counted at the outcome, no reference.
  RoutedTxn never;
  router.AddBind(other, bind, &never);
  router.Finish(&never, scheduler::Outcome::kCommitted);
  EXPECT_TRUE(never.ref_texts.empty());
  EXPECT_EQ(undecodable.load(), 1);
}

TEST(Router, UndecodableValuesAreCountedNotFatal) {
  auto sched = TestScheduler(4);
  std::atomic<int64_t> undecodable{0};
  Router router(sched.get(), TestSchema(), &undecodable);
  // $1 a binary point (type 600, not decoded), $2 a binary int4.
  const PreparedDef d = Def("UPDATE acct SET v = v + 1 WHERE id = $2 AND $1::point IS NOT NULL", {600, 23});
  std::string body = Z("") + Z("s");
  wire::PutInt16(&body, 1);
  wire::PutInt16(&body, 1);
  wire::PutInt16(&body, 2);
  const std::string point(16, '\0');
  wire::PutInt32(&body, static_cast<int32_t>(point.size()));
  body += point;
  wire::PutInt32(&body, 4);
  body += kInt4Five;
  wire::PutInt16(&body, 0);
  EXPECT_FALSE(router.NeedsParamTypes(d, body));  // declared: the server cannot say more
  EXPECT_NE(router.param_types().Find(d.key), nullptr);  // so later Binds skip the check
  std::string none = Z("") + Z("s");
  wire::PutInt16(&none, 0);
  wire::PutInt16(&none, 0);
  wire::PutInt16(&none, 0);
  const PreparedDef plain = Def("SELECT 1", {});
  EXPECT_FALSE(router.NeedsParamTypes(plain, none));
  EXPECT_EQ(router.param_types().Find(plain.key), nullptr);  // no parameters: no entry
  RoutedTxn t;
  router.AddBind(d, body, &t);
  EXPECT_EQ(t.ref_texts.ToVector(), std::vector<std::string>{"id=5"});
  EXPECT_EQ(undecodable.load(), 1);
  // A malformed Bind yields nothing and counts nothing (the server rejects it).
  RoutedTxn m;
  router.AddBind(d, body.substr(0, body.size() - 3), &m);
  EXPECT_TRUE(m.txn.refs.empty());
  EXPECT_EQ(undecodable.load(), 1);
}

// Every statement of a transaction teaches the History at its outcome, not
// only the one that routed it.
TEST(Router, EveryStatementOfATransactionFeedsTheHistory) {
  auto sched = TestScheduler(4);
  Router router(sched.get(), TestSchema());
  RoutedTxn t;
  router.AddQuery("SELECT 1", &t);  // the routing statement: no reference
  EXPECT_TRUE(t.txn.refs.empty());
  bool affine = false;
  router.Route(&t, true, &affine, 4);
  router.AddBind(Def(kUpdate, {23}), Bind("s", kInt4Five, 1).raw.substr(5), &t);
  router.AddQuery("UPDATE acct SET v = v - 1 WHERE id = 7", &t);
  t.conflict_state = "40001";
  router.Finish(&t, t.outcome());
  std::vector<std::string> aborted;
  for (const auto& e : sched->history().TopByAborts(5)) {
    if (e.counts.aborts == 1) aborted.push_back(e.text);
  }
  std::sort(aborted.begin(), aborted.end());
  EXPECT_EQ(aborted, (std::vector<std::string>{"id=5", "id=7"}));
}

TEST(Router, ParsesBeginModes) {
  struct Case {
    const char* sql;
    int serializable, read_only, deferrable;
  };
  for (const Case& c : std::vector<Case>{
           {"BEGIN", 0, 0, 0},
           {"begin read only", 0, 1, 0},
           {"BEGIN ISOLATION LEVEL SERIALIZABLE", 1, 0, 0},
           {"START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", -1, 1, 0},
           {"BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ", -1, 0, 0},
           {"BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE;", -1, -1, 0},
           {"BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE", 1, 1, 1},
           {"begin isolation level serializable, read only, not deferrable", 1, 1, -1},
       }) {
    const BeginModes m = ParseBeginModes(c.sql);
    EXPECT_EQ(m.serializable, c.serializable) << c.sql;
    EXPECT_EQ(m.read_only, c.read_only) << c.sql;
    EXPECT_EQ(m.deferrable, c.deferrable) << c.sql;
  }
  EXPECT_TRUE(ReadsCannotConflict(false, false, false));
  EXPECT_FALSE(ReadsCannotConflict(true, true, false));
  EXPECT_FALSE(ReadsCannotConflict(true, false, true));
  EXPECT_TRUE(ReadsCannotConflict(true, true, true));
}

// free_if_plain_read (Options::free_reads): a plain read appends nothing,
// is not traced and teaches nothing; anything else is as without it.
TEST(Router, PlainReadsMayRunConflictFree) {
  auto sched = TestScheduler(4);
  Router router(sched.get(), TestSchema());
  router.SetTraceFirst(true);
  const std::string sel = "SELECT v FROM acct WHERE id = $1";
  RoutedTxn q;
  router.AddQuery("SELECT v FROM acct WHERE id = 5", &q, /*free_if_plain_read=*/true);
  EXPECT_TRUE(q.conflict_free);
  EXPECT_TRUE(q.txn.refs.empty());
  EXPECT_TRUE(q.trace.empty());
  router.Finish(&q, q.outcome());
  q.ClearRefs();
  EXPECT_FALSE(q.conflict_free);
  router.AddQuery("SELECT v FROM acct WHERE id = 5", &q);  // not asked: routed
  EXPECT_FALSE(q.conflict_free);
  EXPECT_EQ(q.txn.refs.size(), 1u);
  EXPECT_EQ(q.trace.size(), 1u);
  for (const char* sql : {"SELECT v FROM acct WHERE id = 5 FOR UPDATE", "UPDATE acct SET v = 1 WHERE id = 5",
                          "SELECT v FROM acct WHERE id = 5; UPDATE acct SET v = 1 WHERE id = 6"}) {
    RoutedTxn w;
    router.AddQuery(sql, &w, true);
    EXPECT_FALSE(w.conflict_free) << sql;
    EXPECT_FALSE(w.txn.refs.empty()) << sql;
  }
  // Extended: Parse + Bind + Execute + Sync of a read; a Bind of a read
  // prepared earlier; a unit without its Sync; a unit that also writes.
  std::deque<Msg> unit{Message('P', ParseBody("s", sel, {})), Bind("s", "5", 0),
                       Message('E', Z("") + std::string(4, '\0')), Message('S', "")};
  RoutedTxn e;
  router.AddUnit(unit, 3, {}, &e, true);
  EXPECT_TRUE(e.conflict_free);
  EXPECT_TRUE(e.txn.refs.empty());
  StatementMap stmts;
  stmts["r"] = Def(sel, {23});
  stmts["w"] = Def(kUpdate, {23});
  std::deque<Msg> prepared{Bind("r", kInt4Five, 1), Message('S', "")};
  RoutedTxn p;
  router.AddUnit(prepared, 1, stmts, &p, true);
  EXPECT_TRUE(p.conflict_free);
  EXPECT_EQ(stmts["r"].plain_read, 1) << "memoized";
  std::deque<Msg> flushed{Bind("r", kInt4Five, 1), Message('H', "")};
  RoutedTxn h;
  router.AddUnit(flushed, 1, stmts, &h, true);
  EXPECT_FALSE(h.conflict_free) << "its implicit transaction goes on after a Flush";
  EXPECT_EQ(h.txn.refs.size(), 1u);
  std::deque<Msg> mixed{Bind("r", kInt4Five, 1), Bind("w", kInt4Five, 1), Message('S', "")};
  RoutedTxn m;
  router.AddUnit(mixed, 2, stmts, &m, true);
  EXPECT_FALSE(m.conflict_free);
  EXPECT_FALSE(m.txn.refs.empty());
  EXPECT_EQ(stmts["w"].plain_read, 0);
  // A free read's Finish records nothing, and counts for auto neither.
  router.Finish(&e, scheduler::Outcome::kCommitted);
  router.Finish(&p, scheduler::Outcome::kCommitted);
  EXPECT_EQ(sched->history().size(), 0u);
  EXPECT_EQ(sched->CommitsSoFar(), 0u);
}

// pgjdbc opens a block inside its first query's unit: the BEGIN it binds
// first decides whether the block is READ ONLY.
TEST(Router, UnitBeginIsTheFirstBindsBegin) {
  auto sched = TestScheduler(4);
  Router router(sched.get(), TestSchema());
  const std::string sel = "SELECT v FROM acct WHERE id = $1";
  auto bind0 = [](const std::string& stmt) { return Message('B', Z("") + Z(stmt) + std::string(6, '\0')); };
  const Msg exec = Message('E', Z("") + std::string(4, '\0'));
  std::deque<Msg> jdbc{Message('P', ParseBody("", "BEGIN READ ONLY", {})), bind0(""), exec,
                       Message('P', ParseBody("", sel, {})), Bind("", "5", 0), exec, Message('S', "")};
  EXPECT_EQ(router.UnitBegin(jdbc, 6, {}), "BEGIN READ ONLY");
  std::deque<Msg> plain{Message('P', ParseBody("", sel, {})), Bind("", "5", 0), Message('S', "")};
  EXPECT_EQ(router.UnitBegin(plain, 2, {}), "");
  StatementMap stmts;
  stmts["b"] = Def("START TRANSACTION READ ONLY", {});
  std::deque<Msg> named{bind0("b"), exec, Message('S', "")};
  EXPECT_EQ(router.UnitBegin(named, 2, stmts), "START TRANSACTION READ ONLY");
  EXPECT_EQ(router.UnitBegin(named, 2, {}), "") << "an unknown statement";
  // The first Bind names a statement parsed before the unit's latest Parse.
  std::deque<Msg> earlier{Message('P', ParseBody("b", "BEGIN READ ONLY", {})),
                          Message('P', ParseBody("r", sel, {})), bind0("b"), exec, Bind("r", "5", 0), exec,
                          Message('S', "")};
  EXPECT_EQ(router.UnitBegin(earlier, 6, {}), "BEGIN READ ONLY");
}

// A Bind's statement: the unit's latest Parse of its name before it, else
// the client's; a re-parse of the client's own text is its entry (the
// plain-read memo lands there).
TEST(Router, ABindSeesTheLatestParseOfItsName) {
  auto sched = TestScheduler(4);
  Router router(sched.get(), TestSchema());
  const std::string sel = "SELECT v FROM acct WHERE id = $1";
  const Msg exec = Message('E', Z("") + std::string(4, '\0'));
  StatementMap stmts;
  stmts[""] = Def(kUpdate, {});
  // Unnamed: the client's UPDATE, then a read parsed over it, then the
  // UPDATE parsed again: three Binds, each of the statement before it.
  std::deque<Msg> unit{Bind("", "5", 0), exec, Message('P', ParseBody("", sel, {})), Bind("", "6", 0), exec,
                       Message('P', ParseBody("", kUpdate, {})), Bind("", "7", 0), exec, Message('S', "")};
  RoutedTxn t;
  router.AddUnit(unit, 8, stmts, &t, /*free_if_plain_read=*/true);
  EXPECT_FALSE(t.conflict_free) << "it binds UPDATEs";
  EXPECT_EQ(t.txn.refs.size(), 3u) << "id=5, id=6 and id=7, each from its own Bind";
  // Only reads, one of them a re-parse of the client's own text: free, and
  // memoized in the client's entry.
  stmts["r"] = Def(sel, {});
  std::deque<Msg> reads{Message('P', ParseBody("r", sel, {})), Bind("r", "5", 0), exec,
                        Message('P', ParseBody("", sel, {})), Bind("", "6", 0), exec, Message('S', "")};
  RoutedTxn r;
  router.AddUnit(reads, 6, stmts, &r, true);
  EXPECT_TRUE(r.conflict_free);
  EXPECT_EQ(stmts["r"].plain_read, 1);
  // The unit's unnamed read is another text than the client's UPDATE (whose
  // memo, 0 since the first unit, would have made the read a write).
  EXPECT_EQ(stmts[""].plain_read, 0);
}

// What auto's windows read in the proxy (Scheduler::CommitsSoFar): every
// routed commit and conflict the Router records. (They went only to the
// History once, and auto's reward read 0 in every window.)
TEST(Router, OutcomesCountForAuto) {
  auto sched = TestScheduler(4);
  Router router(sched.get(), TestSchema());
  for (int i = 0; i < 3; ++i) {
    RoutedTxn t;
    router.AddQuery("UPDATE acct SET v = v + 1 WHERE id = 5", &t);
    bool affine = false;
    router.Route(&t, false, &affine, 4);
    router.Finish(&t, scheduler::Outcome::kCommitted);
  }
  RoutedTxn c;
  router.AddQuery("UPDATE acct SET v = v + 1 WHERE id = 5", &c);
  c.conflict_state = "40001";
  router.Finish(&c, c.outcome());
  router.RecordConflict(c);  // a restart the proxy made instead
  RoutedTxn u;
  router.AddQuery("UPDATE acct SET v = v + 1 WHERE id = 6", &u);
  u.had_error = true;
  router.Finish(&u, u.outcome());
  uint64_t aborts = 0;
  EXPECT_EQ(sched->CommitsSoFar(&aborts), 3u);
  EXPECT_EQ(aborts, 2u);
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
  router.Finish(&t, t.outcome());
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
