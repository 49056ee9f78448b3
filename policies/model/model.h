// Analytical throughput model of the three concurrency-control schemes of a
// partitioned main-memory database (Jones, Abadi, Madden, SIGMOD 2010,
// section 6) and the execution-scheme selector that evaluates it on
// parameters measured online.
//
//   ModelParams p = ModelParams::Paper();   // Table 2 of the paper
//   p.f = 0.1;
//   double blocking = BlockingThroughput(p);      // txn/s
//   SchemeSelector sel(SelectorOptions{});
//   SelectorDecision d = sel.Observe(p, ModelScheme::kBlocking);
//   if (d.switch_now) engine->SwitchScheme(...d.chosen...);
//   std::cout << d.ToString();
//
// Base formulas (two partitions, every multi-partition (MP) transaction
// touches both, single round, no aborts; times in microseconds):
//   blocking      2 / (2 f tmp + (1 - f) tsp)
//   local spec.   tmpL = max(tmpN, tmpC), tmpI = tmpL - tmpC,
//                 Nhidden = min((1 - f) / (2 f), tmpI / tspS),
//                 2 / (2 f tmpL + ((1 - f) - 2 f Nhidden) tsp)
//   MP spec.      tperiod = tmpC + Nhidden tspS replaces tmpL
//   locking       2 / (2 f (1 + l) tmpC + (1 - f) (1 + l) tspS)
//
// The stall. The paper's Table 2 lists tmpN = 40 us (the network round trip)
// but its own simplified form ("tmpN > tmpC, so ...") uses tmp - tmpC as the
// stall: the time a partition waits for a multi-partition transaction is the
// whole of tmp that is not its CPU time (network, coordinator, 2PC messages).
// We use stall = max(tmpN, tmp - tmpC); with the paper's numbers that is
// 156 us, and tmpN alone only matters when it exceeds tmp - tmpC.
//
// Extensions (each reduces to the base formula when partitions = 2,
// mp_width = 2, abort_rate = 0, multi_round_share = 0):
//  * P partitions, an MP transaction touching w = mp_width of them: per
//    partition, N f w / P MP and N (1 - f) / P SP transactions, so
//      blocking  P / (w f tmp + (1 - f) tsp)
//      local     Nhidden = min((1 - f) / (w f), tmpI / tspS),
//                P / (w f tmpL + ((1 - f) - w f Nhidden) tsp)
//      MP spec.  tperiod replaces tmpL
//      locking   P / (w f (1 + l) tmpC + (1 - f) (1 + l) tspS)
//  * Aborts (probability a that a transaction aborts by user decision):
//    blocking and locking simply undo (no extra term). Under speculation an
//    aborted MP transaction forces the work speculated behind it at each
//    partition to be undone and re-executed (cascading). The speculated work
//    behind one MP transaction is W = Nhidden tspS for local speculation
//    and W = tmpI (the whole idle window: later MP fragments fill what SP
//    transactions leave) for MP speculation. Expected extra time per MP
//    transaction a W (added to tmpL / tperiod); expected re-executed work
//    per MP transaction a W / tspS (ExpectedReexecutions).
//  * Multi-round transactions (share m of MP transactions have R rounds,
//    R = rounds): each extra round adds a stall between rounds (round_gap:
//    response + next fragment, measured) and CPU (round_cpu). Blocking and
//    both speculation schemes cannot use the gap (speculation starts only
//    after a partition's last fragment, and our coordinator sends a later
//    round only once the transaction's earlier results are confirmed), so
//      tmp'  = tmp  + m (R - 1) (round_gap + round_cpu)
//      tmpL' = tmpL + m (R - 1) (round_gap + round_cpu)   (same for tperiod)
//    Locking overlaps the gap with other work and pays only the CPU:
//      tmpC' = tmpC + m (R - 1) round_cpu.
//  * Locking's lock-free idle path (locking_lock_free_idle, see the field).
//  * A single coordinator: if coordinator_us (CPU per MP transaction at the
//    coordinator) is known and shares a core budget `cores` with the
//    partitions (our 2-core machine), the prediction is capped by the CPU
//    budget: throughput <= cores / (f (coordinator_us + mp_wait_cpu_us) +
//    per-txn partition CPU), mp_wait_cpu_us being the partitions' CPU spent
//    waiting for and waking on messages, per MP transaction (measured: their
//    thread CPU beyond their busy wall time). With cores = 0 (the paper:
//    separate machines) there is no cap.
//  * tsp_lock_us: where the SP time under locks is measured directly it
//    replaces (1 + l) tspS.
// Selector: SchemeSelector adds hysteresis (gain > min_gain for
// `consecutive` windows), model-error feedback, and exploration of the
// runner-up when the model's two best predictions are close, keeping the
// measured winner (SelectorOptions).
#ifndef CORRAL_POLICIES_MODEL_MODEL_H_
#define CORRAL_POLICIES_MODEL_MODEL_H_

#include <string>
#include <vector>

