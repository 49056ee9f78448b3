// The planned protocols' shared pieces: a transaction's lock request, the
// LockService each planned protocol implements, the batch sequencer of
// calvin and qstore, the per-lock FIFO table of calvin and orthrus, and the
// services' factories. Internal to engine/: only the planned protocol files
// include it.
//
//   std::unique_ptr<LockService> locks = NewCalvinService(0, 100000);
//   LockRequest* req = new LockRequest;  req->items = {{table, granule, true}};
//   Normalize(&req->items);
//   locks->Lock(req);      // blocks until every lock is held
//   ...                    // run the transaction
//   locks->Unlock(req);    // releases them all; the service owns req now
//
// Where each protocol lives: calvin.cc (sequencer + one lock-manager thread),
// qstore.cc (execution queues), orthrus.cc (CC threads and messages),
// planned.cc (deadlock-free locking on a shared table, the guard, the
// reconnaissance run and the protocol factories of cc.h).
//
// Thread safety: LockService::Lock/Unlock from any worker thread (each
// request from one worker); BatchSequencer::Submit from any thread;
// FifoLockTable is thread-compatible (one owner thread).
#ifndef CORRAL_ENGINE_PLANNED_INTERNAL_H_
#define CORRAL_ENGINE_PLANNED_INTERNAL_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "common/clock.h"
#include "engine/cc.h"
#include "engine/qstore_placement.h"

namespace corral {
namespace engine {
namespace planned_internal {

// One lock a transaction holds: a lock granule of a table, read or write.
struct LockItem {
  int table;
  uint64_t granule;
  bool write;
  bool operator<(const LockItem& o) const {
    return table != o.table ? table < o.table : granule < o.granule;
  }
  bool SameLock(const LockItem& o) const { return table == o.table && granule == o.granule; }
};

// Sorts by (table, granule) and merges duplicates (write wins).
inline void Normalize(std::vector<LockItem>* items) {
  std::sort(items->begin(), items->end());
  size_t out = 0;
  for (size_t i = 0; i < items->size(); ++i) {
    if (out > 0 && (*items)[out - 1].SameLock((*items)[i])) {
      (*items)[out - 1].write |= (*items)[i].write;
    } else {
      (*items)[out++] = (*items)[i];
    }
  }
  items->resize(out);
}

// A transaction's lock request, from submission to release. Owned by the
// worker until it is released; then by the lock service.
struct LockRequest {
  std::vector<LockItem> items;
  int worker = 0;
  std::atomic<bool> granted{false};
  int pending = 0;          // calvin: locks not yet granted (lock-manager thread only)
  int64_t submit_ns = 0;    // worker
  int64_t sealed_ns = 0;    // calvin: when its batch was sealed (sequencer); qstore: planned
  // qstore: its execution queues (planner), and how many it does not head
  // yet, plus one until all are published.
  // An entry: queue index << 1 | writes.
  std::vector<uint32_t> queues;
  std::atomic<int> heads_missing{0};
  // qstore speculative execution (qstore_spec.cc): per item (in `items`'
  // order) the index of its queue in `queues` (a "slot"), and per slot
  // whether the request heads that queue yet (set by the queue's owner when
  // it becomes the head; written by the planner before publication).
  std::vector<uint32_t> item_slot;
  std::unique_ptr<std::atomic<bool>[]> heads;
  // orthrus: the runs of `items` (sorted by CC partition, then key) that
  // each CC thread owns, in acquisition order; written by the worker before
  // the request is sent. `stage`: the run being acquired (the CC thread that
  // holds the request). `refs`: release messages not yet processed.
  struct Segment {
    int cc;
    uint32_t begin, end;
  };
  absl::InlinedVector<Segment, 4> segments;
  int stage = 0;
  std::atomic<int> refs{0};
};

class LockService {
 public:
  virtual ~LockService() = default;
  // Blocks until `req` holds all its locks.
  virtual void Lock(LockRequest* req) = 0;
  // Releases them all at once; takes ownership of req.
  virtual void Unlock(LockRequest* req) = 0;
  virtual void SetPlanObserver(PlanObserver obs) {}
  // qstore speculative execution: Lock returns once the request is placed
  // on its queues (req->heads tells which it heads), and the transaction
  // gives each queue up with ReleaseSlot as soon as its fragments there are
  // done, before it commits; Unlock gives up the rest.
  virtual bool speculative() const { return false; }
  virtual void ReleaseSlot(LockRequest* req, size_t slot) {}
  // Once, when the first executor is made (the tables are loaded; no
  // transaction has been submitted yet).
  virtual void TablesLoaded(const std::vector<std::unique_ptr<Table>>& tables) {}
  // CcProtocol::Report.
  virtual std::string Report() const { return ""; }
};

// ------------------------------------------------------------- sequencer

// The sequencer of calvin and qstore: its thread seals submitted requests
// into batches (when `batch_txns` requests are waiting, or `batch_ns` after
// the first one arrived, whichever comes first; batch_txns = 0: time-based
// epochs only), stamps them sealed, and hands each batch, in order, to
// `sink` (called on the sequencer thread, outside its lock).
class BatchSequencer {
 public:
  using Sink = std::function<void(std::vector<LockRequest*>)>;
  BatchSequencer(int batch_txns, int64_t batch_ns, Sink sink)
      : batch_txns_(batch_txns), batch_ns_(batch_ns > 0 ? batch_ns : 1), sink_(std::move(sink)) {
    thread_ = std::thread([this] { Loop(); });
  }
  // Stops the thread; requests not yet sealed are dropped (none are left
  // when every submitter got its grant).
  ~BatchSequencer() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  void Submit(LockRequest* req) {
    req->submit_ns = MonoNanos();
    {
      std::lock_guard<std::mutex> l(mu_);
      incoming_.push_back(req);
    }
    cv_.notify_one();
  }

