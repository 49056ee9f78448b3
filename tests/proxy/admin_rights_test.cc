// End-to-end tests of the proxy's admin rights and failed-login accounting
// (issue 26, items 3 and 6) against a real PostgreSQL (CORRAL_PG_CONNINFO;
// skipped with a message without one): only admin_users change the schedule
// (SET POLICY, RELOAD), stats_users may SHOW, anyone else is refused at login
// to the admin database; every failed login is counted in SHOW STATS and
// /metrics.
#include <libpq-fe.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

class AdminRightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TestServer(&server_, &why_)) GTEST_SKIP() << why_;
  }
  std::string Conninfo(const std::string& user, const std::string& db, const std::string& password = "") {
    return absl::StrCat("host=127.0.0.1 port=", proxy_.port(), " user=", user, " dbname=", db,
                        password.empty() ? "" : " password=" + password, " connect_timeout=5");
  }
  // The value of `stat` in SHOW STATS, as the admin `user` reads it.
  std::string Stat(const std::string& user, const std::string& password, const std::string& stat) {
    PGconn* c = PQconnectdb(Conninfo(user, "corral", password).c_str());
    std::string v = "<no connection>";
    if (PQstatus(c) == CONNECTION_OK) {
      PGresult* r = PQexec(c, "SHOW STATS");
      for (int i = 0; i < PQntuples(r); ++i) {
        if (stat == PQgetvalue(r, i, 0)) v = PQgetvalue(r, i, 1);
      }
      PQclear(r);
    }
    PQfinish(c);
    return v;
  }
  ServerInfo server_;
  std::string why_;
  ProxyUnderTest proxy_;
};

TEST_F(AdminRightsTest, OnlyAdminUsersChangeTheSchedule) {
  Options o;
  o.pool_size = 1;
  o.admin_users = {"alice"};
  o.stats_users = {"monitor"};
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  // bob is in neither list: refused at login, counted as a failed login.
  PGconn* bob = PQconnectdb(Conninfo("bob", "corral").c_str());
  EXPECT_NE(PQstatus(bob), CONNECTION_OK);
  EXPECT_TRUE(absl::StrContains(PQerrorMessage(bob), "not allowed")) << PQerrorMessage(bob);
  PQfinish(bob);
  // The stats user may SHOW but not SET POLICY or RELOAD.
  PGconn* mon = PQconnectdb(Conninfo("monitor", "corral").c_str());
  ASSERT_EQ(PQstatus(mon), CONNECTION_OK) << PQerrorMessage(mon);
  EXPECT_EQ(Exec1(mon, "SHOW POLICY"), "count-max-canonical-single");
  EXPECT_EQ(Exec1(mon, "SET POLICY original"), "ERROR 42501");
  EXPECT_EQ(Exec1(mon, "RELOAD"), "ERROR 42501");
  EXPECT_EQ(Exec1(mon, "SHOW POLICY"), "count-max-canonical-single");
  // The admin user may.
  PGconn* alice = PQconnectdb(Conninfo("alice", "corral").c_str());
  ASSERT_EQ(PQstatus(alice), CONNECTION_OK) << PQerrorMessage(alice);
  EXPECT_TRUE(ExecOk(alice, "SET POLICY original"));
  EXPECT_EQ(Exec1(mon, "SHOW POLICY"), "original");
  PQfinish(alice);
  PQfinish(mon);
  EXPECT_EQ(Stat("monitor", "", "failed_logins"), "1");
}

TEST_F(AdminRightsTest, WrongPasswordsAreCountedAndExported) {
  Options o;
  o.pool_size = 1;
  o.auth_type = "scram-sha-256";
  o.users = {{"alice", "s3cret"}, {"monitor", "m0n"}};
  o.admin_users = {"alice"};
  o.stats_users = {"monitor"};
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  EXPECT_EQ(Stat("monitor", "m0n", "failed_logins"), "0");
  const int kWrong = 7;
  for (int i = 0; i < kWrong; ++i) {
    PGconn* c = PQconnectdb(Conninfo(i % 2 ? "alice" : "nosuchuser", "postgres", "wrong").c_str());
    EXPECT_NE(PQstatus(c), CONNECTION_OK);
    EXPECT_TRUE(absl::StrContains(PQerrorMessage(c), "password authentication failed")) << PQerrorMessage(c);
    PQfinish(c);
  }
  PGconn* good = PQconnectdb(Conninfo("alice", "postgres", "s3cret").c_str());
  EXPECT_EQ(PQstatus(good), CONNECTION_OK) << PQerrorMessage(good);
  PQfinish(good);
  EXPECT_EQ(Stat("monitor", "m0n", "failed_logins"), std::to_string(kWrong));
  EXPECT_TRUE(absl::StrContains(proxy_.proxy().MetricsText(),
                                absl::StrCat("corral_failed_logins_total ", kWrong, "\n")))
      << proxy_.proxy().MetricsText();
}

}  // namespace
}  // namespace proxy
}  // namespace corral
