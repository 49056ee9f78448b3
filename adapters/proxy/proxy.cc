#include "adapters/proxy/proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <list>
#include <random>
#include <sstream>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "adapters/proxy/auth.h"
#include "adapters/proxy/config.h"
#include "adapters/proxy/steal.h"
#include "adapters/proxy/wire.h"
#include "common/clock.h"
#include "policies/ref_extractor.h"

namespace corral {
namespace proxy {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kMaxPendingMessages = 100000;

enum class TxnControl { kOther, kBegin, kCommit, kRollback };

// BEGIN / START TRANSACTION, COMMIT / END, ROLLBACK / ABORT as a single
// statement (savepoint forms and prepared-transaction forms are kOther).
TxnControl ClassifyTxnControl(absl::string_view sql) {
  absl::string_view s = absl::StripAsciiWhitespace(sql);
  while (!s.empty() && (s.back() == ';' || absl::ascii_isspace(s.back()))) s.remove_suffix(1);
  if (s.empty() || s.find(';') != absl::string_view::npos) return TxnControl::kOther;
  size_t i = 0;
  while (i < s.size() && absl::ascii_isalpha(s[i])) ++i;
  const std::string w = absl::AsciiStrToLower(s.substr(0, i));
  const std::string rest = absl::AsciiStrToLower(absl::StripAsciiWhitespace(s.substr(i)));
  if (w == "begin") return TxnControl::kBegin;
  if (w == "start" && absl::StartsWith(rest, "transaction")) return TxnControl::kBegin;
  if (w == "commit" || w == "end") {
    if (absl::StartsWith(rest, "prepared") || absl::StrContains(rest, "chain")) return TxnControl::kOther;
    return TxnControl::kCommit;
  }
  if (w == "rollback" || w == "abort") {
    if (absl::StartsWith(rest, "to") || absl::StartsWith(rest, "prepared") ||
        absl::StrContains(rest, "chain")) {
      return TxnControl::kOther;
    }
    return TxnControl::kRollback;
  }
  return TxnControl::kOther;
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }
void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Blocking write of all of `data`; false on error.
bool WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
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

// Blocking read of one typed message (startup phase of a backend).
absl::Status ReadMessage(int fd, std::string* buf, char* type, std::string* body) {
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
    ssize_t n = ::recv(fd, tmp, sizeof(tmp), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError("server closed the connection during startup");
    buf->append(tmp, n);
  }
}

struct Msg {
  char type;
  std::string raw;  // the whole message, type byte included
  absl::string_view body() const { return absl::string_view(raw).substr(5); }
};

struct PreparedDef {
  std::string query;
  std::string types;  // Parse's parameter-type section (count + oids), raw
  std::string key;    // query + '\0' + types
};

struct ParseEntry {
  bool drop = false;  // injected by the proxy: the client must not see its ParseComplete
  std::string key;    // cache key to confirm, "" for the unnamed statement
};

// The messages sent to a backend up to one Sync/Query (one ReadyForQuery).
struct Batch {
  bool swallow = false;  // proxy-internal (held BEGIN, ROLLBACK of an orphan)
  int msgs = 0;
  std::deque<ParseEntry> parses;
  std::deque<bool> closes;  // true: drop the CloseComplete
};

}  // namespace

struct Conn {
  enum Kind { kListen, kClient, kBackend, kMetricsListen, kHttp, kWake };
  Kind kind;
  int fd = -1;
  std::string in;
  size_t in_off = 0;
  std::string out;
  size_t out_off = 0;
  bool epollout = false;
  bool dirty = false;
  bool dead = false;
  explicit Conn(Kind k) : kind(k) {}
  virtual ~Conn() = default;
};

struct Client;

struct Backend : Conn {
  Backend() : Conn(kBackend) {}
  int index = 0;
  Client* client = nullptr;
  RefVec held;  // the affine references of its running transaction (stealing on)
  bool alive = false;
  char status = 'I';
  int32_t pid = 0, secret = 0;
  std::deque<Batch> batches;  // back() is the open one
  struct Cached {
    std::string name;
    std::list<std::string>::iterator lru;
    bool confirmed = false;
  };
  absl::flat_hash_map<std::string, Cached> cache;
  std::list<std::string> lru;  // front = most recently used
  uint64_t next_name = 0;
  int64_t reconnect_at = 0;
  int64_t txns = 0;
  std::string fatal;  // the server's FATAL message before it closed, if any

  bool Idle() const { return batches.size() == 1 && batches.front().msgs == 0; }
  bool Free() const { return alive && client == nullptr && Idle() && status == 'I'; }
};

struct Client : Conn {
  Client() : Conn(kClient) {}
  enum Phase { kStartup, kAuth, kReady };
  uint64_t id = 0;
  Phase phase = kStartup;
  bool admin = false;
  std::string user, database, salt;
  int32_t key_pid = 0, key_secret = 0;
  std::deque<Msg> pending;
  Backend* backend = nullptr;
  bool waiting = false;
  bool affinity = false;  // its current transaction was placed by learned affinity
  int wait_queue = -1;
  int64_t wait_since = 0;
  std::string held_begin;
  bool txn_lost = false;  // its backend died while it was idle in a transaction
  bool over_limit = false;  // accepted beyond max_client_conn: rejected at startup
  std::unique_ptr<auth::ScramServer> scram;  // during SCRAM authentication
  scheduler::Txn txn;
  std::vector<std::string> ref_texts;
  std::string conflict_state;
  bool had_error = false, rolled_back = false;
  absl::flat_hash_map<std::string, PreparedDef> stmts;
  int64_t txns = 0;
};

class Proxy::Loop {
 public:
  Loop(Options* options, Stats* stats, scheduler::Scheduler* sched)
      : opt_(*options), stats_(*stats), sched_(*sched), rng_(std::random_device{}()) {}
  ~Loop();

  absl::Status Init(std::atomic<int>* port, std::atomic<int>* metrics_port);
  void Run();
  void RequestStop() {
    stop_.store(true);
    uint64_t one = 1;
    (void)!::write(wake_.fd, &one, sizeof(one));
  }
  std::string MetricsText() const;

 private:
  // --- plumbing
  void AddFd(Conn* c, uint32_t events);
  void Send(Conn* c, absl::string_view bytes) {
    c->out.append(bytes.data(), bytes.size());
    MarkDirty(c);
  }
  void MarkDirty(Conn* c) {
    if (!c->dirty) {
      c->dirty = true;
      dirty_.push_back(c);
    }
  }
  void Flush(Conn* c);
  bool ReadInto(Conn* c);  // false on EOF/error
  void OnEvent(Conn* c, uint32_t ev);
  void Accept();
  void AcceptHttp();
  void OnHttp(Conn* c);

  // --- clients
  void OnClientInput(Client* c);
  void HandleStartup(Client* c, absl::string_view body);
  void HandlePassword(Client* c, absl::string_view body);
  void FinishLogin(Client* c);
  void ProtocolError(Client* c, absl::string_view sqlstate, absl::string_view message);
  void CloseClient(Client* c);
  void Pump(Client* c);
  bool StartUnit(Client* c);  // detached: route the unit at the front; false: need more input
  bool AnswerHeldExtended(Client* c, size_t end);
  bool AnswerPrepareOnly(Client* c, size_t end);
  void StartTxn(Client* c);
  void Attach(Client* c, Backend* b);
  void Forward(Client* c, Backend* b, char type, absl::string_view raw);
  void EndTxn(Client* c, Backend* b);
  void Dispatch(Backend* b);
  // Ends the backend's association with its client; releases the client's
  // affine references (and, if any, lets idle backends look again).
  void Detach(Backend* b, Client* c);
  // Stealing on: a reference of c's transaction is held by a running one.
  bool Blocked(const Client* c) const {
    if (!c->affinity || inflight_.empty()) return false;
    for (RefId r : c->txn.refs) {
      if (inflight_.contains(r.value())) return true;
    }
    return false;
  }
  void DispatchIdle() {
    for (auto& b : backends_) {
      if (b->Free()) Dispatch(b.get());
    }
  }
  bool waiting_any() const {
    for (const auto& q : waitq_) {
      if (!q.empty()) return true;
    }
    return false;
  }
  StealMode steal_mode() const {
    return !opt_.stealing         ? StealMode::kOff
           : opt_.steal_any       ? StealMode::kAny
           : opt_.steal_inflight  ? StealMode::kInFlight
                                  : StealMode::kAffinity;
  }
  void HandleCancel(int32_t pid, int32_t secret);
  void SendCancel(Backend* b);
  void AdminQuery(Client* c, absl::string_view sql);

