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
      streak_ref_(n_.size(), 0.0),
      streak_arm_n_(n_.size(), 0.0),
      streak_arm_s_(n_.size(), 0.0) {}

void PolicyBandit::ClearStreak() {
  streak_n_ = 0;
  streak_dir_ = 0;
  streak_ratio_sum_ = 0;
  std::fill(streak_ref_.begin(), streak_ref_.end(), 0.0);
  std::fill(streak_arm_n_.begin(), streak_arm_n_.end(), 0.0);
  std::fill(streak_arm_s_.begin(), streak_arm_s_.end(), 0.0);
}

double PolicyBandit::Mean(int arm) const {
  return n_[arm] > 1e-12 ? s_[arm] / n_[arm] : 0.0;
}

PolicyBandit::Step PolicyBandit::Update(double reward) {
  const int k = arms();
  const int cur = current_;
  reward = std::max(0.0, reward);
  std::string why_shift;
  // A shift: windows in a row, whichever arms played them, whose rewards are
  // on average off their arms' means from before the streak (each arm's
  // mean held from its first window in the streak, so a mean adapting to
  // the new windows does not hide the shift, nor one noisier window among
  // them break it) by more than `change`, in one direction. Across arms:
  // the bandit explores meanwhile, and a streak that restarted with every
  // switch let a collapsed arm win on its old mean for 1.6 s of a 5 s phase
  // (measured online, TPC-C). A window of an arm whose mean rests on less
  // than `streak_min_windows` (discounted) windows neither extends nor
  // breaks the streak (a one-window mean is noise: shifts in a steady
  // uniform phase).
  if (played_[cur] && n_[cur] >= options_.streak_min_windows) {
    if (streak_ref_[cur] <= 0) streak_ref_[cur] = Mean(cur);
    const double ratio = streak_ref_[cur] > 0 ? reward / streak_ref_[cur] : 1.0;
    const auto dir_of = [this](double r) {
      return std::abs(r - 1.0) <= options_.change ? 0 : (r > 1.0 ? 1 : -1);
    };
    const int dir = dir_of((streak_ratio_sum_ + ratio) / (streak_n_ + 1));
    if (streak_n_ > 0 && dir == streak_dir_) {
      ++streak_n_;
      streak_ratio_sum_ += ratio;
    } else {
      ClearStreak();
      streak_ref_[cur] = Mean(cur);
      streak_dir_ = dir_of(reward / std::max(streak_ref_[cur], 1e-12));
      if (streak_dir_ != 0) {
        streak_n_ = 1;
        streak_ratio_sum_ = reward / streak_ref_[cur];
      }
    }
    if (streak_n_ > 0) {
      streak_arm_n_[cur] += 1;
      streak_arm_s_[cur] += reward;
    }
    if (streak_n_ >= std::max(1, options_.shift_windows)) {
      const double avg = streak_ratio_sum_ / streak_n_;
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
          n_[i] = streak_arm_n_[i] - 1;
          s_[i] = streak_arm_s_[i] - reward;
        } else {
          n_[i] = 0;
          s_[i] = 0;
          played_[i] = false;
        }
      }
      why_shift = absl::StrFormat("shift: windows at %.2fx their arms' means over %d windows; ", avg,
                                  std::max(1, options_.shift_windows));
      ClearStreak();
    }
  }
  for (int i = 0; i < k; ++i) {
    n_[i] *= options_.discount;
    s_[i] *= options_.discount;
  }
  n_[cur] += 1;
  s_[cur] += reward;
  played_[cur] = true;
  ever_played_[cur] = true;

  Step step;
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
      const double score = Mean(i) / scale + bonus;
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
