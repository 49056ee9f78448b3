// Lock table of the locking scheme: Grantable/Acquire/Release, deadlock
// detection, retrying blocked transactions and lock timeouts.
// Thread-safety: called only on the owning partition's thread; no locks.
#include "engine/partitioned/partitioned_internal.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <map>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"

namespace corral {
namespace partitioned {
namespace internal {

// ---------------------------------------------------------------- Locking

bool Partition::Grantable(uint64_t id, const std::vector<Op>& ops,
                          std::vector<uint64_t>* holders) const {
  if (locks_.empty()) return true;
  bool ok = true;
  for (const Op& op : ops) {
    auto it = locks_.find(op.key / P_);
    if (it == locks_.end()) continue;
    const LockState& ls = it->second;
    if (ls.x != 0 && ls.x != id) {
      ok = false;
      holders->push_back(ls.x);
    }
    if (op.kind == Op::kAdd) {
      for (uint64_t s : ls.s) {
        if (s != id) {
          ok = false;
          holders->push_back(s);
        }
      }
    }
  }
  return ok;
}

void Partition::Acquire(uint64_t id, const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    LockState& ls = locks_[op.key / P_];
    if (op.kind == Op::kAdd) {
      ls.x = id;
    } else if (ls.x != id &&
               std::find(ls.s.begin(), ls.s.end(), id) == ls.s.end()) {
      ls.s.push_back(id);
    }
  }
}

void Partition::Release(uint64_t id, const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    auto it = locks_.find(op.key / P_);
    if (it == locks_.end()) continue;
    LockState& ls = it->second;
    if (ls.x == id) ls.x = 0;
    ls.s.erase(std::remove(ls.s.begin(), ls.s.end(), id), ls.s.end());
    if (ls.x == 0 && ls.s.empty()) locks_.erase(it);
  }
}

void Partition::ReleaseAll(Entry* e) {
  for (int r : e->rounds_done) Release(e->txn->id, e->txn->frags[r][idx_]);
}

bool Partition::WouldDeadlock(uint64_t id,
                              const std::vector<uint64_t>& holders) const {
  // Waits-for edges of the lock waits at this partition (MP txns only: an
  // SP txn holds no locks while it waits).
  std::vector<uint64_t> stack(holders.begin(), holders.end()), seen;
  while (!stack.empty()) {
    uint64_t h = stack.back();
    stack.pop_back();
    if (h == id) return true;
    if (std::find(seen.begin(), seen.end(), h) != seen.end()) continue;
    seen.push_back(h);
    for (const Pend& b : blocked_) {
      if (b.txn->id == h) {
        stack.insert(stack.end(), b.waits_on.begin(), b.waits_on.end());
      }
    }
  }
  return false;
}

void Partition::RetryBlocked() {
  if (blocked_.empty()) return;
  std::vector<Pend> b;
  b.swap(blocked_);
  // Continuations first (they hold locks), then the rest in order.
  for (auto it = b.rbegin(); it != b.rend(); ++it) {
    pending_.push_front(std::move(*it));
  }
  // Continuations of active transactions are run at once.
  std::deque<Pend> rest;
  while (!pending_.empty()) {
    Pend p = std::move(pending_.front());
    pending_.pop_front();
    size_t i;
    if (p.txn->mp && p.round != p.txn->first_round[idx_] &&
        Find(p.txn->id, &i) != nullptr) {
      ExecFragment(std::move(p));
    } else {
      rest.push_back(std::move(p));
    }
  }
  pending_.swap(rest);
}

int64_t Partition::CheckTimeouts() {
  const int64_t now = MonoNanos();
  int64_t wake = 0;
  for (size_t i = 0; i < blocked_.size();) {
    Pend& b = blocked_[i];
    if (!b.txn->mp) {
      ++i;
      continue;
    }
    const int64_t due = b.since + lock_timeout_ns_;
    if (due <= now) {
      // Distributed deadlock (or a very long wait): vote no.
      size_t k;
      Entry* e = Find(b.txn->id, &k);
      Respond(b.txn, b.round, e, false, true);
      blocked_.erase(blocked_.begin() + i);
      continue;
    }
    wake = wake == 0 ? due : std::min(wake, due);
    ++i;
  }
  return wake;
}

}  // namespace internal
}  // namespace partitioned
}  // namespace corral