  // --- backends
  absl::Status ConnectBackend(Backend* b);
  void OnBackendInput(Backend* b);
  void FailBackend(Backend* b, absl::string_view why);
  void SendInternal(Backend* b, absl::string_view sql);  // swallowed simple query
  void EndBatch(Backend* b) {
    b->batches.push_back(Batch());
  }
  std::string EnsurePrepared(Backend* b, const PreparedDef& d, bool client_parse);
  void Timers();

  Options& opt_;
  Stats& stats_;
  scheduler::Scheduler& sched_;
  std::unique_ptr<RefExtractor> extractor_;
  std::mt19937_64 rng_;
  int epfd_ = -1;
  Conn listen_{Conn::kListen};
  Conn metrics_listen_{Conn::kMetricsListen};
  Conn wake_{Conn::kWake};
  std::atomic<bool> stop_{false};
  std::vector<std::unique_ptr<Backend>> backends_;
  absl::flat_hash_map<Client*, std::unique_ptr<Client>> clients_;
  std::vector<std::unique_ptr<Conn>> http_;
  absl::flat_hash_map<uint64_t, Client*> keys_;
  std::vector<std::deque<Client*>> waitq_;
  // Stealing on: how many running affine transactions hold each reference.
  absl::flat_hash_map<uint64_t, int> inflight_;
  std::vector<Conn*> dirty_;
  std::unique_ptr<char[]> read_buf_;  // ReadInto's scratch (kReadChunk bytes)
  int64_t timers_at_ = 0;             // Timers' last full pass
  std::vector<std::unique_ptr<Conn>> graveyard_;
  std::vector<std::pair<std::string, std::string>> server_params_;
  uint64_t next_client_id_ = 1;
  std::atomic<int64_t> clients_now_{0};
  const bool trace_ = std::getenv("CORRAL_PROXY_TRACE") != nullptr;  // message trace on stderr
};

Proxy::Loop::~Loop() {
  for (auto& b : backends_) {
    if (b->fd >= 0) ::close(b->fd);
  }
  for (auto& [p, c] : clients_) {
    if (c->fd >= 0) ::close(c->fd);
  }
  for (auto& h : http_) {
    if (h->fd >= 0) ::close(h->fd);
  }
  for (Conn* c : {&listen_, &metrics_listen_, &wake_}) {
    if (c->fd >= 0) ::close(c->fd);
  }
  if (epfd_ >= 0) ::close(epfd_);
}

void Proxy::Loop::AddFd(Conn* c, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = c;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, c->fd, &ev);
}

