// End-to-end: binary Bind parameters through a real `corral proxy` yield the
// references their text form yields (issue 27). Real drivers (asyncpg,
// psycopg 3 with binary parameters, pgjdbc) run the checked-in scripts under
// tests/proxy/clients/ against an in-process proxy; each test then reads the
// History and the counters through the admin console (SHOW HISTORY / SHOW
// STATS). A raw v3 client covers what no driver sends: binary values of
// unspecified type without a Describe (the proxy asks the server itself).
// Nothing here depends on timing: conflicts are ordered by the scripts.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "adapters/proxy/wire.h"
#include "gtest/gtest.h"
#include "libpq-fe.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

struct Counts {
  int64_t aborts = 0, commits = 0;
  bool operator==(const Counts& o) const { return aborts == o.aborts && commits == o.commits; }
};
std::ostream& operator<<(std::ostream& os, const Counts& c) {
  return os << "{aborts " << c.aborts << ", commits " << c.commits << "}";
}

// Rows of an admin-console command, column 0 -> the other columns.
std::map<std::string, std::vector<std::string>> Admin(ProxyUnderTest& p, const std::string& cmd) {
  std::map<std::string, std::vector<std::string>> rows;
  PGconn* c = PQconnectdb(p.ClientConninfo("corral").c_str());
  EXPECT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  PGresult* r = PQexec(c, cmd.c_str());
  EXPECT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(c);
  for (int i = 0; i < PQntuples(r); ++i) {
    std::vector<std::string>& row = rows[PQgetvalue(r, i, 0)];
    for (int j = 1; j < PQnfields(r); ++j) row.push_back(PQgetvalue(r, i, j));
  }
  PQclear(r);
  PQfinish(c);
  return rows;
}

std::map<std::string, Counts> History(ProxyUnderTest& p) {
  std::map<std::string, Counts> h;
  for (const auto& [ref, cols] : Admin(p, "SHOW HISTORY")) {
    h[ref] = Counts{std::stoll(cols.at(0)), std::stoll(cols.at(1))};
  }
  return h;
}

int64_t Stat(ProxyUnderTest& p, const std::string& name) {
  auto rows = Admin(p, "SHOW STATS");
  auto it = rows.find(name);
  EXPECT_NE(it, rows.end()) << name;
  return it == rows.end() ? -1 : std::stoll(it->second.at(0));
}

// Runs `cmd` (stderr with stdout); returns the exit status and the output.
std::pair<int, std::string> RunCommand(const std::string& cmd) {
  std::string out;
  const int rc = Shell(cmd, &out);
  return {rc, out};
}

class BinaryParamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TestServer(&server_, &why_)) GTEST_SKIP() << why_;
    // A database of this process's own: the tables, schemas and the
    // catalog the proxy reads are no other test copy's (--runs_per_test).
    admin_ = server_;
    db_ = PgUniqueName("corral_bw");
    ASSERT_TRUE(IsOk(RecreateDatabase(admin_, db_)));
    server_.dbname = db_;
    server_.conninfo = absl::StrCat(admin_.conninfo, " dbname=", db_);
  }
  void TearDown() override {
    p_.Stop();
    if (!db_.empty()) DropDatabase(admin_, db_);
  }
  // The driver scripts' environment: the database they connect to.
  std::string Env() const { return absl::StrCat("CORRAL_TEST_DB=", db_, " "); }
  // Runs `sql` on the server directly (the tables, before the proxy reads
  // the catalog).
  void Setup(const std::string& sql) {
    PGconn* c = PQconnectdb(server_.conninfo.c_str());
    ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
    PGresult* r = PQexec(c, sql.c_str());
    ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQerrorMessage(c);
    PQclear(r);
    PQfinish(c);
  }
  void StartProxy() {
    Options o;
    o.pool_size = 2;
    // The tests assert exact History counts: no aging (its default 2 s
    // half-life halves a count, stochastically, in a run a loaded machine
    // stretches past half a second).
    o.history_half_life_s = 0;
    o.history_doorkeeper_log2_bits = 0;  // every commit counts: exact Histories
    // The drivers' autocommit SELECTs are what these tests decode and
    // route: not passed unscheduled (free_reads_test covers that).
    o.free_reads = false;
    ASSERT_TRUE(IsOk(p_.Start(server_, o)));
  }
  // Skips the test when `probe` (a command) fails: the driver is missing.
  bool Have(const std::string& probe) { return RunCommand(probe).first == 0; }

  ServerInfo server_;  // this test's database
  ServerInfo admin_;   // the server as CORRAL_PG_CONNINFO names it
  std::string db_;
  std::string why_;
  ProxyUnderTest p_;
};

