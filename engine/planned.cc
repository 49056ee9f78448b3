// Planned protocols: "calvin" (a sequencer batches transactions, one
// lock-manager thread grants their declared locks in batch order),
// "qstore" (a sequencer batches transactions, planner threads place them on
// execution queues in batch order, a transaction runs when it heads all its
// queues), "planned" (deadlock-free 2PL: each transaction takes its
// declared locks in one global order on a shared lock table before it
// runs) and "orthrus" (concurrency-control threads own partitions of the
// lock table; workers ask them for their declared locks by message, in
// partition order). All execute a transaction only once it holds every lock
// it declared, run its procedure through a guard that refuses any access
// outside the declared set (the attempt is rolled back and re-planned), and
// install its writes with the OCC machinery (occ.cc), whose validation
// cannot fail under the locks. Where the declared set is not known from the
// parameters, a reconnaissance run of the procedure against committed data
// finds it (Calvin's OLLP). See engine.h for the design.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "common/hash.h"
#include "engine/cc.h"

namespace corral {
namespace engine {
namespace {

using scheduler::AbortCause;
using scheduler::ExecResult;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

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
void Normalize(std::vector<LockItem>* items) {
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
    req->submit_ns = NowNs();
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
      const int64_t now = NowNs();
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
void AwaitGrant(const LockRequest* req) {
  Waiter waiter;
  while (!req->granted.load(std::memory_order_acquire)) waiter.Wait();
}

void Grant(LockRequest* r) { r->granted.store(true, std::memory_order_release); }

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

// ---------------------------------------------------------------- calvin

// Sequencer + deterministic lock manager. Workers submit lock requests; the
// sequencer seals them into batches; the lock-manager thread, alone, owns
// the lock table (a FifoLockTable) and appends each batch's requests, in
// batch order. A request holding every lock is released to its worker. No
// request ever waits for a later one, so there are no deadlocks and no
// concurrency-control aborts.
class CalvinService final : public LockService {
 public:
  CalvinService(int batch_txns, int64_t batch_ns) {
    lock_manager_ = std::thread([this] { LockManagerLoop(); });
    sequencer_ = std::make_unique<BatchSequencer>(
        batch_txns, batch_ns, [this](std::vector<LockRequest*> batch) {
          {
            std::lock_guard<std::mutex> l(mu_);
            batches_.push_back(std::move(batch));
          }
          lock_manager_cv_.notify_one();
        });
  }
  ~CalvinService() override {
    sequencer_.reset();  // no more batches
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    lock_manager_cv_.notify_all();
    lock_manager_.join();
    for (LockRequest* r : releases_) delete r;
  }

  void Lock(LockRequest* req) override {
    sequencer_->Submit(req);
    AwaitGrant(req);
  }

  void Unlock(LockRequest* req) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      releases_.push_back(req);
    }
    lock_manager_cv_.notify_one();
  }

 private:
  void LockManagerLoop() {
    std::vector<std::vector<LockRequest*>> batches;
    std::vector<LockRequest*> releases;
    std::vector<LockRequest*> ready;
    for (;;) {
      {
        std::unique_lock<std::mutex> l(mu_);
        lock_manager_cv_.wait(
            l, [this] { return stop_ || !batches_.empty() || !releases_.empty(); });
        if (stop_) return;
        batches.swap(batches_);
        releases.swap(releases_);
      }
      for (LockRequest* r : releases) {
        table_.Release(r, 0, r->items.size(), &ready);
        delete r;
      }
      releases.clear();
      for (auto& b : batches) {
        for (LockRequest* r : b) table_.Enqueue(r, 0, r->items.size(), &ready);
      }
      batches.clear();
      for (LockRequest* r : ready) Grant(r);
      ready.clear();
    }
  }