namespace {
absl::StatusOr<int> Listen(const std::string& addr, int port, int* bound_port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
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
}  // namespace

absl::Status Proxy::Loop::Init(std::atomic<int>* port, std::atomic<int>* metrics_port) {
  if (opt_.pool_size < 1) return absl::InvalidArgumentError("pool_size must be at least 1");
  extractor_ = std::make_unique<RefExtractor>(opt_.schema);
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  AddFd(&wake_, EPOLLIN);
  waitq_.resize(opt_.pool_size);
  for (int i = 0; i < opt_.pool_size; ++i) {
    auto b = std::make_unique<Backend>();
    b->index = i;
    if (absl::Status st = ConnectBackend(b.get()); !st.ok()) return st;
    backends_.push_back(std::move(b));
  }
  int p = 0;
  auto fd = Listen(opt_.listen_addr, opt_.listen_port, &p);
  if (!fd.ok()) return fd.status();
  listen_.fd = *fd;
  AddFd(&listen_, EPOLLIN);
  port->store(p);
  if (opt_.metrics_port >= 0) {
    int mp = 0;
    auto mfd = Listen(opt_.listen_addr, opt_.metrics_port, &mp);
    if (!mfd.ok()) return mfd.status();
    metrics_listen_.fd = *mfd;
    AddFd(&metrics_listen_, EPOLLIN);
    metrics_port->store(mp);
  }
  return absl::OkStatus();
}

absl::Status Proxy::Loop::ConnectBackend(Backend* b) {
  auto fd_or = ConnectTcp(opt_.server_host, opt_.server_port);
  if (!fd_or.ok()) return fd_or.status();
  const int fd = *fd_or;
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string pkt;
  size_t at = wire::BeginMessage(&pkt, 0);
  wire::PutInt32(&pkt, wire::kProtocol3);
  for (const auto& [k, v] : {std::pair<std::string, std::string>{"user", opt_.server_user},
                             {"database", opt_.server_dbname},
                             {"application_name", "corral-proxy"}}) {
    pkt.append(k);
    pkt.push_back('\0');
    pkt.append(v);
    pkt.push_back('\0');
  }
  pkt.push_back('\0');
  wire::EndMessage(&pkt, at);
  auto fail = [&](absl::Status st) {
    ::close(fd);
    return st;
  };
  if (!WriteAll(fd, pkt)) return fail(absl::UnavailableError("cannot send the startup packet"));
  std::string buf;
  std::vector<std::pair<std::string, std::string>> params;
  std::unique_ptr<auth::ScramClient> scram;
  while (true) {
    char type = 0;
    std::string body;
    if (absl::Status st = ReadMessage(fd, &buf, &type, &body); !st.ok()) return fail(st);
    wire::Reader r(body);
    if (type == 'R') {
      const int32_t code = r.Int32();
      if (code == 0) continue;
      if (code == 10 || code == 11 || code == 12) {  // SASL: SCRAM-SHA-256
        std::string reply;
        size_t m = wire::BeginMessage(&reply, 'p');
        if (code == 10) {
          scram = std::make_unique<auth::ScramClient>(opt_.server_password);
          const std::string first = scram->FirstMessage();
          reply.append("SCRAM-SHA-256");
          reply.push_back('\0');
          wire::PutInt32(&reply, static_cast<int32_t>(first.size()));
          reply.append(first);
        } else if (scram == nullptr) {
          return fail(absl::UnavailableError("server sent a SASL message out of order"));
        } else if (code == 11) {
          auto final_msg = scram->FinalMessage(r.rest());
          if (!final_msg.ok()) return fail(final_msg.status());
          reply.append(*final_msg);
        } else {
          if (absl::Status st = scram->VerifyServerFinal(r.rest()); !st.ok()) return fail(st);
          continue;
        }
        wire::EndMessage(&reply, m);
        if (!WriteAll(fd, reply)) return fail(absl::UnavailableError("cannot send the SASL response"));
        continue;
      }
      std::string reply;
      size_t m = wire::BeginMessage(&reply, 'p');
      if (code == 3) {
        reply.append(opt_.server_password);
      } else if (code == 5) {
        reply.append(auth::Md5Response(opt_.server_user, opt_.server_password, r.Bytes(4)));
      } else {
        return fail(absl::UnimplementedError(
            absl::StrCat("the server asks for authentication method ", code,
                         " (the proxy speaks trust, password, md5 and SCRAM-SHA-256)")));
      }
      reply.push_back('\0');
      wire::EndMessage(&reply, m);
      if (!WriteAll(fd, reply)) return fail(absl::UnavailableError("cannot send the password"));
    } else if (type == 'S') {
      std::string k(r.CString());
      std::string v(r.CString());
      params.emplace_back(std::move(k), std::move(v));
    } else if (type == 'K') {
      b->pid = r.Int32();
      b->secret = r.Int32();
    } else if (type == 'E') {
      auto f = wire::ParseErrorFields(body);
      return fail(absl::UnavailableError(
          absl::StrCat("server refused the connection: ", f['C'], " ", f['M'])));
    } else if (type == 'Z') {
      break;
    }
  }
  timeval zero{0, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &zero, sizeof(zero));
  SetNonBlocking(fd);
  if (server_params_.empty()) server_params_ = params;
  b->fd = fd;
  b->in = std::move(buf);
  b->in_off = 0;
  b->out.clear();
  b->out_off = 0;
  b->epollout = false;
  b->alive = true;
  b->status = 'I';
  b->batches.clear();
  b->batches.push_back(Batch());
  b->cache.clear();
  b->lru.clear();
  AddFd(b, EPOLLIN);
  return absl::OkStatus();
}

void Proxy::Loop::Run() {
  epoll_event events[256];
  while (!stop_.load()) {
    // Wake in time for a waiting transaction to become stealable.
    int timeout_ms = 100;
    if (steal_mode() == StealMode::kAffinity && opt_.steal_after_ms > 0 && waiting_any()) {
      timeout_ms = static_cast<int>(std::clamp<int64_t>(opt_.steal_after_ms / 2, 1, 100));
    }
    int n = epoll_wait(epfd_, events, 256, timeout_ms);
    for (int i = 0; i < n; ++i) {
      Conn* c = static_cast<Conn*>(events[i].data.ptr);
      if (c->dead) continue;
      OnEvent(c, events[i].events);
    }
    Timers();
    for (size_t i = 0; i < dirty_.size(); ++i) {
      Conn* c = dirty_[i];
      c->dirty = false;
      if (!c->dead) Flush(c);
    }
    dirty_.clear();
    graveyard_.clear();
  }
}

void Proxy::Loop::Flush(Conn* c) {
  while (c->out_off < c->out.size()) {
    ssize_t n = ::send(c->fd, c->out.data() + c->out_off, c->out.size() - c->out_off, MSG_NOSIGNAL);
    if (n > 0) {
      c->out_off += n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    // Write error: the read side will see it too.
    c->out.clear();
    c->out_off = 0;
    return;
  }
  if (c->out_off == c->out.size()) {
    c->out.clear();
    c->out_off = 0;
  } else if (c->out_off > (1u << 20)) {
    c->out.erase(0, c->out_off);
    c->out_off = 0;
  }
  const bool want = !c->out.empty();
  if (want != c->epollout) {
    c->epollout = want;
    epoll_event ev{};
    ev.events = EPOLLIN | (want ? EPOLLOUT : 0);
    ev.data.ptr = c;
    epoll_ctl(epfd_, EPOLL_CTL_MOD, c->fd, &ev);
  }
}

bool Proxy::Loop::ReadInto(Conn* c) {
  if (c->in_off > 0 && c->in_off == c->in.size()) {
    c->in.clear();
    c->in_off = 0;
  }
  // Into the loop's scratch buffer, then appended: growing `in` by a chunk
  // per recv zero-filled 64 KiB each time (measured: 10% of the proxy's CPU
  // under pgbench, in memset).
  if (read_buf_ == nullptr) read_buf_.reset(new char[kReadChunk]);
  size_t total = 0;
  while (total < 16 * kReadChunk) {
    ssize_t n = ::recv(c->fd, read_buf_.get(), kReadChunk, 0);
    if (n > 0) {
      c->in.append(read_buf_.get(), static_cast<size_t>(n));
      total += n;
      if (static_cast<size_t>(n) < kReadChunk) return true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;
  }
  return true;
}

void Proxy::Loop::OnEvent(Conn* c, uint32_t ev) {
  switch (c->kind) {
    case Conn::kWake: {
      uint64_t v;
      (void)!::read(c->fd, &v, sizeof(v));
      return;
    }
    case Conn::kListen:
      Accept();
      return;
    case Conn::kMetricsListen:
      AcceptHttp();
      return;
    case Conn::kHttp:
      OnHttp(c);
      return;
    case Conn::kClient: {
      auto* cl = static_cast<Client*>(c);
      if (ev & EPOLLOUT) Flush(c);
      if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        const bool open = ReadInto(c);
        OnClientInput(cl);
        if (!open && !cl->dead) CloseClient(cl);
      }
      return;
    }
    case Conn::kBackend: {
      auto* b = static_cast<Backend*>(c);
      if (!b->alive) return;
      if (ev & EPOLLOUT) Flush(c);
      if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        const bool open = ReadInto(c);
        OnBackendInput(b);
        if (!open && b->alive) FailBackend(b, "the server closed the connection");
      }
      return;
    }
  }
}

void Proxy::Loop::Accept() {
  while (true) {
    int fd = ::accept4(listen_.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    SetNoDelay(fd);
    const bool over = static_cast<int>(clients_.size()) >= opt_.max_client_conn;
    if (static_cast<int>(clients_.size()) >= 2 * opt_.max_client_conn + 16) {
      stats_.clients_rejected++;
      std::string e;
      wire::AppendError(&e, "FATAL", "53300",
                        absl::StrCat("no more connections allowed (max_client_conn = ",
                                     opt_.max_client_conn, ")"));
      (void)!::send(fd, e.data(), e.size(), MSG_NOSIGNAL);
      ::close(fd);
      continue;
    }
    auto c = std::make_unique<Client>();
    c->fd = fd;
    c->id = next_client_id_++;
    c->over_limit = over;  // told at its startup packet (after any SSLRequest)
    Client* raw = c.get();
    clients_[raw] = std::move(c);
    clients_now_.store(clients_.size());
    stats_.clients_accepted++;
    AddFd(raw, EPOLLIN);
  }
}

void Proxy::Loop::ProtocolError(Client* c, absl::string_view sqlstate, absl::string_view message) {
  stats_.protocol_errors++;
  wire::AppendError(&c->out, "FATAL", sqlstate, message);
  // Best effort: the error is small; the socket is closed right after.
  if (c->out_off < c->out.size()) {
    (void)!::send(c->fd, c->out.data() + c->out_off, c->out.size() - c->out_off, MSG_NOSIGNAL);
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
    if (c->backend != nullptr && c->pending.empty() && !c->admin && f.type != 'X') {
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
  if (code == wire::kSslRequest || code == wire::kGssEncRequest) {
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
  if (c->over_limit) {
    stats_.clients_rejected++;
    ProtocolError(c, "53300",
                  absl::StrCat("no more connections allowed (max_client_conn = ", opt_.max_client_conn, ")"));
    return;
  }
  while (r.ok()) {
    absl::string_view k = r.CString();
    if (k.empty()) break;
    absl::string_view v = r.CString();
    if (k == "user") c->user = std::string(v);
    if (k == "database") c->database = std::string(v);
  }
  if (c->user.empty()) {
    ProtocolError(c, "28000", "no PostgreSQL user name specified in startup packet");
    return;
  }
  if (c->database.empty()) c->database = c->user;
  c->admin = c->database == opt_.admin_dbname;
  if (opt_.auth_type == "scram-sha-256") {
    std::string mechs = "SCRAM-SHA-256";
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

void Proxy::Loop::HandlePassword(Client* c, absl::string_view body) {
  wire::Reader r(body);
  if (opt_.auth_type == "scram-sha-256") {
    auto it = opt_.users.find(c->user);
    const std::string failed = absl::StrCat("password authentication failed for user \"", c->user, "\"");
    if (it == opt_.users.end()) {
      ProtocolError(c, "28P01", failed);
      return;
    }
    if (c->scram == nullptr) {  // SASLInitialResponse
      absl::string_view mech = r.CString();
      const int32_t len = r.Int32();
      absl::string_view data = len >= 0 ? r.Bytes(len) : absl::string_view();
      if (!r.ok() || mech != "SCRAM-SHA-256") {
        ProtocolError(c, "28000", "expected a SCRAM-SHA-256 SASLInitialResponse");
        return;
      }
      c->scram = std::make_unique<auth::ScramServer>(it->second);
      auto first = c->scram->ServerFirst(data);
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
      ProtocolError(c, "28P01", failed);
      return;
    }
    wire::AppendAuth(&c->out, 12, *final_msg);
    c->scram.reset();
    FinishLogin(c);
    return;
  }
  absl::string_view given = r.CString();
  auto it = opt_.users.find(c->user);
  if (it == opt_.users.end() || auth::Md5Response(c->user, it->second, c->salt) != given) {
    ProtocolError(c, "28P01", absl::StrCat("password authentication failed for user \"", c->user, "\""));
    return;
  }
  FinishLogin(c);
}

void Proxy::Loop::FinishLogin(Client* c) {
  wire::AppendAuth(&c->out, 0);
  for (const auto& [k, v] : server_params_) wire::AppendParameterStatus(&c->out, k, v);
  do {
    c->key_pid = static_cast<int32_t>(rng_() & 0x7fffffff);
    c->key_secret = static_cast<int32_t>(rng_());
  } while (keys_.contains((uint64_t(uint32_t(c->key_pid)) << 32) | uint32_t(c->key_secret)));
  keys_[(uint64_t(uint32_t(c->key_pid)) << 32) | uint32_t(c->key_secret)] = c;
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
  keys_.erase((uint64_t(uint32_t(c->key_pid)) << 32) | uint32_t(c->key_secret));
  if (c->waiting) {
    auto& q = waitq_[c->wait_queue];
    q.erase(std::remove(q.begin(), q.end(), c), q.end());
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
  }
  auto it = clients_.find(c);
  if (it != clients_.end()) {
    graveyard_.push_back(std::move(it->second));
    clients_.erase(it);
  }
  clients_now_.store(clients_.size());
}

void Proxy::Loop::SendInternal(Backend* b, absl::string_view sql) {
  std::string q;
  size_t at = wire::BeginMessage(&q, 'Q');
  q.append(sql.data(), sql.size());
  q.push_back('\0');
  wire::EndMessage(&q, at);
  Send(b, q);
  b->batches.back().swallow = true;
  b->batches.back().msgs++;
  EndBatch(b);
}

// ---------------------------------------------------------------- routing

void Proxy::Loop::Pump(Client* c) {
  while (!c->dead && !c->pending.empty()) {
    if (c->admin) {
      Msg m = std::move(c->pending.front());
      c->pending.pop_front();
      if (m.type == 'X') {
        CloseClient(c);
        return;
      }
      if (m.type != 'Q') {
        wire::AppendError(&c->out, "ERROR", "0A000",
                          "the admin console speaks the simple query protocol only");
        if (m.type == 'S') wire::AppendReadyForQuery(&c->out, 'I');
        MarkDirty(c);
        continue;
      }
      wire::Reader r(m.body());
      AdminQuery(c, r.CString());
      continue;
    }
    if (c->backend != nullptr) {
      Msg& m = c->pending.front();
      if (m.type == 'X') {
        CloseClient(c);
        return;
      }
      Backend* b = c->backend;
      if (trace_) std::fprintf(stderr, "c%llu -> b%d %c\n", (unsigned long long)c->id, b->index, m.type);
      Forward(c, b, m.type, m.raw);
      c->pending.pop_front();
      continue;
    }
    if (c->waiting) return;
    if (!StartUnit(c)) return;
  }
}

// Detached client: the unit at the front of its pending messages (a Query, or
// extended-protocol messages up to Sync/Flush) is answered locally (held
// BEGIN / COMMIT of an empty transaction) or routed.
bool Proxy::Loop::StartUnit(Client* c) {
  Msg& m = c->pending.front();
  if (m.type == 'X') {
    CloseClient(c);
    return false;
  }
  if (m.type == 'Q') {
    wire::Reader r(m.body());
    absl::string_view sql = r.CString();
    if (c->txn_lost) {
      c->txn_lost = false;
      wire::AppendError(&c->out, "ERROR", "08006",
                        "server connection lost: the transaction was rolled back");
      wire::AppendReadyForQuery(&c->out, 'I');
      MarkDirty(c);
      c->pending.pop_front();
      return true;
    }
    const TxnControl tc = ClassifyTxnControl(sql);
    if (tc == TxnControl::kBegin) {
      if (c->held_begin.empty()) c->held_begin = std::string(sql);
      wire::AppendCommandComplete(&c->out, "BEGIN");
      wire::AppendReadyForQuery(&c->out, 'T');
      MarkDirty(c);
      c->pending.pop_front();
      return true;
    }
    if ((tc == TxnControl::kCommit || tc == TxnControl::kRollback) && !c->held_begin.empty()) {
      c->held_begin.clear();
      stats_.transactions++;
      if (tc == TxnControl::kCommit) stats_.commits++; else stats_.rollbacks++;
      wire::AppendCommandComplete(&c->out, tc == TxnControl::kCommit ? "COMMIT" : "ROLLBACK");
      wire::AppendReadyForQuery(&c->out, 'I');
      MarkDirty(c);
      c->pending.pop_front();
      return true;
    }
    c->txn.refs.clear();
    c->txn.ref_mult.clear();
    c->ref_texts.clear();
    (void)extractor_->Extract(sql, sched_.policy().extraction, ParamSpan(), &c->txn.refs,
                              &c->txn.ref_mult, &c->ref_texts);
    StartTxn(c);
    return true;
  }
  // Extended protocol: find the unit's end.
  size_t end = 0;
  while (end < c->pending.size() && c->pending[end].type != 'S' && c->pending[end].type != 'H' &&
         c->pending[end].type != 'Q') {
    ++end;
  }
  if (end == c->pending.size()) return false;  // wait for the Sync
  if (c->pending[end].type == 'Q') --end;      // no Sync before a Query: route what is there
  if (c->txn_lost) {
    c->txn_lost = false;
    wire::AppendError(&c->out, "ERROR", "08006",
                      "server connection lost: the transaction was rolled back");
    for (size_t i = 0; i <= end; ++i) {
      if (c->pending.front().type == 'S') wire::AppendReadyForQuery(&c->out, 'I');
      c->pending.pop_front();
    }
    MarkDirty(c);
    return true;
  }
  if (AnswerHeldExtended(c, end)) return true;
  if (AnswerPrepareOnly(c, end)) return true;
  // References: every Bind's statement text with its text parameters.
  c->txn.refs.clear();
  c->txn.ref_mult.clear();
  c->ref_texts.clear();
  absl::flat_hash_map<std::string, std::string> local;  // statements parsed in this unit
  std::vector<ParamValue> params;
  for (size_t i = 0; i <= end; ++i) {
    const Msg& u = c->pending[i];
    wire::Reader r(u.body());
    if (u.type == 'P') {
      std::string name(r.CString());
      local[name] = std::string(r.CString());
    } else if (u.type == 'B') {
      r.CString();  // portal
      std::string stmt(r.CString());
      const std::string* text = nullptr;
      if (auto it = local.find(stmt); it != local.end()) {
        text = &it->second;
      } else if (auto it2 = c->stmts.find(stmt); it2 != c->stmts.end()) {
        text = &it2->second.query;
      }
      if (text == nullptr) continue;
      const int16_t nfmt = r.Int16();
      std::vector<int16_t> fmts(std::max<int16_t>(nfmt, 0));
      for (auto& f : fmts) f = r.Int16();
      const int16_t np = r.Int16();
      params.clear();
      for (int16_t p = 0; p < np && r.ok(); ++p) {
        const int32_t len = r.Int32();
        const int16_t fmt = fmts.empty() ? 0 : (fmts.size() == 1 ? fmts[0] : fmts[p]);
        ParamValue v;
        if (len < 0) {
          v.is_null = true;
        } else {
          v.text = r.Bytes(len);
          if (fmt != 0) v.is_null = true;  // binary: no reference from it
        }
        params.push_back(v);
      }
      if (!r.ok()) continue;
      (void)extractor_->Extract(*text, sched_.policy().extraction, ParamSpan(params), &c->txn.refs,
                                &c->txn.ref_mult, &c->ref_texts);
    }
  }
  StartTxn(c);
  return true;
}

// A unit that only runs BEGIN (or COMMIT/ROLLBACK of a held BEGIN) is
// answered by the proxy with the responses the server would send.
bool Proxy::Loop::AnswerHeldExtended(Client* c, size_t end) {
  absl::flat_hash_map<std::string, std::string> local;
  TxnControl kind = TxnControl::kOther;
  int executes = 0;
  for (size_t i = 0; i <= end; ++i) {
    const Msg& u = c->pending[i];
    wire::Reader r(u.body());
    if (u.type == 'P') {
      std::string name(r.CString());
      local[name] = std::string(r.CString());
    } else if (u.type == 'B') {
      r.CString();
      std::string stmt(r.CString());
      std::string text;
      if (auto it = local.find(stmt); it != local.end()) {
        text = it->second;
      } else if (auto it2 = c->stmts.find(stmt); it2 != c->stmts.end()) {
        text = it2->second.query;
      } else {
        return false;
      }
      const TxnControl k = ClassifyTxnControl(text);
      if (k == TxnControl::kOther || (kind != TxnControl::kOther && k != kind)) return false;
      kind = k;
    } else if (u.type == 'E') {
      ++executes;
    } else if (u.type == 'D' || u.type == 'S' || u.type == 'H') {
      // answerable
    } else {
      return false;
    }
  }
  if (executes != 1 || kind == TxnControl::kOther) return false;
  if (kind != TxnControl::kBegin && c->held_begin.empty()) return false;
  std::string begin_text;
  for (size_t i = 0; i <= end; ++i) {
    Msg u = std::move(c->pending.front());
    c->pending.pop_front();
    wire::Reader r(u.body());
    switch (u.type) {
      case 'P': {
        std::string name(r.CString());
        std::string query(r.CString());
        if (!name.empty()) {
          PreparedDef d;
          d.query = query;
          d.types = std::string(r.rest());
          d.key = absl::StrCat(d.query, absl::string_view("\0", 1), d.types);
          c->stmts[name] = std::move(d);
        }
        begin_text = query;
        wire::AppendEmpty(&c->out, '1');
        break;
      }
      case 'B': {
        r.CString();
        std::string stmt(r.CString());
        if (auto it = local.find(stmt); it != local.end()) begin_text = it->second;
        else begin_text = c->stmts[stmt].query;
        wire::AppendEmpty(&c->out, '2');
        break;
      }
      case 'D': {
        if (r.Byte() == 'S') {
          std::string pd;
          size_t at = wire::BeginMessage(&pd, 't');
          wire::PutInt16(&pd, 0);
          wire::EndMessage(&pd, at);
          c->out.append(pd);
        }
        wire::AppendEmpty(&c->out, 'n');
        break;
      }
      case 'E':
        if (kind == TxnControl::kBegin) {
          if (c->held_begin.empty()) c->held_begin = begin_text;
          wire::AppendCommandComplete(&c->out, "BEGIN");
        } else {
          c->held_begin.clear();
          stats_.transactions++;
          if (kind == TxnControl::kCommit) stats_.commits++; else stats_.rollbacks++;
          wire::AppendCommandComplete(&c->out, kind == TxnControl::kCommit ? "COMMIT" : "ROLLBACK");
        }
        break;
      case 'S':
        wire::AppendReadyForQuery(&c->out, c->held_begin.empty() ? 'I' : 'T');
        break;
      default:
        break;
    }
  }
  MarkDirty(c);
  return true;
}

// A unit of named Parses and a Sync only (libpq's PQprepare) outside a
// transaction needs no backend: the statements are recorded for the client
// and prepared on demand where its transactions land. A syntax error is
// reported here (libpg_query); other errors (a missing table) come with the
// first execution. Answering locally also keeps synchronous PQprepare calls
// of a single-threaded client from waiting behind its own open transactions.
bool Proxy::Loop::AnswerPrepareOnly(Client* c, size_t end) {
  if (c->pending[end].type != 'S') return false;
  for (size_t i = 0; i < end; ++i) {
    const Msg& u = c->pending[i];
    if (u.type != 'P') return false;
    wire::Reader r(u.body());
    if (r.CString().empty()) return false;
  }
  if (end == 0) return false;
  bool failed = false;
  for (size_t i = 0; i <= end; ++i) {
    Msg u = std::move(c->pending.front());
    c->pending.pop_front();
    if (u.type == 'S') {
      wire::AppendReadyForQuery(&c->out, c->held_begin.empty() ? 'I' : (failed ? 'E' : 'T'));
      break;
    }
    if (failed) continue;
    wire::Reader r(u.body());
    std::string name(r.CString());
    PreparedDef d;
    d.query = std::string(r.CString());
    d.types = std::string(r.rest());
    d.key = absl::StrCat(d.query, absl::string_view("\0", 1), d.types);
    RefVec scratch;
    absl::Status st = extractor_->Extract(d.query, sched_.policy().extraction, &scratch);
    if (!st.ok() && SyntaxErrorPosition(st).has_value()) {
      wire::AppendError(&c->out, "ERROR", "42601", st.message());
      failed = true;
      continue;
    }
    c->stmts[name] = std::move(d);
    wire::AppendEmpty(&c->out, '1');
  }
  MarkDirty(c);
  return true;
}

void Proxy::Loop::StartTxn(Client* c) {
  c->txn.decision_start_ns = 0;
  c->txn.attempts = 1;
  const StealMode mode = steal_mode();
  c->affinity = false;
  // Affinity only matters to the affinity-aware rule (it costs a Decide).
  const bool want = mode == StealMode::kAffinity || mode == StealMode::kInFlight;
  const QueueId q = want ? sched_.Route(c->txn, &c->affinity) : sched_.Route(c->txn);
  if (c->affinity) stats_.affine_txns++;
  const int qi = std::clamp<int>(q.value(), 0, opt_.pool_size - 1);
  stats_.transactions++;
  Backend* b = backends_[qi].get();
  const bool blocked = mode == StealMode::kInFlight && Blocked(c);
  if (b->Free() && waitq_[qi].empty() && !blocked) {
    Attach(c, b);
    return;
  }
  c->waiting = true;
  c->wait_queue = qi;
  c->wait_since = MonoNanos();
  waitq_[qi].push_back(c);
  stats_.queue_waits++;
  if (MaySteal(mode, c->affinity, blocked, 0, opt_.steal_after_ms * 1000000LL)) {
    for (auto& other : backends_) {
      if (other->Free()) Dispatch(other.get());
      if (!c->waiting) break;
    }
  }
}

void Proxy::Loop::Attach(Client* c, Backend* b) {
  b->client = c;
  c->backend = b;
  b->held.clear();
  if (c->affinity && steal_mode() == StealMode::kInFlight) {
    for (RefId r : c->txn.refs) {
      if (!absl::c_linear_search(b->held, r)) {
        b->held.push_back(r);
        inflight_[r.value()]++;
      }
    }
  }
  c->waiting = false;
  c->conflict_state.clear();
  c->had_error = false;
  c->rolled_back = false;
  b->txns++;
  c->txns++;
  if (!c->held_begin.empty()) {
    SendInternal(b, c->held_begin);
    c->held_begin.clear();
  }
}

void Proxy::Loop::Dispatch(Backend* b) {
  if (!b->Free()) return;
  Client* pick = nullptr;
  const StealMode mode = steal_mode();
  const int64_t now = MonoNanos();
  const int64_t after = opt_.steal_after_ms * 1000000LL;
  auto blocked = [this](const Client* w) { return Blocked(w); };
  auto since = [](const Client* w) { return w->wait_since; };
  auto& own = waitq_[b->index];
  const int mine = PickOwn(own, mode, now, after, blocked, since);
  if (mine >= 0) {
    pick = own[mine];
    own.erase(own.begin() + mine);
  } else if (mode != StealMode::kOff) {
    const StealPick sp = PickSteal(
        waitq_, b->index, mode, now, after, [](const Client* w) { return w->affinity; }, blocked,
        since);
    if (sp.queue < 0) return;
    auto& wq = waitq_[sp.queue];
    pick = wq[sp.pos];
    wq.erase(wq.begin() + sp.pos);
    stats_.steals++;
    if (pick->affinity) stats_.steals_affine++;
  } else {
    return;
  }
  Attach(pick, b);
  Pump(pick);
}

std::string Proxy::Loop::EnsurePrepared(Backend* b, const PreparedDef& d, bool client_parse) {
  auto it = b->cache.find(d.key);
  std::string msg;
  if (it != b->cache.end()) {
    b->lru.splice(b->lru.begin(), b->lru, it->second.lru);
    if (!client_parse) return it->second.name;
    // The client parses again: close and re-parse so it gets its own
    // ParseComplete (and any error) in order.
    size_t at = wire::BeginMessage(&msg, 'C');
    msg.push_back('S');
    msg.append(it->second.name);
    msg.push_back('\0');
    wire::EndMessage(&msg, at);
    b->batches.back().closes.push_back(true);
    it->second.confirmed = false;
  } else {
    if (b->cache.size() >= opt_.prepared_cache_size && !b->lru.empty()) {
      const std::string victim = b->lru.back();
      auto v = b->cache.find(victim);
      size_t at = wire::BeginMessage(&msg, 'C');
      msg.push_back('S');
      msg.append(v->second.name);
      msg.push_back('\0');
      wire::EndMessage(&msg, at);
      b->batches.back().closes.push_back(true);
      b->cache.erase(v);
      b->lru.pop_back();
    }
    b->lru.push_front(d.key);
    Backend::Cached cached;
    cached.name = absl::StrCat("corral_s", b->next_name++);
    cached.lru = b->lru.begin();
    it = b->cache.emplace(d.key, std::move(cached)).first;
  }
  size_t at = wire::BeginMessage(&msg, 'P');
  msg.append(it->second.name);
  msg.push_back('\0');
  msg.append(d.query);
  msg.push_back('\0');
  msg.append(d.types);
  wire::EndMessage(&msg, at);
  b->batches.back().parses.push_back(ParseEntry{!client_parse, d.key});
  if (!client_parse) stats_.parses_injected++;
  Send(b, msg);
  return it->second.name;
}

void Proxy::Loop::Forward(Client* c, Backend* b, char type, absl::string_view raw) {
  const absl::string_view body = raw.substr(5);
  Batch& open = b->batches.back();
  open.msgs++;
  wire::Reader r(body);
  switch (type) {
    case 'Q':
    case 'S':
    case 'F':
      Send(b, raw);
      EndBatch(b);
      return;
    case 'P': {
      std::string name(r.CString());
      if (name.empty()) {
        open.parses.push_back(ParseEntry{false, ""});
        Send(b, raw);
        return;
      }
      PreparedDef d;
      d.query = std::string(r.CString());
      d.types = std::string(r.rest());
      d.key = absl::StrCat(d.query, absl::string_view("\0", 1), d.types);
      EnsurePrepared(b, d, /*client_parse=*/true);
      c->stmts[name] = std::move(d);
      return;
    }
    case 'B': {
      absl::string_view portal = r.CString();
      std::string stmt(r.CString());
      auto it = stmt.empty() ? c->stmts.end() : c->stmts.find(stmt);
      if (it == c->stmts.end()) {
        Send(b, raw);
        return;
      }
      const std::string bname = EnsurePrepared(b, it->second, false);
      std::string msg;
      size_t at = wire::BeginMessage(&msg, 'B');
      msg.append(portal.data(), portal.size());
      msg.push_back('\0');
      msg.append(bname);
      msg.push_back('\0');
      absl::string_view rest = r.rest();
      msg.append(rest.data(), rest.size());
      wire::EndMessage(&msg, at);
      Send(b, msg);
      return;
    }
    case 'D':
    case 'C': {
      const uint8_t what = r.Byte();
      std::string name(r.CString());
      if (type == 'C') open.closes.push_back(false);
      if (what != 'S' || name.empty()) {
        Send(b, raw);
        return;
      }
      std::string bname;
      if (type == 'C') {
        c->stmts.erase(name);
        bname = "corral_closed";  // closing a missing statement is not an error
      } else {
        auto it = c->stmts.find(name);
        if (it == c->stmts.end()) {
          Send(b, raw);
          return;
        }
        bname = EnsurePrepared(b, it->second, false);
      }
      std::string msg;
      size_t at = wire::BeginMessage(&msg, type);
      msg.push_back('S');
      msg.append(bname);
      msg.push_back('\0');
      wire::EndMessage(&msg, at);
      Send(b, msg);
      return;
    }
    default:
      Send(b, raw);
      return;
  }
}

void Proxy::Loop::OnBackendInput(Backend* b) {
  while (b->alive) {
    absl::string_view buf = absl::string_view(b->in).substr(b->in_off);
    wire::Frame f;
    size_t used = 0;
    if (absl::Status st = wire::NextFrame(buf, 1u << 30, &f, &used); !st.ok()) {
      FailBackend(b, st.message());
      return;
    }
    if (used == 0) break;
    b->in_off += used;
    Client* c = b->client;
    Batch& front = b->batches.front();
    bool forward = !front.swallow;
    if (trace_) {
      std::fprintf(stderr, "b%d -> c%lld %c%s\n", b->index, c ? (long long)c->id : -1LL, f.type,
                   f.type == 'Z' ? std::string(f.body).c_str() : "");
    }
    switch (f.type) {
      case '1':
        if (!front.parses.empty()) {
          ParseEntry e = std::move(front.parses.front());
          front.parses.pop_front();
          if (!e.key.empty()) {
            if (auto it = b->cache.find(e.key); it != b->cache.end()) it->second.confirmed = true;
          }
          if (e.drop) forward = false;
        }
        break;
      case '3':
        if (!front.closes.empty()) {
          if (front.closes.front()) forward = false;
          front.closes.pop_front();
        }
        break;
      case 'E': {
        absl::string_view state = wire::ErrorSqlState(f.body);
        if (absl::StartsWith(state, "57P") || absl::StartsWith(state, "08")) {
          auto fields = wire::ParseErrorFields(f.body);
          if (fields['S'] == "FATAL" || fields['S'] == "PANIC") {
            // The server is closing this connection; the client's connection
            // (to the proxy) survives: FailBackend reports 08006 instead.
            b->fatal = fields['M'];
            forward = false;
            break;
          }
        }
        if (forward && c != nullptr) {
          if (state == "40001" || state == "40P01") {
            c->conflict_state = std::string(state);
          } else {
            c->had_error = true;
          }
        }
        break;
      }
      case 'C':
        if (forward && c != nullptr && absl::StartsWith(f.body, "ROLLBACK")) c->rolled_back = true;
        break;
      case 'S': {
        wire::Reader r(f.body);
        std::string k(r.CString());
        std::string v(r.CString());
        for (auto& [pk, pv] : server_params_) {
          if (pk == k && b->index == 0 && c == nullptr) pv = v;
        }
        break;
      }
      case 'Z': {
        b->status = f.body.empty() ? 'I' : f.body[0];
        // Parses skipped after an error never happened: forget them.
        for (const ParseEntry& e : front.parses) {
          if (e.key.empty()) continue;
          auto it = b->cache.find(e.key);
          if (it != b->cache.end() && !it->second.confirmed) {
            b->lru.erase(it->second.lru);
            b->cache.erase(it);
          }
        }
        if (b->batches.size() > 1) b->batches.pop_front();
        if (forward && c != nullptr) Send(c, f.raw);
        if (b->Idle()) {
          if (c != nullptr && b->status == 'I') {
            EndTxn(c, b);
          } else if (c == nullptr) {
            if (b->status != 'I') {
              SendInternal(b, "ROLLBACK");
            } else {
              Dispatch(b);
            }
          }
        }
        continue;
      }
      default:
        break;
    }
    if (forward && c != nullptr) Send(c, f.raw);
  }
  if (b->in_off == b->in.size()) {
    b->in.clear();
    b->in_off = 0;
  } else if (b->in_off > (1u << 20)) {
    b->in.erase(0, b->in_off);
    b->in_off = 0;
  }
}

void Proxy::Loop::EndTxn(Client* c, Backend* b) {
  scheduler::Outcome o;
  if (!c->conflict_state.empty()) {
    o = scheduler::Outcome::kConflictAbort;
    (c->conflict_state == "40001" ? stats_.aborts_40001 : stats_.aborts_40P01)++;
  } else if (c->had_error) {
    o = scheduler::Outcome::kFailed;
    stats_.user_errors++;
  } else if (c->rolled_back) {
    o = scheduler::Outcome::kUserAbort;
    stats_.rollbacks++;
  } else {
    o = scheduler::Outcome::kCommitted;
    stats_.commits++;
  }
  if (o == scheduler::Outcome::kCommitted || o == scheduler::Outcome::kConflictAbort) {
    const std::vector<std::string>& texts = c->ref_texts;
    history::History::TextProvider provider = [&texts](size_t i) {
      return i < texts.size() ? texts[i] : std::string();
    };
    sched_.history().Record(c->txn.refs, o == scheduler::Outcome::kCommitted, &provider);
  } else {
    sched_.ReportOutcome(c->txn, o);
  }
  Detach(b, c);
  Dispatch(b);
  Pump(c);
}

void Proxy::Loop::Detach(Backend* b, Client* c) {
  b->client = nullptr;
  c->backend = nullptr;
  if (b->held.empty()) return;
  for (RefId r : b->held) {
    auto it = inflight_.find(r.value());
    if (it != inflight_.end() && --it->second <= 0) inflight_.erase(it);
  }
  b->held.clear();
  // Transactions waiting for these references may run now, on their own
  // (idle) backend or stolen.
  DispatchIdle();
}

void Proxy::Loop::FailBackend(Backend* b, absl::string_view why) {
  stats_.backend_failures++;
  epoll_ctl(epfd_, EPOLL_CTL_DEL, b->fd, nullptr);
  ::close(b->fd);
  b->fd = -1;
  b->alive = false;
  if (Client* c = b->client; c != nullptr) {
    int outstanding = 0;
    for (size_t i = 0; i + 1 < b->batches.size(); ++i) {
      if (!b->batches[i].swallow) ++outstanding;
    }
    wire::AppendError(&c->out, "ERROR", "08006",
                      absl::StrCat("server connection lost (backend ", b->index, ": ",
                                   b->fatal.empty() ? std::string(why) : b->fatal,
                                   "): the transaction on it was rolled back"));
    for (int i = 0; i < outstanding; ++i) wire::AppendReadyForQuery(&c->out, 'I');
    if (outstanding == 0) c->txn_lost = true;
    MarkDirty(c);
    sched_.ReportOutcome(c->txn, scheduler::Outcome::kFailed);
    Detach(b, c);
    // Anything the client sent after the failed batch is routed anew.
  }
  b->batches.clear();
  b->batches.push_back(Batch());
  b->fatal.clear();
  if (absl::Status st = ConnectBackend(b); !st.ok()) {
    b->reconnect_at = MonoNanos() + 1000000000LL;
  } else {
    Dispatch(b);
  }
}

void Proxy::Loop::SendCancel(Backend* b) {
  auto fd = ConnectTcp(opt_.server_host, opt_.server_port);
  if (!fd.ok()) return;
  std::string pkt;
  wire::PutInt32(&pkt, 16);
  wire::PutInt32(&pkt, wire::kCancelRequest);
  wire::PutInt32(&pkt, b->pid);
  wire::PutInt32(&pkt, b->secret);
  WriteAll(*fd, pkt);
  ::close(*fd);
}

void Proxy::Loop::HandleCancel(int32_t pid, int32_t secret) {
  auto it = keys_.find((uint64_t(uint32_t(pid)) << 32) | uint32_t(secret));
  if (it == keys_.end()) return;
  Client* c = it->second;
  if (c->backend != nullptr) {
    stats_.cancels++;
    SendCancel(c->backend);
  }
}

void Proxy::Loop::Timers() {
  const int64_t now = MonoNanos();
  // Everything here is on a millisecond scale or coarser; under load the
  // loop turns far more often than that.
  if (now - timers_at_ < 1000000) return;
  timers_at_ = now;
  for (auto& b : backends_) {
    if (!b->alive && b->reconnect_at != 0 && now >= b->reconnect_at) {
      if (ConnectBackend(b.get()).ok()) {
        b->reconnect_at = 0;
        Dispatch(b.get());
      } else {
        b->reconnect_at = now + 1000000000LL;
      }
    }
  }
  // Affinity-aware stealing: a transaction that has waited past steal_after
  // becomes stealable without any event; idle backends look again.
  if (steal_mode() == StealMode::kAffinity && opt_.steal_after_ms > 0 && waiting_any()) {
    DispatchIdle();
  }
  if (opt_.query_wait_timeout_ms <= 0) return;
  const int64_t limit = opt_.query_wait_timeout_ms * 1000000LL;
  std::vector<Client*> expired;
  for (auto& q : waitq_) {
    for (Client* c : q) {
      if (now - c->wait_since > limit) expired.push_back(c);
    }
  }
  for (Client* c : expired) {
    stats_.wait_timeouts++;
    ProtocolError(c, "08P01",
                  absl::StrCat("query_wait_timeout: waited more than ", opt_.query_wait_timeout_ms,
                               " ms for a server connection"));
  }
}

// ---------------------------------------------------------------- admin

void Proxy::Loop::AdminQuery(Client* c, absl::string_view sql_in) {
  std::string sql = absl::AsciiStrToLower(absl::StripAsciiWhitespace(sql_in));
  while (!sql.empty() && (sql.back() == ';' || absl::ascii_isspace(sql.back()))) sql.pop_back();
  std::vector<std::string> words = absl::StrSplit(sql, ' ', absl::SkipEmpty());
  std::string& out = c->out;
  auto done = [&]() {
    wire::AppendReadyForQuery(&out, 'I');
    MarkDirty(c);
  };
  if (words.size() == 2 && words[0] == "show" && words[1] == "stats") {
    std::vector<std::vector<std::string>> rows;
    auto row = [&](const char* k, int64_t v) { rows.push_back({k, std::to_string(v)}); };
    row("transactions", stats_.transactions);
    row("commits", stats_.commits);
    row("conflict_aborts_40001", stats_.aborts_40001);
    row("conflict_aborts_40P01", stats_.aborts_40P01);
    row("user_errors", stats_.user_errors);
    row("rollbacks", stats_.rollbacks);
    row("queue_waits", stats_.queue_waits);
    row("steals", stats_.steals);
    row("steals_affine", stats_.steals_affine);
    row("affine_transactions", stats_.affine_txns);
    row("wait_timeouts", stats_.wait_timeouts);
    row("clients", static_cast<int64_t>(clients_.size()));
    row("clients_accepted", stats_.clients_accepted);
    row("clients_rejected", stats_.clients_rejected);
    row("client_rollbacks", stats_.client_rollbacks);
    row("protocol_errors", stats_.protocol_errors);
    row("backend_failures", stats_.backend_failures);
    row("cancels", stats_.cancels);
    row("parses_injected", stats_.parses_injected);
    wire::AppendTextResult(&out, {"stat", "value"}, rows);
    return done();
  }
  if (words.size() == 2 && words[0] == "show" && words[1] == "queues") {
    std::vector<std::vector<std::string>> rows;
    for (auto& b : backends_) {
      rows.push_back({std::to_string(b->index), std::to_string(b->pid),
                      !b->alive ? "down" : (b->client ? "active" : "idle"),
                      b->client ? std::to_string(b->client->id) : "",
                      std::to_string(waitq_[b->index].size()), std::to_string(b->txns),
                      std::to_string(b->cache.size())});
    }
    wire::AppendTextResult(&out, {"queue", "server_pid", "state", "client", "waiting", "transactions",
                                  "prepared"},
                           rows);
    return done();
  }
  if (words.size() == 2 && words[0] == "show" && words[1] == "clients") {
    std::vector<std::vector<std::string>> rows;
    for (auto& [p, cl] : clients_) {
      std::string state = cl->admin ? "admin"
                          : cl->backend ? "active"
                          : cl->waiting ? "waiting"
                                        : "idle";
      rows.push_back({std::to_string(cl->id), cl->user, cl->database, state,
                      cl->backend ? std::to_string(cl->backend->index)
                                  : (cl->waiting ? std::to_string(cl->wait_queue) : ""),
                      std::to_string(cl->txns)});
    }
    wire::AppendTextResult(&out, {"id", "user", "database", "state", "queue", "transactions"}, rows);
    return done();
  }
  if (words.size() == 2 && words[0] == "show" && words[1] == "history") {
    std::vector<std::vector<std::string>> rows;
    for (const auto& e : sched_.history().TopByAborts(20)) {
      rows.push_back({e.text.empty() ? absl::StrFormat("%016x", e.ref.value()) : e.text,
                      std::to_string(e.counts.aborts), std::to_string(e.counts.commits)});
    }
    wire::AppendTextResult(&out, {"reference", "aborts", "commits"}, rows);
    return done();
  }
  if (words.size() == 2 && words[0] == "show" && words[1] == "policy") {
    wire::AppendTextResult(&out, {"policy", "stealing"},
                           {{PolicyName(sched_.policy()), std::string(StealModeName(steal_mode()))}});
    return done();
  }
  if (words.size() == 3 && words[0] == "set" && words[1] == "policy") {
    std::string name = words[2];
    name.erase(std::remove(name.begin(), name.end(), '\''), name.end());
    auto p = ParsePolicy(name);
    if (!p.ok()) {
      wire::AppendError(&out, "ERROR", "22023", p.status().message());
      return done();
    }
    sched_.SetPolicy(*p);
    opt_.policy = *p;
    wire::AppendCommandComplete(&out, "SET");
    return done();
  }
  if (words.size() == 1 && words[0] == "reload") {
    absl::Status st = absl::OkStatus();
    if (!opt_.config_path.empty()) {
      Options fresh = opt_;
      st = LoadConfigFile(opt_.config_path, &fresh);
      if (st.ok()) {
        // Online-changeable keys only; the rest need a restart.
        opt_.policy = fresh.policy;
        opt_.query_wait_timeout_ms = fresh.query_wait_timeout_ms;
        opt_.max_client_conn = fresh.max_client_conn;
        opt_.stealing = fresh.stealing;
        opt_.steal_any = fresh.steal_any;
        opt_.steal_inflight = fresh.steal_inflight;
        opt_.steal_after_ms = fresh.steal_after_ms;
        sched_.SetPolicy(opt_.policy);
      }
    }
    if (st.ok()) {
      auto schema = LoadCatalogSchema(absl::StrCat(
          "host=", opt_.server_host, " port=", opt_.server_port, " user=", opt_.server_user,
          " dbname=", opt_.server_dbname,
          opt_.server_password.empty() ? "" : absl::StrCat(" password=", opt_.server_password)));
      if (schema.ok()) {
        opt_.schema = *schema;
        extractor_ = std::make_unique<RefExtractor>(opt_.schema);
      } else {
        st = schema.status();
      }
    }
    if (!st.ok()) {
      wire::AppendError(&out, "ERROR", "F0000", absl::StrCat("RELOAD failed: ", st.message()));
    } else {
      wire::AppendCommandComplete(&out, "RELOAD");
    }
    return done();
  }
  wire::AppendError(&out, "ERROR", "42601",
                    absl::StrCat("unknown admin command '", sql_in,
                                 "'; try SHOW STATS | QUEUES | CLIENTS | HISTORY | POLICY, "
                                 "SET POLICY <name>, RELOAD"));
  done();
}

// ---------------------------------------------------------------- metrics

std::string Proxy::Loop::MetricsText() const {
  std::string s;
  auto counter = [&](const char* name, const char* help, int64_t v, const char* labels = "") {
    absl::StrAppend(&s, "# HELP ", name, " ", help, "\n# TYPE ", name, " counter\n", name, labels, " ",
                    v, "\n");
  };
  counter("corral_transactions_total", "Transactions routed.", stats_.transactions);
  counter("corral_commits_total", "Committed transactions.", stats_.commits);
  absl::StrAppend(&s,
                  "# HELP corral_conflict_aborts_total Conflict aborts by SQLSTATE.\n"
                  "# TYPE corral_conflict_aborts_total counter\n"
                  "corral_conflict_aborts_total{sqlstate=\"40001\"} ",
                  stats_.aborts_40001.load(), "\ncorral_conflict_aborts_total{sqlstate=\"40P01\"} ",
                  stats_.aborts_40P01.load(), "\n");
  counter("corral_user_errors_total", "Transactions that ended with another error.", stats_.user_errors);
  counter("corral_queue_waits_total", "Transactions that waited for their backend.", stats_.queue_waits);
  counter("corral_steals_total", "Waiting transactions taken by another idle backend.", stats_.steals);
  counter("corral_steals_affine_total",
          "Steals of transactions placed by learned affinity (stealing on: no running transaction held their "
          "references; affinity: waited past steal_after_ms).",
          stats_.steals_affine);
  counter("corral_affine_transactions_total", "Transactions placed by learned affinity.",
          stats_.affine_txns);
  counter("corral_wait_timeouts_total", "Clients closed by query_wait_timeout.", stats_.wait_timeouts);
  counter("corral_protocol_errors_total", "Clients closed for protocol errors.", stats_.protocol_errors);
  counter("corral_backend_failures_total", "Backend connections lost.", stats_.backend_failures);
  counter("corral_cancels_total", "Cancel requests forwarded.", stats_.cancels);
  absl::StrAppend(&s, "# HELP corral_clients Connected clients.\n# TYPE corral_clients gauge\ncorral_clients ",
                  clients_now_.load(), "\n");
  return s;
}

void Proxy::Loop::AcceptHttp() {
  while (true) {
    int fd = ::accept4(metrics_listen_.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    auto h = std::make_unique<Conn>(Conn::kHttp);
    h->fd = fd;
    AddFd(h.get(), EPOLLIN);
    http_.push_back(std::move(h));
  }
}

void Proxy::Loop::OnHttp(Conn* h) {
  const bool open = ReadInto(h);
  const bool complete = h->in.find("\r\n\r\n") != std::string::npos;
  if (complete || !open || h->in.size() > 8192) {
    std::string resp;
    if (absl::StartsWith(h->in, "GET /metrics")) {
      const std::string body = MetricsText();
      resp = absl::StrCat("HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: ",
                          body.size(), "\r\nConnection: close\r\n\r\n", body);
    } else {
      resp = "HTTP/1.0 404 Not Found\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot found\n";
    }
    WriteAll(h->fd, resp);
    epoll_ctl(epfd_, EPOLL_CTL_DEL, h->fd, nullptr);
    ::close(h->fd);
    h->fd = -1;
    h->dead = true;
    for (auto& p : http_) {
      if (p.get() == h) {
        graveyard_.push_back(std::move(p));
        p = std::move(http_.back());
        http_.pop_back();
        break;
      }
    }
  }
}

// ---------------------------------------------------------------- Proxy

Proxy::Proxy(const Options& options) : options_(options) {}

Proxy::~Proxy() { Stop(); }

absl::StatusOr<std::unique_ptr<Proxy>> Proxy::Create(const Options& options) {
  if (options.pool_size < 1) return absl::InvalidArgumentError("pool_size must be at least 1");
  if (options.auth_type != "trust" && options.auth_type != "md5" && options.auth_type != "scram-sha-256") {
    return absl::InvalidArgumentError(
        absl::StrCat("auth_type must be trust, md5 or scram-sha-256, not '", options.auth_type, "'"));
  }
  std::unique_ptr<Proxy> p(new Proxy(options));
  if (p->options_.auth_type != "trust" && p->options_.users.empty()) {
    if (p->options_.auth_file.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("auth_type ", p->options_.auth_type,
                                                     " needs auth_file (\"user\" \"password\" lines)"));
    }
    std::ifstream in(p->options_.auth_file);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read auth_file ", p->options_.auth_file));
    std::stringstream ss;
    ss << in.rdbuf();
    auto users = auth::ParseUserList(ss.str());
    if (!users.ok()) return users.status();
    p->options_.users = *users;
  }
  scheduler::Scheduler::Options so;
  so.num_queues = options.pool_size;
  so.policy = options.policy;
  so.stealing = options.stealing;
  auto s = scheduler::Scheduler::Create(so, {});
  if (!s.ok()) return s.status();
  p->scheduler_ = std::move(*s);
  return p;
}

absl::Status Proxy::Start() {
  if (loop_ != nullptr) return absl::FailedPreconditionError("already started");
  if (options_.schema == nullptr) {
    auto schema = LoadCatalogSchema(absl::StrCat(
        "host=", options_.server_host, " port=", options_.server_port, " user=", options_.server_user,
        " dbname=", options_.server_dbname,
        options_.server_password.empty() ? "" : absl::StrCat(" password=", options_.server_password)));
    if (!schema.ok()) {
      return absl::Status(schema.status().code(),
                          absl::StrCat("reading the catalog schema: ", schema.status().message()));
    }
    options_.schema = *schema;
  }
  loop_ = std::make_unique<Loop>(&options_, &stats_, scheduler_.get());
  if (absl::Status st = loop_->Init(&port_, &metrics_port_); !st.ok()) {
    loop_.reset();
    return st;
  }
  thread_ = std::thread([this] { loop_->Run(); });
  return absl::OkStatus();
}

void Proxy::Stop() {
  if (loop_ == nullptr) return;
  loop_->RequestStop();
  if (thread_.joinable()) thread_.join();
  loop_.reset();
}

std::string Proxy::MetricsText() const { return loop_ ? loop_->MetricsText() : std::string(); }

}  // namespace proxy
}  // namespace corral
