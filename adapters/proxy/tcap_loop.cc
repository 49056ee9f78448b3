// Proxy::Loop: the per-template concurrency cap's hooks (template_cap.h).
// A detached client's transaction, routed or not yet, asks for a slot of
// its template (first-statement shape) before anything of it is sent; a
// waiting one keeps its first statement in c->pending (Pump does not look
// at it) until a running one of its template ends (EndTxn, FailBackend) or
// leaves (CloseClient), which admits it and starts it (StartTxn).
#include <vector>

#include "adapters/proxy/proxy_internal.h"
#include "common/clock.h"

namespace corral {
namespace proxy {
namespace {

// The cap's counters changed by one call, added to the proxy's Stats.
class CapCounters {
 public:
  CapCounters(const TemplateCap& cap, Stats* stats)
      : cap_(cap), stats_(*stats), before_(cap.counters()), capped_(cap.capped()) {}
  ~CapCounters() {
    const TemplateCap::Counters& now = cap_.counters();
    stats_.template_cap_waits += now.waits - before_.waits;
    stats_.template_cap_wait_ms += now.wait_ns / 1000000 - before_.wait_ns / 1000000;
    stats_.template_cap_cancels += now.cancels - before_.cancels;
    stats_.template_cap_shrinks += now.shrinks - before_.shrinks;
    stats_.template_cap_grows += now.grows - before_.grows;
    stats_.template_cap_capped += cap_.capped() - capped_;
  }

 private:
  const TemplateCap& cap_;
  Stats& stats_;
  const TemplateCap::Counters before_;
  const int64_t capped_;
};

}  // namespace

bool Proxy::Loop::CapAdmit(Client* c) {
  if (c->cap == Client::Cap::kRunning) return true;  // admitted: routed now
  if (c->cap == Client::Cap::kWaiting) return false;
  TemplateCap* cap = c->pool->db->tcap.get();
  if (cap == nullptr || c->route.trace.empty()) return true;
  c->cap_key = c->route.trace[0].shape;
  c->cap_since = MonoNanos();
  CapCounters count(*cap, &stats_);
  if (cap->Arrive(c->cap_key, c->id, c->cap_since)) {
    c->cap = Client::Cap::kRunning;
    return true;
  }
  c->cap = Client::Cap::kWaiting;
  cap_waiters_[c->id] = c;
  return false;
}

void Proxy::Loop::CapEnd(Client* c, bool conflict) {
  if (c->cap == Client::Cap::kNone) return;
  const Client::Cap was = c->cap;
  c->cap = Client::Cap::kNone;
  TemplateCap* cap = c->pool != nullptr ? c->pool->db->tcap.get() : nullptr;
  if (cap == nullptr) return;
  const std::string key = c->cap_key;
  std::vector<Client*> ready;
  {
    CapCounters count(*cap, &stats_);
    if (was == Client::Cap::kWaiting) {
      cap->Cancel(key, c->id);
      cap_waiters_.erase(c->id);
      return;
    }
    const int64_t now = MonoNanos();
    std::vector<uint64_t> admitted;
    cap->Finish(key, conflict ? TemplateCap::End::kConflict : TemplateCap::End::kGood, c->cap_since, now,
                &admitted);
    for (size_t i = 0; i < admitted.size(); ++i) {
      auto it = cap_waiters_.find(admitted[i]);
      if (it == cap_waiters_.end()) {  // not waiting any more (cannot happen: CloseClient cancels)
        cap->Finish(key, TemplateCap::End::kGood, now, now, &admitted);
        continue;
      }
      Client* w = it->second;
      cap_waiters_.erase(it);
      w->cap = Client::Cap::kRunning;
      w->cap_since = now;
      ready.push_back(w);
    }
  }
  // Their held first statements go on: routed and run, or queued for a backend.
  for (Client* w : ready) {
    if (w->dead || w->cap != Client::Cap::kRunning) continue;
    StartTxn(w);
    if (!w->dead) Pump(w);
  }
}

AdminTable Proxy::Loop::TemplateCapRows() const {
  AdminTable t;
  t.columns = {"database", "first_statement", "k", "max_k", "running", "waiting", "ends", "conflicts"};
  for (const auto& [name, db] : dbs_) {
    if (db->tcap == nullptr) continue;
    for (const TemplateCap::Row& r : db->tcap->Rows()) {
      t.rows.push_back({name, DisplayShape(r.key), std::to_string(r.k), std::to_string(db->tcap->max_k()),
                        std::to_string(r.running), std::to_string(r.waiting), std::to_string(r.ends),
                        std::to_string(r.conflicts)});
    }
  }
  return t;
}

}  // namespace proxy
}  // namespace corral
