#include "bench/runner/rounds.h"

#include <cmath>
#include <random>

#include "absl/strings/str_format.h"
#include "bench/runner/stats.h"

namespace corral {
namespace bench {

std::vector<int> RoundOrder(int cells, int round, uint64_t seed) {
  std::vector<int> order;
  for (int i = 0; i < cells; ++i) order.push_back(i);
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(round) * 0xbf58476d1ce4e5b9ULL + 1);
  for (int i = cells - 1; i > 0; --i) {
    // Unbiased enough for a few hundred cells: 64-bit draw modulo i + 1.
    const int j = static_cast<int>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

RatioCi PairedLogRatioCi(const std::vector<double>& num, const std::vector<double>& den) {
  std::vector<double> logs;
  for (size_t i = 0; i < num.size() && i < den.size(); ++i) {
    if (num[i] > 0 && den[i] > 0) logs.push_back(std::log(num[i] / den[i]));
  }
  RatioCi r;
  MeanCi m = ComputeMeanCi(logs);
  r.n = m.n;
  if (r.n == 0) return r;
  r.log_mean = m.mean;
  r.log_half_width = m.half_width;
  r.estimate = std::exp(m.mean);
  r.lo = std::exp(m.mean - m.half_width);
  r.hi = std::exp(m.mean + m.half_width);
  return r;
}

bool WithinTarget(const RatioCi& ci, double target) {
  return ci.has_interval() && std::exp(ci.log_half_width) - 1.0 <= target;
}

namespace {
// Two decimals, or three significant digits below 0.1 (abort-rate ratios).
std::string Num(double x) { return x >= 0.095 ? absl::StrFormat("%.2f", x) : absl::StrFormat("%.3g", x); }
}  // namespace

std::string VerdictLine(const std::string& what, const RatioCi& ci, const std::string& vs) {
  if (ci.n == 0) return absl::StrFormat("%s %s: no paired rounds", what, vs);
  if (!ci.has_interval()) {
    return absl::StrFormat("%s %s: cannot tell, 1 paired round gives no interval (that round: x%s)", what, vs,
                           Num(ci.estimate));
  }
  if (ci.includes_one()) {
    return absl::StrFormat("%s: no measurable difference %s (x%s, 95%% interval [%s, %s] includes 1, %d rounds)",
                           what, vs, Num(ci.estimate), Num(ci.lo), Num(ci.hi), ci.n);
  }
  return absl::StrFormat("%s x%s [%s, %s] %s (%d rounds)", what, Num(ci.estimate), Num(ci.lo), Num(ci.hi), vs, ci.n);
}

double SmoothedAbortRate(uint64_t conflict_aborts, uint64_t commits) {
  return (static_cast<double>(conflict_aborts) + 0.5) / (static_cast<double>(conflict_aborts + commits) + 1.0);
}

}  // namespace bench
}  // namespace corral
