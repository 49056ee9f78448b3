// End-to-end tests of databases and users through `corral proxy` (issue 26,
// item 2) against a real PostgreSQL (CORRAL_PG_CONNINFO; skipped with a
// message without one). Two roles (corral_dbu_alice / _bob, with passwords)
// and two databases (corral_dbu_a / _b) are made for the tests, each name
// with this process's tag (PgUniqueName). Checked: an
// unknown database gets FATAL 3D000 and an unknown user or wrong password
// 28P01; each client runs as its own user in its own database unless the
// [databases] entry forces a login; passwords from auth_file or auth_query;
// each database keeps its own History; pool_size per database and per user;
// SHOW DATABASES / POOLS / USERS; and psql, psycopg 3, asyncpg and JDBC log
// in through it. Each fails on a proxy that makes every client server_user
// on server_dbname.
#include <libpq-fe.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "adapters/proxy/config.h"
#include "policies/schema.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

// Roles and databases are cluster-wide: names no other test process uses
// (copies of this test may run at once, e.g. --runs_per_test).
const std::string kAlice = PgUniqueName("corral_dbu_alice");
const std::string kBob = PgUniqueName("corral_dbu_bob");
const std::string kDbA = PgUniqueName("corral_dbu_a");
const std::string kDbB = PgUniqueName("corral_dbu_b");

class DatabasesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TestServer(&server_, &why_)) GTEST_SKIP() << why_;
    for (const std::string& db : {kDbA, kDbB}) ASSERT_TRUE(RecreateDatabase(server_, db).ok());
    PGconn* c = PQconnectdb(server_.conninfo.c_str());
    ASSERT_EQ(PQstatus(c), CONNECTION_OK);
    for (const auto& [role, pw] : {std::pair<std::string, const char*>{kAlice, "alice-pw"}, {kBob, "bob-pw"}}) {
      PQclear(PQexec(c, absl::StrCat("DROP ROLE IF EXISTS ", role).c_str()));
      // The server stores SCRAM secrets (auth_query reads them).
      ASSERT_TRUE(ExecOk(c, "SET password_encryption = 'scram-sha-256'"));
      ASSERT_TRUE(ExecOk(c, absl::StrCat("CREATE ROLE ", role, " LOGIN PASSWORD '", pw, "'")));
    }
    PQfinish(c);
    for (const std::string& db : {kDbA, kDbB}) {
      PGconn* d = PQconnectdb(absl::StrCat(server_.conninfo, " dbname=", db).c_str());
      ASSERT_TRUE(ExecOk(d, "CREATE TABLE acct (id int PRIMARY KEY, bal int)"));
      ASSERT_TRUE(ExecOk(d, "INSERT INTO acct SELECT g, 0 FROM generate_series(1, 10) g"));
      ASSERT_TRUE(ExecOk(d, absl::StrCat("GRANT ALL ON acct TO ", kAlice, ", ", kBob)));
      PQfinish(d);
    }
  }
  void TearDown() override {
    for (PGconn* c : conns_) PQfinish(c);
    proxy_.Stop();
    if (server_.conninfo.empty()) return;
    for (const std::string& db : {kDbA, kDbB}) DropDatabase(server_, db);
    PGconn* c = PQconnectdb(server_.conninfo.c_str());
    for (const std::string& role : {kAlice, kBob}) PQclear(PQexec(c, absl::StrCat("DROP ROLE IF EXISTS ", role).c_str()));
    PQfinish(c);
  }
  // Starts the proxy on config text (as a config file would give it).
  void StartProxy(const std::string& config) {
    Options o;
    ASSERT_TRUE(ParseConfigText(config, "test.ini", &o).ok()) << ParseConfigText(config, "test.ini", &o);
    // SHOW HISTORY is checked for what was learned: no aging, which may
    // round a count of 1 down to 0 and drop the reference on a slow run.
    o.history_half_life_s = 0;
    o.history_doorkeeper_log2_bits = 0;  // every commit counts: exact Histories
    absl::Status st = proxy_.Start(server_, o);
    ASSERT_TRUE(st.ok()) << st;
  }
  std::string Conninfo(const std::string& user, const std::string& db, const std::string& password = "") const {
    return absl::StrCat("host=127.0.0.1 port=", proxy_.port(), " user=", user, " dbname=", db,
                        password.empty() ? "" : absl::StrCat(" password=", password), " connect_timeout=5");
  }
  // "<current_user> <current_database>" of a fresh connection, or
  // "refused: <libpq's message>".
  std::string WhoAmI(const std::string& user, const std::string& db, const std::string& password = "") {
    PGconn* c = PQconnectdb(Conninfo(user, db, password).c_str());
    std::string out = PQstatus(c) == CONNECTION_OK
                          ? Exec1(c, "SELECT current_user || ' ' || current_database()")
                          : absl::StrCat("refused: ", PQerrorMessage(c));
    PQfinish(c);
    return out;
  }
  // The SQLSTATE of the FATAL a raw v3 login as user/db (trust) gets, "" if
  // it logs in.
  std::string LoginSqlState(const std::string& user, const std::string& db) {
    const int fd = ConnectLoopback(proxy_.port());
    if (fd < 0) return "no connection";
    const std::string pkt = StartupPacket(user, db);
    std::string buf;
    std::string state;
    if (::write(fd, pkt.data(), pkt.size()) == static_cast<ssize_t>(pkt.size())) {
      char tmp[4096];
      ssize_t n;
      while ((n = ::read(fd, tmp, sizeof(tmp))) > 0) {
        buf.append(tmp, n);
        if (buf[0] == 'R' || buf[0] != 'E') break;  // logging in (or something else): no FATAL
        if (buf.size() >= 5) {
          const uint32_t len = (uint8_t(buf[1]) << 24) | (uint8_t(buf[2]) << 16) | (uint8_t(buf[3]) << 8) |
                               uint8_t(buf[4]);
          if (buf.size() < len + 1) continue;
          for (absl::string_view f : absl::StrSplit(absl::string_view(buf).substr(5, len - 4), '\0')) {
            if (absl::ConsumePrefix(&f, "C")) state = std::string(f);
          }
          break;
        }
      }
    }
    ::close(fd);
    return state;
  }
  // Runs `cmd` (stdout+stderr) and returns its output's last line.
  static std::string LastLine(const std::string& cmd, int* rc) {
    std::string out;
    *rc = Shell(cmd, &out);
    std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
    return lines.empty() ? "" : lines.back();
  }
  std::string Runfile(const std::string& rel) const {
    const char* srcdir = std::getenv("TEST_SRCDIR");
    const char* ws = std::getenv("TEST_WORKSPACE");
    return srcdir && ws ? absl::StrCat(srcdir, "/", ws, "/tests/proxy/clients/", rel) : "";
  }
  // [databases] with a plain entry, a forced-login entry and the fallback;
  // `tail` after it (a [users] section).
  std::string TwoDatabases(const std::string& head, const std::string& tail = "") const {
    return absl::StrCat(head, "\npool_size = 2\n[databases]\ndb_a = dbname=", kDbA, "\ndb_b = dbname=", kDbB,
                        " user=", kBob, " pool_size=1\n* =\n", tail);
  }

  ServerInfo server_;
  std::string why_;
  ProxyUnderTest proxy_;
  std::vector<PGconn*> conns_;
};

// The defect: with the old single-database keys and auth_type = trust,
// `someoneelse` asking for `nosuchdb` got a session in server_dbname.
TEST_F(DatabasesTest, UnknownDatabaseGetsFatal3D000) {
  StartProxy("auth_type = trust\n");
  EXPECT_EQ(LoginSqlState("someoneelse", "nosuchdb"), "3D000");
  EXPECT_EQ(LoginSqlState(server_.user, server_.dbname), "");  // the configured database still works
  EXPECT_TRUE(absl::StrContains(WhoAmI(server_.user, "nosuchdb"), "database \"nosuchdb\" does not exist"));
  proxy_.Stop();
  StartProxy(TwoDatabases("auth_type = trust"));
  EXPECT_EQ(LoginSqlState(kAlice, "db_a"), "");
  // No such database behind "*": the server's own 3D000, and no Database kept.
  EXPECT_EQ(LoginSqlState(kAlice, "corral_dbu_nosuch"), "3D000");
  // A user the server does not know: the server's refusal (trust: 28000).
  EXPECT_EQ(LoginSqlState("corral_dbu_nobody", "db_a"), "28000");
}

