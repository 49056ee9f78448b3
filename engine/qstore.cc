// Q-Store ("qstore"): queue-oriented deterministic execution, behind the
// planned protocols' guard (planned_internal.h, planned.cc): conservative at
// transaction granularity, or speculative per fragment (the queues here, the
// transactions' side in qstore_spec.cc).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/planned_internal.h"
#include "engine/qstore_placement.h"

namespace corral {
namespace engine {
namespace planned_internal {
namespace {

// ---------------------------------------------------------------- qstore

// Q-Store's queue-oriented execution, at transaction granularity (see
// NewQStoreProtocol in cc.h). The sequencer seals a batch and splits it into
// `planners` contiguous slices, one per planner thread; the slice's index is
// its priority group (the paper's planning-thread priority), so the batch's
// deterministic order is (batch, group, position in the slice). A planner
// maps each lock granule its transactions declared to one of `queues`
// execution queues by the placement rule (qstore_placement.h: hash, range or
// learned; one granule, one queue, so conflicting accesses always share a
// queue) and appends each transaction once to every queue it touches.
// Planning runs in parallel; publishing onto the queues goes in group order
// (a turnstile), so every queue holds its transactions
// in the batch order. A transaction runs when it heads every queue it is
// in; its worker then removes it from them and starts the new heads. There
// is no lock table and no lock-manager thread. A queue's head is a writer
// alone or the leading run of readers (the paper's queues run strictly one
// fragment after another; here an entry holds its queue for a whole
// transaction, so readers that commute share it).
//
// Speculative execution (qstore_execution = speculative): the same queues,
// but a transaction starts as soon as it is published, and each of its
// accesses waits only until it heads the queue of that access's granule
// (LockRequest::heads, one flag per queue, set here instead of counting
// heads_missing down); it gives a queue up (ReleaseSlot) as soon as its
// fragments there are done, so the next transaction's fragment on that
// queue runs on its uncommitted writes (qstore_spec.cc tracks those
// speculation dependencies, commits, and cascades aborts).
//
// Placement changes at most once, at a batch boundary: range placement when
// the tables are loaded (before any transaction), learned placement when its
// learning window (the first learn_txns transactions, placed by hash) is
// complete. Each slice carries the placement it was planned with; the first
// slice planned with a new one is published only once every transaction
// published before it has finished (the queues are empty), since a granule
// may now map to another queue.
class QStoreService final : public LockService {
 public:
  QStoreService(int batch_txns, int64_t batch_ns, int queues, int planners, PlacementKind placement,
                int64_t learn_txns, bool speculative)
      : queues_(new ExecQueue[queues]),
        num_queues_(queues),
        speculative_(speculative),
        kind_(placement),
        current_(std::make_shared<HashPlacement>(queues)) {
    if (placement == PlacementKind::kLearned) {
      learner_ = std::make_unique<PlacementLearner>(queues, learn_txns);
    }
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
    stopping_.store(true, std::memory_order_release);
    planner_cv_.notify_all();
    for (std::thread& t : planners_) t.join();
  }

  void SetPlanObserver(PlanObserver obs) override { observer_ = std::move(obs); }
  bool speculative() const override { return speculative_; }

  // Speculative execution: the request's fragments on queues[slot] are done.
  void ReleaseSlot(LockRequest* req, size_t slot) override { Leave(&queues_[req->queues[slot] >> 1], req); }

  // Range placement: the tables' loaded granules define the ranges.
  void TablesLoaded(const std::vector<std::unique_ptr<Table>>& tables) override {
    if (kind_ != PlacementKind::kRange) return;
    std::vector<std::vector<uint64_t>> granules(tables.size());
    for (const auto& t : tables) {
      if (t->id() >= 0 && static_cast<size_t>(t->id()) < granules.size()) {
        granules[t->id()] = t->PresentGranules();
      }
    }
    auto p = std::make_shared<RangePlacement>(num_queues_, std::move(granules));
    std::lock_guard<std::mutex> l(mu_);
    current_ = std::move(p);
  }

