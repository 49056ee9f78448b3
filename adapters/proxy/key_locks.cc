// KeyLocks (key_locks.h): per-key FIFO queues under one mutex.
#include "adapters/proxy/key_locks.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"

namespace corral {
namespace proxy {

bool KeyLocks::AtFront(uint64_t ticket, const Request& r) const {
  for (uint64_t k : r.keys) {
    auto it = queues_.find(k);
    if (it == queues_.end() || it->second.empty() || it->second.front() != ticket) return false;
  }
  return true;
}

bool KeyLocks::Acquire(int worker, uint64_t ticket, std::vector<uint64_t> keys, bool* cross, Wake wake) {
  if (cross != nullptr) *cross = false;
  if (keys.empty()) return true;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  TsanVisibleMutexLock l(&mu_);
  counters_.requests++;
  bool other = false;
  for (uint64_t k : keys) {
    std::deque<uint64_t>& q = queues_[k];
    for (uint64_t ahead : q) {
      auto it = requests_.find(ahead);
      if (it != requests_.end() && it->second.worker != worker) other = true;
    }
    q.push_back(ticket);
  }
  Request& r = requests_[ticket];
  r.worker = worker;
  r.keys = std::move(keys);
  r.wake = std::move(wake);
  if (AtFront(ticket, r)) {
    r.granted = true;
    counters_.held++;
    return true;
  }
  counters_.waits++;
  counters_.waiting++;
  if (other) counters_.cross_waits++;
  if (cross != nullptr) *cross = other;
  return false;
}

void KeyLocks::Leave(uint64_t ticket, const Request& r, std::vector<std::pair<Wake, uint64_t>>* woken,
                     bool stamp) {
  std::vector<uint64_t> fronts;  // requests now at the front of a queue it left
  bool stamped = false;
  for (uint64_t k : r.keys) {
    auto q = queues_.find(k);
    if (q == queues_.end()) continue;
    const bool was_front = !q->second.empty() && q->second.front() == ticket;
    q->second.erase(std::remove(q->second.begin(), q->second.end(), ticket), q->second.end());
    if (was_front && stamp) {
      if (!stamped) ++epoch_;
      stamped = true;
      released_[Slot(k)] = epoch_;
    }
    if (q->second.empty()) {
      queues_.erase(q);
    } else if (was_front) {
      fronts.push_back(q->second.front());
    }
  }
  for (uint64_t t : fronts) {
    auto w = requests_.find(t);
    if (w == requests_.end() || w->second.granted || !AtFront(t, w->second)) continue;
    w->second.granted = true;
    counters_.waiting--;
    counters_.held++;
    woken->emplace_back(w->second.wake, t);
  }
}

void KeyLocks::Release(uint64_t ticket) {
  std::vector<std::pair<Wake, uint64_t>> woken;
  {
    TsanVisibleMutexLock l(&mu_);
    auto it = requests_.find(ticket);
    if (it == requests_.end()) return;
    Request gone = std::move(it->second);
    requests_.erase(it);
    (gone.granted ? counters_.held : counters_.waiting)--;
    Leave(ticket, gone, &woken, /*stamp=*/true);
  }
  for (auto& [wake, t] : woken) {
    if (wake) wake(t);
  }
}

void KeyLocks::ReleaseKey(uint64_t ticket, uint64_t key) {
  std::vector<std::pair<Wake, uint64_t>> woken;
  {
    TsanVisibleMutexLock l(&mu_);
    auto it = requests_.find(ticket);
    if (it == requests_.end() || !it->second.granted) return;
    std::vector<uint64_t>& keys = it->second.keys;
    auto k = std::lower_bound(keys.begin(), keys.end(), key);
    if (k == keys.end() || *k != key) return;
    keys.erase(k);
    Request one;
    one.keys.push_back(key);
    if (keys.empty()) {
      requests_.erase(it);
      counters_.held--;
    }
    Leave(ticket, one, &woken, /*stamp=*/false);
  }
  for (auto& [wake, t] : woken) {
    if (wake) wake(t);
  }
}

uint64_t KeyLocks::Epoch() const {
  TsanVisibleMutexLock l(&mu_);
  return epoch_;
}

KeyLocks::Take KeyLocks::TakeIfFree(int worker, uint64_t ticket, uint64_t key, uint64_t since) {
  TsanVisibleMutexLock l(&mu_);
  auto it = requests_.find(ticket);
  if (it != requests_.end()) {
    if (std::binary_search(it->second.keys.begin(), it->second.keys.end(), key)) {
      return it->second.granted ? Take::kTaken : Take::kHeld;
    }
    if (!it->second.granted) return Take::kHeld;
  }
  auto q = queues_.find(key);
  if (q != queues_.end() && !q->second.empty()) return Take::kHeld;
  if (released_[Slot(key)] > since) return Take::kReleased;
  if (it == requests_.end()) {
    Request& r = requests_[ticket];
    r.worker = worker;
    r.granted = true;
    r.keys.push_back(key);
    counters_.requests++;
    counters_.held++;
  } else {
    std::vector<uint64_t>& keys = it->second.keys;
    keys.insert(std::upper_bound(keys.begin(), keys.end(), key), key);
  }
  queues_[key].push_back(ticket);
  return Take::kTaken;
}

bool KeyLocks::InCycle(uint64_t ticket) const {
  // The requests ahead of `x` in its queues: those it waits for.
  auto ahead = [this](uint64_t x, std::vector<uint64_t>* out) {
    auto r = requests_.find(x);
    if (r == requests_.end() || r->second.granted) return;
    for (uint64_t k : r->second.keys) {
      auto q = queues_.find(k);
      if (q == queues_.end()) continue;
      for (uint64_t y : q->second) {
        if (y == x) break;
        out->push_back(y);
      }
    }
  };
  std::vector<uint64_t> stack;
  absl::flat_hash_set<uint64_t> seen;
  ahead(ticket, &stack);
  while (!stack.empty()) {
    const uint64_t y = stack.back();
    stack.pop_back();
    if (y == ticket) return true;
    if (seen.insert(y).second) ahead(y, &stack);
  }
  return false;
}

bool KeyLocks::AcquireMore(int worker, uint64_t ticket, std::vector<uint64_t> more, Wake wake, bool* requeued) {
  if (requeued != nullptr) *requeued = false;
  std::sort(more.begin(), more.end());
  more.erase(std::unique(more.begin(), more.end()), more.end());
  std::vector<std::pair<Wake, uint64_t>> woken;
  bool granted = false;
  {
    TsanVisibleMutexLock l(&mu_);
    auto it = requests_.find(ticket);
    const bool fresh = it == requests_.end();
    Request& r = fresh ? requests_[ticket] : it->second;
    if (fresh) {
      r.worker = worker;
      counters_.requests++;
    } else {
      (r.granted ? counters_.held : counters_.waiting)--;
    }
    r.granted = false;
    r.wake = std::move(wake);
    for (uint64_t k : more) {
      if (std::binary_search(r.keys.begin(), r.keys.end(), k)) continue;
      r.keys.insert(std::upper_bound(r.keys.begin(), r.keys.end(), k), k);
      queues_[k].push_back(ticket);
    }
    if (!AtFront(ticket, r) && InCycle(ticket)) {
      // Waiting here could deadlock: free what it holds and queue for the
      // union at the back of every queue, where no one waits for it.
      requeues_++;
      if (requeued != nullptr) *requeued = true;
      Leave(ticket, r, &woken, /*stamp=*/false);
      for (uint64_t k : r.keys) queues_[k].push_back(ticket);
    }
    granted = AtFront(ticket, r);
    r.granted = granted;
    if (granted) {
      counters_.held++;
    } else {
      counters_.waits++;
      counters_.waiting++;
    }
  }
  for (auto& [w, t] : woken) {
    if (w) w(t);
  }
  return granted;
}

bool KeyLocks::Has(uint64_t ticket, uint64_t key) const {
  TsanVisibleMutexLock l(&mu_);
  auto it = requests_.find(ticket);
  return it != requests_.end() && std::binary_search(it->second.keys.begin(), it->second.keys.end(), key);
}

int64_t KeyLocks::requeues() const {
  TsanVisibleMutexLock l(&mu_);
  return requeues_;
}

bool KeyLocks::Holds(uint64_t ticket) const {
  TsanVisibleMutexLock l(&mu_);
  auto it = requests_.find(ticket);
  return it != requests_.end() && it->second.granted;
}

KeyLocks::Counters KeyLocks::counters() const {
  TsanVisibleMutexLock l(&mu_);
  return counters_;
}

}  // namespace proxy
}  // namespace corral
