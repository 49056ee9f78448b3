// Timestamp ordering, as Deneva (Harding et al., VLDB 2017) describes it:
//  * "timestamp": basic T/O. Each attempt takes a fresh timestamp from a
//    shared counter (a restart gets a new one). A record keeps the timestamp
//    of its last committed write (Record::tid's version) and the largest
//    timestamp that read it (rts). A read by ts < wts aborts; a write by
//    ts < rts or ts < wts aborts (kTimestampTooOld). Writes are buffered
//    privately and announced on the record as a pre-write; a read (or write)
//    by a younger transaction waits for an older pending pre-write to commit
//    or abort (Deneva buffers it), so no one reads uncommitted data. Waits
//    only go from younger to older timestamps: no deadlock. Simplification:
//    one pre-write per record at a time; an older writer that finds a
//    younger one's pre-write aborts, and the executor waits for that
//    pre-write to resolve before the retry (an obstacle, as for OCC/2PL).
//  * "mvcc": multi-version T/O. As above, but every committed write keeps the
//    overwritten row as an older version, so a read by ts < wts reads the
//    newest version with wts <= ts instead of aborting: reads never abort,
//    and a long reader neither blocks writers nor sees a partial write.
//    Writes still go after the latest version (ts > wts, ts >= its rts).
//    At each install, the record's older versions that no running attempt
//    reads (the newest version at or below its timestamp) are freed.
// Commit never fails: all checks happen at access time. See ts_common.h for
// the per-record state and engine.h for the engine's design.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "engine/ts_common.h"

namespace corral {
namespace engine {
namespace {

using scheduler::AbortCause;

constexpr uint64_t kIdle = ~uint64_t{0};

struct alignas(64) ActiveSlot {
  // MVCC: the running attempt's timestamp << 1, or a lower bound of it << 1
  // | 1 while it is being taken (provisional); kIdle between attempts.
  std::atomic<uint64_t> ts{kIdle};
};

// The timestamps running attempts read at, as seen by one collection.
struct Readers {
  uint64_t provisional_min = kIdle;  // reads at some ts >= this
  std::array<uint64_t, kMaxWorkers + 1> exact;
  int n = 0;
  // Whether a version with timestamp wts, superseded by one with timestamp
  // newer, is what some running attempt reads (the newest at or below its ts).
  bool Need(uint64_t wts, uint64_t newer) const {
    if (newer > provisional_min) return true;
    for (int i = 0; i < n; ++i) {
      if (wts <= exact[i] && exact[i] < newer) return true;
    }
    return false;
  }
};

struct TsShared {
  bool mvcc = false;
  std::atomic<uint64_t> clock{2};  // loaded rows carry version 1
  std::array<ActiveSlot, kMaxWorkers + 1> active;
  MetaPool pool;
};

class TimestampTx final : public TsTxBase {
 public:
  TimestampTx(TsShared* shared, int worker_id, RecordArena* arena, bool record_footprint)
      : TsTxBase(&shared->pool, worker_id, arena, record_footprint),
        shared_(shared),
        mvcc_(shared->mvcc) {}

  void Begin(uint64_t) override {
    ResetTs();
    read_recs_.clear();
    std::atomic<uint64_t>& slot = shared_->active[worker_id_].ts;
    if (mvcc_) {
      // Publish a provisional lower bound first, so a collection that runs
      // before the timestamp itself is published keeps every version this
      // attempt may read.
      slot.store((shared_->clock.load(std::memory_order_seq_cst) << 1) | 1,
                 std::memory_order_seq_cst);
    }
    ts_ = shared_->clock.fetch_add(1, std::memory_order_seq_cst);
    if (mvcc_) slot.store(ts_ << 1, std::memory_order_seq_cst);
  }

