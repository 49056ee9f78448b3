#include "adapters/proxy/replay.h"

#include <string>

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
  ReplayLog extended = fresh();
  extended.OnClientMessage('B', "B\0\0\0\4"s, false);
  EXPECT_FALSE(extended.replayable());
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

}  // namespace
}  // namespace proxy
}  // namespace corral
