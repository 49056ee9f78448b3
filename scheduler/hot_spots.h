// Hot-spot splitting: for each hot reference, how many run queues may run its
// transactions at once (k = 1: serialize on its queue, as the paper does;
// k > 1: spread over a set of k queues, accepting some conflict aborts), and
// the feedback rule that grows and shrinks k from what is measured online.
//
// SplitRule (why a measured rule and not policies/model/: that model predicts
// the throughput of partitioned execution schemes from per-transaction times
// and a multi-partition fraction; the split trade-off turns on how often k
// concurrent transactions of one reference conflict, a probability that
// depends on k, the transaction mix and the protocol, which the model does
// not have and which would itself have to be measured at every k. The rule
// below measures both sides of the trade on the current k, step by step,
// and follows the load as it moves without a fitted parameter). Per window:
//   W = excess queue wait: the mean wait on the reference's k queues minus
//       the mean wait on the other queues (what a transaction would save by
//       running elsewhere; with more clients than queues every queue has
//       some wait, which says nothing),
//   A = mean execution time of one attempt there (a retry costs one more A),
//   r = conflict aborts per commit there (expected retries per transaction).
//   grow   (k + 1) when W > (1 + r) A: a waiting transaction would finish
//          sooner on another queue even if it paid the current retries;
//          the first split only after `grow_windows` windows in a row (one
//          noisy window, or the start of a run before the State has spread
//          the references, is not a hot spot), then a step a window.
//          The step remembers r before it (r0) and, one window later, the
//          wait it saved (S = W before - W after; S then fades by
//          `saved_decay` per window, so a saving measured for a load that
//          has since moved expires).
//   shrink (k - 1) when the retries the last step added cost more than the
//          wait it saves: (r - r0) A > S, and r >= min_abort_rate.
//   else hold. When S has faded, a step that adds retries is taken back; if
//   it was still worth it, the wait it saved comes back and the next window
//   grows again (a probe every few windows, cheap when it was right).
//
// HotSpots: the table the Schedule reads on every learned decision (a few
// entries, lock-free reads): reference -> its queue set. A decision whose
// lead reference is split goes to the member of the set with the shortest
// run queue (an injected probe; without one, round-robin). The table also
// keeps, per queue, the references that most often led decisions there
// (sampled, Misra-Gries over a few counters, aged each window), from which
// the controller picks split candidates and the rebalancer the lead to move.
//
//   HotSpots hs(/*num_queues=*/8, /*max_entries=*/8);
//   hs.Set(RefId::Of("w_id=1"), {2, 5});       // w_id=1 may run on queues 2 and 5
//   QueueId q;
//   if (hs.Route(lead, &q)) ...                // q in {2, 5}, the shorter queue
//   SplitRule rule;
//   SplitState st;                                // k = 1
//   rule.Step(&st, SplitSample{.wait_ns = 900e3, .attempt_ns = 250e3, .aborts_per_commit = 0.1});  // k = 2
//
// Thread safety: SplitRule is a value (Next is const). HotSpots: Route,
// NoteLead, Leads, DominantLead, AgeLeads and Get from any thread; Set/Clear from one
// controlling thread at a time (a decision racing with Set uses the old or
// the new set).
#ifndef CORRAL_SCHEDULER_HOT_SPOTS_H_
#define CORRAL_SCHEDULER_HOT_SPOTS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "common/ids.h"