  std::mutex mu_;
  std::condition_variable lock_manager_cv_;  // batches_, releases_ or stop_ changed
  bool stop_ = false;                                   // guarded by mu_
  std::vector<std::vector<LockRequest*>> batches_;      // guarded by mu_
  std::vector<LockRequest*> releases_;                  // guarded by mu_
  FifoLockTable table_;  // lock-manager thread only
  std::thread lock_manager_;
  std::unique_ptr<BatchSequencer> sequencer_;
};

// ---------------------------------------------------------------- qstore

// Q-Store's queue-oriented execution, at transaction granularity (see
// NewQStoreProtocol in cc.h). The sequencer seals a batch and splits it into
// `planners` contiguous slices, one per planner thread; the slice's index is
// its priority group (the paper's planning-thread priority), so the batch's
// deterministic order is (batch, group, position in the slice). A planner
// maps each lock granule its transactions declared to one of `queues`
// execution queues (hash placement: one granule, one queue, so conflicting
// accesses always share a queue) and appends each transaction once to every
// queue it touches. Planning runs in parallel; publishing onto the queues
// goes in group order (a turnstile), so every queue holds its transactions
// in the batch order. A transaction runs when it heads every queue it is
// in; its worker then removes it from them and starts the new heads. There
// is no lock table and no lock-manager thread. A queue's head is a writer
// alone or the leading run of readers (the paper's queues run strictly one
// fragment after another; here an entry holds its queue for a whole
// transaction, so readers that commute share it).
class QStoreService final : public LockService {
 public:
  QStoreService(int batch_txns, int64_t batch_ns, int queues, int planners)
      : queues_(new ExecQueue[queues]), num_queues_(queues) {
    inboxes_.resize(planners);
    for (int i = 0; i < planners; ++i) {
      planners_.emplace_back([this, i] { PlannerLoop(i); });
    }
    sequencer_ = std::make_unique<BatchSequencer>(
        batch_txns, batch_ns, [this](std::vector<LockRequest*> batch) { Split(std::move(batch)); });
  }
  ~QStoreService() override {
    sequencer_.reset();
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    planner_cv_.notify_all();
    for (std::thread& t : planners_) t.join();
  }

  void SetPlanObserver(PlanObserver obs) override { observer_ = std::move(obs); }

  void Lock(LockRequest* req) override {
    sequencer_->Submit(req);
    AwaitGrant(req);
  }

  // The worker of a transaction that ran: removes it from its queues and
  // starts whatever now heads them.
  void Unlock(LockRequest* req) override {
    for (uint32_t e : req->queues) {
      ExecQueue& q = queues_[e >> 1];
      std::lock_guard<std::mutex> l(q.mu);
      for (auto it = q.fifo.begin(); it != q.fifo.end(); ++it) {
        if (it->req == req) {
          q.fifo.erase(it);
          break;
        }
      }
      StartHeads(&q);
    }
    delete req;
  }

 private:
  struct Entry {
    LockRequest* req;
    bool write;
    bool started;  // counted as heading this queue
  };
  struct alignas(64) ExecQueue {
    std::mutex mu;
    std::deque<Entry> fifo;  // guarded by mu
  };
  struct Slice {
    uint64_t seq;  // publication order: (batch, group)
    std::vector<LockRequest*> txns;
  };

  // Sequencer thread: one slice per planner, in group order.
  void Split(std::vector<LockRequest*> batch) {
    const size_t p = inboxes_.size();
    const size_t per = (batch.size() + p - 1) / p;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (size_t g = 0; g < p; ++g) {
        Slice s;
        s.seq = next_seq_++;
        const size_t lo = std::min(batch.size(), g * per), hi = std::min(batch.size(), lo + per);
        s.txns.assign(batch.begin() + lo, batch.begin() + hi);
        inboxes_[g].push_back(std::move(s));
      }
    }
    planner_cv_.notify_all();
  }

  void PlannerLoop(int g) {
    for (;;) {
      Slice s;
      {
        std::unique_lock<std::mutex> l(mu_);
        planner_cv_.wait(l, [&] { return stop_ || !inboxes_[g].empty(); });
        if (stop_) return;
        s = std::move(inboxes_[g].front());
        inboxes_[g].pop_front();
      }
      // Plan (in parallel with the other planners): each transaction's queues.
      for (LockRequest* r : s.txns) {
        r->queues.clear();
        for (const LockItem& it : r->items) {
          const uint32_t qi = static_cast<uint32_t>(
              Mix64(it.granule ^ (uint64_t(it.table) * 0x9E3779B97F4A7C15ull)) % num_queues_);
          r->queues.push_back(qi << 1 | (it.write ? 1 : 0));
        }
        // One entry per queue, writing if any of its granules there is written.
        std::sort(r->queues.begin(), r->queues.end());
        size_t out = 0;
        for (uint32_t e : r->queues) {
          if (out > 0 && (r->queues[out - 1] >> 1) == (e >> 1)) {
            r->queues[out - 1] |= e & 1;
          } else {
            r->queues[out++] = e;
          }
        }
        r->queues.resize(out);
        r->heads_missing.store(static_cast<int>(r->queues.size()) + 1, std::memory_order_relaxed);
      }
      // Publish, in (batch, group) order.
      {
        std::unique_lock<std::mutex> l(mu_);
        planner_cv_.wait(l, [&] { return stop_ || published_seq_ == s.seq; });
        if (stop_) return;
      }
      for (LockRequest* r : s.txns) {
        if (observer_) observer_(r->worker);
        r->sealed_ns = NowNs();  // planned: sequencing + planning end here
        // r cannot be granted before the closing HeadReached below (its +1),
        // so it lives through this loop; after that call, its worker may
        // run and free it, and the planner no longer touches it.
        const size_t n = r->queues.size();
        const uint32_t* qs = r->queues.data();
        for (size_t i = 0; i < n; ++i) {
          ExecQueue& q = queues_[qs[i] >> 1];
          std::lock_guard<std::mutex> l(q.mu);
          q.fifo.push_back({r, (qs[i] & 1) != 0, false});
          StartHeads(&q);
        }
        HeadReached(r);  // the +1: every queue is published
      }
      {
        std::lock_guard<std::mutex> l(mu_);
        ++published_seq_;
      }
      planner_cv_.notify_all();
    }
  }

