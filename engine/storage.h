// Tables, records and indexes of the embedded engine.
//
// A Record is a fixed header (concurrency-control words, primary key, owning
// table, hash chain link) followed by the row bytes. Every table has a
// concurrent primary HashIndex from the uint64 primary key to its Record:
// lookups are lock-free (no atomic read-modify-write on the read path),
// inserts and erases take one of 1024 striped spin latches, and the bucket
// array doubles when a stripe gets crowded. A table created
// with TableOptions::ordered also keeps its primary keys in an OrderedIndex
// for range / latest-N scans; Database::CreateIndex adds non-unique secondary
// ordered indexes whose uint64 key a function computes from the row (e.g.
// customer by (w, d, last-name-id)).
//
// Records are never freed while the Database lives: deleted rows and rows of
// aborted inserts stay allocated (marked absent) so that a concurrent reader
// holding a pointer never touches freed memory. Memory therefore grows with
// inserts; runs are expected to be bounded (no epoch reclamation yet).
//
//   Table* t = db->CreateTable("orders", schema, {.ordered = true}).value();
//   ScanSpec s; s.index = t->primary_ordered(); s.lo = ...; s.hi = ...;
//
// Thread-safety: Table, HashIndex and OrderedIndex are thread-safe (each ordered index has a reader-writer latch taken briefly per
// operation or scan batch). Record words are atomics; row bytes are protected
// by the concurrency-control protocol.
#ifndef CORRAL_ENGINE_STORAGE_H_
#define CORRAL_ENGINE_STORAGE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "common/hash.h"
#include "engine/latch.h"
#include "engine/schema.h"

namespace corral {
namespace engine {

class Table;

// Bits of Record::tid.
inline constexpr uint64_t kTidLockBit = uint64_t{1} << 63;    // OCC commit lock
inline constexpr uint64_t kTidAbsentBit = uint64_t{1} << 62;  // not (yet / any more) present
inline constexpr uint64_t kTidVersionMask = kTidAbsentBit - 1;
// Bits of Record::lock (2PL): exclusive flag + mask of holding worker slots.
inline constexpr uint64_t kLockExclusive = uint64_t{1} << 63;
inline constexpr int kMaxWorkers = 63;

struct Record {
  // OCC: lock bit | absent bit | version. 2PL: absent bit | version (the
  // version is bumped by every committed write, for history checks).
  std::atomic<uint64_t> tid;
  // 2PL lock word: kLockExclusive | holder mask (bit w = worker slot w).
  std::atomic<uint64_t> lock;
  uint64_t key;
  Table* table;
  // Next record in the same hash bucket. A record is linked at most once and
  // unlinked at most once (records are never reused), so a lock-free reader
  // that stands on an unlinked record still reaches the chain's end.
  std::atomic<Record*> hash_next;
  // 2PL wait-die / deadlock detection: timestamp of the oldest transaction
  // waiting for this record's lock (0: none). A fresh younger requester does
  // not barge past it (it dies, or waits behind it).
  std::atomic<uint64_t> oldest_waiter;

  char* data() { return reinterpret_cast<char*>(this + 1); }
  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
};
static_assert(sizeof(Record) == 48, "record header is 48 bytes");

// Bump allocator for records of one worker (or the loader). Thread-compatible:
// used by one thread at a time. Memory is released when it is destroyed.
class RecordArena {
 public:
  RecordArena() = default;
  RecordArena(const RecordArena&) = delete;
  RecordArena& operator=(const RecordArena&) = delete;
  ~RecordArena();
  // A zero-filled record with `row_size` data bytes.
  Record* Allocate(uint32_t row_size);

 private:
  std::vector<char*> chunks_;
  char* cur_ = nullptr;
  size_t left_ = 0;
};

// Relaxed word-wise copies of row bytes (row sizes are multiples of 8). Used
// where a reader may race with a writer and validates afterwards (OCC), so
// the race is on atomics, not undefined behaviour.
void AtomicCopyOut(char* dst, const char* src, uint32_t n);
void AtomicCopyIn(char* dst, const char* src, uint32_t n);

// The primary hash index: uint64 key -> Record, chained through
// Record::hash_next. Thread-safe. Find never blocks except while the bucket
// array is being doubled (a seqlock: a miss that overlapped a resize retries).
class HashIndex {
 public:
  explicit HashIndex(size_t expected);
  ~HashIndex();
  HashIndex(const HashIndex&) = delete;
  HashIndex& operator=(const HashIndex&) = delete;

  // The linked record with `key`, or null.
  Record* Find(uint64_t key) const;
  // Links `rec` unless a record with its key is linked; returns that record
  // (and links nothing) in that case, else null.
  Record* Insert(Record* rec);
  // Unlinks `rec` if linked.
  void Erase(Record* rec);
  // Calls fn on every linked record (quiescent use).
  template <typename F>
  void ForEach(F fn) const {
    Array* a = array_.load(std::memory_order_acquire);
    for (size_t b = 0; b <= a->mask; ++b) {
      for (Record* r = a->buckets[b].load(std::memory_order_acquire); r != nullptr;
           r = r->hash_next.load(std::memory_order_acquire)) {
        fn(r);
      }
    }
  }

