// Proxy::Loop, part 2 of 5 (see proxy_internal.h): the client session:
// startup packet, authentication (trust, md5, SCRAM-SHA-256), framing of
// frontend messages, protocol errors, closing a client, cancel requests.
// Per-client session parameters start here (the startup packet's, the
// ParameterStatus at login; session_params.h); admin-console rights
// (admin_users / stats_users) are checked at login; failed logins are
// logged and counted.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "adapters/proxy/config.h"
#include "adapters/proxy/net.h"
#include "adapters/proxy/proxy_internal.h"
#include "adapters/proxy/wire.h"

namespace corral {
namespace proxy {
namespace {
constexpr size_t kMaxPendingMessages = 100000;
}  // namespace

void Proxy::Loop::ProtocolError(Client* c, absl::string_view sqlstate, absl::string_view message) {
  stats_.protocol_errors++;
  CloseWithFatal(c, sqlstate, message);
}

void Proxy::Loop::LoginFailed(Client* c, absl::string_view sqlstate, absl::string_view message) {
  stats_.failed_logins++;
  std::fprintf(stderr, "corral proxy: failed login: user \"%s\" database \"%s\" from %s: %s (%s)\n",
               absl::CEscape(c->user).c_str(), absl::CEscape(c->database).c_str(),
               net::PeerAddress(c->fd).c_str(), std::string(message).c_str(), std::string(sqlstate).c_str());
  CloseWithFatal(c, sqlstate, message);
}

void Proxy::Loop::CloseWithFatal(Client* c, absl::string_view sqlstate, absl::string_view message) {
  wire::AppendError(&c->out, "FATAL", sqlstate, message);
  // Best effort: the error is small; the socket is closed right after.
  if (c->out_off < c->out.size()) {
    (void)!c->SendSome(c->out.data() + c->out_off, c->out.size() - c->out_off);
  }
  c->out.clear();
  c->out_off = 0;
  CloseClient(c);
}

void Proxy::Loop::OnClientInput(Client* c) {
  while (!c->dead) {
    absl::string_view buf = absl::string_view(c->in).substr(c->in_off);
    if (c->phase == Client::kStartup) {
      absl::string_view body;
      size_t used = 0;
      if (absl::Status st = wire::NextStartup(buf, 10000, &body, &used); !st.ok()) {
        ProtocolError(c, "08P01", st.message());
        return;
      }
      if (used == 0) break;
      c->in_off += used;
      HandleStartup(c, body);
      continue;
    }
    wire::Frame f;
    size_t used = 0;
    if (buf.empty()) break;
    if (!wire::IsFrontendType(buf[0])) {
      ProtocolError(c, "08P01",
                    absl::StrFormat("invalid frontend message type %d ('%c'): closing the connection",
                                    static_cast<unsigned char>(buf[0]),
                                    absl::ascii_isprint(buf[0]) ? buf[0] : '?'));
      return;
    }
    if (absl::Status st = wire::NextFrame(buf, opt_.max_message_bytes, &f, &used); !st.ok()) {
      ProtocolError(c, "08P01", absl::StrCat(st.message(), ": closing the connection"));
      return;
    }
    if (used == 0) break;
    c->in_off += used;
    if (c->phase == Client::kAuth) {
      if (f.type != 'p') {
        ProtocolError(c, "08P01", "expected a password message");
        return;
      }
      HandlePassword(c, f.body);
      continue;
    }
    if (f.type == 'p') {
      ProtocolError(c, "08P01", "unexpected password message");
      return;
    }
    if (c->pending.size() >= kMaxPendingMessages) {
      ProtocolError(c, "54000", "too many pipelined messages without Sync");
      return;
    }
    // (restart_on_hot_key looks at a unit before it goes: Pump.)
    if (c->backend != nullptr && c->pending.empty() && !c->admin && !c->attaching && !ReplayHolds(c) &&
        f.type != 'X' && !(c->pool->db->restart && (f.type == 'Q' || f.type == 'P' || f.type == 'B'))) {
      // Fast path: a transaction in progress, nothing queued: no copy.
      Forward(c, c->backend, f.type, f.raw);
      continue;
    }
    c->pending.push_back(Msg{f.type, std::string(f.raw)});
  }
  if (c->dead) return;
  if (c->in_off == c->in.size()) {
    c->in.clear();
    c->in_off = 0;
  }
  if (c->phase == Client::kReady) Pump(c);
}

void Proxy::Loop::HandleStartup(Client* c, absl::string_view body) {
  wire::Reader r(body);
  const int32_t code = r.Int32();
  if (code == wire::kSslRequest) {
    StartClientTls(c);
    return;
  }
  if (code == wire::kGssEncRequest) {
    Send(c, "N");
    return;
  }
  if (code == wire::kCancelRequest) {
    const int32_t pid = r.Int32();
    const int32_t secret = r.Int32();
    HandleCancel(pid, secret);
    CloseClient(c);
    return;
  }
  if (code != wire::kProtocol3) {
    ProtocolError(c, "0A000", absl::StrCat("unsupported frontend protocol ", code >> 16, ".",
                                           code & 0xffff, ": the proxy speaks 3.0"));
    return;
  }
  if (client_tls_ != nullptr && c->tls == nullptr && client_tls_->mode() >= tls::Mode::kRequire) {
    // As PostgreSQL refuses a non-SSL client that only a hostssl line admits.
    ProtocolError(c, "28000",
                  absl::StrCat("SSL required: client_tls_sslmode = ", tls::ModeName(client_tls_->mode()),
                               " refuses connections without TLS"));
    return;
  }
  if (c->over_limit) {
    stats_.clients_rejected++;
    ProtocolError(c, "53300",
                  absl::StrCat("no more connections allowed (max_client_conn = ", opt_.max_client_conn, ")"));
    return;
  }
  c->sess = ClientSession(c->id);
  while (r.ok()) {
    absl::string_view k = r.CString();
    if (k.empty()) break;
    absl::string_view v = r.CString();
    if (k == "user") c->user = std::string(v);
    if (k == "database") c->database = std::string(v);
    c->sess.SetStartupParameter(k, v);  // ignores user, database and unknown names
  }
  if (c->user.empty()) {
    ProtocolError(c, "28000", "no PostgreSQL user name specified in startup packet");
    return;
  }
  if (c->database.empty()) c->database = c->user;
  c->admin = c->database == opt_.admin_dbname;
  if (!c->admin) {
    // Its [databases] entry first, as PgBouncer does: an unknown database
    // is refused before any password is asked for.
    auto e = FindDatabase(opt_, c->database);
    if (!e.ok()) {
      LoginFailed(c, "3D000", e.status().message());
      return;
    }
    c->entry = *std::move(e);
  }
  if (opt_.auth_type == "scram-sha-256") {
    // Over TLS, -PLUS (channel binding) first, as PostgreSQL lists them.
    std::string mechs;
    if (c->tls != nullptr && !client_tls_->end_point_hash().empty()) {
      mechs.append("SCRAM-SHA-256-PLUS");
      mechs.push_back('\0');
    }
    mechs.append("SCRAM-SHA-256");
    mechs.push_back('\0');
    mechs.push_back('\0');
    wire::AppendAuth(&c->out, 10, mechs);
    MarkDirty(c);
    c->phase = Client::kAuth;
    return;
  }
  if (opt_.auth_type == "md5") {
    c->salt.resize(4);
    for (char& ch : c->salt) ch = static_cast<char>(rng_());
    wire::AppendAuth(&c->out, 5, c->salt);
    MarkDirty(c);
    c->phase = Client::kAuth;
    return;
  }
  FinishLogin(c);
}

void Proxy::Loop::StartClientTls(Client* c) {
  if (client_tls_ == nullptr || c->tls != nullptr) {
    Send(c, "N");
    return;
  }
  if (c->in_off != c->in.size()) {
    // Bytes after SSLRequest would have been sent in the clear but read as
    // if they came over TLS (CVE-2021-23214): refuse, as PostgreSQL does.
    ProtocolError(c, "08P01", "received unencrypted data after SSL request");
    return;
  }
  // 'S' goes out in the clear before the handshake; one byte on a socket
  // with nothing queued.
  Flush(c);
  if (!c->out.empty() || ::send(c->fd, "S", 1, MSG_NOSIGNAL) != 1) {
    CloseClient(c);
    return;
  }
  c->tls = tls::Session::Accept(*client_tls_, c->fd);
  if (c->tls == nullptr) {
    CloseClient(c);
    return;
  }
  c->handshaking = true;
}

void Proxy::Loop::ContinueHandshake(Client* c) {
  switch (c->tls->Handshake()) {
    case tls::Io::kDone:
      c->handshaking = false;
      SetEpollOut(c, false);
      stats_.tls_clients++;
      return;
    case tls::Io::kWantRead:
      SetEpollOut(c, false);
      return;
    case tls::Io::kWantWrite:
      SetEpollOut(c, true);
      return;
    case tls::Io::kError:
      if (trace_) {
        std::fprintf(stderr, "c%llu TLS handshake failed: %s\n", static_cast<unsigned long long>(c->id),
                     c->tls->error().c_str());
      }
      stats_.tls_handshake_failures++;
      CloseClient(c);
      return;
  }
}

void Proxy::Loop::HandlePassword(Client* c, absl::string_view body) {
  wire::Reader r(body);
  const std::string failed = absl::StrCat("password authentication failed for user \"", c->user, "\"");
  if (opt_.auth_type == "scram-sha-256") {
    if (c->scram == nullptr) {  // SASLInitialResponse
      absl::string_view mech = r.CString();
      const int32_t len = r.Int32();
      absl::string_view data = len >= 0 ? r.Bytes(len) : absl::string_view();
      const bool plus = mech == "SCRAM-SHA-256-PLUS";
      if (!r.ok() || (mech != "SCRAM-SHA-256" && !plus)) {
        ProtocolError(c, "28000", "expected a SCRAM-SHA-256 SASLInitialResponse");
        return;
      }
      auto secret = PasswordOf(c);
      // An md5 hash cannot check a SCRAM proof.
      if (!secret.ok() || (auth::IsStoredSecret(*secret) && absl::StartsWith(*secret, "md5"))) {
        LoginFailed(c, "28P01", failed);
        return;
      }
      c->secret = *secret;
      c->scram = std::make_unique<auth::ScramServer>(
          c->secret, c->tls != nullptr ? client_tls_->end_point_hash() : std::string());
      auto first = c->scram->ServerFirst(data, plus);
      if (!first.ok()) {
        ProtocolError(c, "28000", first.status().message());
        return;
      }
      wire::AppendAuth(&c->out, 11, *first);
      MarkDirty(c);
      return;
    }
    auto final_msg = c->scram->ServerFinal(body);
    if (!final_msg.ok()) {
      LoginFailed(c, "28P01", failed);
      return;
    }
    wire::AppendAuth(&c->out, 12, *final_msg);
    if (absl::StartsWith(c->secret, "SCRAM-SHA-256$")) {  // the proxy logs in with the client's keys
      c->scram_client_key = c->scram->client_key();
      c->scram_server_key = c->scram->server_key();
    }
    c->scram.reset();
    FinishLogin(c);
    return;
  }
  absl::string_view given = r.CString();
  auto secret = PasswordOf(c);
  if (!secret.ok() || absl::StartsWith(*secret, "SCRAM-SHA-256$") ||
      auth::Md5Response(c->user, *secret, c->salt) != given) {
    LoginFailed(c, "28P01", failed);
    return;
  }
  c->secret = *secret;
  FinishLogin(c);
}

void Proxy::Loop::FinishLogin(Client* c) {
  if (c->admin) {
    // PgBouncer's rule: only admin_users and stats_users reach the console.
    const AdminRole role = AdminRoleOf(opt_, c->user);
    if (role == AdminRole::kNone) {
      LoginFailed(c, "28000",
                  absl::StrCat("not allowed: user \"", c->user, "\" is in neither admin_users nor stats_users"));
      return;
    }
    c->stats_only = role == AdminRole::kStats;
  } else {
    if (opt_.auth_type == "trust") {  // a userlist password still logs in to the server
      auto it = opt_.users.find(c->user);
      if (it != opt_.users.end()) c->secret = it->second;
    }
    std::string sqlstate;
    auto pool = PoolFor(c, &sqlstate);
    if (!pool.ok()) {
      LoginFailed(c, sqlstate.empty() ? "08006" : sqlstate, pool.status().message());
      return;
    }
    c->pool = *pool;
    c->pool->clients++;
  }
  wire::AppendAuth(&c->out, 0);
  // The server's ParameterStatus as this client's login sees it.
  const auto* params = &server_params_;
  if (c->pool != nullptr && !c->pool->backends.empty()) params = &c->pool->backends[0]->connect_params;
  for (const auto& [k, v] : c->sess.LoginParameterStatus(*params)) {
    wire::AppendParameterStatus(&c->out, k, v);
  }
  do {
    c->key_pid = static_cast<int32_t>(rng_() & 0x7fffffff);
    c->key_secret = static_cast<int32_t>(rng_());
  } while (keys_.contains(c->cancel_key()));
  keys_[c->cancel_key()] = c;
  wire::AppendBackendKeyData(&c->out, c->key_pid, c->key_secret);
  wire::AppendReadyForQuery(&c->out, 'I');
  MarkDirty(c);
  c->phase = Client::kReady;
}

void Proxy::Loop::CloseClient(Client* c) {
  if (c->dead) return;
  c->dead = true;
  epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd, nullptr);
  ::close(c->fd);
  c->fd = -1;
  keys_.erase(c->cancel_key());
  if (c->pool != nullptr && c->phase == Client::kReady) c->pool->clients--;
  if (c->pool != nullptr) c->pool->db->retries->Forget(c->id);
  if (c->waiting) {
    auto& q = c->pool->waitq[c->wait_queue];
    q.erase(std::remove(q.begin(), q.end(), c), q.end());
    if (scheduler::RoutedLoads* loads = LoadsOf(*c->pool)) loads->Dequeued(c->wait_queue);
    c->waiting = false;
  }
  if (Backend* b = c->backend; b != nullptr) {
    // The client left mid-transaction: roll back on the backend, then free it.
    stats_.client_rollbacks++;
    Detach(b, c);
    if (b->batches.size() > 1) SendCancel(b);  // a statement may still run
    if (b->batches.back().msgs > 0) {
      std::string sync;
      wire::AppendEmpty(&sync, 'S');
      Send(b, sync);
      EndBatch(b);
    }
    SendInternal(b, "ROLLBACK");
    ReleaseClusterLocks(b);
    // Its last statements' session effects are not known for sure: the
    // backend goes back to its connect-time defaults.
    b->sess = BackendSession(b->connect_params);
    SendInternal(b, "RESET ALL; UNLISTEN *");
  }
  CapEnd(c, /*conflict=*/false);  // a template slot it held or waited for
  KeysRelease(c);                  // workers > 1: keys it held or waited for
  auto it = clients_.find(c);
  if (it != clients_.end()) {
    graveyard_.push_back(std::move(it->second));
    clients_.erase(it);
    if (group_ != nullptr) {
      group_->clients--;
      group_->per[worker_].clients--;
    }
  }
  clients_now_.store(clients_.size());
}

void Proxy::Loop::HandleCancel(int32_t pid, int32_t secret) {
  auto it = keys_.find((uint64_t(uint32_t(pid)) << 32) | uint32_t(secret));
  if (it == keys_.end()) {
    // workers > 1: the client may be another loop's.
    if (group_ != nullptr) {
      for (Loop* other : group_->loops) {
        if (other != this) other->ForwardCancel(pid, secret);
      }
    }
    return;
  }
  Client* c = it->second;
  if (c->backend != nullptr) {
    stats_.cancels++;
    SendCancel(c->backend);
  }
}

}  // namespace proxy
}  // namespace corral
