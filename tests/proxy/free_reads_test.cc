// Reads that cannot conflict pass unscheduled (Options::free_reads) end to
// end against a real server (CORRAL_PG_CONNINFO; skipped without one): a
// plain SELECT outside a transaction block at READ COMMITTED, by simple
// Query or by the extended protocol, runs on an idle backend and teaches
// the History nothing; anything that may conflict (FOR UPDATE, a write, a
// transaction block, a function that may write, a session or a server at
// SERIALIZABLE) is routed and learned as before, and with free_reads off
// every read is.
#include <libpq-fe.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

class FreeReadsTest : public ScratchClientsTest {
 protected:
  void Start(bool free_reads, const ServerInfo* server = nullptr, bool restart = false, int pool_size = 2) {
    Options o;
    o.pool_size = pool_size;
    if (restart) o.templates = o.replay = o.restart_on_hot_key = true;
    o.free_reads = free_reads;
    o.history_half_life_s = 0;
    ASSERT_TRUE(IsOk(proxy_.Start(server != nullptr ? *server : server_, o)));
  }
  int64_t Free() { return stats().free_reads.load(); }
  size_t Learned() { return proxy_.proxy().scheduler().history().size(); }
  // SELECT v of rows 0..10, each twice (the doorkeeper admits a
  // reference's second commit).
  void ReadAllTwice(PGconn* c) {
    for (int pass = 0; pass < 2; ++pass) {
      for (int k = 0; k <= 10; ++k) {
        ASSERT_EQ(ExecValue(c, absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", k)), "0");
      }
    }
  }
};

TEST_F(FreeReadsTest, PlainReadsAtReadCommittedAreNotRoutedOrLearned) {
  Start(true);
  PGconn* c = Connect();
  ASSERT_EQ(PQstatus(c), CONNECTION_OK);
  const int64_t f0 = Free();
  ReadAllTwice(c);
  EXPECT_EQ(Free() - f0, 22);
  EXPECT_EQ(Learned(), 0u) << "a free read taught the History";

  // Extended protocol: an unnamed statement with a parameter, and a named one.
  const std::string sel = absl::StrCat("SELECT v FROM ", table_, " WHERE k = $1");
  const char* one[] = {"3"};
  PGresult* r = PQexecParams(c, sel.c_str(), 1, nullptr, one, nullptr, nullptr, 0);
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK);
  EXPECT_STREQ(PQgetvalue(r, 0, 0), "0");
  PQclear(r);
  r = PQprepare(c, "sel", sel.c_str(), 1, nullptr);
  ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK);
  PQclear(r);
  for (int i = 0; i < 3; ++i) {
    r = PQexecPrepared(c, "sel", 1, one, nullptr, nullptr, 0);
    ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK);
    PQclear(r);
  }
  EXPECT_EQ(Free() - f0, 22 + 1 + 3);
  EXPECT_EQ(Learned(), 0u);

  // What may conflict is routed and learned: none of these counts.
  const int64_t f1 = Free();
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_EQ(ExecValue(c, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 4 FOR UPDATE")), "0");
    EXPECT_EQ(ExecValue(c, absl::StrCat("UPDATE ", table_, " SET v = v WHERE k = 5")), "UPDATE 1");
    EXPECT_EQ(ExecValue(c, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 6 AND pg_try_advisory_xact_lock(7)")),
              "0");
    ASSERT_TRUE(ExecOk(c, "BEGIN"));
    EXPECT_EQ(ExecValue(c, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 7")), "0");
    ASSERT_TRUE(ExecOk(c, "COMMIT"));
  }
  EXPECT_EQ(Free(), f1);
  EXPECT_GE(Learned(), 4u) << "k = 4, 5, 6 and 7 are learned";

  // The session's own isolation decides: SERIALIZABLE reads are routed.
  ASSERT_TRUE(ExecOk(c, "SET default_transaction_isolation = 'serializable'"));
  const size_t learned = Learned();
  ReadAllTwice(c);
  EXPECT_EQ(Free(), f1);
  EXPECT_GT(Learned(), learned);
  // After `set`, one read of k = 8: the free reads so far.
  auto read_after = [&](const char* set) {
    EXPECT_TRUE(ExecOk(c, set)) << set;
    EXPECT_EQ(ExecValue(c, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 8")), "0");
    return Free();
  };
  EXPECT_EQ(read_after("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED"), f1 + 1);
  // REPEATABLE READ takes no predicate locks either: a plain read is free.
  EXPECT_EQ(read_after("SET default_transaction_isolation TO 'repeatable read'"), f1 + 2);
  EXPECT_EQ(read_after("SET default_transaction_isolation TO 'serializable'"), f1 + 2);
  EXPECT_EQ(read_after("RESET default_transaction_isolation"), f1 + 3);
}

// A READ ONLY block whose reads cannot conflict (below SERIALIZABLE, or
// SERIALIZABLE READ ONLY DEFERRABLE) runs unscheduled as a whole, whatever
// its statements; a SERIALIZABLE READ ONLY one is routed and learned.
class FreeBlocksTest : public FreeReadsTest, public ::testing::WithParamInterface<bool> {
 protected:
  // BEGIN <modes>; two reads (k = a, k = b); COMMIT.
  void Block(PGconn* c, const std::string& begin, int a, int b) {
    ASSERT_TRUE(ExecOk(c, begin)) << begin;
    EXPECT_EQ(ExecValue(c, absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", a)), "0");
    EXPECT_EQ(ExecValue(c, absl::StrCat("SELECT count(*) FROM ", table_, " WHERE k = ", b)), "1");
    ASSERT_TRUE(ExecOk(c, "COMMIT"));
  }
};

TEST_P(FreeBlocksTest, ReadOnlyBlocks) {
  Start(true, nullptr, /*restart=*/GetParam());
  PGconn* c = Connect();
  ASSERT_EQ(PQstatus(c), CONNECTION_OK);
  for (int pass = 0; pass < 2; ++pass) {
    Block(c, "BEGIN READ ONLY", 1, 2);
    Block(c, "START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", 3, 4);
    Block(c, "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE", 5, 6);
  }
  EXPECT_EQ(Free(), 6);
  EXPECT_EQ(Learned(), 0u) << "a free block taught the History";
  // PostgreSQL refuses a write in it, as without the proxy.
  ASSERT_TRUE(ExecOk(c, "BEGIN READ ONLY"));
  EXPECT_EQ(ExecValue(c, absl::StrCat("UPDATE ", table_, " SET v = 1 WHERE k = 1")), "ERROR 25006");
  ASSERT_TRUE(ExecOk(c, "ROLLBACK"));
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 1")), "0");
  // Routed and learned: SERIALIZABLE READ ONLY, and a READ WRITE block.
  const int64_t f = Free();
  for (int pass = 0; pass < 2; ++pass) {
    Block(c, "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY", 7, 8);
    Block(c, "BEGIN", 9, 10);
  }
  EXPECT_EQ(Free(), f);
  EXPECT_GE(Learned(), 4u) << "k = 7, 8, 9 and 10";
  // The session's default_transaction_read_only makes a plain BEGIN read only.
  ASSERT_TRUE(ExecOk(c, "SET default_transaction_read_only = on"));
  Block(c, "BEGIN", 1, 2);
  EXPECT_EQ(Free(), f + 1);
  Block(c, "BEGIN READ WRITE", 1, 2);
  EXPECT_EQ(Free(), f + 1);
  ASSERT_TRUE(ExecOk(c, "RESET default_transaction_read_only"));
  // A write transaction after a free block is routed and learned as ever.
  const size_t learned = Learned();
  for (int pass = 0; pass < 2; ++pass) {
    ASSERT_TRUE(ExecOk(c, "BEGIN"));
    EXPECT_EQ(ExecValue(c, absl::StrCat("UPDATE ", table_, " SET v = v + 1 WHERE k = 0")), "UPDATE 1");
    ASSERT_TRUE(ExecOk(c, "COMMIT"));
  }
  EXPECT_GT(Learned(), learned);
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 0")), "2");
}

INSTANTIATE_TEST_SUITE_P(PlainAndRestartMode, FreeBlocksTest, ::testing::Bool());

TEST_F(FreeReadsTest, OffEveryReadIsLearned) {
  Start(false);
  PGconn* c = Connect();
  ASSERT_EQ(PQstatus(c), CONNECTION_OK);
  ReadAllTwice(c);
  EXPECT_EQ(Free(), 0);
  EXPECT_GE(Learned(), 11u);
}

// A server whose default isolation is SERIALIZABLE (the database's
// setting, which the backends report at connect): reads are routed. One
// backend, and two loops of one each: a pool's defaults count the backend
// being connected too (once they did not, and a pool of one backend read
// as "every backend below SERIALIZABLE and READ ONLY").
class ServerDefaultsTest : public FreeReadsTest, public ::testing::WithParamInterface<int> {};

TEST_P(ServerDefaultsTest, ServerDefaultSerializableIsRouted) {
  ServerInfo db = server_;
  db.dbname = PgUniqueName("corral_free");
  ASSERT_TRUE(IsOk(RecreateDatabase(server_, db.dbname)));
  ASSERT_TRUE(ExecOk(server_conn_, absl::StrCat("ALTER DATABASE ", db.dbname,
                                                " SET default_transaction_isolation = 'serializable'")));
  {
    Options o;
    o.pool_size = GetParam() == 2 ? 2 : 1;
    o.workers = GetParam();
    o.history_half_life_s = 0;
    ASSERT_TRUE(IsOk(proxy_.Start(db, o)));
  }
  PGconn* c = PQconnectdb(proxy_.ClientConninfo().c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  EXPECT_EQ(ExecValue(c, "SHOW transaction_isolation"), "serializable");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ExecValue(c, "SELECT count(*) FROM pg_class WHERE oid = 1259"), "1");
  EXPECT_EQ(Free(), 0);
  // The client's own READ COMMITTED wins over the server's default.
  ASSERT_TRUE(ExecOk(c, "SET default_transaction_isolation = 'read committed'"));
  EXPECT_EQ(ExecValue(c, "SELECT count(*) FROM pg_class WHERE oid = 1259"), "1");
  EXPECT_EQ(Free(), 1);
  // And a plain BEGIN is not a READ ONLY block (the server's
  // default_transaction_read_only is off).
  ASSERT_TRUE(ExecOk(c, "BEGIN"));
  EXPECT_EQ(ExecValue(c, "SELECT count(*) FROM pg_class WHERE oid = 1259"), "1");
  ASSERT_TRUE(ExecOk(c, "COMMIT"));
  EXPECT_EQ(Free(), 1);
  PQfinish(c);
  proxy_.Stop();
  DropDatabase(server_, db.dbname);
}

INSTANTIATE_TEST_SUITE_P(OneBackendOrTwoLoops, ServerDefaultsTest, ::testing::Values(1, 2));

// Twice: `unit` (extended messages up to their Sync) with `UPDATE ... k = 9`
// pipelined behind it before its ReadyForQuery; each time the update's
// answer comes. Row 9 is then 2.
void SendTwiceWithAnUpdateBehind(const std::string& table, int port, const ServerInfo& server,
                                 const std::string& unit) {
  RawClient raw;
  ASSERT_TRUE(IsOk(raw.Connect(port, server.user, server.dbname)));
  const std::string upd = absl::StrCat("UPDATE ", table, " SET v = v + 1 WHERE k = 9");
  for (int pass = 0; pass < 2; ++pass) {
    ASSERT_TRUE(IsOk(raw.SendRaw(unit + RawClient::Query(upd))));
    std::vector<RawMessage> got;
    ASSERT_TRUE(IsOk(raw.ReadUntilReady(&got)));
    ASSERT_TRUE(IsOk(raw.ReadUntilReady(&got)));
    bool updated = false;
    for (const RawMessage& m : got) updated |= m.type == 'C' && m.body.rfind("UPDATE 1", 0) == 0;
    EXPECT_TRUE(updated);
  }
}

std::string Bound(const std::string& sql) {
  return RawClient::Parse("", sql) + RawClient::Bind("", "", {}) + RawClient::Execute("", 0);
}

// A write pipelined behind a free read, before its ReadyForQuery, runs on
// the same backend and is learned as any transaction's statement.
TEST_F(FreeReadsTest, AWritePipelinedBehindAFreeReadIsLearned) {
  Start(true);
  const std::string sel = absl::StrCat("SELECT v FROM ", table_, " WHERE k = 2");
  SendTwiceWithAnUpdateBehind(table_, proxy_.port(), server_, Bound(sel) + RawClient::Sync());
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 9")), "2");
  EXPECT_GE(Free(), 1);
  EXPECT_GE(Learned(), 1u) << "the pipelined UPDATE's k = 9 was not learned";
}

// A READ ONLY block ends at its COMMIT also when the COMMIT is bound (as
// pgjdbc sends it): a write pipelined behind the block, before its
// ReadyForQuery, is learned.
TEST_F(FreeReadsTest, AWritePipelinedBehindABoundCommitIsLearned) {
  Start(true);
  const std::string sel = absl::StrCat("SELECT v FROM ", table_, " WHERE k = 2");
  const int64_t f0 = Free();
  SendTwiceWithAnUpdateBehind(table_, proxy_.port(), server_,
                              Bound("BEGIN READ ONLY") + Bound(sel) + Bound("COMMIT") + RawClient::Sync());
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 9")), "2");
  EXPECT_EQ(Free() - f0, 2) << "the READ ONLY blocks ran free";
  EXPECT_GE(Learned(), 1u) << "the UPDATE pipelined behind the block's bound COMMIT was not learned";
}

// A prepared statement's plain-read verdict is worked out once; a RELOAD
// that brings a function of the database's own with the name of a built-in
// it calls takes the verdict back, also for a statement prepared before.
TEST_F(FreeReadsTest, ReloadRetakesAPreparedReadsVerdict) {
  Start(true);
  PGconn* c = Connect();
  ASSERT_EQ(PQstatus(c), CONNECTION_OK);
  const std::string sel = absl::StrCat("SELECT v FROM ", table_, " WHERE k = $1 AND octet_length('ab') = 2");
  PGresult* r = PQprepare(c, "ol", sel.c_str(), 1, nullptr);
  ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK);
  PQclear(r);
  const char* one[] = {"3"};
  auto run = [&] {
    PGresult* e = PQexecPrepared(c, "ol", 1, one, nullptr, nullptr, 0);
    EXPECT_EQ(PQresultStatus(e), PGRES_TUPLES_OK) << PQresultErrorMessage(e);
    PQclear(e);
  };
  const int64_t f0 = Free();
  run();
  run();
  ASSERT_EQ(Free() - f0, 2) << "a built-in's call is a plain read";
  // The database's own octet_length, outside the search path (the
  // statement still calls the built-in), then RELOAD.
  const std::string schema = absl::StrCat(table_, "_fn");
  ASSERT_TRUE(ExecOk(server_conn_, absl::StrCat("CREATE SCHEMA ", schema)));
  ASSERT_TRUE(ExecOk(server_conn_, absl::StrCat("CREATE FUNCTION ", schema,
                                                ".octet_length(text) RETURNS int LANGUAGE sql AS 'SELECT 2'")));
  PGconn* admin = PQconnectdb(proxy_.ClientConninfo("corral").c_str());
  ASSERT_EQ(PQstatus(admin), CONNECTION_OK) << PQerrorMessage(admin);
  const bool reloaded = ExecOk(admin, "RELOAD");
  PQfinish(admin);
  const int64_t f1 = Free();
  run();
  run();
  const int64_t after = Free() - f1;
  ASSERT_TRUE(ExecOk(server_conn_, absl::StrCat("DROP SCHEMA ", schema, " CASCADE")));
  ASSERT_TRUE(reloaded);
  EXPECT_EQ(after, 0) << "the verdict from before the RELOAD was kept";
}

// Real clients: psycopg 3 and asyncpg (autocommit reads with parameters,
// READ ONLY transactions, one read-write transaction; asyncpg's first read
// asks the server to describe its statement in a unit that ends at a
// Flush, so it is routed, and the proxy answers the later ones' Describe
// from its cache) and pgjdbc with its
// defaults (seven autocommit executions of a prepared SELECT, named and
// binary after the fifth; setReadOnly(true), whose BEGIN READ ONLY rides in
// its first query's unit; one update): every read each driver sends
// outside a block or in a READ ONLY block runs free, the answers are the
// server's, and the History learns the write alone.
TEST_F(FreeReadsTest, DriversReadsRunFree) {
  Start(true);
  auto run = [](const std::string& cmd) {
    std::string out;
    const int rc = Shell(cmd + " 2>&1", &out);
    return std::make_pair(rc, out);
  };
  struct Driver {
    std::string name, probe, cmd;
    int64_t free;
    std::string expect;
  };
  const std::string args = absl::StrCat(proxy_.port(), " ", server_.dbname, " ", table_);
  const std::vector<Driver> drivers = {
      {"psycopg", "/usr/bin/python3 -c 'import psycopg'",
       absl::StrCat("/usr/bin/python3 ", ClientPath("free_reads.py"), " psycopg ", args), 6,
       "autocommit 0 0 0\nreadonly 0 0 0\nwrite 1\n"},
      {"asyncpg", "/usr/bin/python3 -c 'import asyncpg'",
       absl::StrCat("/usr/bin/python3 ", ClientPath("free_reads.py"), " asyncpg ", args), 5,
       "autocommit 0 0 0\nreadonly 0 0 0\nwrite 2\n"},
      {"pgjdbc", "java -version && test -f /usr/share/java/postgresql.jar",
       absl::StrCat("java -XX:-UsePerfData -cp /usr/share/java/postgresql.jar ", ClientPath("FreeReadsJdbc.java"), " ",
                    args),
       8, "autocommit 0 0 0 0 0 0 0\nreadonly 0\nwrite 3\n"},
  };
  int ran = 0;
  for (const Driver& d : drivers) {
    if (run(d.probe).first != 0) {
      std::printf("skipping %s: not installed\n", d.name.c_str());
      continue;
    }
    const int64_t before = Free();
    auto [rc, out] = run(d.cmd);
    ASSERT_EQ(rc, 0) << d.name << ": " << out;
    EXPECT_EQ(out, d.expect) << d.name;
    EXPECT_EQ(Free() - before, d.free) << d.name << ": " << out;
    ++ran;
  }
  if (ran < 3) GTEST_SKIP() << "a driver is missing";
  // Only k = 9 (three commits; the doorkeeper admits the second): no read
  // of k = 1..6 reached the History (asyncpg's one routed read of k = 1 is
  // a first sighting).
  EXPECT_EQ(Learned(), 1u);
}

// pgbench -S in its three query modes: every transaction free, no account
// row learned.
TEST_F(FreeReadsTest, PgbenchSelectOnlyInEveryModeRunsFree) {
  if (access("/usr/bin/pgbench", X_OK) != 0) GTEST_SKIP() << "pgbench not installed";
  ServerInfo db = server_;
  db.dbname = PgUniqueName("corral_free_pgb");
  ASSERT_TRUE(IsOk(RecreateDatabase(server_, db.dbname)));
  std::string out;
  ASSERT_EQ(Shell(absl::StrCat("/usr/bin/pgbench -i -q -s 1 -h ", server_.host, " -p ", server_.port, " -U ",
                               server_.user, " ", db.dbname, " 2>&1"),
                  &out),
            0)
      << out;
  Start(true, &db);
  for (const char* mode : {"simple", "extended", "prepared"}) {
    const int64_t before = Free();
    ASSERT_EQ(Shell(absl::StrCat("/usr/bin/pgbench -n -S -M ", mode, " -c 2 -t 50 -h 127.0.0.1 -p ", proxy_.port(),
                                 " -U ", server_.user, " ", db.dbname, " 2>&1"),
                    &out),
              0)
        << out;
    EXPECT_NE(out.find("number of transactions actually processed: 100/100"), std::string::npos) << out;
    // Its 100 transactions (and its own scale query, a plain read too).
    EXPECT_GE(Free() - before, 100) << mode;
    EXPECT_LE(Free() - before, 101) << mode;
  }
  // No account row was learned. (pgbench's start-up catalog query, which
  // calls array_position and current_schemas, is routed and may be:
  // `relname='pgbench_accounts'`.)
  for (const auto& e : proxy_.proxy().scheduler().history().TopByAborts(100)) {
    EXPECT_EQ(e.text.find("aid="), std::string::npos) << e.text << ": " << e.counts.commits << " commits";
  }
  proxy_.Stop();
  DropDatabase(server_, db.dbname);
}

// What `policy = auto` measures in the proxy (Scheduler::CommitsSoFar):
// each routed transaction's commit or conflict, not the free reads. (The
// proxy's commits once reached only the History: every window of auto
// read 0 tps.)
TEST_F(FreeReadsTest, RoutedOutcomesReachAutosWindows) {
  Start(true);
  PGconn* c = Connect();
  ASSERT_EQ(PQstatus(c), CONNECTION_OK);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(ExecValue(c, absl::StrCat("UPDATE ", table_, " SET v = v + 1 WHERE k = 3")), "UPDATE 1");
    EXPECT_EQ(ExecValue(c, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 4")), "0");
  }
  LearnAbort(proxy_.ClientConninfo(), server_conn_, table_, 2);
  uint64_t aborts = 0;
  EXPECT_EQ(proxy_.proxy().scheduler().CommitsSoFar(&aborts), 5u);
  EXPECT_EQ(aborts, 1u);
  EXPECT_EQ(Free(), 5);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