TEST_F(BinaryParamsTest, AsyncpgBinaryParamsTeachTheHistory) {
  if (!Have("/usr/bin/python3 -c 'import asyncpg'")) GTEST_SKIP() << "no asyncpg for /usr/bin/python3";
  Setup(
      "DROP TABLE IF EXISTS bw_apg; CREATE TABLE bw_apg (ak int PRIMARY KEY, v int, an numeric, p point);"
      "INSERT INTO bw_apg SELECT g, 0, g FROM generate_series(1, 9) g;");
  StartProxy();
  auto [rc, out] = RunCommand(absl::StrCat(Env(), "/usr/bin/python3 ", ClientPath("asyncpg_binary.py"), " ", p_.port()));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("conflict: 40001 on ak=5"), std::string::npos) << out;
  EXPECT_NE(out.find("point update: UPDATE 1"), std::string::npos) << out;
  const auto h = History(p_);
  // ak=5: text 1, binary 1, the conflict's winner 1 and loser (its routing
  // statement had no reference), then 2 after it. numeric 5.00 = text 5.
  EXPECT_EQ(h.at("ak=5"), (Counts{1, 5}));
  EXPECT_EQ(h.at("an=5"), (Counts{0, 2}));
  EXPECT_EQ(h.at("ak=3"), (Counts{0, 1}));
  EXPECT_EQ(h.size(), 3u);
  EXPECT_EQ(Stat(p_, "undecodable_params"), 1);   // the point
  EXPECT_EQ(Stat(p_, "describes_injected"), 0);   // asyncpg Describes itself
  EXPECT_EQ(Stat(p_, "conflict_aborts_40001"), 1);
  EXPECT_GT(Stat(p_, "affine_transactions"), 0);  // learned from the binary-parameter abort
}

// statement_cache_size=0: each statement is Parse/Describe/Flush (no Bind),
// then Bind/Execute/Sync. Once the server has described a statement, the
// proxy answers that first unit itself (describes_answered), so a held BEGIN
// is routed on the Bind's references: the History learns nk=5 from the
// conflict and the later transactions on it are affine.
TEST_F(BinaryParamsTest, AsyncpgWithoutStatementCacheRoutesOnTheBind) {
  if (!Have("/usr/bin/python3 -c 'import asyncpg'")) GTEST_SKIP() << "no asyncpg for /usr/bin/python3";
  Setup(
      "DROP TABLE IF EXISTS bw_anc; CREATE TABLE bw_anc (nk int PRIMARY KEY, v int);"
      "INSERT INTO bw_anc SELECT g, 0 FROM generate_series(1, 9) g;");
  StartProxy();
  auto [rc, out] = RunCommand(absl::StrCat(Env(), "/usr/bin/python3 ", ClientPath("asyncpg_nocache.py"), " ", p_.port()));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("after: v of nk=5 is 4"), std::string::npos) << out;
  const auto h = History(p_);
  std::string seen;
  for (const auto& [ref, n] : h) absl::StrAppend(&seen, ref, " ");
  for (const auto& [k, v] : Admin(p_, "SHOW STATS")) absl::StrAppend(&seen, "\n", k, " ", v.at(0));
  ASSERT_TRUE(h.count("nk=5")) << "nk=5 not in SHOW HISTORY: " << seen << "\n" << out;
  EXPECT_EQ(h.at("nk=5").aborts, 1) << seen;
  EXPECT_GE(h.at("nk=5").commits, 4) << seen;
  // The SELECT of c2's transaction and the UPDATEs after the conflict.
  EXPECT_GE(Stat(p_, "describes_answered"), 4) << seen;
  EXPECT_EQ(Stat(p_, "conflict_aborts_40001"), 1);
  EXPECT_GE(Stat(p_, "affine_transactions"), 3) << seen;  // routed on the Bind's nk=5
}

