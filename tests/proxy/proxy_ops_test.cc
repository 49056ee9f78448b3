// Operating `corral proxy` (issue 26): back-pressure for a slow client
// reading a large result, and graceful operations (Drain / Pause / Resume
// through the Proxy API, the admin console's PAUSE / RESUME / SHUTDOWN).
// Needs the PostgreSQL test server (CORRAL_PG_CONNINFO); skipped without it.
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
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

std::string Exec1(PGconn* c, const std::string& sql) {
  PGresult* r = PQexec(c, sql.c_str());
  std::string out;
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
  if (PQresultStatus(r) == PGRES_COMMAND_OK) out = PQcmdStatus(r);
  if (PQresultStatus(r) == PGRES_FATAL_ERROR) out = std::string("ERROR ") + PQresultErrorField(r, PG_DIAG_SQLSTATE);
  PQclear(r);
  return out;
}

class ProxyOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!TestServer(&server_, &why)) GTEST_SKIP() << why;
    table_ = absl::StrCat("ops_t_", getpid(), "_", std::random_device{}() % 1000000);
    server_conn_ = PQconnectdb(server_.conninfo.c_str());
    Exec1(server_conn_, absl::StrCat("CREATE TABLE ", table_, " (k int PRIMARY KEY, v int NOT NULL)"));
    Exec1(server_conn_, absl::StrCat("INSERT INTO ", table_, " SELECT g, 0 FROM generate_series(1, 10) g"));
  }
  void TearDown() override {
    proxy_.Stop();
    if (server_conn_ != nullptr) {
      Exec1(server_conn_, absl::StrCat("DROP TABLE IF EXISTS ", table_));
      PQfinish(server_conn_);
    }
  }
  ServerInfo server_;
  std::string table_;
  PGconn* server_conn_ = nullptr;
  ProxyUnderTest proxy_;
};

// A client that reads a 200 MB result slowly: the proxy buffers at most the
// bound (plus the frame that crossed it) for it, and the result arrives
// whole and correct.
TEST_F(ProxyOpsTest, SlowClientLargeResultStaysBounded) {
  Options o;
  o.pool_size = 1;
  o.client_output_limit_bytes = 1u << 20;
  ASSERT_TRUE(proxy_.Start(server_, o).ok());
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int rcvbuf = 64 * 1024;  // a small window: the proxy sees the slowness
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(proxy_.port());
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  std::string pkt;
  size_t at = wire::BeginMessage(&pkt, 0);
  wire::PutInt32(&pkt, wire::kProtocol3);
  const std::string z(1, '\0');
  absl::StrAppend(&pkt, "user", z, server_.user, z, "database", z, server_.dbname, z, z);
  wire::EndMessage(&pkt, at);
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

}  // namespace
}  // namespace proxy
}  // namespace corral
