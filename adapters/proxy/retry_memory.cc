#include "adapters/proxy/retry_memory.h"

#include <algorithm>

#include "absl/strings/ascii.h"

namespace corral {
namespace proxy {

std::string RetryStatementKey(absl::string_view text, absl::string_view params) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  while (!s.empty() && (s.back() == ';' || absl::ascii_isspace(s.back()))) s.remove_suffix(1);
  std::string key(s);
  if (!params.empty()) {
    key.push_back('\0');
    key.append(params.data(), params.size());
  }
  return key;
}

void RetryMemory::Remember(uint64_t client, std::string key, const RefVec& refs) {
  if (capacity_ == 0) return;
  Forget(client);
  while (by_client_.size() >= capacity_) {
    by_client_.erase(order_.front());
    order_.pop_front();
    ++evictions_;
  }
  Entry e;
  e.key = std::move(key);
  e.refs.assign(refs.begin(), refs.begin() + std::min(refs.size(), kMaxRefs));
  e.lru = order_.insert(order_.end(), client);
  by_client_.emplace(client, std::move(e));
}

bool RetryMemory::Take(uint64_t client, absl::string_view key, RefVec* refs) {
  auto it = by_client_.find(client);
  if (it == by_client_.end() || it->second.key != key) return false;
  *refs = std::move(it->second.refs);
  order_.erase(it->second.lru);
  by_client_.erase(it);
  return true;
}

void RetryMemory::Forget(uint64_t client) {
  auto it = by_client_.find(client);
  if (it == by_client_.end()) return;
  order_.erase(it->second.lru);
  by_client_.erase(it);
}

int PickHolder(const RefVec& refs, const std::vector<const RefVec*>& running) {
  for (RefId r : refs) {
    for (size_t i = 0; i < running.size(); ++i) {
      if (running[i] != nullptr && std::find(running[i]->begin(), running[i]->end(), r) != running[i]->end()) {
        return static_cast<int>(i);
      }
    }
  }
  return -1;
}

}  // namespace proxy
}  // namespace corral