  AbortCause Commit() override {
    IndexInserts();  // still absent and pre-written: readers wait for them
    Readers readers;
    if (mvcc_) readers = RunningReaders();
    for (const WriteEntry& w : writes_) {
      RecLatch(w.rec);
      TsMeta* m = pool_->MetaOf(w.rec, worker_id_);
      if (mvcc_ && w.kind != WKind::kInsertDeleted) {
        Version* v = pool_->NewVersion(w.rec);
        v->older = m->chain;
        m->chain = v;
      }
      Install(w, ts_);
      m->pending_owner = -1;
      m->pending_ts = 0;
      if (mvcc_) Collect(m, w.rec, readers);
      RecUnlatch(w.rec);
      Unindex(w);
    }
    RecordWrites(ts_);
    writes_.clear();
    End();
    return AbortCause::kNone;
  }

  // A younger transaction overwrote (or deleted) a row this attempt read. The
  // read itself stays valid at ts_, but a NotFound for a key whose row a
  // younger delete already unlinked is not: an error decided then is retried.
  bool ReadsStillValid() override {
    for (const Record* rec : read_recs_) {
      if ((rec->tid.load(std::memory_order_acquire) & kTidVersionMask) > ts_) return false;
    }
    return true;
  }
  AbortCause StaleReadCause() const override { return AbortCause::kTimestampTooOld; }

  void Abort() override {
    for (const WriteEntry& w : writes_) {
      RecLatch(w.rec);
      TsMeta* m = pool_->MetaOf(w.rec, worker_id_);
      if (m->pending_owner == worker_id_) {
        m->pending_owner = -1;
        m->pending_ts = 0;
      }
      RecUnlatch(w.rec);
    }
    UnlinkInserts();
    writes_.clear();
    if (record_footprint_) footprint_.clear();
    End();
  }

 private:
  void End() {
    if (mvcc_) shared_->active[worker_id_].ts.store(kIdle, std::memory_order_seq_cst);
  }

  // The timestamps of the running attempts (ours included).
  Readers RunningReaders() const {
    Readers r;
    for (const ActiveSlot& s : shared_->active) {
      uint64_t t = s.ts.load(std::memory_order_seq_cst);
      if (t == kIdle) continue;
      if (t & 1) {
        r.provisional_min = std::min(r.provisional_min, t >> 1);
      } else {
        r.exact[r.n++] = t >> 1;
      }
    }
    return r;
  }

  // Frees the older versions no running attempt reads. A version is read by
  // an attempt at ts iff it is the newest at or below ts; attempts that begin
  // later read the latest version (never freed) or a newer one.
  void Collect(TsMeta* m, const Record* rec, const Readers& readers) {
    uint64_t newer = rec->tid.load(std::memory_order_relaxed) & kTidVersionMask;
    Version** link = &m->chain;
    while (*link != nullptr) {
      Version* v = *link;
      const uint64_t wts = v->wts;
      if (readers.Need(wts, newer)) {
        link = &v->older;
      } else {
        *link = v->older;
        v->older = nullptr;
        pool_->FreeChain(v);
      }
      newer = wts;
    }
  }

  void ClaimNew(TsMeta* m) override {
    m->pending_owner = worker_id_;  // born pre-written by us
    m->pending_ts = ts_;
  }
  AbortCause OwnCause() const override { return AbortCause::kTimestampTooOld; }
  bool ObstacleCleared(const Record* obstacle) override {
    Record* rec = const_cast<Record*>(obstacle);
    RecLatch(rec);
    bool cleared = pool_->MetaOf(rec, worker_id_)->pending_ts != blocking_pending_ts_;
    RecUnlatch(rec);
    return cleared;
  }