 private:
  static constexpr size_t kStripes = 1024;
  struct Array {
    size_t mask;
    std::atomic<Record*>* buckets;
  };
  struct alignas(64) Stripe {
    std::atomic<uint32_t> latch{0};
    uint32_t count = 0;  // linked records of this stripe (under latch)
  };
  static uint64_t Hash(uint64_t key) { return Mix64(key); }
  void LockStripe(size_t s) const;
  void UnlockStripe(size_t s) const { stripes_[s].latch.store(0, std::memory_order_release); }
  void Grow(Array* seen);

  std::atomic<Array*> array_;
  std::atomic<uint64_t> resize_seq_{0};  // odd while growing
  mutable Stripe stripes_[kStripes];
  RwLatch grow_mu_;
  std::vector<Array*> arrays_ ABSL_GUARDED_BY(grow_mu_);  // all, freed at destruction
};

// An ordered index: (index key, primary key) -> Record. Unique primary
// indexes use the primary key as index key. Thread-safe.
class OrderedIndex {
 public:
  using KeyFn = std::function<uint64_t(const ConstRow&)>;
  struct Entry {
    uint64_t key;
    uint64_t pk;
    Record* rec;
  };

  OrderedIndex(std::string name, Table* table, KeyFn key_of)
      : name_(std::move(name)), table_(table), key_of_(std::move(key_of)) {}

  const std::string& name() const { return name_; }
  Table* table() const { return table_; }
  // Index key of a row (its primary key for a primary ordered index).
  uint64_t KeyOf(const ConstRow& row) const { return key_of_ ? key_of_(row) : row.key(); }

  void Insert(uint64_t key, uint64_t pk, Record* rec);
  // Removes the entry if it still maps to `rec`.
  void Erase(uint64_t key, uint64_t pk, Record* rec);
  // Appends to *out up to `max` entries with key in [lo, hi], in the given
  // order, strictly after `after` (index key, pk) when has_after.
  void Collect(uint64_t lo, uint64_t hi, bool descending, bool has_after,
               std::pair<uint64_t, uint64_t> after, size_t max, std::vector<Entry>* out) const;
  size_t size() const;

 private:
  const std::string name_;
  Table* const table_;
  const KeyFn key_of_;
  mutable RwLatch mu_;
  absl::btree_map<std::pair<uint64_t, uint64_t>, Record*> map_ ABSL_GUARDED_BY(mu_);
};

struct TableOptions {
  // Keep primary keys in an ordered index too (range / latest-N scans).
  bool ordered = false;
  // Initial hash-index capacity hint.
  size_t expected_rows = 1024;
};

// One table: schema, primary hash index, ordered indexes. Thread-safe.
class Table {
 public:
  Table(int id, std::string name, Schema schema, const TableOptions& options);
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const Schema& schema() const { return schema_; }
  uint32_t row_size() const { return row_size_; }
  // The ordered primary index, or null if the table was not created ordered.
  OrderedIndex* primary_ordered() const { return primary_ordered_; }
  const std::vector<std::unique_ptr<OrderedIndex>>& ordered_indexes() const { return ordered_; }

  // --- engine internals (used by the protocols) ---
  Record* Find(uint64_t key) const { return hash_.Find(key); }
  // Publishes `rec` under its key in the hash index. Returns null on success,
  // or the record already there.
  Record* InsertHash(Record* rec);
  void EraseHash(Record* rec);
  // Adds / removes `rec` in every ordered index (row must be filled in).
  void InsertOrdered(Record* rec);
  void EraseOrdered(Record* rec);
  OrderedIndex* AddOrderedIndex(std::string name, OrderedIndex::KeyFn key_of);
  // Planned protocols: the lock granule of a key (its high bits, the low
  // `granule_bits` dropped; 0 = one row per granule). Set before executors run.
  uint64_t LockGranule(uint64_t key) const {
    return granule_bits_ >= 64 ? 0 : key >> granule_bits_;
  }
  void set_granule_bits(int bits) { granule_bits_ = bits; }
  int granule_bits() const { return granule_bits_; }
  // Number of present rows (quiescent use: tests, loaders).
  size_t CountPresent() const;
  // The lock granules of the present rows, sorted, without repeats
  // (quiescent use: qstore's range placement, at executor creation).
  std::vector<uint64_t> PresentGranules() const;

 private:
  const int id_;
  const std::string name_;
  const Schema schema_;
  const uint32_t row_size_;
  HashIndex hash_;
  std::vector<std::unique_ptr<OrderedIndex>> ordered_;  // fixed after load
  OrderedIndex* primary_ordered_ = nullptr;
  int granule_bits_ = 0;
};

}  // namespace engine
}  // namespace corral

#endif  // CORRAL_ENGINE_STORAGE_H_
