// History: the learned conflict evidence, reference -> {aborts, commits}.
//
// Every attempt of a scheduled transaction reports its outcome here: a commit
// adds one commit to each of the transaction's references, a conflict abort
// one abort. The Schedule reads the counters to weight references (Count:
// aborts; Fraction: aborts / (aborts + commits)). The table is a RefIndex
// (history/ref_index.h: lock-free lookups, striped latches for inserts; it
// replaced libcuckoo for a measured reason, bench/RESULTS.md "Scheduler
// decisions"). Each counter is an atomic incremented in place, so an update
// is never torn or lost; a read may be slightly stale with respect to
// concurrent records, and may see a record's abort before its neighbour's
// commit count (the paper's accepted staleness). GetMany reads a whole
// transaction's references with their cache misses overlapped.
//
// Lifecycle knobs: Freeze() makes the table read-only (experiment Phase II:
// records are ignored and counted as such); Regenerate() empties it (the
// paper regenerates the History periodically to follow workload shifts and
// reclaim memory); a maximum entry count bounds memory (when full, new
// references are either not added, or the table regenerates: see OnFull).
// Aging (Options::half_life_ns > 0, history/aging.h): MaybeAge() multiplies
// every counter by 2^(-elapsed / half_life) once a period has passed on the
// injected Clock, and drops references whose counters both reach 0, so a
// hot spot that has moved stops steering transactions and references that
// stopped recurring give their memory back. Nothing ages while frozen.
// Commit admission (Options::commit_doorkeeper_log2_bits, off by default; the
// proxy turns it on): a commit adds a reference only at its second sighting,
// so references read once cost no entry.
//
//   History h(History::Options{.max_entries = 1 << 20});
//   h.Record(txn.refs, /*committed=*/false);      // a conflict abort
//   History::Counts c;
//   if (h.Get(RefId::Of("w_id=5"), &c)) use(c.aborts, c.commits);
//   double w = h.Weight(r, Weighting::kFraction);  // 0 when unknown
//   History aged(History::Options{.half_life_ns = 1000000000}, clock);
//   double f = aged.MaybeAge();  // < 1 when a pass ran (callers age the State by f)
//
// Thread safety: all methods are thread-safe. Counters are decremented only
// by aging passes (one at a time; a concurrent record is never lost).
#ifndef CORRAL_HISTORY_HISTORY_H_
#define CORRAL_HISTORY_HISTORY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "common/clock.h"
#include "common/ids.h"
#include "history/aging.h"
#include "history/doorkeeper.h"
#include "history/ref_index.h"
#include "history/ref_table.h"
#include "libcuckoo/cuckoohash_map.hh"
#include "policies/policy.h"

namespace corral {
namespace history {

class History {
 public:
  // What to do when a record meets a new reference and the table holds
  // max_entries references already.
  enum class OnFull {
    kDropNew,     // existing references keep counting; new ones are not added
    kRegenerate,  // empty the table (as Regenerate()), then add the new one
  };

  struct Options {
    // Upper bound on distinct references held (0 = unbounded). Checked with an
    // atomic counter before inserting, so under concurrent first sightings
    // the table may overshoot by at most the number of recording threads.
    int64_t max_entries = 1 << 22;
    OnFull on_full = OnFull::kDropNew;
    // Keep a display text per reference (for TopByAborts). Texts are stored
    // only when a record supplies a text provider and the reference is new.
    bool keep_texts = true;
    // Initial capacity hint (entries); the table also returns to this size
    // on Regenerate().
    int64_t initial_capacity = 1 << 12;
    // Aging half-life on the injected clock (0 = counters never decay), and
    // how often MaybeAge() runs a pass (0 = a quarter of the half-life).
    int64_t half_life_ns = 0;
    int64_t age_period_ns = 0;
    // Commit admission (history/doorkeeper.h; 0 = off, every commit counts).
    // When > 0, a commit adds a reference the table does not hold only at its
    // second sighting: the first one sets a bit in a doorkeeper of
    // 2^commit_doorkeeper_log2_bits bits (cleared every 2^bits / 8 first
    // sightings) and is not counted. Aborts, and commits of held references,
    // count as before. Count weights (aborts) are unchanged; a Fraction weight
    // misses the one unadmitted commit of a reference that later aborts. What
    // it buys: references read once and never in conflict (pgbench -S over a
    // million rows through the proxy) cost no node, text or aging visit.
    int commit_doorkeeper_log2_bits = 0;
  };

  struct Counts {
    uint64_t aborts = 0;
    uint64_t commits = 0;
  };

  // For admin displays: a reference, its counters and its text if known.
  struct TopEntry {
    RefId ref;
    Counts counts;
    std::string text;  // empty when no text was recorded
  };

  // Gives the text of a transaction's i-th reference; called at most once per
  // newly seen reference (the only allocation a record can make).
  using TextProvider = std::function<std::string(size_t i)>;

  History() : History(Options()) {}
  // `clock` (default: the real one) times aging; it must outlive the History.
  explicit History(const Options& options, const Clock* clock = nullptr);
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // Records one attempt's outcome for all of `refs`: committed -> commits++,
  // otherwise (a conflict abort) aborts++; a reference named twice counts
  // once. Ignored while frozen. `texts`, if
  // given, names refs[i] for the display table. `skip` (non-zero) is not
  // counted (the Scheduler's aborts of a transaction its lead placed).
  void Record(absl::Span<const RefId> refs, bool committed,
              const TextProvider* texts = nullptr, RefId skip = RefId(0));
  void RecordCommit(absl::Span<const RefId> refs) { Record(refs, true); }
  void RecordAbort(absl::Span<const RefId> refs) { Record(refs, false); }
  // Adds explicit amounts (tests, loading a saved table). Ignores the freeze.
  void Add(RefId ref, uint64_t aborts, uint64_t commits);
  // Sets a held reference's abort count to at most `aborts` (commits kept);
  // false when it is not held. Ignores the freeze.
  bool CapAborts(RefId ref, uint64_t aborts);