namespace corral {
namespace model {

enum class ModelScheme { kBlocking = 0, kLocalSpeculation, kSpeculation, kLocking };
constexpr int kNumModelSchemes = 4;
const char* ModelSchemeName(ModelScheme s);

struct ModelParams {
  int partitions = 2;
  int mp_width = 2;            // partitions an MP transaction touches
  double tsp_us = 64;          // SP txn, non-speculative, no undo
  double tsp_spec_us = 73;     // SP txn with undo buffer (speculative)
  double tmp_us = 211;         // MP txn wall time at a partition incl. 2PC
  double tmp_cpu_us = 55;      // CPU of an MP txn at a partition
  double tmp_net_us = 40;      // network stall (round trip)
  double lock_overhead = 0.132;  // l: fraction of extra time under locks
  // Measured time of an SP txn under locks, (1 + l) tspS; 0: derive it.
  double tsp_lock_us = 0;
  double f = 0;                // fraction of transactions that are MP
  double abort_rate = 0;       // fraction of transactions that user-abort
  double multi_round_share = 0;  // fraction of MP txns with `rounds` rounds
  int rounds = 2;
  double round_gap_us = 0;     // idle gap between two rounds at a partition
  double round_cpu_us = 0;     // extra CPU per extra round at a partition
  double coordinator_us = 0;   // coordinator CPU per MP txn (0: unknown)
  // Partition-thread CPU outside busy periods (waiting in and waking from
  // the inbox: syscalls, context switches), summed over the partitions, per
  // MP transaction; counted in the CPU cap only (0: unknown).
  double mp_wait_cpu_us = 0;
  double cores = 0;            // shared CPU budget (0: one machine each)
  // Locking runs SP txns without locks while no MP txn is active at the
  // partition (the paper's optimization, not in its formula): with
  // q = min(1, X f w / P * tmp) the probability that one is active at
  // throughput X, SP time is q (1 + l) tspS + (1 - q) tsp (fixed point).
  bool locking_lock_free_idle = false;

  // Table 2 of the paper (two partitions, f = 0).
  static ModelParams Paper() { return ModelParams(); }
  // The stall a partition sees per MP transaction: max(tmpN, tmp - tmpC).
  double StallUs() const;
  std::string ToString() const;
};

// Predicted throughput in transactions per second.
double BlockingThroughput(const ModelParams& p);
double LocalSpeculationThroughput(const ModelParams& p);
double SpeculationThroughput(const ModelParams& p);  // MP speculation
double LockingThroughput(const ModelParams& p);
double Throughput(ModelScheme s, const ModelParams& p);
// Expected re-executions (cascading) per MP transaction under speculation.
double ExpectedReexecutions(ModelScheme s, const ModelParams& p);

struct SelectorOptions {
  double min_gain = 0.05;   // predicted gain needed to switch
  int consecutive = 2;      // windows in a row the gain must hold
  bool allow_local_only = false;  // consider local-only speculation
  // Model-error feedback: while a scheme runs, the ratio measured /
  // predicted throughput is tracked (EWMA with this weight) and multiplies
  // that scheme's later predictions (1 for a scheme never run). 0: off.
  double feedback = 0.5;
  // Exploration (only with measured_tps > 0): when other schemes' corrected
  // predictions are within explore_margin of the best one (the model cannot
  // separate them: its errors on this box are 10-30%), the selector runs
  // each of them (the running one first) for explore_windows windows in a
  // balanced order (A B, B A, A B, ... or A B C, C B A, ...), then keeps the
  // one with the highest mean measured throughput and sets their
  // corrections to measured / predicted over those windows. It then holds
  // that choice for hold_windows windows (no model-driven switch among the
  // explored schemes; a scheme outside them that the model puts ahead is
  // still switched to by the normal hysteresis, or explored if close)
  // unless the workload moves (f by more than regime_f, abort rate or
  // multi-round share by more than regime_other). 0 turns exploration off.
  double explore_margin = 0.25;
  int explore_windows = 3;
  int hold_windows = 50;
  double regime_f = 0.1;
  double regime_other = 0.05;
};

// What the selector chose and why.
struct SelectorDecision {
  ModelParams params;
  double predicted[kNumModelSchemes] = {0, 0, 0, 0};   // after correction
  double correction[kNumModelSchemes] = {1, 1, 1, 1};  // measured/model
  ModelScheme current = ModelScheme::kBlocking;
  ModelScheme best = ModelScheme::kBlocking;     // best predicted this window
  ModelScheme chosen = ModelScheme::kBlocking;   // scheme to run next
  bool switch_now = false;
  int streak = 0;
  std::string reason;
  // One line: "chosen=locking switch=1 pred: blocking=.. spec=.. ... | f=.."
  std::string ToString() const;
};

// Hysteresis around the model: switch only when the best scheme beats the
// current one by more than min_gain for `consecutive` windows in a row.
// Thread-compatible (one caller, e.g. the control loop).
class SchemeSelector {
 public:
  explicit SchemeSelector(SelectorOptions opts) : opts_(opts) {}
  // measured_tps (optional, > 0): the current scheme's throughput in the
  // window, for the model-error feedback.
  SelectorDecision Observe(const ModelParams& measured, ModelScheme current,
                           double measured_tps = 0);
  // True between the start and the end of an exploration (the scheme now
  // running is a trial, not a choice).
  bool exploring() const { return !explore_.empty(); }

 private:
  bool RegimeMoved(const ModelParams& p) const;
  SelectorOptions opts_;
  double correction_[kNumModelSchemes] = {1, 1, 1, 1};
  ModelScheme candidate_ = ModelScheme::kBlocking;
  int streak_ = 0;
  // Exploration: the schedule (scheme per window), the position reached,
  // and per scheme the sum of measured throughputs and raw predictions.
  std::vector<ModelScheme> explore_;
  size_t explore_pos_ = 0;
  double explore_tps_[kNumModelSchemes] = {0, 0, 0, 0};
  double explore_pred_[kNumModelSchemes] = {0, 0, 0, 0};
  int explore_n_[kNumModelSchemes] = {0, 0, 0, 0};
  int hold_ = 0;                 // windows left in the hold after exploring
  ModelParams explored_at_;      // the workload exploration measured
  std::vector<ModelScheme> explored_;  // the schemes of the last exploration
};

}  // namespace model
}  // namespace corral

#endif  // CORRAL_POLICIES_MODEL_MODEL_H_
