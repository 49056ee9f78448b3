// The fixture of the multi-proxy tests (issue 25), end to end against the
// test server: cluster_test (sharing, locks and their release, names,
// RELOAD, fallback), cluster_restart_test (restart on a key hot in the
// cluster), cluster_table_lock_test (cluster_lock = table). Two proxies in
// one process with the same cluster_name share what they learn through
// corral.hot_refs; a reference hot on one is serialized by the other with a
// lock taken before the transaction's snapshot. Every assertion is on an
// order of events the test forces (a transaction that must wait for a
// lock, pg_locks rows), not on rates or timings; waits poll with a
// generous bound.
//
//   TEST_F(ClusterTest, Something) {
//     Held h;
//     HoldHotRow(&h);  // Y (via B) holds row 1's key in an open block
//     ...
//   }
#ifndef CORRAL_TESTS_PROXY_CLUSTER_FIXTURE_H_
#define CORRAL_TESTS_PROXY_CLUSTER_FIXTURE_H_

#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "adapters/proxy/cluster.h"
#include "adapters/proxy/config.h"
#include "libpq-fe.h"
#include "tests/proxy/proxy_test_util.h"

#include "gtest/gtest.h"

namespace corral {
namespace proxy {

// Every result of the query c sent (PQsendQuery): the last one's command
// tag, or "ERROR <sqlstate>".
inline std::string PendingResult(PGconn* c) {
  std::string out;
  while (PGresult* r = PQgetResult(c)) {
    out = PQresultStatus(r) == PGRES_FATAL_ERROR ? absl::StrCat("ERROR ", PQresultErrorField(r, PG_DIAG_SQLSTATE))
                                                 : std::string(PQcmdStatus(r));
    PQclear(r);
  }
  return out;
}

// The value of column `col` of SHOW CLUSTER's first row on proxy `p`'s
// admin console ("" when none).
inline std::string ClusterValue(ProxyUnderTest& p, const std::string& col) {
  PGconn* a = PQconnectdb(p.ClientConninfo("corral").c_str());
  PGresult* r = PQexec(a, "SHOW CLUSTER");
  std::string v;
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) {
    const int f = PQfnumber(r, col.c_str());
    if (f >= 0) v = PQgetvalue(r, 0, f);
  }
  PQclear(r);
  PQfinish(a);
  return v;
}

class ClusterTest : public ScratchTableTest {
 protected:
  Options ClusterOptions(const std::string& cluster, const std::string& id) {
    Options o;
    o.pool_size = 2;
    o.history_half_life_s = 0;  // no aging: what was learned stays
    o.cluster_name = cluster;
    o.cluster_proxy_id = id;
    o.cluster_publish_interval_ms = 100;
    o.cluster_hot_threshold = 1;
    o.cluster_fold_unlock = fold_;
    o.cluster_table_locks = table_locks_;
    o.replay = replay_;
    return o;
  }
  // RELOAD turns sharing on, changes the threshold, turns it off, on a
  // proxy of `workers` loops.
  void ReloadScenario(int workers);
  // A restart that waits for a local key with its advisory key kept; with
  // `bounded` the bound (50 ms) ends the hold first.
  void RestartHoldScenario(bool bounded);
  // Every row's `col` of p's SHOW CLUSTER (one per loop with workers > 1).
  std::vector<std::string> ClusterValues(ProxyUnderTest& p, const std::string& col) {
    std::vector<std::string> out;
    PGconn* a = PQconnectdb(p.ClientConninfo("corral").c_str());
    PGresult* r = PQexec(a, "SHOW CLUSTER");
    const int f = PQresultStatus(r) == PGRES_TUPLES_OK ? PQfnumber(r, col.c_str()) : -1;
    for (int i = 0; f >= 0 && i < PQntuples(r); ++i) out.push_back(PQgetvalue(r, i, f));
    PQclear(r);
    PQfinish(a);
    return out;
  }
  static bool AllAre(const std::vector<std::string>& vs, int n, const std::string& v) {
    if (static_cast<int>(vs.size()) != n) return false;
    for (const std::string& x : vs) {
      if (x != v) return false;
    }
    return true;
  }
  // Whether a transaction of `update` through b takes `key` on its backend.
  // A sync round a loaded machine delays drops b to local learning for it
  // (HoldHotRow): tried again once b sees the reference hot again.
  // Whether B's transaction running `update` takes advisory key `key`,
  // tried until B's merged view has it: B's view may hold more than the
  // one reference (a proxy that re-read its schema mid-test publishes a
  // row under its old name too: ForeignKeyAdded..., when another test's
  // DDL triggered A's re-read just before the ALTER, failed waiting for
  // exactly one), so each try waits for at least one and the tries are
  // spaced.
  bool TakesKey(ProxyUnderTest& b, const std::string& update, int64_t key) {
    PGconn* y = PQconnectdb(b.ClientConninfo().c_str());
    bool locked = false;
    for (int attempt = 0; attempt < 100 && !locked; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (!Eventually([&] { return std::atoi(ClusterValue(b, "hot_refs").c_str()) >= 1; })) break;
      if (ExecValue(y, "BEGIN") != "BEGIN" || ExecValue(y, update) != "UPDATE 1") break;
      locked = Locks(key, true) == 1;
      ExecValue(y, "ROLLBACK");
    }
    PQfinish(y);
    return locked;
  }
  bool fold_ = true;     // cluster_fold_unlock of the proxies started
  bool replay_ = false;  // their replay key
  bool table_locks_ = false;  // their cluster_lock: table (stripes) instead of advisory
  std::string Update(int k) { return absl::StrCat("UPDATE ", table_, " SET v = v + 1 WHERE k = ", k); }

