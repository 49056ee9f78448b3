// CycleGates (cycle_gates.h).
#include "adapters/proxy/cycle_gates.h"

#include "absl/hash/hash.h"

namespace corral {
namespace proxy {

bool CycleGates::Admit(const std::string& shape) {
  auto it = by_shape_.find(shape);
  if (it == by_shape_.end()) return false;  // never cycled: nothing to keep
  Score& s = it->second;
  s.score *= opt_.decay;
  if (s.gated && s.score < opt_.off_score) s.gated = false;
  const bool gated = s.gated;
  if (!gated && s.score < opt_.off_score / 8) by_shape_.erase(it);  // forgotten
  return gated;
}

void CycleGates::Cycle(const std::string& shape) {
  auto it = by_shape_.find(shape);
  if (it == by_shape_.end()) {
    if (by_shape_.size() >= opt_.max_templates) {  // the lowest score makes room
      auto low = by_shape_.begin();
      for (auto j = by_shape_.begin(); j != by_shape_.end(); ++j) {
        if (j->second.score < low->second.score) low = j;
      }
      by_shape_.erase(low);
    }
    it = by_shape_.emplace(shape, Score{}).first;
  }
  Score& s = it->second;
  s.score += 1;
  if (s.score >= opt_.on_score) s.gated = true;
}

bool CycleGates::Gated(const std::string& shape) const {
  auto it = by_shape_.find(shape);
  return it != by_shape_.end() && it->second.gated;
}

void CycleGates::Grew(const std::string& shape, int ordinal) {
  auto it = by_shape_.find(shape);
  if (it != by_shape_.end() && ordinal > it->second.last_growth) it->second.last_growth = ordinal;
}

int CycleGates::LastGrowth(const std::string& shape) const {
  auto it = by_shape_.find(shape);
  return it == by_shape_.end() ? 0 : it->second.last_growth;
}

uint64_t CycleGates::Key(const std::string& shape, uint64_t salt) {
  return absl::Hash<std::string>{}(shape) ^ salt ^ 0x67617465'6379636cull;  // "gatecycl"
}

size_t CycleGates::gated() const {
  size_t n = 0;
  for (const auto& [shape, s] : by_shape_) n += s.gated ? 1 : 0;
  return n;
}

}  // namespace proxy
}  // namespace corral
