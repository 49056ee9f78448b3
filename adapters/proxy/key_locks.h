// KeyLocks: the in-process keyed lock table the proxy's event loops share
// when `workers` > 1 (proxy.h, README "Workers"), and one loop's own with
// restart_on_hot_key (restart_loop.cc). A transaction whose
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
// Restart on a hot key (README "Transparent replay", Options::
// restart_on_hot_key): a running transaction may take one more key later
// (TakeIfFree) when no one holds or waits for it and no holder released it
// since the transaction's snapshot (a per-key release epoch: Epoch() read
// before the snapshot, compared with the key's last release). Otherwise its
// transaction is restarted and waits for the rest (AcquireMore): it keeps
// the keys it holds and queues for the new ones; a wait that would close a
// cycle (some request it waits for waits, directly or not, for one of its
// keys) is not kept: the request leaves every queue (its keys freed) and
// queues again for the union, all at once, at the back, where nobody waits
// for it, so no cycle can form through it (counted in requeues).
//
//   uint64_t snap = locks.Epoch();               // before the first statement
//   if (locks.TakeIfFree(0, ticket, k3, snap) != KeyLocks::Take::kTaken) {
//     ... roll back; then
//     if (locks.AcquireMore(0, ticket, {k3}, wake)) ... replay now
//   }
//
// Thread safety: thread-safe (one TsanVisibleMutex; the wake callbacks run
// outside it).
#ifndef CORRAL_ADAPTERS_PROXY_KEY_LOCKS_H_
#define CORRAL_ADAPTERS_PROXY_KEY_LOCKS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <utility>
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
  // Gives back one key `ticket` holds (granted) and keeps the others; the
  // requests it lets to the front of that key's queue, if granted, are
  // woken before it returns. No epoch stamp (cycle_gates.h: a gate key, not
  // a row). No-op when the ticket does not hold the key or still waits.
  void ReleaseKey(uint64_t ticket, uint64_t key);
  // Whether `ticket` holds its keys now.
  bool Holds(uint64_t ticket) const;
  // Whether `ticket` holds (or waits for) `key`.
  bool Has(uint64_t ticket, uint64_t key) const;
  Counters counters() const;

  // The release epoch now: every Release of a request at the front of a
  // key's queue advances it and stamps that key (in a table of kEpochSlots
  // slots by key hash: two keys in one slot share the later stamp, which
  // only makes TakeIfFree more careful).
  uint64_t Epoch() const;
  static constexpr size_t kEpochSlots = 4096;
  enum class Take {
    kTaken,     // `ticket` holds `key` now (or did already)
    kHeld,      // another request holds or waits for it
    kReleased,  // free, but released after `since`
  };
  // Takes `key` for `ticket` (granted, or no request yet: one is made,
  // granted) when no other request holds or waits for it and its last
  // release is not after epoch `since`. Nothing changes otherwise. A ticket
  // that is waiting gets kHeld.
  Take TakeIfFree(int worker, uint64_t ticket, uint64_t key, uint64_t since);
  // `ticket` keeps what it holds and waits for `more` too (see the file
  // comment: a wait cycle requeues it for the union). True: it holds all
  // now. False: `wake(ticket)` runs once it does. *requeued (when given):
  // its wait would have closed a cycle, it gave up its keys.
  bool AcquireMore(int worker, uint64_t ticket, std::vector<uint64_t> more, Wake wake, bool* requeued = nullptr);
  // Waits AcquireMore turned into an all-or-nothing request again.
  int64_t requeues() const;

 private:
  struct Request {
    int worker = 0;
    std::vector<uint64_t> keys;  // sorted, distinct
    bool granted = false;
    Wake wake;
  };
  // True when `ticket` is at the front of every one of its keys' queues.
  bool AtFront(uint64_t ticket, const Request& r) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes `ticket` out of every queue (its request kept); the requests it
  // let to the front and now granted go to *woken.
  // `stamp`: a release (the keys at whose front it was get a new epoch);
  // not when it only requeues (its transaction was rolled back).
  void Leave(uint64_t ticket, const Request& r, std::vector<std::pair<Wake, uint64_t>>* woken, bool stamp)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether some request `ticket` waits for (ahead of it in one of its
  // queues) waits, directly or not, for `ticket`.
  bool InCycle(uint64_t ticket) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static size_t Slot(uint64_t key) { return (key * 0x9E3779B97F4A7C15ull) >> 52; }  // 12 bits

  mutable TsanVisibleMutex mu_;
  absl::flat_hash_map<uint64_t, std::deque<uint64_t>> queues_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Request> requests_ ABSL_GUARDED_BY(mu_);
  Counters counters_ ABSL_GUARDED_BY(mu_);
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<uint64_t> released_ ABSL_GUARDED_BY(mu_) = std::vector<uint64_t>(kEpochSlots, 0);
  int64_t requeues_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_KEY_LOCKS_H_
