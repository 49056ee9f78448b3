#include "scheduler/mix_shift.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"

namespace corral {
namespace scheduler {

namespace {

// The `k` references of largest share in `m` (any order among equals).
template <typename Map>
std::vector<RefId> Top(const Map& m, int k) {
  std::vector<std::pair<double, RefId>> v;
  v.reserve(m.size());
  for (const auto& [ref, share] : m) v.emplace_back(static_cast<double>(share), ref);
  const size_t n = std::min(v.size(), static_cast<size_t>(std::max(0, k)));
  std::partial_sort(v.begin(), v.begin() + n, v.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<RefId> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(v[i].second);
  return out;
}

}  // namespace

std::string MixShift::Window::Describe() const {
  return absl::StrFormat("reference mix off: ref %016x share %.3f against %.3f (z^2 %.0f, mean %.1f, %lld samples)",
                         ref.value(), share, base_share, max_z2, mean_z2, static_cast<long long>(samples));
}

MixShift::MixShift(const Options& options) : options_(options) {}

void MixShift::Sample(absl::Span<const RefId> refs) {
  // A transaction whose references were not extracted (auto on a baseline
  // arm extracts one in four) says nothing about the mix.
  if (refs.empty()) return;
  const uint64_t every = static_cast<uint64_t>(std::max(1, options_.sample_every));
  if (tick_.fetch_add(1, std::memory_order_relaxed) % every != 0) return;
  std::lock_guard<std::mutex> l(mu_);
  ++samples_;
  for (RefId r : refs) ++counts_[r];
}

void MixShift::StartWindow() {
  std::lock_guard<std::mutex> l(mu_);
  counts_.clear();
  samples_ = 0;
}

MixShift::Window MixShift::EndWindow() {
  absl::flat_hash_map<RefId, int64_t, RefIdHash> counts;
  Window w;
  {
    std::lock_guard<std::mutex> l(mu_);
    counts.swap(counts_);
    w.samples = samples_;
    samples_ = 0;
  }
  const int64_t n = w.samples;
  if (n < std::max<int64_t>(1, options_.min_samples)) return w;
  const double inv_n = 1.0 / static_cast<double>(n);
  Shares now;
  for (const auto& [ref, c] : counts) {
    const double s = static_cast<double>(c) * inv_n;
    if (s >= options_.keep_share) now[ref] = s;
  }
  last_ = now;
  if (!have_base_) {
    base_ = std::move(now);
    have_base_ = true;
    base_var_ = 1;
    return w;
  }
  std::vector<RefId> refs = Top(now, options_.top);
  for (RefId r : Top(base_, options_.top)) {
    if (std::find(refs.begin(), refs.end(), r) == refs.end()) refs.push_back(r);
  }
  double sum = 0;
  bool first = true;
  for (RefId r : refs) {
    const auto c = counts.find(r);
    const double sn = c == counts.end() ? 0.0 : static_cast<double>(c->second) * inv_n;
    const auto b = base_.find(r);
    const double sb = b == base_.end() ? 0.0 : b->second;
    const double d = sn - sb;
    double z2 = 0;
    if (std::abs(d) >= options_.min_abs) {
      const double p = (sn + sb) / 2;
      // The base's own noise: base_var_ in units of one window's.
      const double var = std::max(p * (1 - p), inv_n) * inv_n * (1 + base_var_);
      z2 = d * d / var;
    }
    sum += z2;
    if (first || z2 > w.max_z2) {
      first = false;
      w.max_z2 = z2;
      w.ref = r;
      w.share = sn;
      w.base_share = sb;
    }
  }
  w.measured = !refs.empty();
  w.mean_z2 = refs.empty() ? 0 : sum / static_cast<double>(refs.size());
  w.off = w.measured && (w.max_z2 >= options_.max_z2 || w.mean_z2 >= options_.mean_z2);
  if (!w.off) {
    // Fold the window in: base = (1 - a) base + a now, over both sides.
    const double a = options_.base_alpha;
    base_var_ = (1 - a) * (1 - a) * base_var_ + a * a;
    for (auto& [ref, s] : base_) {
      const auto it = last_.find(ref);
      s = (1 - a) * s + a * (it == last_.end() ? 0.0 : it->second);
    }
    for (const auto& [ref, s] : last_) {
      if (!base_.contains(ref)) base_[ref] = a * s;
    }
    for (auto it = base_.begin(); it != base_.end();) {
      if (it->second < options_.keep_share) {
        base_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  return w;
}

void MixShift::Rebase() {
  if (last_.empty()) return;
  base_ = last_;
  have_base_ = true;
  base_var_ = 1;
}

}  // namespace scheduler
}  // namespace corral
