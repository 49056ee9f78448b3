// Workers (issue 25: a proxy that uses more than one core), end to end
// against the test server: `workers = 2` runs two event loops on one
// SO_REUSEPORT port. Clients land on both loops and are all served; the
// admin console shows the whole process; a hot row updated from clients on
// both loops under SERIALIZABLE is serialized by the in-process key table
// (cross-loop waits counted, no serialization failures, right total); a
// client that leaves while holding or waiting for a key leaves it free.
// Waits poll with a generous bound; nothing asserts a rate or a time.
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libpq-fe.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

class WorkersTest : public ScratchTableTest {
 protected:
  Options WorkerOptions() {
    Options o;
    o.workers = 2;
    o.pool_size = 4;
    o.max_client_conn = 200;
    o.history_half_life_s = 0;     // what was learned stays
    o.worker_lock_threshold = 1;  // one learned abort makes a reference hot
    return o;
  }
  std::string Update(int k) { return absl::StrCat("UPDATE ", table_, " SET v = v + 1 WHERE k = ", k); }
  int64_t Value(int k) {
    return std::atoll(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", k)).c_str());
  }
  // The proxy learns a serialization failure on row k (v = 1 after).
  void LearnAbort(int k) { proxy::LearnAbort(proxy_.ClientConninfo(), server_conn_, table_, k); }
  // A client of the proxy that landed on worker `w` (connections on the
  // other worker are closed and tried again).
  PGconn* ConnectTo(int w, const std::string& dbname = "") {
    for (int attempt = 0; attempt < 200; ++attempt) {
      const int64_t before = proxy_.proxy().worker_stats()[w].accepted;
      PGconn* c = PQconnectdb(proxy_.ClientConninfo(dbname).c_str());
      if (PQstatus(c) == CONNECTION_OK && proxy_.proxy().worker_stats()[w].accepted > before) return c;
      PQfinish(c);
    }
    return nullptr;
  }
  // The admin console's SHOW `what` rows (all columns), on a new admin
  // connection or on `a`; *columns gets the column names.
  std::vector<std::vector<std::string>> Show(const std::string& what, PGconn* on = nullptr,
                                             std::vector<std::string>* columns = nullptr) {
    std::vector<std::vector<std::string>> rows;
    PGconn* a = on != nullptr ? on : PQconnectdb(proxy_.ClientConninfo("corral").c_str());
    PGresult* r = PQexec(a, ("SHOW " + what).c_str());
    if (PQresultStatus(r) == PGRES_TUPLES_OK) {
      for (int j = 0; columns != nullptr && j < PQnfields(r); ++j) columns->push_back(PQfname(r, j));
      for (int i = 0; i < PQntuples(r); ++i) {
        std::vector<std::string> row;
        for (int j = 0; j < PQnfields(r); ++j) row.push_back(PQgetvalue(r, i, j));
        rows.push_back(row);
      }
    }
    PQclear(r);
    if (on == nullptr) PQfinish(a);
    return rows;
  }
  std::string Stat(const std::string& name) {
    for (const auto& r : Show("STATS")) {
      if (r.size() == 2 && r[0] == name) return r[1];
    }
    return "";
  }
};

// Waits for c's query sent with PQsendQuery; false when it does not finish
// within 10 s.
bool Finishes(PGconn* c) {
  return Eventually([c] {
    PQconsumeInput(c);
    return PQisBusy(c) == 0;
  });
}

TEST_F(WorkersTest, ClientsSpreadOverBothWorkersAndAdminShowsTheProcess) {
  ASSERT_TRUE(IsOk(proxy_.Start(server_, WorkerOptions())));
  ASSERT_EQ(proxy_.proxy().worker_stats().size(), 2u);
  // More clients than the kernel would put on one listener by chance.
  std::vector<PGconn*> conns;
  for (int i = 0; i < 40; ++i) {
    PGconn* c = PQconnectdb(proxy_.ClientConninfo().c_str());
    ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
    conns.push_back(c);
  }
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < conns.size(); ++i) {
      ASSERT_EQ(ExecValue(conns[i], Update(static_cast<int>(i % 10) + 1)), "UPDATE 1");
    }
  }
  int64_t sum = 0;
  for (int k = 1; k <= 10; ++k) sum += Value(k);
  EXPECT_EQ(sum, 120);
  const auto ws = proxy_.proxy().worker_stats();
  EXPECT_GT(ws[0].accepted, 0);
  EXPECT_GT(ws[1].accepted, 0);
  EXPECT_GT(ws[0].transactions, 0);
  EXPECT_GT(ws[1].transactions, 0);
  EXPECT_EQ(ws[0].clients + ws[1].clients, 40);
  // SHOW STATS is the whole process's: its transactions are both loops'.
  EXPECT_EQ(Stat("transactions"), std::to_string(ws[0].transactions + ws[1].transactions));
  EXPECT_EQ(Stat("commits"), "120");
  // Clients of both loops, and the admin client itself (earlier admin
  // connections leave asynchronously).
  EXPECT_TRUE(Eventually([&] { return Stat("clients") == "41"; }));
  // SHOW WORKERS: one row per loop; SHOW POOLS: both loops' pools (the
  // other loop's as of its last publish), two backends each.
  const auto workers = Show("WORKERS");
  ASSERT_EQ(workers.size(), 2u);
  EXPECT_EQ(workers[0][0], "0");
  EXPECT_EQ(workers[1][0], "1");
  EXPECT_TRUE(Eventually([&] {
    const auto pools = Show("POOLS");
    int64_t servers = 0, txns = 0;
    bool w0 = false, w1 = false;
    for (const auto& r : pools) {  // worker, database, user, cl_active, cl_waiting, cl_idle, sv_active, sv_idle, sv_down, transactions
      if (r.size() != 10) return false;
      w0 |= r[0] == "0";
      w1 |= r[0] == "1";
      servers += std::atoll(r[6].c_str()) + std::atoll(r[7].c_str());
      txns += std::atoll(r[9].c_str());
    }
    return w0 && w1 && servers == 4 && txns >= 120;
  }));
  for (PGconn* c : conns) PQfinish(c);
  EXPECT_TRUE(Eventually([&] {
    const auto w = proxy_.proxy().worker_stats();
    return w[0].clients + w[1].clients == 0;
  }));
}

