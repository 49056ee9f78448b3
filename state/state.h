// State: where each reference's transactions were queued, and how hot it is.
//
// For every reference the State keeps per-queue counts (incremented when a
// transaction carrying it is enqueued; historical: never decremented at
// completion), R (its arrival rate per second, exponentially smoothed over
// fixed windows of a Clock), T (the transactions seen with it) and Q (the
// queue with the largest count, lowest index on ties). Per-queue totals (the
// sum of the counts over all held references) feed the Schedule's default
// rule. The table is a libcuckoo map: Record and reads take only the key's
// bucket locks.
//
// Memory is bounded (max entries and/or max bytes). When an insert takes the
// table over the bound, one eviction pass brings it down to a low-water mark:
//   - kStable (the paper's "stable delete"): references with a low R, a
//     small T and whose Q is crowded (many entries share it) go first; the
//     `protect_per_queue` hottest entries of each queue (by R, then T) and
//     every entry whose R is at least `hot_rate_per_s` are never evicted
//     while unprotected entries remain, so hot references keep their queue
//     affinity. Only if the bound cannot be met otherwise are protected
//     entries evicted too (counted in forced_evictions()).
//   - kDirect ("direct delete", for the paper's Figure 15 comparison): the
//     oldest entries (first seen earliest) go first, hot or not; a hot
//     reference evicted this way restarts from zero and loses its affinity.
// Evicted counts are subtracted from the per-queue totals, so totals always
// equal the sum over held entries.
//
//   auto st = State::Create({.num_queues = 8}, Clock::Real()).value();
//   st->Record(txn.refs, QueueId(3));
//   uint64_t row[8];
//   if (st->ReadRow(RefId::Of("w_id=5"), row)) ...  // row[q] = State[r][q]
//   int64_t total_q3 = st->Total(QueueId(3));
//
// Hot path (Schedule::Place): RecordChosen() decides and records in one table
// operation on the deciding reference (its row is read and incremented under
// the same bucket locks), then one update per other distinct reference.
// A reference named twice in one call counts once. Per-queue counts are held
// as 32-bit values (a compact row keeps more of the table in cache) and
// saturate at 2^32 - 1; the API reads them as 64-bit.
//
// Thread safety: all methods are thread-safe. An eviction pass locks the
// whole table while it copies out the candidates' ranks (one pass at a time;
// others skip it); the chosen victims are then erased one by one under their
// own bucket locks, so records proceed during ranking and erasing.
#ifndef CORRAL_STATE_STATE_H_
#define CORRAL_STATE_STATE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/tsan_visible_mutex.h"
#include "absl/types/span.h"
#include "common/clock.h"
#include "common/ids.h"
#include "history/ref_table.h"
#include "libcuckoo/cuckoohash_map.hh"

namespace corral {
namespace state {

enum class EvictionMode { kStable, kDirect };
const char* EvictionModeName(EvictionMode m);  // "stable" / "direct"
absl::StatusOr<EvictionMode> ParseEvictionMode(absl::string_view name);

class State {
 public:
  static constexpr int kMaxQueues = 4096;

  struct Options {
    int num_queues = 8;
    // Bounds (0 = none on that axis). max_bytes is turned into an entry bound
    // with BytesPerEntry(); the tighter of the two applies.
    int64_t max_entries = 1 << 20;
    int64_t max_bytes = 0;
    EvictionMode eviction = EvictionMode::kStable;
    // An eviction pass brings the table down to this fraction of the bound.
    double evict_to = 0.8;
    // Stable delete: entries protected per queue, and the rate above which an
    // entry is always protected (0 = off).
    int protect_per_queue = 4;
    double hot_rate_per_s = 0;
    // R smoothing: arrivals are counted per window; at each window boundary
    // R = (1 - alpha) * R + alpha * (window count / window seconds).
    int64_t rate_window_ns = 1000000000;
    double rate_alpha = 0.5;
  };

  // A snapshot of one reference's entry.
  struct Info {
    std::vector<uint64_t> counts;  // per queue
    double rate_per_s = 0;         // R at the time of the read
    uint64_t total = 0;            // T
    QueueId max_queue{-1};         // Q
  };

  // A read-only view of one reference's per-queue counts, valid only inside
  // the callback that receives it. Empty (size 0) when the reference is not
  // held.
  class RowView {
   public:
    RowView() = default;
    RowView(const uint32_t* counts, int n) : counts_(counts), n_(n) {}
    bool empty() const { return n_ == 0; }
    int size() const { return n_; }
    uint64_t operator[](int q) const { return counts_[q]; }

   private:
    const uint32_t* counts_ = nullptr;
    int n_ = 0;
  };

  static absl::StatusOr<std::unique_ptr<State>> Create(const Options& options,
                                                       const Clock* clock);
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  int num_queues() const { return num_queues_; }

