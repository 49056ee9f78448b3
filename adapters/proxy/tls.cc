#include "adapters/proxy/tls.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <csignal>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace corral {
namespace proxy {
namespace tls {
namespace {

std::string LastError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

std::string EndPointHash(X509* cert) {
  if (cert == nullptr) return "";
  int md_nid = NID_undef;
  if (!OBJ_find_sigid_algs(X509_get_signature_nid(cert), &md_nid, nullptr)) return "";
  const EVP_MD* md = (md_nid == NID_md5 || md_nid == NID_sha1) ? EVP_sha256() : EVP_get_digestbynid(md_nid);
  if (md == nullptr) return "";
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (!X509_digest(cert, md, out, &n)) return "";
  return std::string(reinterpret_cast<char*>(out), n);
}

SSL_CTX* NewCtx(const SSL_METHOD* method) {
  SSL_CTX* ctx = SSL_CTX_new(method);
  if (ctx == nullptr) return nullptr;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  // The loop's output buffer grows and moves between a short write and its retry.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  return ctx;
}

absl::Status LoadCa(SSL_CTX* ctx, const std::string& what, const std::string& ca_file) {
  if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("cannot load ", what, " '", ca_file, "': ", LastError()));
  }
  return absl::OkStatus();
}

absl::Status LoadCertKey(SSL_CTX* ctx, const std::string& prefix, const std::string& cert_file,
                         const std::string& key_file) {
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load ", prefix, "_cert_file '", cert_file, "': ", LastError()));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load ", prefix, "_key_file '", key_file, "': ", LastError()));
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "_key_file '", key_file, "' does not match ", prefix, "_cert_file '", cert_file, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Mode> ParseMode(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  for (Mode m : {Mode::kDisable, Mode::kAllow, Mode::kPrefer, Mode::kRequire, Mode::kVerifyCa, Mode::kVerifyFull}) {
    if (n == ModeName(m)) return m;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("must be disable, allow, prefer, require, verify-ca or verify-full, not '", name, "'"));
}

const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kDisable: return "disable";
    case Mode::kAllow: return "allow";
    case Mode::kPrefer: return "prefer";
    case Mode::kRequire: return "require";
    case Mode::kVerifyCa: return "verify-ca";
    case Mode::kVerifyFull: return "verify-full";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<Context>> Context::ForClients(const std::string& cert_file,
                                                             const std::string& key_file,
                                                             const std::string& ca_file, Mode mode) {
  if (cert_file.empty() || key_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("client_tls_sslmode = ", ModeName(mode),
                                                   " needs client_tls_cert_file and client_tls_key_file"));
  }
  const bool verify = mode == Mode::kVerifyCa || mode == Mode::kVerifyFull;
  if (verify && ca_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("client_tls_sslmode = ", ModeName(mode), " needs client_tls_ca_file (client certificates)"));
  }
  SSL_CTX* raw = NewCtx(TLS_server_method());
  if (raw == nullptr) return absl::InternalError(LastError());
  std::unique_ptr<Context> ctx(new Context(raw, mode));
  if (absl::Status st = LoadCertKey(raw, "client_tls", cert_file, key_file); !st.ok()) return st;
  if (!ca_file.empty()) {
    if (absl::Status st = LoadCa(raw, "client_tls_ca_file", ca_file); !st.ok()) return st;
  }
  if (verify) SSL_CTX_set_verify(raw, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  ctx->end_point_hash_ = EndPointHash(SSL_CTX_get0_certificate(raw));
  return ctx;
}

absl::StatusOr<std::unique_ptr<Context>> Context::ForServer(Mode mode, const std::string& ca_file,
                                                            const std::string& cert_file,
                                                            const std::string& key_file,
                                                            const std::string& host) {
  const bool verify = mode == Mode::kVerifyCa || mode == Mode::kVerifyFull;
  if (verify && ca_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("server_tls_sslmode = ", ModeName(mode), " needs server_tls_ca_file"));
  }
  SSL_CTX* raw = NewCtx(TLS_client_method());
  if (raw == nullptr) return absl::InternalError(LastError());
  std::unique_ptr<Context> ctx(new Context(raw, mode));
  ctx->host_ = host;
  if (verify) {
    if (absl::Status st = LoadCa(raw, "server_tls_ca_file", ca_file); !st.ok()) return st;
    SSL_CTX_set_verify(raw, SSL_VERIFY_PEER, nullptr);
  }
  if (!cert_file.empty() || !key_file.empty()) {
    if (absl::Status st = LoadCertKey(raw, "server_tls", cert_file, key_file); !st.ok()) return st;
  }
  return ctx;
}

