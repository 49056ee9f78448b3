#include "tests/proxy/proxy_test_util.h"

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "adapters/proxy/wire.h"

namespace corral {
namespace proxy {

std::string Exec1(PGconn* c, const std::string& sql) {
  PGresult* r = PQexec(c, sql.c_str());
  std::string out;
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
  if (PQresultStatus(r) == PGRES_FATAL_ERROR) {
    const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    out = std::string("ERROR ") + (state != nullptr ? state : "(none)");
  }
  PQclear(r);
  return out;
}

bool ExecOk(PGconn* c, const std::string& sql) {
  PGresult* r = PQexec(c, sql.c_str());
  const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
  if (!ok) std::fprintf(stderr, "%s: %s", sql.c_str(), PQerrorMessage(c));
  PQclear(r);
  return ok;
}

// Runs a shell command; returns its exit status and stdout+stderr.
int Shell(const std::string& cmd, std::string* out) {
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (f == nullptr) return -1;
  char buf[4096];
  size_t n;
  out->clear();
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out->append(buf, n);
  const int st = pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string ClientPath(const std::string& name) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/", ws ? ws : "corral", "/tests/proxy/clients/", name);
}

bool TestServer(ServerInfo* info, std::string* why) {
  const char* env = std::getenv("CORRAL_PG_CONNINFO");
  if (env == nullptr || *env == '\0') {
    *why = "CORRAL_PG_CONNINFO is not set: start a server with `eval \"$(bash scripts/pg.sh start)\"` "
           "and pass --test_env=CORRAL_PG_CONNINFO (scripts/test.sh does both)";
    return false;
  }
  info->conninfo = env;
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(env, &err);
  if (opts == nullptr) {
    *why = absl::StrCat("cannot parse CORRAL_PG_CONNINFO: ", err ? err : "");
    if (err) PQfreemem(err);
    return false;
  }
  info->host = "127.0.0.1";
  info->port = 5432;
  info->user = "postgres";
  info->dbname = "postgres";
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const std::string k = o->keyword;
    if (k == "host" || k == "hostaddr") info->host = o->val;
    if (k == "port") info->port = std::atoi(o->val);
    if (k == "user") info->user = o->val;
    if (k == "dbname") info->dbname = o->val;
  }
  PQconninfoFree(opts);
  PGconn* c = PQconnectdb(env);
  const bool ok = PQstatus(c) == CONNECTION_OK;
  if (!ok) *why = absl::StrCat("cannot connect to CORRAL_PG_CONNINFO: ", PQerrorMessage(c));
  PQfinish(c);
  return ok;
}

absl::Status RecreateDatabase(const ServerInfo& server, const std::string& db) {
  PGconn* c = PQconnectdb(server.conninfo.c_str());
  absl::Status st = absl::OkStatus();
  for (const std::string& sql : {absl::StrCat("DROP DATABASE IF EXISTS ", db), absl::StrCat("CREATE DATABASE ", db)}) {
    if (!st.ok()) break;
    PGresult* r = PQexec(c, sql.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK) st = absl::InternalError(absl::StrCat(sql, ": ", PQerrorMessage(c)));
    PQclear(r);
  }
  PQfinish(c);
  return st;
}

void DropDatabase(const ServerInfo& server, const std::string& db) {
  PGconn* c = PQconnectdb(server.conninfo.c_str());
  // FORCE: a session a failed test left behind does not keep it.
  PQclear(PQexec(c, absl::StrCat("DROP DATABASE IF EXISTS ", db, " WITH (FORCE)").c_str()));
  PQfinish(c);
}

absl::Status ProxyUnderTest::Start(const ServerInfo& server, Options o) {
  server_ = server;
  o.listen_addr = "127.0.0.1";
  o.listen_port = 0;
  o.server_host = server.host;
  o.server_port = server.port;
  o.server_user = server.user;
  if (o.server_dbname == "postgres") o.server_dbname = server.dbname;
  auto p = Proxy::Create(o);
  if (!p.ok()) return p.status();
  proxy_ = std::move(*p);
  return proxy_->Start();
}

void ProxyUnderTest::Stop() {
  if (proxy_) proxy_->Stop();
  proxy_.reset();
}

std::string ProxyUnderTest::ClientConninfo(const std::string& dbname) const {
  return absl::StrCat("host=127.0.0.1 port=", port(), " user=", server_.user,
                      " dbname=", dbname.empty() ? server_.dbname : dbname, " connect_timeout=5");
}

int ConnectLoopback(int port, int rcvbuf) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string StartupPacket(const std::string& user, const std::string& dbname) {
  std::string pkt;
  size_t at = wire::BeginMessage(&pkt, 0);
  wire::PutInt32(&pkt, wire::kProtocol3);
  const std::string z(1, '\0');
  absl::StrAppend(&pkt, "user", z, user, z, "database", z, dbname, z, z);
  wire::EndMessage(&pkt, at);
  return pkt;
}

std::string Collect(PGconn* c) {
  std::string last;
  while (PGresult* r = PQgetResult(c)) {
    if (PQresultStatus(r) == PGRES_FATAL_ERROR) {
      last = absl::StrCat("ERROR ", PQresultErrorField(r, PG_DIAG_SQLSTATE));
    } else if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) {
      last = PQgetvalue(r, 0, PQnfields(r) - 1);
    } else if (PQresultStatus(r) == PGRES_COMMAND_OK) {
      last = PQcmdStatus(r);
    }
    PQclear(r);
  }
  return last;
}

