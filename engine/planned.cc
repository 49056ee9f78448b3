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
// This file: the guard (PlannedTx), the reconnaissance run (ReconTx), the
// "planned" protocol's shared lock table, and the factories of cc.h; the
// other lock services are in calvin.cc, qstore.cc and orthrus.cc
// (planned_internal.h).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <typeinfo>
#include <utility>
#include <vector>

#include "common/hash.h"
#include "engine/planned_internal.h"

namespace corral {
namespace engine {
namespace planned_internal {
namespace {

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
    req->submit_ns = MonoNanos();
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

}  // namespace

std::unique_ptr<LockService> NewSharedTableService() { return std::make_unique<SharedTableService>(); }

}  // namespace planned_internal

namespace {

using planned_internal::LockItem;
using planned_internal::LockRequest;
using planned_internal::LockService;
using planned_internal::Normalize;
using scheduler::AbortCause;
using scheduler::ExecResult;

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
  // `spec`: the inner Tx's SpecControl under qstore's speculative
  // execution, else null.
  PlannedTx(LockService* locks, std::unique_ptr<TxImpl> inner, planned_internal::SpecControl* spec,
            std::unique_ptr<ReconTx> recon, int worker_id, RecordArena* arena, bool record_footprint)
      : TxImpl(worker_id, arena, record_footprint),
        locks_(locks),
        inner_(std::move(inner)),
        spec_(spec),
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
    order_.clear();
    ToItems(declared_.entries(), &items_, &order_);
    if (complete) {
      ++stats->declared;
    } else {
      Recon(proc, stats);  // adds to what was declared
    }
    // Speculative: give queues up before the end, unless this procedure
    // type keeps coming back to rows after it moved past them.
    uint64_t type = 0;
    if (spec_ != nullptr && declarer != nullptr) {
      type = typeid(*declarer).hash_code() ^ static_cast<uint64_t>(declarer->type.value());
    }
    bool early_release = spec_ != nullptr && EarlyReleaseFor(type);
    for (int plan = 0;; ++plan) {
      Normalize(&items_);
      auto* req = new LockRequest;
      req->items = items_;
      req->worker = worker_id_;
      locks_->Lock(req);
      const int64_t granted = MonoNanos();
      stats->sequence_ns += req->sealed_ns - req->submit_ns;
      ++stats->lock_requests;
      stats->queue_spans += req->queues.size();
      stats->lock_wait_ns += granted - req->sealed_ns;
      Begin(ts);
      if (spec_ != nullptr) spec_->Attach(req, order_, early_release, stats);
      absl::Status s = proc(*this);
      const bool late = missed_.empty() && spec_ != nullptr && spec_->late();
      if (early_release && missed_.empty()) CountEarlyRelease(type, late);
      if (!missed_.empty() || late) {
        // Strayed outside its locks: roll back, re-plan with what it
        // touched, what it declared, and a fresh reconnaissance. Or
        // (speculative) came back to a queue it had given up: run again,
        // holding every queue to the end.
        inner_->Abort();
        locks_->Unlock(req);
        stats->exec_ns += MonoNanos() - granted;
        if (!late) ++stats->replans;
        if (plan >= kMaxPlans) {
          ++stats->conflicts[static_cast<size_t>(AbortCause::kValidation)];
          return ExecResult::Conflict(AbortCause::kValidation);
        }
        if (late) {
          early_release = false;
          continue;
        }
        order_.clear();
        ToItems(missed_, &items_, &order_);
        Recon(proc, stats);
        continue;
      }
      ExecResult result = Finish(s, txn_delay_ns, stats);
      locks_->Unlock(req);
      stats->exec_ns += MonoNanos() - granted;
      return result;
    }
  }

 private:
  static constexpr int kMaxPlans = 32;

  // Speculative qstore: per procedure type, how its attempts with early
  // release went. Early release stays on while fewer than a quarter came
  // back late (after 16 tries); off, every 32nd transaction of the type
  // tries again. Counts halve past 1024 tries, so a type can change.
  struct EarlyCount {
    uint32_t tries = 0;
    uint32_t late = 0;
    uint32_t skipped = 0;
  };
  bool EarlyReleaseFor(uint64_t type) {
    EarlyCount& c = early_[type];
    return c.tries < 16 || c.late * 4 < c.tries || ++c.skipped % 32 == 0;
  }
  void CountEarlyRelease(uint64_t type, bool late) {
    EarlyCount& c = early_[type];
    if (++c.tries > 1024) {
      c.tries /= 2;
      c.late /= 2;
    }
    if (late) ++c.late;
  }

