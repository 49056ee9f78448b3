// Silo-style optimistic concurrency control. See engine.h for the design.
#include <algorithm>
#include <atomic>

#include "engine/cc.h"

namespace corral {
namespace engine {
namespace {

using scheduler::AbortCause;

enum class WKind : uint8_t { kUpdate, kInsert, kDelete, kInsertDeleted };

struct ReadEntry {
  Record* rec;
  uint64_t tid;  // observed word, lock bit cleared
};

struct WriteEntry {
  Record* rec;
  char* data;  // new row image (kUpdate), the record itself (kInsert)
  WKind kind;
  bool locked;  // locked by this commit (not inserts: born locked)
};

class OccTx final : public TxImpl {
 public:
  using TxImpl::TxImpl;

  void Begin(uint64_t ts) override {
    ResetAttempt();
    reads_.clear();
    writes_.clear();
    scratch_.Reset();
    if (record_footprint_) footprint_.clear();
  }

  absl::Status Read(const Table* table, uint64_t key, ConstRow* out) override {
    if (conflicted()) return ConflictStatus();
    Record* rec = table->Find(key);
    if (rec == nullptr) return NotFoundStatus();
    if (WriteEntry* w = FindWrite(rec)) {
      if (w->kind == WKind::kDelete || w->kind == WKind::kInsertDeleted) return NotFoundStatus();
      *out = ConstRow(&table->schema(), w->data, key);
      return absl::OkStatus();
    }
    char* buf = scratch_.Allocate(table->row_size());
    if (!StableRead(rec, buf)) return NotFoundStatus();
    *out = ConstRow(&table->schema(), buf, key);
    return absl::OkStatus();
  }

  absl::Status ReadForUpdate(const Table* table, uint64_t key, Row* out) override {
    if (conflicted()) return ConflictStatus();
    Record* rec = table->Find(key);
    if (rec == nullptr) return NotFoundStatus();
    if (WriteEntry* w = FindWrite(rec)) {
      if (w->kind == WKind::kDelete || w->kind == WKind::kInsertDeleted) return NotFoundStatus();
      *out = Row(&table->schema(), w->data, key);
      return absl::OkStatus();
    }
    char* buf = scratch_.Allocate(table->row_size());
    if (!StableRead(rec, buf)) return NotFoundStatus();
    writes_.push_back({rec, buf, WKind::kUpdate, false});
    *out = Row(&table->schema(), buf, key);
    return absl::OkStatus();
  }

  absl::Status Insert(const Table* table, uint64_t key, Row* out) override {
    if (conflicted()) return ConflictStatus();
    Table* t = const_cast<Table*>(table);
    Record* rec = arena_->Allocate(t->row_size());
    rec->key = key;
    rec->table = t;
    rec->tid.store(kTidLockBit | kTidAbsentBit, std::memory_order_relaxed);
    Record* existing = t->InsertHash(rec);
    if (existing != nullptr) {
      // Our fresh record is unused (stays in the arena).
      if (FindWrite(existing) != nullptr) return Fail(AbortCause::kValidation);
      char* buf = scratch_.Allocate(t->row_size());
      if (StableRead(existing, buf)) return ExistsStatus();  // validated at commit
      // Absent but indexed: an insert in flight or a delete being applied.
      SetObstacle(existing, true, true);
      return Fail(AbortCause::kValidation);
    }
    writes_.push_back({rec, rec->data(), WKind::kInsert, false});
    *out = Row(&t->schema(), rec->data(), key);
    return absl::OkStatus();
  }

  absl::Status Delete(const Table* table, uint64_t key) override {
    if (conflicted()) return ConflictStatus();
    Record* rec = table->Find(key);
    if (rec == nullptr) return NotFoundStatus();
    if (WriteEntry* w = FindWrite(rec)) {
      if (w->kind == WKind::kDelete || w->kind == WKind::kInsertDeleted) return NotFoundStatus();
      w->kind = w->kind == WKind::kInsert ? WKind::kInsertDeleted : WKind::kDelete;
      return absl::OkStatus();
    }
    char* buf = scratch_.Allocate(table->row_size());
    if (!StableRead(rec, buf)) return NotFoundStatus();
    writes_.push_back({rec, buf, WKind::kDelete, false});
    return absl::OkStatus();
  }

  absl::Status Scan(const ScanSpec& spec, std::vector<ConstRow>* out) override {
    const Table* table = spec.index->table();
    const Schema* schema = &table->schema();
    return ScanBatches(spec, out, [&](const OrderedIndex::Entry& e) {
      Record* rec = e.rec;
      if (WriteEntry* w = FindWrite(rec)) {
        if (w->kind == WKind::kDelete || w->kind == WKind::kInsertDeleted) return absl::OkStatus();
        out->push_back(ConstRow(schema, w->data, rec->key));
        return absl::OkStatus();
      }
      char* buf = scratch_.Allocate(table->row_size());
      if (StableRead(rec, buf)) out->push_back(ConstRow(schema, buf, rec->key));
      return absl::OkStatus();
    });
  }

