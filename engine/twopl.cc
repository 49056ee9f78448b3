// Strict two-phase locking: NO_WAIT, WAIT_DIE, deadlock detection, and the
// "none" (no locking) baseline. See engine.h for the design.
#include <array>
#include <atomic>
#include <cstring>

#include "engine/cc.h"

namespace corral {
namespace engine {
namespace {

using scheduler::AbortCause;

enum class Mode { kNone = 0, kNoWait = 1, kWaitDie = 2, kDlDetect = 3 };

// Per worker slot state other workers look at.
struct alignas(64) Slot {
  std::atomic<uint64_t> ts{0};         // current transaction's timestamp
  // The record it waits for, with bit 0 set when it wants it exclusive
  // (records are 8-byte aligned); 0 when not waiting. Deadlock detection
  // derives the wait-for edges from that record's live lock word, so an
  // edge never outlives the lock it stood for.
  std::atomic<uintptr_t> waiting_on{0};
};

struct Shared {
  Mode mode;
  std::array<Slot, kMaxWorkers + 1> slots;
  WaitObserver observer;
};

enum class UKind : uint8_t { kUpdate, kInsert, kDelete };

struct UndoEntry {
  Record* rec;
  char* before;      // kUpdate: before-image
  UKind kind;
  uint64_t old_tid;  // kDelete: the tid word before the delete
};

struct Held {
  Record* rec;
  bool exclusive;
};

class TwoPlTx final : public TxImpl {
 public:
  TwoPlTx(Shared* shared, int worker_id, RecordArena* arena, bool record_footprint)
      : TxImpl(worker_id, arena, record_footprint),
        shared_(shared),
        mode_(shared->mode),
        me_(uint64_t{1} << worker_id) {}

  void Begin(uint64_t ts) override {
    ResetAttempt();
    ts_ = ts;
    held_.clear();
    undo_.clear();
    scratch_.Reset();
    if (record_footprint_) footprint_.clear();
    shared_->slots[worker_id_].ts.store(ts, std::memory_order_release);
  }

  absl::Status Read(const Table* table, uint64_t key, ConstRow* out) override {
    if (conflicted()) return ConflictStatus();
    Record* rec = table->Find(key);
    if (rec == nullptr) return NotFoundStatus();
    if (!Acquire(rec, false)) return ConflictStatus();
    uint64_t v = rec->tid.load(std::memory_order_relaxed);
    if (v & kTidAbsentBit) return NotFoundStatus();
    if (record_footprint_) footprint_.reads.push_back({table->id(), key, v & kTidVersionMask});
    *out = ConstRow(&table->schema(), rec->data(), key);
    return absl::OkStatus();
  }

  absl::Status ReadForUpdate(const Table* table, uint64_t key, Row* out) override {
    if (conflicted()) return ConflictStatus();
    Record* rec = table->Find(key);
    if (rec == nullptr) return NotFoundStatus();
    if (!Acquire(rec, true)) return ConflictStatus();
    uint64_t v = rec->tid.load(std::memory_order_relaxed);
    if (v & kTidAbsentBit) return NotFoundStatus();
    if (!HasUndo(rec)) {
      if (record_footprint_) footprint_.reads.push_back({table->id(), key, v & kTidVersionMask});
      char* before = scratch_.Allocate(table->row_size());
      std::memcpy(before, rec->data(), table->row_size());
      undo_.push_back({rec, before, UKind::kUpdate, 0});
    }
    *out = Row(&table->schema(), rec->data(), key);
    return absl::OkStatus();
  }

  absl::Status Insert(const Table* table, uint64_t key, Row* out) override {
    if (conflicted()) return ConflictStatus();
    Table* t = const_cast<Table*>(table);
    Record* rec = arena_->Allocate(t->row_size());
    rec->key = key;
    rec->table = t;
    // Present at once: others must take the lock to see it, and cannot
    // until this transaction ends (an abort marks it absent again).
    rec->tid.store(0, std::memory_order_relaxed);
    rec->lock.store(mode_ == Mode::kNone ? 0 : (kLockExclusive | me_), std::memory_order_relaxed);
    Record* existing = t->InsertHash(rec);
    if (existing != nullptr) {
      // Our fresh record stays unused in the arena.
      if (!Acquire(existing, false)) return ConflictStatus();
      if (!(existing->tid.load(std::memory_order_relaxed) & kTidAbsentBit)) return ExistsStatus();
      // Absent yet indexed while we hold a lock on it: only our own delete.
      return ExistsStatus();
    }
    if (mode_ != Mode::kNone) held_.push_back({rec, true});
    undo_.push_back({rec, nullptr, UKind::kInsert, 0});
    *out = Row(&t->schema(), rec->data(), key);
    return absl::OkStatus();
  }

