#include "adapters/proxy/replay.h"

#include <string>

#include "adapters/proxy/prepared.h"
#include "adapters/proxy/wire.h"
#include "gtest/gtest.h"

namespace corral {
namespace proxy {
namespace {
using std::string_literals::operator""s;

std::string Query(const std::string& sql) {
  std::string q;
  wire::AppendQuery(&q, sql);
  return q;
}

std::string Tag(const std::string& tag) {
  std::string c;
  wire::AppendCommandComplete(&c, tag);
  return c;
}

std::string Row(const std::string& value) {
  std::string d;
  const size_t at = wire::BeginMessage(&d, 'D');
  wire::PutInt16(&d, 1);
  wire::PutInt32(&d, static_cast<int32_t>(value.size()));
  d.append(value);
  wire::EndMessage(&d, at);
  return d;
}

// A transaction of two UPDATEs and a SELECT, recorded as the client saw it.
ReplayLog Recorded(const std::string& balance) {
  ReplayLog log;
  log.Start(true, 1 << 16, "BEGIN ISOLATION LEVEL SERIALIZABLE");
  log.OnClientMessage('Q', Query("UPDATE a SET v = v + 1 WHERE id = 1"), false);
  log.OnForwarded('C', Tag("UPDATE 1"));
  log.OnForwarded('Z', "Z\0\0\0\5T"s);
  log.OnClientMessage('Q', Query("SELECT v FROM a WHERE id = 2"), false);
  log.OnForwarded('T', "T\0\0\0\6\0\0"s);
  log.OnForwarded('D', Row(balance));
  log.OnForwarded('C', Tag("SELECT 1"));
  log.OnClientMessage('Q', Query("COMMIT"), false);
  return log;
}

TEST(ReplayLogTest, KeepsQueriesAndResultDigests) {
  ReplayLog log = Recorded("100");
  EXPECT_TRUE(log.replayable());
  EXPECT_EQ(log.begin(), "BEGIN ISOLATION LEVEL SERIALIZABLE");
  ASSERT_EQ(log.queries().size(), 3u);
  EXPECT_EQ(log.queries()[2], Query("COMMIT"));
  EXPECT_EQ(log.digests(), 4u);  // the ReadyForQuery is not a result
  EXPECT_EQ(log.results_in_current(), 0u);
}

TEST(ReplayLogTest, SameResultsMatchThenNewOnesAreKept) {
  ReplayLog log = Recorded("100");
  log.BeginCompare();
  EXPECT_EQ(log.Compare('C', Tag("UPDATE 1")), ReplayLog::kMatch);
  EXPECT_EQ(log.Compare('T', "T\0\0\0\6\0\0"s), ReplayLog::kMatch);
  EXPECT_EQ(log.Compare('D', Row("100")), ReplayLog::kMatch);
  EXPECT_EQ(log.Compare('C', Tag("SELECT 1")), ReplayLog::kMatch);
  EXPECT_TRUE(log.compared_all());
  // The failed statement's own result: past what the client received.
  EXPECT_EQ(log.Compare('C', Tag("UPDATE 3")), ReplayLog::kNew);
  EXPECT_EQ(log.digests(), 5u);
  EXPECT_TRUE(log.compared_all());
}

TEST(ReplayLogTest, AChangedRowOrTagDiffers) {
  ReplayLog log = Recorded("100");
  log.BeginCompare();
  EXPECT_EQ(log.Compare('C', Tag("UPDATE 1")), ReplayLog::kMatch);
  EXPECT_EQ(log.Compare('T', "T\0\0\0\6\0\0"s), ReplayLog::kMatch);
  EXPECT_EQ(log.Compare('D', Row("90")), ReplayLog::kMismatch);  // the other transaction changed it

  ReplayLog tags = Recorded("100");
  tags.BeginCompare();
  EXPECT_EQ(tags.Compare('C', Tag("UPDATE 0")), ReplayLog::kMismatch);
  // Fewer results than the client received: not all compared.
  ReplayLog fewer = Recorded("100");
  fewer.BeginCompare();
  EXPECT_EQ(fewer.Compare('C', Tag("UPDATE 1")), ReplayLog::kMatch);
  EXPECT_FALSE(fewer.compared_all());
}

TEST(ReplayLogTest, BufferLimitMakesItUnreplayable) {
  const std::string q = Query("UPDATE a SET v = v + 1 WHERE id = 1");
  ReplayLog log;
  log.Start(true, q.size() * 2 + 8, "");
  log.OnClientMessage('Q', q, false);
  log.OnForwarded('C', Tag("UPDATE 1"));
  log.OnClientMessage('Q', q, false);
  EXPECT_TRUE(log.replayable());
  EXPECT_FALSE(log.overflowed());
  EXPECT_EQ(log.bytes(), q.size() * 2 + 8);
  log.OnForwarded('C', Tag("UPDATE 1"));  // 8 bytes more: past the bound
  EXPECT_TRUE(log.overflowed());
  EXPECT_FALSE(log.replayable());
  EXPECT_TRUE(log.queries().empty());  // nothing more is kept
  // A new transaction starts clean.
  log.Start(true, 1 << 10, "BEGIN");
  EXPECT_TRUE(log.replayable());
  EXPECT_FALSE(log.overflowed());
}

TEST(ReplayLogTest, WhatCannotBeReplayed) {
  auto fresh = [] {
    ReplayLog log;
    log.Start(true, 1 << 16, "BEGIN");
    log.OnClientMessage('Q', Query("UPDATE a SET v = 1"), false);
    return log;
  };
  ReplayLog savepoint = fresh();
  savepoint.OnForwarded('C', Tag("SAVEPOINT"));
  EXPECT_FALSE(savepoint.replayable());
  ReplayLog rollback_to = fresh();
  rollback_to.OnForwarded('C', Tag("ROLLBACK"));
  EXPECT_FALSE(rollback_to.replayable());
  ReplayLog function_call = fresh();
  function_call.OnClientMessage('F', "F\0\0\0\4"s, false);
  EXPECT_FALSE(function_call.replayable());
  ReplayLog set = fresh();
  set.OnClientMessage('Q', Query("SET search_path = x"), /*may_change_session=*/true);
  EXPECT_FALSE(set.replayable());
  ReplayLog error = fresh();
  error.OnForwarded('E', "E\0\0\0\4"s);
  EXPECT_FALSE(error.replayable());
  ReplayLog copy = fresh();
  copy.OnForwarded('G', "G\0\0\0\7\0\0\0"s);
  EXPECT_FALSE(copy.replayable());
  // Notices and parameter changes are not results.
  ReplayLog notice = fresh();
  notice.OnForwarded('N', "N\0\0\0\4"s);
  notice.OnForwarded('S', "S\0\0\0\4"s);
  EXPECT_TRUE(notice.replayable());
  EXPECT_EQ(notice.digests(), 0u);
  // Off: nothing is kept.
  ReplayLog off;
  off.Start(false, 1 << 16, "BEGIN");
  off.OnClientMessage('Q', Query("UPDATE a SET v = 1"), false);
  EXPECT_FALSE(off.replayable());
  EXPECT_TRUE(off.queries().empty());
}

TEST(ReplayLogTest, ResultsOfTheCurrentQueryAreCounted) {
  ReplayLog log;
  log.Start(true, 1 << 16, "BEGIN");
  log.OnClientMessage('Q', Query("UPDATE a SET v = 1 RETURNING v; COMMIT"), false);
  log.OnForwarded('T', "T\0\0\0\6\0\0"s);
  log.OnForwarded('D', Row("1"));
  EXPECT_EQ(log.results_in_current(), 2u);
  log.OnClientMessage('Q', Query("SELECT 1"), false);
  EXPECT_EQ(log.results_in_current(), 0u);
}

std::string Msg(char type, const std::string& body = "") {
  std::string m;
  const size_t at = wire::BeginMessage(&m, type);
  m.append(body);
  wire::EndMessage(&m, at);
  return m;
}

std::string Parse(const std::string& name, const std::string& sql) {
  std::string m;
  wire::AppendParse(&m, name, sql, std::string("\0\0", 2));
  return m;
}

// Bind portal "" of `stmt`, Execute it (no row limit).
std::string Bind(const std::string& stmt) { return Msg('B', std::string("\0", 1) + stmt + std::string(7, '\0')); }
std::string Execute() { return Msg('E', std::string(5, '\0')); }

// An extended-protocol transaction (held BEGIN): one unit that parses and
// runs a named UPDATE, then a failed unit of two Bind / Execute pairs of it
// (the first answered, the second failed) and a third Bind / Execute the
// server skipped.
ReplayLog Pipelined(int answered) {
  ReplayLog log;
  log.Start(true, 1 << 16, "BEGIN");
  log.OnClientMessage('P', Parse("s1", "UPDATE a SET v = v + 1 WHERE id = $1"), false);
  log.OnClientMessage('B', Bind("s1"), false);
  log.OnClientMessage('E', Execute(), false);
  log.OnClientMessage('S', Msg('S'), false);
  log.OnForwarded('1', Msg('1'));
  log.OnForwarded('2', Msg('2'));
  log.OnForwarded('C', Tag("UPDATE 1"));
  log.OnReady();
  for (int i = 0; i < 3; ++i) {
    log.OnClientMessage('B', Bind("s1"), false);
    log.OnClientMessage('E', Execute(), false);
  }
  log.OnClientMessage('S', Msg('S'), false);
  for (int i = 0; i < answered; ++i) {
    log.OnForwarded('2', Msg('2'));
    log.OnForwarded('C', Tag("UPDATE 1"));
  }
  log.OnForwarded('2', Msg('2'));  // the failed Execute's Bind
  return log;
}

TEST(ReplayLogTest, KeepsExtendedMessagesAndTheirResults) {
  ReplayLog log = Pipelined(1);
  EXPECT_TRUE(log.replayable());
  EXPECT_TRUE(log.extended());
  ASSERT_EQ(log.queries().size(), 11u);
  EXPECT_EQ(log.queries()[0][0], 'P');
  EXPECT_EQ(log.queries()[10], Msg('S'));
  EXPECT_EQ(log.digests(), 6u);        // ParseComplete, BindComplete, tags
  EXPECT_EQ(log.results_in_current(), 3u);  // of the failed unit (since the ReadyForQuery)
}

TEST(ReplayLogTest, TheFailedUnitSplitsBeforeTheFailedExecute) {
  // One Execute of the unit answered: the second (message 7) failed.
  ReplayLog log = Pipelined(1);
  ASSERT_TRUE(log.SplitFailedUnit(/*in_block=*/true));
  EXPECT_EQ(log.split(), 7u);
  EXPECT_TRUE(log.sync_before_split());
  // None answered: the first Execute of the unit (message 5).
  ReplayLog first = Pipelined(0);
  ASSERT_TRUE(first.SplitFailedUnit(true));
  EXPECT_EQ(first.split(), 5u);
  // Outside a transaction block the proxy's Sync would commit (an
  // implicit transaction takes SplitImplicitUnit).
  EXPECT_FALSE(Pipelined(1).SplitFailedUnit(/*in_block=*/false));
  // Rows of the failed Execute went out: not replayed.
  ReplayLog rows = Pipelined(0);
  rows.OnForwarded('D', Row("1"));
  EXPECT_FALSE(rows.SplitFailedUnit(true));
  // Every Execute of the unit answered: the error was not an Execute's.
  ReplayLog all = Pipelined(3);
  EXPECT_FALSE(all.SplitFailedUnit(true));
  // A unit without its Sync yet.
  ReplayLog open = Pipelined(0);
  open.OnClientMessage('B', Bind("s1"), false);
  EXPECT_FALSE(open.SplitFailedUnit(true));
}

// libpq's pipeline mode: units sent behind the failed one before any of
// their results (several Syncs in flight). The failed unit is the one before
// them; they start past its Sync.
TEST(ReplayLogTest, UnitsInFlightBehindTheFailedOneComeAfterIt) {
  ReplayLog log = Pipelined(1);  // messages 4..10: the failed unit (Sync at 10)
  log.OnClientMessage('B', Bind("s1"), false);
  log.OnClientMessage('E', Execute(), false);
  log.OnClientMessage('S', Msg('S'), false);  // 13
  log.OnClientMessage('B', Bind("s1"), false);
  log.OnClientMessage('S', Msg('S'), false);  // 15
  ASSERT_TRUE(log.SplitFailedUnit(/*in_block=*/true, /*behind=*/2));
  EXPECT_EQ(log.split(), 7u);  // as without the units behind
  EXPECT_TRUE(log.sync_before_split());
  EXPECT_EQ(log.later_from(), 11u);
  EXPECT_EQ(log.behind(), 2);
  // A simple Query among them (its message restarts the count of the
  // current results): not replayed.
  ReplayLog query = Pipelined(1);
  query.OnClientMessage('Q', Query("COMMIT"), false);
  EXPECT_FALSE(query.SplitFailedUnit(true, 1));
  // None behind: the last unit failed, nothing comes after it.
  ReplayLog alone = Pipelined(1);
  ASSERT_TRUE(alone.SplitFailedUnit(true, 0));
  EXPECT_EQ(alone.later_from(), alone.queries().size());
  EXPECT_EQ(alone.behind(), 0);
  // More units behind than the log holds: not replayed.
  EXPECT_FALSE(Pipelined(1).SplitFailedUnit(true, 3));
  // The last unit behind without its Sync: not whole.
  ReplayLog open = Pipelined(1);
  open.OnClientMessage('B', Bind("s1"), false);
  open.OnClientMessage('S', Msg('S'), false);
  open.OnClientMessage('B', Bind("s1"), false);
  EXPECT_FALSE(open.SplitFailedUnit(true, 1));
}

TEST(ReplayLogTest, AFailedSimpleQueryAfterExtendedMessagesIsTheLastPart) {
  ReplayLog log = Pipelined(3);
  log.OnReady();
  log.OnClientMessage('Q', Query("COMMIT"), false);
  ASSERT_TRUE(log.SplitFailedUnit(true));
  EXPECT_EQ(log.split(), 11u);
  EXPECT_FALSE(log.sync_before_split());
}

TEST(ReplayLogTest, UnnamedStatementsAreKeptWithTheirBind) {
  ReplayLog log;
  log.Start(true, 1 << 16, "BEGIN");
  std::string name;
  const std::string p1 = Parse("", "SELECT 1");
  PreparedDef d1 = PreparedDef::FromParse(absl::string_view(p1).substr(5), &name);
  log.OnClientMessage('B', Bind(""), false, &d1);
  log.OnClientMessage('E', Execute(), false);
  EXPECT_EQ(log.unnamed_at(1), nullptr);
  ASSERT_NE(log.unnamed_at(0), nullptr);
  EXPECT_EQ(log.unnamed_at(0)->query, "SELECT 1");
  // Counted in the bound.
  EXPECT_GT(log.bytes(), Bind("").size() + Execute().size() + std::string("BEGIN").size());
}

TEST(ReplayLogTest, NewResultsAreThoseAfterTheError) {
  ReplayLog log = Pipelined(1);
  log.MarkError();
  EXPECT_EQ(log.new_results(), 0u);
  log.BeginCompare();
  for (int i = 0; i < 6; ++i) EXPECT_NE(log.Compare('x', "x"), ReplayLog::kNew);  // (mismatches: other bytes)
  EXPECT_EQ(log.Compare('C', Tag("UPDATE 1")), ReplayLog::kNew);
  EXPECT_EQ(log.new_results(), 1u);
}

// Implicit transactions (no block at the error): the log's last unit alone
// is replayed; the units before it committed.
TEST(ReplayLogTest, AnImplicitUnitIsTheLogsLastUnit) {
  // The unit before (Parse / Bind / Execute / Sync) committed; of the failed
  // unit the client saw the first Execute's results and the second's Bind.
  ReplayLog log = Pipelined(1);
  ASSERT_TRUE(log.SplitImplicitUnit());
  EXPECT_TRUE(log.implicit());
  EXPECT_EQ(log.split(), 4u);  // the failed unit's first Bind
  EXPECT_FALSE(log.sync_before_split());
  EXPECT_EQ(log.compare_from(), 3u);  // its first result (after the first unit's three)
  EXPECT_TRUE(log.wrapped());         // results the client saw: compared in a block
  // A 40001 at the implicit commit (every Execute answered): replayed too.
  ReplayLog all = Pipelined(3);
  ASSERT_TRUE(all.SplitImplicitUnit());
  EXPECT_EQ(all.split(), 4u);
  EXPECT_TRUE(all.wrapped());
  // Rows of the failed statement already sent: compared, not refused.
  ReplayLog rows = Pipelined(0);
  rows.OnForwarded('D', Row("1"));
  EXPECT_TRUE(rows.SplitImplicitUnit());
  // A unit without its Sync yet: refused.
  ReplayLog open = Pipelined(0);
  open.OnClientMessage('B', Bind("s1"), false);
  EXPECT_FALSE(open.SplitImplicitUnit());
  EXPECT_FALSE(open.implicit());
}

TEST(ReplayLogTest, AnImplicitQueryNothingOfWhichWasSeenIsNotWrapped) {
  ReplayLog log;
  log.Start(true, 1 << 16, "");
  log.OnClientMessage('Q', Query("UPDATE a SET v = v + 1 WHERE id = 9"), false);
  log.OnForwarded('C', Tag("UPDATE 1"));
  log.OnForwarded('Z', "Z\0\0\0\5I"s);
  log.OnReady();  // that one committed
  log.OnClientMessage('Q', Query("UPDATE a SET v = v + 1 WHERE id = 1; UPDATE a SET v = v + 1 WHERE id = 2"), false);
  ASSERT_TRUE(log.SplitImplicitUnit());
  EXPECT_EQ(log.split(), 1u);  // the failed Query alone
  EXPECT_EQ(log.compare_from(), 1u);
  EXPECT_FALSE(log.wrapped());  // nothing of it reached the client
  // Its first statement's result reached the client: compared in a block.
  log.OnForwarded('C', Tag("UPDATE 1"));
  ASSERT_TRUE(log.SplitImplicitUnit());
  EXPECT_TRUE(log.wrapped());
  // The replay compares from the unit's first result: the committed
  // Query's tag is not among them.
  log.MarkError();
  log.BeginCompare();
  EXPECT_EQ(log.Compare('C', Tag("UPDATE 1")), ReplayLog::kMatch);
  EXPECT_TRUE(log.compared_all());
  EXPECT_EQ(log.Compare('C', Tag("UPDATE 1")), ReplayLog::kNew);
  EXPECT_EQ(log.new_results(), 1u);
  // Extended-protocol messages without their Sync before a Query: no unit.
  ReplayLog mixed;
  mixed.Start(true, 1 << 16, "");
  mixed.OnClientMessage('B', Bind("s1"), false);
  mixed.OnClientMessage('Q', Query("SELECT 1"), false);
  EXPECT_FALSE(mixed.SplitImplicitUnit());
  // Clear forgets the shape.
  log.Clear();
  EXPECT_FALSE(log.implicit());
  EXPECT_FALSE(log.wrapped());
  EXPECT_EQ(log.compare_from(), 0u);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
