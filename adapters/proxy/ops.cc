// Proxy::Loop, graceful operations (see proxy_internal.h): requests posted
// from other threads (Proxy::Drain / Pause / Resume / Reload, the signals
// of `corral proxy`), the admin console's PAUSE / RESUME / SHUTDOWN, and
// draining for a graceful shutdown.
//
// PAUSE (PgBouncer's): no backend is handed out; transactions running go
// on; the PAUSE statement is answered once none runs (in any loop, with
// workers > 1); RESUME hands out
// backends again. Draining (SIGTERM): the listener closes; a client not in
// a transaction, and each one whose transaction ends, is told FATAL 57P01
// (admin_shutdown, as PostgreSQL's shutdown does) and closed; a client in a
// transaction (attached, or with a held BEGIN) finishes it; the loop stops
// when no client is left.
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "adapters/proxy/proxy_internal.h"

namespace corral {
namespace proxy {

void Proxy::Loop::ApplyRequests() {
  const uint32_t r = requests_.exchange(0);
  if (r == 0) return;
  if (r & kInbox) ApplyInbox();
  if (r & kStop) stop_after_turn_ = true;
  if (r & kReload) {
    if (absl::Status st = Reload(); !st.ok()) {
      std::fprintf(stderr, "corral proxy: RELOAD failed: %s\n", std::string(st.message()).c_str());
    }
  }
  if (group_ != nullptr && (r & (kPause | kResume))) {
    // The last request's state, whatever order the bits came in.
    if (group_->want_paused.load()) {
      Pause();
    } else {
      Resume();
    }
  } else {
    if (r & kPause) Pause();
    if (r & kResume) Resume();
  }
  if ((r & kDrain) && !draining_) {
    draining_ = true;
    Resume();  // queued transactions are refused now, not held
    if (listen_.fd >= 0) {
      epoll_ctl(epfd_, EPOLL_CTL_DEL, listen_.fd, nullptr);
      ::close(listen_.fd);
      listen_.fd = -1;
    }
  }
}

void Proxy::Loop::Pause() {
  paused_ = true;
  if (admin_current_ != nullptr) {
    admin_current_->pause_wait = true;
    if (group_ != nullptr) group_->want_paused.store(true);
    PostOthers(kPause);
  }
}

void Proxy::Loop::Shutdown() {
  stop_after_turn_ = true;
  PostOthers(kStop);
}

void Proxy::Loop::Resume() {
  if (admin_current_ != nullptr) {
    if (group_ != nullptr) group_->want_paused.store(false);
    PostOthers(kResume);
  }
  paused_ = false;
  pause_done_.store(false);
  OpsTurn();  // answers PAUSEs still waiting
  DispatchIdleAll();
}

bool Proxy::Loop::OthersPaused() const {
  if (group_ == nullptr) return true;
  for (const Loop* other : group_->loops) {
    if (other != this && !other->pause_done()) return false;
  }
  return true;
}

void Proxy::Loop::ShutdownClient(Client* c) {
  CloseWithFatal(c, "57P01", "terminating connection due to administrator command");
}

void Proxy::Loop::OpsTurn() {
  const bool idle = !any_running();
  if (paused_ && idle && !pause_done_.exchange(true)) {
    PostOthers(kInbox);  // a PAUSE waiting on another loop looks again now
  }
  // A PAUSE is answered once every loop is idle.
  const bool all_idle = idle && OthersPaused();
  std::vector<Client*> release, close;
  for (auto& [p, c] : clients_) {
    if (c->dead) continue;
    if (c->pause_wait && (!paused_ || all_idle)) release.push_back(c.get());
    if (!draining_) continue;
    // (A restart waiting for its keys without a backend is mid-transaction.)
    const bool in_txn = c->backend != nullptr || !c->held_begin.empty() || c->replay.restart;
    if (!in_txn && c->out_off == c->out.size()) close.push_back(c.get());
  }
  for (Client* c : release) {
    c->pause_wait = false;
    c->out.append(c->deferred);
    c->deferred.clear();
    MarkDirty(c);
    Pump(c);
  }
  for (Client* c : close) {
    if (!c->dead) ShutdownClient(c);
  }
  if (draining_ && clients_.empty()) stop_.store(true);
}

}  // namespace proxy
}  // namespace corral