  // Counts the queue's head as heading it: a writer alone, or the leading
  // run of readers (reads commute; at transaction granularity a queue is
  // held for a whole transaction, so readers take it together, as calvin's
  // lock queues grant reader runs). Called with q->mu held.
  static void StartHeads(ExecQueue* q) {
    StartHeadRun(&q->fifo, [](Entry& e) { HeadReached(e.req); });
  }

  // `r` heads one more of its queues (or is fully published); granted when
  // it heads all of them.
  static void HeadReached(LockRequest* r) {
    if (r->heads_missing.fetch_sub(1, std::memory_order_acq_rel) == 1) Grant(r);
  }

  std::unique_ptr<ExecQueue[]> queues_;
  const int num_queues_;
  PlanObserver observer_;  // set before executors run
  std::mutex mu_;
  std::condition_variable planner_cv_;  // inboxes_, published_seq_ or stop_ changed
  bool stop_ = false;                             // guarded by mu_
  std::vector<std::deque<Slice>> inboxes_;        // guarded by mu_
  uint64_t next_seq_ = 0;                         // guarded by mu_
  uint64_t published_seq_ = 0;                    // guarded by mu_
  std::vector<std::thread> planners_;
  std::unique_ptr<BatchSequencer> sequencer_;
};

// ---------------------------------------------------------------- planned

// Deadlock-free 2PL on a shared lock table: 2^20 lock words (exclusive bit +
// holder mask of worker slots), a granule hashed to one word; a transaction
// takes its words in ascending word order, waiting as long as needed, so no
// wait-for cycle can form. Two granules that share a word conflict (rare).
// A waiting writer is counted per word and new readers of that word wait
// behind it, so readers cannot starve it; this keeps the order argument
// (everyone waiting for word w holds only words below w).
class SharedTableService final : public LockService {
 public:
  SharedTableService()
      : words_(new std::atomic<uint64_t>[kWords]), writers_waiting_(new std::atomic<uint16_t>[kWords]) {
    for (size_t i = 0; i < kWords; ++i) {
      words_[i].store(0, std::memory_order_relaxed);
      writers_waiting_[i].store(0, std::memory_order_relaxed);
    }
  }

  void Lock(LockRequest* req) override {
    req->submit_ns = NowNs();
    // Re-key by word, in word order; a word wanted twice is taken once.
    std::vector<LockItem>& w = scratch_[req->worker];
    w.clear();
    for (const LockItem& it : req->items) {
      w.push_back({0, Mix64(it.granule ^ (uint64_t(it.table) * 0x9E3779B97F4A7C15ull)) & (kWords - 1),
                   it.write});
    }
    Normalize(&w);
    const uint64_t me = uint64_t{1} << req->worker;
    for (const LockItem& it : w) {
      std::atomic<uint64_t>& word = words_[it.granule];
      std::atomic<uint16_t>& writers = writers_waiting_[it.granule];
      Waiter waiter;
      bool counted = false;
      for (;;) {
        uint64_t v = word.load(std::memory_order_acquire);
        const bool free = it.write ? v == 0
                                   : !(v & kLockExclusive) &&
                                         writers.load(std::memory_order_acquire) == 0;
        if (free) {
          uint64_t nv = it.write ? (kLockExclusive | me) : (v | me);
          if (word.compare_exchange_weak(v, nv, std::memory_order_acquire)) break;
          continue;
        }
        if (it.write && !counted) {
          writers.fetch_add(1, std::memory_order_acq_rel);
          counted = true;
        }
        waiter.Wait();
      }
      if (counted) writers.fetch_sub(1, std::memory_order_acq_rel);
    }
    req->sealed_ns = req->submit_ns;  // no sequencing
    req->granted.store(true, std::memory_order_relaxed);
  }

  void Unlock(LockRequest* req) override {
    const uint64_t me = uint64_t{1} << req->worker;
    for (const LockItem& it : scratch_[req->worker]) {
      std::atomic<uint64_t>& word = words_[it.granule];
      if (it.write) {
        word.store(0, std::memory_order_release);
      } else {
        word.fetch_and(~me, std::memory_order_release);
      }
    }
    delete req;
  }

