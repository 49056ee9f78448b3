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
      ever_played_(n_.size(), false) {}

double PolicyBandit::Mean(int arm) const {
  return n_[arm] > 1e-12 ? s_[arm] / n_[arm] : 0.0;
}

PolicyBandit::Step PolicyBandit::Update(double reward) {
  const int k = arms();
  const int cur = current_;
  reward = std::max(0.0, reward);
  std::string why_shift;
  if (!played_[cur] || n_[cur] <= 0.5) streak_n_ = 0;
  // A shift: the windows since the streak began are, on average, far from
  // what the arm gave before it (its mean then, held while the streak runs,
  // so the mean adapting to the new windows does not hide the shift, nor
  // one noisier window among them break it).
  if (played_[cur] && n_[cur] > 0.5) {
    const auto dir_of = [this](double r, double m) {
      return m <= 0 || std::abs(r - m) <= options_.change * m ? 0 : (r > m ? 1 : -1);
    };
    if (streak_n_ > 0) {
      const double avg = (streak_sum_ + reward) / (streak_n_ + 1);
      if (dir_of(avg, streak_ref_) == streak_dir_) {
        ++streak_n_;
        streak_sum_ += reward;
      } else {
        streak_n_ = 0;
      }
    }
    if (streak_n_ == 0) {
      const double m = Mean(cur);
      streak_dir_ = dir_of(reward, m);
      if (streak_dir_ != 0) {
        streak_n_ = 1;
        streak_sum_ = reward;
        streak_ref_ = m;
      }
    }
    if (streak_n_ >= std::max(1, options_.shift_windows)) {
      const double m = streak_ref_;
      const double avg = streak_sum_ / streak_n_;
      streak_n_ = 0;
      // Every arm's past is stale: the others are tried again before the
      // bandit chooses; the current one keeps a little of its recent past.
      for (int i = 0; i < k; ++i) {
        if (i == cur) {
          n_[i] *= options_.forget;
          s_[i] *= options_.forget;
        } else {
          n_[i] = 0;
          s_[i] = 0;
          played_[i] = false;
        }
      }
      why_shift = absl::StrFormat("shift: %.0f over %d windows vs mean %.0f; ", avg,
                                  std::max(1, options_.shift_windows), m);
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
  if (step.switched) streak_n_ = 0;
  current_ = step.arm;
  return step;
}

}  // namespace scheduler
}  // namespace corral
