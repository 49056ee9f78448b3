// Helpers for the proxy's end-to-end tests: the server from
// CORRAL_PG_CONNINFO, an in-process proxy on an ephemeral loopback port, and
// a raw v3 protocol client for what libpq cannot send (row limits, malformed
// messages).
//
//   ProxyUnderTest p;
//   ASSERT_TRUE(p.Start(2).ok());
//   PGconn* c = PQconnectdb(p.ClientConninfo().c_str());
//   RawClient raw;
//   ASSERT_TRUE(raw.Connect(p.port()).ok());
//
// Thread-compatible test helpers.
#ifndef CORRAL_TESTS_PROXY_PROXY_TEST_UTIL_H_
#define CORRAL_TESTS_PROXY_PROXY_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "adapters/proxy/proxy.h"

namespace corral {
namespace proxy {

struct ServerInfo {
  std::string conninfo;  // as given
  std::string host, user, dbname;
  int port = 0;
};
// False (with *why) when there is no server.
bool TestServer(ServerInfo* info, std::string* why);

// Runs a shell command; returns its exit status and stdout+stderr in *out.
int Shell(const std::string& cmd, std::string* out);

class ProxyUnderTest {
 public:
  ~ProxyUnderTest() { Stop(); }
  absl::Status Start(const ServerInfo& server, Options o);
  void Stop();
  int port() const { return proxy_ ? proxy_->port() : 0; }
  Proxy& proxy() { return *proxy_; }
  std::string ClientConninfo(const std::string& dbname = "") const;

 private:
  ServerInfo server_;
  std::unique_ptr<Proxy> proxy_;
};

struct RawMessage {
  char type = 0;
  std::string body;
};

// A blocking v3 client on a raw socket.
class RawClient {
 public:
  ~RawClient();
  // Connects and logs in (trust); reads up to the first ReadyForQuery.
  absl::Status Connect(int port, const std::string& user, const std::string& dbname);
  absl::Status SendRaw(const std::string& bytes);
  // Reads one message; Unavailable on EOF, DeadlineExceeded after timeout_ms.
  absl::Status Read(RawMessage* m, int timeout_ms = 5000);
  // Reads messages up to and including ReadyForQuery.
  absl::Status ReadUntilReady(std::vector<RawMessage>* out, int timeout_ms = 5000);
  // True when the server closed the connection (EOF within timeout_ms).
  bool ClosedWithin(int timeout_ms);

  static std::string Parse(const std::string& name, const std::string& sql);
  static std::string Bind(const std::string& portal, const std::string& stmt,
                          const std::vector<std::string>& text_params);
  static std::string Execute(const std::string& portal, int max_rows);
  static std::string Sync();
  static std::string Flush();
  static std::string Query(const std::string& sql);

 private:
  int fd_ = -1;
  std::string buf_;
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_TESTS_PROXY_PROXY_TEST_UTIL_H_
