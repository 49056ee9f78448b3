#include "adapters/proxy/template_cap.h"

#include <algorithm>
#include <limits>

namespace corral {
namespace proxy {

int CapRule::Step(State* st, const Window& w) const {
  const int top = std::max(1, max_k);
  if (st->k <= 0 || st->k > top) st->k = top;
  if (st->at.size() != static_cast<size_t>(top) + 1) st->at.assign(static_cast<size_t>(top) + 1, Measured());
  const int64_t now = st->windows++;
  if (w.good + w.conflicts <= 0) return st->k;  // nothing ended: no evidence
  const double inf = std::numeric_limits<double>::infinity();
  const double c = w.good > 0 ? (w.wait_ns + w.attempt_ns) / static_cast<double>(w.good) : inf;
  const double r = w.good > 0 ? static_cast<double>(w.conflicts) / static_cast<double>(w.good) : inf;
  const int k = st->k;
  // Staying at k: its measurement is the mean with the last window's (one
  // noisy window moves it half as far).
  Measured& at = st->at[k];
  at = at.window == now - 1 ? Measured{(at.cost + c) / 2, (at.aborts + r) / 2, now} : Measured{c, r, now};
  auto known = [&](int j, Measured* out) {
    if (j < 1 || j > top) return false;
    const Measured& m = st->at[j];
    if (m.window < 0 || now - m.window > memory_windows) return false;
    *out = m;
    return true;
  };
  st->since_change++;
  const double calm_rate = min_abort_rate / 2;  // hysteresis: grow only well below the shrink rate
  st->calm_streak = r < calm_rate ? st->calm_streak + 1 : 0;
  Measured down, up;
  const bool has_down = known(k - 1, &down);
  const bool has_up = known(k + 1, &up);
  const bool up_better = has_up && up.cost < at.cost * (1 - tolerance);
  st->better_streak = up_better ? st->better_streak + 1 : 0;
  const bool down_worse = has_down && down.cost > at.cost * (1 + tolerance);
  const bool up_worse = has_up && up.cost > at.cost * (1 + tolerance);
  int next = k;
  if (r >= min_abort_rate && k > 1 && !down_worse) {
    // Aborts cost: less concurrency, unless measured worse; halved while
    // they are heavy and nothing below is measured.
    next = r >= heavy_abort_rate && !has_down ? std::max(1, k / 2) : k - 1;
  } else if (k < top && st->better_streak >= std::max(1, grow_windows)) {
    next = k + 1;  // measured better above (grow_windows windows in a row)
  } else if (k < top && !up_worse &&
             (k > 1 ? st->calm_streak >= std::max(1, grow_windows) : has_up && up.aborts < calm_rate)) {
    next = k + 1;  // conflicts stopped (at k = 1: k = 2 was measured calm)
  } else if (k < top && !has_up && st->since_change >= std::max(1, probe_windows)) {
    next = k + 1;  // k + 1 unmeasured (or expired): probe it
  }
  if (next != k) {
    st->k = next;
    st->since_change = 0;
    st->calm_streak = 0;
    st->better_streak = 0;
  }
  return st->k;
}

TemplateCap::TemplateCap(const Options& o) : opt_(o) {
  opt_.rule.max_k = std::max(1, opt_.rule.max_k);
}

TemplateCap::Tpl* TemplateCap::Find(const std::string& key, int64_t now) {
  auto it = by_key_.find(key);
  if (it != by_key_.end()) {
    order_.splice(order_.end(), order_, it->second.lru);
    return &it->second;
  }
  if (by_key_.size() >= std::max<size_t>(1, opt_.max_templates)) {
    // Room from the least recently seen idle template; none: not capped.
    auto victim = order_.end();
    for (auto o = order_.begin(); o != order_.end(); ++o) {
      const Tpl& t = by_key_.at(*o);
      if (t.running == 0 && t.waiters.empty()) {
        victim = o;
        break;
      }
    }
    if (victim == order_.end()) return nullptr;
    auto v = by_key_.find(*victim);
    if (v->second.st.k < opt_.rule.max_k) --capped_;
    by_key_.erase(v);
    order_.erase(victim);
  }
  Tpl& t = by_key_[key];
  t.st.k = opt_.rule.max_k;
  t.window_start = now;
  order_.push_back(key);
  t.lru = std::prev(order_.end());
  return &t;
}

void TemplateCap::SetK(Tpl* t, int k) {
  const int before = t->st.k;
  const int top = opt_.rule.max_k;
  if (before < top && k >= top) --capped_;
  if (before >= top && k < top) ++capped_;
  if (k < before) counters_.shrinks++;
  if (k > before) counters_.grows++;
}

bool TemplateCap::Arrive(const std::string& key, uint64_t id, int64_t now) {
  Tpl* t = Find(key, now);
  if (t == nullptr) {
    counters_.untracked++;
    return true;
  }
  if (t->st.k >= opt_.rule.max_k || (t->running < t->st.k && t->waiters.empty())) {
    t->running++;
    return true;
  }
  t->waiters.push_back(Waiter{id, now});
  counters_.waits++;
  return false;
}

void TemplateCap::Admit(Tpl* t, int64_t now, std::vector<uint64_t>* admitted) {
  while (!t->waiters.empty() && (t->st.k >= opt_.rule.max_k || t->running < t->st.k)) {
    const Waiter w = t->waiters.front();
    t->waiters.pop_front();
    t->running++;
    const int64_t waited = std::max<int64_t>(0, now - w.since);
    t->w.wait_ns += static_cast<double>(waited);
    counters_.wait_ns += waited;
    admitted->push_back(w.id);
  }
}

void TemplateCap::Finish(const std::string& key, End e, int64_t started, int64_t now,
                         std::vector<uint64_t>* admitted) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return;  // admitted untracked
  Tpl& t = it->second;
  t.running = std::max(0, t.running - 1);
  t.ends++;
  if (e == End::kConflict) {
    t.conflicts++;
    t.w.conflicts++;
  } else {
    t.w.good++;
  }
  t.w.attempt_ns += static_cast<double>(std::max<int64_t>(0, now - started));
  if (now - t.window_start >= opt_.window_ns && t.w.good + t.w.conflicts >= opt_.min_window_ends) {
    CapRule::State next = t.st;
    opt_.rule.Step(&next, t.w);
    SetK(&t, next.k);
    t.st = std::move(next);
    t.w = CapRule::Window();
    t.window_start = now;
  }
  Admit(&t, now, admitted);
}

bool TemplateCap::Cancel(const std::string& key, uint64_t id) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return false;
  auto& q = it->second.waiters;
  auto w = std::find_if(q.begin(), q.end(), [id](const Waiter& x) { return x.id == id; });
  if (w == q.end()) return false;
  q.erase(w);
  counters_.cancels++;
  return true;
}

int TemplateCap::k(const std::string& key) const {
  auto it = by_key_.find(key);
  return it == by_key_.end() ? opt_.rule.max_k : it->second.st.k;
}

std::vector<TemplateCap::Row> TemplateCap::Rows() const {
  std::vector<Row> rows;
  for (const std::string& key : order_) {
    const Tpl& t = by_key_.at(key);
    rows.push_back(Row{key, t.st.k, t.running, t.waiters.size(), t.ends, t.conflicts});
  }
  return rows;
}

}  // namespace proxy
}  // namespace corral
