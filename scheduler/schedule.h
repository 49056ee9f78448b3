// Schedule: picks a run queue for a transaction from its references.
//
// Learned policies (DESIGN.md "Scoring"): weight(r) = aborts(r) (Count) or
// aborts(r) / (aborts(r) + commits(r)) (Fraction), read from the History
// (unknown reference: weight 0). The score of queue q is
//   Sum: sum over the transaction's references of weight(r) * State[r][q];
//   Max: weight(r*) * State[r*][q] for the single reference r* with the
//        highest weight. When several references share that highest weight
//        (DESIGN.md Table 1, Count/Max: s_quantity=6 and s_w_id=5 both 20),
//        the score of q is the largest weight(r) * State[r][q] over those
//        tied references: the result does not depend on the order of the
//        references, and equals either reference's row when, as in Table 1,
//        they share a State row (40, 20, 20). References with weight 0 never
//        score.
// The highest-scoring queue wins. If no reference scores (all weights 0, or
// no State rows) every queue ties at 0; ties (scores equal within a relative
// 1e-9) go to the tied queue with the smallest State total (the "default");
// among equal totals, to the first at or after a cursor that each placement
// advances (concurrent first decisions, which all read zero totals, spread
// instead of all taking queue 0; a fresh State fills round-robin). A single
// deciding thread's decisions are deterministic.
//
// Lead-seeded rows (`lead_seeds_rows`, with state_scoring_only): a missing
// State row of a scoring reference is created only by a transaction the
// reference leads (its weight is the top one); beside a heavier reference, a
// reference without a row stays without one (counted in the queue total
// only). New rows are seeded one at a time (a mutex taken only when the
// lead has no row): concurrent first transactions of different references
// otherwise read the same totals and pick the same queue. A new row goes to
// the queue where the fewest rows were seeded, then the smallest State
// total: at the start of a run the totals are a handful of placements each
// and say little about load (measured: a TPC-C run that began with two
// warehouses on one queue and another queue idle, 0.6x the throughput). Why: with the paper's rule the first
// transaction that names a reference fixes its queue. A remote TPC-C payment
// (home w_id=2, customer's w_id=5) goes to w_id=5's queue and, if w_id=2 had
// no row yet, gives it one there; every later w_id=2 transaction follows, and
// two warehouses share one queue for the whole run (measured: one of 8
// queues with 66 commits, another with twice the mean).
//
// Multiplicity (`ref_multiplicity`, learned policies): a reference's weight
// is multiplied by the number of the transaction's statements that name it
// (Txn::ref_mult, from the extractor), so among references of similar
// History weight the one the transaction touches most leads. Why: canonical
// naming makes a remote TPC-C payment name its home warehouse (w_id=2:
// warehouse, district and history rows, 5 statements) and its customer's
// (w_id=5: customer rows, 3-4 statements) with about the same abort count;
// Max then picked either, and the half that went to w_id=5's queue
// conflicted with w_id=2's queue on the warehouse and district rows
// (measured in bench/RESULTS.md). Off = the paper's weights (DESIGN.md's
// worked examples; each reference there is named once anyway). The History
// and the State still count a transaction once per reference.
//
// Hot-spot splitting (`hot_spots`, learned policies): when the decision's lead
// reference (top weight) has a split queue set (scheduler/hot_spots.h), the
// transaction goes to that set's member with the shortest run queue instead
// of the scored queue, and the State records it there (under reinforce_only
// the lead's row keeps its home queue; the placement counts in the total).
// One learned placement in 8 votes for its lead on its queue (HotSpots::
// NoteLead), which is how the controller finds each queue's hot reference.
//
// Baselines: Original = uniform random queue (a seeded, thread-safe
// generator: deterministic for a single deciding thread), Hard Partition =
// Txn::partition_key mod queues. Baselines ignore History and State.
//
// Place() decides and then, for learned policies, increments State[r][q]
// for every reference r (baselines leave the State alone so that a switch to
// a learned policy starts from learned placements only). A reference named
// twice in a transaction counts once (in the Sum score and in the State).
//
// Cost: one History lookup per reference (or a thread-cache hit); Max reads
// the State row of the top-weight reference(s) only, so a Max decision is
// O(references + queues); Sum adds the row of every scoring reference,
// O(references x queues) multiply-adds over dense rows (at most 20 x 64 in
// practice). Then one pass over the queues. Place with Max and a single
// top-weight reference scores inside the State update of that reference
// (State::RecordChosen: one table operation reads the row and records the
// choice), so it costs k History reads + k State updates for k distinct
// references. Before any of them, a decision prefetches all k references'
// History buckets and State buckets and nodes, then reads the History in one
// batch (History::GetMany), so the k references' cache misses overlap
// instead of queueing one behind another. No allocation after a thread's
// first decision (thread-local scratch sized by the queue and reference
// counts).
//
//   Schedule s(&history, &state, *ParsePolicy("count-max-canonical-single"), 42);
//   QueueId q = s.Place(txn);                  // decides, updates State
//   std::vector<double> scores;
//   QueueId d = s.Decide(refs, 0, &scores);    // debug: per-queue scores
//
// Thread safety: thread-safe; SetPolicy may be called at any time (a
// decision in flight uses the old or the new policy, never a mix).
#ifndef CORRAL_SCHEDULER_SCHEDULE_H_
#define CORRAL_SCHEDULER_SCHEDULE_H_