// Each client runs as its own user in the database it asked for; an entry
// with user= forces that login; "*" passes the database name through.
// Passwords from the userlist (SCRAM towards the clients).
TEST_F(DatabasesTest, ClientsRunAsThemselvesInTheirDatabase) {
  Options o;  // the userlist as Options::users (what auth_file fills)
  ASSERT_TRUE(ParseConfigText(TwoDatabases("auth_type = scram-sha-256"), "t", &o).ok());
  o.users = {{kAlice, "alice-pw"}, {kBob, "bob-pw"}};
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  EXPECT_EQ(WhoAmI(kAlice, "db_a", "alice-pw"), absl::StrCat(kAlice, " ", kDbA));
  EXPECT_EQ(WhoAmI(kBob, "db_a", "bob-pw"), absl::StrCat(kBob, " ", kDbA));
  EXPECT_EQ(WhoAmI(kAlice, "db_b", "alice-pw"), absl::StrCat(kBob, " ", kDbB));  // forced login
  EXPECT_EQ(WhoAmI(kAlice, kDbB, "alice-pw"), absl::StrCat(kAlice, " ", kDbB));  // through "*"
  const std::string wrong = WhoAmI(kAlice, "db_a", "nope");
  EXPECT_TRUE(absl::StrContains(wrong, "password authentication failed")) << wrong;
  const std::string nobody = WhoAmI("corral_dbu_nobody", "db_a", "x");
  EXPECT_TRUE(absl::StrContains(nobody, "password authentication failed")) << nobody;
  const std::string nodb = WhoAmI(kAlice, "nosuchdb_without_star", "alice-pw");
  // "*" catches every name: the server says there is no such database.
  EXPECT_TRUE(absl::StrContains(nodb, "does not exist")) << nodb;
}

// Without auth_file: auth_query as auth_user reads the SCRAM secret from
// pg_shadow; the client's proof is checked against it.
TEST_F(DatabasesTest, AuthQueryChecksPasswordsAgainstTheServer) {
  StartProxy(TwoDatabases(absl::StrCat("auth_type = scram-sha-256\nauth_user = ", server_.user)));
  EXPECT_EQ(WhoAmI(kAlice, "db_a", "alice-pw"), absl::StrCat(kAlice, " ", kDbA));
  EXPECT_EQ(WhoAmI(kBob, kDbB, "bob-pw"), absl::StrCat(kBob, " ", kDbB));
  const std::string wrong = WhoAmI(kAlice, "db_a", "bob-pw");
  EXPECT_TRUE(absl::StrContains(wrong, "password authentication failed")) << wrong;
  const std::string nobody = WhoAmI("corral_dbu_nobody", "db_a", "x");
  EXPECT_TRUE(absl::StrContains(nobody, "password authentication failed")) << nobody;
}

// SCRAM pass-through: the userlist holds only a SCRAM secret (no
// password), yet the proxy logs in to its server as the client with the key
// the client proved. The "server" here is a second proxy holding the same
// secret (the test server itself trusts everyone).
TEST_F(DatabasesTest, ScramSecretPassesTheClientsKeyThrough) {
  const std::string secret =  // password 'pencil', as PostgreSQL 15 stores it
      "SCRAM-SHA-256$4096:UZOdmhIf+sZBjVvy+T6JfQ==$UWe0rsxmlSCFqAALfVXpFbAI7EW0/R+BWPpQRHB++R4=:"
      "xoCaVgwwhpAwfeWTJoRZYhX92Dtd7dVcBCYh+GjWeqA=";
  ProxyUnderTest front;
  Options f;
  f.auth_type = "scram-sha-256";
  f.users = {{"corral_dbu_carol", secret}};
  ASSERT_TRUE(IsOk(front.Start(server_, f)));
  Options o;
  ASSERT_TRUE(ParseConfigText(absl::StrCat("auth_type = scram-sha-256\npool_size = 2\n[databases]\nvia = host=127.0.0.1 port=",
                                           front.port(), " dbname=", server_.dbname, "\n"),
                              "t", &o)
                  .ok());
  o.users = {{"corral_dbu_carol", secret}};
  auto empty = SchemaBuilder().Build();  // the catalog through the front proxy needs a password
  ASSERT_TRUE(empty.ok());
  o.schema = *empty;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  // The front proxy logs in to PostgreSQL as server_user (its old keys).
  EXPECT_EQ(WhoAmI("corral_dbu_carol", "via", "pencil"), absl::StrCat(server_.user, " ", server_.dbname));
  const std::string wrong = WhoAmI("corral_dbu_carol", "via", "pen");
  EXPECT_TRUE(absl::StrContains(wrong, "password authentication failed")) << wrong;
}