  AbortCause Commit() override {
    std::sort(writes_.begin(), writes_.end(),
              [](const WriteEntry& a, const WriteEntry& b) { return a.rec < b.rec; });
    // Phase 1: lock the write set in address order (deadlock-free).
    uint64_t max_tid = last_tid_;
    for (WriteEntry& w : writes_) {
      if (w.kind == WKind::kInsert || w.kind == WKind::kInsertDeleted) continue;
      Waiter waiter;
      for (;;) {
        uint64_t v = w.rec->tid.load(std::memory_order_relaxed);
        if (!(v & kTidLockBit) &&
            w.rec->tid.compare_exchange_weak(v, v | kTidLockBit, std::memory_order_acquire)) {
          w.locked = true;
          max_tid = std::max(max_tid, v & kTidVersionMask);
          break;
        }
        waiter.Wait();
      }
    }
    // Publish inserts in the ordered indexes (still locked and absent) before
    // any write is installed, so a reader that sees one of our writes and
    // then scans finds our inserts too (it skips them while absent, and its
    // validation fails when they change).
    for (WriteEntry& w : writes_) {
      if (w.kind == WKind::kInsert) {
        w.rec->table->InsertOrdered(w.rec);
        w.locked = true;  // for inserts: "in the ordered indexes"
      }
    }
    // Row stores below must not become visible before the lock bits.
    std::atomic_thread_fence(std::memory_order_release);
    // Phase 2: validate the read set.
    for (const ReadEntry& r : reads_) {
      uint64_t v = r.rec->tid.load(std::memory_order_acquire);
      if ((v & ~kTidLockBit) != r.tid || ((v & kTidLockBit) && !InWriteSetSorted(r.rec))) {
        if ((v & kTidLockBit) && !InWriteSetSorted(r.rec)) SetObstacle(r.rec, true, true);
        cause_ = AbortCause::kValidation;
        Abort();
        return cause_;
      }
      max_tid = std::max(max_tid, r.tid & kTidVersionMask);
    }
    // Phase 3: install with a TID above everything seen; unlock.
    uint64_t tid = max_tid + 1;
    last_tid_ = tid;
    for (WriteEntry& w : writes_) {
      Record* rec = w.rec;
      switch (w.kind) {
        case WKind::kUpdate:
          AtomicCopyIn(rec->data(), w.data, rec->table->row_size());
          rec->tid.store(tid, std::memory_order_release);
          break;
        case WKind::kInsert:
          rec->tid.store(tid, std::memory_order_release);
          break;
        case WKind::kDelete:
          rec->table->EraseOrdered(rec);
          rec->table->EraseHash(rec);
          rec->tid.store(tid | kTidAbsentBit, std::memory_order_release);
          break;
        case WKind::kInsertDeleted:
          rec->table->EraseHash(rec);
          rec->tid.store(kTidAbsentBit, std::memory_order_release);
          break;
      }
      w.locked = false;
    }
    if (record_footprint_) {
      for (const ReadEntry& r : reads_) {
        footprint_.reads.push_back(
            {r.rec->table->id(), r.rec->key, r.tid & kTidVersionMask});
      }
      for (const WriteEntry& w : writes_) {
        if (w.kind == WKind::kInsertDeleted) continue;
        footprint_.writes.push_back({w.rec->table->id(), w.rec->key, tid});
      }
    }
    reads_.clear();
    writes_.clear();
    return AbortCause::kNone;
  }

  bool ReadsStillValid() override {
    for (const ReadEntry& r : reads_) {
      uint64_t v = r.rec->tid.load(std::memory_order_acquire);
      // Nothing is locked by us before commit: any lock bit is another's.
      if (v != r.tid) return false;
    }
    return true;
  }

  void Abort() override {
    for (WriteEntry& w : writes_) {
      if (w.kind == WKind::kInsert || w.kind == WKind::kInsertDeleted) {
        if (w.locked) w.rec->table->EraseOrdered(w.rec);
        w.locked = false;
        w.rec->table->EraseHash(w.rec);
        w.rec->tid.store(kTidAbsentBit, std::memory_order_release);
      } else if (w.locked) {
        uint64_t v = w.rec->tid.load(std::memory_order_relaxed);
        w.rec->tid.store(v & ~kTidLockBit, std::memory_order_release);
        w.locked = false;
      }
    }
    reads_.clear();
    writes_.clear();
  }

 private:
  // Copies a committed, present row into buf and adds it to the read set.
  // Returns false (and records the absence) if the record is absent.
  bool StableRead(Record* rec, char* buf) {
    Waiter waiter;
    for (;;) {
      uint64_t v1 = rec->tid.load(std::memory_order_acquire);
      if (v1 & kTidAbsentBit) {
        reads_.push_back({rec, v1 & ~kTidLockBit});
        return false;
      }
      if (v1 & kTidLockBit) {
        waiter.Wait();
        continue;
      }
      AtomicCopyOut(buf, rec->data(), rec->table->row_size());
      std::atomic_thread_fence(std::memory_order_acquire);
      uint64_t v2 = rec->tid.load(std::memory_order_relaxed);
      if (v1 == v2) {
        reads_.push_back({rec, v1});
        return true;
      }
    }
  }

  WriteEntry* FindWrite(Record* rec) {
    for (WriteEntry& w : writes_) {
      if (w.rec == rec) return &w;
    }
    return nullptr;
  }

  bool InWriteSetSorted(Record* rec) const {
    auto it = std::lower_bound(writes_.begin(), writes_.end(), rec,
                               [](const WriteEntry& w, Record* r) { return w.rec < r; });
    return it != writes_.end() && it->rec == rec;
  }

  std::vector<ReadEntry> reads_;
  std::vector<WriteEntry> writes_;
  uint64_t last_tid_ = 0;
};

class OccProtocol final : public CcProtocol {
 public:
  std::unique_ptr<TxImpl> NewTx(int worker_id, RecordArena* arena,
                                bool record_footprint) override {
    return std::make_unique<OccTx>(worker_id, arena, record_footprint);
  }
};

}  // namespace

std::unique_ptr<CcProtocol> NewOccProtocol() { return std::make_unique<OccProtocol>(); }

}  // namespace engine
}  // namespace corral