// A cached description is keyed by search_path and dropped by DDL that runs
// through the proxy (ALTER TABLE ... TYPE, committed or rolled back); DDL the
// proxy does not see is caught where the statement is parsed for real
// (0A000, as PostgreSQL reports it): the client never decodes a row with a
// stale RowDescription.
TEST_F(BinaryParamsTest, AsyncpgCachedDescriptionFollowsSearchPathAndDdl) {
  if (!Have("/usr/bin/python3 -c 'import asyncpg'")) GTEST_SKIP() << "no asyncpg for /usr/bin/python3";
  Setup(
      "DROP SCHEMA IF EXISTS bw_ds1 CASCADE; DROP SCHEMA IF EXISTS bw_ds2 CASCADE;"
      "CREATE SCHEMA bw_ds1; CREATE SCHEMA bw_ds2;"
      "CREATE TABLE bw_ds1.t (k int PRIMARY KEY, v int); INSERT INTO bw_ds1.t VALUES (1, 11);"
      "CREATE TABLE bw_ds2.t (k int PRIMARY KEY, v text); INSERT INTO bw_ds2.t VALUES (1, 'two');");
  StartProxy();
  auto [rc, out] =
      RunCommand(absl::StrCat(Env(), "/usr/bin/python3 ", ClientPath("asyncpg_describe_stale.py"), " ", p_.port(), " ", server_.port));
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("FAIL"), std::string::npos) << out;
  EXPECT_NE(out.find("ok bw_ds1 bigint after a rolled-back ALTER"), std::string::npos) << out;
  EXPECT_NE(out.find("ok bw_ds1 int after the unseen ALTER"), std::string::npos) << out;
  EXPECT_GE(Stat(p_, "describes_answered"), 3) << out;
  EXPECT_GE(Stat(p_, "describe_invalidations"), 3) << out;
  EXPECT_EQ(Stat(p_, "describes_stale"), 2) << out;
}

TEST_F(BinaryParamsTest, PsycopgBinaryParamsEqualTheTextPath) {
  if (!Have("/usr/bin/python3 -c 'import psycopg'")) GTEST_SKIP() << "no psycopg for /usr/bin/python3";
  Setup(
      "DROP TABLE IF EXISTS bw_psy; CREATE TABLE bw_psy (pk int PRIMARY KEY, v int, pn numeric, pb bigint,"
      " pt text, pu uuid, pd date, pts timestamptz);"
      "INSERT INTO bw_psy SELECT g, 0, g, g, 't' || g FROM generate_series(1, 9) g;");
  StartProxy();
  auto [rc, out] = RunCommand(absl::StrCat(Env(), "/usr/bin/python3 ", ClientPath("psycopg_binary.py"), " ", p_.port()));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(out, '\n', absl::SkipEmpty())).size(), 8u) << out;
  // Each binary value named the reference its text literal names: one row
  // each, with both commits.
  std::map<std::string, Counts> want;
  for (const char* ref : {"pk=5", "pn=5", "pb=7", "pt='t3'", "pu='12345678-9abc-def0-1234-56789abcdef0'",
                          "pd='2024-01-31'", "pts='2024-01-31 13:45:07.25+00'", "pk=1", "pk=2"}) {
    want[ref] = Counts{0, 2};
  }
  EXPECT_EQ(History(p_), want);
  EXPECT_EQ(Stat(p_, "undecodable_params"), 0);
}