Context::~Context() { SSL_CTX_free(ctx_); }

std::unique_ptr<Session> Session::Accept(const Context& ctx, int fd) {
  SSL* ssl = SSL_new(ctx.ctx_);
  if (ssl == nullptr) return nullptr;
  SSL_set_fd(ssl, fd);
  SSL_set_accept_state(ssl);
  return std::unique_ptr<Session>(new Session(ssl));
}

absl::StatusOr<std::unique_ptr<Session>> Session::Connect(const Context& ctx, int fd) {
  SSL* ssl = SSL_new(ctx.ctx_);
  if (ssl == nullptr) return absl::InternalError(LastError());
  std::unique_ptr<Session> s(new Session(ssl));
  SSL_set_fd(ssl, fd);
  if (!ctx.host_.empty()) SSL_set_tlsext_host_name(ssl, ctx.host_.c_str());
  if (ctx.mode_ == Mode::kVerifyFull) {
    X509_VERIFY_PARAM* p = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    // An IP address is matched against the certificate's IP SANs.
    if (X509_VERIFY_PARAM_set1_ip_asc(p, ctx.host_.c_str()) != 1) {
      X509_VERIFY_PARAM_set1_host(p, ctx.host_.c_str(), 0);
    }
  }
  if (SSL_connect(ssl) != 1) {
    const long vr = SSL_get_verify_result(ssl);
    std::string why = vr != X509_V_OK ? X509_verify_cert_error_string(vr) : LastError();
    return absl::UnavailableError(absl::StrCat("TLS handshake with the server failed (server_tls_sslmode = ",
                                               ModeName(ctx.mode_), "): ", why));
  }
  return s;
}

Session::~Session() { SSL_free(ssl_); }

Io Session::Handshake() {
  ERR_clear_error();
  const int rc = SSL_do_handshake(ssl_);
  if (rc == 1) return Io::kDone;
  switch (SSL_get_error(ssl_, rc)) {
    case SSL_ERROR_WANT_READ: return Io::kWantRead;
    case SSL_ERROR_WANT_WRITE: return Io::kWantWrite;
    default: error_ = LastError(); return Io::kError;
  }
}

ssize_t Session::Result(int rc) {
  if (rc > 0) return rc;
  switch (SSL_get_error(ssl_, rc)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_ZERO_RETURN:
      return 0;
    default:
      error_ = LastError();
      errno = EIO;
      return -1;
  }
}

ssize_t Session::Read(char* buf, size_t len) {
  ERR_clear_error();
  return Result(SSL_read(ssl_, buf, static_cast<int>(len)));
}

ssize_t Session::Write(const char* buf, size_t len) {
  ERR_clear_error();
  return Result(SSL_write(ssl_, buf, static_cast<int>(std::min<size_t>(len, 1 << 30))));
}

bool Session::Pending() const { return SSL_pending(ssl_) > 0 || SSL_has_pending(ssl_) == 1; }

SigpipeBlock::SigpipeBlock() {
  static_assert(sizeof(old_mask_) >= sizeof(sigset_t), "sigset_t");
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, reinterpret_cast<sigset_t*>(old_mask_));
}

SigpipeBlock::~SigpipeBlock() {
  const sigset_t* old = reinterpret_cast<const sigset_t*>(old_mask_);
  if (sigismember(old, SIGPIPE) == 0) {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    timespec zero{0, 0};
    while (sigtimedwait(&pipe, nullptr, &zero) > 0) {
    }
  }
  pthread_sigmask(SIG_SETMASK, old, nullptr);
}

}  // namespace tls
}  // namespace proxy
}  // namespace corral
