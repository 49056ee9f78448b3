// Q-Store's placement rule: which execution queue a lock granule (table,
// granule) goes to. Q-Store (Qadah et al. 2020) requires only that
// conflicting accesses share a queue, i.e. that a granule always maps to the
// same queue; it leaves the rule open ("a placement strategy that minimizes
// the dependencies among execution-queues can yield better performance").
// Placement decides how many queues a transaction spans, so how many queue
// heads it must wait for. Three rules, chosen at run time
// (DatabaseOptions::qstore_placement):
//
//   hash     a granule's (table, granule) hashed to one of `queues`.
//   range    the paper's range partitioning of record identifiers: each
//            table's loaded granules, in key order, are cut into `queues`
//            contiguous ranges of equal row count, and every table's ranges
//            are laid over the same queue space (rank / rows * queues), so
//            rows keyed by the same leading field (TPC-C: a warehouse) land
//            on the same block of queues. Granules outside the loaded key
//            space go to the nearest range; a table empty at load, to hash.
//   learned  from Corral's History (history/history.h): over a learning
//            window the planner records, per granule reference, "aborts"
//            (the granule was written and accessed by another transaction
//            of the same batch: a conflict, which Q-Store turns into a queue
//            wait and an optimistic protocol into an abort) and commits
//            (otherwise). Granules whose conflict fraction and count pass a
//            threshold ("hot") are clustered when they are accessed together
//            (a pair co-occurs in at least 3/4 of the accesses of the less
//            used one; union-find), and each cluster gets its own queue
//            (largest first, onto the least loaded queue): conflicting
//            references accessed together share one queue, hot references
//            accessed apart get queues of their own. Every other granule:
//            hash.
//
//   auto kind = ParseQueuePlacement("range").value();
//   RangePlacement p(/*queues=*/8, {{10, 20, 30}, {}});  // table 0's granules
//   uint32_t q = p.QueueOf(0, 20);                      // 2 (= 1 * 8 / 3)
//   PlacementLearner l(/*queues=*/8, /*learn_txns=*/1000);
//   l.ObserveBatch(batch);                              // until l.done()
//   std::unique_ptr<QueuePlacement> learned = l.Build();
//
// Thread safety: a QueuePlacement is immutable once built (QueueOf from any
// thread). A PlacementLearner is thread-compatible (qstore's sequencer
// thread owns it).
#ifndef CORRAL_ENGINE_QSTORE_PLACEMENT_H_
#define CORRAL_ENGINE_QSTORE_PLACEMENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/hash.h"
#include "history/history.h"

namespace corral {
namespace engine {

enum class PlacementKind { kHash, kRange, kLearned };

// "hash", "range" or "learned" (case-insensitive).
absl::StatusOr<PlacementKind> ParseQueuePlacement(absl::string_view name);
const char* QueuePlacementName(PlacementKind kind);

// One lock granule a transaction declared.
struct GranuleAccess {
  int table;
  uint64_t granule;
  bool write;
};

// Today's rule, and every other rule's fallback.
inline uint32_t HashQueue(int table, uint64_t granule, int queues) {
  return static_cast<uint32_t>(Mix64(granule ^ (uint64_t(table) * 0x9E3779B97F4A7C15ull)) %
                               static_cast<uint64_t>(queues));
}

class QueuePlacement {
 public:
  virtual ~QueuePlacement() = default;
  // The queue (in [0, queues)) of a granule; the same granule always gets
  // the same queue.
  virtual uint32_t QueueOf(int table, uint64_t granule) const = 0;
  virtual PlacementKind kind() const = 0;
};

class HashPlacement final : public QueuePlacement {
 public:
  explicit HashPlacement(int queues) : queues_(queues) {}
  uint32_t QueueOf(int table, uint64_t granule) const override {
    return HashQueue(table, granule, queues_);
  }
  PlacementKind kind() const override { return PlacementKind::kHash; }

 private:
  const int queues_;
};

class RangePlacement final : public QueuePlacement {
 public:
  // granules_by_table[t]: table t's loaded granules (any order, repeats
  // allowed); tables beyond it or with none use hash.
  RangePlacement(int queues, std::vector<std::vector<uint64_t>> granules_by_table);
  uint32_t QueueOf(int table, uint64_t granule) const override;
  PlacementKind kind() const override { return PlacementKind::kRange; }

 private:
  const int queues_;
  // Per table: starts_[t][q - 1] = the smallest loaded granule on queue q
  // or later (q = 1..queues-1); a granule's queue is how many starts it
  // reaches. Empty: hash.
  std::vector<std::vector<uint64_t>> starts_;
};

class LearnedPlacement final : public QueuePlacement {
 public:
  // `assigned`: the hot granules' queues, keyed by GranuleKey.
  LearnedPlacement(int queues, absl::flat_hash_map<std::pair<int, uint64_t>, uint32_t> assigned,
                   int clusters)
      : queues_(queues), assigned_(std::move(assigned)), clusters_(clusters) {}
  uint32_t QueueOf(int table, uint64_t granule) const override;
  PlacementKind kind() const override { return PlacementKind::kLearned; }
  size_t hot_granules() const { return assigned_.size(); }
  int clusters() const { return clusters_; }

 private:
  const int queues_;
  const absl::flat_hash_map<std::pair<int, uint64_t>, uint32_t> assigned_;
  const int clusters_;
};

// Learns a LearnedPlacement from the first `learn_txns` transactions it is
// shown (whole batches, in sequence order).
class PlacementLearner {
 public:
  // A granule is hot with at least kMinConflicts conflicts making at least
  // kMinConflictFraction of its accesses; two hot granules are clustered
  // when they co-occurred in at least kMinPairCount transactions making at
  // least kStrongNum / kStrongDen of the accesses of the less used one
  // (they are accessed together: separate queues would gain nothing).
  static constexpr uint64_t kMinConflicts = 2;
  static constexpr double kMinConflictFraction = 0.02;
  static constexpr int kMinPairCount = 2;
  static constexpr uint64_t kStrongNum = 3, kStrongDen = 4;
  // Hot granules per transaction that enter the pair counts (bounds the
  // quadratic pair count of very wide transactions).
  static constexpr size_t kMaxHotPerTxn = 32;

  PlacementLearner(int queues, int64_t learn_txns);

  // One sealed batch: each transaction's declared granules.
  void ObserveBatch(const std::vector<std::vector<GranuleAccess>>& batch);
  bool done() const { return observed_ >= learn_txns_; }
  int64_t observed() const { return observed_; }
  const history::History& history() const { return history_; }
  std::unique_ptr<LearnedPlacement> Build() const;

  // The History's reference of a granule.
  static RefId RefOf(int table, uint64_t granule);

 private:
  const int queues_;
  const int64_t learn_txns_;
  int64_t observed_ = 0;
  history::History history_;
  // The observed transactions' granules (for the co-occurrence counts).
  std::vector<std::vector<std::pair<int, uint64_t>>> txns_;
};

}  // namespace engine
}  // namespace corral

#endif  // CORRAL_ENGINE_QSTORE_PLACEMENT_H_
