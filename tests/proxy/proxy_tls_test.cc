// TLS through `corral proxy` end to end (issue 26 item 4): a throwaway CA, a
// server certificate for localhost / 127.0.0.1, a client certificate and a
// second ("wrong") CA are made with the openssl command at test time; libpq,
// psql and pgbench connect with the sslmodes a deployment uses. The server
// side turns ssl on in the test server (ALTER SYSTEM, reload; reset after)
// and points the proxy's backends at it with server_tls_sslmode.
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "policies/schema.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

// The certificates, made once per test binary in a world-readable /tmp
// directory (the test server's user reads the server's key and cert there).
struct Certs {
  std::string dir, why;
  std::string ca() const { return dir + "/ca.crt"; }
  std::string wrong_ca() const { return dir + "/wrong-ca.crt"; }
  std::string cert() const { return dir + "/server.crt"; }
  std::string key() const { return dir + "/server.key"; }
  std::string client_cert() const { return dir + "/client.crt"; }
  std::string client_key() const { return dir + "/client.key"; }
};

const Certs& TestCerts() {
  static const Certs* certs = [] {
    auto* c = new Certs;
    if (access("/usr/bin/openssl", X_OK) != 0) {
      c->why = "/usr/bin/openssl is not installed";
      return c;
    }
    char tmpl[] = "/tmp/corral-tls-test.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      c->why = "mkdtemp failed";
      return c;
    }
    c->dir = tmpl;
    chmod(c->dir.c_str(), 0755);
    std::atexit([] { (void)!std::system(absl::StrCat("rm -rf ", TestCerts().dir).c_str()); });
    const std::string d = c->dir;
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    std::string out;
    const std::string script = absl::StrCat(
        "set -e; cd ", d, "; O=/usr/bin/openssl\n",
        "$O req -x509 ", ec, " -keyout ca.key -out ca.crt -days 2 -subj /CN=corral-test-ca\n",
        "$O req -x509 ", ec, " -keyout wrong-ca.key -out wrong-ca.crt -days 2 -subj /CN=corral-wrong-ca\n",
        "$O req ", ec, " -keyout server.key -out server.csr -subj /CN=localhost\n",
        "echo subjectAltName=DNS:localhost,IP:127.0.0.1 > san.ext\n",
        "$O x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext "
        "-out server.crt\n",
        "$O req ", ec, " -keyout client.key -out client.csr -subj /CN=postgres\n",
        "$O x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out client.crt\n",
        "chmod 600 server.key client.key; chmod 644 *.crt\n");
    std::ofstream(d + "/make.sh") << script;
    if (Shell(absl::StrCat("bash ", d, "/make.sh"), &out) != 0) c->why = "openssl failed: " + out;
    return c;
  }();
  return *certs;
}

class ProxyTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TestServer(&server_, &why_)) GTEST_SKIP() << why_;
    if (!TestCerts().why.empty()) GTEST_SKIP() << TestCerts().why;
  }
  Options TlsOptions(const std::string& mode) {
    Options o;
    o.pool_size = 2;
    o.client_tls_sslmode = mode;
    o.client_tls_cert_file = TestCerts().cert();
    o.client_tls_key_file = TestCerts().key();
    o.client_tls_ca_file = TestCerts().ca();
    return o;
  }
  // Connects with extra libpq keywords; *ssl: whether TLS is in use;
  // returns "" or libpq's error.
  std::string Connect(const ProxyUnderTest& p, const std::string& extra, bool* ssl, std::string* answer = nullptr) {
    PGconn* c = PQconnectdb(absl::StrCat(p.ClientConninfo(), " ", extra).c_str());
    std::string err;
    if (PQstatus(c) != CONNECTION_OK) {
      err = PQerrorMessage(c);
      if (err.empty()) err = "connection failed";
    } else {
      *ssl = PQsslInUse(c) != 0;
      PGresult* r = PQexec(c, "SELECT sum(x)::text FROM generate_series(1, 1000) x");
      if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        err = PQerrorMessage(c);
      } else if (answer != nullptr) {
        *answer = PQgetvalue(r, 0, 0);
      }
      PQclear(r);
    }
    PQfinish(c);
    return err;
  }
  ServerInfo server_;
  std::string why_;
};

TEST_F(ProxyTlsTest, RequireServesTlsAndRefusesPlainClients) {
  ProxyUnderTest p;
  ASSERT_TRUE(IsOk(p.Start(server_, TlsOptions("require"))));
  bool ssl = false;
  std::string answer;
  EXPECT_EQ(Connect(p, "sslmode=require", &ssl, &answer), "");
  EXPECT_TRUE(ssl);
  EXPECT_EQ(answer, "500500");
  const std::string err = Connect(p, "sslmode=disable", &ssl);
  EXPECT_TRUE(absl::StrContains(err, "SSL required")) << err;
  EXPECT_GE(p.proxy().stats().tls_clients.load(), 1);
}