  // Proxy `p` learns a serialization failure on row k: a SERIALIZABLE
  // transaction reads it, the row changes behind it, its update fails.
  void LearnAbort(ProxyUnderTest& p, int k) { proxy::LearnAbort(p.ClientConninfo(), server_conn_, table_, k); }

  // The pg_locks rows of key `key`'s lock: its advisory lock, or
  // (table_locks_) the EXCLUSIVE lock of its stripe table.
  std::string LockRows(int64_t key) {
    const uint64_t u = static_cast<uint64_t>(key);
    if (table_locks_) {
      return absl::StrCat("locktype = 'relation' AND mode = 'ExclusiveLock' AND relation = 'corral.lk_",
                          LockStripe(key),
                          "'::regclass AND database = (SELECT oid FROM pg_database WHERE datname = current_database())");
    }
    return absl::StrCat("locktype = 'advisory' AND classid = ", u >> 32, " AND objid = ", u & 0xffffffffu,
                        " AND objsubid = 1");
  }
  // Those rows "granted" or "waiting": counts.
  int Locks(int64_t key, bool granted) {
    return std::atoi(ExecValue(server_conn_, absl::StrCat("SELECT count(*) FROM pg_locks WHERE ", LockRows(key),
                                                          " AND granted = ", granted ? "true" : "false"))
                         .c_str());
  }

  // The key proxy `id` published for row k's reference (0 when none yet).
  int64_t PublishedKey(const std::string& cluster, const std::string& id) {
    const std::string v = ExecValue(
        server_conn_, absl::StrCat("SELECT ref_hash FROM corral.hot_refs WHERE cluster_name = '", cluster,
                                   "' AND proxy_id = '", id, "' AND ref_hash NOT IN (0, 1) ORDER BY aborts DESC LIMIT 1"));
    return v.empty() || v.rfind("ERROR", 0) == 0 ? 0 : std::strtoll(v.c_str(), nullptr, 10);
  }

