// MaaT (Mahmoud et al., VLDB 2014), as Deneva runs it: optimistic
// concurrency control whose commit timestamp is not fixed up front but picked
// at commit from a range [lower, upper] that conflicting transactions narrow.
//
//  * Execution: reads copy the committed row under the record's latch and
//    register the transaction as a reader of the record; ReadForUpdate and
//    Delete also register it as a writer and buffer the new image. Nothing
//    waits and nothing aborts before commit.
//  * Commit (one at a time, under the protocol's commit latch):
//      lower >= wts + 1 of every version read (after the writers it read),
//      lower >= rts + 1 and wts + 1 of every record written (after the
//      committed readers and writers of what it overwrites);
//      lower > upper: abort (kRangeEmpty). Else pick cts in the range
//      (Deneva takes lower; we take one past the latest commit, see
//      Commit); install the
//      writes with version cts; raise rts of what it read; then narrow the
//      ranges of the running transactions still registered on those records:
//      a reader of a record it wrote must come before it (upper <= cts - 1),
//      a writer of a record it read or wrote must come after it
//      (lower >= cts + 1).
//  Every conflicting pair is ordered: the one that commits second either
//  finds the first's timestamps on the record (first already committed) or
//  was narrowed by the first's commit (it was registered when the first
//  committed), so commit timestamps order every wr, ww and rw dependency.
//  Deneva validates in parallel with per-transaction latches and lets a
//  validated transaction's range still move; committing under one latch is a
//  simplification that keeps the same ranges and the same abort decisions
//  for a two-core box. Commit timestamps are record versions (see
//  ts_common.h).
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>

#include "engine/latch.h"
#include "engine/ts_common.h"

namespace corral {
namespace engine {
namespace {

using scheduler::AbortCause;

// Spacing of commit timestamps when the range is unbounded above.
constexpr uint64_t kGap = 1024;

struct alignas(64) RangeSlot {
  // Changed by the owner at Begin (registered nowhere then) and by
  // committers under the commit latch while the owner is registered on a
  // record whose latch they hold; read by the owner under the commit latch.
  std::atomic<uint64_t> lower{0};
  std::atomic<uint64_t> upper{kTidVersionMask};
};

struct MaatShared {
  RwLatch commit_mu;
  uint64_t last_cts ABSL_GUARDED_BY(commit_mu) = 0;  // the largest commit timestamp
  std::array<RangeSlot, kMaxWorkers + 1> ranges;
  MetaPool pool;
};

struct ReadEntry {
  Record* rec;
  uint64_t wts;  // version read (the absent bit cleared)
  bool present;  // a row, not its absence, was read
};

class MaatTx final : public TsTxBase {
 public:
  MaatTx(MaatShared* shared, int worker_id, RecordArena* arena, bool record_footprint)
      : TsTxBase(&shared->pool, worker_id, arena, record_footprint), shared_(shared) {}

  void Begin(uint64_t) override {
    ResetTs();
    reads_.clear();
    RangeSlot& r = shared_->ranges[worker_id_];
    r.lower.store(0, std::memory_order_relaxed);
    r.upper.store(kTidVersionMask, std::memory_order_relaxed);
  }

  AbortCause Commit() override {
    WriteGuard g(&shared_->commit_mu);
    RangeSlot& range = shared_->ranges[worker_id_];
    uint64_t lower = std::max<uint64_t>(range.lower.load(std::memory_order_relaxed), 1);
    const uint64_t upper = range.upper.load(std::memory_order_relaxed);
    // Soft bounds: where cts leaves the running transactions this commit
    // orders a non-empty range (they are not aborted by it).
    uint64_t soft_lo = 0, soft_hi = kTidVersionMask;
    for (const ReadEntry& r : reads_) {
      lower = std::max(lower, r.wts + 1);
      RecLatch(r.rec);
      uint64_t after = pool_->MetaOf(r.rec, worker_id_)->writers & ~me_;
      RecUnlatch(r.rec);
      // A writer of a row this only read goes after it: cts < its upper.
      // (A writer of a row this also writes read the old row: it is doomed
      // whatever cts is.)
      if (after != 0 && FindWrite(r.rec) == nullptr) {
        for (; after != 0; after &= after - 1) {
          uint64_t u = shared_->ranges[__builtin_ctzll(after)].upper.load(std::memory_order_relaxed);
          if (u != kTidVersionMask) soft_hi = std::min(soft_hi, u == 0 ? 0 : u - 1);
        }
      }
    }
    for (const WriteEntry& w : writes_) {
      RecLatch(w.rec);
      TsMeta* m = pool_->MetaOf(w.rec, worker_id_);
      if (w.kind != WKind::kInsert && w.kind != WKind::kInsertDeleted) {
        lower = std::max(lower, m->rts + 1);
        lower = std::max(lower, (w.rec->tid.load(std::memory_order_relaxed) & kTidVersionMask) + 1);
      }
      // A reader (not writer) of a row this writes goes before it: cts > its lower.
      for (uint64_t before = m->readers & ~m->writers & ~me_; before != 0; before &= before - 1) {
        uint64_t l = shared_->ranges[__builtin_ctzll(before)].lower.load(std::memory_order_relaxed);
        soft_lo = std::max(soft_lo, l + 1);
      }
      RecUnlatch(w.rec);
    }
    if (lower > upper) {
      MarkConflict(AbortCause::kRangeEmpty);
      Abort();
      return cause_;
    }
    // Any timestamp in [lower, upper] serializes; prefer one inside the soft
    // bounds too. Record timestamps are only per-record lower bounds, so
    // taking the bottom of the range (Deneva) would let a writer of a rarely
    // written row commit far below the timestamps of busy rows, and a
    // running reader of that row (ordered before it) could then write no
    // busy row. So, unbounded above, commit after every earlier commit (with
    // room for readers to fit in between); bounded, in the middle.
    uint64_t lo = std::max(lower, soft_lo), hi = std::min(upper, soft_hi);
    if (lo > hi) {  // some running transaction will not fit: keep the hard range
      lo = lower;
      hi = upper;
    }
    const uint64_t cts =
        hi == kTidVersionMask ? std::max(lo, shared_->last_cts + kGap) : lo + (hi - lo) / 2;
    shared_->last_cts = std::max(shared_->last_cts, cts);
    IndexInserts();
    for (const WriteEntry& w : writes_) {
      RecLatch(w.rec);
      TsMeta* m = pool_->MetaOf(w.rec, worker_id_);
      Install(w, cts);
      Narrow(m->readers & ~me_, /*before=*/true, cts);
      Narrow(m->writers & ~me_, /*before=*/false, cts);
      m->readers &= ~me_;
      m->writers &= ~me_;
      RecUnlatch(w.rec);
      Unindex(w);
    }
    for (const ReadEntry& r : reads_) {
      RecLatch(r.rec);
      TsMeta* m = pool_->MetaOf(r.rec, worker_id_);
      if (m->rts < cts) m->rts = cts;
      Narrow(m->writers & ~me_, /*before=*/false, cts);
      m->readers &= ~me_;
      RecUnlatch(r.rec);
    }
    if (record_footprint_) {
      for (const ReadEntry& r : reads_) {
        if (r.present) RecordRead(r.rec, r.wts);
      }
    }
    RecordWrites(cts);
    writes_.clear();
    reads_.clear();
    return AbortCause::kNone;
  }