  absl::Status Delete(const Table* table, uint64_t key) override {
    if (conflicted()) return ConflictStatus();
    Record* rec = table->Find(key);
    if (rec == nullptr) return NotFoundStatus();
    if (!Acquire(rec, true)) return ConflictStatus();
    uint64_t v = rec->tid.load(std::memory_order_relaxed);
    if (v & kTidAbsentBit) return NotFoundStatus();
    if (record_footprint_ && !HasUndo(rec)) {
      footprint_.reads.push_back({table->id(), key, v & kTidVersionMask});
    }
    undo_.push_back({rec, nullptr, UKind::kDelete, v});
    rec->tid.store(v | kTidAbsentBit, std::memory_order_relaxed);  // hidden from us
    return absl::OkStatus();
  }

  absl::Status Scan(const ScanSpec& spec, std::vector<ConstRow>* out) override {
    const Table* table = spec.index->table();
    const Schema* schema = &table->schema();
    return ScanBatches(spec, out, [&](const OrderedIndex::Entry& e) {
      Record* rec = e.rec;
      if (!Acquire(rec, spec.for_update)) return ConflictStatus();
      uint64_t v = rec->tid.load(std::memory_order_relaxed);
      if (v & kTidAbsentBit) return absl::OkStatus();
      if (record_footprint_) {
        footprint_.reads.push_back({table->id(), rec->key, v & kTidVersionMask});
      }
      out->push_back(ConstRow(schema, rec->data(), rec->key));
      return absl::OkStatus();
    });
  }

  AbortCause Commit() override {
    for (UndoEntry& u : undo_) {
      Record* rec = u.rec;
      uint64_t v = rec->tid.load(std::memory_order_relaxed);
      uint64_t nv = (v & kTidVersionMask) + 1;
      switch (u.kind) {
        case UKind::kUpdate:
          if (v & kTidAbsentBit) continue;  // deleted later in this txn
          rec->tid.store(nv, std::memory_order_relaxed);
          break;
        case UKind::kInsert:
          if (v & kTidAbsentBit) continue;  // deleted later in this txn
          rec->table->InsertOrdered(rec);
          rec->tid.store(nv, std::memory_order_relaxed);
          break;
        case UKind::kDelete:
          // Our own insert, if any, never reached the ordered indexes.
          rec->table->EraseOrdered(rec);
          rec->table->EraseHash(rec);
          rec->tid.store(nv | kTidAbsentBit, std::memory_order_relaxed);
          break;
      }
      if (record_footprint_) footprint_.writes.push_back({rec->table->id(), rec->key, nv});
    }
    ReleaseAll();
    return AbortCause::kNone;
  }

  void Abort() override {
    for (size_t i = undo_.size(); i-- > 0;) {
      UndoEntry& u = undo_[i];
      switch (u.kind) {
        case UKind::kUpdate:
          std::memcpy(u.rec->data(), u.before, u.rec->table->row_size());
          break;
        case UKind::kInsert:
          u.rec->tid.store(kTidAbsentBit, std::memory_order_relaxed);
          u.rec->table->EraseHash(u.rec);
          break;
        case UKind::kDelete:
          u.rec->tid.store(u.old_tid, std::memory_order_relaxed);
          break;
      }
    }
    if (record_footprint_) footprint_.clear();
    ReleaseAll();
  }