 private:
  static constexpr size_t kWords = size_t{1} << 20;
  std::unique_ptr<std::atomic<uint64_t>[]> words_;
  std::unique_ptr<std::atomic<uint16_t>[]> writers_waiting_;  // per word
  // Per worker slot: the words it holds (used only by that slot's thread).
  std::vector<LockItem> scratch_[kMaxWorkers];
};

// ---------------------------------------------------------------- orthrus

// A message between orthrus threads: acquire or release the locks of one
// segment of a request (acquire also answers a worker: its locks are held).
struct OrthrusMsg {
  LockRequest* req;
  int segment;
  bool release;
};

// Single-producer single-consumer ring of capacity N (a power of two). The
// producer writes a slot and publishes it with a release store of tail_; the
// consumer reads it after an acquire load of tail_ and frees it with a
// release store of head_. Thread-safe for one producer and one consumer.
template <size_t N>
class SpscRing {
  static_assert((N & (N - 1)) == 0, "power of two");

 public:
  bool TryPush(const OrthrusMsg& m) {
    const uint64_t t = tail_.load(std::memory_order_relaxed);
    if (t - head_.load(std::memory_order_acquire) == N) return false;
    slots_[t & (N - 1)] = m;
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }
  bool TryPop(OrthrusMsg* m) {
    const uint64_t h = head_.load(std::memory_order_relaxed);
    if (h == tail_.load(std::memory_order_acquire)) return false;
    *m = slots_[h & (N - 1)];
    head_.store(h + 1, std::memory_order_release);
    return true;
  }
  bool Empty() const {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire);
  }

 private:
  alignas(64) std::atomic<uint64_t> head_{0};  // consumer's
  alignas(64) std::atomic<uint64_t> tail_{0};  // producer's
  alignas(64) OrthrusMsg slots_[N];
};

// Where a polling thread (an orthrus CC thread, a worker awaiting its reply)
// sleeps when it has nothing to do, and how a sender wakes it. Idle(): spin
// 64 polls, yield 64 times, then park on the condition variable (1 ms
// timeout as a safety net) unless `has_work` says a message arrived.
// Notify(), after a push: wakes the thread if it is parked. Dekker-style:
// the parker stores `parked` then checks its queues, the sender stores into
// the queue then checks `parked`, each with a full fence between, so one of
// them sees the other. Thread-safe (one parking thread, any senders).
class Parker {
 public:
  template <typename HasWork>
  void Idle(int* idle, HasWork has_work) {
    ++*idle;
    if (*idle < 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      return;
    }
    if (*idle < 128) {
      std::this_thread::yield();
      return;
    }
    parked_.store(true, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!has_work()) {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait_for(l, std::chrono::milliseconds(1), [this] { return wake_; });
      wake_ = false;
    }
    parked_.store(false, std::memory_order_relaxed);
    *idle = 64;  // back to yielding, not spinning
  }
  void Notify() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!parked_.load(std::memory_order_relaxed)) return;
    {
      std::lock_guard<std::mutex> l(mu_);
      wake_ = true;
    }
    cv_.notify_one();
  }

 private:
  std::atomic<bool> parked_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool wake_ = false;  // guarded by mu_
};

// Orthrus (Ren, Faleiro and Abadi, VLDB 2016): `n` concurrency-control (CC)
// threads each own the lock table of one partition of the lock granules
// (by hash), a FifoLockTable no other thread touches. A worker (execution
// thread) sorts its request by (CC partition, key), splits it into one
// segment per partition, and sends it to the first partition's CC thread
// over its own worker->CC queue. A CC thread appends the segment's locks to
// its FIFO queues; once it holds them all, it forwards the request to the
// next segment's CC thread (CC->CC queues, only towards higher partitions:
// the paper's forwarding, Ncc + 1 messages per acquisition), and the last
// one replies to the worker (CC->worker queue). After commit or abort the
// worker sends a release to every CC thread involved. Every queue has one
// producer and one consumer; no lock-table latch is shared. Deadlock-free:
// a request waits at CC k only for requests appended earlier at k, and holds
// locks only at partitions below k; so the earliest request at the highest
// busy partition always progresses.
//
// Idle threads on a small box (2 cores): CC threads and workers awaiting a
// reply poll, then yield, then park (Parker), and a sender wakes a parked
// receiver after its push, so neither burns a core nor sleeps through a
// message. A sender whose queue is full waits (Waiter); forwarding only
// goes to higher partitions and replies never fill (one outstanding request
// per worker), so full queues cannot deadlock.
class OrthrusService final : public LockService {
 public:
  explicit OrthrusService(int n) : n_(n), ccs_(n) {
    for (int i = 0; i < n_; ++i) {
      ccs_[i] = std::make_unique<Cc>(n_);
    }
    for (int i = 0; i < n_; ++i) {
      ccs_[i]->thread = std::thread([this, i] { CcLoop(i); });
    }
  }
  ~OrthrusService() override {
    stop_.store(true, std::memory_order_release);
    for (auto& cc : ccs_) cc->parker.Notify();
    for (auto& cc : ccs_) cc->thread.join();
  }

