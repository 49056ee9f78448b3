// CheckSerializable: the conflict graph of a committed history.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/partitioned/partitioned.h"

namespace corral {
namespace partitioned {

absl::Status CheckSerializable(const std::vector<AccessRecord>& history) {
  // (key, version) -> writer.
  absl::flat_hash_map<std::pair<int64_t, uint32_t>, uint64_t> writer;
  absl::flat_hash_map<int64_t, uint32_t> max_version;
  for (const AccessRecord& a : history) {
    if (!a.write) continue;
    auto [it, fresh] = writer.emplace(std::make_pair(a.key, a.version), a.txn);
    if (!fresh && it->second != a.txn) {
      return absl::DataLossError(absl::StrCat("key ", a.key, " version ",
                                              a.version, " written twice"));
    }
    uint32_t& mv = max_version[a.key];
    mv = std::max(mv, a.version);
  }
  // Versions of a key must be contiguous from 1 (a lost write shows a gap).
  for (const auto& [key, mv] : max_version) {
    for (uint32_t v = 1; v <= mv; ++v) {
      if (!writer.contains(std::make_pair(key, v))) {
        return absl::DataLossError(
            absl::StrCat("key ", key, " version ", v, " has no writer"));
      }
    }
  }
  // Dense node ids.
  absl::flat_hash_map<uint64_t, int> node;
  for (const AccessRecord& a : history) node.emplace(a.txn, node.size());
  std::vector<std::vector<int>> adj(node.size());
  auto edge = [&](uint64_t from, uint64_t to) {
    if (from != to) adj[node[from]].push_back(node[to]);
  };
  for (const AccessRecord& a : history) {
    if (a.write) {
      auto prev = writer.find(std::make_pair(a.key, a.version - 1));
      if (prev != writer.end()) edge(prev->second, a.txn);  // ww
    } else {
      auto w = writer.find(std::make_pair(a.key, a.version));
      if (w != writer.end()) edge(w->second, a.txn);  // wr
      auto next = writer.find(std::make_pair(a.key, a.version + 1));
      if (next != writer.end()) edge(a.txn, next->second);  // rw
    }
  }
  // Kahn's algorithm: a cycle leaves nodes with incoming edges.
  std::vector<int> indeg(adj.size(), 0);
  for (auto& out : adj) {
    for (int v : out) ++indeg[v];
  }
  std::vector<int> ready;
  for (size_t i = 0; i < adj.size(); ++i) {
    if (indeg[i] == 0) ready.push_back(static_cast<int>(i));
  }
  size_t done = 0;
  while (!ready.empty()) {
    int u = ready.back();
    ready.pop_back();
    ++done;
    for (int v : adj[u]) {
      if (--indeg[v] == 0) ready.push_back(v);
    }
  }
  if (done != adj.size()) {
    return absl::DataLossError(absl::StrCat(
        "conflict graph has a cycle through ", adj.size() - done, " txns"));
  }
  return absl::OkStatus();
}

}  // namespace partitioned
}  // namespace corral