// Each database learns in its own History (the default database's is
// Proxy::scheduler()'s); pools per (database, login) with pool_size per
// database and per user; the admin console lists them.
TEST_F(DatabasesTest, DatabasesKeepTheirOwnHistoryAndPools) {
  StartProxy(TwoDatabases("auth_type = trust", absl::StrCat("[users]\n", kAlice, " = pool_size=1\n")));
  PGconn* b = PQconnectdb(Conninfo(kAlice, "db_b").c_str());
  ASSERT_EQ(PQstatus(b), CONNECTION_OK) << PQerrorMessage(b);
  conns_.push_back(b);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(ExecOk(b, "UPDATE acct SET bal = bal + 1 WHERE id = 3"));
  EXPECT_EQ(proxy_.proxy().scheduler().history().size(), 0) << "db_b's references went to db_a's History";
  PGconn* a = PQconnectdb(Conninfo(kAlice, "db_a").c_str());
  PGconn* a2 = PQconnectdb(Conninfo(kBob, "db_a").c_str());
  ASSERT_EQ(PQstatus(a), CONNECTION_OK) << PQerrorMessage(a);
  ASSERT_EQ(PQstatus(a2), CONNECTION_OK) << PQerrorMessage(a2);
  conns_.push_back(a);
  conns_.push_back(a2);
  ASSERT_TRUE(ExecOk(a, "UPDATE acct SET bal = bal + 1 WHERE id = 4"));
  EXPECT_GT(proxy_.proxy().scheduler().history().size(), 0);

  PGconn* admin = PQconnectdb(Conninfo(server_.user, "corral").c_str());
  ASSERT_EQ(PQstatus(admin), CONNECTION_OK) << PQerrorMessage(admin);
  conns_.push_back(admin);
  auto rows = [&](const std::string& sql) {
    std::map<std::string, std::vector<std::string>> out;  // first two columns joined -> row
    PGresult* r = PQexec(admin, sql.c_str());
    EXPECT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << sql << ": " << PQerrorMessage(admin);
    for (int i = 0; i < PQntuples(r); ++i) {
      std::vector<std::string> row;
      for (int j = 0; j < PQnfields(r); ++j) row.push_back(PQgetvalue(r, i, j));
      out[absl::StrCat(row[0], "/", PQnfields(r) > 1 ? row[1] : "")] = row;
    }
    PQclear(r);
    return out;
  };
  // SHOW POOLS: database, user, cl_active, cl_waiting, cl_idle, sv_active, sv_idle, sv_down, transactions.
  auto pools = rows("SHOW POOLS");
  ASSERT_EQ(pools.count(absl::StrCat("db_a/", kAlice)), 1u);
  ASSERT_EQ(pools.count(absl::StrCat("db_a/", kBob)), 1u);
  ASSERT_EQ(pools.count(absl::StrCat("db_b/", kBob)), 1u);  // db_b forces bob
  EXPECT_EQ(pools[absl::StrCat("db_a/", kAlice)][6], "1");  // [users] pool_size=1
  EXPECT_EQ(pools[absl::StrCat("db_a/", kBob)][6], "2");    // the global pool_size
  EXPECT_EQ(pools[absl::StrCat("db_b/", kBob)][6], "1");    // the entry's pool_size
  EXPECT_EQ(pools[absl::StrCat("db_b/", kBob)][8], "5");
  // SHOW DATABASES: name, host, port, database, force_user, pool_size, pools, ...
  bool found_b = false;
  for (const auto& [k, row] : rows("SHOW DATABASES")) {
    if (row[0] != "db_b") continue;
    found_b = true;
    EXPECT_EQ(row[3], kDbB);
    EXPECT_EQ(row[4], kBob);
    EXPECT_EQ(row[5], "1");
  }
  EXPECT_TRUE(found_b);
  bool found_alice = false;
  for (const auto& [k, row] : rows("SHOW USERS")) {
    if (row[0] != kAlice) continue;
    found_alice = true;
    EXPECT_EQ(row[1], "1");  // pool_size
    EXPECT_EQ(row[2], "2");  // clients
  }
  EXPECT_TRUE(found_alice);
  // SHOW HISTORY names db_b's references with the database.
  bool db_b_ref = false;
  for (const auto& [k, row] : rows("SHOW HISTORY")) db_b_ref |= absl::StartsWith(row[0], "db_b: ");
  EXPECT_TRUE(db_b_ref);
}