  void Lock(LockRequest* req) override {
    req->submit_ns = NowNs();
    req->sealed_ns = req->submit_ns;  // no sequencing
    const int w = req->worker;
    int seen = workers_seen_.load(std::memory_order_relaxed);
    while (seen < w + 1 &&
           !workers_seen_.compare_exchange_weak(seen, w + 1, std::memory_order_release)) {
    }
    // Plan: the global order is (CC partition, table, granule).
    std::vector<std::pair<int, LockItem>>& keyed = scratch_[w];
    keyed.clear();
    for (const LockItem& it : req->items) keyed.push_back({Partition(it), it});
    std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second < b.second;
    });
    req->segments.clear();
    for (size_t i = 0; i < keyed.size(); ++i) {
      req->items[i] = keyed[i].second;
      if (req->segments.empty() || req->segments.back().cc != keyed[i].first) {
        req->segments.push_back({keyed[i].first, static_cast<uint32_t>(i), 0});
      }
      req->segments.back().end = static_cast<uint32_t>(i + 1);
    }
    if (req->segments.empty()) {
      req->granted.store(true, std::memory_order_relaxed);
      return;
    }
    req->refs.store(static_cast<int>(req->segments.size()), std::memory_order_relaxed);
    const int first = req->segments.front().cc;
    const int last = req->segments.back().cc;
    Send(&ccs_[first]->from_worker[w], &ccs_[first]->parker, {req, 0, false});
    SpscRing<kReplySlots>& replies = ccs_[last]->to_worker[w];
    OrthrusMsg m;
    int idle = 0;
    while (!replies.TryPop(&m)) {
      worker_parkers_[w].Idle(&idle, [&replies] { return !replies.Empty(); });
    }
    req->granted.store(true, std::memory_order_relaxed);
  }

  void Unlock(LockRequest* req) override {
    const int n = static_cast<int>(req->segments.size());
    if (n == 0) {
      delete req;
      return;
    }
    const int w = req->worker;
    for (int s = 0; s < n; ++s) {
      const int cc = req->segments[s].cc;  // read before the push: the last one may free req
      Send(&ccs_[cc]->from_worker[w], &ccs_[cc]->parker, {req, s, true});
    }
  }

 private:
  static constexpr size_t kWorkerSlots = 64;  // in flight per worker: 1 acquire + n releases
  static constexpr size_t kForwardSlots = 256;
  static constexpr size_t kReplySlots = 4;

  struct Cc {
    explicit Cc(int n) : from_cc(new SpscRing<kForwardSlots>[n]) {}
    SpscRing<kWorkerSlots> from_worker[kMaxWorkers];
    SpscRing<kReplySlots> to_worker[kMaxWorkers];
    std::unique_ptr<SpscRing<kForwardSlots>[]> from_cc;  // [lower partition]
    Parker parker;
    FifoLockTable table;  // this CC thread only
    std::thread thread;
  };

  int Partition(const LockItem& it) const {
    return static_cast<int>(Mix64(it.granule * 0x9E3779B97F4A7C15ull + uint64_t(it.table)) %
                            static_cast<uint64_t>(n_));
  }

  // Pushes m (waiting while the ring is full) and wakes the receiver.
  template <size_t N>
  static void Send(SpscRing<N>* ring, Parker* receiver, const OrthrusMsg& m) {
    Waiter waiter;
    while (!ring->TryPush(m)) waiter.Wait();
    receiver->Notify();
  }

  bool HasWork(const Cc& cc, int me) const {
    const int workers = workers_seen_.load(std::memory_order_acquire);
    for (int w = 0; w < workers; ++w) {
      if (!cc.from_worker[w].Empty()) return true;
    }
    for (int j = 0; j < me; ++j) {
      if (!cc.from_cc[j].Empty()) return true;
    }
    return false;
  }

  void CcLoop(int me) {
    Cc& cc = *ccs_[me];
    std::vector<LockRequest*> ready;
    int idle = 0;
    while (!stop_.load(std::memory_order_acquire)) {
      bool work = false;
      OrthrusMsg m;
      const int workers = workers_seen_.load(std::memory_order_acquire);
      for (int w = 0; w < workers; ++w) {
        while (cc.from_worker[w].TryPop(&m)) {
          Handle(me, m, &ready);
          work = true;
        }
      }
      for (int j = 0; j < me; ++j) {
        while (cc.from_cc[j].TryPop(&m)) {
          Handle(me, m, &ready);
          work = true;
        }
      }
      if (work) {
        idle = 0;
        continue;
      }
      cc.parker.Idle(&idle, [this, &cc, me] { return stop_.load() || HasWork(cc, me); });
    }
  }

  void Handle(int me, const OrthrusMsg& m, std::vector<LockRequest*>* ready) {
    LockRequest* r = m.req;
    const LockRequest::Segment seg = r->segments[m.segment];
    if (m.release) {
      ccs_[me]->table.Release(r, seg.begin, seg.end, ready);
      if (r->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete r;
    } else {
      r->stage = m.segment;
      ccs_[me]->table.Enqueue(r, seg.begin, seg.end, ready);
    }
    for (LockRequest* g : *ready) Advance(me, g);
    ready->clear();
  }

  // `r` holds its locks at partition `me`: forward it, or answer its worker.
  void Advance(int me, LockRequest* r) {
    const int next = r->stage + 1;
    if (next < static_cast<int>(r->segments.size())) {
      Cc& to = *ccs_[r->segments[next].cc];
      Send(&to.from_cc[me], &to.parker, {r, next, false});
    } else {
      Send(&ccs_[me]->to_worker[r->worker], &worker_parkers_[r->worker], {r, r->stage, false});
    }
  }

  const int n_;
  std::vector<std::unique_ptr<Cc>> ccs_;
  std::atomic<bool> stop_{false};
  std::atomic<int> workers_seen_{0};  // 1 + the highest worker slot that sent
  Parker worker_parkers_[kMaxWorkers];  // a worker awaiting its reply
  // Per worker slot: its planning scratch (used only by that slot's thread).
  std::vector<std::pair<int, LockItem>> scratch_[kMaxWorkers];
};

