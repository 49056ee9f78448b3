// Socket helpers of the proxy (adapters/proxy): TCP connect / listen, the
// blocking writes and reads of the startup phase and the socket options the
// event loop sets. Plain POSIX; nothing here knows the wire protocol's state.
//
//   auto fd = net::ConnectTcp("127.0.0.1", 5432);   // blocking, TCP_NODELAY
//   if (!fd.ok()) return fd.status();
//   net::WriteAll(*fd, startup_packet);
//   char type; std::string body, buf;
//   CHECK_OK(net::ReadMessage(*fd, &buf, &type, &body));
//   net::SetNonBlocking(*fd);                        // hand it to the loop
//
// Thread safety: stateless functions; callers own the descriptors.
#ifndef CORRAL_ADAPTERS_PROXY_NET_H_
#define CORRAL_ADAPTERS_PROXY_NET_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapters/proxy/tls.h"

namespace corral {
namespace proxy {
namespace net {

void SetNonBlocking(int fd);
void SetNoDelay(int fd);
// "host:port" of the socket's peer ("unknown" when it cannot be read).
std::string PeerAddress(int fd);
// Whether a listen_addr only accepts local connections (127.0.0.0/8, ::1,
// localhost).
bool IsLoopbackAddress(absl::string_view addr);

// Blocking write of all of `data` (spins on EAGAIN); false on error. With
// `tls`, through that session on fd.
bool WriteAll(int fd, absl::string_view data, tls::Session* tls = nullptr);

// A connected, blocking TCP socket with TCP_NODELAY.
absl::StatusOr<int> ConnectTcp(const std::string& host, int port);

// A non-blocking IPv4 listening socket on addr:port (0 = ephemeral); the
// port actually bound goes to *bound_port. `reuseport`: SO_REUSEPORT, so
// several sockets (the proxy's workers) listen on one port and the kernel
// spreads the connections over them.
absl::StatusOr<int> Listen(const std::string& addr, int port, int* bound_port, bool reuseport = false);

// Blocking read of one typed protocol message from fd; `buf` carries bytes
// read past it to the next call (the startup phase of a backend). With
// `tls`, through that session on fd.
absl::Status ReadMessage(int fd, std::string* buf, char* type, std::string* body,
                         tls::Session* tls = nullptr);

// Asks the server on a fresh blocking connection for TLS (SSLRequest) as
// server_tls_sslmode says (ctx: tls::Context::ForServer); *out stays null
// when the server declines and the mode allows plain.
absl::Status NegotiateServerTls(int fd, const tls::Context& ctx, std::unique_ptr<tls::Session>* out);

// The 16-byte CancelRequest for a server process, sent on a fresh
// connection to host:port; errors are ignored (a cancel is best effort).
void SendCancelRequest(const std::string& host, int port, int32_t pid, int32_t secret);

}  // namespace net
}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_NET_H_