namespace corral {
namespace scheduler {

struct SplitSample {
  double wait_ns = 0;            // W (excess wait)
  double attempt_ns = 0;         // A
  double aborts_per_commit = 0;  // r
  double commits = -1;           // commits on those queues in the window (< 0: not known)
};

// One split reference's controller state.
struct SplitState {
  struct Growth {
    double r_before = 0;  // r0: retries per commit before this step
    double saved_ns = 0;  // S: wait this step saved (fading)
    double commits_before = -1;  // commits in the window before it (require_gain)
  };
  int k = 1;
  std::vector<Growth> steps;  // one per growth, last = the latest
  bool measure_saving = false;  // the window after a growth measures S
  double wait_before_ns = 0;
  int grow_streak = 0;          // windows in a row that said "grow"
  // require_gain: the last step was taken back because it added retries
  // and no commits; no growth for `hold` more windows (the next such
  // take-back holds twice as long, up to max_hold_windows).
  bool no_gain = false;
  int hold = 0;
  int next_hold = 0;
};

struct SplitRule {
  int max_k = 4;                 // at most this many queues per reference
  double min_abort_rate = 0.02;  // shrink only above this many retries per commit
  double saved_decay = 0.7;      // S fades by this per window
  int grow_windows = 2;          // "grow" must hold this many windows in a row for the first split
  // A reference is split only while it carries at least this many times one
  // queue's fair share of the window's commits: a queue that says
  // "grow" becomes a split candidate only then, and a split reference that
  // stays below it for a few windows gives its queues back. A reference
  // that fits in one queue is not split: the wait its queue shows is the
  // clients' uneven spread over the queues at that moment, and a split
  // answers it with conflicts (measured online, TPC-C uniform, 8
  // warehouses on 8 queues: warehouses split to k = 2-4 within 1.5 s, abort
  // rate 3-10% against hard-partition's 0.05%; a Zipf 0.99 warehouse
  // carries ~3x a queue's share).
  double min_load_share = 1.5;
  // A split reference whose window carried less than this many times one
  // queue's fair share fits in one queue again at once (a hot spot that
  // cooled: measured online, TPC-C, the hot warehouse back to its eighth
  // kept 4 queues for 0.7 s, 3 windows below min_load_share, at 5-7%
  // aborts). Between this and min_load_share, three windows in a row.
  double drop_load_share = 1.25;
  bool ClearlyFits(double lead_load, int64_t window_commits, int queues) const {
    const double shares = QueueShares(lead_load, window_commits, queues);
    return shares >= 0 && shares < drop_load_share;
  }
  // Whether a reference with `lead_load` transactions in a window where the
  // `queues` queues committed `window_started` is worth splitting.
  bool Candidate(double lead_load, int64_t window_started, int queues) const {
    return QueueShares(lead_load, window_started, queues) >= min_load_share;
  }
  // `lead_load` in queue shares of the window's `window_commits` (-1 when
  // the window is empty).
  static double QueueShares(double lead_load, int64_t window_commits, int queues) {
    if (window_commits <= 0 || queues <= 0) return -1;
    return lead_load * queues / static_cast<double>(window_commits);
  }
  // Throughput check (off: the engine's rule above; the proxy turns it on).
  // In a closed loop the wait a step saves can be wait moved into running
  // attempts that conflict: a hot row that every transaction updates runs
  // no faster on two backends, only with retries (measured through the
  // proxy, pgbench on one SERIALIZABLE row: split tps 1.00x of unsplit,
  // retried 32.7% against 0.1%, from the rule's take-back and regrowth
  // every few windows). With require_gain, the window after a growth also
  // compares the commits on the reference's queues with the window before
  // it: a step that raised retries per commit by at least min_abort_rate
  // and commits by less than min_gain is taken back at once (no_gain), and
  // k does not grow again for hold_windows windows, doubling at each such
  // take-back up to max_hold_windows.
  bool require_gain = false;
  double min_gain = 0.1;
  int hold_windows = 8;
  int max_hold_windows = 128;
  // Steps `st` by one window's measurements; returns the new k (st->k).
  int Step(SplitState* st, const SplitSample& s) const;
};

// Rebalancing (with splitting, learned policies): a learned State can leave
// two busy lead references on one queue and another queue nearly idle (the
// first transactions of a reference fix its queue, before the load of each is
// known; measured online on TPC-C, 8 warehouses on 8 queues: commits per
// queue 6.6k, 20, 7.8k, 15.9k, 15.7k, 7.7k, 8.0k, 7.9k, the idle queue's
// worker waiting while two queues ran two warehouses each). Per window, among
// the queues outside every split set: the busiest (hi) and the least busy
// (lo) by transactions started; when lo started below `low` x the mean and
// hi above `high` x the mean, hi's dominant lead moves to lo if it carries
// less than `max_share` of the gap (so the move evens the two instead of
// swapping them: a queue with one hot reference is split, not moved) and at
// least `min_share` of it (a light reference would not even them). A window
// makes as many moves as qualify (PlanMoves: the busiest with the least
// busy, then again on the loads the moves leave, each queue a target once
// but a source as often as it stays busy), so a start that doubled up
// warehouses on two queues, or tripled them on one, and left queues idle is
// mended in one window instead of one move per cooldown (measured online on
// TPC-C, 8 warehouses: two idle queues took until 1.2 s to fill, at 7-13k
// tps against 20k after; a tripled queue kept two until 0.8 s). Then
// `cooldown_windows` windows without a move, so the moves are measured
// before the next.
//
//   RebalanceRule rr;
//   auto [hi, lo] = rr.Pick({100, 2, 200, 100}, {true, true, true, true});  // hi = 2, lo = 1
//   if (hi >= 0 && rr.Worth(200, 2, /*lead_load=*/100)) ... move hi's lead to lo ...
//   rr.PlanMoves(started, movable, [&](int hi, int lo, int64_t est_hi, int64_t est_lo) {
//     ... move one of hi's leads to lo; return its load (< 0: none) ...
//   });
//   int i = rr.PickLead(600, 40, {{64, 350, false}, {20, 150, false}});  // 1: the lighter lead
struct RebalanceRule {
  double low = 0.5;
  double high = 1.3;
  double max_share = 0.8;
  double min_share = 0.2;
  int cooldown_windows = 2;
  // (hi, lo), or (-1, -1) when the queues are even enough. `started`: per
  // queue, transactions started in the window; `movable`: queues outside
  // every split set (others are neither source nor target).
  std::pair<int, int> Pick(const std::vector<int64_t>& started, const std::vector<bool>& movable) const;
  // One window's moves: Pick on the estimated loads (at first `started`),
  // then `move(hi, lo, est_hi, est_lo)` moves one of hi's leads to lo and
  // returns its load (transactions a window), or < 0 when none is worth
  // moving (hi then stops being a source). After a move the estimates
  // shift by the load, lo takes no second lead, and hi stays a source while
  // Pick still finds it busiest. Returns the (hi, lo) pairs moved, in order.
  std::vector<std::pair<int, int>> PlanMoves(
      const std::vector<int64_t>& started, std::vector<bool> movable,
      absl::FunctionRef<double(int hi, int lo, int64_t est_hi, int64_t est_lo)> move) const;
  // Whether moving a lead reference that started `lead_load` transactions in
  // the window from a queue with `hi` to one with `lo` evens them.
  // A lead carrying less than `min_share` of the gap would not even it.
  bool Worth(int64_t hi, int64_t lo, double lead_load) const {
    const double gap = static_cast<double>(hi - lo);
    return lead_load >= min_share * gap && lead_load < max_share * gap;
  }
  // One of hi's lead references (HotSpots::Leads, heaviest first): its
  // sampled weight, its transactions a window, whether it was moved lately.
  struct LeadCandidate {
    int64_t weight = 0;
    double load = 0;
    bool moved_lately = false;
    bool hot = false;  // a split candidate (SplitRule::Candidate): split, not moved
  };
  // The first of `leads` (heaviest first) worth moving from a queue with
  // `hi` to one with `lo`: weighed in at least `min_lead_weight` samples,
  // Worth, not moved lately (the loads shift under a reference moved again
  // soon: a hot spot forming, which splitting answers), not hot (moved, a
  // hot warehouse at the start of a hot phase doubled up with the idlest
  // queue's warehouse, split there, and was found doubled up again when
  // the phase ended). -1 when none. A
  // queue that runs one busy reference beside a lighter one moves the
  // lighter one when the busy one's move would only swap the two queues
  // (measured online, TPC-C after a hot phase: a warehouse alone would
  // have swapped, the warehouse beside it stayed doubled up for 2 s).
  int64_t min_lead_weight = 4;
  int PickLead(int64_t hi, int64_t lo, const std::vector<LeadCandidate>& leads) const;
};

class HotSpots {
 public:
  static constexpr int kMaxSet = 16;  // queues per reference at most

