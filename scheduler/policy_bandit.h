// PolicyBandit: `--policy=auto`'s choice among candidate policies (arms) by
// measured committed throughput, a discounted-UCB bandit over short windows.
//
// The caller runs the current arm for one window, feeds the window's reward
// (commits per second) to Update(), and runs the arm it returns next. Each
// arm keeps discounted sums (every window multiplies all of them by
// `discount`, so old windows fade and the choice follows a shifting
// workload): n_i (windows played) and s_i (reward). The next arm is an arm
// never played, else the argmax of
//   s_i / n_i / best_mean + explore * sqrt(2 ln(sum n) / n_i)
// (rewards normalized by the best mean, so `explore` does not depend on the
// throughput's scale), with the current arm's score raised by `switch_margin`
// (a switch has a cost of its own). A change detector makes a shift visible
// quickly: `shift_windows` windows in a row, whichever arms played them, whose
// rewards differ from their arms' means before them by more than `change`
// (relative, on average), in the same direction, are a shift (in a row: one
// noisy window on a shared machine is not; an average: one quieter window among
// them does not hide it); so are as many windows in a row, given their abort
// rates, each off its arm's mean abort rate by `abort_change` (relative) and
// `abort_min_abs`, in one direction (random routing's throughput barely moves
// when a hot spot ends; its abort rate does). Only arms whose means rest on
// `streak_min_windows` count. On a shift the current arm keeps only its windows
// in it, every other arm's past is dropped and each is tried again (in arm
// order) before the bandit chooses: an arm that lost before the shift may win
// after it, and its stale mean would keep it from ever being tried (a UCB bonus
// large enough to overcome a 30% gap takes tens of windows to grow).
//
//   PolicyBandit b({.arms = 3});
//   int arm = b.current();                  // 0 first
//   PolicyBandit::Step s = b.Update(reward_of_window);
//   if (s.switched) log(s.reason);          // "explore: arm 2 not tried yet"
//   arm = s.arm;
//
// Thread safety: thread-compatible (one controlling thread).
#ifndef CORRAL_SCHEDULER_POLICY_BANDIT_H_
#define CORRAL_SCHEDULER_POLICY_BANDIT_H_

#include <string>
#include <vector>

namespace corral {
namespace scheduler {

class PolicyBandit {
 public:
  struct Options {
    int arms = 1;
    double discount = 0.95;  // per window
    double explore = 0.03;   // UCB bonus weight (small: a mean 20% below the best is re-tried about every 40 windows)
    // The current arm's score is raised by this much (relative to the best
    // mean) when the next arm is chosen: a switch costs a transient (the
    // placement reshuffles: online TPC-C, a learned arm's first window after
    // another learned arm ran 15-20% below both), so two arms whose means
    // are within it do not trade places on every noisy window.
    double switch_margin = 0.03;
    // Relative reward change that counts as a shift. TPC-C's uniform phase
    // after a hot one moves random routing's throughput by 15-20% while
    // hard-partition's doubles: the detector must see the smaller move.
    double change = 0.12;
    int shift_windows = 3;   // deviating windows in a row that make a shift
    double streak_min_windows = 1.5;  // an arm's (discounted) windows for its windows to count in one
    // The abort rate's shift (when Update is given it): each window of the
    // streak off its arm's mean abort rate by more than this (relative) and
    // by more than abort_min_abs (absolute: 0.002 against 0.004 is noise).
    double abort_change = 0.25;
    double abort_min_abs = 0.03;
    // The reference mix's shift (when Update is given it: MixShift, a signal
    // that does not depend on the arm running): this many windows in a row
    // off the mix before them. Not gated by streak_min_windows.
    int mix_windows = 2;
  };
  struct Step {
    int arm = 0;
    bool switched = false;
    bool shifted = false;  // a shift was found in this window (every other arm's past dropped)
    std::string reason;    // why this arm (for the switch log)
  };

  explicit PolicyBandit(const Options& options);

  int current() const { return current_; }
  int arms() const { return static_cast<int>(n_.size()); }
  // The reward of the window just run on current() and, if known (>= 0), its
  // abort rate (conflict aborts per attempt) and whether its reference mix was
  // off the mix before (1), on it (0) or not judged (-1: neither extends nor
  // breaks a streak); returns the next arm.
  Step Update(double reward, double abort_rate = -1, int mix_off = -1);
  // Discounted mean reward of an arm (0 when never played).
  double Mean(int arm) const;
  double Plays(int arm) const { return n_[arm]; }
  // Discounted mean abort rate of an arm (0 when never played or not given).
  double AbortMean(int arm) const;

 private:
  const Options options_;
  std::vector<double> n_, s_;
  std::vector<bool> played_;       // since the last shift
  std::vector<bool> ever_played_;  // for the log
  int current_ = 0;
  // Windows in a row (any arms) whose values (rewards, or abort rates), as
  // ratios to their arms' means before the streak (ref, per arm, 0 = not in
  // it), are off 1 by more than the signal's change, in direction `dir`;
  // per arm, its windows in the streak and their rewards and abort rates.
  struct Streak {
    int n = 0;
    int dir = 0;
    double ratio_sum = 0;
    std::vector<double> ref, arm_n, arm_s, arm_a;
    void Clear();
  };
  // Feeds one window of arm `cur` (its `value`, the arm's `mean` of it, the
  // window's reward and abort rate) to *st; true when the streak makes a
  // shift.
  bool Observe(Streak* st, int cur, double value, double mean, double reward, double abort_rate,
               double change, double min_abs) const;
  Streak reward_streak_, abort_streak_, mix_streak_;
  std::vector<double> a_;  // discounted abort-rate sums (with n_)
};

}  // namespace scheduler
}  // namespace corral

#endif  // CORRAL_SCHEDULER_POLICY_BANDIT_H_