 private:
  void Loop() {
    for (;;) {
      std::vector<LockRequest*> batch;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [this] { return stop_ || !incoming_.empty(); });
        if (stop_) return;
        // The batch closes batch_ns after its first request, or earlier once
        // batch_txns requests wait.
        cv_.wait_for(l, std::chrono::nanoseconds(batch_ns_), [this] {
          return stop_ || (batch_txns_ > 0 && static_cast<int>(incoming_.size()) >= batch_txns_);
        });
        if (stop_) return;
        batch.swap(incoming_);
      }
      const int64_t now = MonoNanos();
      for (LockRequest* r : batch) r->sealed_ns = now;
      sink_(std::move(batch));
    }
  }

  const int batch_txns_;
  const int64_t batch_ns_;
  const Sink sink_;
  // std::mutex + condition variables rather than absl::Mutex::Await: the
  // Debian absl is not TSan-instrumented, and Await evaluates a waiter's
  // condition on the unlocking thread, which TSan then reports.
  std::mutex mu_;
  std::condition_variable cv_;           // incoming_ or stop_ changed
  bool stop_ = false;                    // guarded by mu_
  std::vector<LockRequest*> incoming_;   // guarded by mu_
  std::thread thread_;
};

// Blocks the submitting worker until `req` is granted.
inline void AwaitGrant(const LockRequest* req) {
  Waiter waiter;
  while (!req->granted.load(std::memory_order_acquire)) waiter.Wait();
}

inline void Grant(LockRequest* r) { r->granted.store(true, std::memory_order_release); }

// Starts the head of a FIFO of entries {req, write, started}: the first
// entry if it writes, else the leading run of readers; `start(entry)` is
// called once for each entry newly started.
template <typename Fifo, typename Start>
void StartHeadRun(Fifo* fifo, Start start) {
  for (size_t i = 0; i < fifo->size(); ++i) {
    auto& e = (*fifo)[i];
    if (e.write) {
      if (i == 0 && !e.started) {
        e.started = true;
        start(e);
      }
      return;
    }
    if (!e.started) {
      e.started = true;
      start(e);
    }
  }
}

// ---------------------------------------------------------------- FIFO lock table

// Per-lock FIFO queues, owned by one thread (calvin's lock manager, one
// orthrus concurrency-control thread). A request's locks [begin, end) are
// appended to their queues together, so a request waits only for requests
// appended earlier; the head of a queue is granted (a writer alone, or the
// leading run of readers). Thread-compatible (one owner thread).
class FifoLockTable {
 public:
  // Appends r->items[begin, end) to their queues. Requests that now hold all
  // those locks are appended to *ready (r itself when it got them at once).
  void Enqueue(LockRequest* r, size_t begin, size_t end, std::vector<LockRequest*>* ready) {
    r->pending = static_cast<int>(end - begin);
    if (begin == end) {
      ready->push_back(r);
      return;
    }
    for (size_t i = begin; i < end; ++i) {
      const LockItem& it = r->items[i];
      Queue& q = table_[{it.table, it.granule}];
      q.push_back({r, it.write, false});
      GrantHeads(&q, ready);
    }
  }

