// Internal: what the timestamp-family protocols (timestamp.cc: basic T/O and
// MVCC; maat.cc: MaaT) share: a per-record latch, per-record metadata, MVCC
// version nodes, and TsTxBase, the Tx calls over a private write set
// (read-your-writes, buffered writes, inserts published absent) with each
// protocol's access rules behind the ReadRow/WriteRow/ClaimNew hooks.
//
// These protocols reuse two Record words that belong to 2PL (one protocol
// runs per Database): Record::lock is a spin latch (bit 0) guarding the row
// bytes and the metadata, and Record::oldest_waiter holds a TsMeta* that the
// first latch holder allocates (records loaded or inserted start with none).
// Record::tid keeps its meaning: absent bit | version, where the version is
// the commit timestamp of the committed write that produced the row (loaded
// rows: 1), so footprint versions order writes as the protocol serializes them.
//
//   RecLatch(rec);
//   TsMeta* m = pool->MetaOf(rec, worker_id);
//   ... read/modify rec->data(), m ...
//   RecUnlatch(rec);
//
// Thread-safety: RecLatch/RecUnlatch are thread-safe. A TsMeta and the row
// bytes are touched only under the record's latch. MetaPool::MetaOf with
// worker slot w is called by the thread that owns slot w (one at a time).
#ifndef CORRAL_ENGINE_TS_COMMON_H_
#define CORRAL_ENGINE_TS_COMMON_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/cc.h"
#include "engine/storage.h"
#include "scheduler/txn.h"

namespace corral {
namespace engine {

// An older committed version of a row (MVCC), newest first.
struct Version {
  Version* older;
  uint64_t wts;  // commit timestamp of the write that produced it
  bool absent;   // the row did not exist (before an insert, after a delete)
  char data[1];  // row bytes (row_size of them) when present
};

// Per-record protocol state. Guarded by the record's latch.
struct TsMeta {
  // T/O, MVCC: the largest timestamp that read the latest version.
  // MaaT: the largest commit timestamp of a committed reader.
  uint64_t rts = 0;
  // T/O, MVCC: the buffered pre-write (Deneva's prewrite): owner worker slot
  // (-1: none) and its timestamp. One at a time per record.
  int pending_owner = -1;
  uint64_t pending_ts = 0;
  // MaaT: worker slots of running transactions that read / wrote the record.
  uint64_t readers = 0;
  uint64_t writers = 0;
  // MVCC: older versions, newest first.
  Version* chain = nullptr;
};

inline void RecLatch(Record* rec) {
  Waiter waiter;
  for (;;) {
    uint64_t w = rec->lock.load(std::memory_order_relaxed);
    if (w == 0 && rec->lock.compare_exchange_weak(w, 1, std::memory_order_acquire)) return;
    waiter.Wait();
  }
}
inline void RecUnlatch(Record* rec) { rec->lock.store(0, std::memory_order_release); }

// Owns the TsMeta blocks and MVCC versions of one Database (freed with it).
// Live-version accounting is for tests (MVCC garbage collection).
class MetaPool {
 public:
  MetaPool() = default;
  MetaPool(const MetaPool&) = delete;
  MetaPool& operator=(const MetaPool&) = delete;
  ~MetaPool();

  // The record's metadata, allocated on first use. Call under the latch, or
  // before the record is published.
  TsMeta* MetaOf(Record* rec, int worker_id) {
    uint64_t p = rec->oldest_waiter.load(std::memory_order_relaxed);
    if (p != 0) return reinterpret_cast<TsMeta*>(p);
    TsMeta* m = new TsMeta;
    owned_[worker_id].push_back(m);
    rec->oldest_waiter.store(reinterpret_cast<uint64_t>(m), std::memory_order_relaxed);
    return m;
  }
  // A version node holding the record's current row (or its absence).
  Version* NewVersion(const Record* rec);
  void FreeChain(Version* v);
  int64_t live_versions() const { return live_versions_.load(std::memory_order_relaxed); }

