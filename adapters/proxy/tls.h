// TLS for the proxy (adapters/proxy) with OpenSSL, both directions: the
// client-facing side (answering SSLRequest, client_tls_*) and the server
// side (the proxy's backend connections, server_tls_*). PgBouncer's sslmode
// names and meanings:
//   client side  disable: no TLS; allow / prefer: TLS when the client asks;
//                require: a client must use TLS; verify-ca / verify-full:
//                TLS with a client certificate signed by client_tls_ca_file.
//   server side  disable / allow: plain; prefer: TLS when the server has it;
//                require: TLS, certificate not checked; verify-ca: chain
//                checked against server_tls_ca_file; verify-full: chain and
//                host name (server_host).
//
//   auto ctx = tls::Context::ForClients(cert, key, ca, tls::Mode::kRequire);
//   if (!ctx.ok()) return ctx.status();          // names the bad file
//   auto s = tls::Session::Accept(**ctx, fd);    // fd non-blocking
//   switch (s->Handshake()) { case tls::Io::kWantRead: ... }  // drive from epoll
//   ssize_t n = s->Read(buf, len);               // -1 + errno EAGAIN: wait
//
// Thread safety: a Context may be shared by sessions on any thread once
// built; a Session belongs to the thread that drives its socket.
#ifndef CORRAL_ADAPTERS_PROXY_TLS_H_
#define CORRAL_ADAPTERS_PROXY_TLS_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace corral {
namespace proxy {
namespace tls {

enum class Mode { kDisable, kAllow, kPrefer, kRequire, kVerifyCa, kVerifyFull };
absl::StatusOr<Mode> ParseMode(absl::string_view name);
const char* ModeName(Mode m);

class Context {
 public:
  // The proxy as a TLS server; ca_file is needed for verify-ca/-full (client
  // certificates), optional otherwise.
  static absl::StatusOr<std::unique_ptr<Context>> ForClients(const std::string& cert_file,
                                                             const std::string& key_file,
                                                             const std::string& ca_file, Mode mode);
  // The proxy as a TLS client of the server; host is checked by verify-full.
  static absl::StatusOr<std::unique_ptr<Context>> ForServer(Mode mode, const std::string& ca_file,
                                                            const std::string& cert_file,
                                                            const std::string& key_file,
                                                            const std::string& host);
  ~Context();
  Mode mode() const { return mode_; }
  // RFC 5929 tls-server-end-point of this context's own certificate (the
  // client-facing side): its hash with the signature's hash algorithm,
  // SHA-256 when that is MD5 or SHA-1. Empty without a certificate.
  const std::string& end_point_hash() const { return end_point_hash_; }

 private:
  friend class Session;
  Context(SSL_CTX* ctx, Mode mode) : ctx_(ctx), mode_(mode) {}
  SSL_CTX* ctx_;
  Mode mode_;
  std::string host_;
  std::string end_point_hash_;
};

enum class Io { kDone, kWantRead, kWantWrite, kError };

class Session {
 public:
  // Server side on a connected, non-blocking socket.
  static std::unique_ptr<Session> Accept(const Context& ctx, int fd);
  // Client side on a connected, blocking socket: the whole handshake now.
  static absl::StatusOr<std::unique_ptr<Session>> Connect(const Context& ctx, int fd);
  ~Session();

  // One step of the (server-side) handshake.
  Io Handshake();
  const std::string& error() const { return error_; }
  // Like recv/send: >0 bytes; 0 = closed (Read); -1 with errno EAGAIN
  // (retry when the socket is ready) or EIO (the session is broken).
  ssize_t Read(char* buf, size_t len);
  ssize_t Write(const char* buf, size_t len);
  // Bytes OpenSSL holds (decrypted or not) that the socket's readiness
  // won't signal.
  bool Pending() const;

 private:
  explicit Session(SSL* ssl) : ssl_(ssl) {}
  ssize_t Result(int rc);
  SSL* ssl_;
  std::string error_;
};

// OpenSSL writes to its socket with write(2), not send(MSG_NOSIGNAL): a
// peer that went away would raise SIGPIPE for the whole process. While one
// of these lives, SIGPIPE is blocked on this thread (write gets EPIPE); the
// destructor discards any it caused and restores the thread's mask.
class SigpipeBlock {
 public:
  SigpipeBlock();
  ~SigpipeBlock();
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  unsigned char old_mask_[128];  // a sigset_t
};

}  // namespace tls
}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_TLS_H_