  // "placement learned: H hot granules in C clusters", "placement range", ...
  std::string Report() const override {
    std::lock_guard<std::mutex> l(mu_);
    if (kind_ != PlacementKind::kLearned) {
      return absl::StrCat("placement ", QueuePlacementName(current_->kind()));
    }
    if (current_->kind() != PlacementKind::kLearned) return "placement learned: still learning (hash)";
    const auto& p = static_cast<const LearnedPlacement&>(*current_);
    return absl::StrCat("placement learned: ", p.hot_granules(), " hot granules in ", p.clusters(),
                        " clusters");
  }

  // Returns once `req` heads all its queues (conservative), or once it is
  // published on them (speculative).
  void Lock(LockRequest* req) override {
    sequencer_->Submit(req);
    AwaitGrant(req);
  }

  // The worker of a transaction that ran: removes it from its queues (those
  // it still is in) and starts whatever now heads them.
  void Unlock(LockRequest* req) override {
    for (uint32_t e : req->queues) Leave(&queues_[e >> 1], req);
    in_flight_.fetch_sub(1, std::memory_order_release);
    delete req;
  }

 private:
  struct Entry {
    LockRequest* req;
    bool write;
    bool started;   // counted as heading this queue
    uint32_t slot;  // the queue's index in req->queues
  };
  struct alignas(64) ExecQueue {
    std::mutex mu;
    std::deque<Entry> fifo;  // guarded by mu
  };
  struct Slice {
    uint64_t seq;  // publication order: (batch, group)
    std::vector<LockRequest*> txns;
    std::shared_ptr<const QueuePlacement> placement;  // plan with this
    bool drain_first = false;  // the placement changed: publish into empty queues
  };

  // Sequencer thread: one slice per planner, in group order.
  void Split(std::vector<LockRequest*> batch) {
    const size_t p = inboxes_.size();
    const size_t per = (batch.size() + p - 1) / p;
    std::shared_ptr<const QueuePlacement> learned;
    if (learner_ != nullptr) Learn(batch, &learned);
    {
      std::lock_guard<std::mutex> l(mu_);
      if (learned != nullptr) current_ = std::move(learned);
      for (size_t g = 0; g < p; ++g) {
        Slice s;
        s.seq = next_seq_++;
        s.placement = current_;
        s.drain_first = current_ != last_placement_;
        last_placement_ = current_;
        const size_t lo = std::min(batch.size(), g * per), hi = std::min(batch.size(), lo + per);
        s.txns.assign(batch.begin() + lo, batch.begin() + hi);
        inboxes_[g].push_back(std::move(s));
      }
    }
    planner_cv_.notify_all();
  }

