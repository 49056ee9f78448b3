// TLS settings and SCRAM-SHA-256-PLUS without a server: config keys, the
// startup refusals for bad TLS settings, channel-binding checks. The TLS
// handshakes themselves are tested end to end in tests/proxy/proxy_tls_test.
#include "adapters/proxy/tls.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/match.h"
#include "adapters/proxy/auth.h"
#include "adapters/proxy/config.h"
#include "adapters/proxy/proxy.h"
#include "gtest/gtest.h"

namespace corral {
namespace proxy {
namespace {

TEST(TlsConfig, KeysParseAndBadModeNamesTheLine) {
  Options o;
  ASSERT_TRUE(ParseConfigText("client_tls_sslmode = Require\nclient_tls_cert_file = /c.pem\n"
                              "client_tls_key_file = '/k.pem'\nclient_tls_ca_file = /ca.pem\n"
                              "server_tls_sslmode = verify-full\nserver_tls_ca_file = /sca.pem\n",
                              "t.ini", &o)
                  .ok());
  EXPECT_EQ(o.client_tls_sslmode, "require");
  EXPECT_EQ(o.client_tls_cert_file, "/c.pem");
  EXPECT_EQ(o.client_tls_key_file, "/k.pem");
  EXPECT_EQ(o.client_tls_ca_file, "/ca.pem");
  EXPECT_EQ(o.server_tls_sslmode, "verify-full");
  EXPECT_EQ(o.server_tls_ca_file, "/sca.pem");
  absl::Status st = ParseConfigText("pool_size = 2\nclient_tls_sslmode = maybe\n", "t.ini", &o);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(absl::StrContains(st.message(), "t.ini:2")) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "client_tls_sslmode")) << st;
  EXPECT_FALSE(ParseConfigText("server_tls_sslmode = on\n", "t.ini", &o).ok());
  for (const char* m : {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}) {
    auto parsed = tls::ParseMode(m);
    ASSERT_TRUE(parsed.ok()) << m;
    EXPECT_STREQ(tls::ModeName(*parsed), m);
  }
}

TEST(TlsConfig, CreateRefusesMissingOrIncompleteTlsSettings) {
  Options o;
  o.client_tls_sslmode = "require";
  auto p = Proxy::Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(absl::StrContains(p.status().message(), "client_tls_cert_file")) << p.status();
  o.client_tls_cert_file = "/nonexistent/server.crt";
  o.client_tls_key_file = "/nonexistent/server.key";
  p = Proxy::Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(absl::StrContains(p.status().message(), "/nonexistent/server.crt")) << p.status();
  Options s;
  s.server_tls_sslmode = "verify-ca";
  p = Proxy::Create(s);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(absl::StrContains(p.status().message(), "server_tls_ca_file")) << p.status();
  s.server_tls_ca_file = "/nonexistent/ca.crt";
  p = Proxy::Create(s);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(absl::StrContains(p.status().message(), "/nonexistent/ca.crt")) << p.status();
  Options ok;
  ok.server_tls_sslmode = "prefer";  // no files needed
  EXPECT_TRUE(Proxy::Create(ok).ok());
}

// One SCRAM exchange; the server's verdict on the client-final message.
absl::Status Exchange(auth::ScramClient* c, auth::ScramServer* s, bool plus) {
  auto sf = s->ServerFirst(c->FirstMessage(), plus);
  if (!sf.ok()) return sf.status();
  auto cf = c->FinalMessage(*sf);
  if (!cf.ok()) return cf.status();
  auto v = s->ServerFinal(*cf);
  if (!v.ok()) return v.status();
  return c->VerifyServerFinal(*v);
}

TEST(ScramPlus, BindsToTheServerCertificateHash) {
  const std::string hash(32, '\x5a');
  {
    auth::ScramClient c("pw", hash);
    auth::ScramServer s("pw", hash);
    EXPECT_TRUE(Exchange(&c, &s, true).ok());
  }
  {  // A man in the middle terminates TLS with another certificate.
    auth::ScramClient c("pw", std::string(32, '\x11'));
    auth::ScramServer s("pw", hash);
    absl::Status st = Exchange(&c, &s, true);
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(absl::StrContains(st.message(), "channel binding")) << st;
  }
  {  // -PLUS without TLS (no hash on the server side) is refused.
    auth::ScramClient c("pw", hash);
    auth::ScramServer s("pw");
    EXPECT_FALSE(Exchange(&c, &s, true).ok());
  }
  {  // A binding gs2 header with the plain mechanism is refused.
    auth::ScramClient c("pw", hash);
    auth::ScramServer s("pw", hash);
    EXPECT_FALSE(Exchange(&c, &s, false).ok());
  }
  {  // Plain SCRAM over TLS still works ("n,,": the client does not bind).
    auth::ScramClient c("pw");
    auth::ScramServer s("pw", hash);
    EXPECT_TRUE(Exchange(&c, &s, false).ok());
  }
  // "y,,": the client could bind but believes the server cannot; over TLS
  // the server offered -PLUS, so that is a downgrade.
  auth::ScramServer s("pw", hash);
  EXPECT_FALSE(s.ServerFirst("y,,n=,r=abcdefgh", false).ok());
  auth::ScramServer plain("pw");
  EXPECT_TRUE(plain.ServerFirst("y,,n=,r=abcdefgh", false).ok());
  // A client-final whose c= does not echo the gs2 header fails.
  auth::ScramServer s2("pw");
  auto sf = s2.ServerFirst("n,,n=,r=abcdefgh", false);
  ASSERT_TRUE(sf.ok());
  const std::string nonce = std::string(sf->substr(2, sf->find(',') - 2));
  EXPECT_FALSE(s2.ServerFinal("c=eSws,r=" + nonce + ",p=AAAA").ok());
}

TEST(SigpipeBlock, WriteToAClosedPeerGivesEpipeNotSigpipe) {
  // OpenSSL's socket writes are write(2): without the block this kills the
  // test process.
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ::close(sv[1]);
  {
    tls::SigpipeBlock block;
    errno = 0;
    EXPECT_EQ(::write(sv[0], "x", 1), -1);
    EXPECT_EQ(errno, EPIPE);
  }
  ::close(sv[0]);
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);  // discarded, not left pending
}

}  // namespace
}  // namespace proxy
}  // namespace corral