#include <atomic>
#include <mutex>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "common/ids.h"
#include "history/history.h"
#include "policies/policy.h"
#include "scheduler/hot_spots.h"
#include "scheduler/txn.h"
#include "state/state.h"

namespace corral {
namespace scheduler {

// A History read cache and the rules beyond the paper (see above), each off
// by default: all off is the paper's Schedule, which DESIGN.md's worked
// examples assume; scheduler::Scheduler turns the three rules on.
struct ScheduleOptions {
  // > 0 turns on a per-thread History read cache (1024 direct-mapped entries
  // per thread): a reference's counters are reused for up to that many ns (a
  // stale read, the paper's accepted trade-off; it halves the table
  // operations per decision for recurring references). Regenerate()
  // invalidates it at once. 0 reads the History every time.
  //
  // While the History is frozen (experiment Phase II) its counters do not
  // change, so a cached read is kept for as long as the freeze lasts
  // (History::epoch()). A frozen History is not read through the cache
  // unless asked: the History's lock-free table is shared by all deciding
  // threads, while the cache is 128 KiB per thread (8 workers: 1 MiB,
  // missing in L2); measured in a TPC-C run, reading the table directly
  // saved ~1.9 us of CPU per decision (bench/RESULTS.md).
  int64_t weight_cache_ns = 0;
  // Learned policies: Place records State rows only for the references that
  // can score under the current policy (History weight > 0); the others
  // still count in the queue's State total (State's `untracked`), so the
  // default rule sees every reference. A reference that starts to score
  // gets its row from its next placement on (a TPC-C NewOrder names ~60
  // references, of which a handful ever abort).
  bool state_scoring_only = false;
  // "Lead-seeded rows" above (with state_scoring_only).
  bool lead_seeds_rows = false;
  // "Multiplicity" above.
  bool ref_multiplicity = false;
  // "Hot-spot splitting" above (null = off). Must outlive the Schedule.
  HotSpots* hot_spots = nullptr;
  // Established lead (Max, with lead_seeds_rows; 0 = off): among the
  // references whose weight is at least this share of the top weight, the
  // one whose State row has placed the most transactions leads. Why: online,
  // with aging, weights that differ by less than ~2x swap with every burst
  // of aborts; canonical single naming then lets a reference shared by many
  // partitions (TPC-C's d_id=3 names district 3 of every warehouse, with
  // about a warehouse's arrival rate and abort count) take a share of the
  // transactions away from their warehouse's queue onto its own (measured
  // online, 8 warehouses on 8 queues, no splitting: one queue at 1.6-1.8x
  // the mean commits, led by d_id references, and 4% aborts). The
  // reference that has led its transactions all along keeps them unless a
  // rival is clearly heavier. Between rows that placed alike (within 0.8x
  // of the most), the reference the transaction names in more statements
  // leads (ref_multiplicity): a remote Payment names its home warehouse in
  // 5 statements and its customer's in 3-5, and two warehouses of a uniform
  // load place alike (not measured apart from lead-attributed aborts, below,
  // with which online TPC-C's uniform phases run at 0.1-0.3% aborts). The
  // runner turns it on in online mode.
  // (Tried and removed: keeping the top weight between two established
  // rows unless the other placed 1.5x as many. It halved the aborts of a
  // remote Payment's two warehouses in single runs, but online it also
  // kept a district reference that led early: 3 of 12 uniform cells of the
  // online spec stuck at 0.7x hard-partition with 4% aborts.)
  double established_lead_share = 0;
  // Lead-attributed aborts (learned policies; off = every reference counts
  // every conflict abort): the lead that placed a transaction says whom its
  // conflict aborts count for (Txn::placed_by, placed_split;
  // RecordConflictAbort in worker_pool.h).
  //  - A lead that placed it on its own queue is spared: it serialized the
  //    transaction with that queue, so the conflict came from another
  //    queue, evidence for the transaction's other references. Why: online,
  //    aborts feed the weights that route, and canonical single naming's
  //    d_id=3 (district 3 of every warehouse) gathered the aborts of the
  //    transactions it had itself led off their warehouses' queues until it
  //    outweighed them: in half the online TPC-C runs one queue ran 1.3x
  //    the mean at 3% aborts (0.2% in the other half); with the lead spared,
  //    0.2-0.3% in every run.
  //  - A split lead (one of its k queues) takes them alone: conflicts among
  //    its queues are the split's accepted cost, not evidence about the
  //    finer references its transactions also name (after a hot TPC-C
  //    warehouse's split its districts' d_id references, heavy with its
  //    aborts, led other warehouses' transactions off their queues for 1-2 s).
  // The runner turns it on in online mode.
  bool lead_attributed_aborts = false;

