#include "bench/workloads/workload.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"

namespace corral {
namespace workloads {
namespace {

uint64_t SplitMix(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

double Zeta(uint64_t n, double theta) {
  double sum = 0;
  for (uint64_t i = 1; i <= n; ++i) sum += 1.0 / std::pow(static_cast<double>(i), theta);
  return sum;
}

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = SplitMix(&x);
}

uint64_t Rng::Next() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

int64_t Rng::Uniform(int64_t lo, int64_t hi) {
  const uint64_t range = static_cast<uint64_t>(hi - lo) + 1;
  if (range == 0) return static_cast<int64_t>(Next());  // full 64-bit range
  // Lemire's multiply-shift; the tiny bias is irrelevant for workloads.
  const unsigned __int128 m = static_cast<unsigned __int128>(Next()) * range;
  return lo + static_cast<int64_t>(static_cast<uint64_t>(m >> 64));
}

Zipf::Zipf(uint64_t n, double theta) : n_(n < 1 ? 1 : n), theta_(theta) {
  if (theta_ < 0) theta_ = 0;
  if (theta_ > 0.999) theta_ = 0.999;  // the formula needs theta != 1
  alpha_ = 1.0 / (1.0 - theta_);
  zetan_ = Zeta(n_, theta_);
  const double zeta2 = Zeta(2, theta_);
  eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n_), 1.0 - theta_)) / (1.0 - zeta2 / zetan_);
  half_pow_theta_ = 1.0 + std::pow(0.5, theta_);
}

uint64_t Zipf::Draw(Rng& rng) const {
  if (theta_ == 0) return static_cast<uint64_t>(rng.Uniform(0, static_cast<int64_t>(n_) - 1));
  const double u = rng.Double();
  const double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < half_pow_theta_) return n_ > 1 ? 1 : 0;
  uint64_t v = static_cast<uint64_t>(static_cast<double>(n_) *
                                     std::pow(eta_ * u - eta_ + 1.0, alpha_));
  return v >= n_ ? n_ - 1 : v;
}

SqlParam SqlParam::Num(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    return Int(static_cast<int64_t>(v));
  }
  SqlParam p;
  AppendDecimal(v, &p.text);  // the text the bound path renders too
  return p;
}

void AppendSqlStatements(const BoundSql& bound, std::vector<SqlStatement>* out) {
  for (const BoundSql::Statement& b : bound.statements()) {
    SqlStatement& s = b.owned ? out->emplace_back(std::string(b.tmpl)) : out->emplace_back(b.tmpl);
    for (const BoundValue& v : bound.params(b)) {
      switch (v.kind()) {
        case BoundValue::Kind::kNull:
          s.Null();
          break;
        case BoundValue::Kind::kInt:
          s.Int(v.int_value());
          break;
        case BoundValue::Kind::kNum:
          s.Num(v.num_value());
          break;
        case BoundValue::Kind::kText:
          s.Str(v.text());
          break;
      }
    }
  }
}

void WorkloadTxn::AppendSql(std::vector<SqlStatement>* out) const {
  BoundSql bound;
  AppendBound(&bound);
  AppendSqlStatements(bound, out);
}

std::string SqlStatement::Literal() const {
  const absl::string_view tmpl = this->tmpl;
  std::string out;
  out.reserve(tmpl.size() + 16 * params.size());
  for (size_t i = 0; i < tmpl.size();) {
    const char c = tmpl[i];
    if (c == '\'') {  // copy a quoted literal of the template untouched
      size_t j = i + 1;
      while (j < tmpl.size() && tmpl[j] != '\'') ++j;
      out.append(tmpl.data() + i, std::min(j + 1, tmpl.size()) - i);
      i = j + 1;
      continue;
    }
    if (c == '$' && i + 1 < tmpl.size() && tmpl[i + 1] >= '0' && tmpl[i + 1] <= '9') {
      size_t j = i + 1;
      int n = 0;
      while (j < tmpl.size() && tmpl[j] >= '0' && tmpl[j] <= '9') n = n * 10 + (tmpl[j++] - '0');
      if (n >= 1 && static_cast<size_t>(n) <= params.size()) {
        const SqlParam& p = params[n - 1];
        if (p.is_null) {
          out += "NULL";
        } else if (p.is_string) {
          out += '\'';
          for (char ch : p.text) {
            if (ch == '\'') out += '\'';
            out += ch;
          }
          out += '\'';
        } else {
          const absl::string_view v = p.value();
          out.append(v.data(), v.size());
        }
      } else {
        out.append(tmpl.data() + i, j - i);
      }
      i = j;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

void Workload::SetPhaseSchedule(std::vector<SkewPhase> phases, const Clock* clock) {
  phases_ = std::move(phases);
  clock_ = clock;
  phase_end_ns_.clear();
  int64_t t = 0;
  for (const SkewPhase& p : phases_) {
    t += static_cast<int64_t>(p.duration_s * 1e9);
    phase_end_ns_.push_back(t);
  }
  start_ns_ = clock_ != nullptr ? clock_->NowNanos() : 0;
  explicit_phase_.store(0, std::memory_order_relaxed);
  OnPhases();
}

int Workload::phase() const {
  if (phases_.empty()) return -1;
  const int last = static_cast<int>(phases_.size()) - 1;
  if (clock_ == nullptr) {
    int i = explicit_phase_.load(std::memory_order_relaxed);
    return i < 0 ? 0 : (i > last ? last : i);
  }
  const int64_t t = clock_->NowNanos() - start_ns_;
  for (int i = 0; i < last; ++i) {
    if (t < phase_end_ns_[i]) return i;
  }
  return last;
}

void HotSpotKeys::SetPhases(const std::vector<SkewPhase>& phases) {
  phases_ = phases;
  phase_zipf_.clear();
  for (const SkewPhase& ph : phases_) {
    phase_zipf_.push_back(ph.zipf_theta >= 0 ? std::make_unique<Zipf>(n_, ph.zipf_theta) : nullptr);
  }
}

int64_t HotSpotKeys::Draw(Rng& rng, int phase) const {
  double hot_fraction = hot_fraction_;
  int64_t hot = hot_size_;
  int64_t offset = 0;
  if (phase >= 0 && phase < static_cast<int>(phases_.size())) {
    const SkewPhase& s = phases_[phase];
    offset = s.hot_offset;
    if (phase_zipf_[phase] != nullptr) {
      return ShiftKey(1 + static_cast<int64_t>(phase_zipf_[phase]->Draw(rng)), offset, n_);
    }
    if (s.hot_fraction >= 0) hot_fraction = s.hot_fraction;
    if (s.hot_size >= 0) hot = s.hot_size;
  }
  if (hot > n_) hot = n_;
  if (hot > 0 && (hot == n_ || rng.Chance(hot_fraction))) return ShiftKey(rng.Uniform(1, hot), offset, n_);
  return ShiftKey(rng.Uniform(hot + 1, n_), offset, n_);
}

}  // namespace workloads
}  // namespace corral
