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
// 1e-9) go to the tied queue with the smallest State total (the "default"),
// then to the lowest queue index, so a decision is deterministic.
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
// references. No allocation after a thread's first decision (thread-local
// scratch sized by the queue count; Max keeps up to 16 weights inline).
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
  Schedule(const history::History* history, state::State* state, const Policy& policy,
           uint64_t seed, int64_t weight_cache_ns = 0);
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;

  int num_queues() const { return num_queues_; }
  void SetPolicy(const Policy& p);
  Policy policy() const;

  // The queue for a transaction with these references (and partition key, for
  // Hard Partition), without touching the State. If `scores_out` is given it
  // receives the per-queue scores (learned policies; zeros for baselines).
  QueueId Decide(absl::Span<const RefId> refs, uint64_t partition_key = 0,
                 std::vector<double>* scores_out = nullptr) const;
  // Decide, set txn.queue, and record the placement in the State.
  QueueId Place(Txn& txn);
  // As Place; *state_recorded says whether the State was updated (learned
  // policies), i.e. whether State::Unrecord undoes it.
  QueueId Place(Txn& txn, bool* state_recorded);

 private:
  static uint32_t Pack(const Policy& p);
  static Policy Unpack(uint32_t v);
  QueueId DecideWith(const Policy& p, absl::Span<const RefId> refs, uint64_t partition_key,
                     std::vector<double>* scores_out) const;
  QueueId DecideLearned(const Policy& p, absl::Span<const RefId> refs,
                        std::vector<double>* scores_out) const;
  QueueId PlaceLearned(const Policy& p, absl::Span<const RefId> refs);
  // The winner among queues whose score is within 1e-9 (relative) of the
  // top: smallest State total, then lowest index.
  int PickQueue(const double* scores) const;

  double Weight(RefId r, Weighting w, int64_t now) const;

  const history::History* const history_;
  const int64_t weight_cache_ns_;
  const uint64_t instance_;  // identifies this Schedule in thread caches
  state::State* const state_;
  const int num_queues_;
  std::atomic<uint32_t> policy_;
  mutable std::atomic<uint64_t> rng_;
};

}  // namespace scheduler
}  // namespace corral

#endif  // CORRAL_SCHEDULER_SCHEDULE_H_