  // The three rules above on, no read cache: scheduler::Scheduler's default.
  static ScheduleOptions WithRules() {
    ScheduleOptions o;
    o.state_scoring_only = true;
    o.lead_seeds_rows = true;
    o.ref_multiplicity = true;
    return o;
  }
};

class Schedule {
 public:
  // `history` and `state` must outlive the Schedule; the queue count is the
  // State's.
  Schedule(const history::History* history, state::State* state, const Policy& policy,
           uint64_t seed, const ScheduleOptions& options = ScheduleOptions());
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;

  int num_queues() const { return num_queues_; }
  void SetPolicy(const Policy& p);
  Policy policy() const;

  // The queue for a transaction with these references (and partition key, for
  // Hard Partition), without touching the State. If `scores_out` is given it
  // receives the per-queue scores (learned policies; zeros for baselines).
  QueueId Decide(absl::Span<const RefId> refs, uint64_t partition_key = 0,
                 std::vector<double>* scores_out = nullptr,
                 absl::Span<const uint16_t> mult = {}) const;
  // Decide, set txn.queue, and record the placement in the State.
  QueueId Place(Txn& txn);
  // As Place; *state_recorded says whether the State was updated (learned
  // policies), i.e. whether Unplace undoes it.
  QueueId Place(Txn& txn, bool* state_recorded);
  // Takes back the State record of this thread's latest Place(txn) on `q`
  // (the run queue refused it): exactly what was recorded, scoring-only
  // rows and untracked totals included. For a txn this thread did not just
  // place, falls back to State::Unrecord(txn.refs, q).
  void Unplace(const Txn& txn, QueueId q);

