// Statistics for experiments: mean with a Student-t 95% confidence interval
// over repetitions, and the 2^k factorial sign-table analysis (Jain, "The Art
// of Computer Systems Performance Analysis", ch. 17-18) on one mean response
// per cell.
//
//   MeanCi ci = ComputeMeanCi({1.0, 2.0, 3.0});   // mean 2, half-width 2.48
//   // 2^2 design, responses in standard order (A fastest): (-,-) (+,-) (-,+) (+,+)
//   auto fx = Factorial2k({"A", "B"}, {15, 45, 25, 75}).value();
//   // fx.q0 = 40; fx.effects: A 20 (76%), B 10 (19%), AB 5 (5%)
//
// Thread-safety: pure functions.
#ifndef CORRAL_BENCH_RUNNER_STATS_H_
#define CORRAL_BENCH_RUNNER_STATS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace corral {
namespace bench {

struct MeanCi {
  double mean = 0;
  double half_width = 0;  // 95% two-sided; 0 when n < 2
  double stddev = 0;      // sample standard deviation
  int n = 0;
};

// Two-sided 95% Student-t quantile t(0.975, df); df >= 1.
double StudentT975(int df);
MeanCi ComputeMeanCi(const std::vector<double>& xs);

struct Effect {
  std::string name;  // "A", "AB", ... (factor names joined by '*' when longer than one letter)
  std::vector<int> factors;  // indices of the factors in the interaction
  double q = 0;      // effect (half the difference between + and - levels)
  double share = 0;  // fraction of the variation explained (SS / SST), 0 when SST = 0
};

struct FactorialResult {
  double q0 = 0;               // grand mean
  double sst = 0;              // total variation, 2^k * sum(q_i^2)
  std::vector<Effect> effects; // 2^k - 1 effects, in sign-table column order (A, B, AB, C, AC, ...)
};

// `factors` (k names) and `responses` (2^k values in standard order: cell
// index bit i set = factor i at its + level). InvalidArgument on a size
// mismatch or k outside 1..10.
absl::StatusOr<FactorialResult> Factorial2k(const std::vector<std::string>& factors,
                                            const std::vector<double>& responses);

}  // namespace bench
}  // namespace corral

#endif  // CORRAL_BENCH_RUNNER_STATS_H_