std::string ExecValue(PGconn* c, const std::string& sql) {
  PGresult* r = PQexec(c, sql.c_str());
  std::string out;
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
  if (PQresultStatus(r) == PGRES_COMMAND_OK) out = PQcmdStatus(r);
  if (PQresultStatus(r) == PGRES_FATAL_ERROR) {
    const char* st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    out = std::string("ERROR ") + (st ? st : "(none)");
  }
  PQclear(r);
  return out;
}

void LearnAbort(const std::string& proxy_conninfo, PGconn* server, const std::string& table, int k) {
  LearnAbortWhere(proxy_conninfo, server, table, absl::StrCat("k = ", k));
}

void LearnAbortWhere(const std::string& proxy_conninfo, PGconn* server, const std::string& table,
                     const std::string& where) {
  const std::string update = absl::StrCat("UPDATE ", table, " SET v = v + 1 WHERE ", where);
  PGconn* x = PQconnectdb(proxy_conninfo.c_str());
  ASSERT_EQ(PQstatus(x), CONNECTION_OK);
  ASSERT_EQ(ExecValue(x, "BEGIN ISOLATION LEVEL SERIALIZABLE"), "BEGIN");
  ASSERT_EQ(ExecValue(x, absl::StrCat("SELECT v FROM ", table, " WHERE ", where)), "0");
  ASSERT_EQ(ExecValue(server, update), "UPDATE 1");
  ASSERT_EQ(ExecValue(x, update), "ERROR 40001");
  ExecValue(x, "ROLLBACK");
  PQfinish(x);
}

void ScratchTableTest::SetUp() {
  std::string why;
  if (!TestServer(&server_, &why)) GTEST_SKIP() << why;
  table_ = PgUniqueName("scratch_t");
  server_conn_ = PQconnectdb(server_.conninfo.c_str());
  // A reference is named `k=1` while `k` is a column of one table only and
  // `table.k=1` once two tables have it (policies/schema.h), decided when a
  // proxy reads the catalog. Tests running at once create and drop scratch
  // tables, so two proxies of one test could read catalogs a moment apart
  // and name the same row differently. Proxies with cluster_name qualify
  // every name (LoadCatalogSchema's qualify_all); for the others, a table
  // that is never dropped keeps `k` shared, so every read agrees.
  // (Two tests creating it at once: one gets an error, which is harmless.)
  ExecValue(server_conn_, "CREATE TABLE IF NOT EXISTS corral_test_k_anchor (k int PRIMARY KEY)");
  ExecValue(server_conn_, absl::StrCat("CREATE TABLE ", table_, " (k int PRIMARY KEY, v int NOT NULL)"));
  ExecValue(server_conn_, absl::StrCat("INSERT INTO ", table_, " SELECT g, 0 FROM generate_series(0, 10) g"));
}

void ScratchTableTest::TearDown() {
  proxy_.Stop();
  if (server_conn_ != nullptr) {
    ExecValue(server_conn_, absl::StrCat("DROP TABLE IF EXISTS ", table_));
    PQfinish(server_conn_);
  }
}

void ScratchClientsTest::TearDown() {
  for (PGconn* c : conns_) PQfinish(c);
  conns_.clear();
  ScratchTableTest::TearDown();
}

PGconn* ScratchClientsTest::Connect(const std::string& options) {
  const std::string conninfo = absl::StrCat(proxy_.ClientConninfo(), " ", options);
  PGconn* c = PQconnectdb(conninfo.c_str());
  EXPECT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  conns_.push_back(c);
  return c;
}

PGconn* ScratchClientsTest::Direct() {
  PGconn* c = PQconnectdb(server_.conninfo.c_str());
  EXPECT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  conns_.push_back(c);
  return c;
}

std::string ScratchClientsTest::Update(int k) const {
  return absl::StrCat("UPDATE ", table_, " SET v = v + 1 WHERE k = ", k);
}

void ReplayClientsTest::StartProxy(bool replay) {
  Options o;
  o.pool_size = 4;
  o.replay = replay;
  ASSERT_TRUE(IsOk(proxy_.Start(server_, o)));
}

std::string ReplayClientsTest::Value(int k) {
  return ExecValue(server_conn_, absl::StrCat("SELECT v FROM ", table_, " WHERE k = ", k));
}