// ---------------------------------------------------------------- recon

// Reconnaissance: runs a procedure against committed data without locks and
// records every row it touches. Writes go to a private overlay (later reads
// of the run see them) and are never installed. Rows are read consistently
// one at a time (seqlock on the TID word); across rows the reads may be
// inconsistent, which only makes the guess wrong, never the execution.
class ReconTx final : public TxImpl {
 public:
  using TxImpl::TxImpl;

  void Begin(uint64_t) override {
    ResetAttempt();
    scratch_.Reset();
    overlay_.clear();
    accessed_.clear();
  }
  AbortCause Commit() override { return AbortCause::kNone; }
  void Abort() override {}
  const std::vector<AccessSet::Entry>& accessed() const { return accessed_; }

  absl::Status Read(const Table* table, uint64_t key, ConstRow* out) override {
    accessed_.push_back({table, key, false});
    char* buf = Lookup(table, key);
    if (buf == nullptr) return NotFoundStatus();
    *out = ConstRow(&table->schema(), buf, key);
    return absl::OkStatus();
  }
  absl::Status ReadForUpdate(const Table* table, uint64_t key, Row* out) override {
    accessed_.push_back({table, key, true});
    char* buf = Lookup(table, key);
    if (buf == nullptr) return NotFoundStatus();
    *out = Row(&table->schema(), buf, key);
    return absl::OkStatus();
  }
  absl::Status Insert(const Table* table, uint64_t key, Row* out) override {
    accessed_.push_back({table, key, true});
    if (Lookup(table, key) != nullptr) return ExistsStatus();
    Over* o = FindOver(table, key);
    char* buf = scratch_.Allocate(table->row_size());
    std::memset(buf, 0, table->row_size());
    if (o != nullptr) {
      o->buf = buf;
    } else {
      overlay_.push_back({table, key, buf});
    }
    *out = Row(&table->schema(), buf, key);
    return absl::OkStatus();
  }
  absl::Status Delete(const Table* table, uint64_t key) override {
    accessed_.push_back({table, key, true});
    if (Lookup(table, key) == nullptr) return NotFoundStatus();
    FindOver(table, key)->buf = nullptr;  // Lookup made the entry
    return absl::OkStatus();
  }
  absl::Status Scan(const ScanSpec& spec, std::vector<ConstRow>* out) override {
    const Table* table = spec.index->table();
    const Schema* schema = &table->schema();
    return ScanBatches(spec, out, [&](const OrderedIndex::Entry& e) {
      accessed_.push_back({table, e.pk, spec.for_update});
      char* buf = Lookup(table, e.pk);
      if (buf != nullptr) out->push_back(ConstRow(schema, buf, e.pk));
      return absl::OkStatus();
    });
  }

