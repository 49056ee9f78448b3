// State: where each reference's transactions were queued, and how hot it is.
//
// For every reference the State keeps per-queue counts (incremented when a
// transaction carrying it is enqueued; historical: never decremented at
// completion), R (its arrival rate per second, exponentially smoothed over
// fixed windows of a Clock), T (the transactions seen with it) and Q (the
// queue with the largest count, lowest index on ties). Per-queue totals (the
// sum of the counts over all held references) feed the Schedule's default
// rule. The table is a RefIndex (history/ref_index.h; it replaced libcuckoo
// for a measured reason, bench/RESULTS.md "Scheduler decisions"): a node per
// reference holds the entry and its row, updated under the node's own spin
// latch (on the node's first line); ReadRow is lock-free (each count is read
// atomically; a row read during a concurrent record may include part of it,
// a staleness the scoring accepts).
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
// the node's latch), then one update per other distinct reference. The
// caller first Prefetch()es every reference's bucket and node lines, so their
// cache misses overlap (with each other and with the caller's History reads).
// A reference named twice in one call counts once. Per-queue counts are held
// as 32-bit values (a compact row keeps more of the table in cache) and
// saturate at 2^32 - 1; the API reads them as 64-bit.
//
// Thread safety: all methods are thread-safe. An eviction pass holds the
// index's insert latches while it copies out the candidates' ranks (one pass
// at a time; others skip it; updates of held entries go on); the chosen
// victims are then erased one by one, and their nodes reused after a grace
// period (no reader still holds them).
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
#include "history/ref_index.h"
#include "history/ref_table.h"

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
    // R = (1 - alpha) * R + alpha * (window count / window seconds), or the
    // window's count alone while R is 0 (a new reference). A read returns
    // the larger of R and the current window's pace (its count over the
    // part gone, once a quarter has gone).
    int64_t rate_window_ns = 1000000000;
    double rate_alpha = 0.5;
    // Reinforce only: a held row that is not RecordChosen's lead is counted
    // on queue q only if q is already its most-used queue Q; otherwise the
    // placement counts in totals[q] alone (as an untracked reference). A
    // reference's affinity is then built by the transactions it leads and
    // never pulled to another queue by transactions led by a heavier
    // reference (a remote TPC-C payment led by the customer's warehouse no
    // longer moves the home warehouse's young row). Unrecord does not know
    // which references were skipped and may take back a count of one of
    // them (only after a refused Submit). Scheduler turns it on with
    // lead_seeds_rows.
    bool reinforce_only = false;
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
    RowView(const std::atomic<uint32_t>* counts, int n) : counts_(counts), n_(n) {}
    bool empty() const { return n_ == 0; }
    int size() const { return n_; }
    uint64_t operator[](int q) const { return counts_[q].load(std::memory_order_relaxed); }

   private:
    const std::atomic<uint32_t>* counts_ = nullptr;
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
  // that cannot score) but still count in totals[q], so the default rule
  // sees every reference. Untracked counts are never evicted:
  // totals = sum over held rows + untracked placements.
  // `distinct` (all three recording calls): refs holds no reference twice,
  // so the per-reference duplicate scan is skipped.
  void Record(absl::Span<const RefId> refs, QueueId q, int64_t untracked = 0, bool distinct = false);
  // Decide-and-record: calls `choose` once with refs[lead]'s row (empty when
  // not held) under that reference's bucket locks, then records the queue it
  // returns for every distinct reference of `refs` as Record() does. `choose`
  // must be quick and must not call back into this State (it may read
  // Total()/ReadTotals()). A returned queue outside [0, num_queues) records
  // nothing. Returns what `choose` returned. `lead` < refs.size().
  QueueId RecordChosen(absl::Span<const RefId> refs, size_t lead,
                       absl::FunctionRef<QueueId(const RowView&)> choose,
                       int64_t untracked = 0, bool distinct = false);
  // Takes back one Record(refs, q) whose placement did not happen (the run
  // queue refused the transaction): counts[r][q]--, T-- and totals[q]-- for
  // every distinct r still held with counts[r][q] > 0; Q recomputed. The
  // arrival stays in R (the reference was seen). totals[q] -= untracked.
  void Unrecord(absl::Span<const RefId> refs, QueueId q, int64_t untracked = 0);
  // Sets a reference's row outright (tests, loading tables); T = sum of the
  // row, R is left as is (0 for a new entry). Ignores the bound.
  void Set(RefId ref, absl::Span<const uint64_t> counts);

  // Starts loading refs' bucket words and then (waiting for those only)
  // their nodes' lines. Record / RecordChosen do not prefetch: a caller on
  // the hot path (Schedule) calls this first and overlaps the loads with its
  // History reads.
  void Prefetch(absl::Span<const RefId> refs) const;

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

  // Aging (history/aging.h; the Scheduler calls it with the History's
  // factor, so the State follows the History): every per-queue count and T
  // multiplied by `factor` in (0, 1] (stochastic rounding), Q recomputed;
  // the per-queue totals decay by the same factor (held rows exactly, the
  // untracked part as one count per queue). Rows left all zero are erased.
  // R is a rate and keeps its own smoothing.
  void Age(double factor);
  int64_t aging_passes() const { return aging_passes_.load(std::memory_order_relaxed); }

  // Runs one eviction pass now if the table is over `target` entries (tests,
  // admin). Returns the number of entries evicted.
  int64_t EvictTo(int64_t target);

  int64_t size() const { return index_.size(); }
  int64_t max_entries() const { return bound_; }
  int64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }
  int64_t forced_evictions() const { return forced_evictions_.load(std::memory_order_relaxed); }
  int64_t eviction_passes() const { return passes_.load(std::memory_order_relaxed); }
  // Estimated bytes per held entry (bucket slot + per-queue counts), and for
  // the whole table.
  int64_t BytesPerEntry() const;
  int64_t ApproxBytes() const;

 private:
  // One reference's entry: the first cache line holds the index header, the
  // latch and the scalars; the per-queue counts follow (num_queues 32-bit
  // saturating counts). Fields are atomics written under `latch` (readers
  // may read them without it).
  struct Node : history::RefNode {
    std::atomic<uint32_t> latch{0};
    std::atomic<int32_t> max_queue{-1};  // Q
    std::atomic<uint64_t> total{0};      // T
    std::atomic<uint64_t> seq{0};        // first-seen order (direct delete)
    std::atomic<double> rate{0};         // smoothed arrivals per window
    std::atomic<int64_t> window{0};      // window index of `cur`
    std::atomic<uint32_t> cur{0};        // arrivals in the current window
    std::atomic<uint16_t> dead{0};       // erased (set under latch)
    // Where in its window `window` the reference was first seen, in
    // 1/65536ths of a window; 0 once that window is folded into `rate`.
    std::atomic<uint16_t> born_frac{0};
    std::atomic<uint32_t>* counts() { return reinterpret_cast<std::atomic<uint32_t>*>(this + 1); }
    const std::atomic<uint32_t>* counts() const {
      return reinterpret_cast<const std::atomic<uint32_t>*>(this + 1);
    }
  };
  static size_t NodeBytes(int num_queues) {
    return sizeof(Node) + sizeof(std::atomic<uint32_t>) * static_cast<size_t>(num_queues);
  }

  State(const Options& options, const Clock* clock);
  static void LockNode(Node* n);
  static void UnlockNode(Node* n) { n->latch.store(0, std::memory_order_release); }
  // The live node of r, latched; null when r is not held. Inside a guard.
  Node* FindLocked(RefId r) const;
  // Constructs a fresh node's fields in the index's raw memory (zero counts,
  // the next first-seen number), before the index publishes it.
  // The rate window at one clock read: its index and how far into it
  // (1/65536ths), a new node's born_frac.
  struct WindowAt {
    int64_t index = 0;
    uint16_t frac = 0;
  };
  WindowAt Now() const;
  Node* InitNode(history::RefNode* x, WindowAt at);
  // One arrival of n's reference on queue qi (n latched or unpublished);
  // returns 1 when counts[qi] grew (0 when saturated), for the totals.
  int64_t Bump(Node* n, int qi, int64_t window) const;
  // Records refs[i] (i != skip, first occurrences only) on qi. Inside a guard.
  void RecordRest(absl::Span<const RefId> refs, size_t skip, int qi, WindowAt at,
                  int64_t* added, bool* inserted, bool distinct);
  // Inserts (or bumps, if it is held) a reference. Inside a guard.
  void InsertOrBump(RefId r, int qi, WindowAt at, int64_t* added, bool* inserted);
  // Smoothing of R: folds completed windows into rate (values, not atomics).
  // `born_frac`: the node's, for its window *win.
  void Fold(double* rate, uint32_t* cur, int64_t* win, int64_t window, uint16_t born_frac) const;
  double RateAt(const Node& n, int64_t now_ns) const;  // per second
  void MaybeEvict();
  int64_t EvictPass(int64_t target) ABSL_EXCLUSIVE_LOCKS_REQUIRED(evict_mu_);

  const Options options_;
  const int num_queues_;
  const Clock* const clock_;
  int64_t bound_ = 0;  // effective max entries (0 = unbounded)
  mutable history::RefIndex index_;
  std::unique_ptr<std::atomic<int64_t>[]> totals_;
  double decay_[64];  // (1 - rate_alpha)^g for g empty windows
  std::atomic<uint64_t> next_seq_{0};
  std::atomic<int64_t> evictions_{0};
  std::atomic<int64_t> forced_evictions_{0};
  std::atomic<int64_t> passes_{0};
  std::atomic<int64_t> aging_passes_{0};

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
