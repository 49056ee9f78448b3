// Proxy::Loop, part 1 of 5 (see proxy_internal.h): construction, the
// listener and epoll loop, buffered socket I/O, timers, the /metrics
// sockets and the admin console's view of the proxy.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "adapters/proxy/config.h"
#include "adapters/proxy/metrics.h"
#include "adapters/proxy/net.h"
#include "adapters/proxy/proxy_internal.h"
#include "adapters/proxy/wire.h"
#include "common/clock.h"

namespace corral {
namespace proxy {
namespace {
constexpr size_t kReadChunk = 64 * 1024;
}  // namespace

Proxy::Loop::Loop(Options* options, Stats* stats, scheduler::Scheduler* sched)
    : opt_(*options), stats_(*stats), sched_(*sched), rng_(std::random_device{}()) {}

Proxy::Loop::~Loop() {
  for (auto& [k, p] : pools_) {
    for (auto& b : p->backends) {
      if (b->fd >= 0) ::close(b->fd);
    }
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

absl::Status Proxy::Loop::Init(std::atomic<int>* port, std::atomic<int>* metrics_port) {
  if (opt_.pool_size < 1) return absl::InvalidArgumentError("pool_size must be at least 1");
  if (absl::Status st = MakeTlsContexts(opt_, &client_tls_, &server_tls_); !st.ok()) return st;
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  AddFd(&wake_, EPOLLIN);
  // Every named database now (its Scheduler, Router, catalog); the pools of
  // entries with a forced login connect now too, so a bad entry fails
  // Start. Pools of client logins and "*" databases come on first use.
  std::vector<std::string> names;
  if (opt_.databases.empty()) names.push_back(opt_.server_dbname);
  for (const auto& [name, e] : opt_.databases) {
    if (name != "*") names.push_back(name);
  }
  for (const std::string& name : names) {
    auto e = FindDatabase(opt_, name);
    if (!e.ok()) return e.status();
    if (e->user.empty()) {
      if (auto db = DatabaseFor(*e); !db.ok()) return db.status();
      continue;
    }
    Pool creds;
    creds.user = e->user;
    creds.secret = e->password;
    std::string sqlstate;
    if (auto p = PoolOf(*e, creds, &sqlstate); !p.ok()) {
      return absl::Status(p.status().code(), absl::StrCat("database \"", name, "\": ", p.status().message()));
    }
  }
  if (absl::Status st = ListenOn(&listen_, opt_.listen_port, port); !st.ok()) return st;
  if (opt_.metrics_port >= 0 && worker_ == 0) return ListenOn(&metrics_listen_, opt_.metrics_port, metrics_port);
  return absl::OkStatus();
}

absl::Status Proxy::Loop::ListenOn(Conn* c, int port, std::atomic<int>* bound) {
  int p = 0;
  // workers > 1: every loop's client listener on the same port.
  auto fd = net::Listen(opt_.listen_addr, port, &p, /*reuseport=*/group_ != nullptr && c == &listen_);
  if (!fd.ok()) return fd.status();
  c->fd = *fd;
  AddFd(c, EPOLLIN);
  bound->store(p);
  return absl::OkStatus();
}

void Proxy::Loop::Run() {
  tls::SigpipeBlock no_sigpipe;  // TLS peers that went away: EPIPE, not SIGPIPE
  epoll_event events[256];
  loop_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  while (!stop_.load()) {
    ApplyRequests();
    // Wake in time for a waiting transaction to become stealable.
    int timeout_ms = 100;
    if (steal_mode() == StealMode::kAffinity && opt_.steal_after_ms > 0 && waiting_any()) {
      timeout_ms = static_cast<int>(std::clamp<int64_t>(opt_.steal_after_ms / 2, 1, 100));
    }
    // Input left in OpenSSL, or output the requests made (a key granted by
    // another loop started a transaction): no sleeping before the flush.
    if (!tls_pending_.empty() || !dirty_.empty()) timeout_ms = 0;
    // A restart holding its backend for a bounded wait (RestartHold).
    for (const auto& [id, w] : key_waiters_) {
      if (w->restart_hold) timeout_ms = std::min(timeout_ms, 2);
    }
    int n = epoll_wait(epfd_, events, 256, timeout_ms);
    for (int i = 0; i < n; ++i) {
      Conn* c = static_cast<Conn*>(events[i].data.ptr);
      if (c->dead) continue;
      OnEvent(c, events[i].events);
    }
    // Input left inside OpenSSL by a capped read: as if the socket had some.
    std::vector<Conn*> pending;
    pending.swap(tls_pending_);
    for (Conn* c : pending) {
      if (!c->dead && (c->kind != Conn::kBackend || static_cast<Backend*>(c)->alive)) OnEvent(c, EPOLLIN);
    }
    Timers();
    if (paused_ || draining_) OpsTurn();
    // Flushing a client may resume its backend (back-pressure), whose
    // buffered input then makes more output, and a transaction that ended
    // may have granted a waiter its keys (ApplyLocalGrants): until all settle.
    do {
      ApplyLocalGrants();
      for (size_t i = 0; i < dirty_.size(); ++i) {
        Conn* c = dirty_[i];
        c->dirty = false;
        if (!c->dead) Flush(c);
      }
      dirty_.clear();
      std::vector<Backend*> resumed;
      resumed.swap(resumed_);
      for (Backend* b : resumed) {
        if (b->alive && !b->read_paused) OnBackendInput(b);
      }
    } while (!dirty_.empty() || !local_grants_.empty());
    tls_pending_.erase(std::remove_if(tls_pending_.begin(), tls_pending_.end(), [](Conn* c) { return c->dead; }),
                       tls_pending_.end());
    graveyard_.clear();
    if (stop_after_turn_) stop_.store(true);
  }
  finished_.store(true);
}

void Proxy::Loop::Flush(Conn* c) {
  while (c->out_off < c->out.size()) {
    ssize_t n = c->SendSome(c->out.data() + c->out_off, c->out.size() - c->out_off);
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
  CompactBuffer(&c->out, &c->out_off);
  SetEpollOut(c, !c->out.empty());
}

void Proxy::Loop::SetEpollOut(Conn* c, bool want) {
  if (want != c->epollout) {
    c->epollout = want;
    SetInterest(c);
  }
  if (c->kind == Conn::kClient) {
    Backend* b = static_cast<Client*>(c)->backend;
    if (b != nullptr && b->read_paused && c->out.size() - c->out_off < opt_.client_output_limit_bytes / 2) {
      ResumeRead(b);
    }
  }
}

void Proxy::Loop::SetInterest(Conn* c) {
  epoll_event ev{};
  ev.events = (c->read_paused ? 0 : EPOLLIN) | (c->epollout ? EPOLLOUT : 0);
  ev.data.ptr = c;
  epoll_ctl(epfd_, EPOLL_CTL_MOD, c->fd, &ev);
}

bool Proxy::Loop::PauseIfFull(Client* c, Backend* b) {
  const int64_t unsent = static_cast<int64_t>(c->out.size() - c->out_off);
  if (unsent > stats_.client_output_peak_bytes.load(std::memory_order_relaxed)) {
    stats_.client_output_peak_bytes.store(unsent, std::memory_order_relaxed);
  }
  if (opt_.client_output_limit_bytes == 0 || static_cast<size_t>(unsent) < opt_.client_output_limit_bytes) {
    return false;
  }
  if (!b->read_paused) {
    stats_.backpressure_pauses++;
    b->read_paused = true;
    SetInterest(b);
  }
  return true;
}

void Proxy::Loop::ResumeRead(Backend* b) {
  if (!b->read_paused) return;
  b->read_paused = false;
  if (b->alive) SetInterest(b);
  resumed_.push_back(b);
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
    ssize_t n = c->Recv(read_buf_.get(), kReadChunk);
    if (n > 0) {
      c->in.append(read_buf_.get(), static_cast<size_t>(n));
      total += n;
      // A short read drained the socket; TLS returns a record at a time, so
      // a short read there means only that OpenSSL holds nothing more (the
      // socket's own bytes still raise epoll: no extra recv for EAGAIN).
      if (static_cast<size_t>(n) < kReadChunk && (c->tls == nullptr || !c->tls->Pending())) return true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;
  }
  // Stopped at the cap: what OpenSSL already decrypted raises no epoll event.
  if (c->tls != nullptr && c->tls->Pending()) tls_pending_.push_back(c);
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
      if (cl->handshaking) {
        ContinueHandshake(cl);
        if (cl->dead || cl->handshaking) return;
        ev |= EPOLLIN;  // the startup packet may have come with the handshake's end
      }
      // TLS may need the socket writable to read, or readable to write.
      if ((ev & EPOLLOUT) || (c->tls != nullptr && !c->out.empty())) Flush(c);
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
      if ((ev & EPOLLOUT) || (c->tls != nullptr && !c->out.empty())) Flush(c);
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
    net::SetNoDelay(fd);
    // workers > 1: max_client_conn counts every loop's clients.
    const int64_t now = group_ != nullptr ? group_->clients.load() : static_cast<int64_t>(clients_.size());
    const bool over = now >= opt_.max_client_conn;
    if (now >= 2 * int64_t{opt_.max_client_conn} + 16) {
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
    if (group_ != nullptr) {
      group_->clients++;
      group_->per[worker_].clients++;
      group_->per[worker_].accepted++;
    }
    AddFd(raw, EPOLLIN);
  }
}

void Proxy::Loop::Timers() {
  const int64_t now = MonoNanos();
  // Everything here is on a millisecond scale or coarser; under load the
  // loop turns far more often than that.
  if (now - timers_at_ < 1000000) return;
  timers_at_ = now;
  PublishWorker(now);  // workers > 1: SHOW views' rows for the other loops
  RestartHoldTimers(now);
  AdoptClusterSchemas();  // cluster_name: a schema the catalog watch re-read
  for (auto& [k, p] : pools_) {
    for (auto& b : p->backends) {
      if (!b->alive && b->reconnect_at != 0 && now >= b->reconnect_at) {
        if (ConnectBackend(b.get()).ok()) {
          b->reconnect_at = 0;
          Dispatch(b.get());
        } else {
          b->reconnect_at = now + 1000000000LL;
        }
      }
    }
  }
  // Affinity-aware stealing: a transaction that has waited past steal_after
  // becomes stealable without any event; idle backends look again.
  if (steal_mode() == StealMode::kAffinity && opt_.steal_after_ms > 0 && waiting_any()) {
    DispatchIdleAll();
  }
  if (opt_.query_wait_timeout_ms <= 0) return;
  const int64_t limit = opt_.query_wait_timeout_ms * 1000000LL;
  std::vector<Client*> expired;
  for (auto& [k, p] : pools_) {
    for (auto& q : p->waitq) {
      for (Client* c : q) {
        if (now - c->wait_since > limit) expired.push_back(c);
      }
    }
  }
  for (auto& [id, c] : key_waiters_) {  // workers > 1: waiting for a hot reference's key
    if (now - c->wait_since > limit) expired.push_back(c);
  }
  for (Client* c : expired) {
    stats_.wait_timeouts++;
    ProtocolError(c, "08P01",
                  absl::StrCat("query_wait_timeout: waited more than ", opt_.query_wait_timeout_ms,
                               " ms for a server connection"));
  }
}

// ---------------------------------------------------------------- metrics

std::string Proxy::Loop::MetricsText() const {
  return metrics::MetricsText(stats_, group_ != nullptr ? group_->clients.load() : clients_now_.load());
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
  if (!metrics::HttpRequestComplete(h->in, !open)) return;
  net::WriteAll(h->fd, metrics::HttpResponse(h->in, [this] { return MetricsText(); }));
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

// ---------------------------------------------------------------- admin view

std::vector<AdminSource::QueueRow> Proxy::Loop::Queues() const {
  std::vector<QueueRow> rows;
  for (const auto& [key, p] : pools_) {
    for (const auto& b : p->backends) {
      QueueRow q;
      q.index = b->index;
      q.server_pid = b->pid;
      q.state = !b->alive ? "down" : (b->client ? "active" : "idle");
      q.client = b->client ? std::to_string(b->client->id) : "";
      q.waiting = p->waitq[b->index].size();
      q.transactions = b->txns;
      q.prepared = b->cache.size();
      q.database = key.first;
      q.user = key.second;
      rows.push_back(std::move(q));
    }
  }
  return rows;
}

std::vector<AdminSource::ClientRow> Proxy::Loop::Clients() const {
  std::vector<ClientRow> rows;
  for (const auto& [p, cl] : clients_) {
    ClientRow r;
    r.id = cl->id;
    r.user = cl->user;
    r.database = cl->database;
    r.state = cl->admin                                                  ? "admin"
              : cl->backend                                                ? "active"
              : cl->waiting || cl->keys == Client::Keys::kWaiting ? "waiting"
                                                                           : "idle";
    r.queue = cl->backend ? std::to_string(cl->backend->index)
                          : (cl->waiting ? std::to_string(cl->wait_queue) : "");
    r.transactions = cl->txns;
    rows.push_back(std::move(r));
  }
  return rows;
}

std::map<std::string, std::shared_ptr<scheduler::Scheduler>> Proxy::Loop::AllSchedulers() const {
  // workers > 1: also the shared Schedulers of databases only other loops
  // have opened (held: a loop may drop one from the group meanwhile).
  std::map<std::string, std::shared_ptr<scheduler::Scheduler>> scheds;
  if (group_ != nullptr) {
    TsanVisibleMutexLock l(&group_->mu);
    for (const auto& [name, s] : group_->scheds) {
      if (dbs_.count(name) == 0) scheds[name] = s;
    }
  }
  for (const auto& [name, db] : dbs_) {
    scheds[name] = std::shared_ptr<scheduler::Scheduler>(std::shared_ptr<void>(), db->sched);  // not owned
  }
  return scheds;
}

std::vector<AdminSource::SplitRow> Proxy::Loop::Splits() const {
  std::vector<SplitRow> rows;
  for (const auto& [name, sched] : AllSchedulers()) {
    scheduler::HotSpots* hs = sched->hot_spots();
    if (hs == nullptr) continue;
    for (const auto& [ref, k] : hs->Entries()) {
      SplitRow r;
      r.database = name;
      r.reference = sched->history().TextOf(ref);
      if (r.reference.empty()) r.reference = absl::StrFormat("%016x", ref.value());
      r.k = k;
      r.queues = absl::StrJoin(hs->Get(ref), ",");
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

std::vector<AdminSource::HistoryRow> Proxy::Loop::TopByAborts(size_t k) const {
  // Every database's; a database other than the default one prefixes its
  // references with its name ("shop: w_id=5").
  const auto scheds = AllSchedulers();
  std::vector<HistoryRow> rows;
  const std::string def = DefaultDatabase(opt_);
  for (const auto& [name, sched] : scheds) {
    for (const auto& e : sched->history().TopByAborts(k)) {
      const std::string ref = e.text.empty() ? absl::StrFormat("%016x", e.ref.value()) : e.text;
      rows.push_back({name == def ? ref : absl::StrCat(name, ": ", ref), static_cast<int64_t>(e.counts.aborts),
                      static_cast<int64_t>(e.counts.commits)});
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const HistoryRow& a, const HistoryRow& b) { return a.aborts > b.aborts; });
  if (rows.size() > k) rows.resize(k);
  return rows;
}

AdminSource::LearnedSizes Proxy::Loop::Learned() const {
  // Summed over every database's History and State; a bound is 0
  // (unbounded) when any database's table is unbounded.
  LearnedSizes l;
  bool h_unbounded = false, s_unbounded = false;
  for (const auto& [name, db] : dbs_) {
    const auto& h = db->sched->history();
    const auto& st = db->sched->state();
    l.history_entries += h.size();
    l.history_max_entries += h.max_entries();
    l.history_dropped_full += h.dropped_full();
    l.history_unadmitted_commits += h.unadmitted_commits();
    l.state_entries += st.size();
    l.state_max_entries += st.max_entries();
    l.state_evictions += st.evictions();
    if (const scheduler::HotSpots* hs = db->sched->hot_spots(); hs != nullptr) {
      l.split_references += static_cast<int64_t>(hs->Entries().size());
    }
    l.split_max_k = std::max<int64_t>(l.split_max_k, db->sched->HotQueues());
    h_unbounded |= h.max_entries() == 0;
    s_unbounded |= st.max_entries() == 0;
  }
  if (h_unbounded) l.history_max_entries = 0;
  if (s_unbounded) l.state_max_entries = 0;
  return l;
}

std::string Proxy::Loop::PolicyName() const { return sched_.PolicyLabel(); }

std::string Proxy::Loop::StealingName() const { return std::string(StealModeName(steal_mode())); }

absl::Status Proxy::Loop::SetPolicy(const std::string& name) {
  if (absl::AsciiStrToLower(name) == "auto") {
    for (auto& [name, db] : dbs_) db->sched->SetAuto(true);
    opt_.auto_policy = true;
    return absl::OkStatus();
  }
  auto p = ParsePolicy(name);
  if (!p.ok()) return p.status();
  for (auto& [name, db] : dbs_) db->sched->SetPolicy(*p);  // turns auto off
  opt_.policy = *p;
  opt_.auto_policy = false;
  return absl::OkStatus();
}

absl::Status Proxy::Loop::Reload() {
  if (admin_current_ != nullptr) PostOthers(kReload);  // the admin console's RELOAD: every loop
  if (!opt_.config_path.empty()) {
    Options fresh = opt_;
    if (absl::Status st = LoadConfigFile(opt_.config_path, &fresh); !st.ok()) return st;
    // Online-changeable keys only; the rest need a restart.
    opt_.policy = fresh.policy;
    opt_.auto_policy = fresh.auto_policy;
    opt_.query_wait_timeout_ms = fresh.query_wait_timeout_ms;
    opt_.max_client_conn = fresh.max_client_conn;
    opt_.stealing = fresh.stealing;
    opt_.steal_any = fresh.steal_any;
    opt_.steal_inflight = fresh.steal_inflight;
    opt_.steal_after_ms = fresh.steal_after_ms;
    opt_.admin_users = fresh.admin_users;  // for logins from now on
    opt_.stats_users = fresh.stats_users;
    opt_.user_pool_size = fresh.user_pool_size;  // for pools made from now on
    opt_.auth_query = fresh.auth_query;
    opt_.cluster_fold_unlock = fresh.cluster_fold_unlock;
    opt_.cluster_relock_tries = fresh.cluster_relock_tries;
    opt_.cluster_restart_hold_ms = fresh.cluster_restart_hold_ms;
    ReloadCluster(fresh);
    for (auto& [name, db] : dbs_) {
      db->sched->SetPolicy(opt_.policy);
      if (opt_.auto_policy) db->sched->SetAuto(true);
    }
  }
  // Every database's catalog, as its entry's login (else server_user).
  for (auto& [name, db] : dbs_) {
    auto schema = LoadCatalogFor(opt_, db->entry);
    if (!schema.ok()) return absl::Status(schema.status().code(), absl::StrCat("database \"", name, "\": ",
                                                                               schema.status().message()));
    if (db->sched == &sched_) opt_.schema = *schema;
    AdoptSchema(db.get(), *schema);
  }
  return absl::OkStatus();
}

}  // namespace proxy
}  // namespace corral