  HotSpots(int num_queues, int max_entries);
  HotSpots(const HotSpots&) = delete;
  HotSpots& operator=(const HotSpots&) = delete;

  // Run-queue length probe for Route (queue -> waiting transactions).
  void SetQueueLength(std::function<int64_t(int)> probe) { probe_ = std::move(probe); }

  // Sets `ref`'s queue set (at most kMaxSet queues; one queue or none
  // removes the entry). False when the table is full.
  bool Set(RefId ref, const std::vector<int>& queues);
  void Clear();
  // ref's queue set (empty when not split).
  std::vector<int> Get(RefId ref) const;
  // If `lead` is split: the member of its set with the shortest run queue
  // (ties and no probe: round-robin), true. Else false. Lock-free.
  bool Route(RefId lead, QueueId* q) const;
  bool empty() const { return active_.load(std::memory_order_acquire) == 0; }
  // ref's k now (0 when it has no entry) and whether it is split (k >= 2).
  // Lock-free, no allocation.
  int K(RefId ref) const;
  bool IsSplit(RefId ref) const { return K(ref) >= 2; }
  // The split references and their k, for displays.
  std::vector<std::pair<RefId, int>> Entries() const;
  int MaxK() const;

  // Per queue, the references leading its decisions (callers sample: a
  // call per few decisions): a Misra-Gries count over kLeadSlots counters,
  // so a queue that runs two or three busy references names each of them
  // (a majority vote names none: measured online, TPC-C, a queue running
  // three warehouses kept its vote below 4 for 2 s and was not rebalanced).
  // AgeLeads halves every count (the controller calls it once a window), so
  // a reference that stopped leading there fades.
  static constexpr int kLeadSlots = 4;
  struct Lead {
    RefId ref;
    int64_t weight = 0;
  };
  void NoteLead(int q, RefId lead);
  void AgeLeads();
  // q's leads, heaviest first; returns how many (at most kLeadSlots).
  int Leads(int q, Lead* out) const;
  // The heaviest of them (RefId(0) with weight 0 when none).
  RefId DominantLead(int q, int64_t* weight = nullptr) const;
  // How many decisions Route has placed for `ref` so far (wraps; compare
  // differences): a split reference whose decisions stopped (the hot spot
  // moved) is dropped, freeing its queues for the reference hot now.
  uint32_t Routed(RefId ref) const;

 private:
  struct alignas(64) Entry {
    std::atomic<uint64_t> ref{0};     // 0 = free
    std::atomic<uint32_t> gen{0};     // odd while being written (seqlock)
    std::atomic<int32_t> k{0};
    std::atomic<int32_t> queues[kMaxSet];
    mutable std::atomic<uint32_t> cursor{0};
  };
  static constexpr int64_t kMaxLeadWeight = 1 << 16;
  struct LeadSlot {
    std::atomic<uint64_t> ref{0};
    std::atomic<int64_t> weight{0};
  };
  struct alignas(64) LeadTable {
    LeadSlot slots[kLeadSlots];
  };

  const int num_queues_;
  const int max_entries_;
  std::unique_ptr<Entry[]> entries_;
  std::unique_ptr<LeadTable[]> leads_;
  std::atomic<int> active_{0};
  std::function<int64_t(int)> probe_;
};

}  // namespace scheduler
}  // namespace corral

#endif  // CORRAL_SCHEDULER_HOT_SPOTS_H_
