// Operating `corral proxy` (issue 26): back-pressure for a slow client
// reading a large result, and graceful operations (Drain / Pause / Resume
// through the Proxy API, the admin console's PAUSE / RESUME / SHUTDOWN).
// Needs the PostgreSQL test server (CORRAL_PG_CONNINFO); skipped without it.
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "adapters/proxy/wire.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

class ProxyOpsTest : public ScratchTableTest {};

// A client that reads a 200 MB result slowly: the proxy buffers at most the
// bound (plus the frame that crossed it) for it, and the result arrives
// whole and correct.
TEST_F(ProxyOpsTest, SlowClientLargeResultStaysBounded) {
  Options o;
  o.pool_size = 1;
  o.client_output_limit_bytes = 1u << 20;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  // A small receive window: the proxy sees the slowness.
  const int fd = ConnectLoopback(proxy_.port(), 64 * 1024);
  ASSERT_GE(fd, 0);
  std::string pkt = StartupPacket(server_.user, server_.dbname);
  absl::StrAppend(&pkt, RawClient::Query("SELECT repeat('x', 1000) FROM generate_series(1, 200000)"));
  ASSERT_EQ(::send(fd, pkt.data(), pkt.size(), MSG_NOSIGNAL), static_cast<ssize_t>(pkt.size()));
  // Read 64 KiB every 1 ms at most, parsing as we go.
  std::string buf;
  int64_t rows = 0, bad_rows = 0, ready = 0, total = 0;
  std::string tag;
  std::vector<char> chunk(64 * 1024);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (ready < 2 && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    ssize_t n = ::recv(fd, chunk.data(), chunk.size(), 0);
    ASSERT_GT(n, 0) << "the proxy closed the connection";
    total += n;
    buf.append(chunk.data(), n);
    size_t off = 0;
    while (buf.size() - off >= 5) {
      const int32_t len = wire::GetInt32(buf.data() + off + 1);
      if (buf.size() - off < static_cast<size_t>(len) + 1) break;
      const char type = buf[off];
      absl::string_view body(buf.data() + off + 5, len - 4);
      if (type == 'D') {
        ++rows;
        // One column: int16 count, int32 length, the text.
        if (body.size() != 2 + 4 + 1000 || body.substr(6) != std::string(1000, 'x')) ++bad_rows;
      } else if (type == 'C') {
        tag = std::string(body.substr(0, body.size() - 1));
      } else if (type == 'Z') {
        ++ready;  // the login's, then the query's
      }
      off += len + 1;
    }
    buf.erase(0, off);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::close(fd);
  EXPECT_EQ(ready, 2);
  EXPECT_EQ(rows, 200000);
  EXPECT_EQ(bad_rows, 0);
  EXPECT_EQ(tag, "SELECT 200000");
  EXPECT_GT(total, 200000 * 1000);
  const Stats& s = proxy_.proxy().stats();
  EXPECT_GT(s.backpressure_pauses.load(), 0);
  // The bound plus one DataRow (the frame that crossed it).
  EXPECT_LE(s.client_output_peak_bytes.load(), static_cast<int64_t>(o.client_output_limit_bytes) + 2048);
  EXPECT_GE(s.client_output_peak_bytes.load(), static_cast<int64_t>(o.client_output_limit_bytes));
  std::printf("peak client output %lld bytes, %lld pauses\n",
              static_cast<long long>(s.client_output_peak_bytes.load()),
              static_cast<long long>(s.backpressure_pauses.load()));
}

// Waits (bounded) until `done` holds; false if it never did.
template <typename F>
bool WaitFor(F done, int seconds = 20) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Waits (bounded) until the server has sent `c` something (or closed it).
bool Readable(PGconn* c) {
  pollfd p{PQsocket(c), POLLIN, 0};
  return ::poll(&p, 1, 20000) > 0;
}

std::string ResultOf(PGconn* c) {
  std::string out;
  while (PGresult* r = PQgetResult(c)) {
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
    if (PQresultStatus(r) == PGRES_FATAL_ERROR) {
      // libpq keeps a FATAL's text but not always its fields once the
      // connection closed after it.
      const char* st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
      const std::string msg = PQresultErrorMessage(r);
      const bool shutdown = msg.find("terminating connection due to administrator command") != std::string::npos;
      out = std::string("ERROR ") + (st ? st : shutdown ? "57P01" : "(none)");
    }
    PQclear(r);
  }
  return out;
}

// PAUSE (PgBouncer's): a running transaction finishes, the admin's PAUSE is
// answered after it, a new transaction waits until RESUME.
TEST_F(ProxyOpsTest, PauseLetsRunningTransactionsFinishAndHoldsNewOnes) {
  Options o;
  o.pool_size = 1;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  PGconn* a = PQconnectdb(proxy_.ClientConninfo().c_str());
  PGconn* b = PQconnectdb(proxy_.ClientConninfo().c_str());
  ASSERT_EQ(PQstatus(a), CONNECTION_OK);
  ASSERT_EQ(PQstatus(b), CONNECTION_OK);
  ASSERT_EQ(ExecValue(a, "BEGIN"), "BEGIN");
  ASSERT_EQ(ExecValue(a, absl::StrCat("UPDATE ", table_, " SET v = 3 WHERE k = 3")), "UPDATE 1");
  RawClient admin;
  ASSERT_TRUE(admin.Connect(proxy_.port(), server_.user, "corral").ok());
  ASSERT_TRUE(admin.SendRaw(RawClient::Query("PAUSE")).ok());
  ASSERT_EQ(PQsendQuery(b, "SELECT 42"), 1);
  // a's transaction holds the backend: the pause cannot be complete.
  EXPECT_FALSE(proxy_.proxy().paused());
  ASSERT_EQ(ExecValue(a, "COMMIT"), "COMMIT");
  std::vector<RawMessage> msgs;
  ASSERT_TRUE(admin.ReadUntilReady(&msgs, 20000).ok());
  ASSERT_EQ(msgs.front().type, 'C');
  EXPECT_EQ(msgs.front().body, std::string("PAUSE\0", 6));
  EXPECT_TRUE(proxy_.proxy().paused());
  // b's transaction waits while paused.
  ASSERT_EQ(PQconsumeInput(b), 1);
  EXPECT_EQ(PQisBusy(b), 1);
  ASSERT_TRUE(admin.SendRaw(RawClient::Query("RESUME")).ok());
  msgs.clear();
  ASSERT_TRUE(admin.ReadUntilReady(&msgs).ok());
  EXPECT_EQ(msgs.front().body, std::string("RESUME\0", 7));
  EXPECT_EQ(ResultOf(b), "42");
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 3")), "3");
  // The API does the same.
  proxy_.proxy().Pause();
  ASSERT_TRUE(WaitFor([&] { return proxy_.proxy().paused(); }));
  ASSERT_EQ(PQsendQuery(b, "SELECT 43"), 1);
  proxy_.proxy().Resume();
  EXPECT_EQ(ResultOf(b), "43");
  PQfinish(a);
  PQfinish(b);
}

// Drain (SIGTERM): the running transaction commits, an idle client and a
// queued transaction are told 57P01, the listener closes, the loop ends.
TEST_F(ProxyOpsTest, DrainFinishesRunningTransactionsAndRefusesNewOnes) {
  Options o;
  o.pool_size = 1;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  PGconn* a = PQconnectdb(proxy_.ClientConninfo().c_str());
  PGconn* idle = PQconnectdb(proxy_.ClientConninfo().c_str());
  RawClient queued;  // raw: every message visible
  ASSERT_TRUE(queued.Connect(proxy_.port(), server_.user, server_.dbname).ok());
  ASSERT_EQ(ExecValue(a, "BEGIN"), "BEGIN");
  ASSERT_EQ(ExecValue(a, absl::StrCat("UPDATE ", table_, " SET v = 5 WHERE k = 2")), "UPDATE 1");
  ASSERT_TRUE(queued.SendRaw(RawClient::Query("SELECT 7")).ok());  // waits for a's backend
  ASSERT_TRUE(WaitFor([&] { return proxy_.proxy().stats().queue_waits.load() > 0; }));
  proxy_.proxy().Drain();
  ASSERT_TRUE(Readable(idle));  // the drain has begun: told 57P01
  PQconsumeInput(idle);
  EXPECT_NE(ExecValue(idle, "SELECT 1"), "1");
  EXPECT_EQ(PQstatus(idle), CONNECTION_BAD);
  RawMessage m;
  ASSERT_TRUE(queued.Read(&m, 20000).ok());
  EXPECT_EQ(m.type, 'E');
  EXPECT_EQ(wire::ErrorSqlState(m.body), "57P01");
  EXPECT_TRUE(queued.ClosedWithin(20000));
  EXPECT_FALSE(proxy_.proxy().finished());  // a's transaction is running
  EXPECT_EQ(ExecValue(a, "COMMIT"), "COMMIT");
  ASSERT_TRUE(WaitFor([&] { return proxy_.proxy().finished(); }));
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 2")), "5");
  PGconn* late = PQconnectdb(proxy_.ClientConninfo().c_str());
  EXPECT_NE(PQstatus(late), CONNECTION_OK);
  PQfinish(late);
  PQfinish(a);
  PQfinish(idle);
}

TEST_F(ProxyOpsTest, AdminShutdownEndsTheLoop) {
  Options o;
  o.pool_size = 1;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  RawClient admin;
  ASSERT_TRUE(admin.Connect(proxy_.port(), server_.user, "corral").ok());
  ASSERT_TRUE(admin.SendRaw(RawClient::Query("SHUTDOWN")).ok());
  EXPECT_TRUE(WaitFor([&] { return proxy_.proxy().finished(); }));
}

// A real `corral proxy` process gets SIGTERM mid-transaction: the
// transaction commits and the process exits 0.
TEST_F(ProxyOpsTest, SigtermCommitsTheRunningTransactionAndExitsZero) {
  const std::string server = absl::StrCat("--server=host=", server_.host, " port=", server_.port,
                                          " user=", server_.user, " dbname=", server_.dbname);
  CorralProcess proc = SpawnCorralProxy({server, "--listen_port=0", "--pool_size=1"});
  const pid_t pid = proc.pid;
  const int port = proc.port;
  ASSERT_GT(pid, 0);
  ASSERT_GT(port, 0) << proc.log;
  const std::string conninfo = absl::StrCat("host=127.0.0.1 port=", port, " user=", server_.user,
                                            " dbname=", server_.dbname, " connect_timeout=5");
  PGconn* a = PQconnectdb(conninfo.c_str());
  ASSERT_EQ(PQstatus(a), CONNECTION_OK) << PQerrorMessage(a);
  EXPECT_EQ(ExecValue(a, "BEGIN"), "BEGIN");
  EXPECT_EQ(ExecValue(a, absl::StrCat("UPDATE ", table_, " SET v = 9 WHERE k = 4")), "UPDATE 1");
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  // Once new clients are refused the drain is on; the transaction goes on.
  EXPECT_TRUE(WaitFor([&] {
    PGconn* late = PQconnectdb(conninfo.c_str());
    const bool refused = PQstatus(late) != CONNECTION_OK;
    PQfinish(late);
    return refused;
  }));
  EXPECT_EQ(ExecValue(a, "COMMIT"), "COMMIT");
  int status = -1;
  const bool exited = WaitFor([&] { return ::waitpid(pid, &status, WNOHANG) == pid; });
  if (!exited) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  EXPECT_TRUE(exited);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 4")), "9");
  PQfinish(a);
  ::close(proc.err_fd);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
