#include "adapters/proxy/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "adapters/proxy/wire.h"

namespace corral {
namespace proxy {
namespace net {

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

std::string PeerAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (fd < 0 || getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "unknown";
  char host[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return absl::StrCat(host, ":", ntohs(in->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    return absl::StrCat("[", host, "]:", ntohs(in6->sin6_port));
  }
  return "unknown";
}

bool IsLoopbackAddress(absl::string_view addr) {
  return addr == "localhost" || addr == "::1" || addr == "[::1]" || absl::StartsWith(addr, "127.");
}

bool WriteAll(int fd, absl::string_view data, tls::Session* tls) {
  while (!data.empty()) {
    ssize_t n = tls != nullptr ? tls->Write(data.data(), data.size())
                               : ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      usleep(1000);
      continue;
    }
    if (n <= 0) return false;
    data.remove_prefix(n);
  }
  return true;
}

absl::StatusOr<int> ConnectTcp(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port_s = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), port_s.c_str(), &hints, &res); rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", gai_strerror(rc)));
  }
  int fd = -1;
  std::string err;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    err = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot connect to ", host, ":", port, ": ", err));
  }
  SetNoDelay(fd);
  return fd;
}

absl::StatusOr<int> Listen(const std::string& addr, int port, int* bound_port, bool reuseport) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
    std::string e = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("SO_REUSEPORT: ", e));
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat("listen_addr '", addr, "' is not an IPv4 address"));
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || ::listen(fd, 512) != 0) {
    std::string e = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("cannot listen on ", addr, ":", port, ": ", e));
  }
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  *bound_port = ntohs(sa.sin_port);
  return fd;
}

absl::Status ReadMessage(int fd, std::string* buf, char* type, std::string* body, tls::Session* tls) {
  while (true) {
    wire::Frame f;
    size_t used = 0;
    absl::Status st = wire::NextFrame(*buf, 1 << 30, &f, &used);
    if (!st.ok()) return st;
    if (used > 0) {
      *type = f.type;
      *body = std::string(f.body);
      buf->erase(0, used);
      return absl::OkStatus();
    }
    char tmp[8192];
    ssize_t n = tls != nullptr ? tls->Read(tmp, sizeof(tmp)) : ::recv(fd, tmp, sizeof(tmp), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError("server closed the connection during startup");
    buf->append(tmp, n);
  }
}

absl::Status NegotiateServerTls(int fd, const tls::Context& ctx, std::unique_ptr<tls::Session>* out) {
  out->reset();
  std::string pkt;
  wire::PutInt32(&pkt, 8);
  wire::PutInt32(&pkt, wire::kSslRequest);
  if (!WriteAll(fd, pkt)) return absl::UnavailableError("cannot send SSLRequest to the server");
  char answer = 0;
  ssize_t n;
  do {
    n = ::recv(fd, &answer, 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return absl::UnavailableError("the server closed the connection after SSLRequest");
  if (answer == 'S') {
    auto s = tls::Session::Connect(ctx, fd);
    if (!s.ok()) return s.status();
    *out = std::move(*s);
    return absl::OkStatus();
  }
  if (answer != 'N') {
    return absl::UnavailableError(absl::StrCat("the server answered SSLRequest with byte ", int(answer)));
  }
  if (ctx.mode() >= tls::Mode::kRequire) {
    return absl::UnavailableError(absl::StrCat("the server does not support TLS (server_tls_sslmode = ",
                                               tls::ModeName(ctx.mode()), ")"));
  }
  return absl::OkStatus();
}

void SendCancelRequest(const std::string& host, int port, int32_t pid, int32_t secret) {
  auto fd = ConnectTcp(host, port);
  if (!fd.ok()) return;
  std::string pkt;
  wire::PutInt32(&pkt, 16);
  wire::PutInt32(&pkt, wire::kCancelRequest);
  wire::PutInt32(&pkt, pid);
  wire::PutInt32(&pkt, secret);
  WriteAll(*fd, pkt);
  ::close(*fd);
}

}  // namespace net
}  // namespace proxy
}  // namespace corral
