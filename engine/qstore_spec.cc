// Q-Store's speculative execution, the transaction's side (SpecControl in
// planned_internal.h; the queues are qstore.cc's).
//
// A transaction is a sequence of fragments, one per lock granule it
// touches; its queue entries were published in the batch's order, so on
// every queue the transactions before it run first. It does not wait to
// head all its queues: each access waits only for the head of its
// granule's queue. Writes go to private images (as OCC's) until the queue
// is given up: then they are installed in place (seqlocked with the TID's
// lock bit, before-images kept), and the next transaction's fragment on
// that queue reads them uncommitted. A queue is given up as soon as the
// program has moved past every granule it declared there (the frontier:
// the furthest first position, in the declared order, of a granule
// touched), and at the end of the procedure for the rest. A procedure may
// still come back to a row after that (touch it again, or change a Row it
// holds: the image installed is compared with the private one when the
// procedure ends); the attempt is then "late": rolled back, with whatever
// read the stale image, and re-run holding its queues to the end.
//
// Speculation dependencies (the paper's section 2.2): a registry names each
// granule's last uncommitted writer; a transaction touching the granule
// (read or write) depends on it. A transaction commits once all it depends
// on have committed. One that aborts (user abort, error, stray access, or
// an aborted dependency) dooms everything that depends on it, transitively,
// waits until those have rolled back, restores its own rows, and hands the
// registry back to the writer before it (a cascade, section 4.2; the
// cascaded transactions are retried, with AbortCause::kCascade).
//
// Why it cannot deadlock: a transaction waits for a queue head only behind
// transactions earlier in the batch order, and commits only after earlier
// ones; a doomed transaction stops waiting for heads and dependencies and
// waits only for its dependents, which are later. Memory: a registry entry
// lives until its writer commits or rolls back.
//
// Thread safety: a SpecTx is used by its worker's thread; SpecState and the
// registry are shared (mutexes and atomics as marked).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/hash.h"
#include "engine/planned_internal.h"

namespace corral {
namespace engine {
namespace planned_internal {
namespace {

using scheduler::AbortCause;

enum SpecStatus : int { kActive = 0, kDoomed = 1, kCommitted = 2, kRolledBack = 3 };

// One attempt of a speculative transaction, as others see it.
struct SpecState {
  std::atomic<int> status{kActive};  // written under mu
  std::atomic<bool> installed{false};  // its procedure ended, every write installed
  std::mutex mu;
  // Attempts that read or overwrote this one's uncommitted rows; frozen once
  // it is no longer active.
  std::vector<std::shared_ptr<SpecState>> dependents;  // guarded by mu
};

// Marks s, and everything that depends on it transitively, doomed.
void Doom(const std::shared_ptr<SpecState>& s) {
  std::vector<std::shared_ptr<SpecState>> next;
  {
    std::lock_guard<std::mutex> l(s->mu);
    if (s->status.load(std::memory_order_relaxed) != kActive) return;
    s->status.store(kDoomed, std::memory_order_release);
    next = s->dependents;
  }
  for (const auto& d : next) Doom(d);
}

using GranKey = std::pair<int, uint64_t>;  // (table, granule)

}  // namespace

// Granule -> last uncommitted writer, in 256 stripes. Thread-safe.
class SpecRegistry {
 public:
  std::shared_ptr<SpecState> Get(GranKey k) {
    Stripe& s = StripeOf(k);
    std::lock_guard<std::mutex> l(s.mu);
    auto it = s.map.find(k);
    return it == s.map.end() ? nullptr : it->second;
  }
  // Names w the writer; returns the one before.
  std::shared_ptr<SpecState> Swap(GranKey k, std::shared_ptr<SpecState> w) {
    Stripe& s = StripeOf(k);
    std::lock_guard<std::mutex> l(s.mu);
    std::shared_ptr<SpecState>& slot = s.map[k];
    std::swap(slot, w);
    return w;
  }
  // If w is still the writer: names prev instead (none: erases the entry).
  void Restore(GranKey k, const SpecState* w, std::shared_ptr<SpecState> prev) {
    Stripe& s = StripeOf(k);
    std::lock_guard<std::mutex> l(s.mu);
    auto it = s.map.find(k);
    if (it == s.map.end() || it->second.get() != w) return;
    if (prev == nullptr || prev->status.load(std::memory_order_acquire) == kCommitted) {
      s.map.erase(it);
    } else {
      it->second = std::move(prev);
    }
  }

