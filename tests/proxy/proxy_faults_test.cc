// Protocol correctness under faults (issue 26, defect 5): whatever fails, a
// client gets exactly one result per request. A regression test for the
// double COMMIT result after a backend was terminated, and a property-style
// test: seeded random interleavings of simple and extended-protocol
// requests, transaction control, errors, backend deaths
// (pg_terminate_backend) and cancels from several raw-socket clients, each
// client's message sequence checked against PostgreSQL's protocol rules.
// Needs the PostgreSQL test server (CORRAL_PG_CONNINFO); skipped without it.
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
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

// Terminates the server process behind the proxy's backend `queue` (read
// from the admin console) and waits until the proxy has noticed.
bool KillBackend(ProxyUnderTest* p, PGconn* server, int queue) {
  PGconn* admin = PQconnectdb(p->ClientConninfo("corral").c_str());
  PGresult* r = PQexec(admin, "SHOW QUEUES");
  std::string pid;
  if (PQresultStatus(r) == PGRES_TUPLES_OK && queue < PQntuples(r)) pid = PQgetvalue(r, queue, 1);
  PQclear(r);
  PQfinish(admin);
  if (pid.empty() || pid == "0") return false;
  const int64_t before = p->proxy().stats().backend_failures.load();
  if (ExecValue(server, absl::StrCat("SELECT pg_terminate_backend(", pid, ")")) != "t") return false;
  for (int i = 0; i < 500 && p->proxy().stats().backend_failures.load() == before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return p->proxy().stats().backend_failures.load() > before;
}

std::string Describe(const std::string& portal) {
  std::string m;
  size_t at = wire::BeginMessage(&m, 'D');
  m.push_back('P');
  absl::StrAppend(&m, portal, std::string(1, '\0'));
  wire::EndMessage(&m, at);
  return m;
}

// ---------------------------------------------------------------- the client

// What a request expects, step by step: the protocol's rules for one
// simple Query (statements results, then 'Z') or one extended unit (one
// answer per message up to Sync's 'Z').
struct Request {
  bool simple = true;
  int statements = 0;           // simple: how many statements
  std::vector<char> ext;        // extended: the messages sent (P B D E S)
  std::vector<std::string> sql;  // the statements, in order (for the txn model)
  bool cancel = false;
};

// A protocol-level client on a raw non-blocking socket: sends requests,
// reads whatever arrived and checks each answer against the rules.
class ProtoClient {
 public:
  ~ProtoClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  // Connects, logs in (trust) and keeps the BackendKeyData for cancels.
  absl::Status Connect(int port, const std::string& user, const std::string& db) {
    port_ = port;
    fd_ = ConnectLoopback(port);
    if (fd_ < 0) return absl::UnavailableError("connect");
    Send(StartupPacket(user, db));
    while (true) {
      char t;
      std::string body;
      if (!ReadMsg(&t, &body, 5000)) return absl::UnavailableError("login");
      if (t == 'K') {
        wire::Reader r(body);
        pid_ = r.Int32();
        secret_ = r.Int32();
      }
      if (t == 'E') return absl::UnavailableError("login refused");
      if (t == 'Z') return absl::OkStatus();
    }
  }

  void Send(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      ASSERT_GT(n, 0) << "send";
      off += n;
    }
  }

  // One message within timeout_ms (false: none).
  bool ReadMsg(char* type, std::string* body, int timeout_ms) {
    while (true) {
      if (buf_.size() >= 5) {
        const int32_t len = wire::GetInt32(buf_.data() + 1);
        if (buf_.size() >= static_cast<size_t>(len) + 1) {
          *type = buf_[0];
          *body = buf_.substr(5, len - 4);
          buf_.erase(0, len + 1);
          return true;
        }
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return false;
      char tmp[65536];
      ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
      if (n <= 0) {
        closed_ = true;
        return false;
      }
      buf_.append(tmp, n);
    }
  }

  void Cancel() {
    const int fd = ConnectLoopback(port_);
    if (fd >= 0) {
      std::string pkt;
      size_t at = wire::BeginMessage(&pkt, 0);
      wire::PutInt32(&pkt, wire::kCancelRequest);
      wire::PutInt32(&pkt, pid_);
      wire::PutInt32(&pkt, secret_);
      wire::EndMessage(&pkt, at);
      (void)!::send(fd, pkt.data(), pkt.size(), MSG_NOSIGNAL);
      ::close(fd);
    }
  }

  // Sends a request and queues what it expects.
  void Start(const Request& r, const std::string& bytes) {
    Send(bytes);
    reqs_.push_back(r);
    Reset();
  }
  bool busy() const { return !reqs_.empty(); }
  char status() const { return status_; }
  bool closed() const { return closed_; }
  const std::string& failure() const { return failure_; }
  int64_t answered() const { return answered_; }

  // Reads and checks what arrived within timeout_ms; false on a violation.
  bool Poll(int timeout_ms) {
    char t;
    std::string body;
    while (failure_.empty() && ReadMsg(&t, &body, timeout_ms)) {
      timeout_ms = 0;
      Check(t, body);
    }
    return failure_.empty();
  }

  // Nothing may arrive unasked: call when idle.
  bool CheckQuiet() {
    char t;
    std::string body;
    if (!busy() && ReadMsg(&t, &body, 0)) Fail(absl::StrCat("unsolicited message '", std::string(1, t), "'"));
    return failure_.empty();
  }

 private:
  void Fail(const std::string& why) {
    if (!failure_.empty()) return;
    failure_ = absl::StrCat(why, " (after ", answered_, " answered requests; status '", std::string(1, status_),
                            "'; this answer so far: ", seen_, ")");
    if (!reqs_.empty()) {
      for (const std::string& q : reqs_.front().sql) absl::StrAppend(&failure_, " [", q, "]");
    }
  }
  void Reset() {
    seen_.clear();
    ext_ = 0;
    in_rows_ = false;
    errored_ = false;
    failed_running_ = false;
    results_ = 0;
    lost_ = false;
  }
  static bool Async(char t) { return t == 'N' || t == 'S' || t == 'A'; }

  // The transaction model: the statuses the request may end with. The
  // statements that completed (their results) take effect; an error fails
  // an open block. A statement the error stopped before it ran (at its
  // Parse or Bind: a cancel that came late, as the server takes cancels)
  // did nothing; a BEGIN, COMMIT or ROLLBACK that would change the status,
  // stopped while running (at its Execute; a Query's cannot be told
  // apart), may have taken effect or not.
  std::string Expected(const Request& r) const {
    char s = status_;
    if (lost_) return "I";  // the proxy's backend-lost answer: rolled back
    for (size_t i = 0; i < r.sql.size() && i < static_cast<size_t>(results_); ++i) {
      const std::string& q = r.sql[i];
      if (q == "BEGIN") s = s == 'I' ? 'T' : s;
      if (q == "COMMIT" || q == "ROLLBACK") s = 'I';
    }
    if (!errored_) return std::string(1, s);
    if (failed_running_ && static_cast<size_t>(results_) < r.sql.size()) {
      const std::string& q = r.sql[results_];
      const bool begin = q == "BEGIN", end = q == "COMMIT" || q == "ROLLBACK";
      if ((begin && s == 'I') || (end && s != 'I')) return "IE";
    }
    return s == 'I' ? "I" : "E";
  }

  void Check(char t, const std::string& body) {
    if (Async(t)) return;
    seen_.push_back(t);
    if (t == 'E') absl::StrAppend(&seen_, "(", wire::ErrorSqlState(body), ")");
    if (reqs_.empty()) return Fail(absl::StrCat("message '", std::string(1, t), "' with no request open"));
    const Request& r = reqs_.front();
    if (t == 'Z') {
      const char got = body.empty() ? '?' : body[0];
      if (!errored_) {
        const int want = r.simple ? r.statements : static_cast<int>(std::count(r.ext.begin(), r.ext.end(), 'E'));
        if (results_ != want) Fail(absl::StrCat("ReadyForQuery after ", results_, " results, want ", want));
        if (!r.simple && ext_ != static_cast<int>(r.ext.size()) - 1) {
          Fail(absl::StrCat("ReadyForQuery after ", ext_, " of ", r.ext.size() - 1, " answers"));
        }
      }
      const std::string want = Expected(r);
      if (want.find(got) == std::string::npos) {
        Fail(absl::StrCat("transaction status '", std::string(1, got), "', want '", want, "'"));
      }
      status_ = got;
      reqs_.pop_front();
      ++answered_;
      Reset();
      return;
    }
    if (errored_) return Fail(absl::StrCat("message '", std::string(1, t), "' after ErrorResponse"));
    if (t == 'E') {
      errored_ = true;
      if (wire::ErrorSqlState(body) == "08006") lost_ = true;
      failed_running_ = r.simple || (ext_ < static_cast<int>(r.ext.size()) && r.ext[ext_] == 'E');
      return;
    }
    if (r.simple) {
      if (t == 'T' || t == 'D') {
        if (t == 'T' && in_rows_) return Fail("RowDescription twice for one statement");
        in_rows_ = true;
        return;
      }
      if (t == 'C' || t == 'I') {
        if (++results_ > r.statements) Fail("more results than statements");
        in_rows_ = false;
        return;
      }
      return Fail(absl::StrCat("unexpected '", std::string(1, t), "' answering a Query"));
    }
    // Extended: one answer per message in order (Execute: rows then C/I).
    if (ext_ >= static_cast<int>(r.ext.size())) return Fail("more answers than messages");
    const char m = r.ext[ext_];
    auto next = [&] { ++ext_; };
    switch (m) {
      case 'P':
        return t == '1' ? next() : Fail(absl::StrCat("'", std::string(1, t), "' for Parse"));
      case 'B':
        return t == '2' ? next() : Fail(absl::StrCat("'", std::string(1, t), "' for Bind"));
      case 'D':
        return t == 'T' || t == 'n' ? next() : Fail(absl::StrCat("'", std::string(1, t), "' for Describe"));
      case 'E':
        if (t == 'D') return;
        if (t == 'C' || t == 'I') {
          ++results_;
          return next();
        }
        return Fail(absl::StrCat("'", std::string(1, t), "' for Execute"));
      default:
        return Fail(absl::StrCat("'", std::string(1, t), "' before Sync's ReadyForQuery"));
    }
  }

  int fd_ = -1;
  int port_ = 0;
  int32_t pid_ = 0, secret_ = 0;
  std::string buf_;
  std::deque<Request> reqs_;
  char status_ = 'I';
  int ext_ = 0, results_ = 0;
  bool in_rows_ = false, errored_ = false, lost_ = false, closed_ = false;
  bool failed_running_ = false;  // the error came while a statement ran (Execute, or a Query's)
  std::string failure_;
  std::string seen_;  // the current answer's message types
  int64_t answered_ = 0;
};

class ProxyFaultsTest : public ScratchTableTest {
 protected:
  // The proxy with one backend, and client c logged in.
  void StartWithOneBackend(RawClient* c) {
    Options o;
    o.pool_size = 1;
    ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
    ASSERT_TRUE(c->Connect(proxy_.port(), server_.user, server_.dbname).ok());
  }
};

// Defect 5: a client idle in a transaction whose backend was terminated got
// an unsolicited error and then another one for its COMMIT (psycopg 3:
// "received 2 results from command 'COMMIT'").
TEST_F(ProxyFaultsTest, OneResultForCommitAfterBackendTerminated) {
  RawClient c;
  ASSERT_NO_FATAL_FAILURE(StartWithOneBackend(&c));
  std::vector<RawMessage> msgs;
  ASSERT_TRUE(c.SendRaw(RawClient::Query("BEGIN")).ok());
  ASSERT_TRUE(c.ReadUntilReady(&msgs).ok());
  ASSERT_TRUE(c.SendRaw(RawClient::Query(absl::StrCat("UPDATE ", table_, " SET v = 7 WHERE k = 1"))).ok());
  ASSERT_TRUE(c.ReadUntilReady(&msgs).ok());
  ASSERT_EQ(msgs.back().body, "T");
  ASSERT_TRUE(KillBackend(&proxy_, server_conn_, 0));
  ASSERT_TRUE(c.SendRaw(RawClient::Query("COMMIT")).ok());
  msgs.clear();
  ASSERT_TRUE(c.ReadUntilReady(&msgs).ok());
  int results = 0;
  for (const RawMessage& m : msgs) results += m.type == 'E' || m.type == 'C';
  EXPECT_EQ(results, 1);
  EXPECT_EQ(msgs.front().type, 'E');
  EXPECT_EQ(msgs.back().body, "I");
  // Nothing left over: the next request's answer is exactly its own.
  ASSERT_TRUE(c.SendRaw(RawClient::Query("SELECT 1")).ok());
  msgs.clear();
  ASSERT_TRUE(c.ReadUntilReady(&msgs).ok());
  std::string types;
  for (const RawMessage& m : msgs) types.push_back(m.type);
  EXPECT_EQ(types, "TDCZ");
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 1")), "0");
}

// The server's error for a request, then the backend lost before its
// ReadyForQuery (pg_terminate_backend): the request's answer is that error
// and the ReadyForQuery the server would have sent, 'E' when the error
// failed a transaction block; the next request hears of the lost
// transaction. (The proxy said 'I' without a word of the loss: the
// client's next statements ran outside the transaction it believed
// failed.) A Flush makes it deterministic: the server sends the error and
// waits for the Sync.
TEST_F(ProxyFaultsTest, ErrorThenBackendLostKeepsTheFailedTransaction) {
  RawClient c;
  ASSERT_NO_FATAL_FAILURE(StartWithOneBackend(&c));
  auto types = [](const std::vector<RawMessage>& msgs) {
    std::string t;
    for (const RawMessage& m : msgs) {
      t.push_back(m.type);
      if (m.type == 'E') absl::StrAppend(&t, "(", wire::ErrorSqlState(m.body), ")");
      if (m.type == 'Z') t += m.body;
    }
    return t;
  };
  auto query = [&](const std::string& sql) {
    std::vector<RawMessage> msgs;
    EXPECT_TRUE(c.SendRaw(RawClient::Query(sql)).ok());
    EXPECT_TRUE(c.ReadUntilReady(&msgs).ok());
    return types(msgs);
  };
  // Sends `bytes` (ending in a Flush), reads up to the server's error,
  // kills the backend, then sends the Sync: what it was answered.
  auto error_then_kill = [&](const std::string& bytes) {
    std::vector<RawMessage> msgs;
    EXPECT_TRUE(c.SendRaw(bytes + RawClient::Flush()).ok());
    do {
      RawMessage m;
      if (!c.Read(&m).ok()) break;
      msgs.push_back(m);
    } while (msgs.back().type != 'E');
    EXPECT_TRUE(KillBackend(&proxy_, server_conn_, 0));
    EXPECT_TRUE(c.SendRaw(RawClient::Sync()).ok());
    EXPECT_TRUE(c.ReadUntilReady(&msgs).ok());
    return types(msgs);
  };
  const std::string fail = RawClient::Parse("", "SELECT 1/0") + RawClient::Bind("", "", {}) +
                           RawClient::Execute("", 0);
  const std::string update = absl::StrCat("UPDATE ", table_, " SET v = 7 WHERE k = 1");

  // In a transaction block that ran a statement.
  EXPECT_EQ(query("BEGIN"), "CZT");
  EXPECT_EQ(query(update), "CZT");
  EXPECT_EQ(error_then_kill(fail), "1E(22012)ZE");
  EXPECT_EQ(query("ROLLBACK"), "E(08006)ZI");
  EXPECT_EQ(query("SELECT 1"), "TDCZI");

  // The block opened by a BEGIN in the same unit.
  const std::string begin = RawClient::Parse("", "BEGIN") + RawClient::Bind("", "", {}) + RawClient::Execute("", 0);
  EXPECT_EQ(error_then_kill(begin + fail), "12C1E(22012)ZE");
  EXPECT_EQ(query(update), "E(08006)ZI");

  // Outside a block the error ended the implicit transaction: nothing more.
  EXPECT_EQ(error_then_kill(fail), "1E(22012)ZI");
  EXPECT_EQ(query("SELECT 1"), "TDCZI");
  EXPECT_EQ(ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = 1")), "0");
}

// The property: random interleavings never break the protocol's rules.
TEST_F(ProxyFaultsTest, RandomInterleavingsKeepTheProtocol) {
  Options o;
  o.pool_size = 2;
  o.query_wait_timeout_ms = 0;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
  const char* seed_env = std::getenv("CORRAL_FAULTS_SEED");
  const uint64_t seed = seed_env ? std::strtoull(seed_env, nullptr, 10) : 20261124;
  std::mt19937_64 rng(seed);
  constexpr int kClients = 3, kSteps = 400;
  std::vector<std::unique_ptr<ProtoClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<ProtoClient>());
    ASSERT_TRUE(clients.back()->Connect(proxy_.port(), server_.user, server_.dbname).ok());
  }
  // Each client writes its own row only: no lock waits between clients.
  auto statement = [&](int ci) -> std::string {
    switch (rng() % 9) {
      case 0: return "BEGIN";
      case 1: return "COMMIT";
      case 2: return "ROLLBACK";
      case 3: return "SELECT 1/0";
      case 4: return "SELECT pg_sleep(0.02)";
      case 5: return absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", ci);
      case 6: return absl::StrCat("SELECT * FROM no_such_table_", ci);
      default: return absl::StrCat("UPDATE ", table_, " SET v = v + 1 WHERE k = ", ci);
    }
  };
  int kills = 0, cancels = 0;
  auto send_request = [&](int ci) {
    ProtoClient& c = *clients[ci];
    Request r;
    std::string bytes;
    if (rng() % 2 == 0) {
      const int n = 1 + (rng() % 4 == 0);
      std::string sql;
      for (int i = 0; i < n; ++i) {
        r.sql.push_back(statement(ci));
        absl::StrAppend(&sql, i ? "; " : "", r.sql.back());
      }
      if (n == 2) {
        // Transaction control inside a multi-statement Query is not modelled.
        for (std::string& s : r.sql) {
          if (s == "BEGIN" || s == "COMMIT" || s == "ROLLBACK") s = "SELECT 2";
        }
        sql = absl::StrCat(r.sql[0], "; ", r.sql[1]);
      }
      r.statements = n;
      bytes = RawClient::Query(sql);
    } else {
      r.simple = false;
      const int n = 1 + (rng() % 3 == 0);
      for (int i = 0; i < n; ++i) {
        r.sql.push_back(statement(ci));
        absl::StrAppend(&bytes, RawClient::Parse("", r.sql.back()), RawClient::Bind("", "", {}));
        r.ext.push_back('P');
        r.ext.push_back('B');
        if (rng() % 2) {
          bytes += Describe("");
          r.ext.push_back('D');
        }
        bytes += RawClient::Execute("", 0);
        r.ext.push_back('E');
      }
      bytes += RawClient::Sync();
      r.ext.push_back('S');
    }
    c.Start(r, bytes);
  };
  for (int step = 0; step < kSteps; ++step) {
    const int ci = static_cast<int>(rng() % kClients);
    ProtoClient& c = *clients[ci];
    const int action = static_cast<int>(rng() % 20);
    if (action == 0) {
      if (KillBackend(&proxy_, server_conn_, static_cast<int>(rng() % o.pool_size))) ++kills;
    } else if (action == 1 && c.busy()) {
      c.Cancel();
      ++cancels;
    } else if (c.busy()) {
      ASSERT_TRUE(c.Poll(5)) << "seed " << seed << " client " << ci << ": " << c.failure();
    } else {
      ASSERT_TRUE(c.CheckQuiet()) << "seed " << seed << " client " << ci << ": " << c.failure();
      send_request(ci);
    }
  }
  // Wind down: answer everything, end every transaction.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool done = false;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    done = true;
    for (int ci = 0; ci < kClients; ++ci) {
      ProtoClient& c = *clients[ci];
      ASSERT_TRUE(c.Poll(c.busy() ? 5 : 0)) << "seed " << seed << " client " << ci << ": " << c.failure();
      if (c.busy()) {
        done = false;
      } else if (c.status() != 'I') {
        Request r;
        r.statements = 1;
        r.sql = {"ROLLBACK"};
        c.Start(r, RawClient::Query("ROLLBACK"));
        done = false;
      }
    }
  }
  ASSERT_TRUE(done) << "seed " << seed << ": requests left unanswered";
  int64_t answered = 0;
  for (int ci = 0; ci < kClients; ++ci) {
    ProtoClient& c = *clients[ci];
    ASSERT_TRUE(c.CheckQuiet()) << "seed " << seed << " client " << ci << ": " << c.failure();
    Request r;
    r.statements = 1;
    r.sql = {"SELECT 1"};
    c.Start(r, RawClient::Query("SELECT 1"));
    while (c.busy() && c.Poll(100)) {
    }
    ASSERT_TRUE(c.failure().empty() && !c.busy()) << "seed " << seed << " client " << ci << ": " << c.failure();
    answered += c.answered();
  }
  EXPECT_GT(kills, 0);
  EXPECT_GT(answered, kSteps / 4);
  std::printf("seed %llu: %lld requests answered, %d backend kills, %d cancels\n",
              static_cast<unsigned long long>(seed), static_cast<long long>(answered), kills, cancels);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
