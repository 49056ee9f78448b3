// Orthrus ("orthrus"): concurrency-control threads owning partitions of the
// lock table, asked by message, behind the planned protocols' guard
// (planned_internal.h, planned.cc).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/hash.h"
#include "engine/planned_internal.h"

namespace corral {
namespace engine {
namespace planned_internal {
namespace {

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
    req->submit_ns = MonoNanos();
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

}  // namespace

std::unique_ptr<LockService> NewOrthrusService(int cc_threads) {
  return std::make_unique<OrthrusService>(cc_threads);
}

}  // namespace planned_internal
}  // namespace engine
}  // namespace corral
