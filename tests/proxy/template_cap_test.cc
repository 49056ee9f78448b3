// Per-template concurrency cap (issue 24, template_cap.h) end to end
// against a real server (CORRAL_PG_CONNINFO; skipped without one):
// concurrent psycopg clients on one hot two-row template fail each other
// far less often with the cap on than off (same run, same work); after
// that load the template is capped, k transactions hold its slots, the
// next one waits before its first statement reaches the server, a waiter
// whose client leaves is removed with nothing left on the server, and the
// next one is admitted when a running one commits.
#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

class TemplateCapTest : public ScratchTableTest {
 protected:
  void TearDown() override {
    for (PGconn* c : conns_) PQfinish(c);
    ScratchTableTest::TearDown();
  }
  PGconn* Connect() {
    PGconn* c = PQconnectdb(proxy_.ClientConninfo().c_str());
    EXPECT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
    conns_.push_back(c);
    return c;
  }
  static Options Capped(bool on) {
    Options o;
    o.pool_size = 4;
    o.template_concurrency = on;
    o.template_cap_max_k = 4;
    o.template_cap_window_ms = 50;
    o.template_cap_window_ends = 30;
    return o;
  }
  // The psycopg clients' run: {commits, retries}; {-1, -1} on failure.
  std::pair<int64_t, int64_t> Load() {
    std::string out;
    const int rc = Shell(absl::StrCat("/usr/bin/python3 ", ClientPath("psycopg_hot_template.py"), " '",
                                      proxy_.ClientConninfo(), "' ", table_, " 8 120 3"),
                         &out);
    EXPECT_EQ(rc, 0) << out;
    long long commits = -1, retries = -1;
    const size_t at = out.find("commits=");
    if (rc != 0 || at == std::string::npos ||
        std::sscanf(out.c_str() + at, "commits=%lld retries=%lld", &commits, &retries) != 2) {
      ADD_FAILURE() << out;
      return {-1, -1};
    }
    return {commits, retries};
  }
  // SHOW TEMPLATE_CAPS' row of the template whose first statement
  // mentions `table_`: column -> value.
  std::map<std::string, std::string> CapRow() {
    std::map<std::string, std::string> row;
    PGconn* a = PQconnectdb(proxy_.ClientConninfo("corral").c_str());
    PGresult* r = PQexec(a, "SHOW TEMPLATE_CAPS");
    for (int i = 0; i < PQntuples(r); ++i) {
      if (std::string(PQgetvalue(r, i, 1)).find(table_) == std::string::npos) continue;
      for (int j = 0; j < PQnfields(r); ++j) row[PQfname(r, j)] = PQgetvalue(r, i, j);
    }
    PQclear(r);
    PQfinish(a);
    return row;
  }
  // Server sessions in a transaction that touched the scratch table.
  int ServerTxnsOnTable() {
    return std::stoi(ExecValue(server_conn_, absl::StrCat("SELECT count(*) FROM pg_stat_activity WHERE xact_start "
                                                          "IS NOT NULL AND query LIKE '%",
                                                          table_, "%' AND pid <> pg_backend_pid()")));
  }
  bool HavePsycopg() {
    std::string out;
    return Shell("/usr/bin/python3 -c 'import psycopg'", &out) == 0;
  }
  // psycopg's statement of the load (its template): run (wait: its
  // command tag) or only sent ("sent").
  std::string Upd(PGconn* c, int key, bool wait) {
    const std::string sql = absl::StrCat("UPDATE ", table_, " SET v = v + 1 WHERE k = $1");
    const std::string v = std::to_string(key);
    const char* params[1] = {v.c_str()};
    if (!wait) return PQsendQueryParams(c, sql.c_str(), 1, nullptr, params, nullptr, nullptr, 0) == 1 ? "sent" : "";
    PGresult* r = PQexecParams(c, sql.c_str(), 1, nullptr, params, nullptr, nullptr, 0);
    std::string tag = PQresultStatus(r) == PGRES_COMMAND_OK ? PQcmdStatus(r) : PQerrorMessage(c);
    PQclear(r);
    return tag;
  }
  std::vector<PGconn*> conns_;
};

TEST_F(TemplateCapTest, FewerConflictsWithTheCapThanWithout) {
  if (!HavePsycopg()) GTEST_SKIP() << "no psycopg for /usr/bin/python3";
  ASSERT_TRUE(IsOk(proxy_.Start(server_, Capped(false))));
  const auto off = Load();
  proxy_.Stop();
  ASSERT_TRUE(IsOk(proxy_.Start(server_, Capped(true))));
  const auto on = Load();
  std::printf("retries: cap off %lld, cap on %lld (of %d commits each)\n", static_cast<long long>(off.second),
              static_cast<long long>(on.second), 8 * 120);
  ASSERT_EQ(off.first, 8 * 120);
  ASSERT_EQ(on.first, 8 * 120);
  // Uncapped, 8 clients on 3 rows (any two transactions share one) fail
  // each other constantly, and k = 2 is no faster than 1; capped, only
  // the first windows (k from 4 down) and probes of a larger k do. How much
  // fewer depends on how fast the windows close, which a loaded machine
  // slows (idle: 20-60 against 413-481; with two CPU burners beside the
  // suite: 226 against 324; once, under load, the uncapped run itself met
  // only 30 conflicts), so the assertion is the direction only, and only
  // when the uncapped run met contention to compare with; the cap's
  // engagement is asserted by its counters below in every case.
  if (off.second > 100) {
    EXPECT_LT(on.second, off.second) << "on " << on.second << " off " << off.second;
  } else {
    std::printf("the uncapped run met little contention (%lld retries): no direction to compare\n",
                static_cast<long long>(off.second));
  }
  EXPECT_GT(proxy_.proxy().stats().template_cap_shrinks.load(), 0);
  EXPECT_GT(proxy_.proxy().stats().template_cap_waits.load(), 0);
  // Every row's increments are the commits' (two per transaction).
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT sum(v) FROM ", table_)),
            std::to_string(2 * (off.first + on.first)));
}