  // After `q` was chosen for a transaction: counts[r][q]++ and T++ for every
  // r in refs, R updated, totals[q] += refs.size(). May run an eviction pass.
  // Duplicate references in `refs` count once.
  //
  // `untracked` (all three recording calls): references of the transaction
  // that get no row (the Schedule's scoring-only mode leaves out references
  // that cannot score) but still count in totals[q], so the default rule and
  // the load bound see every reference. Untracked counts are never evicted:
  // totals = sum over held rows + untracked placements.
  void Record(absl::Span<const RefId> refs, QueueId q, int64_t untracked = 0);
  // Decide-and-record: calls `choose` once with refs[lead]'s row (empty when
  // not held) under that reference's bucket locks, then records the queue it
  // returns for every distinct reference of `refs` as Record() does. `choose`
  // must be quick and must not call back into this State (it may read
  // Total()/ReadTotals()). A returned queue outside [0, num_queues) records
  // nothing. Returns what `choose` returned. `lead` < refs.size().
  QueueId RecordChosen(absl::Span<const RefId> refs, size_t lead,
                       absl::FunctionRef<QueueId(const RowView&)> choose,
                       int64_t untracked = 0);
  // Takes back one Record(refs, q) whose placement did not happen (the run
  // queue refused the transaction): counts[r][q]--, T-- and totals[q]-- for
  // every distinct r still held with counts[r][q] > 0; Q recomputed. The
  // arrival stays in R (the reference was seen). totals[q] -= untracked.
  void Unrecord(absl::Span<const RefId> refs, QueueId q, int64_t untracked = 0);
  // Sets a reference's row outright (tests, loading tables); T = sum of the
  // row, R is left as is (0 for a new entry). Ignores the bound.
  void Set(RefId ref, absl::Span<const uint64_t> counts);

  // Copies State[ref][0..num_queues) into `row` (which must hold num_queues
  // values); false (row untouched) when the reference is not held.
  bool ReadRow(RefId ref, uint64_t* row) const;
  // Whether the reference has a row.
  bool Contains(RefId ref) const;
  bool Get(RefId ref, Info* out) const;
  int64_t Total(QueueId q) const {
    return totals_[q.value()].load(std::memory_order_relaxed);
  }
  // totals[q] for every queue into `out` (num_queues values).
  void ReadTotals(int64_t* out) const;

  // Runs one eviction pass now if the table is over `target` entries (tests,
  // admin). Returns the number of entries evicted.
  int64_t EvictTo(int64_t target);

  int64_t size() const { return entries_.load(std::memory_order_relaxed); }
  int64_t max_entries() const { return bound_; }
  int64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }
  int64_t forced_evictions() const { return forced_evictions_.load(std::memory_order_relaxed); }
  int64_t eviction_passes() const { return passes_.load(std::memory_order_relaxed); }
  // Estimated bytes per held entry (bucket slot + per-queue counts), and for
  // the whole table.
  int64_t BytesPerEntry() const;
  int64_t ApproxBytes() const;

 private:
  struct Entry {
    absl::InlinedVector<uint32_t, 8> counts;  // saturating
    uint64_t total = 0;       // T
    uint64_t seq = 0;         // first-seen order (direct delete)
    double rate = 0;          // smoothed arrivals per window, completed windows
    int64_t window = 0;       // window index of `cur`
    uint32_t cur = 0;         // arrivals in the current window
    int32_t max_queue = -1;   // Q
  };
  using Map = libcuckoo::cuckoohash_map<RefId, Entry, history::RefTableHash, std::equal_to<RefId>,
                                        std::allocator<std::pair<const RefId, Entry>>,
                                        history::kRefTableSlots>;

  State(const Options& options, const Clock* clock);
  // One arrival of e's reference on queue qi; returns 1 when counts[qi] grew
  // (0 when saturated), for the totals.
  int64_t Bump(Entry& e, int qi, int64_t window) const;
  // Records refs[i] (i != skip, first occurrences only) on qi.
  void RecordRest(absl::Span<const RefId> refs, size_t skip, int qi, int64_t window,
                  int64_t* added, bool* inserted);
  // Inserts (or bumps, if a racing thread inserted it) a reference.
  void InsertOrBump(RefId r, int qi, int64_t window, int64_t* added, bool* inserted);
  void Fold(Entry& e, int64_t window) const;
  double RateAt(const Entry& e, int64_t window) const;  // per second
  void MaybeEvict();
  int64_t EvictPass(int64_t target) ABSL_EXCLUSIVE_LOCKS_REQUIRED(evict_mu_);

  const Options options_;
  const int num_queues_;
  const Clock* const clock_;
  int64_t bound_ = 0;  // effective max entries (0 = unbounded)
  mutable Map map_;
  std::unique_ptr<std::atomic<int64_t>[]> totals_;
  double decay_[64];  // (1 - rate_alpha)^g for g empty windows
  std::atomic<int64_t> entries_{0};
  std::atomic<uint64_t> next_seq_{0};
  std::atomic<int64_t> evictions_{0};
  std::atomic<int64_t> forced_evictions_{0};
  std::atomic<int64_t> passes_{0};

  struct Candidate {
    RefId ref;
    double rate;
    uint64_t total;
    uint64_t seq;
    int32_t queue;
    bool is_protected;
    double rank;  // smaller = evicted earlier
  };
  TsanVisibleMutex evict_mu_;
  std::vector<Candidate> scratch_ ABSL_GUARDED_BY(evict_mu_);
};

}  // namespace state
}  // namespace corral

#endif  // CORRAL_STATE_STATE_H_