 private:
  struct Over {
    const Table* table;
    uint64_t key;
    char* buf;  // null: deleted (or absent)
  };
  Over* FindOver(const Table* table, uint64_t key) {
    for (Over& o : overlay_) {
      if (o.table == table && o.key == key) return &o;
    }
    return nullptr;
  }
  // The run's view of the row: its overlay copy, else a private copy of the
  // committed row (kept in the overlay), or null if absent.
  char* Lookup(const Table* table, uint64_t key) {
    if (Over* o = FindOver(table, key)) return o->buf;
    char* buf = nullptr;
    Record* rec = table->Find(key);
    if (rec != nullptr) {
      buf = scratch_.Allocate(table->row_size());
      Waiter waiter;
      for (;;) {
        uint64_t v1 = rec->tid.load(std::memory_order_acquire);
        if (v1 & kTidAbsentBit) {
          buf = nullptr;
          break;
        }
        if (v1 & kTidLockBit) {
          waiter.Wait();
          continue;
        }
        AtomicCopyOut(buf, rec->data(), table->row_size());
        std::atomic_thread_fence(std::memory_order_acquire);
        if (rec->tid.load(std::memory_order_relaxed) == v1) break;
      }
    }
    overlay_.push_back({table, key, buf});
    return buf;
  }

  std::vector<Over> overlay_;
  std::vector<AccessSet::Entry> accessed_;
};

// ---------------------------------------------------------------- the guard

// The Tx a planned transaction's procedure sees: every access is checked
// against the locks the transaction holds, then carried out by an OCC
// attempt. An access outside them is not carried out: the attempt is marked
// (undeclared()) and will be rolled back and re-planned.
class PlannedTx final : public TxImpl, public PlannedRunner {
 public:
  PlannedTx(LockService* locks, std::unique_ptr<TxImpl> inner, std::unique_ptr<ReconTx> recon,
            int worker_id, RecordArena* arena, bool record_footprint)
      : TxImpl(worker_id, arena, record_footprint),
        locks_(locks),
        inner_(std::move(inner)),
        recon_(std::move(recon)) {}

  PlannedRunner* planned() override { return this; }

  // --- TxImpl (the guarded execution attempt) ---
  void Begin(uint64_t ts) override {
    ResetAttempt();
    missed_.clear();
    inner_->Begin(ts);
  }
  AbortCause Commit() override {
    AbortCause c = inner_->Commit();
    if (record_footprint_ && c == AbortCause::kNone) footprint_ = inner_->footprint();
    return c;
  }
  void Abort() override { inner_->Abort(); }
  bool conflicted() const override { return TxImpl::conflicted() || inner_->conflicted(); }

  absl::Status Read(const Table* table, uint64_t key, ConstRow* out) override {
    if (!Covers(table, key, false)) return Undeclared(table, key, false);
    return inner_->Read(table, key, out);
  }
  absl::Status ReadForUpdate(const Table* table, uint64_t key, Row* out) override {
    if (!Covers(table, key, true)) return Undeclared(table, key, true);
    return inner_->ReadForUpdate(table, key, out);
  }
  absl::Status Insert(const Table* table, uint64_t key, Row* out) override {
    if (!Covers(table, key, true)) return Undeclared(table, key, true);
    return inner_->Insert(table, key, out);
  }
  absl::Status Delete(const Table* table, uint64_t key) override {
    if (!Covers(table, key, true)) return Undeclared(table, key, true);
    return inner_->Delete(table, key);
  }
  absl::Status Scan(const ScanSpec& spec, std::vector<ConstRow>* out) override {
    if (conflicted()) return ConflictStatus();
    absl::Status s = inner_->Scan(spec, out);
    const Table* table = spec.index->table();
    // Rows of the range that are not locked were read (race-free, OCC
    // copies) but must not be used: re-plan with them.
    bool stray = false;
    for (const ConstRow& r : *out) {
      if (!Covers(table, r.key(), spec.for_update)) {
        missed_.push_back({table, r.key(), spec.for_update});
        stray = true;
      }
    }
    if (stray) {
      out->clear();
      return Fail(AbortCause::kValidation);
    }
    return s;
  }

  // --- PlannedRunner ---
  ExecResult RunPlanned(absl::FunctionRef<absl::Status(Tx&)> proc, const ProcedureTxn* declarer,
                        uint64_t ts, int64_t txn_delay_ns, ExecutorStats* stats) override {
    declared_.clear();
    declared_.set_worker_id(worker_id_);
    bool complete = declarer != nullptr && declarer->DeclareAccesses(declared_);
    items_.clear();
    ToItems(declared_.entries(), &items_);
    if (complete) {
      ++stats->declared;
    } else {
      Recon(proc, stats);  // adds to what was declared
    }
    for (int plan = 0;; ++plan) {
      Normalize(&items_);
      auto* req = new LockRequest;
      req->items = items_;
      req->worker = worker_id_;
      locks_->Lock(req);
      const int64_t granted = NowNs();
      stats->sequence_ns += req->sealed_ns - req->submit_ns;
      stats->lock_wait_ns += granted - req->sealed_ns;
      Begin(ts);
      absl::Status s = proc(*this);
      if (!missed_.empty()) {
        // Strayed outside its locks: roll back, re-plan with what it
        // touched, what it declared, and a fresh reconnaissance.
        inner_->Abort();
        locks_->Unlock(req);
        stats->exec_ns += NowNs() - granted;
        ++stats->replans;
        if (plan >= kMaxPlans) {
          ++stats->conflicts[static_cast<size_t>(AbortCause::kValidation)];
          return ExecResult::Conflict(AbortCause::kValidation);
        }
        ToItems(missed_, &items_);
        Recon(proc, stats);
        continue;
      }
      ExecResult result = Finish(s, txn_delay_ns, stats);
      locks_->Unlock(req);
      stats->exec_ns += NowNs() - granted;
      return result;
    }
  }