TEST_F(BinaryParamsTest, JdbcTypedParamsEqualTheTextPath) {
  if (!Have("java -version && test -f /usr/share/java/postgresql.jar")) GTEST_SKIP() << "no java or pgjdbc";
  Setup(
      "DROP TABLE IF EXISTS bw_jdbc; CREATE TABLE bw_jdbc (jk int PRIMARY KEY, v int, jl bigint,"
      " js varchar(20), ju uuid, jn numeric);"
      "INSERT INTO bw_jdbc SELECT g, 0, g, 's' || g, NULL, g FROM generate_series(1, 9) g;"
      "UPDATE bw_jdbc SET ju = '12345678-9abc-def0-1234-56789abcdef0' WHERE jk = 4;");
  StartProxy();
  auto [rc, out] = RunCommand(absl::StrCat(Env(), "java -XX:-UsePerfData -cp /usr/share/java/postgresql.jar ", ClientPath("JdbcBinary.java"),
                                    " ", p_.port()));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("typed jk = ANY(?) x6 and text jk IN (1, 2)"), std::string::npos) << out;
  // Six typed executions and one text literal each: one row, seven commits
  // (jk=5 also from setInt and the ANY array's elements 1 and 2).
  std::map<std::string, Counts> want;
  for (const char* ref : {"jk=5", "jl=7", "js='s3'", "ju='12345678-9abc-def0-1234-56789abcdef0'", "jn=5", "jk=1",
                          "jk=2"}) {
    want[ref] = Counts{0, 7};
  }
  EXPECT_EQ(History(p_), want);
  EXPECT_EQ(Stat(p_, "undecodable_params"), 0);
}

std::string Z() { return std::string(1, '\0'); }

// A Bind of `stmt` with one binary int4 parameter.
std::string BindInt4(const std::string& stmt, int32_t v) {
  std::string m;
  size_t at = wire::BeginMessage(&m, 'B');
  absl::StrAppend(&m, Z(), stmt, Z());
  wire::PutInt16(&m, 1);
  wire::PutInt16(&m, 1);
  wire::PutInt16(&m, 1);
  wire::PutInt32(&m, 4);
  wire::PutInt32(&m, v);
  wire::PutInt16(&m, 0);
  wire::EndMessage(&m, at);
  return m;
}

std::string Types(const std::vector<RawMessage>& msgs) {
  std::string t;
  for (const RawMessage& m : msgs) t.push_back(m.type);
  return t;
}

