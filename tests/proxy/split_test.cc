// Hot-spot splitting in the proxy (issue 16: "the same mechanisms in the
// proxy"; Options::split, scheduler/routed_loads.h) end to end against a
// real server (CORRAL_PG_CONNINFO; skipped without one), with pgbench as
// the client. A reference learned hot from conflicts (g = 1: pgbench on one
// row of it under REPEATABLE READ) leads every later transaction that names
// it onto one backend. When those transactions no longer conflict (each
// updates its own row of g = 1 and holds the backend for a few ms), that
// backend's queue waits far longer than an attempt takes: split on, the
// proxy spreads g = 1 over several backends (SHOW SPLITS, SHOW STATS) and
// its transactions run at the same time on several server sessions; split
// off, the table stays empty and they run one at a time.
#include <libpq-fe.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

class SplitTest : public ScratchTableTest {
 protected:
  void SetUp() override {
    ScratchTableTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (access("/usr/bin/pgbench", X_OK) != 0) GTEST_SKIP() << "pgbench not installed";
    hot_ = absl::StrCat(table_, "_g");
    seen_ = absl::StrCat(table_, "_seen");
    ASSERT_TRUE(ExecOk(server_conn_, absl::StrCat("CREATE TABLE ", hot_, " (g int, k int PRIMARY KEY, v int)")));
    ASSERT_TRUE(ExecOk(server_conn_, absl::StrCat("INSERT INTO ", hot_, " SELECT 1, i, 0 FROM generate_series(0, 2000) i")));
    ASSERT_TRUE(ExecOk(server_conn_, absl::StrCat("CREATE TABLE ", seen_, " (pid int, t0 timestamptz, t1 timestamptz)")));
  }
  void TearDown() override {
    if (server_conn_ != nullptr && !hot_.empty()) {
      ExecValue(server_conn_, absl::StrCat("DROP TABLE IF EXISTS ", hot_, ", ", seen_));
    }
    ScratchTableTest::TearDown();
  }
  void StartProxy(bool split, Options o = Options()) {
    o.pool_size = 4;
    o.split = split;
    o.split_window_ms = 200;
    o.history_half_life_s = 0;  // what phase 1 taught stays
    ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  }
  std::string Script(const std::string& name, const std::string& body) {
    const std::string path = absl::StrCat(::testing::TempDir(), "/", table_, "_", name, ".sql");
    FILE* f = std::fopen(path.c_str(), "w");
    EXPECT_NE(f, nullptr);
    if (f != nullptr) {
      std::fputs(body.c_str(), f);
      std::fclose(f);
    }
    return path;
  }
  // pgbench through the proxy; its output.
  std::string Pgbench(const std::string& script, int seconds) {
    std::string out;
    const int rc = Shell(absl::StrCat("/usr/bin/pgbench -n -h 127.0.0.1 -p ", proxy_.port(), " -U ", server_.user,
                                      " -c 8 -j 2 -T ", seconds, " --max-tries=1000 -f ", script, " ",
                                      server_.dbname, " 2>&1"),
                         &out);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_FALSE(absl::StrContains(out, "aborted")) << out;
    return out;
  }
  // Phase 1: g = 1 learned hot (conflicts on one of its rows).
  void LearnHot() {
    const std::string script =
        Script("hot", absl::StrCat("BEGIN ISOLATION LEVEL REPEATABLE READ;\nUPDATE ", hot_,
                                   " SET v = v + 1 WHERE g = 1 AND k = 0;\nSELECT pg_sleep(0.001);\nCOMMIT;\n"));
    Pgbench(script, 2);
    // Its aborts are in the History.
    PGconn* a = PQconnectdb(proxy_.ClientConninfo("corral").c_str());
    PGresult* r = PQexec(a, "SHOW HISTORY");
    bool found = false;
    for (int i = 0; i < PQntuples(r); ++i) {
      if (absl::StrContains(PQgetvalue(r, i, 0), "g=1") && std::atoll(PQgetvalue(r, i, 1)) > 0) found = true;
    }
    PQclear(r);
    PQfinish(a);
    ASSERT_TRUE(found) << "no conflicts on g=1 were learned";
  }
  // Phase 2: each transaction its own row of g = 1, 5 ms on its backend,
  // noting the server session that ran it and when it began and ended
  // (no constant in those statements: they name no reference).
  void Spread(int seconds) {
    const std::string script = Script(
        "spread", absl::StrCat("\\set k random(1, 2000)\nBEGIN;\nUPDATE ", hot_,
                               " SET v = v + 1 WHERE g = 1 AND k = :k;\nINSERT INTO ", seen_,
                               " SELECT pg_backend_pid(), clock_timestamp();\nSELECT pg_sleep(0.005);\nUPDATE ", seen_,
                               " SET t1 = clock_timestamp() WHERE pid = pg_backend_pid() AND t1 IS NULL;\nCOMMIT;\n"));
    Pgbench(script, seconds);
  }
  // Pairs of g = 1 transactions that ran at the same time.
  int Overlaps() {
    return std::atoi(ExecValue(server_conn_, absl::StrCat("SELECT count(*) FROM ", seen_, " a JOIN ", seen_,
                                                          " b ON a.pid < b.pid AND a.t0 < b.t1 AND b.t0 < a.t1"))
                         .c_str());
  }
  // SHOW SPLITS rows naming g=1: their k (0 when none).
  int SplitK() {
    PGconn* a = PQconnectdb(proxy_.ClientConninfo("corral").c_str());
    PGresult* r = PQexec(a, "SHOW SPLITS");
    EXPECT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(a);
    int k = 0;
    for (int i = 0; i < PQntuples(r); ++i) {
      if (absl::StrContains(PQgetvalue(r, i, 1), "g=1")) k = std::atoi(PQgetvalue(r, i, 2));
    }
    PQclear(r);
    PQfinish(a);
    return k;
  }
  int SessionsSeen() { return std::atoi(ExecValue(server_conn_, absl::StrCat("SELECT count(DISTINCT pid) FROM ", seen_)).c_str()); }
  std::string hot_, seen_;
};