  // Current counters of `ref`; false when it is not in the table.
  bool Get(RefId ref, Counts* out) const;
  // Get for every refs[i] into out[i] / known[i], with all lookups'
  // node misses overlapped (all prefetched before any is used; call
  // PrefetchBuckets first, and overlap other tables' loads in between).
  void GetMany(absl::Span<const RefId> refs, Counts* out, bool* known) const;
  // Starts loading refs' bucket words without waiting for them.
  void PrefetchBuckets(absl::Span<const RefId> refs) const;
  // weight(ref) under `w`: Count = aborts, Fraction = aborts/(aborts+commits);
  // 0 when unknown (or no attempt recorded). Sets *known when given.
  double Weight(RefId ref, Weighting w, bool* known = nullptr) const;
  static double WeightOf(const Counts& c, Weighting w);

  // The k references with the most aborts, most first (ties: more commits
  // first, then RefId). Takes the table's locks for the scan: admin use only.
  std::vector<TopEntry> TopByAborts(size_t k) const;
  // ref's display text, "" when none was recorded.
  std::string TextOf(RefId ref) const;

  void Freeze() {
    epoch_.fetch_add(1, std::memory_order_acq_rel);
    frozen_.store(true, std::memory_order_release);
  }
  void Unfreeze() {
    frozen_.store(false, std::memory_order_release);
    epoch_.fetch_add(1, std::memory_order_acq_rel);
  }
  bool frozen() const { return frozen_.load(std::memory_order_acquire); }
  // Changes whenever counters may change outside Record while frozen: bumped
  // by Freeze, Unfreeze, Regenerate and Add (which ignores the freeze). A
  // counter read while frozen() stays exact for as long as frozen() holds
  // and epoch() is unchanged (the Schedule's read cache keeps such reads
  // indefinitely in Phase II); read epoch() before the counters. (A Record
  // that passed its frozen() check just before Freeze may still land; such
  // a straggler can go unseen by a cached read.)
  int64_t epoch() const { return epoch_.load(std::memory_order_acquire); }

  // Aging: when a pass is due on the clock (and not frozen), multiplies every
  // counter by the factor due (stochastic rounding, history/aging.h), drops
  // references left with no count, and returns the factor; else returns 1.
  // Cheap when nothing is due (a clock read and a load).
  double MaybeAge();
  // One aging pass by `factor` in (0, 1] now, whatever the clock (tests,
  // callers with their own schedule). Ignores the freeze.
  void Age(double factor);
  int64_t aging_passes() const { return aging_passes_.load(std::memory_order_relaxed); }
  int64_t half_life_ns() const { return options_.half_life_ns; }

  // Empties the table (counters and texts) and shrinks it back to its initial
  // capacity. Concurrent records and reads proceed (they briefly wait on the
  // table's locks); a record racing with it lands in the fresh table or is
  // dropped with the old one.
  void Regenerate();

  int64_t size() const { return index_.size(); }
  int64_t regenerations() const { return regenerations_.load(std::memory_order_relaxed); }
  // Records ignored because frozen, and new references not added because full.
  int64_t ignored_frozen() const { return ignored_frozen_.load(std::memory_order_relaxed); }
  int64_t dropped_full() const { return dropped_full_.load(std::memory_order_relaxed); }
  // Commits not counted because they were a reference's first sighting
  // (Options::commit_doorkeeper_log2_bits).
  int64_t unadmitted_commits() const { return doorkeeper_ != nullptr ? doorkeeper_->firsts() : 0; }
  int64_t max_entries() const { return options_.max_entries; }  // 0 = unbounded
  // Rough bytes held by the counter table (buckets and nodes, not texts).
  int64_t ApproxBytes() const;

 private:
  struct Node : RefNode {
    std::atomic<uint64_t> aborts{0};
    std::atomic<uint64_t> commits{0};
  };
  static_assert(sizeof(Node) == 32, "History node: half a cache line");
  using TextMap = libcuckoo::cuckoohash_map<RefId, std::string, RefTableHash>;

  // Records refs[i]; false when the table is full and must regenerate first
  // (OnFull::kRegenerate; the caller leaves its reader guard to do that).
  bool RecordOne(RefId ref, bool committed, const TextProvider* texts, size_t i);

  const Options options_;
  const Clock* const clock_;
  AgingClock aging_;
  RefIndex index_;
  TextMap texts_;
  std::unique_ptr<Doorkeeper> doorkeeper_;  // null: every commit is admitted
  std::atomic<bool> frozen_{false};
  std::atomic<int64_t> epoch_{0};
  std::atomic<int64_t> regenerations_{0};
  std::atomic<int64_t> ignored_frozen_{0};
  std::atomic<int64_t> dropped_full_{0};
  std::atomic<int64_t> aging_passes_{0};
  std::mutex regen_mu_;  // regenerations and aging passes, one at a time
};

}  // namespace history
}  // namespace corral

#endif  // CORRAL_HISTORY_HISTORY_H_