  // Reads the row as of ts_ into buf: waits for an older pending pre-write;
  // T/O aborts if a younger write is installed, MVCC reads an older version.
  Got ReadRow(Record* rec, char* buf) override {
    read_recs_.push_back(rec);
    const uint32_t n = rec->table->row_size();
    Waiter waiter;
    for (;;) {
      RecLatch(rec);
      TsMeta* m = pool_->MetaOf(rec, worker_id_);
      uint64_t v = rec->tid.load(std::memory_order_relaxed);
      uint64_t wts = v & kTidVersionMask;
      if (ts_ < wts) {
        if (!mvcc_) {
          RecUnlatch(rec);
          MarkConflict(AbortCause::kTimestampTooOld);
          return Got::kConflict;
        }
        const Version* old = m->chain;
        while (old != nullptr && old->wts > ts_) old = old->older;
        Got g = Got::kAbsent;
        if (old != nullptr && !old->absent) {
          std::memcpy(buf, old->data, n);
          g = Got::kRow;
          RecordRead(rec, old->wts);
        }
        RecUnlatch(rec);
        return g;
      }
      if (m->pending_owner >= 0 && m->pending_ts < ts_) {
        RecUnlatch(rec);  // an older write is buffered: wait for it
        waiter.Wait();
        continue;
      }
      if (m->rts < ts_) m->rts = ts_;
      if (v & kTidAbsentBit) {
        RecUnlatch(rec);
        return Got::kAbsent;
      }
      std::memcpy(buf, rec->data(), n);
      RecUnlatch(rec);
      RecordRead(rec, wts);
      return Got::kRow;
    }
  }

  // Announces a buffered write of rec at ts_ and copies the row into buf
  // (unless null). Waits for an older pending pre-write; aborts if a younger
  // transaction read or wrote the record, or has a pre-write pending on it.
  Got WriteRow(Record* rec, char* buf) override {
    read_recs_.push_back(rec);
    Waiter waiter;
    for (;;) {
      RecLatch(rec);
      TsMeta* m = pool_->MetaOf(rec, worker_id_);
      uint64_t v = rec->tid.load(std::memory_order_relaxed);
      uint64_t wts = v & kTidVersionMask;
      if (m->pending_owner >= 0 && m->pending_ts < ts_) {
        RecUnlatch(rec);
        waiter.Wait();
        continue;
      }
      if (m->pending_owner >= 0 || ts_ < wts || ts_ < m->rts) {
        if (m->pending_owner >= 0) {
          // A younger pre-write is in the way. Before the retry (which takes
          // a fresh, younger timestamp) the executor waits for it to resolve:
          // an immediate retry would meet the same in-flight writer, and two
          // writers of the same rows in opposite orders would abort each
          // other in turn, round after round.
          blocking_pending_ts_ = m->pending_ts;
          SetCustomObstacle(rec);
        }
        RecUnlatch(rec);
        MarkConflict(AbortCause::kTimestampTooOld);
        return Got::kConflict;
      }
      if (v & kTidAbsentBit) {
        m->rts = ts_;  // we read the absence
        RecUnlatch(rec);
        return Got::kAbsent;
      }
      // No rts update: the write it announces installs wts = ts_ on commit,
      // and an aborted pre-write must not turn older transactions away.
      m->pending_owner = worker_id_;
      m->pending_ts = ts_;
      if (buf != nullptr) std::memcpy(buf, rec->data(), rec->table->row_size());
      RecUnlatch(rec);
      RecordRead(rec, wts);
      return Got::kRow;
    }
  }

  TsShared* const shared_;
  const bool mvcc_;
  uint64_t ts_ = 0;
  std::vector<Record*> read_recs_;  // rows read or pre-written (ReadsStillValid)
  uint64_t blocking_pending_ts_ = 0;  // the pre-write an abort waits out
};

class TimestampProtocol final : public CcProtocol {
 public:
  explicit TimestampProtocol(bool mvcc) { shared_.mvcc = mvcc; }
  std::unique_ptr<TxImpl> NewTx(int worker_id, RecordArena* arena,
                                bool record_footprint) override {
    return std::make_unique<TimestampTx>(&shared_, worker_id, arena, record_footprint);
  }
  int64_t RetainedVersions() const override { return shared_.pool.live_versions(); }

 private:
  TsShared shared_;
};

}  // namespace

std::unique_ptr<CcProtocol> NewTimestampProtocol(bool mvcc) {
  return std::make_unique<TimestampProtocol>(mvcc);
}

}  // namespace engine
}  // namespace corral