// The stock clients log in with SCRAM as their own user in their database.
TEST_F(DatabasesTest, RealClientsLogInAsThemselves) {
  Options o;
  ASSERT_TRUE(ParseConfigText(TwoDatabases("auth_type = scram-sha-256"), "t", &o).ok());
  o.users = {{kAlice, "alice-pw"}, {kBob, "bob-pw"}};
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  const std::string port = std::to_string(proxy_.port());
  const std::string want_a = absl::StrCat(kAlice, " ", kDbA);
  const std::string want_b = absl::StrCat(kBob, " ", kDbB);
  int rc = 0;
  int ran = 0;
  if (std::system("psql --version >/dev/null 2>&1") == 0) {
    ++ran;
    EXPECT_EQ(LastLine(absl::StrCat("PGPASSWORD=alice-pw psql -X -At -c 'SELECT current_user, current_database()' -F ' ' '",
                                    Conninfo(kAlice, "db_a"), "' 2>&1"),
                       &rc),
              want_a);
    EXPECT_EQ(rc, 0);
    const std::string bad = LastLine(
        absl::StrCat("PGPASSWORD=nope psql -X -At -c 'SELECT 1' '", Conninfo(kAlice, "db_a"), "' 2>&1"), &rc);
    EXPECT_NE(rc, 0);
    EXPECT_TRUE(absl::StrContains(bad, "password authentication failed")) << bad;
  }
  const std::string py = Runfile("whoami.py");
  for (const char* driver : {"psycopg", "asyncpg"}) {
    if (py.empty() || std::system(absl::StrCat("/usr/bin/python3 -c 'import ", driver, "' 2>/dev/null").c_str()) != 0) {
      continue;
    }
    ++ran;
    SCOPED_TRACE(driver);
    EXPECT_EQ(LastLine(absl::StrCat("/usr/bin/python3 ", py, " ", driver, " 127.0.0.1 ", port, " ", kAlice,
                                    " alice-pw db_a 2>&1"),
                       &rc),
              want_a);
    EXPECT_EQ(LastLine(absl::StrCat("/usr/bin/python3 ", py, " ", driver, " 127.0.0.1 ", port, " ", kBob,
                                    " bob-pw ", kDbB, " 2>&1"),
                       &rc),
              want_b);
    const std::string bad = LastLine(
        absl::StrCat("/usr/bin/python3 ", py, " ", driver, " 127.0.0.1 ", port, " ", kAlice, " nope db_a 2>&1"), &rc);
    EXPECT_EQ(rc, 2) << bad;
    // asyncpg gives the SQLSTATE; psycopg's connection error has none.
    EXPECT_TRUE(absl::StartsWith(bad, "refused ") && absl::StrContains(bad, "password authentication failed"))
        << bad;
    if (std::string(driver) == "asyncpg") EXPECT_TRUE(absl::StartsWith(bad, "refused 28P01")) << bad;
  }
  const std::string java = Runfile("WhoAmI.java");
  if (!java.empty() && access("/usr/share/java/postgresql.jar", R_OK) == 0 &&
      std::system("java -version >/dev/null 2>&1") == 0) {
    ++ran;
    const std::string cmd = absl::StrCat(
        "java -XX:-UsePerfData -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp /usr/share/java/postgresql.jar ", java,
        " jdbc:postgresql://127.0.0.1:", port, "/");
    EXPECT_EQ(LastLine(absl::StrCat(cmd, "db_a ", kAlice, " alice-pw 2>&1"), &rc), want_a);
    const std::string bad = LastLine(absl::StrCat(cmd, "nosuchdb ", kAlice, " alice-pw 2>&1"), &rc);
    EXPECT_TRUE(absl::StartsWith(bad, "refused 3D000")) << bad;
  }
  if (ran == 0) GTEST_SKIP() << "none of psql, psycopg, asyncpg, java is installed";
}

}  // namespace
}  // namespace proxy
}  // namespace corral