std::pair<int, std::string> ReplayClientsTest::Run(const std::string& cmd) {
  std::string out;
  const int rc = Shell(cmd, &out);
  return {rc, out};
}

RawClient::~RawClient() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status RawClient::Connect(int port, const std::string& user, const std::string& dbname) {
  fd_ = ConnectLoopback(port);
  if (fd_ < 0) return absl::UnavailableError(absl::StrCat("connect: ", std::strerror(errno)));
  if (absl::Status st = SendRaw(StartupPacket(user, dbname)); !st.ok()) return st;
  std::vector<RawMessage> msgs;
  return ReadUntilReady(&msgs);
}

absl::Status RawClient::SendRaw(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return absl::UnavailableError("send failed");
    off += n;
  }
  return absl::OkStatus();
}

absl::Status RawClient::Read(RawMessage* m, int timeout_ms) {
  while (true) {
    if (buf_.size() >= 5) {
      const int32_t len = wire::GetInt32(buf_.data() + 1);
      if (buf_.size() >= static_cast<size_t>(len) + 1) {
        m->type = buf_[0];
        m->body = buf_.substr(5, len - 4);
        buf_.erase(0, len + 1);
        return absl::OkStatus();
      }
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return absl::DeadlineExceededError("no message");
    char tmp[65536];
    ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return absl::UnavailableError("connection closed");
    buf_.append(tmp, n);
  }
}

absl::Status RawClient::ReadUntilReady(std::vector<RawMessage>* out, int timeout_ms) {
  while (true) {
    RawMessage m;
    if (absl::Status st = Read(&m, timeout_ms); !st.ok()) return st;
    out->push_back(m);
    if (m.type == 'Z') return absl::OkStatus();
  }
}

bool RawClient::ClosedWithin(int timeout_ms) {
  while (true) {
    RawMessage m;
    absl::Status st = Read(&m, timeout_ms);
    if (absl::IsUnavailable(st)) return true;
    if (!st.ok()) return false;
  }
}

namespace {
std::string Z() { return std::string(1, '\0'); }
}  // namespace

std::string RawClient::Parse(const std::string& name, const std::string& sql) {
  std::string m;
  wire::AppendParse(&m, name, sql, absl::string_view("\0\0", 2));  // no parameter types
  return m;
}

std::string RawClient::Bind(const std::string& portal, const std::string& stmt,
                            const std::vector<std::string>& text_params) {
  std::string m;
  size_t at = wire::BeginMessage(&m, 'B');
  absl::StrAppend(&m, portal, Z(), stmt, Z());
  wire::PutInt16(&m, 0);
  wire::PutInt16(&m, static_cast<int16_t>(text_params.size()));
  for (const auto& p : text_params) {
    wire::PutInt32(&m, static_cast<int32_t>(p.size()));
    m += p;
  }
  wire::PutInt16(&m, 0);
  wire::EndMessage(&m, at);
  return m;
}

std::string RawClient::Execute(const std::string& portal, int max_rows) {
  std::string m;
  size_t at = wire::BeginMessage(&m, 'E');
  absl::StrAppend(&m, portal, Z());
  wire::PutInt32(&m, max_rows);
  wire::EndMessage(&m, at);
  return m;
}

std::string RawClient::Sync() {
  std::string m;
  wire::AppendEmpty(&m, 'S');
  return m;
}

std::string RawClient::Flush() {
  std::string m;
  wire::AppendEmpty(&m, 'H');
  return m;
}

std::string RawClient::Query(const std::string& sql) {
  std::string m;
  wire::AppendQuery(&m, sql);
  return m;
}

CorralProcess SpawnCorralProxy(const std::vector<std::string>& args) {
  CorralProcess p;
  const char* srcdir = std::getenv("TEST_SRCDIR");
  if (srcdir == nullptr) return p;
  const std::string bin = absl::StrCat(srcdir, "/corral/cli/corral");
  std::vector<std::string> argv_s = {bin, "proxy"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  int err[2];
  if (::pipe(err) != 0) return p;
  p.pid = ::fork();
  if (p.pid < 0) return p;
  if (p.pid == 0) {
    ::dup2(err[1], 2);
    ::close(err[0]);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(err[1]);
  p.err_fd = err[0];
  // "corral proxy: listening on 127.0.0.1:PORT, ..."
  const std::string mark = "listening on 127.0.0.1:";
  char buf[512];
  while (p.port == 0) {
    pollfd pf{p.err_fd, POLLIN, 0};
    if (::poll(&pf, 1, 20000) <= 0) break;
    const ssize_t n = ::read(p.err_fd, buf, sizeof(buf));
    if (n <= 0) break;
    p.log.append(buf, static_cast<size_t>(n));
    const size_t at = p.log.find(mark);
    if (at != std::string::npos && p.log.find('\n', at) != std::string::npos) {
      p.port = std::atoi(p.log.c_str() + at + mark.size());
    }
  }
  return p;
}

}  // namespace proxy
}  // namespace corral
