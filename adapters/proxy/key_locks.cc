// KeyLocks (key_locks.h): per-key FIFO queues under one mutex.
#include "adapters/proxy/key_locks.h"

#include <algorithm>
#include <utility>

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

void KeyLocks::Release(uint64_t ticket) {
  std::vector<std::pair<Wake, uint64_t>> woken;
  {
    TsanVisibleMutexLock l(&mu_);
    auto it = requests_.find(ticket);
    if (it == requests_.end()) return;
    Request gone = std::move(it->second);
    requests_.erase(it);
    (gone.granted ? counters_.held : counters_.waiting)--;
    std::vector<uint64_t> fronts;  // requests now at the front of a queue it left
    for (uint64_t k : gone.keys) {
      auto q = queues_.find(k);
      if (q == queues_.end()) continue;
      const bool was_front = !q->second.empty() && q->second.front() == ticket;
      q->second.erase(std::remove(q->second.begin(), q->second.end(), ticket), q->second.end());
      if (q->second.empty()) {
        queues_.erase(q);
      } else if (was_front) {
        fronts.push_back(q->second.front());
      }
    }
    for (uint64_t t : fronts) {
      auto r = requests_.find(t);
      if (r == requests_.end() || r->second.granted || !AtFront(t, r->second)) continue;
      r->second.granted = true;
      counters_.waiting--;
      counters_.held++;
      woken.emplace_back(r->second.wake, t);
    }
  }
  for (auto& [wake, t] : woken) {
    if (wake) wake(t);
  }
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