  // Two proxies of `cluster` (or with sharing off when cluster is ""); A
  // has learned row 1's abort. Returns the lock key (0 with sharing off).
  int64_t TwoProxies(const std::string& cluster, ProxyUnderTest* a, ProxyUnderTest* b) {
    EXPECT_TRUE(IsOk(a->Start(server_, ClusterOptions(cluster, cluster + "_a"))));
    EXPECT_TRUE(IsOk(b->Start(server_, ClusterOptions(cluster, cluster + "_b"))));
    LearnAbort(*a, 1);
    if (cluster.empty()) return 0;
    int64_t key = 0;
    EXPECT_TRUE(Eventually([&] { return (key = PublishedKey(cluster, cluster + "_a")) != 0; }));
    // B merged A's count; A knows B exists: both lock the reference.
    EXPECT_TRUE(Eventually([&] { return ClusterValue(*b, "hot_refs") == "1"; }));
    EXPECT_TRUE(Eventually([&] { return ClusterValue(*a, "hot_refs") == "1"; }));
    EXPECT_EQ(ClusterValue(*b, "peers"), "1");
    EXPECT_EQ(ClusterValue(*b, "state"), "ok");
    return key;
  }

  // Two proxies of `cluster` with restart on a hot key; A learned row 1's
  // abort, B row 2's; key[1], key[2]: the keys they published.
  void TwoRestartProxies(const std::string& cluster, ProxyUnderTest* a, ProxyUnderTest* b, int64_t key[3]) {
    Options oa = ClusterOptions(cluster, cluster + "_a"), ob = ClusterOptions(cluster, cluster + "_b");
    oa.restart_on_hot_key = ob.restart_on_hot_key = true;
    ASSERT_TRUE(IsOk(a->Start(server_, oa)));
    ASSERT_TRUE(IsOk(b->Start(server_, ob)));
    LearnAbort(*a, 1);
    LearnAbort(*b, 2);
    ASSERT_TRUE(Eventually([&] { return (key[1] = PublishedKey(cluster, cluster + "_a")) != 0; }));
    ASSERT_TRUE(Eventually([&] { return (key[2] = PublishedKey(cluster, cluster + "_b")) != 0; }));
  }

  // Rows 1 and 2 hold `updates` committed increments each, and neither
  // key[1] nor key[2] is held or waited for on the server or by A or B.
  void ExpectRowsAndNoKeyLeft(const int updates[3], const int64_t key[3], ProxyUnderTest& a, ProxyUnderTest& b) {
    for (int row : {1, 2}) {
      EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", row)),
                absl::StrCat(updates[row]));
    }
    EXPECT_TRUE(Eventually([&] {
      return Locks(key[1], true) + Locks(key[2], true) + Locks(key[1], false) + Locks(key[2], false) == 0 &&
             a.proxy().stats().cluster_locks_held.load() == 0 && b.proxy().stats().cluster_locks_held.load() == 0;
    }));
  }

  // A cluster of two proxies, A having learned row 1's abort; Y (via B)
  // updates row 1 in an open transaction, holding row 1's key.
  struct Held {
    ProxyUnderTest a, b;
    int64_t key = 0;
    PGconn* y = nullptr;
  };
  void HoldHotRow(Held* h) {
    h->key = TwoProxies(PgUniqueName("cl"), &h->a, &h->b);
    ASSERT_NE(h->key, 0);
    h->y = PQconnectdb(h->b.ClientConninfo().c_str());
    // A sync round that a loaded machine delays past its timeout (or a
    // peer row past its staleness) drops B to local learning for that
    // round, and a transaction routed then takes no lock (the documented
    // fallback): try again once B sees the reference hot again.
    for (int attempt = 0; attempt < 20; ++attempt) {
      ASSERT_TRUE(Eventually([&] { return ClusterValue(h->b, "hot_refs") == "1"; }));
      ASSERT_EQ(ExecValue(h->y, "BEGIN"), "BEGIN");
      ASSERT_EQ(ExecValue(h->y, Update(1)), "UPDATE 1");
      if (Locks(h->key, true) == 1) return;
      ASSERT_EQ(ExecValue(h->y, "ROLLBACK"), "ROLLBACK");
    }
    // What B saw, so that a failure says which step did not happen.
    const Stats& s = h->b.proxy().stats();
    FAIL() << "B never took row 1's key in 20 hot transactions: B's cluster state "
           << ClusterValue(h->b, "state") << ", peers " << ClusterValue(h->b, "peers") << ", hot_refs "
           << ClusterValue(h->b, "hot_refs") << ", shared_refs " << ClusterValue(h->b, "shared_refs")
           << "; lock txns " << s.cluster_lock_txns.load() << ", locks held " << s.cluster_locks_held.load()
           << ", sync failures " << s.cluster_sync_failures.load() << "; key " << h->key << " granted "
           << Locks(h->key, true) << ", waiting " << Locks(h->key, false);
  }