 private:
  std::array<std::vector<TsMeta*>, kMaxWorkers + 1> owned_;
  std::atomic<int64_t> live_versions_{0};
};

enum class WKind : uint8_t { kUpdate, kInsert, kDelete, kInsertDeleted };

struct WriteEntry {
  Record* rec;
  char* data;  // new row image (kUpdate), the record's own bytes (kInsert)
  WKind kind;
};

// What a versioned read found.
enum class Got { kRow, kAbsent, kConflict };

// The protocol-independent part of a timestamp-family transaction: the Tx
// calls over a private write set (read-your-writes, buffered writes, inserts
// published absent), with the protocol's checks behind four hooks.
class TsTxBase : public TxImpl {
 public:
  TsTxBase(MetaPool* pool, int worker_id, RecordArena* arena, bool record_footprint)
      : TxImpl(worker_id, arena, record_footprint), pool_(pool), me_(uint64_t{1} << worker_id) {}

  absl::Status Read(const Table* table, uint64_t key, ConstRow* out) override;
  absl::Status ReadForUpdate(const Table* table, uint64_t key, Row* out) override;
  absl::Status Insert(const Table* table, uint64_t key, Row* out) override;
  absl::Status Delete(const Table* table, uint64_t key) override;
  // Scanned rows are read like point reads; for_update takes no early intent
  // (the later write is checked when it is made).
  absl::Status Scan(const ScanSpec& spec, std::vector<ConstRow>* out) override;

 protected:
  // --- protocol hooks ---
  // Reads rec as this attempt may see it into buf (row_size bytes).
  virtual Got ReadRow(Record* rec, char* buf) = 0;
  // Announces a write of rec and copies the current row into buf (if not
  // null). kAbsent: nothing to write (not announced).
  virtual Got WriteRow(Record* rec, char* buf) = 0;
  // Marks a fresh record of this attempt's insert as its write (not yet
  // published).
  virtual void ClaimNew(TsMeta* meta) = 0;
  // The cause of this protocol's conflicts.
  virtual scheduler::AbortCause OwnCause() const = 0;
  // Whether the attempt already cannot commit (checked before every call).
  virtual bool Doomed() { return false; }

  void ResetTs() {
    ResetAttempt();
    writes_.clear();
    scratch_.Reset();
    if (record_footprint_) footprint_.clear();
  }
  WriteEntry* FindWrite(const Record* rec) {
    for (WriteEntry& w : writes_) {
      if (w.rec == rec) return &w;
    }
    return nullptr;
  }
  static bool Deleted(const WriteEntry& w) {
    return w.kind == WKind::kDelete || w.kind == WKind::kInsertDeleted;
  }
  // Installs write `w` with commit timestamp `ts` (under the record's latch).
  static void Install(const WriteEntry& w, uint64_t ts);
  // Index maintenance of a committed write, after the latch is released
  // (inserts entered the ordered indexes before any install: see Commit).
  static void Unindex(const WriteEntry& w);
  // Publishes this attempt's inserts in the ordered indexes (still absent),
  // before any install, so a reader that sees one of its writes and then
  // scans finds its inserts too.
  void IndexInserts();
  // Rolls back the write set's records (inserts are unlinked, staying absent).
  void UnlinkInserts();
  void RecordRead(const Record* rec, uint64_t version) {
    if (record_footprint_) footprint_.reads.push_back({rec->table->id(), rec->key, version});
  }
  void RecordWrites(uint64_t ts);

  MetaPool* const pool_;
  const uint64_t me_;
  std::vector<WriteEntry> writes_;

 private:
  // Read/ReadForUpdate of a row this attempt already wrote. True (and *st)
  // when the write set answered.
  bool ReadOwn(const Table* table, Record* rec, Row* row, absl::Status* st);
  bool Stopped() { return conflicted() || Doomed(); }
};

}  // namespace engine
}  // namespace corral

#endif  // CORRAL_ENGINE_TS_COMMON_H_