  ExecResult Finish(absl::Status s, int64_t txn_delay_ns, ExecutorStats* stats) {
    if (conflicted()) {
      // Cannot happen under the locks; kept as a safety net.
      AbortCause c = inner_->conflicted() ? inner_->cause() : cause();
      inner_->Abort();
      ++stats->conflicts[static_cast<size_t>(c)];
      return ExecResult::Conflict(c);
    }
    if (!s.ok()) {
      if (spec_ != nullptr && !spec_->AwaitDependencies()) {
        // The decision rests on a row an aborted transaction wrote.
        inner_->Abort();
        ++stats->conflicts[static_cast<size_t>(AbortCause::kCascade)];
        return ExecResult::Conflict(AbortCause::kCascade);
      }
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

  // Adds the reconnaissance run's accesses to items_ and, first, to order_.
  void Recon(absl::FunctionRef<absl::Status(Tx&)> proc, ExecutorStats* stats) {
    const int64_t t0 = MonoNanos();
    recon_->Begin(0);
    proc(*recon_).IgnoreError();  // its outcome is a guess; execution decides
    // Its accesses are the program's order: they go first.
    std::vector<LockItem> found;
    ToItems(recon_->accessed(), &items_, &found);
    order_.insert(order_.begin(), found.begin(), found.end());
    ++stats->recons;
    stats->recon_ns += MonoNanos() - t0;
  }

  // Appends the entries' locks to *items and, in program order, *order.
  static void ToItems(const std::vector<AccessSet::Entry>& entries, std::vector<LockItem>* items,
                      std::vector<LockItem>* order) {
    for (const AccessSet::Entry& e : entries) {
      items->push_back({e.table->id(), e.table->LockGranule(e.key), e.write});
      order->push_back(items->back());
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
  planned_internal::SpecControl* const spec_;  // inner_'s, or null
  std::unique_ptr<ReconTx> recon_;
  AccessSet declared_;
  std::vector<LockItem> items_;  // the locks of this plan, normalized
  std::vector<LockItem> order_;  // this plan's accesses as declared or found, in program order
  absl::flat_hash_map<uint64_t, EarlyCount> early_;  // speculative, per procedure type
  std::vector<AccessSet::Entry> missed_;
};

class PlannedProtocol final : public CcProtocol {
 public:
  explicit PlannedProtocol(std::unique_ptr<LockService> locks)
      : locks_(std::move(locks)),
        occ_(NewOccProtocol()),
        registry_(locks_->speculative() ? planned_internal::NewSpecRegistry() : nullptr) {}
  void SetPlanObserver(PlanObserver obs) override { locks_->SetPlanObserver(std::move(obs)); }
  void TablesLoaded(const std::vector<std::unique_ptr<Table>>& tables) override {
    locks_->TablesLoaded(tables);
  }
  std::string Report() const override { return locks_->Report(); }
  std::unique_ptr<TxImpl> NewTx(int worker_id, RecordArena* arena,
                                bool record_footprint) override {
    planned_internal::SpecControl* spec = nullptr;
    std::unique_ptr<TxImpl> inner =
        registry_ != nullptr
            ? planned_internal::NewSpecTx(locks_.get(), registry_, worker_id, arena, record_footprint, &spec)
            : occ_->NewTx(worker_id, arena, record_footprint);
    return std::make_unique<PlannedTx>(locks_.get(), std::move(inner), spec,
                                       std::make_unique<ReconTx>(worker_id, arena, false),
                                       worker_id, arena, record_footprint);
  }

 private:
  std::unique_ptr<LockService> locks_;
  std::unique_ptr<CcProtocol> occ_;
  std::shared_ptr<planned_internal::SpecRegistry> registry_;  // qstore speculative
};

}  // namespace

std::unique_ptr<CcProtocol> NewCalvinProtocol(int batch_txns, int64_t batch_ns) {
  return std::make_unique<PlannedProtocol>(planned_internal::NewCalvinService(batch_txns, batch_ns));
}

std::unique_ptr<CcProtocol> NewQStoreProtocol(int batch_txns, int64_t batch_ns, int queues,
                                              int planners, PlacementKind placement,
                                              int64_t learn_txns, bool speculative) {
  return std::make_unique<PlannedProtocol>(planned_internal::NewQStoreService(
      batch_txns, batch_ns, queues, planners, placement, learn_txns, speculative));
}

std::unique_ptr<CcProtocol> NewOrthrusProtocol(int cc_threads) {
  return std::make_unique<PlannedProtocol>(planned_internal::NewOrthrusService(cc_threads));
}

std::unique_ptr<CcProtocol> NewPlannedLockingProtocol() {
  return std::make_unique<PlannedProtocol>(planned_internal::NewSharedTableService());
}

}  // namespace engine
}  // namespace corral