  // Sequencer thread, learned placement: shows the batch to the learner;
  // once its window is complete, *out is the placement learned.
  void Learn(const std::vector<LockRequest*>& batch, std::shared_ptr<const QueuePlacement>* out) {
    std::vector<std::vector<GranuleAccess>> txns(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      for (const LockItem& it : batch[i]->items) txns[i].push_back({it.table, it.granule, it.write});
    }
    learner_->ObserveBatch(txns);
    if (!learner_->done()) return;
    *out = learner_->Build();
    learner_.reset();
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
      const QueuePlacement& placement = *s.placement;
      for (LockRequest* r : s.txns) {
        r->queues.clear();
        r->item_slot.clear();
        for (const LockItem& it : r->items) {
          const uint32_t qi = placement.QueueOf(it.table, it.granule);
          r->queues.push_back(qi << 1 | (it.write ? 1 : 0));
          if (speculative_) r->item_slot.push_back(qi);  // its queue; its slot below
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
        if (speculative_) {
          // Each item's slot; the request is granted (may start) once it
          // is published, and heads each queue on its own.
          for (uint32_t& slot : r->item_slot) {
            auto at = std::lower_bound(r->queues.begin(), r->queues.end(), slot << 1);
            slot = static_cast<uint32_t>(at - r->queues.begin());
          }
          r->heads.reset(new std::atomic<bool>[r->queues.size()]);
          for (size_t i = 0; i < r->queues.size(); ++i) r->heads[i].store(false, std::memory_order_relaxed);
          r->heads_missing.store(1, std::memory_order_relaxed);
        } else {
          r->heads_missing.store(static_cast<int>(r->queues.size()) + 1, std::memory_order_relaxed);
        }
      }
      // Publish, in (batch, group) order.
      {
        std::unique_lock<std::mutex> l(mu_);
        planner_cv_.wait(l, [&] { return stop_ || published_seq_ == s.seq; });
        if (stop_) return;
      }
      if (s.drain_first) {
        // Every transaction published before is placed by the old rule:
        // wait until all have finished (they need nothing from this slice).
        Waiter waiter;
        while (in_flight_.load(std::memory_order_acquire) != 0) {
          if (stopping_.load(std::memory_order_acquire)) return;
          waiter.Wait();
        }
      }
      for (LockRequest* r : s.txns) {
        if (observer_) observer_(r->worker);
        r->sealed_ns = MonoNanos();  // planned: sequencing + planning end here
        // r cannot be granted before the closing HeadReached below (its +1),
        // so it lives through this loop; after that call, its worker may
        // run and free it, and the planner no longer touches it.
        const size_t n = r->queues.size();
        const uint32_t* qs = r->queues.data();
        in_flight_.fetch_add(1, std::memory_order_relaxed);
        for (size_t i = 0; i < n; ++i) {
          ExecQueue& q = queues_[qs[i] >> 1];
          std::lock_guard<std::mutex> l(q.mu);
          q.fifo.push_back({r, (qs[i] & 1) != 0, false, static_cast<uint32_t>(i)});
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

  // Removes req from q (if it is still there) and starts the new heads.
  void Leave(ExecQueue* q, LockRequest* req) {
    std::lock_guard<std::mutex> l(q->mu);
    for (auto it = q->fifo.begin(); it != q->fifo.end(); ++it) {
      if (it->req == req) {
        q->fifo.erase(it);
        break;
      }
    }
    StartHeads(q);
  }

  // Counts the queue's head as heading it: a writer alone, or the leading
  // run of readers (reads commute; at transaction granularity a queue is
  // held for a whole transaction, so readers take it together, as calvin's
  // lock queues grant reader runs). Called with q->mu held.
  void StartHeads(ExecQueue* q) {
    if (speculative_) {
      StartHeadRun(&q->fifo, [](Entry& e) { e.req->heads[e.slot].store(true, std::memory_order_release); });
    } else {
      StartHeadRun(&q->fifo, [](Entry& e) { HeadReached(e.req); });
    }
  }

  // `r` heads one more of its queues (or is fully published); granted when
  // it heads all of them.
  static void HeadReached(LockRequest* r) {
    if (r->heads_missing.fetch_sub(1, std::memory_order_acq_rel) == 1) Grant(r);
  }

  std::unique_ptr<ExecQueue[]> queues_;
  const int num_queues_;
  const bool speculative_;
  const PlacementKind kind_;
  std::unique_ptr<PlacementLearner> learner_;  // sequencer thread; null once learned
  std::atomic<int64_t> in_flight_{0};          // published, not yet unlocked
  std::atomic<bool> stopping_{false};
  PlanObserver observer_;  // set before executors run
  mutable std::mutex mu_;
  std::condition_variable planner_cv_;  // inboxes_, published_seq_ or stop_ changed
  bool stop_ = false;                             // guarded by mu_
  std::vector<std::deque<Slice>> inboxes_;        // guarded by mu_
  uint64_t next_seq_ = 0;                         // guarded by mu_
  uint64_t published_seq_ = 0;                    // guarded by mu_
  std::shared_ptr<const QueuePlacement> current_;        // guarded by mu_: for new slices
  std::shared_ptr<const QueuePlacement> last_placement_;  // guarded by mu_: of the last slice
  std::vector<std::thread> planners_;
  std::unique_ptr<BatchSequencer> sequencer_;
};

}  // namespace

std::unique_ptr<LockService> NewQStoreService(int batch_txns, int64_t batch_ns, int queues, int planners,
                                              PlacementKind placement, int64_t learn_txns,
                                              bool speculative) {
  return std::make_unique<QStoreService>(batch_txns, batch_ns, queues, planners, placement, learn_txns,
                                         speculative);
}

}  // namespace planned_internal
}  // namespace engine
}  // namespace corral
