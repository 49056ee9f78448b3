#include "scheduler/policy_bandit.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace corral {
namespace scheduler {

PolicyBandit::PolicyBandit(const Options& options)
    : options_(options),
      n_(static_cast<size_t>(std::max(1, options.arms)), 0.0),
      s_(n_.size(), 0.0),
      played_(n_.size(), false),
      ever_played_(n_.size(), false),
      a_(n_.size(), 0.0) {
  for (Streak* st : {&reward_streak_, &abort_streak_, &mix_streak_}) {
    st->ref.assign(n_.size(), 0.0);
    st->arm_n.assign(n_.size(), 0.0);
    st->arm_s.assign(n_.size(), 0.0);
    st->arm_a.assign(n_.size(), 0.0);
  }
}

void PolicyBandit::Streak::Clear() {
  n = 0;
  dir = 0;
  ratio_sum = 0;
  std::fill(ref.begin(), ref.end(), 0.0);
  std::fill(arm_n.begin(), arm_n.end(), 0.0);
  std::fill(arm_s.begin(), arm_s.end(), 0.0);
  std::fill(arm_a.begin(), arm_a.end(), 0.0);
}

bool PolicyBandit::Observe(Streak* st, int cur, double value, double mean, double reward,
                           double abort_rate, double change, double min_abs) const {
  if (st->ref[cur] <= 0) st->ref[cur] = mean;
  if (st->ref[cur] <= 0) return false;  // nothing to compare with
  const auto dir_of = [&](double v, double ref) {
    return std::abs(v / ref - 1.0) <= change || std::abs(v - ref) <= min_abs ? 0 : (v > ref ? 1 : -1);
  };
  const double ratio = value / st->ref[cur];
  // The streak's windows on average, as if at one reference of 1.
  const int dir = st->n > 0 ? dir_of((st->ratio_sum + ratio) / (st->n + 1), 1.0) : 0;
  if (st->n > 0 && dir == st->dir && (min_abs <= 0 || dir_of(value, st->ref[cur]) == dir)) {
    ++st->n;
    st->ratio_sum += ratio;
  } else {
    st->Clear();
    if (mean <= 0) return false;
    st->ref[cur] = mean;
    st->dir = dir_of(value, mean);
    if (st->dir != 0) {
      st->n = 1;
      st->ratio_sum = value / mean;
    }
  }
  if (st->n > 0) {
    st->arm_n[cur] += 1;
    st->arm_s[cur] += reward;
    st->arm_a[cur] += abort_rate;
  }
  return st->n >= std::max(1, options_.shift_windows);
}

double PolicyBandit::Mean(int arm) const {
  return n_[arm] > 1e-12 ? s_[arm] / n_[arm] : 0.0;
}

double PolicyBandit::AbortMean(int arm) const {
  return n_[arm] > 1e-12 ? a_[arm] / n_[arm] : 0.0;
}

PolicyBandit::Step PolicyBandit::Update(double reward, double abort_rate, int mix_off) {
  const int k = arms();
  const int cur = current_;
  reward = std::max(0.0, reward);
  const bool have_aborts = abort_rate >= 0;
  abort_rate = std::max(0.0, abort_rate);
  std::string why_shift;
  // A shift: windows in a row, whichever arms played them, whose rewards are
  // on average off their arms' means from before the streak (each arm's
  // mean held from its first window in the streak, so a mean adapting to
  // the new windows does not hide the shift, nor one noisier window among
  // them break it) by more than `change`, in one direction; or (given) whose
  // abort rates are each off their arms' mean abort rates by more than
  // `abort_change` and `abort_min_abs`, in one direction. Across arms:
  // the bandit explores meanwhile, and a streak that restarted with every
  // switch let a collapsed arm win on its old mean for 1.6 s of a 5 s phase
  // (measured online, TPC-C). The abort rate: random routing's throughput
  // moves only 15-20% when a hot phase ends, within the windows' noise, and
  // auto stayed on it for 2 s of the uniform phase after (its abort rate
  // fell from 0.35 to 0.22 at once). A window of an arm whose mean rests on
  // less than `streak_min_windows` (discounted) windows neither extends
  // nor breaks a streak (a one-window mean is noise: shifts in a steady
  // uniform phase).
  bool by_reward = false, by_aborts = false, by_mix = false;
  if (played_[cur] && n_[cur] >= options_.streak_min_windows) {
    by_reward = Observe(&reward_streak_, cur, reward, Mean(cur), reward, abort_rate, options_.change, 0);
    by_aborts = have_aborts && Observe(&abort_streak_, cur, abort_rate, AbortMean(cur), reward, abort_rate,
                                       options_.abort_change, options_.abort_min_abs);
  }
  // The reference mix: the caller's judgement of each window, whichever arm
  // ran it, so no arm's mean has to be old enough.
  if (mix_off == 0) {
    mix_streak_.Clear();
  } else if (mix_off > 0) {
    ++mix_streak_.n;
    mix_streak_.arm_n[cur] += 1;
    mix_streak_.arm_s[cur] += reward;
    mix_streak_.arm_a[cur] += abort_rate;
    by_mix = mix_streak_.n >= std::max(1, options_.mix_windows);
  }
  if (by_reward || by_aborts || by_mix) {
    const Streak& st = by_reward ? reward_streak_ : by_aborts ? abort_streak_ : mix_streak_;
    // Every arm's past is stale: the current arm keeps only its windows in
    // the streak (this one is added below), the others are tried again
    // before the bandit chooses (their windows in the streak straddled
    // the shift: measured online, TPC-C, count-max's one window in it at
    // 7k kept it from the hot phase its 14k would have won). Keeping a
    // share of the whole past kept the mean from before the shift:
    // hard-partition's uniform-phase mean (18k) outbid every arm's 13k in
    // the hot phase that had just cut it to 9k, and auto went back to it.
    for (int i = 0; i < k; ++i) {
      if (i == cur) {
        n_[i] = std::max(0.0, st.arm_n[i] - 1);
        s_[i] = std::max(0.0, st.arm_s[i] - reward);
        a_[i] = std::max(0.0, st.arm_a[i] - abort_rate);
      } else {
        n_[i] = 0;
        s_[i] = 0;
        a_[i] = 0;
        played_[i] = false;
      }
    }
    if (by_mix && !by_reward && !by_aborts) {
      why_shift = absl::StrFormat("shift: reference mix off over %d windows; ", mix_streak_.n);
    } else {
      why_shift = absl::StrFormat("shift: windows at %.2fx their arms' mean %s over %d windows; ",
                                  st.ratio_sum / st.n, by_reward ? "throughput" : "abort rate",
                                  std::max(1, options_.shift_windows));
    }
    reward_streak_.Clear();
    abort_streak_.Clear();
    mix_streak_.Clear();
  }
  for (int i = 0; i < k; ++i) {
    n_[i] *= options_.discount;
    s_[i] *= options_.discount;
    a_[i] *= options_.discount;
  }
  n_[cur] += 1;
  s_[cur] += reward;
  a_[cur] += abort_rate;
  played_[cur] = true;
  ever_played_[cur] = true;

  Step step;
  step.shifted = !why_shift.empty();
  for (int i = 0; i < k; ++i) {
    if (!played_[i]) {
      step.arm = i;
      step.reason = absl::StrFormat("%sexplore: arm %d not tried yet%s", why_shift, i,
                                    ever_played_[i] ? " since the shift" : "");
      break;
    }
  }
  if (step.reason.empty()) {
    double best_mean = 0, total = 0;
    for (int i = 0; i < k; ++i) {
      best_mean = std::max(best_mean, Mean(i));
      total += n_[i];
    }
    const double scale = best_mean > 0 ? best_mean : 1.0;
    const double log_total = std::log(std::max(total, 1.0 + 1e-9));
    int best = cur;
    double best_score = -1;
    for (int i = 0; i < k; ++i) {
      const double bonus = options_.explore * std::sqrt(2 * log_total / std::max(n_[i], 1e-3));
      const double score = Mean(i) / scale + bonus + (i == cur ? options_.switch_margin : 0.0);
      // Ties keep the current arm (no switch for nothing).
      if (score > best_score + 1e-12 || (i == cur && std::abs(score - best_score) <= 1e-12)) {
        best_score = score;
        best = i;
      }
    }
    step.arm = best;
    const bool exploit = Mean(best) >= best_mean - 1e-12;
    step.reason = absl::StrFormat("%s%s: arm %d mean %.0f (best mean %.0f, %.1f recent windows)", why_shift,
                                  exploit ? "best" : "explore", best, Mean(best), best_mean, n_[best]);
  }
  step.switched = step.arm != cur;
  current_ = step.arm;
  return step;
}

}  // namespace scheduler
}  // namespace corral