TEST_F(ProxyTlsTest, VerifyFullWithTheTestCaAndNotAnother) {
  ProxyUnderTest p;
  ASSERT_TRUE(IsOk(p.Start(server_, TlsOptions("prefer"))));
  bool ssl = false;
  std::string answer;
  // host=localhost for the name check, hostaddr for the proxy's IPv4 socket.
  const std::string full = absl::StrCat("sslmode=verify-full host=localhost hostaddr=127.0.0.1 sslrootcert=");
  EXPECT_EQ(Connect(p, full + TestCerts().ca(), &ssl, &answer), "");
  EXPECT_TRUE(ssl);
  EXPECT_EQ(answer, "500500");
  std::string err = Connect(p, full + TestCerts().wrong_ca(), &ssl);
  EXPECT_TRUE(absl::StrContains(err, "certificate verify failed")) << err;
  // The certificate names localhost and 127.0.0.1, not other names.
  err = Connect(p, absl::StrCat("sslmode=verify-full host=127.0.0.2 hostaddr=127.0.0.1 sslrootcert=",
                                TestCerts().ca()),
                &ssl);
  EXPECT_TRUE(absl::StrContains(err, "does not match host name")) << err;
  EXPECT_GE(p.proxy().stats().tls_handshake_failures.load(), 1);
}

TEST_F(ProxyTlsTest, PreferServesPlainAndTlsClients) {
  ProxyUnderTest p;
  ASSERT_TRUE(IsOk(p.Start(server_, TlsOptions("prefer"))));
  bool ssl = true;
  std::string answer;
  EXPECT_EQ(Connect(p, "sslmode=disable", &ssl, &answer), "");
  EXPECT_FALSE(ssl);
  EXPECT_EQ(answer, "500500");
  EXPECT_EQ(Connect(p, "sslmode=prefer", &ssl), "");
  EXPECT_TRUE(ssl);
  // TLS off in the proxy: 'N' to SSLRequest, so prefer falls back, require fails.
  ProxyUnderTest off;
  const absl::Status started = off.Start(server_, Options());
  ASSERT_TRUE(started.ok()) << started;  // seen once in a fresh-clone run: the status says why
  EXPECT_EQ(Connect(off, "sslmode=prefer", &ssl), "");
  EXPECT_FALSE(ssl);
  EXPECT_NE(Connect(off, "sslmode=require", &ssl), "");
}

// A raw socket connected to the proxy on 127.0.0.1:port (-1 on failure).
int ConnectRaw(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `bytes`; *answer gets what came back before EOF or 2 s.
void RawExchange(int port, const std::string& bytes, std::string* answer) {
  answer->clear();
  const int fd = ConnectRaw(port);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[512];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) answer->append(buf, n);
  ::close(fd);
}

TEST_F(ProxyTlsTest, SslRequestEdgeCases) {
  ProxyUnderTest p;
  ASSERT_TRUE(IsOk(p.Start(server_, TlsOptions("prefer"))));
  const std::string ssl_request("\0\0\0\x08\x04\xd2\x16\x2f", 8);
  const std::string gss_request("\0\0\0\x08\x04\xd2\x16\x30", 8);
  std::string answer;
  // Plain bytes sent after SSLRequest, before the 'S': refused
  // (CVE-2021-23214), never read as if they came over TLS.
  RawExchange(p.port(), ssl_request + std::string("\0\0\0\x08\0\x03\0\0", 8), &answer);
  ASSERT_FALSE(answer.empty());
  EXPECT_EQ(answer[0], 'E') << answer;
  EXPECT_TRUE(absl::StrContains(answer, "unencrypted data after SSL request")) << answer;
  // GSSENCRequest: 'N'.
  const int fd = ConnectRaw(p.port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::send(fd, gss_request.data(), 8, 0), 8);
  char c = 0;
  EXPECT_EQ(::recv(fd, &c, 1, 0), 1);
  EXPECT_EQ(c, 'N');
  // SSLRequest alone: 'S' in the clear, then the handshake.
  ASSERT_EQ(::send(fd, ssl_request.data(), 8, 0), 8);
  EXPECT_EQ(::recv(fd, &c, 1, 0), 1);
  EXPECT_EQ(c, 'S');
  ::close(fd);
  // The proxy goes on serving.
  bool ssl = false;
  EXPECT_EQ(Connect(p, "sslmode=require", &ssl), "");
  EXPECT_TRUE(ssl);
}