 private:
  struct alignas(64) Stripe {
    std::mutex mu;
    absl::flat_hash_map<GranKey, std::shared_ptr<SpecState>> map;  // guarded by mu
  };
  Stripe& StripeOf(GranKey k) {
    return stripes_[Mix64(k.second ^ (static_cast<uint64_t>(k.first) * 0x9E3779B97F4A7C15ull)) & 255];
  }
  Stripe stripes_[256];
};

std::shared_ptr<SpecRegistry> NewSpecRegistry() { return std::make_shared<SpecRegistry>(); }

namespace {

enum class WKind : uint8_t { kUpdate, kInsert, kDelete, kInsertDeleted };

class SpecTx final : public TxImpl, public SpecControl {
 public:
  SpecTx(LockService* queues, std::shared_ptr<SpecRegistry> registry, int worker_id, RecordArena* arena,
         bool record_footprint)
      : TxImpl(worker_id, arena, record_footprint), queues_(queues), registry_(std::move(registry)) {}

  void Begin(uint64_t) override {
    ResetAttempt();
    scratch_.Reset();
    writes_.clear();
    undo_.clear();
    deps_.clear();
    gran_.clear();
    req_ = nullptr;
    late_ = false;
    me_ = std::make_shared<SpecState>();
    if (record_footprint_) footprint_.clear();
  }

  // --- SpecControl ---
  void Attach(LockRequest* req, const std::vector<LockItem>& order, bool early_release,
              ExecutorStats* stats) override {
    req_ = req;
    stats_ = stats;
    early_ = early_release;
    const size_t n = req->items.size();
    gran_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      gran_[i] = Gran{req->items[i].table, req->items[i].granule, req->item_slot[i], kUnseen, 0};
    }
    for (size_t pos = 0; pos < order.size(); ++pos) {
      if (Gran* g = FindGran(order[pos].table, order[pos].granule)) {
        if (g->first == kUnseen) g->first = static_cast<uint32_t>(pos);
        g->last = static_cast<uint32_t>(pos);
      }
    }
    const size_t slots = req->queues.size();
    slot_last_.assign(slots, 0);
    released_.assign(slots, false);
    for (Gran& g : gran_) {
      if (g.first == kUnseen) g.first = g.last = static_cast<uint32_t>(order.size());
      slot_last_[g.slot] = std::max(slot_last_[g.slot], g.last);
    }
    release_order_.resize(slots);
    for (size_t s = 0; s < slots; ++s) release_order_[s] = static_cast<uint32_t>(s);
    std::sort(release_order_.begin(), release_order_.end(),
              [&](uint32_t a, uint32_t b) { return slot_last_[a] < slot_last_[b]; });
    next_release_ = 0;
    frontier_ = 0;
  }

  bool late() override {
    if (late_) return true;
    for (const Write& w : writes_) {
      if (w.installed && w.image != nullptr && std::memcmp(w.image, w.data, w.rec->table->row_size()) != 0) {
        late_ = true;
        ++stats_->spec_late_accesses;
        return true;
      }
    }
    return false;
  }

  bool AwaitDependencies() override { return AwaitDeps(false); }

  // --- Tx ---
  absl::Status Read(const Table* table, uint64_t key, ConstRow* out) override {
    Gran* g;
    ENGINE_RETURN_IF_ERROR(Enter(table, key, false, &g));
    char* image = View(table, key, g, false, WKind::kUpdate);
    Advance(g);
    if (image == nullptr) return NotFoundStatus();
    *out = ConstRow(&table->schema(), image, key);
    return absl::OkStatus();
  }

  absl::Status ReadForUpdate(const Table* table, uint64_t key, Row* out) override {
    Gran* g;
    ENGINE_RETURN_IF_ERROR(Enter(table, key, true, &g));
    char* image = View(table, key, g, true, WKind::kUpdate);
    Advance(g);
    if (image == nullptr) return NotFoundStatus();
    *out = Row(&table->schema(), image, key);
    return absl::OkStatus();
  }

