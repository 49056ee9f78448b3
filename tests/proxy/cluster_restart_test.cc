// Multi-proxy mode (issue 25) with restart on a hot key: a later
// statement's key hot in the cluster restarts the transaction, which takes
// every key in order before its re-run; a restart waiting for a local key
// keeps its backend and keys (cluster_restart_hold_ms). Fixture:
// cluster_fixture.h.
#include <sys/socket.h>

#include <string>
#include <vector>

#include "tests/proxy/cluster_fixture.h"

namespace corral {
namespace proxy {
namespace {

// Restart on a hot key across proxies: Z (via A) reads one hot row (its
// key taken, its snapshot too), then updates another, hot in the cluster;
// Y (via B) may hold that row's key in an open transaction. Taken now, the
// key would come after Z's snapshot (Y's commit fails Z with 40001); A
// restarts Z instead: rolled back, the key taken before the log runs again
// on a fresh snapshot, and only then the UPDATE. How it is taken depends
// on the keys' order (restart_loop.cc): one sorting after the held key is
// waited for on the same backend; one sorting before it is tried, and when
// Y holds it every key goes back and all are taken again in order
// elsewhere (restart_cluster_retakes).
TEST_F(ClusterTest, RestartTakesAKeyHotInTheClusterInOrder) {
  const std::string cluster = PgUniqueName("cl");
  ProxyUnderTest a, b;
  int64_t key[3] = {0, 0, 0};
  TwoRestartProxies(cluster, &a, &b, key);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_NE(key[1], key[2]);
  const int lo = key[1] < key[2] ? 1 : 2, hi = 3 - lo;  // rows by their keys' order
  PGconn* y = PQconnectdb(b.ClientConninfo().c_str());
  PGconn* z = PQconnectdb(a.ClientConninfo().c_str());
  int updates[3] = {0, 1, 1};  // committed increments per row (LearnAbort's)
  // Z reads `held` and updates `wanted`, Y holding `wanted`'s key when
  // `contended`; returns Z's UPDATE's outcome.
  auto scenario = [&](int held, int wanted, bool contended) -> std::string {
    const std::string row_waits =
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query = '" + Update(wanted) + "'";
    // A sync round a loaded machine delays drops a proxy to local learning
    // for that round (HoldHotRow): the scenario is set up again then.
    for (int attempt = 0; attempt < 20; ++attempt) {
      EXPECT_TRUE(Eventually([&] { return ClusterValue(a, "hot_refs") == "2" && ClusterValue(b, "hot_refs") == "2"; }));
      if (contended) {
        EXPECT_EQ(ExecValue(y, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
        EXPECT_EQ(ExecValue(y, Update(wanted)), "UPDATE 1");
      }
      EXPECT_EQ(ExecValue(z, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
      EXPECT_EQ(ExecValue(z, absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", held)),
                absl::StrCat(updates[held]));
      if ((contended && Locks(key[wanted], true) != 1) || Locks(key[held], true) != 1) {
        if (contended) EXPECT_EQ(ExecValue(y, "ROLLBACK"), "ROLLBACK");  // a round without the cluster: again
        EXPECT_EQ(ExecValue(z, "ROLLBACK"), "ROLLBACK");
        continue;
      }
      const int64_t relocks = a.proxy().stats().restart_cluster_relocks.load();
      const int64_t retakes = a.proxy().stats().restart_cluster_retakes.load();
      EXPECT_EQ(PQsendQuery(z, Update(wanted).c_str()), 1);
      if (contended) {
        // Z's backend waits for the key (its snapshot not taken), or, on a
        // round without the cluster, its UPDATE waits for Y's row.
        bool restarted = false;
        EXPECT_TRUE(Eventually([&] {
          restarted = Locks(key[wanted], false) == 1;
          return restarted || ExecValue(server_conn_, row_waits) == "1";
        }));
        if (!restarted) {
          EXPECT_EQ(ExecValue(y, "ROLLBACK"), "ROLLBACK");
          while (PGresult* r = PQgetResult(z)) PQclear(r);
          ExecValue(z, "ROLLBACK");
          continue;
        }
        // Sorting first, the held key is waited for again behind it.
        EXPECT_EQ(Locks(key[held], true), held == lo ? 1 : 0);
        EXPECT_EQ(ExecValue(y, "COMMIT"), "COMMIT");
        updates[wanted]++;
      }
      const std::string result = PendingResult(z);
      if (result != "UPDATE 1") {
        ExecValue(z, "ROLLBACK");
        return result;
      }
      EXPECT_EQ(ExecValue(z, "COMMIT"), "COMMIT");
      updates[wanted]++;
      EXPECT_EQ(a.proxy().stats().restart_cluster_relocks.load(), relocks + 1);
      // Every key went back only when one it tried was Y's.
      EXPECT_EQ(a.proxy().stats().restart_cluster_retakes.load(), retakes + (contended && held == hi ? 1 : 0));
      return result;
    }
    return "no round with the cluster";
  };
  EXPECT_EQ(scenario(lo, hi, /*contended=*/true), "UPDATE 1");   // waited for on the same backend
  EXPECT_EQ(scenario(hi, lo, /*contended=*/true), "UPDATE 1");   // tried, Y's: all taken again in order
  EXPECT_EQ(scenario(hi, lo, /*contended=*/false), "UPDATE 1");  // tried, free: the held key kept
  PQfinish(y);
  PQfinish(z);
  EXPECT_GE(a.proxy().stats().restart_matches.load(), 3);
  EXPECT_EQ(a.proxy().stats().restart_mismatches.load(), 0);
  EXPECT_EQ(a.proxy().stats().aborts_40001.load(), 1);  // LearnAbort's only
  ExpectRowsAndNoKeyLeft(updates, key, a, b);
}

}  // namespace

// A restart whose local key another client of the same proxy holds waits
// for it keeping its backend and its advisory key (cluster_restart_hold_ms):
// Z (via A) reads `held`, W (via A too) has updated `wanted`, Z's UPDATE of
// `wanted` restarts; while W runs, Z's key on `held` stays granted to Z's
// backend, so no other proxy could change the row Z read. Before, Z gave
// its backend and key back during the wait (0 here), and a change to
// `held` meanwhile failed its re-run. W commits: Z takes `wanted`'s key,
// re-runs, its UPDATE goes on; nothing left locked.
void ClusterTest::RestartHoldScenario(bool bounded) {
  const std::string cluster = PgUniqueName("cl");
  ProxyUnderTest a, b;
  Options oa = ClusterOptions(cluster, cluster + "_a"), ob = ClusterOptions(cluster, cluster + "_b");
  oa.restart_on_hot_key = ob.restart_on_hot_key = true;
  oa.cluster_restart_hold_ms = bounded ? 50 : 60000;
  ASSERT_TRUE(IsOk(a.Start(server_, oa)));
  ASSERT_TRUE(IsOk(b.Start(server_, ob)));
  // Both rows hot in A (local keys) and so in the cluster (B a peer).
  LearnAbort(a, 1);
  int64_t key[3] = {0, 0, 0};
  ASSERT_TRUE(Eventually([&] { return (key[1] = PublishedKey(cluster, cluster + "_a")) != 0; }));
  LearnAbort(a, 2);
  ASSERT_TRUE(Eventually([&] {
    const std::string v = ExecValue(
        server_conn_, absl::StrCat("SELECT ref_hash FROM corral.hot_refs WHERE cluster_name = '", cluster,
                                   "' AND proxy_id = '", cluster, "_a' AND ref_hash NOT IN (0, ", key[1], ")"));
    key[2] = v.empty() || v.rfind("ERROR", 0) == 0 ? 0 : std::strtoll(v.c_str(), nullptr, 10);
    return key[2] != 0;
  }));
  int updates[3] = {0, 1, 1};
  const int held = key[1] < key[2] ? 1 : 2, wanted = 3 - held;  // waited for on the same backend after
  PGconn* w = PQconnectdb(a.ClientConninfo().c_str());
  PGconn* z = PQconnectdb(a.ClientConninfo().c_str());
  bool done = false;
  for (int attempt = 0; attempt < 20 && !done; ++attempt) {
    EXPECT_TRUE(Eventually([&] { return ClusterValue(a, "hot_refs") == "2" && ClusterValue(b, "hot_refs") == "2"; }));
    EXPECT_EQ(ExecValue(w, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
    EXPECT_EQ(ExecValue(w, Update(wanted)), "UPDATE 1");
    EXPECT_EQ(ExecValue(z, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
    EXPECT_EQ(ExecValue(z, absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", held)), absl::StrCat(updates[held]));
    if (Locks(key[wanted], true) != 1 || Locks(key[held], true) != 1) {  // a round without the cluster: again
      EXPECT_EQ(ExecValue(w, "ROLLBACK"), "ROLLBACK");
      EXPECT_EQ(ExecValue(z, "ROLLBACK"), "ROLLBACK");
      continue;
    }
    const int64_t holds = a.proxy().stats().restart_held_waits.load();
    const int64_t timeouts = a.proxy().stats().restart_hold_timeouts.load();
    const int64_t waits = a.proxy().stats().restart_key_waits.load();
    EXPECT_EQ(PQsendQuery(z, Update(wanted).c_str()), 1);
    ASSERT_TRUE(Eventually([&] { return a.proxy().stats().restart_key_waits.load() == waits + 1; }));
    // Z waits in the proxy for W's local key, its own advisory key kept
    // (given back, it would be 0 by now); past the bound, given back.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(Locks(key[held], true), bounded ? 0 : 1);
    EXPECT_EQ(a.proxy().stats().restart_held_waits.load(), holds + 1);
    EXPECT_EQ(a.proxy().stats().restart_hold_timeouts.load(), timeouts + (bounded ? 1 : 0));
    EXPECT_EQ(Locks(key[wanted], false), 0);
    EXPECT_EQ(ExecValue(w, "COMMIT"), "COMMIT");
    updates[wanted]++;
    EXPECT_EQ(PendingResult(z), "UPDATE 1");
    EXPECT_EQ(ExecValue(z, "COMMIT"), "COMMIT");
    updates[wanted]++;
    EXPECT_EQ(a.proxy().stats().restart_hold_timeouts.load(), timeouts + (bounded ? 1 : 0));
    done = true;
  }
  EXPECT_TRUE(done) << "no round with the cluster";
  PQfinish(w);
  PQfinish(z);
  EXPECT_EQ(a.proxy().stats().restart_mismatches.load(), 0);
  ExpectRowsAndNoKeyLeft(updates, key, a, b);
}

namespace {

TEST_F(ClusterTest, RestartKeepsItsKeysWhileItWaitsForALocalKey) { RestartHoldScenario(/*bounded=*/false); }

// Past cluster_restart_hold_ms the restart leaves its backend, giving its
// keys back, and still waits for the local key: re-run and done as before.
TEST_F(ClusterTest, RestartHoldEndsAtItsBound) { RestartHoldScenario(/*bounded=*/true); }

// cluster_restart_hold_ms: 0..60000, 5 by default; a bad value names the key.
TEST(ClusterConfigTest, RestartHoldKey) {
  ExpectIntKey("cluster_restart_hold_ms",
               {{"cluster_restart_hold_ms = 0\n", true, 0},
                {"cluster_restart_hold_ms = 20\n", true, 20},
                {"", true, 5},
                {"cluster_restart_hold_ms = -1\n", false, 5},
                {"cluster_restart_hold_ms = soon\n", false, 5}},
               [](const Options& o) { return o.cluster_restart_hold_ms; });
}

}  // namespace
}  // namespace proxy
}  // namespace corral