// Binary values of unspecified type (Parse declares none) without a
// Describe: the proxy Describes the statement itself, the client sees only
// the answers to what it sent, and the value still yields its reference.
TEST_F(BinaryParamsTest, UnspecifiedTypesAreAskedOfTheServerUnseen) {
  Setup(
      "DROP TABLE IF EXISTS bw_raw; CREATE TABLE bw_raw (rk int PRIMARY KEY, v int);"
      "INSERT INTO bw_raw SELECT g, 0 FROM generate_series(1, 9) g;");
  StartProxy();
  RawClient c;
  ASSERT_TRUE(c.Connect(p_.port(), server_.user, server_.dbname).ok());
  const std::string upd = "UPDATE bw_raw SET v = v + 1 WHERE rk = $1";
  std::vector<RawMessage> got;
  // A named statement, parsed in the same unit: decoded at the outcome.
  ASSERT_TRUE(c.SendRaw(RawClient::Parse("s", upd) + BindInt4("s", 5) + RawClient::Execute("", 0) +
                        RawClient::Sync())
                  .ok());
  ASSERT_TRUE(c.ReadUntilReady(&got).ok());
  EXPECT_EQ(Types(got), "12CZ");
  EXPECT_EQ(got[2].body, "UPDATE 1" + Z());
  // Learned: no Describe this time.
  got.clear();
  ASSERT_TRUE(c.SendRaw(BindInt4("s", 5) + RawClient::Execute("", 0) + RawClient::Sync()).ok());
  ASSERT_TRUE(c.ReadUntilReady(&got).ok());
  EXPECT_EQ(Types(got), "2CZ");
  // A statement that returns rows: the RowDescription after the injected
  // Describe's ParameterDescription is not forwarded either.
  got.clear();
  ASSERT_TRUE(c.SendRaw(RawClient::Parse("q", "SELECT v FROM bw_raw WHERE rk = $1") + BindInt4("q", 8) +
                        RawClient::Execute("", 0) + RawClient::Sync())
                  .ok());
  ASSERT_TRUE(c.ReadUntilReady(&got).ok());
  EXPECT_EQ(Types(got), "12DCZ");
  // The unnamed statement, Parse and Bind in separate units of one transaction.
  got.clear();
  ASSERT_TRUE(c.SendRaw(RawClient::Query("BEGIN")).ok());
  ASSERT_TRUE(c.ReadUntilReady(&got).ok());
  got.clear();
  ASSERT_TRUE(c.SendRaw(RawClient::Parse("", "UPDATE bw_raw SET v = v + 2 WHERE rk = $1") + RawClient::Sync()).ok());
  ASSERT_TRUE(c.ReadUntilReady(&got).ok());
  EXPECT_EQ(Types(got), "1Z");
  got.clear();
  ASSERT_TRUE(c.SendRaw(BindInt4("", 6) + RawClient::Execute("", 0) + RawClient::Sync()).ok());
  ASSERT_TRUE(c.ReadUntilReady(&got).ok());
  EXPECT_EQ(Types(got), "2CZ");
  // The client's own Describe is answered to it as always.
  got.clear();
  std::string describe;
  size_t at = wire::BeginMessage(&describe, 'D');
  absl::StrAppend(&describe, "S", "s", Z());
  wire::EndMessage(&describe, at);
  ASSERT_TRUE(c.SendRaw(describe + RawClient::Sync()).ok());
  ASSERT_TRUE(c.ReadUntilReady(&got).ok());
  EXPECT_EQ(Types(got), "tnZ");
  got.clear();
  ASSERT_TRUE(c.SendRaw(RawClient::Query("COMMIT")).ok());
  ASSERT_TRUE(c.ReadUntilReady(&got).ok());
  EXPECT_EQ(Types(got), "CZ");

  // The client Describes in the same unit: the proxy asks nothing more, and
  // the client sees its own answer.
  got.clear();
  std::string parse = RawClient::Parse("", "UPDATE bw_raw SET v = v + 3 WHERE rk = $1");
  describe.clear();
  at = wire::BeginMessage(&describe, 'D');
  absl::StrAppend(&describe, "S", Z());
  wire::EndMessage(&describe, at);
  ASSERT_TRUE(c.SendRaw(parse + describe + BindInt4("", 7) + RawClient::Execute("", 0) + RawClient::Sync()).ok());
  ASSERT_TRUE(c.ReadUntilReady(&got).ok());
  EXPECT_EQ(Types(got), "1tn2CZ");

  EXPECT_EQ(Stat(p_, "describes_injected"), 3);
  EXPECT_EQ(Stat(p_, "undecodable_params"), 0);
  const auto h = History(p_);
  EXPECT_EQ(h.at("rk=5"), (Counts{0, 2}));
  EXPECT_EQ(h.at("rk=6"), (Counts{0, 1}));
  EXPECT_EQ(h.at("rk=7"), (Counts{0, 1}));
  EXPECT_EQ(h.at("rk=8"), (Counts{0, 1}));
}

}  // namespace
}  // namespace proxy
}  // namespace corral
