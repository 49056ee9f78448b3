// The proxy under the stock PostgreSQL tools: scripted psql sessions and
// pgbench's built-in TPC-B script in -M simple, extended and prepared modes
// (pgbench -i against the server directly, in a database of its own).
#include <libpq-fe.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

class ProxyToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TestServer(&server_, &why_)) GTEST_SKIP() << why_;
    if (access("/usr/bin/psql", X_OK) != 0 || access("/usr/bin/pgbench", X_OK) != 0) {
      GTEST_SKIP() << "psql/pgbench not installed (postgresql-client, postgresql-contrib)";
    }
  }
  ServerInfo server_;
  std::string why_;
};

TEST_F(ProxyToolsTest, PsqlScriptedSessions) {
  ProxyUnderTest p;
  Options o;
  o.pool_size = 2;
  ASSERT_TRUE(p.Start(server_, o).ok());
  const std::string psql = absl::StrCat("/usr/bin/psql -X -h 127.0.0.1 -p ", p.port(), " -U ", server_.user);
  std::string out;
  ASSERT_EQ(Shell(absl::StrCat(psql, " -d ", server_.dbname, " -At -c 'SELECT 1 + 1' -c 'SELECT 3; SELECT 4'"),
                &out),
            0)
      << out;
  EXPECT_EQ(out, "2\n3\n4\n");
  // A script with a transaction, an error stopping it (ON_ERROR_STOP), and \gset.
  const std::string t = absl::StrCat("psql_t_", getpid());
  ASSERT_EQ(Shell(absl::StrCat("printf '%s' \"CREATE TABLE ", t, " (k int primary key, v text);\n"
                             "BEGIN;\nINSERT INTO ", t, " VALUES (1, 'a'), (2, 'b');\nCOMMIT;\n"
                             "SELECT count(*) AS n FROM ", t, " \\\\gset\n\\\\echo rows=:n\n"
                             "DROP TABLE ", t, ";\n\" | ", psql, " -d ", server_.dbname,
                             " -At -v ON_ERROR_STOP=1"),
                &out),
            0)
      << out;
  EXPECT_TRUE(absl::StrContains(out, "rows=2")) << out;
  EXPECT_NE(Shell(absl::StrCat(psql, " -d ", server_.dbname, " -v ON_ERROR_STOP=1 -c 'SELECT 1/0'"), &out), 0);
  EXPECT_TRUE(absl::StrContains(out, "division by zero")) << out;
  // The admin console through psql.
  ASSERT_EQ(Shell(absl::StrCat(psql, " -d corral -At -c 'SHOW STATS'"), &out), 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "commits|")) << out;
  ASSERT_EQ(Shell(absl::StrCat(psql, " -d corral -At -c 'SET POLICY fraction-sum-literal-all' -c 'SHOW POLICY'"),
                &out),
            0)
      << out;
  EXPECT_TRUE(absl::StrContains(out, "fraction-sum-literal-all|on")) << out;
}

TEST_F(ProxyToolsTest, PgbenchSimpleExtendedPrepared) {
  const std::string db = absl::StrCat("corral_pgb_", getpid());
  PGconn* d = PQconnectdb(server_.conninfo.c_str());
  ASSERT_EQ(PQstatus(d), CONNECTION_OK);
  PQclear(PQexec(d, absl::StrCat("DROP DATABASE IF EXISTS ", db).c_str()));
  PGresult* r = PQexec(d, absl::StrCat("CREATE DATABASE ", db).c_str());
  ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQerrorMessage(d);
  PQclear(r);
  std::string out;
  ASSERT_EQ(Shell(absl::StrCat("/usr/bin/pgbench -i -q -s 1 -h ", server_.host, " -p ", server_.port, " -U ",
                             server_.user, " ", db),
                &out),
            0)
      << out;
  {
    ProxyUnderTest p;
    Options o;
    o.pool_size = 2;
    o.server_dbname = db;
    ASSERT_TRUE(p.Start(server_, o).ok());
    for (const char* mode : {"simple", "extended", "prepared"}) {
      const int64_t commits_before = p.proxy().stats().commits.load();
      ASSERT_EQ(Shell(absl::StrCat("timeout 60 /usr/bin/pgbench -n -c 4 -t 50 -M ", mode, " -h 127.0.0.1 -p ",
                                 p.port(), " -U ", server_.user, " ", db),
                    &out),
                0)
          << mode << ": " << out;
      EXPECT_TRUE(absl::StrContains(out, "number of transactions actually processed: 200/200"))
          << mode << ": " << out;
      // Every pgbench transaction committed through the proxy.
      EXPECT_GE(p.proxy().stats().commits.load() - commits_before, 200) << mode;
    }
    EXPECT_EQ(p.proxy().stats().protocol_errors.load(), 0);
  }
  PQclear(PQexec(d, absl::StrCat("DROP DATABASE IF EXISTS ", db).c_str()));
  PQfinish(d);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