 private:
  // Takes a shared or exclusive lock on rec per the protocol. False (cause_
  // set) if the protocol says abort.
  bool Acquire(Record* rec, bool exclusive) {
    if (mode_ == Mode::kNone) return true;
    const bool fair = mode_ == Mode::kWaitDie || mode_ == Mode::kDlDetect;
    Waiter waiter;
    bool waited = false;
    bool ok = true;
    cycle_streak_ = 0;
    for (;;) {
      uint64_t w = rec->lock.load(std::memory_order_acquire);
      // An older transaction waits for this record: a fresh request from a
      // younger one must not take the lock first (no barging), or a waiter
      // that was descheduled could starve and deadlock victims would recreate
      // their cycle on every retry.
      uint64_t oldest = fair ? rec->oldest_waiter.load(std::memory_order_acquire) : 0;
      bool deferred = oldest != 0 && oldest < ts_ && !(w & me_);
      if (!deferred) {
        if (exclusive) {
          if (w == (kLockExclusive | me_)) break;  // already exclusive
          if ((w & ~kLockExclusive & ~me_) == 0) {
            if (rec->lock.compare_exchange_weak(w, kLockExclusive | me_,
                                                std::memory_order_acquire)) {
              if (w & me_) {
                MarkExclusive(rec);  // upgrade
              } else {
                held_.push_back({rec, true});
              }
              break;
            }
            continue;
          }
        } else {
          if (w & me_) break;  // already held (shared or exclusive)
          if (!(w & kLockExclusive)) {
            if (rec->lock.compare_exchange_weak(w, w | me_, std::memory_order_acquire)) {
              held_.push_back({rec, false});
              break;
            }
            continue;
          }
        }
      }
      // Conflict with other holders, or an older waiter goes first.
      uint64_t holders = w & ~kLockExclusive & ~me_;
      if (!MayWait(holders, deferred ? oldest : 0, rec, exclusive)) {
        SetObstacle(rec, false, exclusive);
        ok = false;
        break;
      }
      if (fair) {
        // Register as (possibly) the oldest waiter.
        uint64_t cur = rec->oldest_waiter.load(std::memory_order_relaxed);
        while ((cur == 0 || ts_ < cur) &&
               !rec->oldest_waiter.compare_exchange_weak(cur, ts_, std::memory_order_acq_rel)) {
        }
      }
      waited = true;
      waiter.Wait();
    }
    if (waited || !ok) {
      if (fair) {
        uint64_t mine = ts_;
        rec->oldest_waiter.compare_exchange_strong(mine, 0, std::memory_order_acq_rel);
      }
      if (mode_ == Mode::kDlDetect) {
        shared_->slots[worker_id_].waiting_on.store(0, std::memory_order_release);
      }
    }
    return ok;
  }

  // Decides whether to wait for `holders`; sets cause_ when it must abort.
  // `older_waiter` (0: none) is the timestamp of an older transaction this
  // one defers to.
  bool MayWait(uint64_t holders, uint64_t older_waiter, Record* rec, bool exclusive) {
    switch (mode_) {
      case Mode::kNone:
        return true;
      case Mode::kNoWait:
        MarkConflict(AbortCause::kLockConflict);
        return false;
      case Mode::kWaitDie: {
        // Wait only if older (smaller ts) than every holder and every waiter
        // ahead of us; else die.
        if (older_waiter != 0) {
          MarkConflict(AbortCause::kWaitDie);
          return false;
        }
        for (uint64_t m = holders; m != 0; m &= m - 1) {
          int h = __builtin_ctzll(m);
          uint64_t hts = shared_->slots[h].ts.load(std::memory_order_acquire);
          if (hts < ts_) {
            MarkConflict(AbortCause::kWaitDie);
            return false;
          }
        }
        if (shared_->observer) {
          for (uint64_t m = holders; m != 0; m &= m - 1) {
            int h = __builtin_ctzll(m);
            shared_->observer(ts_, shared_->slots[h].ts.load(std::memory_order_acquire));
          }
        }
        return true;
      }
      case Mode::kDlDetect: {
        shared_->slots[worker_id_].waiting_on.store(
            reinterpret_cast<uintptr_t>(rec) | (exclusive ? 1 : 0), std::memory_order_seq_cst);
        // The edges are read one at a time, not as a snapshot, so a cycle
        // can be an artefact of locks changing hands during the walk. A real
        // deadlock persists: abort only when consecutive polls all see it.
        if (InCycle()) {
          if (++cycle_streak_ >= kCycleConfirmations) {
            MarkConflict(AbortCause::kDeadlock);
            return false;
          }
        } else {
          cycle_streak_ = 0;
        }
        return true;
      }
    }
    return false;
  }

