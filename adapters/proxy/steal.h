// Which waiting transaction an idle backend may take from another backend's
// queue (the proxy's stealing rule), as pure functions so they can be tested
// without sockets.
//
// Modes (config `stealing`):
//   off       an idle backend takes only its own queue's transactions.
//   on        affinity-aware (the default): an idle backend takes a waiting
//             transaction of another queue only if its placement carried no
//             learned affinity (Scheduler::Route's `affinity` was false: the
//             default rule chose, e.g. cold keys, `pgbench -S`), or if it has
//             waited longer than `steal_after` (0 = never). Transactions the
//             policy queued behind a conflicting one stay there, so the
//             routing is not undone (measured in bench/RESULTS.md, Proxy:
//             plain stealing took 50-65% of the waiting transactions).
//   any       plain work stealing: any waiting transaction.
// Among the stealable transactions the one waiting longest wins; within a
// queue the order is FIFO, so the first stealable entry of each queue is
// that queue's candidate.
//
//   StealPick p = PickSteal(waitq, self, StealMode::kAffinity, now, bound,
//                           [](Client* c) { return c->affinity; },
//                           [](Client* c) { return c->wait_since; });
//   if (p.queue >= 0) { take waitq[p.queue][p.pos]; }
//
// Thread-safety: stateless.
#ifndef CORRAL_ADAPTERS_PROXY_STEAL_H_
#define CORRAL_ADAPTERS_PROXY_STEAL_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace corral {
namespace proxy {

enum class StealMode : uint8_t { kOff, kAffinity, kAny };

inline absl::string_view StealModeName(StealMode m) {
  switch (m) {
    case StealMode::kOff:
      return "off";
    case StealMode::kAffinity:
      return "on";
    case StealMode::kAny:
      return "any";
  }
  return "?";
}

// Whether a backend other than the transaction's own may take it now.
// `steal_after_ns` <= 0: an affine transaction is never stolen.
inline bool MaySteal(StealMode mode, bool affinity, int64_t waited_ns, int64_t steal_after_ns) {
  switch (mode) {
    case StealMode::kOff:
      return false;
    case StealMode::kAny:
      return true;
    case StealMode::kAffinity:
      return !affinity || (steal_after_ns > 0 && waited_ns > steal_after_ns);
  }
  return false;
}

struct StealPick {
  int queue = -1;  // -1: nothing to take
  size_t pos = 0;  // index in that queue
};

// The transaction an idle backend `self` should steal from the other queues
// of `waitq` (an indexable container of FIFO containers), or queue -1.
template <typename Queues, typename AffinityFn, typename SinceFn>
StealPick PickSteal(const Queues& waitq, int self, StealMode mode, int64_t now_ns,
                    int64_t steal_after_ns, AffinityFn affinity, SinceFn wait_since) {
  StealPick best;
  if (mode == StealMode::kOff) return best;
  int64_t best_since = 0;
  for (int q = 0; q < static_cast<int>(waitq.size()); ++q) {
    if (q == self) continue;
    size_t i = 0;
    for (const auto& c : waitq[q]) {
      const int64_t since = wait_since(c);
      if (MaySteal(mode, affinity(c), now_ns - since, steal_after_ns)) {
        if (best.queue < 0 || since < best_since) {
          best.queue = q;
          best.pos = i;
          best_since = since;
        }
        break;  // FIFO: later entries of this queue waited less
      }
      ++i;
    }
  }
  return best;
}

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_STEAL_H_
