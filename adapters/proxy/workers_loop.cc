// Proxy::Loop: the hooks of `workers` > 1 (proxy.h Options::workers,
// WorkerGroup in proxy_internal.h). Several loops, one per thread, each
// accepting on its own SO_REUSEPORT listener, keep one schedule:
//   - the Scheduler (History, State) of each database is shared (the
//     default database's is the Proxy's; others are made in the group);
//   - the admin console answers the per-loop SHOW views with every loop's
//     rows (View: the others' as of their last publish, PublishWorker);
//   - a transaction whose first unit names a reference with at least
//     worker_lock_threshold aborts in the History takes that reference's key
//     in the group's KeyLocks before it is routed (after a held BEGIN, before
//     its template slot), so no two loops run it at once on different
//     backends; a waiter keeps its first statement in c->pending (Pump does
//     not look at it) until KeyLocks' wake posts the grant to its loop
//     (kInbox), and the keys go when the transaction ends (Detach) or the
//     client leaves (CloseClient).
// With one loop (group_ null) every hook here is a no-op, unless the
// client's database has restart_on_hot_key on: then the keys are taken in
// the loop's own KeyLocks the same way (and the snapshot's release epoch
// is noted, restart_loop.cc).
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "adapters/proxy/proxy_internal.h"
#include "common/clock.h"