TEST_F(WorkersTest, HotRowSerializedAcrossWorkers) {
  ASSERT_TRUE(IsOk(proxy_.Start(server_, WorkerOptions())));
  LearnAbort(1);  // row 1 is hot: every transaction on it takes its key
  const int kClients = 16, kTxns = 25;
  std::atomic<int> retries{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&] {
      PGconn* c = PQconnectdb(proxy_.ClientConninfo().c_str());
      if (PQstatus(c) != CONNECTION_OK) {
        failures++;
        PQfinish(c);
        return;
      }
      for (int i = 0; i < kTxns; ++i) {
        for (int attempt = 0;; ++attempt) {
          if (attempt > 50) {
            failures++;
            break;
          }
          ExecValue(c, "BEGIN ISOLATION LEVEL SERIALIZABLE");
          const std::string read = ExecValue(c, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 1"));
          const std::string upd = read.rfind("ERROR", 0) == 0 ? read : ExecValue(c, Update(1));
          const std::string end = upd.rfind("ERROR", 0) == 0 ? (ExecValue(c, "ROLLBACK"), upd) : ExecValue(c, "COMMIT");
          if (end == "COMMIT") break;
          if (end != "ERROR 40001" && end != "ERROR 40P01") {
            failures++;
            break;
          }
          retries++;
        }
      }
      PQfinish(c);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Value(1), 1 + kClients * kTxns);  // LearnAbort's own update, then every client's
  const auto ws = proxy_.proxy().worker_stats();
  EXPECT_GT(ws[0].accepted, 0);
  EXPECT_GT(ws[1].accepted, 0);
  // The key table serialized them: transactions on both loops waited for
  // each other, and none ran beside another on the row.
  const Stats& s = proxy_.proxy().stats();
  EXPECT_GE(s.worker_key_txns.load(), kClients * kTxns);
  EXPECT_GT(s.worker_key_cross_waits.load(), 0);
  EXPECT_EQ(retries.load(), 0);
  EXPECT_EQ(ws[0].cross_waits + ws[1].cross_waits, s.worker_key_cross_waits.load());
}

TEST_F(WorkersTest, ClientThatLeavesFreesItsKey) {
  ASSERT_TRUE(IsOk(proxy_.Start(server_, WorkerOptions())));
  LearnAbort(2);
  PGconn* holder = ConnectTo(0);
  PGconn* waiter = ConnectTo(1);
  PGconn* next = ConnectTo(1);
  ASSERT_NE(holder, nullptr);
  ASSERT_NE(waiter, nullptr);
  ASSERT_NE(next, nullptr);
  // The holder (worker 0) takes row 2's key and keeps its transaction open.
  ASSERT_EQ(ExecValue(holder, "BEGIN"), "BEGIN");
  ASSERT_EQ(ExecValue(holder, Update(2)), "UPDATE 1");
  // Two clients of worker 1 wait for it, before anything reaches the server.
  ASSERT_EQ(ExecValue(waiter, "BEGIN"), "BEGIN");
  ASSERT_EQ(PQsendQuery(waiter, Update(2).c_str()), 1);
  const Stats& s = proxy_.proxy().stats();
  ASSERT_TRUE(Eventually([&] { return s.worker_key_cross_waits.load() >= 1; }));
  ASSERT_EQ(ExecValue(next, "BEGIN"), "BEGIN");
  ASSERT_EQ(PQsendQuery(next, Update(2).c_str()), 1);
  ASSERT_TRUE(Eventually([&] { return s.worker_key_cross_waits.load() >= 2; }));
  // The first waiter leaves while waiting; the holder leaves while holding
  // (its transaction is rolled back): the second waiter runs.
  PQfinish(waiter);
  PQfinish(holder);
  ASSERT_TRUE(Finishes(next));
  EXPECT_EQ(Collect(next), "UPDATE 1");
  EXPECT_EQ(ExecValue(next, "COMMIT"), "COMMIT");
  // Nothing is left holding the key: a later transaction on either worker
  // runs at once.
  for (int w = 0; w < 2; ++w) {
    PGconn* later = ConnectTo(w);
    ASSERT_NE(later, nullptr);
    ASSERT_EQ(PQsendQuery(later, Update(2).c_str()), 1);
    ASSERT_TRUE(Finishes(later));
    EXPECT_EQ(Collect(later), "UPDATE 1");
    PQfinish(later);
  }
  PQfinish(next);
  EXPECT_EQ(Value(2), 1 + 1 + 2);  // LearnAbort's, next's, the two later ones (the holder's rolled back)
}

// query_wait_timeout covers a wait for a key: the waiter is told and
// closed, the holder goes on, and the key is free once the holder commits.
TEST_F(WorkersTest, KeyWaitTimesOut) {
  Options o = WorkerOptions();
  o.query_wait_timeout_ms = 300;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  LearnAbort(3);
  PGconn* holder = ConnectTo(0);
  PGconn* waiter = ConnectTo(1);
  ASSERT_NE(holder, nullptr);
  ASSERT_NE(waiter, nullptr);
  ASSERT_EQ(ExecValue(holder, "BEGIN"), "BEGIN");
  ASSERT_EQ(ExecValue(holder, Update(3)), "UPDATE 1");
  ASSERT_EQ(PQsendQuery(waiter, Update(3).c_str()), 1);
  ASSERT_TRUE(Finishes(waiter));
  Collect(waiter);
  EXPECT_TRUE(absl::StrContains(PQerrorMessage(waiter), "query_wait_timeout")) << PQerrorMessage(waiter);
  EXPECT_EQ(proxy_.proxy().stats().wait_timeouts.load(), 1);
  EXPECT_EQ(ExecValue(holder, "COMMIT"), "COMMIT");
  EXPECT_EQ(ExecValue(holder, Update(3)), "UPDATE 1");
  PQfinish(waiter);
  PQfinish(holder);
  EXPECT_EQ(Value(3), 3);
}

// The admin console's PAUSE / RESUME and the Proxy's Drain reach every
// loop, whichever one the admin client or the caller talks to.
TEST_F(WorkersTest, PauseResumeAndDrainReachEveryLoop) {
  ASSERT_TRUE(IsOk(proxy_.Start(server_, WorkerOptions())));
  PGconn* c[2] = {ConnectTo(0), ConnectTo(1)};
  ASSERT_NE(c[0], nullptr);
  ASSERT_NE(c[1], nullptr);
  PGconn* admin = PQconnectdb(proxy_.ClientConninfo("corral").c_str());
  ASSERT_EQ(PQstatus(admin), CONNECTION_OK);
  EXPECT_EQ(ExecValue(admin, "PAUSE"), "PAUSE");
  EXPECT_TRUE(Eventually([&] { return proxy_.proxy().paused(); }));  // both loops paused
  for (PGconn* x : c) ASSERT_EQ(PQsendQuery(x, Update(4).c_str()), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (PGconn* x : c) {
    PQconsumeInput(x);
    EXPECT_EQ(PQisBusy(x), 1);  // held on either loop
  }
  EXPECT_EQ(ExecValue(admin, "RESUME"), "RESUME");
  for (PGconn* x : c) {
    ASSERT_TRUE(Finishes(x));
    EXPECT_EQ(Collect(x), "UPDATE 1");
  }
  PQfinish(admin);
  proxy_.proxy().Drain();
  EXPECT_TRUE(Eventually([&] { return proxy_.proxy().finished(); }));  // every loop ended
  for (PGconn* x : c) PQfinish(x);
  EXPECT_EQ(Value(4), 2);
}

// Every per-loop SHOW view answers for the whole process on either loop:
// an admin client on worker 0 and one on worker 1 each see rows of both
// loops, told apart by the worker column.
TEST_F(WorkersTest, EveryShowViewListsBothLoopsOnEitherLoop) {
  Options o = WorkerOptions();
  o.templates = true;             // SHOW TEMPLATES has rows once learned
  o.template_concurrency = true;  // SHOW TEMPLATE_CAPS has rows once a shape ended
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  PGconn* c[2] = {ConnectTo(0), ConnectTo(1)};
  ASSERT_NE(c[0], nullptr);
  ASSERT_NE(c[1], nullptr);
  // A two-statement transaction shape, several times on each loop.
  for (int i = 0; i < 8; ++i) {
    for (PGconn* x : c) {
      ASSERT_EQ(ExecValue(x, "BEGIN"), "BEGIN");
      ASSERT_EQ(ExecValue(x, Update(6)), "UPDATE 1");
      ASSERT_EQ(ExecValue(x, Update(7)), "UPDATE 1");
      ASSERT_EQ(ExecValue(x, "COMMIT"), "COMMIT");
    }
  }
  PGconn* admin[2] = {ConnectTo(0, "corral"), ConnectTo(1, "corral")};
  ASSERT_NE(admin[0], nullptr);
  ASSERT_NE(admin[1], nullptr);
  for (int w = 0; w < 2; ++w) {
    for (const char* view : {"QUEUES", "CLIENTS", "DATABASES", "POOLS", "USERS", "TEMPLATES", "TEMPLATE_CAPS"}) {
      std::vector<std::string> cols;
      std::set<std::string> workers;
      const bool both = Eventually([&] {
        cols.clear();
        workers.clear();
        for (const auto& r : Show(view, admin[w], &cols)) {
          if (!r.empty()) workers.insert(r[0]);
        }
        return workers == std::set<std::string>{"0", "1"};
      });
      EXPECT_TRUE(both) << "SHOW " << view << " on worker " << w << ": workers " << absl::StrJoin(workers, ",");
      ASSERT_FALSE(cols.empty()) << view;
      EXPECT_EQ(cols[0], "worker") << view;
    }
    // SHOW CLIENTS: both loops' clients and admin clients, each on its loop
    // (connections ConnectTo closed leave asynchronously, and the other
    // loop's rows are up to 200 ms old).
    std::vector<std::string> cols;
    Show("CLIENTS", admin[w], &cols);
    ASSERT_EQ(cols, (std::vector<std::string>{"worker", "id", "user", "database", "state", "queue", "transactions"}));
    EXPECT_TRUE(Eventually([&] {
      int admins[2] = {0, 0}, idle[2] = {0, 0};
      for (const auto& r : Show("CLIENTS", admin[w])) {
        const int rw = std::atoi(r[0].c_str());
        if (rw < 0 || rw > 1) return false;
        if (r[4] == "admin") admins[rw]++;
        if (r[4] == "idle") idle[rw]++;
      }
      return admins[0] == 1 && admins[1] == 1 && idle[0] == 1 && idle[1] == 1;
    })) << "SHOW CLIENTS on worker " << w;
    // SHOW QUEUES: four backends in all (pool_size 4 split over two loops).
    EXPECT_EQ(Show("QUEUES", admin[w]).size(), 4u);
    // SHOW CLUSTER (no cluster here) is answered, with no rows.
    EXPECT_TRUE(Show("CLUSTER", admin[w]).empty());
  }
  for (PGconn* x : admin) PQfinish(x);
  for (PGconn* x : c) PQfinish(x);
}

// PAUSE is answered once no loop runs a transaction: a transaction open on
// the other loop holds the answer until it commits.
TEST_F(WorkersTest, PauseWaitsForTransactionOnTheOtherLoop) {
  ASSERT_TRUE(IsOk(proxy_.Start(server_, WorkerOptions())));
  for (int admin_worker = 0; admin_worker < 2; ++admin_worker) {
    PGconn* c = ConnectTo(1 - admin_worker);
    PGconn* admin = ConnectTo(admin_worker, "corral");
    ASSERT_NE(c, nullptr);
    ASSERT_NE(admin, nullptr);
    ASSERT_EQ(ExecValue(c, "BEGIN"), "BEGIN");
    ASSERT_EQ(ExecValue(c, Update(8)), "UPDATE 1");  // on a backend of the other loop
    ASSERT_EQ(PQsendQuery(admin, "PAUSE"), 1);
    // PAUSE is not answered while that transaction runs.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    PQconsumeInput(admin);
    EXPECT_EQ(PQisBusy(admin), 1);
    EXPECT_FALSE(proxy_.proxy().paused());
    EXPECT_EQ(ExecValue(c, "COMMIT"), "COMMIT");
    ASSERT_TRUE(Finishes(admin));
    EXPECT_EQ(Collect(admin), "PAUSE");
    EXPECT_TRUE(proxy_.proxy().paused());
    EXPECT_EQ(ExecValue(admin, "RESUME"), "RESUME");
    EXPECT_EQ(ExecValue(c, Update(8)), "UPDATE 1");  // runs again
    for (PGconn* x : {c, admin}) PQfinish(x);
  }
  EXPECT_EQ(Value(8), 4);
}

// `corral proxy --workers=2` runs two loops (SHOW WORKERS has a row each);
// a bad --worker_lock_threshold is refused with the key's message.
TEST_F(WorkersTest, CommandLineWorkersFlag) {
  const std::string server = absl::StrCat("--server=host=", server_.host, " port=", server_.port,
                                          " user=", server_.user, " dbname=", server_.dbname);
  CorralProcess p = SpawnCorralProxy({server, "--listen_port=0", "--pool_size=2", "--workers=2",
                                      "--worker_lock_threshold=2.5"});
  ASSERT_GT(p.pid, 0);
  ASSERT_GT(p.port, 0) << p.log;
  EXPECT_TRUE(absl::StrContains(p.log, ", 2 workers")) << p.log;
  const std::string admin = absl::StrCat("host=127.0.0.1 port=", p.port, " user=", server_.user,
                                         " dbname=corral connect_timeout=5");
  PGconn* a = PQconnectdb(admin.c_str());
  EXPECT_EQ(PQstatus(a), CONNECTION_OK) << PQerrorMessage(a);
  EXPECT_EQ(Show("WORKERS", a).size(), 2u);
  PQfinish(a);
  ::kill(p.pid, SIGINT);
  int status = -1;
  ::waitpid(p.pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ::close(p.err_fd);

  CorralProcess bad = SpawnCorralProxy({server, "--listen_port=0", "--workers=2", "--worker_lock_threshold=0"});
  ASSERT_GT(bad.pid, 0);
  EXPECT_EQ(bad.port, 0);
  ::waitpid(bad.pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  EXPECT_TRUE(absl::StrContains(bad.log, "worker_lock_threshold must be a number > 0")) << bad.log;
  ::close(bad.err_fd);
}

// A database made from the "*" entry on both loops shares one Scheduler
// (made by whichever loop came first); a name the server does not know is
// refused on either loop and leaves the known one working.
TEST_F(WorkersTest, FallbackDatabaseOnBothLoops) {
  Options o = WorkerOptions();
  DatabaseEntry main;
  main.name = "main";
  main.dbname = server_.dbname;
  o.databases["main"] = main;
  DatabaseEntry any;
  any.name = "*";
  o.databases["*"] = any;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  for (int round = 0; round < 2; ++round) {
    for (int w = 0; w < 2; ++w) {
      PGconn* c = ConnectTo(w, server_.dbname);  // through "*"
      ASSERT_NE(c, nullptr);
      EXPECT_EQ(ExecValue(c, Update(5)), "UPDATE 1");
      PQfinish(c);
      const std::string bad = PgUniqueName("nodb");
      PGconn* x = PQconnectdb(proxy_.ClientConninfo(bad).c_str());
      EXPECT_NE(PQstatus(x), CONNECTION_OK);
      EXPECT_TRUE(absl::StrContains(PQerrorMessage(x), "does not exist")) << PQerrorMessage(x);
      PQfinish(x);
    }
  }
  EXPECT_EQ(Value(5), 4);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