  absl::Status Insert(const Table* table, uint64_t key, Row* out) override {
    Gran* g;
    ENGINE_RETURN_IF_ERROR(Enter(table, key, true, &g));
    Table* t = const_cast<Table*>(table);
    Record* rec = arena_->Allocate(t->row_size());
    rec->key = key;
    rec->table = t;
    rec->tid.store(kTidLockBit | kTidAbsentBit, std::memory_order_relaxed);
    absl::Status st = absl::OkStatus();
    if (Record* existing = t->InsertHash(rec)) {
      // Ours (inserted or deleted by this attempt, not yet installed), or a
      // row present: heading the granule's queue, nobody else has one.
      Write* w = FindWrite(existing);
      if (w != nullptr && w->kind == WKind::kDelete) {
        st = Fail(AbortCause::kValidation);  // re-insert of a row it deleted: not supported
      } else {
        st = ExistsStatus();
      }
    } else {
      // Filled in privately; copied into the record when installed.
      char* buf = scratch_.Allocate(t->row_size());
      std::memset(buf, 0, t->row_size());
      writes_.push_back({rec, buf, WKind::kInsert, g->slot, false, nullptr});
      *out = Row(&t->schema(), buf, key);
    }
    Advance(g);
    return st;
  }

  absl::Status Delete(const Table* table, uint64_t key) override {
    Gran* g;
    ENGINE_RETURN_IF_ERROR(Enter(table, key, true, &g));
    Record* rec = table->Find(key);
    Write* own = rec != nullptr ? FindWrite(rec) : nullptr;
    char* image = own != nullptr ? nullptr : View(table, key, g, true, WKind::kDelete);
    absl::Status st = NotFoundStatus();
    if (own != nullptr && (own->kind == WKind::kUpdate || own->kind == WKind::kInsert)) {
      own->kind = own->kind == WKind::kInsert ? WKind::kInsertDeleted : WKind::kDelete;
      st = absl::OkStatus();
    } else if (image != nullptr) {
      st = absl::OkStatus();
    }
    Advance(g);
    return st;
  }

  // A range may hold rows of any of its granules: it is scanned once the
  // attempt heads every queue it has not given up (the rows of earlier
  // transactions on them are installed, inserts included) and every
  // transaction it depends on has installed all its writes (one that gave
  // up a queue this attempt read, e.g. a district's next order id, may
  // still be inserting the order into the range). Rows of granules it did
  // not declare are returned as read; the guard refuses them.
  absl::Status Scan(const ScanSpec& spec, std::vector<ConstRow>* out) override {
    if (conflicted()) return ConflictStatus();
    for (size_t s = 0; s < released_.size(); ++s) {
      if (!released_[s] && !AwaitHead(s)) return Fail(AbortCause::kCascade);
    }
    if (!AwaitDeps(true)) return Fail(AbortCause::kCascade);
    const Table* table = spec.index->table();
    const Schema* schema = &table->schema();
    std::vector<Gran*> touched;
    absl::Status st = ScanBatches(spec, out, [&](const OrderedIndex::Entry& e) {
      Record* rec = e.rec;
      Gran* g = FindGran(table->id(), table->LockGranule(rec->key));
      if (g != nullptr) {
        if (released_[g->slot]) {
          late_ = true;
          ++stats_->spec_late_accesses;
          return Fail(AbortCause::kValidation);
        }
        if (!Register(g, spec.for_update)) return Fail(AbortCause::kCascade);
        touched.push_back(g);
      }
      if (Write* w = FindWrite(rec)) {
        if (w->kind == WKind::kUpdate || w->kind == WKind::kInsert) {
          out->push_back(ConstRow(schema, w->data, rec->key));
        }
        return absl::OkStatus();
      }
      char* buf = scratch_.Allocate(table->row_size());
      if (StableRead(rec, buf)) out->push_back(ConstRow(schema, buf, rec->key));
      return absl::OkStatus();
    });
    for (Gran* g : touched) Advance(g);
    return st;
  }

  // Installs what is left, then commits once every dependency has.
  AbortCause Commit() override {
    for (size_t s = 0; s < released_.size(); ++s) {
      if (!released_[s]) GiveUp(s);
    }
    me_->installed.store(true, std::memory_order_release);
    if (!AwaitDependencies()) {
      Abort();
      return AbortCause::kCascade;
    }
    bool committed;
    {
      std::lock_guard<std::mutex> l(me_->mu);
      committed = me_->status.load(std::memory_order_relaxed) == kActive;  // not doomed meanwhile
      if (committed) {
        me_->status.store(kCommitted, std::memory_order_release);
        me_->dependents.clear();
      }
    }
    if (!committed) {
      Abort();
      return AbortCause::kCascade;
    }
    for (Gran& g : gran_) {
      if (g.wrote) registry_->Restore({g.table, g.granule}, me_.get(), nullptr);
      g.prev.reset();
    }
    deps_.clear();
    if (record_footprint_) {
      for (const Undo& u : undo_) {
        if (u.kind == WKind::kInsertDeleted) continue;
        footprint_.writes.push_back({u.rec->table->id(), u.rec->key, u.new_version});
      }
    }
    undo_.clear();
    writes_.clear();
    return AbortCause::kNone;
  }

