#include "policies/model/model.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <cstdio>

namespace corral {
namespace model {
namespace {

double Width(const ModelParams& p) {
  return std::max(1, std::min(p.mp_width, p.partitions));
}

// Extra wall time per MP transaction from its extra rounds (all at a
// partition: the gap is idle, the round's CPU is spent).
double ExtraRoundWall(const ModelParams& p) {
  return p.multi_round_share * std::max(0, p.rounds - 1) *
         (p.round_gap_us + p.round_cpu_us);
}
double ExtraRoundCpu(const ModelParams& p) {
  return p.multi_round_share * std::max(0, p.rounds - 1) * p.round_cpu_us;
}

// Caps a prediction by a shared CPU budget (cores > 0): partitions and the
// coordinator cannot use more than `cores` CPUs together.
double Cap(const ModelParams& p, double tput, double partition_cpu_per_txn) {
  if (p.cores <= 0) return tput;
  double cpu = partition_cpu_per_txn + p.f * (p.coordinator_us + p.mp_wait_cpu_us);
  if (cpu <= 0) return tput;
  return std::min(tput, p.cores * 1e6 / cpu);
}

// Number of SP transactions hidden in one MP transaction's idle time and
// the idle time itself (tmpI), for the given limiting time tmpL.
void Hidden(const ModelParams& p, double* tmpl, double* tmpi, double* nhidden) {
  const double w = Width(p);
  *tmpl = std::max(p.StallUs(), p.tmp_cpu_us);
  *tmpi = *tmpl - p.tmp_cpu_us;
  *tmpl += ExtraRoundWall(p);
  if (p.f <= 0) {
    *nhidden = 0;
    return;
  }
  const double per_mp = (1 - p.f) / (w * p.f);
  *nhidden = std::min(per_mp, p.tsp_spec_us > 0 ? *tmpi / p.tsp_spec_us : 0.0);
}

double SpecThroughput(const ModelParams& p, bool mp_spec) {
  const double P = p.partitions, w = Width(p), f = p.f;
  if (f <= 0) return Cap(p, P * 1e6 / p.tsp_us, p.tsp_us);
  double tmpl, tmpi, nh;
  Hidden(p, &tmpl, &tmpi, &nh);
  double period = tmpl;
  double window = nh * p.tsp_spec_us;  // work speculated behind one MP txn
  if (mp_spec) {
    period = p.tmp_cpu_us + nh * p.tsp_spec_us + ExtraRoundWall(p);
    window = tmpi;  // later MP fragments fill what SP txns leave idle
  }
  period += p.abort_rate * window;  // cascading re-execution
  const double time = w * f * period + ((1 - f) - w * f * nh) * p.tsp_us;
  const double cpu = w * f * (p.tmp_cpu_us + ExtraRoundCpu(p)) +
                     (1 - f) * p.tsp_spec_us;
  return Cap(p, P * 1e6 / time, cpu);
}

}  // namespace

const char* ModelSchemeName(ModelScheme s) {
  switch (s) {
    case ModelScheme::kBlocking: return "blocking";
    case ModelScheme::kLocalSpeculation: return "local-spec";
    case ModelScheme::kSpeculation: return "speculation";
    case ModelScheme::kLocking: return "locking";
  }
  return "?";
}

double ModelParams::StallUs() const {
  return std::max(tmp_net_us, tmp_us - tmp_cpu_us);
}

std::string ModelParams::ToString() const {
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "P=%d w=%d tsp=%.1f tspS=%.1f tmp=%.1f tmpC=%.1f tmpN=%.1f "
                "stall=%.1f l=%.3f tlock=%.1f f=%.3f abort=%.3f mr=%.3f gap=%.1f "
                "rcpu=%.1f coord=%.1f wait=%.1f",
                partitions, mp_width, tsp_us, tsp_spec_us, tmp_us, tmp_cpu_us,
                tmp_net_us, StallUs(), lock_overhead, tsp_lock_us, f, abort_rate,
                multi_round_share, round_gap_us, round_cpu_us, coordinator_us, mp_wait_cpu_us);
  return buf;
}

double BlockingThroughput(const ModelParams& p) {
  const double P = p.partitions, w = Width(p), f = p.f;
  const double tmp = p.tmp_us + ExtraRoundWall(p);
  const double time = w * f * tmp + (1 - f) * p.tsp_us;
  return Cap(p, P * 1e6 / time,
             w * f * (p.tmp_cpu_us + ExtraRoundCpu(p)) + (1 - f) * p.tsp_us);
}

double LocalSpeculationThroughput(const ModelParams& p) {
  return SpecThroughput(p, false);
}

double SpeculationThroughput(const ModelParams& p) {
  return SpecThroughput(p, true);
}

double LockingThroughput(const ModelParams& p) {
  const double P = p.partitions, w = Width(p), f = p.f;
  const double l1 = 1 + p.lock_overhead;
  const double tmpc = p.tmp_cpu_us + ExtraRoundCpu(p);
  double q = 1;
  double x = 0;
  for (int it = 0; it < (p.locking_lock_free_idle ? 50 : 1); ++it) {
    const double locked =
        p.tsp_lock_us > 0 ? p.tsp_lock_us : l1 * p.tsp_spec_us;
    const double sp = q * locked + (1 - q) * p.tsp_us;
    const double time = w * f * l1 * tmpc + (1 - f) * sp;
    x = Cap(p, P * 1e6 / time, time);
    if (!p.locking_lock_free_idle) break;
    const double tmp = p.tmp_us + ExtraRoundWall(p);
    const double qn = std::min(1.0, x * f * w / P * tmp / 1e6);
    q = 0.5 * q + 0.5 * qn;  // damped
  }
  return x;
}

double Throughput(ModelScheme s, const ModelParams& p) {
  switch (s) {
    case ModelScheme::kBlocking: return BlockingThroughput(p);
    case ModelScheme::kLocalSpeculation: return LocalSpeculationThroughput(p);
    case ModelScheme::kSpeculation: return SpeculationThroughput(p);
    case ModelScheme::kLocking: return LockingThroughput(p);
  }
  return 0;
}

double ExpectedReexecutions(ModelScheme s, const ModelParams& p) {
  if (s != ModelScheme::kLocalSpeculation && s != ModelScheme::kSpeculation) {
    return 0;
  }
  if (p.f <= 0 || p.tsp_spec_us <= 0) return 0;
  double tmpl, tmpi, nh;
  Hidden(p, &tmpl, &tmpi, &nh);
  const double window =
      s == ModelScheme::kSpeculation ? tmpi : nh * p.tsp_spec_us;
  return p.abort_rate * window / p.tsp_spec_us;
}

std::string SelectorDecision::ToString() const {
  char buf[384];
  std::snprintf(buf, sizeof(buf),
                "chosen=%s best=%s current=%s switch=%d streak=%d pred[tps]: "
                "blocking=%.0f local-spec=%.0f speculation=%.0f locking=%.0f "
                "corr=%.2f/%.2f/%.2f",
                ModelSchemeName(chosen), ModelSchemeName(best),
                ModelSchemeName(current), switch_now ? 1 : 0, streak,
                predicted[0], predicted[1], predicted[2], predicted[3],
                correction[0], correction[2], correction[3]);
  return std::string(buf) + " (" + reason + ") | " + params.ToString();
}

bool SchemeSelector::RegimeMoved(const ModelParams& p) const {
  return std::abs(p.f - explored_at_.f) > opts_.regime_f ||
         std::abs(p.abort_rate - explored_at_.abort_rate) > opts_.regime_other ||
         std::abs(p.multi_round_share - explored_at_.multi_round_share) >
             opts_.regime_other;
}

SelectorDecision SchemeSelector::Observe(const ModelParams& measured,
                                         ModelScheme current,
                                         double measured_tps) {
  SelectorDecision d;
  d.params = measured;
  d.current = current;
  const int cur_i = static_cast<int>(current);
  char buf[320];
  // An exploration in progress: record this window, run the next scheme of
  // the schedule, or (at its end) keep the measured winner.
  if (!explore_.empty()) {
    if (measured_tps > 0) {
      explore_tps_[cur_i] += measured_tps;
      explore_pred_[cur_i] += Throughput(current, measured);
      ++explore_n_[cur_i];
    }
    ++explore_pos_;
    for (int i = 0; i < kNumModelSchemes; ++i) {
      d.correction[i] = correction_[i];
      d.predicted[i] = correction_[i] * Throughput(static_cast<ModelScheme>(i), measured);
    }
    d.best = current;
    if (explore_pos_ < explore_.size()) {
      d.chosen = explore_[explore_pos_];
      d.switch_now = d.chosen != current;
      std::snprintf(buf, sizeof(buf), "explore: window %zu of %zu", explore_pos_ + 1,
                    explore_.size());
      d.reason = buf;
      return d;
    }
    double mean[kNumModelSchemes] = {0, 0, 0, 0};
    std::string summary;
    ModelScheme win = explored_.front();
    for (ModelScheme x : explored_) {
      const int i = static_cast<int>(x);
      if (explore_n_[i] > 0) {
        mean[i] = explore_tps_[i] / explore_n_[i];
        if (explore_pred_[i] > 0) correction_[i] = explore_tps_[i] / explore_pred_[i];
        d.correction[i] = correction_[i];
        d.predicted[i] = correction_[i] * Throughput(x, measured);
      }
      if (mean[i] > mean[static_cast<int>(win)]) win = x;
      char part[64];
      std::snprintf(part, sizeof(part), "%s%s %.0f", summary.empty() ? "" : " vs ",
                    ModelSchemeName(x), mean[i]);
      summary += part;
      if (x == ModelScheme::kSpeculation) {
        correction_[static_cast<int>(ModelScheme::kLocalSpeculation)] = correction_[i];
      }
    }
    d.best = win;
    d.chosen = d.best;
    d.switch_now = d.chosen != current;
    std::snprintf(buf, sizeof(buf), "explored: %s measured; keep %s", summary.c_str(),
                  ModelSchemeName(d.chosen));
    d.reason = buf;
    explore_.clear();
    hold_ = opts_.hold_windows;
    streak_ = 0;
    return d;
  }
  if (measured_tps > 0 && opts_.feedback > 0) {
    const double raw = Throughput(current, measured);
    if (raw > 0) {
      const double ratio = measured_tps / raw;
      correction_[cur_i] =
          (1 - opts_.feedback) * correction_[cur_i] + opts_.feedback * ratio;
      if (current == ModelScheme::kSpeculation) {
        correction_[static_cast<int>(ModelScheme::kLocalSpeculation)] =
            correction_[cur_i];
      }
    }
  }
  for (int i = 0; i < kNumModelSchemes; ++i) {
    d.correction[i] = correction_[i];
    d.predicted[i] =
        correction_[i] * Throughput(static_cast<ModelScheme>(i), measured);
  }
  auto considered = [&](int i) {
    return i != static_cast<int>(ModelScheme::kLocalSpeculation) || opts_.allow_local_only;
  };
  int best = static_cast<int>(current);
  for (int i = 0; i < kNumModelSchemes; ++i) {
    if (!considered(i)) continue;  // MP speculation dominates local-only in the model
    if (d.predicted[i] > d.predicted[best]) best = i;
  }
  int second = -1;
  for (int i = 0; i < kNumModelSchemes; ++i) {
    if (!considered(i) || i == best) continue;
    if (second < 0 || d.predicted[i] > d.predicted[second]) second = i;
  }
  d.best = static_cast<ModelScheme>(best);
  d.chosen = current;
  if (hold_ > 0) {
    --hold_;
    if (RegimeMoved(measured)) hold_ = 0;
  }
  // The hold only settles the explored schemes: a scheme outside them that
  // the model puts ahead still goes through the rules below.
  const bool in_set =
      std::find(explored_.begin(), explored_.end(), d.best) != explored_.end();
  if (hold_ > 0 && in_set) {
    streak_ = 0;
    d.reason = "hold: measured winner of the last exploration";
    return d;
  }
  // Close predictions: measure every scheme within explore_margin of the
  // best instead of trusting the model.
  std::vector<ModelScheme> close;
  if (opts_.explore_margin > 0 && measured_tps > 0 && d.predicted[best] > 0 &&
      (hold_ == 0 || !in_set)) {
    for (int i = 0; i < kNumModelSchemes; ++i) {
      if (considered(i) && d.predicted[i] >= (1 - opts_.explore_margin) * d.predicted[best]) {
        close.push_back(static_cast<ModelScheme>(i));
      }
    }
    // The running scheme first (no switch), then by prediction.
    std::sort(close.begin(), close.end(), [&](ModelScheme x, ModelScheme y) {
      if ((x == current) != (y == current)) return x == current;
      return d.predicted[static_cast<int>(x)] > d.predicted[static_cast<int>(y)];
    });
  }
  if (close.size() >= 2) {
    const int w = std::max(1, opts_.explore_windows);
    explore_.clear();
    for (int r = 0; r < w; ++r) {  // A B C, C B A, A B C, ... (balanced)
      if (r % 2 == 0) {
        explore_.insert(explore_.end(), close.begin(), close.end());
      } else {
        explore_.insert(explore_.end(), close.rbegin(), close.rend());
      }
    }
    explore_pos_ = 0;
    for (int i = 0; i < kNumModelSchemes; ++i) {
      explore_tps_[i] = explore_pred_[i] = 0;
      explore_n_[i] = 0;
    }
    explored_at_ = measured;
    explored_ = close;
    hold_ = 0;
    streak_ = 0;
    d.chosen = explore_[0];
    d.switch_now = d.chosen != current;
    std::string names;
    for (ModelScheme x : close) {
      char part[64];
      std::snprintf(part, sizeof(part), "%s%s %.0f", names.empty() ? "" : " vs ",
                    ModelSchemeName(x), d.predicted[static_cast<int>(x)]);
      names += part;
    }
    std::snprintf(buf, sizeof(buf), "explore: %s predicted (within %.0f%%)", names.c_str(),
                  100 * opts_.explore_margin);
    d.reason = buf;
    return d;
  }
  const double cur = d.predicted[static_cast<int>(current)];
  const double gain = cur > 0 ? d.predicted[best] / cur - 1 : 0;
  if (d.best == current || gain <= opts_.min_gain) {
    streak_ = 0;
    std::snprintf(buf, sizeof(buf), "stay: best gain %.1f%% <= %.1f%%",
                  100 * gain, 100 * opts_.min_gain);
  } else {
    if (candidate_ != d.best) streak_ = 0;
    candidate_ = d.best;
    ++streak_;
    if (streak_ >= opts_.consecutive) {
      d.chosen = d.best;
      d.switch_now = true;
      std::snprintf(buf, sizeof(buf), "switch: gain %.1f%% for %d windows",
                    100 * gain, streak_);
      streak_ = 0;
    } else {
      std::snprintf(buf, sizeof(buf), "wait: gain %.1f%%, window %d of %d",
                    100 * gain, streak_, opts_.consecutive);
    }
  }
  d.streak = streak_;
  d.reason = buf;
  return d;
}

}  // namespace model
}  // namespace corral