 private:
  static constexpr int kMaxPlans = 32;

  ExecResult Finish(absl::Status s, int64_t txn_delay_ns, ExecutorStats* stats) {
    if (conflicted()) {
      // Cannot happen under the locks; kept as a safety net.
      AbortCause c = inner_->conflicted() ? inner_->cause() : cause();
      inner_->Abort();
      ++stats->conflicts[static_cast<size_t>(c)];
      return ExecResult::Conflict(c);
    }
    if (!s.ok()) {
      inner_->Abort();
      if (IsUserAbort(s)) {
        ++stats->user_aborts;
        return ExecResult::UserAbort(std::move(s));
      }
      ++stats->failed;
      return ExecResult::Failed(std::move(s));
    }
    if (txn_delay_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(txn_delay_ns));
    AbortCause c = Commit();
    if (c != AbortCause::kNone) {
      ++stats->conflicts[static_cast<size_t>(c)];
      return ExecResult::Conflict(c);
    }
    ++stats->commits;
    return ExecResult::Commit();
  }

  // Adds the reconnaissance run's accesses to items_.
  void Recon(absl::FunctionRef<absl::Status(Tx&)> proc, ExecutorStats* stats) {
    const int64_t t0 = NowNs();
    recon_->Begin(0);
    proc(*recon_).IgnoreError();  // its outcome is a guess; execution decides
    ToItems(recon_->accessed(), &items_);
    ++stats->recons;
    stats->recon_ns += NowNs() - t0;
  }

  static void ToItems(const std::vector<AccessSet::Entry>& entries, std::vector<LockItem>* items) {
    for (const AccessSet::Entry& e : entries) {
      items->push_back({e.table->id(), e.table->LockGranule(e.key), e.write});
    }
  }

  bool Covers(const Table* table, uint64_t key, bool write) const {
    LockItem want{table->id(), table->LockGranule(key), write};
    auto it = std::lower_bound(items_.begin(), items_.end(), want);
    return it != items_.end() && it->SameLock(want) && (it->write || !write);
  }

  absl::Status Undeclared(const Table* table, uint64_t key, bool write) {
    if (conflicted()) return ConflictStatus();
    missed_.push_back({table, key, write});
    return Fail(AbortCause::kValidation);
  }

  LockService* const locks_;
  std::unique_ptr<TxImpl> inner_;
  std::unique_ptr<ReconTx> recon_;
  AccessSet declared_;
  std::vector<LockItem> items_;  // the locks of this plan, normalized
  std::vector<AccessSet::Entry> missed_;
};

class PlannedProtocol final : public CcProtocol {
 public:
  explicit PlannedProtocol(std::unique_ptr<LockService> locks)
      : locks_(std::move(locks)), occ_(NewOccProtocol()) {}
  void SetPlanObserver(PlanObserver obs) override { locks_->SetPlanObserver(std::move(obs)); }
  std::unique_ptr<TxImpl> NewTx(int worker_id, RecordArena* arena,
                                bool record_footprint) override {
    return std::make_unique<PlannedTx>(locks_.get(),
                                       occ_->NewTx(worker_id, arena, record_footprint),
                                       std::make_unique<ReconTx>(worker_id, arena, false),
                                       worker_id, arena, record_footprint);
  }

 private:
  std::unique_ptr<LockService> locks_;
  std::unique_ptr<CcProtocol> occ_;
};

}  // namespace

std::unique_ptr<CcProtocol> NewCalvinProtocol(int batch_txns, int64_t batch_ns) {
  return std::make_unique<PlannedProtocol>(std::make_unique<CalvinService>(batch_txns, batch_ns));
}

std::unique_ptr<CcProtocol> NewQStoreProtocol(int batch_txns, int64_t batch_ns, int queues,
                                              int planners) {
  return std::make_unique<PlannedProtocol>(
      std::make_unique<QStoreService>(batch_txns, batch_ns, queues, planners));
}

std::unique_ptr<CcProtocol> NewOrthrusProtocol(int cc_threads) {
  return std::make_unique<PlannedProtocol>(std::make_unique<OrthrusService>(cc_threads));
}

std::unique_ptr<CcProtocol> NewPlannedLockingProtocol() {
  return std::make_unique<PlannedProtocol>(std::make_unique<SharedTableService>());
}

}  // namespace engine
}  // namespace corral