  bool ReadsStillValid() override {
    for (const ReadEntry& r : reads_) {
      if ((r.rec->tid.load(std::memory_order_acquire) & kTidVersionMask) != r.wts) return false;
    }
    return true;
  }

  AbortCause StaleReadCause() const override { return AbortCause::kRangeEmpty; }

  void Abort() override {
    for (const ReadEntry& r : reads_) Unregister(r.rec);
    for (const WriteEntry& w : writes_) Unregister(w.rec);
    UnlinkInserts();
    reads_.clear();
    writes_.clear();
    if (record_footprint_) footprint_.clear();
  }

 private:
  Got ReadRow(Record* rec, char* buf) override {
    return Access(rec, buf, false) ? Got::kRow : Got::kAbsent;
  }
  Got WriteRow(Record* rec, char* buf) override {
    return Access(rec, buf, true) ? Got::kRow : Got::kAbsent;
  }
  void ClaimNew(TsMeta* m) override { m->writers = me_; }
  AbortCause OwnCause() const override { return AbortCause::kRangeEmpty; }

  // Registers this attempt on rec (reader; also writer if `write`) and
  // copies the committed row into buf (unless null). False if absent.
  bool Access(Record* rec, char* buf, bool write) {
    RecLatch(rec);
    TsMeta* m = pool_->MetaOf(rec, worker_id_);
    m->readers |= me_;
    uint64_t v = rec->tid.load(std::memory_order_relaxed);
    bool present = !(v & kTidAbsentBit);
    if (write && present) m->writers |= me_;
    if (present && buf != nullptr) std::memcpy(buf, rec->data(), rec->table->row_size());
    RecUnlatch(rec);
    reads_.push_back({rec, v & kTidVersionMask, present});
    return present;
  }

  // Whether a committed transaction already emptied this attempt's range
  // (it then cannot commit): aborts early instead of running on.
  bool Doomed() override {
    const RangeSlot& r = shared_->ranges[worker_id_];
    if (r.lower.load(std::memory_order_relaxed) <= r.upper.load(std::memory_order_relaxed)) {
      return false;
    }
    MarkConflict(AbortCause::kRangeEmpty);
    return true;
  }

  void Unregister(Record* rec) {
    RecLatch(rec);
    TsMeta* m = pool_->MetaOf(rec, worker_id_);
    m->readers &= ~me_;
    m->writers &= ~me_;
    RecUnlatch(rec);
  }

  // Orders the running transactions of `mask` before (upper < cts) or after
  // (lower > cts) this one. Caller holds the commit latch and the latch of a
  // record they are registered on.
  void Narrow(uint64_t mask, bool before, uint64_t cts) {
    for (; mask != 0; mask &= mask - 1) {
      RangeSlot& r = shared_->ranges[__builtin_ctzll(mask)];
      if (before) {
        if (r.upper.load(std::memory_order_relaxed) > cts - 1) {
          r.upper.store(cts - 1, std::memory_order_relaxed);
        }
      } else if (r.lower.load(std::memory_order_relaxed) < cts + 1) {
        r.lower.store(cts + 1, std::memory_order_relaxed);
      }
    }
  }

  MaatShared* const shared_;
  std::vector<ReadEntry> reads_;
};

class MaatProtocol final : public CcProtocol {
 public:
  std::unique_ptr<TxImpl> NewTx(int worker_id, RecordArena* arena,
                                bool record_footprint) override {
    return std::make_unique<MaatTx>(&shared_, worker_id, arena, record_footprint);
  }

 private:
  MaatShared shared_;
};

}  // namespace

std::unique_ptr<CcProtocol> NewMaatProtocol() { return std::make_unique<MaatProtocol>(); }

}  // namespace engine
}  // namespace corral