  // Removes r's locks [begin, end) from their queues (r holds them all);
  // requests that now hold all theirs are appended to *ready.
  void Release(LockRequest* r, size_t begin, size_t end, std::vector<LockRequest*>* ready) {
    for (size_t j = begin; j < end; ++j) {
      const LockItem& it = r->items[j];
      auto f = table_.find(std::make_pair(it.table, it.granule));
      if (f == table_.end()) continue;
      Queue& q = f->second;
      for (size_t i = 0; i < q.size(); ++i) {
        if (q[i].req == r) {
          q.erase(q.begin() + i);
          break;
        }
      }
      if (q.empty()) {
        table_.erase(f);
      } else {
        GrantHeads(&q, ready);
      }
    }
  }

 private:
  struct Entry {
    LockRequest* req;
    bool write;
    bool started;  // granted
  };
  using Queue = absl::InlinedVector<Entry, 4>;

  // Grants the queue's head: a writer alone, or the leading run of readers.
  static void GrantHeads(Queue* q, std::vector<LockRequest*>* ready) {
    StartHeadRun(q, [ready](Entry& e) {
      if (--e.req->pending == 0) ready->push_back(e.req);
    });
  }

  absl::flat_hash_map<std::pair<int, uint64_t>, Queue> table_;
};

// ---------------------------------------------------------------- qstore speculative

// Q-Store's speculative execution (qstore_spec.cc): the inner TxImpl of a
// qstore transaction when qstore_execution = speculative. It waits, per
// access, to head the queue of the accessed granule; gives each queue up as
// soon as the program has moved past every granule it declared there
// (publishing its writes to those rows in place, before-images kept);
// records a speculation dependency on the last uncommitted writer of every
// granule it touches; commits once those have committed; and on an abort
// (a user abort, a stray access, or an aborted dependency) first has every
// transaction that depends on it roll back, then restores its rows.
class SpecRegistry;  // granule -> its last uncommitted writer, shared by all
std::shared_ptr<SpecRegistry> NewSpecRegistry();

class SpecControl {
 public:
  // Before the procedure runs (after Begin): the request just published on
  // its queues, and the accesses as declared or found, in program order
  // (repeats allowed); a queue is given up early only if early_release.
  // Counts into *stats.
  virtual void Attach(LockRequest* req, const std::vector<LockItem>& order, bool early_release,
                      ExecutorStats* stats) = 0;
  // After the procedure: whether the attempt came back to a queue it had
  // already given up (touched a granule there, or changed a row after its
  // image was installed). It is then rolled back and re-run holding its
  // queues to the end.
  virtual bool late() = 0;
  // Waits until every transaction this attempt depends on has committed;
  // false if one aborted (this attempt then rolls back: a cascade). Used
  // before a user abort or error is honoured: it may rest on dirty reads.
  virtual bool AwaitDependencies() = 0;

 protected:
  ~SpecControl() = default;
};

// `queues` is the qstore service (speculative); *control receives the
// returned Tx's SpecControl.
std::unique_ptr<TxImpl> NewSpecTx(LockService* queues, std::shared_ptr<SpecRegistry> registry,
                                  int worker_id, RecordArena* arena, bool record_footprint,
                                  SpecControl** control);

// The lock services (one per planned protocol).
std::unique_ptr<LockService> NewCalvinService(int batch_txns, int64_t batch_ns);
std::unique_ptr<LockService> NewQStoreService(int batch_txns, int64_t batch_ns, int queues, int planners,
                                              PlacementKind placement, int64_t learn_txns,
                                              bool speculative);
std::unique_ptr<LockService> NewOrthrusService(int cc_threads);
std::unique_ptr<LockService> NewSharedTableService();

}  // namespace planned_internal
}  // namespace engine
}  // namespace corral

#endif  // CORRAL_ENGINE_PLANNED_INTERNAL_H_
