// KeyLocks: the in-process keyed lock table the proxy's event loops share
// when `workers` > 1 (proxy.h, README "Workers"). A transaction whose
// references are hot takes their keys before it is routed, so two loops
// never run transactions on the same hot reference at once on different
// backends. All-or-nothing and FIFO: a request queues on every one of its
// keys at once (one table mutex, so every key's queue is in arrival
// order), and is granted when it is at the front of all of them; the
// oldest waiting request is then at the front of all its queues, so it
// runs once the holders ahead of it release: no deadlock. A request not
// granted at once is granted later by some Release, which calls the
// request's `wake` (with the table's mutex NOT held) so the owning loop
// can resume it through its own eventfd.
//
//   KeyLocks locks;
//   bool cross = false;
//   if (!locks.Acquire(/*worker=*/0, ticket, {k1, k2}, &cross, wake)) {
//     ... wait: `wake(ticket)` runs (on another thread, or this one) once granted
//   }
//   ... run the transaction ...
//   locks.Release(ticket);   // held or still waiting: either way gone
//
// Thread safety: thread-safe (one TsanVisibleMutex; the wake callbacks run
// outside it).
#ifndef CORRAL_ADAPTERS_PROXY_KEY_LOCKS_H_
#define CORRAL_ADAPTERS_PROXY_KEY_LOCKS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/tsan_visible_mutex.h"

namespace corral {
namespace proxy {

class KeyLocks {
 public:
  // Called once per request granted after it waited, with its ticket.
  using Wake = std::function<void(uint64_t ticket)>;

  struct Counters {
    int64_t requests = 0;     // Acquire calls with at least one key
    int64_t waits = 0;        // of them, not granted at once
    int64_t cross_waits = 0;  // of the waits, behind a request of another worker
    int64_t held = 0;         // requests holding their keys now (a gauge)
    int64_t waiting = 0;      // requests waiting now (a gauge)
  };

  // Requests `keys` (any order; duplicates ignored) for `ticket` (unique
  // among live requests) of loop `worker`. True: granted now. False: it
  // waits; `wake(ticket)` runs once it is granted, unless Release(ticket)
  // came first. *cross (when given): it waits behind a request of another
  // worker. An empty `keys` is granted and not recorded.
  bool Acquire(int worker, uint64_t ticket, std::vector<uint64_t> keys, bool* cross, Wake wake);
  // Releases what `ticket` holds, or withdraws its wait; no-op when unknown.
  // Requests granted by it are woken before it returns.
  void Release(uint64_t ticket);
  // Whether `ticket` holds its keys now.
  bool Holds(uint64_t ticket) const;
  Counters counters() const;

 private:
  struct Request {
    int worker = 0;
    std::vector<uint64_t> keys;  // sorted, distinct
    bool granted = false;
    Wake wake;
  };
  // True when `ticket` is at the front of every one of its keys' queues.
  bool AtFront(uint64_t ticket, const Request& r) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable TsanVisibleMutex mu_;
  absl::flat_hash_map<uint64_t, std::deque<uint64_t>> queues_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Request> requests_ ABSL_GUARDED_BY(mu_);
  Counters counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_KEY_LOCKS_H_
