// Which waiting transaction an idle backend may take from another backend's
// queue (the proxy's stealing rule), as pure functions so they can be tested
// without sockets.
//
// Modes (config `stealing`):
//   off       an idle backend takes only its own queue's transactions.
//   affinity  affinity-aware: an idle backend takes a waiting transaction of
//             another queue only if its placement carried no learned
//             affinity (Scheduler::Route's `affinity` was false: the default
//             rule chose, e.g. cold keys, `pgbench -S`), or if it has waited
//             longer than `steal_after` (0 = never). Transactions the policy
//             queued behind a conflicting one stay there, so the routing is
//             not undone (measured in bench/RESULTS.md, Proxy: plain stealing
//             took 50-65% of the waiting transactions).
//   on        (the default) affinity-aware and in-flight-aware: a waiting
//             transaction placed without learned affinity may be stolen, and
//             so may an affine one none of whose references is held by a
//             running affine transaction ("blocked" is false); its own
//             backend, in turn, passes over a blocked transaction at its
//             queue's front for the next unblocked one (FIFO otherwise). A
//             queue that holds several hot keys then no longer serializes
//             unrelated keys behind each other, and two transactions on one
//             hot key never run at once: a blocked transaction waits for the
//             holder to end, however long (`steal_after` does not apply:
//             running it beside the holder is the conflict the routing
//             avoids; measured: with a 50 ms bound, a hot-row run whose
//             waits crossed it stole blocked transactions, which conflicted,
//             were retried, waited longer: 10.9% retried instead of 0.1%).
//   any       plain work stealing: any waiting transaction.
// Among the stealable transactions the one waiting longest wins; within a
// queue the order is FIFO, so the first stealable entry of each queue is
// that queue's candidate.
//
//   StealPick p = PickSteal(waitq, self, StealMode::kInFlight, now, bound,
//                           [](Client* c) { return c->affinity; },
//                           [&](Client* c) { return HeldByRunning(c); },
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

enum class StealMode : uint8_t { kOff, kAffinity, kInFlight, kAny };

inline absl::string_view StealModeName(StealMode m) {
  switch (m) {
    case StealMode::kOff:
      return "off";
    case StealMode::kAffinity:
      return "affinity";
    case StealMode::kInFlight:
      return "on";
    case StealMode::kAny:
      return "any";
  }
  return "?";
}

// Whether a backend other than the transaction's own may take it now.
// `blocked`: a reference of it is held by a running affine transaction
// (only kInFlight looks at it). `steal_after_ns` <= 0: an affine
// transaction is never stolen for having waited.
inline bool MaySteal(StealMode mode, bool affinity, bool blocked, int64_t waited_ns,
                     int64_t steal_after_ns) {
  const bool waited_out = steal_after_ns > 0 && waited_ns > steal_after_ns;
  switch (mode) {
    case StealMode::kOff:
      return false;
    case StealMode::kAny:
      return true;
    case StealMode::kAffinity:
      return !affinity || waited_out;
    case StealMode::kInFlight:
      return !affinity || !blocked;
  }
  return false;
}

// The entry a backend takes from its own queue: the front, or under
// kInFlight the first entry that is not blocked; -1 when every entry is
// blocked (it then waits, or steals).
template <typename Queue, typename BlockedFn, typename SinceFn>
int PickOwn(const Queue& q, StealMode mode, int64_t now_ns, int64_t steal_after_ns,
            BlockedFn blocked, SinceFn wait_since) {
  if (q.empty()) return -1;
  if (mode != StealMode::kInFlight) return 0;
  int i = 0;
  for (const auto& c : q) {
    if (!blocked(c)) return i;
    ++i;
  }
  return -1;
}

struct StealPick {
  int queue = -1;  // -1: nothing to take
  size_t pos = 0;  // index in that queue
};

// The transaction an idle backend `self` should steal from the other queues
// of `waitq` (an indexable container of FIFO containers), or queue -1.
template <typename Queues, typename AffinityFn, typename BlockedFn, typename SinceFn>
StealPick PickSteal(const Queues& waitq, int self, StealMode mode, int64_t now_ns,
                    int64_t steal_after_ns, AffinityFn affinity, BlockedFn blocked,
                    SinceFn wait_since) {
  StealPick best;
  if (mode == StealMode::kOff) return best;
  int64_t best_since = 0;
  for (int q = 0; q < static_cast<int>(waitq.size()); ++q) {
    if (q == self) continue;
    size_t i = 0;
    for (const auto& c : waitq[q]) {
      const int64_t since = wait_since(c);
      const bool aff = affinity(c);
      if (MaySteal(mode, aff, aff && mode == StealMode::kInFlight && blocked(c), now_ns - since,
                   steal_after_ns)) {
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
