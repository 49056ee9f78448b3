#include "adapters/proxy/prepared.h"

#include <string>
#include <vector>

#include "adapters/proxy/wire.h"
#include "gtest/gtest.h"

namespace corral {
namespace proxy {
namespace {

std::string ParseBody(const std::string& name, const std::string& query, std::vector<int32_t> oids) {
  std::string b = name;
  b.push_back('\0');
  b += query;
  b.push_back('\0');
  wire::PutInt16(&b, static_cast<int16_t>(oids.size()));
  for (int32_t o : oids) wire::PutInt32(&b, o);
  return b;
}

// Message types in `msgs`, in order.
std::string Types(const std::string& msgs) {
  std::string t;
  absl::string_view rest(msgs);
  while (!rest.empty()) {
    wire::Frame f;
    size_t used = 0;
    EXPECT_TRUE(wire::NextFrame(rest, 1 << 20, &f, &used).ok());
    if (used == 0) break;
    t.push_back(f.type);
    rest.remove_prefix(used);
  }
  return t;
}

TEST(Prepared, FromParseKeepsTextAndTypes) {
  std::string name;
  PreparedDef d = PreparedDef::FromParse(ParseBody("s1", "SELECT $1", {23, 25}), &name);
  EXPECT_EQ(name, "s1");
  EXPECT_EQ(d.query, "SELECT $1");
  EXPECT_EQ(d.oids, (std::vector<uint32_t>{23, 25}));
  PreparedDef e = PreparedDef::FromParse(ParseBody("s2", "SELECT $1", {23}), &name);
  EXPECT_NE(d.key, e.key);  // same text, other types: another statement
}

TEST(Prepared, MalformedParseTypesReadAsNone) {
  std::string name;
  std::string body = ParseBody("s", "SELECT $1", {});
  body.resize(body.size() - 2);
  wire::PutInt16(&body, 3);  // three OIDs announced, none present
  EXPECT_TRUE(PreparedDef::FromParse(body, &name).oids.empty());
}

TEST(ParamTypeCache, KeepsTheNewestUpToItsCapacity) {
  ParamTypeCache cache(2);
  cache.Put("a", {23});
  cache.Put("b", {20});
  cache.Put("a", {21});  // replaced, not added again
  EXPECT_EQ(cache.size(), 2u);
  ASSERT_NE(cache.Find("a"), nullptr);
  EXPECT_EQ(*cache.Find("a"), std::vector<uint32_t>{21});
  cache.Put("c", {25});  // evicts the oldest, "a"
  EXPECT_EQ(cache.Find("a"), nullptr);
  ASSERT_NE(cache.Find("b"), nullptr);
  ASSERT_NE(cache.Find("c"), nullptr);
  cache.Clear();
  EXPECT_EQ(cache.Find("c"), nullptr);
}

TEST(Prepared, MayChangeCatalogFindsDdlAtAnyStatementStart) {
  EXPECT_TRUE(StatementMayChangeCatalog("ALTER TABLE t ALTER COLUMN v TYPE text"));
  EXPECT_TRUE(StatementMayChangeCatalog("  /* c */ -- x\n create table t (k int)"));
  EXPECT_TRUE(StatementMayChangeCatalog("BEGIN; DROP TABLE t; COMMIT"));
  EXPECT_TRUE(StatementMayChangeCatalog("DO $$BEGIN END$$"));
  EXPECT_TRUE(StatementMayChangeCatalog("call p()"));
  EXPECT_TRUE(StatementMayChangeCatalog("DISCARD TEMP"));
  EXPECT_FALSE(StatementMayChangeCatalog("SELECT v FROM t WHERE k = $1"));
  EXPECT_FALSE(StatementMayChangeCatalog("UPDATE altered SET dropped = 1; SELECT 'create'"));
  EXPECT_FALSE(StatementMayChangeCatalog("BEGIN ISOLATION LEVEL SERIALIZABLE;"));
  EXPECT_FALSE(StatementMayChangeCatalog(""));
  std::string name;
  EXPECT_TRUE(PreparedDef::FromParse(ParseBody("", "drop index i", {}), &name).may_change_catalog);
  EXPECT_FALSE(PreparedDef::FromParse(ParseBody("", "SELECT 1", {}), &name).may_change_catalog);
}

TEST(DescribeCache, InvalidateDropsAndRefusesAnswersSentBefore) {
  DescribeCache cache(8);
  const uint64_t before = cache.generation();
  cache.Learn("q", before, "answer");
  ASSERT_NE(cache.Find("q"), nullptr);
  EXPECT_EQ(*cache.Find("q"), "answer");
  cache.Invalidate();
  EXPECT_EQ(cache.Find("q"), nullptr);
  cache.Learn("q", before, "stale");  // its Describe went out before the DDL
  EXPECT_EQ(cache.Find("q"), nullptr);
  cache.Learn("q", cache.generation(), "fresh");
  ASSERT_NE(cache.Find("q"), nullptr);
  EXPECT_EQ(*cache.Find("q"), "fresh");
}

// A Batch's lists are SmallFifos: order kept through interleaved pushes and
// pops, through the compaction of popped slots, and after draining.
TEST(SmallFifo, KeepsOrderThroughCompactionAndDraining) {
  SmallFifo<int> q;
  EXPECT_TRUE(q.empty());
  int next_in = 0, next_out = 0;
  for (int round = 0; round < 200; ++round) {
    for (int k = 0; k < 3; ++k) q.push_back(next_in++);
    for (int k = 0; k < 2; ++k) {
      ASSERT_FALSE(q.empty());
      ASSERT_EQ(q.front(), next_out++);
      q.pop_front();
    }
    ASSERT_EQ(q.size(), static_cast<size_t>(next_in - next_out));
    ASSERT_EQ(q.back(), next_in - 1);
  }
  int expect = next_out;
  for (int v : q) ASSERT_EQ(v, expect++);
  EXPECT_EQ(q[0], next_out);
  while (!q.empty()) {
    ASSERT_EQ(q.front(), next_out++);
    q.pop_front();
  }
  EXPECT_EQ(next_out, next_in);
  EXPECT_EQ(q.size(), 0u);
  q.push_back(7);
  EXPECT_EQ(q.front(), 7);
  EXPECT_EQ(q.size(), 1u);
}

TEST(StatementCache, PreparesOnceEvictsAndForgetsUnconfirmed) {
  StatementCache cache(2);
  std::string name;
  PreparedDef a = PreparedDef::FromParse(ParseBody("a", "SELECT 1", {}), &name);
  PreparedDef b = PreparedDef::FromParse(ParseBody("b", "SELECT 2", {}), &name);
  PreparedDef c = PreparedDef::FromParse(ParseBody("c", "SELECT 3", {}), &name);
  Batch open;
  std::string msgs;
  const std::string na = cache.Ensure(a, false, &open, &msgs);
  EXPECT_EQ(na, "corral_s0");
  EXPECT_EQ(Types(msgs), "P");
  ASSERT_EQ(open.parses.size(), 1u);
  EXPECT_TRUE(open.parses[0].drop);  // injected: the client must not see it
  cache.Confirm(a.key);
  msgs.clear();
  EXPECT_EQ(cache.Ensure(a, false, &open, &msgs), na);  // cached: nothing to send
  EXPECT_EQ(msgs, "");
  cache.Ensure(b, false, &open, &msgs);
  cache.Confirm(b.key);
  msgs.clear();
  cache.Ensure(a, false, &open, &msgs);  // a most recently used: b is the victim
  cache.Ensure(c, false, &open, &msgs);
  EXPECT_EQ(Types(msgs), "CP");
  EXPECT_EQ(open.closes.back(), true);
  EXPECT_EQ(cache.size(), 2u);
  // c was never confirmed (an error skipped its Parse): forgotten.
  cache.ForgetUnconfirmed(open.parses);
  EXPECT_EQ(cache.size(), 1u);
  // The client's own Parse of a cached statement: closed and parsed again.
  msgs.clear();
  Batch second;
  cache.Ensure(a, true, &second, &msgs);
  EXPECT_EQ(Types(msgs), "CP");
  ASSERT_EQ(second.parses.size(), 1u);
  EXPECT_FALSE(second.parses[0].drop);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
