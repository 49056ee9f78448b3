// Helpers for the proxy's end-to-end tests: the server from
// CORRAL_PG_CONNINFO, an in-process proxy on an ephemeral loopback port, and
// a raw v3 protocol client for what libpq cannot send (row limits, malformed
// messages).
//
//   ProxyUnderTest p;
//   ASSERT_TRUE(IsOk(p.Start(server, options)));
//   PGconn* c = PQconnectdb(p.ClientConninfo().c_str());
//   RawClient raw;
//   ASSERT_TRUE(raw.Connect(p.port()).ok());
//
// Thread-compatible test helpers.
#ifndef CORRAL_TESTS_PROXY_PROXY_TEST_UTIL_H_
#define CORRAL_TESTS_PROXY_PROXY_TEST_UTIL_H_

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "libpq-fe.h"
#include "adapters/pg_test_server.h"
#include "adapters/proxy/proxy.h"
#include "gtest/gtest.h"

typedef struct pg_conn PGconn;

namespace corral {
namespace proxy {

// A name no other test process uses (sandboxes share pids):
// "<prefix>_<pid>_<random hex>_<n>", for tables, databases and files.
using adapters::PgUniqueName;

// For ASSERT_TRUE(IsOk(p.Start(...))): a failure prints the status.
inline ::testing::AssertionResult IsOk(const absl::Status& st) {
  if (st.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << st;
}

// The first value of `sql`'s last result ("" when none), or "ERROR <sqlstate>".
std::string Exec1(PGconn* c, const std::string& sql);
// Whether `sql` succeeded (the error goes to stderr otherwise).
bool ExecOk(PGconn* c, const std::string& sql);

struct ServerInfo {
  std::string conninfo;  // as given
  std::string host, user, dbname;
  int port = 0;
};
// False (with *why) when there is no server.
bool TestServer(ServerInfo* info, std::string* why);

// Runs a shell command; returns its exit status and stdout+stderr in *out.
int Shell(const std::string& cmd, std::string* out);

// A checked-in client script under tests/proxy/clients/ (a data
// dependency, in the runfiles).
std::string ClientPath(const std::string& name);

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

// A blocking TCP connection to 127.0.0.1:port (rcvbuf > 0: SO_RCVBUF set
// first); -1 on failure.
int ConnectLoopback(int port, int rcvbuf = 0);
// A v3 StartupMessage for user and database.
std::string StartupPacket(const std::string& user, const std::string& dbname);
// One statement: the first value of a row result, the command tag of a
// command, or "ERROR <SQLSTATE>".
std::string ExecValue(PGconn* c, const std::string& sql);
// The last result of a query sent with PQsendQuery: the last value of its
// first row, its command tag, or "ERROR <SQLSTATE>".
std::string Collect(PGconn* c);
// Polls `cond` every 20 ms for up to 15 s: for "the loop got there", which
// a fixed pause does not guarantee on a loaded machine (the multi-proxy
// tests wait for a sync round of another proxy that long).
template <typename Fn>
bool Eventually(Fn cond) {
  for (int i = 0; i < 750; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

// A fixture with the test server, a scratch table (k int primary key,
// v int), rows k = 0..10 with v = 0, dropped afterwards, and a proxy to
// start; skips without a server.
class ScratchTableTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  ServerInfo server_;
  std::string table_;
  PGconn* server_conn_ = nullptr;  // straight to the server
  ProxyUnderTest proxy_;
};
// ScratchTableTest with libpq clients of the proxy (closed at the end),
// its counters, and the scratch table's row update.
class ScratchClientsTest : public ScratchTableTest {
 protected:
  void TearDown() override;
  // A client of the proxy (Connect; `options`: more conninfo keywords,
  // e.g. "application_name=a") or of the server itself (Direct).
  PGconn* Connect(const std::string& options = "");
  PGconn* Direct();
  const Stats& stats() { return proxy_.proxy().stats(); }
  // UPDATE <table> SET v = v + 1 WHERE k = <k>
  std::string Update(int k) const;
  std::vector<PGconn*> conns_;
};
// ScratchClientsTest for transparent replay and the driver scripts under
// clients/: a proxy of 4 backends with replay on or off, the scratch
// table's values, shell commands.
class ReplayClientsTest : public ScratchClientsTest {
 protected:
  void StartProxy(bool replay);
  // v of row k, read straight from the server.
  std::string Value(int k);
  // A shell command's exit status and output; whether a probe succeeds.
  static std::pair<int, std::string> Run(const std::string& cmd);
  static bool Have(const std::string& probe) { return Run(probe).first == 0; }
};
// The proxy at `proxy_conninfo` learns a serialization failure on row k of
// `table` (k int primary key, v int, v = 0): a SERIALIZABLE transaction
// reads it, `server` (a direct connection) updates the row behind it, its
// own update fails with 40001. The row's v is 1 afterwards.
void LearnAbort(const std::string& proxy_conninfo, PGconn* server, const std::string& table, int k);
// The same for the row `where` selects (a table with another key column).
void LearnAbortWhere(const std::string& proxy_conninfo, PGconn* server, const std::string& table,
                     const std::string& where);

// A `corral proxy` process (the binary //cli:corral, a data dependency of
// the test) started with `args` after "proxy", its stderr piped: `port` is
// the one it logged ("listening on 127.0.0.1:PORT,"), 0 when it exited or
// said nothing within 20 s; `log` what it wrote until then. The caller
// waits for (or kills) `pid` and closes `err_fd`.
struct CorralProcess {
  int pid = -1;
  int port = 0;
  int err_fd = -1;
  std::string log;
};
CorralProcess SpawnCorralProxy(const std::vector<std::string>& args);

// Drops and creates database `db` on the server (for tests that load their
// own data or need the proxy to read their tables from the catalog).
absl::Status RecreateDatabase(const ServerInfo& server, const std::string& db);
void DropDatabase(const ServerInfo& server, const std::string& db);

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
