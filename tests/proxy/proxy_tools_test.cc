// The proxy under psql: scripted sessions, errors, the admin console.
// pgbench in its three query modes, psql's COPY and the client drivers run
// in the driver matrix, tests/drivers/drivers_test.cc (plain and TLS).
#include <unistd.h>

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
  ASSERT_TRUE(IsOk(p.Start(server_, o)));
  const std::string psql = absl::StrCat("/usr/bin/psql -X -h 127.0.0.1 -p ", p.port(), " -U ", server_.user);
  std::string out;
  ASSERT_EQ(Shell(absl::StrCat(psql, " -d ", server_.dbname, " -At -c 'SELECT 1 + 1' -c 'SELECT 3; SELECT 4'"),
                &out),
            0)
      << out;
  EXPECT_EQ(out, "2\n3\n4\n");
  // A script with a transaction, an error stopping it (ON_ERROR_STOP), and \gset.
  const std::string t = PgUniqueName("psql_t");
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

}  // namespace
}  // namespace proxy
}  // namespace corral
