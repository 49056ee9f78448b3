#include "bench/runner/stats.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace corral {
namespace bench {

double StudentT975(int df) {
  static const double kTable[] = {0,      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                  2.306,  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                  2.120,  2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                  2.064,  2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return 0;
  if (df <= 30) return kTable[df];
  if (df <= 40) return 2.021;
  if (df <= 60) return 2.000;
  if (df <= 120) return 1.980;
  return 1.960;
}

MeanCi ComputeMeanCi(const std::vector<double>& xs) {
  MeanCi r;
  r.n = static_cast<int>(xs.size());
  if (xs.empty()) return r;
  double sum = 0;
  for (double x : xs) sum += x;
  r.mean = sum / r.n;
  if (r.n < 2) return r;
  double ss = 0;
  for (double x : xs) ss += (x - r.mean) * (x - r.mean);
  r.stddev = std::sqrt(ss / (r.n - 1));
  r.half_width = StudentT975(r.n - 1) * r.stddev / std::sqrt(static_cast<double>(r.n));
  return r;
}

absl::StatusOr<FactorialResult> Factorial2k(const std::vector<std::string>& factors,
                                            const std::vector<double>& responses) {
  const int k = static_cast<int>(factors.size());
  if (k < 1 || k > 10) return absl::InvalidArgumentError(absl::StrCat("2^k design: k=", k, " not in 1..10"));
  const size_t cells = size_t{1} << k;
  if (responses.size() != cells) {
    return absl::InvalidArgumentError(absl::StrCat("2^k design with k=", k, " needs ", cells,
                                                   " responses, got ", responses.size()));
  }
  FactorialResult r;
  double sum = 0;
  for (double y : responses) sum += y;
  r.q0 = sum / cells;
  bool long_names = false;
  for (const auto& f : factors) long_names |= f.size() > 1;
  // Column `mask` of the sign table: product of the signs of the factors in
  // mask; ordered by mask value (A=1, B=2, AB=3, C=4, ...).
  for (size_t mask = 1; mask < cells; ++mask) {
    Effect e;
    double acc = 0;
    for (size_t cell = 0; cell < cells; ++cell) {
      int sign = 1;
      for (int i = 0; i < k; ++i) {
        if ((mask >> i) & 1) sign *= ((cell >> i) & 1) ? 1 : -1;
      }
      acc += sign * responses[cell];
    }
    e.q = acc / cells;
    for (int i = 0; i < k; ++i) {
      if ((mask >> i) & 1) {
        e.factors.push_back(i);
        if (!e.name.empty() && long_names) e.name += "*";
        e.name += factors[i];
      }
    }
    r.sst += cells * e.q * e.q;
    r.effects.push_back(std::move(e));
  }
  for (auto& e : r.effects) e.share = r.sst > 0 ? cells * e.q * e.q / r.sst : 0;
  return r;
}

}  // namespace bench
}  // namespace corral
