#include "engine/qstore_placement.h"

#include <algorithm>
#include <numeric>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace corral {
namespace engine {

absl::StatusOr<PlacementKind> ParseQueuePlacement(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(absl::StripAsciiWhitespace(name));
  if (n == "hash") return PlacementKind::kHash;
  if (n == "range") return PlacementKind::kRange;
  if (n == "learned") return PlacementKind::kLearned;
  return absl::InvalidArgumentError(
      absl::StrCat("qstore placement '", std::string(name), "': expected hash, range or learned"));
}

const char* QueuePlacementName(PlacementKind kind) {
  switch (kind) {
    case PlacementKind::kHash:
      return "hash";
    case PlacementKind::kRange:
      return "range";
    case PlacementKind::kLearned:
      return "learned";
  }
  return "?";
}

// ---------------------------------------------------------------- range

RangePlacement::RangePlacement(int queues, std::vector<std::vector<uint64_t>> granules_by_table)
    : queues_(queues), starts_(granules_by_table.size()) {
  for (size_t t = 0; t < granules_by_table.size(); ++t) {
    std::vector<uint64_t>& g = granules_by_table[t];
    std::sort(g.begin(), g.end());
    g.erase(std::unique(g.begin(), g.end()), g.end());
    if (g.empty()) continue;
    // The granule of rank k goes to queue floor(k * queues / n); queue q's
    // first granule has rank ceil(q * n / queues).
    const uint64_t n = g.size();
    std::vector<uint64_t>& s = starts_[t];
    s.reserve(queues_ - 1);
    for (uint64_t q = 1; q < static_cast<uint64_t>(queues_); ++q) {
      const uint64_t rank = (q * n + queues_ - 1) / queues_;
      s.push_back(rank < n ? g[rank] : ~uint64_t{0});
    }
  }
}

uint32_t RangePlacement::QueueOf(int table, uint64_t granule) const {
  // (With one queue there are no starts: hash gives 0 too.)
  if (table < 0 || static_cast<size_t>(table) >= starts_.size() || starts_[table].empty()) {
    return HashQueue(table, granule, queues_);
  }
  const std::vector<uint64_t>& s = starts_[table];
  return static_cast<uint32_t>(std::upper_bound(s.begin(), s.end(), granule) - s.begin());
}

// ---------------------------------------------------------------- learned

uint32_t LearnedPlacement::QueueOf(int table, uint64_t granule) const {
  auto it = assigned_.find(std::make_pair(table, granule));
  return it != assigned_.end() ? it->second : HashQueue(table, granule, queues_);
}

RefId PlacementLearner::RefOf(int table, uint64_t granule) {
  return RefId(Mix64(granule ^ Mix64(static_cast<uint64_t>(table) + 1)));
}

PlacementLearner::PlacementLearner(int queues, int64_t learn_txns)
    : queues_(queues),
      learn_txns_(learn_txns),
      history_([] {
        history::History::Options o;
        o.max_entries = 0;       // bounded by the window
        o.keep_texts = false;    // granules have no text
        return o;
      }()) {}

void PlacementLearner::ObserveBatch(const std::vector<std::vector<GranuleAccess>>& batch) {
  // Per granule of the batch: transactions that access it, and that write it.
  struct Use {
    int accessors = 0;
    int writers = 0;
  };
  absl::flat_hash_map<std::pair<int, uint64_t>, Use> uses;
  for (const auto& txn : batch) {
    for (const GranuleAccess& a : txn) {
      Use& u = uses[{a.table, a.granule}];
      ++u.accessors;
      u.writers += a.write ? 1 : 0;
    }
  }
  std::vector<RefId> conflicted, clean;
  for (const auto& txn : batch) {
    if (done()) return;
    conflicted.clear();
    clean.clear();
    std::vector<std::pair<int, uint64_t>> keys;
    keys.reserve(txn.size());
    for (const GranuleAccess& a : txn) {
      const Use& u = uses[{a.table, a.granule}];
      // Two transactions of the batch access it and one writes it: they
      // wait for each other on its queue.
      const bool conflict = u.accessors >= 2 && u.writers >= 1;
      (conflict ? conflicted : clean).push_back(RefOf(a.table, a.granule));
      keys.emplace_back(a.table, a.granule);
    }
    if (!conflicted.empty()) history_.Record(conflicted, /*committed=*/false);
    if (!clean.empty()) history_.Record(clean, /*committed=*/true);
    txns_.push_back(std::move(keys));
    ++observed_;
  }
}

std::unique_ptr<LearnedPlacement> PlacementLearner::Build() const {
  // The hot granules, numbered in first-seen order (deterministic).
  absl::flat_hash_map<std::pair<int, uint64_t>, int> id;
  std::vector<std::pair<int, uint64_t>> hot;
  std::vector<uint64_t> load;  // accesses per hot granule
  std::vector<std::vector<int>> hot_of_txn(txns_.size());
  for (size_t t = 0; t < txns_.size(); ++t) {
    for (const auto& k : txns_[t]) {
      auto it = id.find(k);
      if (it == id.end()) {
        history::History::Counts c;
        int v = -1;
        if (history_.Get(RefOf(k.first, k.second), &c) && c.aborts >= kMinConflicts &&
            history::History::WeightOf(c, Weighting::kFraction) >= kMinConflictFraction) {
          v = static_cast<int>(hot.size());
          hot.push_back(k);
          load.push_back(c.aborts + c.commits);
        }
        it = id.emplace(k, v).first;
      }
      if (it->second >= 0 && hot_of_txn[t].size() < kMaxHotPerTxn) hot_of_txn[t].push_back(it->second);
    }
  }
  // Co-occurrence of hot pairs.
  absl::flat_hash_map<std::pair<int, int>, int> pairs;
  for (std::vector<int>& h : hot_of_txn) {
    std::sort(h.begin(), h.end());
    h.erase(std::unique(h.begin(), h.end()), h.end());
    for (size_t i = 0; i < h.size(); ++i) {
      for (size_t j = i + 1; j < h.size(); ++j) ++pairs[{h[i], h[j]}];
    }
  }
  std::vector<std::tuple<int, int, int>> edges;  // (-count, a, b): heaviest first
  for (const auto& p : pairs) {
    if (p.second >= kMinPairCount) edges.emplace_back(-p.second, p.first.first, p.first.second);
  }
  std::sort(edges.begin(), edges.end());
  // Union-find over the hot granules; a root carries its cluster's load.
  std::vector<int> parent(hot.size());
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<uint64_t> cluster_load = load;
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const auto& e : edges) {
    const int x = std::get<1>(e), y = std::get<2>(e);
    int a = find(x), b = find(y);
    if (a == b) continue;
    // Only granules (nearly) always accessed together share a queue: they
    // gain nothing from separate queues, and a transaction then waits for
    // one head instead of two. Hot granules that merely meet now and then
    // stay apart (one queue would serialize transactions that touch
    // different ones).
    const bool strong = static_cast<uint64_t>(-std::get<0>(e)) * kStrongDen >=
                        std::min(load[x], load[y]) * kStrongNum;
    if (!strong) continue;
    if (b < a) std::swap(a, b);
    parent[b] = a;
    cluster_load[a] += cluster_load[b];
  }
  // Clusters, largest first, each to the least loaded queue (ties: lowest).
  std::vector<int> roots;
  for (size_t i = 0; i < hot.size(); ++i) {
    if (find(static_cast<int>(i)) == static_cast<int>(i)) roots.push_back(static_cast<int>(i));
  }
  std::sort(roots.begin(), roots.end(), [&](int a, int b) {
    return cluster_load[a] != cluster_load[b] ? cluster_load[a] > cluster_load[b] : a < b;
  });
  std::vector<uint64_t> queue_load(queues_, 0);
  std::vector<uint32_t> queue_of_root(hot.size(), 0);
  for (int r : roots) {
    const uint32_t q = static_cast<uint32_t>(
        std::min_element(queue_load.begin(), queue_load.end()) - queue_load.begin());
    queue_of_root[r] = q;
    queue_load[q] += cluster_load[r];
  }
  absl::flat_hash_map<std::pair<int, uint64_t>, uint32_t> assigned;
  for (size_t i = 0; i < hot.size(); ++i) assigned[hot[i]] = queue_of_root[find(static_cast<int>(i))];
  return std::make_unique<LearnedPlacement>(queues_, std::move(assigned), static_cast<int>(roots.size()));
}

}  // namespace engine
}  // namespace corral