  // Rolls the attempt back: dooms its dependents, waits until they have
  // rolled back, restores its installed rows (newest first), drops its
  // uninstalled ones and hands each granule it wrote back to the writer
  // before it. The caller then gives up the queues it still holds (Unlock).
  void Abort() override {
    if (me_ == nullptr) return;
    Doom(me_);
    std::vector<std::shared_ptr<SpecState>> dependents;
    {
      std::lock_guard<std::mutex> l(me_->mu);
      dependents = me_->dependents;
    }
    for (const auto& d : dependents) {
      Waiter waiter;
      while (d->status.load(std::memory_order_acquire) != kRolledBack) waiter.Wait();
    }
    for (size_t i = undo_.size(); i-- > 0;) Restore(undo_[i]);
    for (Write& w : writes_) {
      if (!w.installed && (w.kind == WKind::kInsert || w.kind == WKind::kInsertDeleted)) {
        w.rec->table->EraseHash(w.rec);
        w.rec->tid.store(kTidAbsentBit, std::memory_order_release);
      }
    }
    for (Gran& g : gran_) {
      if (g.wrote) registry_->Restore({g.table, g.granule}, me_.get(), std::move(g.prev));
      g.prev.reset();
      g.wrote = false;
    }
    {
      std::lock_guard<std::mutex> l(me_->mu);
      me_->status.store(kRolledBack, std::memory_order_release);
      me_->dependents.clear();
    }
    deps_.clear();
    undo_.clear();
    writes_.clear();
    if (record_footprint_) footprint_.clear();
  }

 private:
  static constexpr uint32_t kUnseen = ~uint32_t{0};

  struct Gran {
    int table;
    uint64_t granule;
    uint32_t slot;    // its queue's index in req_->queues
    uint32_t first;   // first and last position in the declared order
    uint32_t last;
    bool touched = false;  // its dependency is registered
    bool wrote = false;    // the registry names this attempt its writer
    std::shared_ptr<SpecState> prev;  // the writer before (wrote)
  };
  struct Write {
    Record* rec;
    char* data;  // the private new image (kUpdate, kInsert)
    WKind kind;
    uint32_t slot;
    bool installed;
    char* image;  // installed: a copy of the image installed (kUpdate, kInsert)
  };
  struct Undo {
    Record* rec;
    char* before;  // kUpdate: the image it replaced
    WKind kind;
    uint64_t old_tid;
    uint64_t new_version;
  };

  Gran* FindGran(int table, uint64_t granule) {
    auto it = std::lower_bound(gran_.begin(), gran_.end(), std::make_pair(table, granule),
                               [](const Gran& g, const std::pair<int, uint64_t>& k) {
                                 return g.table != k.first ? g.table < k.first : g.granule < k.second;
                               });
    return it != gran_.end() && it->table == table && it->granule == granule ? &*it : nullptr;
  }

  // Before an access: heads the granule's queue and depends on its writer.
  absl::Status Enter(const Table* table, uint64_t key, bool write, Gran** out) {
    if (conflicted()) return ConflictStatus();
    Gran* g = FindGran(table->id(), table->LockGranule(key));
    if (g == nullptr) return Fail(AbortCause::kValidation);  // the guard refuses these first
    if (released_[g->slot]) {
      late_ = true;
      ++stats_->spec_late_accesses;
      return Fail(AbortCause::kValidation);
    }
    if (!AwaitHead(g->slot) || !Register(g, write)) return Fail(AbortCause::kCascade);
    *out = g;
    return absl::OkStatus();
  }