 private:
  static uint32_t Pack(const Policy& p);
  static Policy Unpack(uint32_t v);
  QueueId DecideWith(const Policy& p, absl::Span<const RefId> refs, uint64_t partition_key,
                     std::vector<double>* scores_out, absl::Span<const uint16_t> mult) const;
  QueueId DecideLearned(const Policy& p, absl::Span<const RefId> refs,
                        std::vector<double>* scores_out, absl::Span<const uint16_t> mult) const;
  QueueId PlaceLearned(const Policy& p, Txn& txn);
  // Weights of refs into w[i] (-1 for a repeated reference); returns the
  // number of distinct references, the top weight, the first reference with
  // it and how many distinct references share it (0 when best is 0).
  struct WeightSummary {
    int64_t distinct = 0;
    double best = 0;
    size_t lead = 0;
    int tied = 0;
  };
  // With ref_multiplicity, w[i] is multiplied by mult[i] (when given).
  // `distinct`: refs holds no reference twice (no duplicate scan).
  // "Established lead" (ScheduleOptions): ws with its lead moved to the
  // candidate whose State row has placed the most transactions.
  WeightSummary Established(absl::Span<const RefId> refs, const double* w,
                            absl::Span<const uint16_t> mult, WeightSummary ws) const;
  WeightSummary Weights(const Policy& p, absl::Span<const RefId> refs,
                        absl::Span<const uint16_t> mult, double* w, bool distinct = false) const;
  // Scores from weights (as Weights gives them) and State rows.
  void Score(const Policy& p, absl::Span<const RefId> refs, const double* w, double best,
             double* scores) const;
  // The winner among queues whose score is within 1e-9 (relative) of the
  // top: smallest State total, then the tie cursor. With `seeds` (a new
  // row's queue): fewest rows seeded there first, then as before.
  // `advance`: a placement (moves the tie cursor); false for Decide().
  int PickQueue(const double* scores, bool advance, const std::atomic<int64_t>* seeds = nullptr) const;
  // Whether this Max decision seeds the lead's row (lead_seeds_rows).
  bool Seeds(const Policy& p, absl::Span<const RefId> refs, const WeightSummary& ws) const;

  // How a decision reads History counters (set once per decision).
  struct ReadMode {
    bool cached = false;     // through the per-thread cache
    bool frozen = false;     // History frozen: cached reads never expire
    int64_t now = 0;         // for cache staleness (not frozen)
    int64_t epoch = 0;       // History::epoch() (frozen)
  };
  ReadMode ReadModeNow() const;
  double Weight(RefId r, Weighting w, const ReadMode& m) const;
  // The per-thread cached History counters of `r`.
  bool CachedCounts(RefId r, const ReadMode& m, history::History::Counts* out) const;

  const history::History* const history_;
  const int64_t weight_cache_ns_;
  const bool state_scoring_only_;
  const bool lead_seeds_rows_;
  const bool ref_multiplicity_;
  const double established_lead_share_;
  const bool lead_attributed_aborts_;
  HotSpots* const hot_spots_;
  const uint64_t instance_;  // identifies this Schedule in thread caches
  state::State* const state_;
  const int num_queues_;
  std::atomic<uint32_t> policy_;
  mutable std::atomic<uint64_t> rng_;
  mutable std::atomic<uint64_t> tie_cursor_{0};  // PickQueue's equal-total ties
  std::mutex seed_mu_;  // lead_seeds_rows: new rows are seeded one at a time
  // Rows seeded on each queue (lead_seeds_rows; written under seed_mu_).
  std::unique_ptr<std::atomic<int64_t>[]> seeds_;
};

}  // namespace scheduler
}  // namespace corral

#endif  // CORRAL_SCHEDULER_SCHEDULE_H_