namespace corral {
namespace proxy {

void Proxy::Loop::KeysGranted(uint64_t client_id) {
  if (std::this_thread::get_id() == loop_thread_.load(std::memory_order_relaxed)) {
    // A release on this loop granted it (one loop: always): resumed before
    // this turn's output goes, not a turn later through the eventfd.
    local_grants_.push_back(client_id);
    return;
  }
  {
    TsanVisibleMutexLock l(&inbox_mu_);
    inbox_grants_.push_back(client_id);
  }
  Post(kInbox);
}

void Proxy::Loop::ForwardCancel(int32_t pid, int32_t secret) {
  {
    TsanVisibleMutexLock l(&inbox_mu_);
    inbox_cancels_.emplace_back(pid, secret);
  }
  Post(kInbox);
}

void Proxy::Loop::PostOthers(Request r) {
  if (group_ == nullptr) return;
  for (Loop* other : group_->loops) {
    if (other != this) other->Post(r);
  }
}

void Proxy::Loop::HotKeys(const Client* c, const RefVec& refs, std::vector<uint64_t>* keys) const {
  // The keys of its hot references, per database (Database::key_salt).
  const history::History& h = c->pool->db->sched->history();
  const uint64_t salt = c->pool->db->key_salt;
  const scheduler::HotSpots* split = c->pool->db->sched->hot_spots();
  for (RefId r : refs) {
    // A split reference (split = on) runs on its k backends at once: its
    // key would serialize it again (in-flight stealing caps it at k).
    if (split != nullptr && split->IsSplit(r)) continue;
    history::History::Counts n;
    if (h.Get(r, &n) && static_cast<double>(n.aborts) >= opt_.worker_lock_threshold) keys->push_back(r.value() ^ salt);
  }
}

bool Proxy::Loop::KeysAdmit(Client* c) {
  // Restart on a hot key concerns blocks whose BEGIN the proxy holds (an
  // implicit transaction has no later statement to restart before).
  const bool restart = c->pool->db->restart && !c->held_begin.empty();
  if (group_ == nullptr && !restart) return true;
  if (c->keys == Client::Keys::kWaiting) return false;
  Loop* self = this;
  const uint64_t ticket = KeyTicket(c);
  const uint64_t id = c->id;
  auto wake = [self, id](uint64_t) { self->KeysGranted(id); };
  auto wait = [&] {  // not granted: KeysGranted resumes it through StartTxn
    c->keys = Client::Keys::kWaiting;
    c->wait_since = MonoNanos();  // query_wait_timeout covers this wait too
    key_waiters_[c->id] = c;
    return false;
  };
  if (c->keys != Client::Keys::kHeld) {
    std::vector<uint64_t> keys;
    HotKeys(c, c->route.txn.refs, &keys);
    // Restart on: what a reliable template predicts is taken before BEGIN too.
    Router& router = *c->pool->db->router;
    if (restart && router.templates() != nullptr) {
      c->predicted = true;  // (StartTxn does not predict again)
      if (router.PredictRefs(&c->route) > 0) HotKeys(c, c->route.predicted, &keys);
    }
    if (keys.empty()) {
      // Nothing hot: no keys.
    } else if (CycleGates* gates = restart ? c->pool->db->gates.get() : nullptr;
               gates != nullptr && !c->route.trace.empty() && gates->Admit(c->route.trace[0].shape)) {
      // A template whose restarts closed wait cycles: its gate first, alone
      // (cycle_gates.h), then these keys (below, once it is granted).
      stats_.restart_key_txns++;
      stats_.restart_gate_txns++;
      c->gate_key = CycleGates::Key(c->route.trace[0].shape, c->pool->db->key_salt);
      c->gate_growth = gates->LastGrowth(c->route.trace[0].shape);
      c->gate_then = std::move(keys);
      if (!locks()->Acquire(worker_, ticket, {c->gate_key}, nullptr, wake)) {
        stats_.restart_gate_waits++;
        return wait();
      }
      c->keys = Client::Keys::kHeld;  // the gate; its keys next
    } else {
      (group_ != nullptr ? stats_.worker_key_txns : stats_.restart_key_txns)++;
      bool cross = false;
      if (!locks()->Acquire(worker_, ticket, std::move(keys), &cross, wake)) {
        stats_.worker_key_waits++;
        if (group_ != nullptr) group_->per[worker_].key_waits++;
        if (cross) {
          stats_.worker_key_cross_waits++;
          if (group_ != nullptr) group_->per[worker_].cross_waits++;
        }
        return wait();
      }
      c->keys = Client::Keys::kHeld;
    }
  }
  if (!c->gate_then.empty()) {  // the gate is held: now its keys
    std::vector<uint64_t> keys = std::move(c->gate_then);
    c->gate_then.clear();
    if (!locks()->AcquireMore(worker_, ticket, std::move(keys), wake)) {
      stats_.worker_key_waits++;
      return wait();
    }
  }
  // Before its BEGIN: a key released after this is released after its snapshot.
  if (restart) c->key_snap = locks()->Epoch();
  return true;
}

void Proxy::Loop::KeysRelease(Client* c) {
  if (c->keys == Client::Keys::kNone) return;
  if (c->keys == Client::Keys::kWaiting) key_waiters_.erase(c->id);
  c->keys = Client::Keys::kNone;
  c->gate_key = 0;
  c->gate_growth = 0;
  c->gate_then.clear();
  locks()->Release(KeyTicket(c));  // may wake waiters (ours: through the inbox)
}

void Proxy::Loop::ApplyInbox() {
  std::vector<uint64_t> grants;
  std::vector<std::pair<int32_t, int32_t>> cancels;
  {
    TsanVisibleMutexLock l(&inbox_mu_);
    grants.swap(inbox_grants_);
    cancels.swap(inbox_cancels_);
  }
  for (const auto& [pid, secret] : cancels) {
    auto it = keys_.find((uint64_t(uint32_t(pid)) << 32) | uint32_t(secret));
    if (it != keys_.end() && it->second->backend != nullptr) {
      stats_.cancels++;
      SendCancel(it->second->backend);
    }
  }
  ApplyGrants(grants);
}

void Proxy::Loop::ApplyLocalGrants() {
  while (!local_grants_.empty()) {
    std::vector<uint64_t> grants;
    grants.swap(local_grants_);
    stats_.key_grants_local += static_cast<int64_t>(grants.size());
    ApplyGrants(grants);
  }
}

void Proxy::Loop::ApplyGrants(const std::vector<uint64_t>& grants) {
  for (uint64_t id : grants) {
    auto it = key_waiters_.find(id);
    if (it == key_waiters_.end()) continue;  // it left (its wait was withdrawn, or its keys released)
    Client* w = it->second;
    key_waiters_.erase(it);
    if (w->dead || w->keys != Client::Keys::kWaiting) continue;
    w->keys = Client::Keys::kHeld;
    const bool held = w->restart_hold;
    w->restart_hold = false;
    if (w->replay.restart && held && w->backend != nullptr) {  // a restart waiting on its backend (RestartHold)
      stats_.restart_wait_ns += MonoNanos() - w->restart_since;
      RestartWithKeys(w, w->backend, std::move(w->restart_relock));
      w->restart_relock.clear();
      continue;
    }
    if (w->replay.restart) {  // a restart waiting without a backend (restart_loop.cc)
      RestartResume(w);
      continue;
    }
    StartTxn(w);  // routed now (or waits for its template slot)
    if (!w->dead) Pump(w);
  }
}

AdminTable Proxy::Loop::WorkerView(AdminView v) const {
  AdminTable t = LocalAdminView(*this, v);
  if (t.columns.empty()) return t;  // a view this loop has nothing for (SHOW CLUSTER off)
  t.columns.insert(t.columns.begin(), "worker");
  for (auto& r : t.rows) r.insert(r.begin(), std::to_string(worker_));
  return t;
}

void Proxy::Loop::PublishWorker(int64_t now) {
  if (group_ == nullptr || now - published_at_ < 200 * 1000000LL) return;
  published_at_ = now;
  std::array<AdminTable, kAdminViews> views;
  for (int v = 0; v < kAdminViews; ++v) views[v] = WorkerView(static_cast<AdminView>(v));
  TsanVisibleMutexLock l(&group_->mu);
  group_->views[worker_] = std::move(views);
}

AdminTable Proxy::Loop::View(AdminView v) const {
  if (group_ == nullptr) return LocalAdminView(*this, v);
  AdminTable t = WorkerView(v);
  TsanVisibleMutexLock l(&group_->mu);
  for (int i = 0; i < group_->count; ++i) {
    if (i == worker_) continue;
    const AdminTable& o = group_->views[i][static_cast<int>(v)];
    if (t.columns.empty()) t.columns = o.columns;
    for (const auto& r : o.rows) t.rows.push_back(r);
  }
  return t;
}

AdminTable Proxy::Loop::Workers() const {
  AdminTable t;
  if (group_ == nullptr) return t;
  t.columns = {"worker", "clients", "accepted", "transactions", "key_waits", "cross_waits"};
  for (int i = 0; i < group_->count; ++i) {
    const WorkerGroup::PerWorker& p = group_->per[i];
    t.rows.push_back({std::to_string(i), std::to_string(p.clients.load()), std::to_string(p.accepted.load()),
                      std::to_string(p.transactions.load()), std::to_string(p.key_waits.load()),
                      std::to_string(p.cross_waits.load())});
  }
  return t;
}

}  // namespace proxy
}  // namespace corral
