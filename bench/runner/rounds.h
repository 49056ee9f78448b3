// The statistics of an interleaved experiment, apart from running anything:
// the order cells run in each round, paired per-round ratios with their 95%
// confidence interval, the stopping rule, and the verdict wording.
//
// Interleaving. Every cell's repetition r runs before any cell's r + 1 (a
// "round"), in an order shuffled per round by a seeded RNG: a slow minute of
// the machine lands on every policy alike instead of on whichever cell ran
// then, and a reader can replay the order from the seed.
//
// Paired ratios. In round r the learned cell and its baseline ran minutes
// apart under the same machine conditions, so x_r = learned_r / baseline_r
// cancels what the round did to both. The interval is a Student-t interval
// over the per-round log-ratios, y_r = ln(x_r), mapped back with exp:
//   m = mean(y), s = sd(y), h = t(0.975, n-1) * s / sqrt(n)
//   estimate = exp(m) (the geometric mean ratio), interval [exp(m-h), exp(m+h)].
// Why logs: a ratio's noise is multiplicative (a disturbance scales
// throughput), x1.25 and x0.8 are the same distance from 1 in logs, and the
// interval cannot cross 0; t over raw ratios would be skewed by a single
// fast round. The interval is within +-p of the estimate when exp(h) - 1 <= p
// (then also 1 - exp(-h) <= p).
//
//   std::vector<int> order = RoundOrder(6, /*round=*/2, /*seed=*/1);  // a permutation of 0..5
//   RatioCi ci = PairedLogRatioCi({1200, 1100, 1320}, {1000, 1000, 1100});
//   if (!WithinTarget(ci, 0.05)) { /* run another round */ }
//   std::string line = VerdictLine("tps", ci, "vs original");  // "tps x1.17 [1.03, 1.32] vs original (3 rounds)"
//
// Thread-safety: pure functions.
#ifndef CORRAL_BENCH_RUNNER_ROUNDS_H_
#define CORRAL_BENCH_RUNNER_ROUNDS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace corral {
namespace bench {

// The order the cells 0..cells-1 run in round `round` (1-based): a
// Fisher-Yates shuffle driven by a std::mt19937_64 seeded from (seed, round),
// so the same (cells, round, seed) always gives the same order on every
// platform.
std::vector<int> RoundOrder(int cells, int round, uint64_t seed);

struct RatioCi {
  int n = 0;              // pairs used (both values > 0)
  double estimate = 0;    // exp(mean log-ratio); 0 when n == 0
  double lo = 0, hi = 0;  // 95% interval; = estimate when n < 2
  double log_mean = 0, log_half_width = 0;
  bool has_interval() const { return n >= 2; }
  bool includes_one() const { return has_interval() && lo <= 1.0 && hi >= 1.0; }
};

// num[r] / den[r] per round r (same length; pairs with a value <= 0 are
// skipped).
RatioCi PairedLogRatioCi(const std::vector<double>& num, const std::vector<double>& den);

// True when the interval is within +-target (relative) of the estimate.
bool WithinTarget(const RatioCi& ci, double target);

// One verdict: "tps x1.25 [1.18, 1.32] vs original" when the interval
// excludes 1; "tps: no measurable difference vs original (x0.99, 95%
// interval [0.93, 1.05] includes 1)" when it includes 1; "tps vs original:
// cannot tell, 1 paired round gives no interval (that round: x1.25)" with one
// round.
std::string VerdictLine(const std::string& what, const RatioCi& ci, const std::string& vs);

// Abort rate smoothed by half a transaction on each side ((aborts + 0.5) /
// (attempts + 1)), so a round with no aborts still gives a finite log-ratio.
double SmoothedAbortRate(uint64_t conflict_aborts, uint64_t commits);

}  // namespace bench
}  // namespace corral

#endif  // CORRAL_BENCH_RUNNER_ROUNDS_H_