  // Waits until every dependency has committed (or, if `installed_is_enough`,
  // installed all its writes); false if one aborted (this attempt is then
  // doomed) or this attempt is doomed.
  bool AwaitDeps(bool installed_is_enough) {
    for (const auto& d : deps_) {
      Waiter waiter;
      for (;;) {
        const int st = d->status.load(std::memory_order_acquire);
        if (st == kCommitted || (installed_is_enough && d->installed.load(std::memory_order_acquire))) break;
        if (st != kActive) {
          Doom(me_);
          return false;
        }
        if (me_->status.load(std::memory_order_acquire) != kActive) return false;
        waiter.Wait();
      }
    }
    return me_->status.load(std::memory_order_acquire) == kActive;
  }

  bool AwaitHead(size_t slot) {
    Waiter waiter;
    while (!req_->heads[slot].load(std::memory_order_acquire)) {
      if (me_->status.load(std::memory_order_acquire) != kActive) return false;
      waiter.Wait();
    }
    return me_->status.load(std::memory_order_acquire) == kActive;
  }

  // The granule's last uncommitted writer (if another) becomes a
  // dependency; writing, this attempt becomes its writer. A writer that is
  // aborting is waited for (it restores the row and names the writer before
  // it), unless this attempt depends on it already: then this attempt is
  // doomed too and false is returned.
  bool Register(Gran* g, bool write) {
    while (!g->touched) {
      std::shared_ptr<SpecState> w = registry_->Get({g->table, g->granule});
      if (w == nullptr || w == me_) break;
      {
        std::lock_guard<std::mutex> l(w->mu);
        const int st = w->status.load(std::memory_order_relaxed);
        if (st == kActive) {
          w->dependents.push_back(me_);
          deps_.push_back(w);
          ++stats_->spec_dependencies;
          break;
        }
        if (st == kCommitted) break;
      }
      // Aborting, and this attempt has read nothing of it (else its doom
      // reaches this attempt, which stops waiting): wait until it has rolled
      // back, then look again.
      Waiter waiter;
      while (w->status.load(std::memory_order_acquire) != kRolledBack) {
        if (me_->status.load(std::memory_order_acquire) != kActive) return false;
        waiter.Wait();
      }
    }
    g->touched = true;
    if (write && !g->wrote) {
      g->wrote = true;
      g->prev = registry_->Swap({g->table, g->granule}, me_);
    }
    return true;
  }

  // After an access: queues whose granules all lie before the frontier are
  // given up.
  void Advance(const Gran* g) {
    if (!early_) return;
    frontier_ = std::max(frontier_, g->first);
    while (next_release_ < release_order_.size() && slot_last_[release_order_[next_release_]] < frontier_) {
      const uint32_t s = release_order_[next_release_++];
      if (!released_[s]) {
        GiveUp(s);
        ++stats_->spec_early_releases;
      }
    }
  }

  // Installs the writes on queues[slot] in place and gives the queue up.
  void GiveUp(size_t slot) {
    for (Write& w : writes_) {
      if (w.slot == slot && !w.installed) Install(&w);
    }
    released_[slot] = true;
    queues_->ReleaseSlot(req_, slot);
  }