  // Workers that worker b waits for now: the other holders of the record it
  // waits on, if they block it (an exclusive holder, or any holder when b
  // wants the record exclusive).
  uint64_t EdgesOf(int b) const {
    uintptr_t w = shared_->slots[b].waiting_on.load(std::memory_order_seq_cst);
    if (w == 0) return 0;
    const Record* rec = reinterpret_cast<const Record*>(w & ~uintptr_t{1});
    bool wants_exclusive = w & 1;
    uint64_t word = rec->lock.load(std::memory_order_seq_cst);
    uint64_t edges = 0;
    if (wants_exclusive || (word & kLockExclusive)) edges = word & ~kLockExclusive;
    // A fresh request also waits behind an older waiter (see Acquire).
    uint64_t oldest = rec->oldest_waiter.load(std::memory_order_seq_cst);
    uint64_t bts = shared_->slots[b].ts.load(std::memory_order_seq_cst);
    if (oldest != 0 && oldest < bts && !(word & (uint64_t{1} << b))) {
      edges |= uint64_t{1} << WorkerOfTs(oldest);
    }
    return edges & ~(uint64_t{1} << b);
  }

  static int WorkerOfTs(uint64_t ts) { return static_cast<int>((ts & 63) - 1); }

  // Whether `from` reaches `to` in the wait-for graph.
  bool Reaches(int from, int to) const {
    uint64_t visited = 0;
    uint64_t frontier = EdgesOf(from);
    const uint64_t target = uint64_t{1} << to;
    while (frontier != 0) {
      int b = __builtin_ctzll(frontier);
      uint64_t bit = uint64_t{1} << b;
      frontier &= ~bit;
      if (bit == target) return true;
      if (visited & bit) continue;
      visited |= bit;
      frontier |= EdgesOf(b) & ~visited;
    }
    return false;
  }

  // Whether this worker is on a cycle of the wait-for graph and is its victim:
  // the youngest (largest timestamp) worker of its strongly connected
  // component, so every member picks the same victim and the older ones keep
  // their locks. The victim finds the cycle itself on its next poll.
  bool InCycle() const {
    uint64_t visited = 0;
    uint64_t frontier = EdgesOf(worker_id_);
    bool cycle = false;
    while (frontier != 0) {
      int b = __builtin_ctzll(frontier);
      uint64_t bit = uint64_t{1} << b;
      frontier &= ~bit;
      if (bit == me_) {
        cycle = true;
        continue;
      }
      if (visited & bit) continue;
      visited |= bit;
      frontier |= EdgesOf(b) & ~visited;
    }
    if (!cycle) return false;
    uint64_t my_ts = ts_;
    for (uint64_t m = visited; m != 0; m &= m - 1) {
      int b = __builtin_ctzll(m);
      uint64_t bts = shared_->slots[b].ts.load(std::memory_order_seq_cst);
      if (bts > my_ts && Reaches(b, worker_id_)) return false;  // a younger member
    }
    return true;
  }

  void MarkExclusive(Record* rec) {
    for (Held& h : held_) {
      if (h.rec == rec) {
        h.exclusive = true;
        return;
      }
    }
  }

  bool HasUndo(Record* rec) const {
    for (const UndoEntry& u : undo_) {
      if (u.rec == rec) return true;
    }
    return false;
  }

  void ReleaseAll() {
    for (const Held& h : held_) {
      if (h.exclusive) {
        h.rec->lock.store(0, std::memory_order_release);
      } else {
        h.rec->lock.fetch_and(~me_, std::memory_order_release);
      }
    }
    held_.clear();
    undo_.clear();
  }

  Shared* const shared_;
  const Mode mode_;
  const uint64_t me_;
  static constexpr int kCycleConfirmations = 3;
  uint64_t ts_ = 0;
  int cycle_streak_ = 0;
  std::vector<Held> held_;
  std::vector<UndoEntry> undo_;
};

class TwoPlProtocol final : public CcProtocol {
 public:
  explicit TwoPlProtocol(Mode mode) { shared_.mode = mode; }
  std::unique_ptr<TxImpl> NewTx(int worker_id, RecordArena* arena,
                                bool record_footprint) override {
    return std::make_unique<TwoPlTx>(&shared_, worker_id, arena, record_footprint);
  }
  void SetWaitObserver(WaitObserver obs) override { shared_.observer = std::move(obs); }

 private:
  Shared shared_;
};

}  // namespace

std::unique_ptr<CcProtocol> NewTwoPlProtocol(int mode) {
  return std::make_unique<TwoPlProtocol>(static_cast<Mode>(mode));
}

}  // namespace engine
}  // namespace corral