TEST_F(SplitTest, AHotReferenceWhoseTransactionsStopConflictingSpreadsOverBackends) {
  StartProxy(/*split=*/true);
  LearnHot();
  Spread(4);
  const int k = SplitK();
  EXPECT_GE(k, 2) << "g=1 was not split";
  EXPECT_GE(proxy_.proxy().stats().transactions.load(), 1);
  EXPECT_GE(SessionsSeen(), 2);
  EXPECT_GT(Overlaps(), 0);
  // Every transaction's row update landed once: the sum is the commits.
  const std::string sum = ExecValue(server_conn_, absl::StrCat("SELECT sum(v) FROM ", hot_, " WHERE k > 0"));
  const std::string seen = ExecValue(server_conn_, absl::StrCat("SELECT count(*) FROM ", seen_));
  EXPECT_EQ(sum, seen);
}

// The proxy's own serializers leave a split reference to its k backends:
// restart on a hot key (in-process keys) and multi-proxy mode (advisory
// locks on references hot in the cluster) take no key for it, or its
// transactions would still run one at a time.
TEST_F(SplitTest, ASplitReferenceTakesNoRestartOrClusterKey) {
  for (const bool cluster : {false, true}) {
    SCOPED_TRACE(cluster ? "cluster_name set" : "restart_on_hot_key");
    Options o;
    const std::string name = PgUniqueName("split");
    if (cluster) {
      o.cluster_name = name;
      o.cluster_publish_interval_ms = 100;
      o.cluster_hot_threshold = 1;
    } else {
      o.restart_on_hot_key = true;
      o.templates = true;
      o.replay = true;
    }
    ProxyUnderTest peer;  // a live peer: only then is a reference hot in the cluster
    if (cluster) {
      Options po = o;
      po.pool_size = 1;
      po.cluster_proxy_id = "peer";
      ASSERT_TRUE(IsOk(peer.Start(server_, po)));
      o.cluster_proxy_id = "main";
    }
    StartProxy(/*split=*/true, o);
    LearnHot();
    ExecValue(server_conn_, absl::StrCat("TRUNCATE ", seen_));
    Spread(4);
    EXPECT_GE(SplitK(), 2);
    EXPECT_GT(Overlaps(), 0);
    if (cluster) {
      EXPECT_GT(proxy_.proxy().stats().cluster_lock_txns.load(), 0);  // it was hot in the cluster
    } else {
      EXPECT_GT(proxy_.proxy().stats().restart_key_txns.load(), 0);  // it took keys before the split
    }
    proxy_.Stop();
    peer.Stop();
    ExecValue(server_conn_, absl::StrCat("TRUNCATE ", seen_));
    if (cluster) ExecValue(server_conn_, absl::StrCat("DELETE FROM corral.hot_refs WHERE cluster_name = '", name, "'"));
  }
}

TEST_F(SplitTest, SplitOffKeepsTheTableEmpty) {
  StartProxy(/*split=*/false);
  LearnHot();
  Spread(2);
  EXPECT_EQ(SplitK(), 0);
  PGconn* a = PQconnectdb(proxy_.ClientConninfo("corral").c_str());
  EXPECT_EQ(ExecValue(a, "SHOW SPLITS"), "");
  PQfinish(a);
  // One at a time: in-flight stealing never runs two of g = 1 at once.
  EXPECT_EQ(Overlaps(), 0);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