TEST_F(ProxyTlsTest, VerifyCaNeedsAClientCertificateFromTheCa) {
  ProxyUnderTest p;
  ASSERT_TRUE(IsOk(p.Start(server_, TlsOptions("verify-ca"))));
  bool ssl = false;
  EXPECT_EQ(Connect(p, absl::StrCat("sslmode=require sslcert=", TestCerts().client_cert(),
                                    " sslkey=", TestCerts().client_key()),
                    &ssl),
            "");
  EXPECT_TRUE(ssl);
  // libpq without a certificate: the handshake fails.
  EXPECT_NE(Connect(p, "sslmode=require sslcert=/nonexistent sslkey=/nonexistent", &ssl), "");
}

TEST_F(ProxyTlsTest, LargeResultsAndMessagesCrossTls) {
  // Many TLS records each way: a 4 MB query text in and ~8 MB of rows out,
  // through partial writes and records OpenSSL holds between reads.
  ProxyUnderTest p;
  ASSERT_TRUE(IsOk(p.Start(server_, TlsOptions("require"))));
  PGconn* c = PQconnectdb(absl::StrCat(p.ClientConninfo(), " sslmode=require").c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  const std::string big(4 << 20, 'x');
  PGresult* r = PQexec(c, absl::StrCat("SELECT length('", big, "')").c_str());
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(c);
  EXPECT_STREQ(PQgetvalue(r, 0, 0), "4194304");
  PQclear(r);
  r = PQexec(c, "SELECT repeat(md5(x::text), 4) FROM generate_series(1, 60000) x");
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(c);
  EXPECT_EQ(PQntuples(r), 60000);
  EXPECT_EQ(std::string(PQgetvalue(r, 59999, 0)).size(), 128u);
  PQclear(r);
  PQfinish(c);
}

TEST_F(ProxyTlsTest, ScramPlusOnlyOverTls) {
  ProxyUnderTest p;
  Options o = TlsOptions("prefer");
  o.auth_type = "scram-sha-256";
  o.users[server_.user] = "s3cret";
  ASSERT_TRUE(IsOk(p.Start(server_, o)));
  bool ssl = false;
  EXPECT_EQ(Connect(p, "sslmode=require channel_binding=require password=s3cret", &ssl), "");
  EXPECT_TRUE(ssl);
  EXPECT_NE(Connect(p, "sslmode=require channel_binding=require password=wrong", &ssl), "");
  // Without TLS there is nothing to bind to: libpq refuses to go on.
  const std::string err = Connect(p, "sslmode=disable channel_binding=require password=s3cret", &ssl);
  EXPECT_TRUE(absl::StrContains(err, "channel binding")) << err;
  EXPECT_EQ(Connect(p, "sslmode=disable password=s3cret", &ssl), "");
}

TEST_F(ProxyTlsTest, PsqlAndPgbenchOverTls) {
  if (access("/usr/bin/psql", X_OK) != 0 || access("/usr/bin/pgbench", X_OK) != 0) {
    GTEST_SKIP() << "psql/pgbench not installed";
  }
  ProxyUnderTest p;
  ASSERT_TRUE(IsOk(p.Start(server_, TlsOptions("require"))));
  std::string out;
  const std::string target = absl::StrCat("host=localhost hostaddr=127.0.0.1 port=", p.port(), " user=", server_.user,
                                          " dbname=", server_.dbname, " sslmode=verify-full sslrootcert=",
                                          TestCerts().ca());
  ASSERT_EQ(Shell(absl::StrCat("/usr/bin/psql -X -At -d '", target, "' -c 'SELECT 6 * 7' -c '\\conninfo'"), &out), 0)
      << out;
  EXPECT_TRUE(absl::StartsWith(out, "42\n")) << out;
  EXPECT_TRUE(absl::StrContains(out, "SSL connection")) << out;
  // pgbench: a custom script needs no pgbench -i tables.
  const std::string script = absl::StrCat(TestCerts().dir, "/bench.sql");
  ASSERT_EQ(Shell(absl::StrCat("printf 'SELECT 1;\\nBEGIN;\\nSELECT 2;\\nCOMMIT;\\n' > ", script), &out), 0);
  ASSERT_EQ(Shell(absl::StrCat("PGSSLMODE=require /usr/bin/pgbench -n -c 4 -j 2 -t 50 -M extended -f ", script,
                               " -h 127.0.0.1 -p ", p.port(), " -U ", server_.user, " ", server_.dbname),
                  &out),
            0)
      << out;
  EXPECT_TRUE(absl::StrContains(out, "number of transactions actually processed: 200/200")) << out;
  EXPECT_GE(p.proxy().stats().tls_clients.load(), 5);
}

// The proxy's own connections to the server over TLS: ssl turned on in the
// test server for the duration of the test.
class ServerTlsTest : public ProxyTlsTest {
 protected:
  void SetUp() override {
    ProxyTlsTest::SetUp();
    if (IsSkipped()) return;
    admin_ = PQconnectdb(server_.conninfo.c_str());
    ASSERT_EQ(PQstatus(admin_), CONNECTION_OK);
    if (!Scalar("SELECT current_setting('ssl')").empty() && Scalar("SHOW ssl") == "on") {
      GTEST_SKIP() << "the test server already runs with ssl = on (not ours to change)";
    }
    // The server's user must own its key (mode 0600): the server writes
    // the copy itself (COPY ... TO, one PEM line per row).
    const std::string pgdir = TestCerts().dir + "/pg";
    mkdir(pgdir.c_str(), 0777);
    chmod(pgdir.c_str(), 0777);
    std::ifstream in(TestCerts().key());
    std::stringstream pem;
    pem << in.rdbuf();
    const std::string key = pgdir + "/server.key";
    unlink(key.c_str());
    Exec(absl::StrCat("COPY (SELECT unnest(string_to_array(rtrim('", pem.str(), "', E'\\n'), E'\\n'))) TO '", key,
                      "'"));
    chmod(key.c_str(), 0600);  // the server's umask may leave it 0644 (refused)
    Exec(absl::StrCat("ALTER SYSTEM SET ssl_cert_file = '", TestCerts().cert(), "'"));
    Exec(absl::StrCat("ALTER SYSTEM SET ssl_key_file = '", key, "'"));
    Exec("ALTER SYSTEM SET ssl = on");
    changed_ = true;
    Exec("SELECT pg_reload_conf()");
    for (int i = 0; i < 50 && Scalar("SHOW ssl") != "on"; ++i) usleep(100000);
    if (Scalar("SHOW ssl") != "on") GTEST_SKIP() << "the test server did not turn ssl on (its log says why)";
    // A reload that fails to load the key leaves ssl on without TLS: probe.
    PGconn* probe = PQconnectdb(absl::StrCat(server_.conninfo, " sslmode=require").c_str());
    const bool ok = PQstatus(probe) == CONNECTION_OK;
    const std::string err = PQerrorMessage(probe);
    PQfinish(probe);
    if (!ok) GTEST_SKIP() << "the test server has ssl on but refuses TLS: " << err;
  }
  void TearDown() override {
    if (admin_ != nullptr && changed_) {
      Exec("ALTER SYSTEM RESET ssl");
      Exec("ALTER SYSTEM RESET ssl_cert_file");
      Exec("ALTER SYSTEM RESET ssl_key_file");
      Exec("SELECT pg_reload_conf()");
    }
    if (admin_ != nullptr) PQfinish(admin_);
  }
  void Exec(const std::string& sql) { PQclear(PQexec(admin_, sql.c_str())); }
  std::string Scalar(const std::string& sql) {
    PGresult* r = PQexec(admin_, sql.c_str());
    std::string v = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "";
    PQclear(r);
    return v;
  }
  PGconn* admin_ = nullptr;
  bool changed_ = false;
};

TEST_F(ServerTlsTest, BackendsUseTlsVerifiedAgainstTheCa) {
  ProxyUnderTest p;
  Options o;
  o.pool_size = 2;
  o.server_tls_sslmode = "verify-full";  // server_host 127.0.0.1: the certificate's IP name
  o.server_tls_ca_file = TestCerts().ca();
  ASSERT_TRUE(IsOk(p.Start(server_, o)));
  PGconn* c = PQconnectdb(p.ClientConninfo().c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  for (int i = 0; i < 4; ++i) {  // both backends, whichever the transaction lands on
    PGresult* r = PQexec(c, "SELECT ssl::text FROM pg_stat_ssl WHERE pid = pg_backend_pid()");
    ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(c);
    EXPECT_STREQ(PQgetvalue(r, 0, 0), "true");
    PQclear(r);
  }
  PQfinish(c);
  p.Stop();
  // Another CA: the proxy refuses to start, saying why.
  o.server_tls_ca_file = TestCerts().wrong_ca();
  ProxyUnderTest bad;
  absl::Status st = bad.Start(server_, o);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(absl::StrContains(st.message(), "certificate verify failed")) << st;
  // The catalog is given: the backends' own handshake is what fails.
  o.schema = SchemaBuilder().Build().value();
  ProxyUnderTest bad2;
  st = bad2.Start(server_, o);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(absl::StrContains(st.message(), "server_tls_sslmode = verify-full")) << st;
  // require: TLS without checking the certificate.
  o.server_tls_sslmode = "require";
  o.server_tls_ca_file.clear();
  ProxyUnderTest req;
  ASSERT_TRUE(IsOk(req.Start(server_, o)));
}

}  // namespace
}  // namespace proxy
}  // namespace corral