  void Install(Write* w) {
    Record* rec = w->rec;
    Table* t = rec->table;
    const uint64_t v = rec->tid.load(std::memory_order_relaxed);
    const uint64_t next = (v & kTidVersionMask) + 1;
    w->installed = true;
    if (w->kind == WKind::kUpdate || w->kind == WKind::kInsert) {
      w->image = scratch_.Allocate(t->row_size());
      std::memcpy(w->image, w->data, t->row_size());
    }
    switch (w->kind) {
      case WKind::kUpdate: {
        char* before = scratch_.Allocate(t->row_size());
        rec->tid.store(v | kTidLockBit, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        AtomicCopyOut(before, rec->data(), t->row_size());
        AtomicCopyIn(rec->data(), w->data, t->row_size());
        rec->tid.store(next, std::memory_order_release);
        undo_.push_back({rec, before, WKind::kUpdate, v, next});
        break;
      }
      case WKind::kInsert:
        AtomicCopyIn(rec->data(), w->data, t->row_size());
        t->InsertOrdered(rec);
        rec->tid.store(1, std::memory_order_release);
        undo_.push_back({rec, nullptr, WKind::kInsert, 0, 1});
        break;
      case WKind::kDelete:
        rec->tid.store(v | kTidLockBit, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        t->EraseOrdered(rec);
        t->EraseHash(rec);
        rec->tid.store(next | kTidAbsentBit, std::memory_order_release);
        undo_.push_back({rec, nullptr, WKind::kDelete, v, next});
        break;
      case WKind::kInsertDeleted:
        t->EraseHash(rec);
        rec->tid.store(kTidAbsentBit, std::memory_order_release);
        break;
    }
  }

  void Restore(const Undo& u) {
    Record* rec = u.rec;
    Table* t = rec->table;
    switch (u.kind) {
      case WKind::kUpdate:
        rec->tid.store(rec->tid.load(std::memory_order_relaxed) | kTidLockBit, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        AtomicCopyIn(rec->data(), u.before, t->row_size());
        rec->tid.store(u.old_tid, std::memory_order_release);
        break;
      case WKind::kInsert:
        rec->tid.store(kTidLockBit | kTidAbsentBit, std::memory_order_release);
        t->EraseOrdered(rec);
        t->EraseHash(rec);
        rec->tid.store(kTidAbsentBit, std::memory_order_release);
        break;
      case WKind::kDelete: {
        // The deleted record stays unlinked (records are linked once); a
        // copy of it takes its place.
        Record* copy = arena_->Allocate(t->row_size());
        copy->key = rec->key;
        copy->table = t;
        AtomicCopyOut(copy->data(), rec->data(), t->row_size());
        copy->tid.store(u.old_tid, std::memory_order_relaxed);
        if (t->InsertHash(copy) == nullptr) t->InsertOrdered(copy);
        break;
      }
      case WKind::kInsertDeleted:
        break;
    }
  }

  // Copies a present row into buf (seqlocked against installs); records the
  // version read. False if absent.
  bool StableRead(Record* rec, char* buf) {
    Waiter waiter;
    for (;;) {
      const uint64_t v1 = rec->tid.load(std::memory_order_acquire);
      if (v1 & kTidAbsentBit) return false;
      if (v1 & kTidLockBit) {
        waiter.Wait();
        continue;
      }
      AtomicCopyOut(buf, rec->data(), rec->table->row_size());
      std::atomic_thread_fence(std::memory_order_acquire);
      if (rec->tid.load(std::memory_order_relaxed) == v1) {
        if (record_footprint_) footprint_.reads.push_back({rec->table->id(), rec->key, v1});
        return true;
      }
    }
  }

  // The attempt's image of (table, key): its own (uninstalled) write of the
  // row, else a stable copy of the installed row, then recorded as a write
  // of `kind` if `record`. Null if absent or deleted.
  char* View(const Table* table, uint64_t key, const Gran* g, bool record, WKind kind) {
    Record* rec = table->Find(key);
    if (rec == nullptr) return nullptr;
    if (Write* w = FindWrite(rec)) {
      return w->kind == WKind::kUpdate || w->kind == WKind::kInsert ? w->data : nullptr;
    }
    char* buf = scratch_.Allocate(table->row_size());
    if (!StableRead(rec, buf)) return nullptr;
    if (record) writes_.push_back({rec, buf, kind, g->slot, false, nullptr});
    return buf;
  }

  Write* FindWrite(Record* rec) {
    for (Write& w : writes_) {
      if (w.rec == rec) return &w;
    }
    return nullptr;
  }

  LockService* const queues_;
  const std::shared_ptr<SpecRegistry> registry_;
  ExecutorStats* stats_ = nullptr;
  LockRequest* req_ = nullptr;
  bool early_ = true;
  bool late_ = false;
  std::shared_ptr<SpecState> me_;
  std::vector<std::shared_ptr<SpecState>> deps_;  // what this attempt depends on
  std::vector<Gran> gran_;                        // sorted by (table, granule)
  std::vector<uint32_t> slot_last_;               // per slot: last declared position
  std::vector<bool> released_;                    // per slot
  std::vector<uint32_t> release_order_;           // slots by slot_last_
  size_t next_release_ = 0;
  uint32_t frontier_ = 0;
  std::vector<Write> writes_;
  std::vector<Undo> undo_;  // installed, in order
};

}  // namespace

std::unique_ptr<TxImpl> NewSpecTx(LockService* queues, std::shared_ptr<SpecRegistry> registry,
                                  int worker_id, RecordArena* arena, bool record_footprint,
                                  SpecControl** control) {
  auto tx = std::make_unique<SpecTx>(queues, std::move(registry), worker_id, arena, record_footprint);
  *control = tx.get();
  return tx;
}

}  // namespace planned_internal
}  // namespace engine
}  // namespace corral