TEST_F(TemplateCapTest, AdmitsKAtATimeAndDropsAWaiterThatLeft) {
  if (!HavePsycopg()) GTEST_SKIP() << "no psycopg for /usr/bin/python3";
  ASSERT_TRUE(IsOk(proxy_.Start(server_, Capped(true))));
  ASSERT_GT(Load().first, 0);
  // The load left the template capped (k changes only when one of it ends).
  std::map<std::string, std::string> row = CapRow();
  ASSERT_FALSE(row.empty());
  const int k = std::stoi(row["k"]);
  ASSERT_LT(k, 4) << "not capped after the load";
  ASSERT_EQ(row["running"], "0");
  auto value = [&](int key) {
    return std::stoll(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", key)));
  };
  const int64_t v9 = value(9), v10 = value(10), v0 = value(0);
  // k transactions of the template (psycopg's statement, sent the same
  // way) hold its slots, on rows the load does not touch.
  const int rows[] = {0, 7, 8};
  std::vector<PGconn*> holders;
  for (int i = 0; i < k; ++i) {
    PGconn* h = Connect();
    ASSERT_TRUE(ExecOk(h, "BEGIN"));
    ASSERT_EQ(Upd(h, rows[i], /*wait=*/true), "UPDATE 1");
    holders.push_back(h);
  }
  ASSERT_EQ(CapRow()["running"], std::to_string(k));
  // The next ones wait before their first statement (other rows: they
  // would not even conflict): the server never sees them.
  const int64_t cancels = proxy_.proxy().stats().template_cap_cancels.load();
  PGconn* w = Connect();
  PGconn* gone = Connect();
  ASSERT_TRUE(ExecOk(w, "BEGIN"));
  ASSERT_EQ(Upd(w, 10, /*wait=*/false), "sent");
  ASSERT_TRUE(Eventually([&] { return CapRow()["waiting"] == "1"; }));
  ASSERT_TRUE(ExecOk(gone, "BEGIN"));
  ASSERT_EQ(Upd(gone, 9, /*wait=*/false), "sent");
  ASSERT_TRUE(Eventually([&] { return CapRow()["waiting"] == "2"; }));
  EXPECT_EQ(ServerTxnsOnTable(), k);
  // The second waiter's client leaves: removed, nothing of it ran.
  conns_.erase(std::find(conns_.begin(), conns_.end(), gone));
  PQfinish(gone);
  ASSERT_TRUE(Eventually([&] { return CapRow()["waiting"] == "1"; }));
  EXPECT_EQ(proxy_.proxy().stats().template_cap_cancels.load(), cancels + 1);
  ASSERT_EQ(PQconsumeInput(w), 1);
  EXPECT_EQ(PQisBusy(w), 1);  // still held
  EXPECT_EQ(CapRow()["running"], std::to_string(k));
  // A holder commits: the waiter is admitted and runs; unless that end
  // closed a window that shrank k, then it waits for the next end.
  ASSERT_TRUE(ExecOk(holders[0], "COMMIT"));
  auto admitted = [&] {
    for (int i = 0; i < 100; ++i) {
      if (PQconsumeInput(w) != 1 || PQisBusy(w) == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  size_t ended = 1;
  while (!admitted()) {
    ASSERT_LT(std::stoi(CapRow()["k"]), k) << "a slot freed, k unchanged, and the waiter still waits";
    ASSERT_LT(ended, holders.size());
    ASSERT_TRUE(ExecOk(holders[ended++], "ROLLBACK"));
  }
  std::string tag;
  while (PGresult* r = PQgetResult(w)) {
    tag = PQcmdStatus(r);
    PQclear(r);
  }
  EXPECT_EQ(tag, "UPDATE 1");
  ASSERT_TRUE(ExecOk(w, "COMMIT"));
  for (size_t i = ended; i < holders.size(); ++i) ASSERT_TRUE(ExecOk(holders[i], "ROLLBACK"));
  row = CapRow();
  EXPECT_EQ(row["running"], "0");
  EXPECT_EQ(row["waiting"], "0");
  // The waiter that left wrote nothing and holds no lock; the admitted one
  // and the committed holder wrote once each.
  EXPECT_EQ(value(9), v9);
  EXPECT_TRUE(ExecOk(server_conn_, absl::StrCat("BEGIN; SET LOCAL lock_timeout = '2s'; UPDATE ", table_,
                                                " SET v = v WHERE k = 9; ROLLBACK")));
  EXPECT_EQ(value(10), v10 + 1);
  EXPECT_EQ(value(0), v0 + 1);
  EXPECT_EQ(ServerTxnsOnTable(), 0);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
