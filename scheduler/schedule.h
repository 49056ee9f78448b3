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
// Broad references (learned policies, `max_ref_share` > 0): a reference found
// in more than max_ref_share / queues of the transactions the History has
// recorded (attempts(r) * queues > max_ref_share * History::records(), once
// the History holds at least kMinRecordsForShare attempts) weighs 0: routing
// by it would pile more than a queue's fair share of the load onto one queue.
// Automatic extraction yields such references (TPC-C's `o_all_local=1` and
// `ol_number=1..5` are in every NewOrder); under Count they collect the most
// aborts simply because they are everywhere, and without this rule
// Count/Max sends every NewOrder, and with it the State of every warehouse,
// to one queue (measured: all TPC-C commits on one of 8 queues). The paper
// hand-labelled its references and never met them. 0 turns the rule off (the
// paper's scoring, as DESIGN.md's worked examples assume).
//
// Bounded load (learned policies, `max_queue_load` > 0): a queue whose State
// total exceeds max_queue_load x the mean total over all queues is not
// eligible while another queue is; the transaction goes to the best-scoring
// eligible queue (then the default rule among eligible queues). This is
// "consistent hashing with bounded loads" (Mirrokni, Thorup, Zadimoghaddam,
// SODA 2018) applied to learned affinity: a reference keeps its queue until
// that queue carries more than its share, so no set of references can starve
// the other executors. 0 = off (the paper's rule).
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
// Max over rows (`max_over_rows`, Max only): once the top-weight reference
// (the lead) holds a State row, the score of q is the largest
// weight(r) * State[r][q] over every reference with a row, i.e. the queue
// with the strongest single piece of evidence, not necessarily the lead's.
// A lead without a row still seeds one as above (its evidence is not
// compared with other references' rows, which would put it on their
// queue). Why: under canonical naming `d_id=3` spans every warehouse; it
// gathers about as many aborts as a `w_id`, and a remote payment whose
// customer sits in the same district number names it in as many statements
// as its home warehouse, so it can lead; its row (a few hundred placements,
// made while it led) then sent the payment to another warehouse's queue,
// while the home warehouse's row held thousands on the right one. Where the
// lead's row is the strongest (DESIGN.md's examples) the result is the
// paper's Max. Off in Scheduler: it favours established rows over young
// ones, and at the start of a run a warehouse whose row had 1 placement
// lost its remote transactions to another warehouse's row of hundreds; as
// the lead they were recorded there, the row moved, and two warehouses
// shared one queue for the whole run (measured: 3 of 4 TPC-C runs, 0.6x
// the throughput).
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
#include "scheduler/txn.h"
#include "state/state.h"

namespace corral {
namespace scheduler {

class Schedule {
 public:
  // `history` and `state` must outlive the Schedule; the queue count is the
  // State's.
  // `weight_cache_ns` > 0 turns on a per-thread History read cache (1024
  // direct-mapped entries per thread): a reference's counters are reused for
  // up to that many ns (a stale read, the paper's accepted trade-off; it
  // halves the table operations per decision for recurring references).
  // Regenerate() invalidates it at once. 0 (default) reads the History every
  // time.
  //
  // `state_scoring_only` (learned policies): Place records State rows only
  // for the references that can score under the current policy (History
  // weight > 0 and not broad); the others still count in the queue's State
  // total (State's `untracked`), so the default rule and the load bound see
  // every reference. A reference that starts to score gets its row from its
  // next placement on. Off by default (the paper's State, which DESIGN.md's
  // worked examples assume); scheduler::Scheduler turns it on (a TPC-C
  // NewOrder names ~60 references, of which a handful ever abort).
  //
  // While the History is frozen (experiment Phase II) its counters do not
  // change, so a cached read (weight_cache_ns > 0) is kept for as long as the
  // freeze lasts (History::epoch()). A frozen History is not read through
  // the cache unless asked: the History's lock-free table is shared by all
  // deciding threads, while the cache is 128 KiB per thread (8 workers: 1
  // MiB, missing in L2); measured in a TPC-C run, reading the table directly
  // saved ~1.9 us of CPU per decision (bench/RESULTS.md).
  Schedule(const history::History* history, state::State* state, const Policy& policy,
           uint64_t seed, int64_t weight_cache_ns = 0, double max_ref_share = 0,
           double max_queue_load = 0, bool state_scoring_only = false,
           bool lead_seeds_rows = false, bool ref_multiplicity = false,
           bool max_over_rows = false);

  // Below this many recorded attempts the broad-reference rule is not applied
  // (shares are meaningless in a History that has barely started).
  static constexpr int64_t kMinRecordsForShare = 1000;
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
  QueueId PlaceLearned(const Policy& p, const Txn& txn);
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
  WeightSummary Weights(const Policy& p, absl::Span<const RefId> refs,
                        absl::Span<const uint16_t> mult, double* w) const;
  // Scores from weights (as Weights gives them) and State rows. `lead` is
  // the top-weight reference (Max over rows: see the header).
  void Score(const Policy& p, absl::Span<const RefId> refs, const double* w, double best,
             size_t lead, double* scores) const;
  // Max over rows applies: Max, the option on, and the lead holds a row.
  bool MaxOverRows(const Policy& p, absl::Span<const RefId> refs, const WeightSummary& ws) const;
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
    int64_t records = 0;     // History::records() (broad rule)
  };
  ReadMode ReadModeNow() const;
  double Weight(RefId r, Weighting w, const ReadMode& m) const;
  // weight of counts that the History holds (0 when broad).
  double WeightOf(const history::History::Counts& c, Weighting w, const ReadMode& m) const;
  // The per-thread cached History counters of `r`.
  bool CachedCounts(RefId r, const ReadMode& m, history::History::Counts* out) const;

  const history::History* const history_;
  const int64_t weight_cache_ns_;
  const double max_ref_share_;
  const double max_queue_load_;
  const bool state_scoring_only_;
  const bool lead_seeds_rows_;
  const bool ref_multiplicity_;
  const bool max_over_rows_;
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
