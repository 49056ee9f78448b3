// MixShift: a workload-shift signal for `--policy=auto` that does not depend
// on the policy running: how the references' shares among the transactions
// submitted move from one window to the next.
//
// The bandit's own detectors (policy_bandit.h) compare a window's throughput
// and abort rate with its arm's mean; an arm whose throughput barely moves
// across a shift, or a shift met while auto explores, leaves every other arm
// on means from the phase before (measured online, TPC-C: after the hot
// phase auto explored random routing, found it at 16k against the other
// arms' hot-phase means of 13-14k, and ran it for the whole uniform phase
// where the learned arms make 20k). Which rows the transactions touch is the
// workload's, whichever arm routes them: a hot warehouse that appears or
// ends, or a hot set of accounts that moves, changes the share of the
// sampled transactions that name its references.
//
// Per window: one in `sample_every` first attempts is sampled (all its
// references); each reference's share = sampled transactions naming it /
// sampled transactions. The window is compared with the base (an average of
// the windows since the last shift, kept for references whose share is at
// least `keep_share`) over the union of both sides' `top` references: per
// reference z^2 = d^2 / (p (1 - p) / n (1 + v)) with d the share's move, p
// their mean, n the window's samples and v the base's own variance in units
// of a window's (a move under `min_abs` counts 0). The
// window is off when the largest z^2 reaches `max_z2` (one reference's share
// moved: a hot spot appeared or ended) or their mean reaches `mean_z2` (many
// moved a little: a hot set moved). A window that is not off is folded into
// the base; an off one is not, so a shift keeps reading off until Rebase().
//
//   MixShift mix(MixShift::Options{});
//   mix.Sample(txn.refs);                        // Submit / Route, any thread
//   MixShift::Window w = mix.EndWindow();        // once per auto window
//   bandit.Update(reward, abort_rate, w.measured ? (w.off ? 1 : 0) : -1);
//   if (step.shifted) mix.Rebase();              // the last window is the base
//
// Thread safety: Sample is thread-safe; StartWindow, EndWindow and Rebase
// from one controlling thread.
#ifndef CORRAL_SCHEDULER_MIX_SHIFT_H_
#define CORRAL_SCHEDULER_MIX_SHIFT_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "common/ids.h"

namespace corral {
namespace scheduler {

class MixShift {
 public:
  struct Options {
    int sample_every = 4;      // sampled first attempts: 1 in this many
    int top = 8;               // references compared per side
    double max_z2 = 25;        // one reference off by 5 standard deviations
    double mean_z2 = 8;        // the compared references on average
    double min_abs = 0.01;     // a share move below this is noise however rare
    double base_alpha = 0.25;  // weight of a window folded into the base
    double keep_share = 0.002; // the base keeps references at least this share
    int64_t min_samples = 100; // a window with fewer is not judged
  };
  struct Window {
    bool measured = false;  // enough samples, and a base to compare with
    bool off = false;
    int64_t samples = 0;
    double max_z2 = 0, mean_z2 = 0;
    RefId ref;              // the reference of max_z2
    double share = 0, base_share = 0;
    std::string Describe() const;  // for the switch log
  };

  explicit MixShift(const Options& options);

  // Counts one first attempt's (distinct) references, one call in
  // `sample_every` of those with any (an empty list is not a sample: a
  // transaction whose references were not extracted).
  void Sample(absl::Span<const RefId> refs);
  // Drops what was sampled since the last window (a settling period).
  void StartWindow();
  // Judges the window sampled since the last StartWindow/EndWindow against
  // the base and starts the next one.
  Window EndWindow();
  // The last judged window becomes the base (after a shift).
  void Rebase();

 private:
  using Shares = absl::flat_hash_map<RefId, double, RefIdHash>;
  const Options options_;
  std::atomic<uint64_t> tick_{0};
  std::mutex mu_;
  absl::flat_hash_map<RefId, int64_t, RefIdHash> counts_;  // guarded by mu_
  int64_t samples_ = 0;                                    // guarded by mu_
  // Controlling thread only:
  Shares base_;
  bool have_base_ = false;
  // The base's variance in units of one window's: 1 for one window, then
  // (1 - a)^2 v + a^2 per window folded in (a/(2 - a) at length).
  double base_var_ = 1;
  Shares last_;  // the last window judged (its kept shares)
};

}  // namespace scheduler
}  // namespace corral

#endif  // CORRAL_SCHEDULER_MIX_SHIFT_H_