  // Y (holding no key) opens a transaction that updates row 1: its
  // backend holds `key`.
  void HotTxn(PGconn* y, int64_t key) {
    ASSERT_EQ(ExecValue(y, "BEGIN"), "BEGIN");
    ASSERT_EQ(ExecValue(y, Update(1)), "UPDATE 1");
    EXPECT_EQ(Locks(key, true), 1);
  }
  // `key` is released on the server and by the proxy of `s`.
  void ExpectFreed(int64_t key, const Stats& s) {
    EXPECT_TRUE(Eventually([&] { return Locks(key, true) == 0 && s.cluster_locks_held.load() == 0; }));
  }

  // A client dies without a Terminate message.
  static void Kill(PGconn* c) {
    ::shutdown(PQsocket(c), SHUT_RDWR);
    PQfinish(c);
  }

  // Y (via B) updates row 1 and keeps its transaction open; Z (via A) then
  // updates row 1 too; Y commits. Returns Z's update's outcome.
  std::string Race(ProxyUnderTest& a, ProxyUnderTest& b, int64_t key) {
    PGconn* y = PQconnectdb(b.ClientConninfo().c_str());
    PGconn* z = PQconnectdb(a.ClientConninfo().c_str());
    EXPECT_EQ(ExecValue(y, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
    EXPECT_EQ(ExecValue(y, Update(1)), "UPDATE 1");
    if (key != 0) EXPECT_EQ(Locks(key, true), 1);  // Y's backend took it before BEGIN
    EXPECT_EQ(ExecValue(z, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
    EXPECT_EQ(PQsendQuery(z, Update(1).c_str()), 1);
    if (key != 0) {
      // Z's backend waits for the lock: its snapshot is not taken yet.
      EXPECT_TRUE(Eventually([&] { return Locks(key, false) == 1; }));
    } else {
      // Z's update waits for Y's row lock, snapshot taken.
      EXPECT_TRUE(Eventually([&] {
        return ExecValue(server_conn_, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                       "AND query LIKE 'UPDATE " + table_ + "%'") == "1";
      }));
    }
    EXPECT_EQ(ExecValue(y, "COMMIT"), "COMMIT");
    const std::string z_result = PendingResult(z);
    if (z_result == "UPDATE 1") {
      EXPECT_EQ(ExecValue(z, "COMMIT"), "COMMIT");
    } else {
      ExecValue(z, "ROLLBACK");
    }
    PQfinish(y);
    PQfinish(z);
    if (key != 0) EXPECT_TRUE(Eventually([&] { return Locks(key, true) == 0 && Locks(key, false) == 0; }));
    return z_result;
  }
};

// Each `text` loaded as a config file: ok or not (a bad value names `key`),
// and the value `get` reads from the Options then.
inline void ExpectIntKey(const std::string& key, const std::vector<std::tuple<std::string, bool, int>>& cases,
                  const std::function<int(const Options&)>& get) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(tmp ? tmp : "/tmp", "/", PgUniqueName("corral_cluster_key"), ".ini");
  for (const auto& [text, ok, value] : cases) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
    Options o;
    const absl::Status st = LoadConfigFile(path, &o);
    EXPECT_EQ(st.ok(), ok) << text;
    if (!ok) EXPECT_TRUE(absl::StrContains(st.message(), key)) << st.message();
    EXPECT_EQ(get(o), value) << text;
  }
  std::remove(path.c_str());
}

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_TESTS_PROXY_CLUSTER_FIXTURE_H_
