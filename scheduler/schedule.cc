#include "scheduler/schedule.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "common/clock.h"
#include "common/hash.h"
#include "history/ref_table.h"

namespace corral {
namespace scheduler {
namespace {

// Per-thread scratch, grown to the largest queue count a thread has seen.
struct Scratch {
  std::vector<double> scores;
  std::vector<uint64_t> row;
  std::vector<int64_t> totals;
  void Fit(int n) {
    if (static_cast<int>(scores.size()) < n) {
      scores.resize(n);
      row.resize(n);
      totals.resize(n);
    }
  }
};
thread_local Scratch tls_scratch;

// Per-thread History read cache (see Schedule's constructor).
struct WeightCache {
  static constexpr int kSize = 1024;
  struct Slot {
    uint64_t key = 0;
    int64_t stamp = 0;
    history::History::Counts counts;
    bool known = false;
  };
  uint64_t owner = 0;  // Schedule instance
  int64_t generation = -1;  // History regenerations seen
  Slot slots[kSize];
};
std::atomic<uint64_t> next_instance{1};

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

}  // namespace

Schedule::Schedule(const history::History* history, state::State* state, const Policy& policy,
                   uint64_t seed, int64_t weight_cache_ns, double max_ref_share,
                   double max_queue_load)
    : history_(history),
      weight_cache_ns_(weight_cache_ns),
      max_ref_share_(max_ref_share),
      max_queue_load_(max_queue_load),
      instance_(next_instance.fetch_add(1)),
      state_(state),
      num_queues_(state->num_queues()),
      policy_(Pack(policy)),
      rng_(Mix64(seed)) {}

uint32_t Schedule::Pack(const Policy& p) {
  return static_cast<uint32_t>(p.kind) | static_cast<uint32_t>(p.weighting) << 4 |
         static_cast<uint32_t>(p.aggregation) << 8 |
         static_cast<uint32_t>(p.extraction.naming) << 12 |
         static_cast<uint32_t>(p.extraction.grouping) << 16;
}

Policy Schedule::Unpack(uint32_t v) {
  Policy p;
  p.kind = static_cast<PolicyKind>(v & 0xf);
  p.weighting = static_cast<Weighting>((v >> 4) & 0xf);
  p.aggregation = static_cast<Aggregation>((v >> 8) & 0xf);
  p.extraction.naming = static_cast<RefNaming>((v >> 12) & 0xf);
  p.extraction.grouping = static_cast<RefGrouping>((v >> 16) & 0xf);
  return p;
}

void Schedule::SetPolicy(const Policy& p) { policy_.store(Pack(p), std::memory_order_release); }
Policy Schedule::policy() const { return Unpack(policy_.load(std::memory_order_acquire)); }

QueueId Schedule::Decide(absl::Span<const RefId> refs, uint64_t partition_key,
                         std::vector<double>* scores_out) const {
  return DecideWith(policy(), refs, partition_key, scores_out);
}

QueueId Schedule::DecideWith(const Policy& p, absl::Span<const RefId> refs,
                             uint64_t partition_key, std::vector<double>* scores_out) const {
  if (p.kind == PolicyKind::kLearned) return DecideLearned(p, refs, scores_out);
  if (scores_out != nullptr) scores_out->assign(num_queues_, 0.0);
  if (p.kind == PolicyKind::kHardPartition) {
    return QueueId(static_cast<int32_t>(partition_key % static_cast<uint64_t>(num_queues_)));
  }
  const uint64_t r = Mix64(rng_.fetch_add(kGolden, std::memory_order_relaxed));
  return QueueId(static_cast<int32_t>(r % static_cast<uint64_t>(num_queues_)));
}

double Schedule::Weight(RefId r, Weighting w, int64_t now) const {
  history::History::Counts counts;
  bool known;
  if (weight_cache_ns_ <= 0) {
    known = history_->Get(r, &counts);
  } else {
    known = CachedCounts(r, now, &counts);
  }
  if (!known) return 0.0;
  if (max_ref_share_ > 0) {
    const int64_t records = history_->records();
    if (records >= kMinRecordsForShare &&
        static_cast<double>(counts.aborts + counts.commits) * num_queues_ >
            max_ref_share_ * static_cast<double>(records)) {
      return 0.0;  // broad: see the header
    }
  }
  return history::History::WeightOf(counts, w);
}

bool Schedule::CachedCounts(RefId r, int64_t now, history::History::Counts* out) const {
  static thread_local WeightCache c;  // one per thread, built on first use
  const int64_t gen = history_->regenerations();
  if (c.owner != instance_ || c.generation != gen) {
    for (auto& slot : c.slots) slot.stamp = INT64_MIN;
    c.owner = instance_;
    c.generation = gen;
  }
  WeightCache::Slot& slot = c.slots[Mix64(r.value()) & (WeightCache::kSize - 1)];
  if (slot.stamp == INT64_MIN || slot.key != r.value() || now - slot.stamp > weight_cache_ns_) {
    slot.key = r.value();
    slot.stamp = now;
    slot.known = history_->Get(r, &slot.counts);
  }
  *out = slot.counts;
  return slot.known;
}

int Schedule::PickQueue(const double* scores) const {
  const int n = num_queues_;
  Scratch& s = tls_scratch;
  s.Fit(n);
  int64_t* totals = s.totals.data();
  state_->ReadTotals(totals);
  // Bounded load: queues above max_queue_load_ x mean are not eligible
  // (unless none is below, e.g. all zero).
  double cap = 0;
  if (max_queue_load_ > 0) {
    int64_t sum = 0;
    for (int q = 0; q < n; ++q) sum += totals[q];
    cap = max_queue_load_ * static_cast<double>(sum) / n;
    int eligible = 0;
    for (int q = 0; q < n; ++q) eligible += static_cast<double>(totals[q]) <= cap;
    if (eligible == 0 || sum == 0) cap = 0;
  }
  auto ok = [&](int q) { return cap == 0 || static_cast<double>(totals[q]) <= cap; };
  double top = 0;
  for (int q = 0; q < n; ++q) {
    if (ok(q)) top = std::max(top, scores[q]);
  }
  const double floor = top - top * 1e-9;  // ties within a relative 1e-9
  int chosen = -1;
  int64_t chosen_total = 0;
  for (int q = 0; q < n; ++q) {
    if (scores[q] < floor || !ok(q)) continue;
    const int64_t t = totals[q];
    if (chosen < 0 || t < chosen_total) {
      chosen = q;
      chosen_total = t;
    }
  }
  return chosen;
}

QueueId Schedule::DecideLearned(const Policy& p, absl::Span<const RefId> refs,
                                std::vector<double>* scores_out) const {
  const int n = num_queues_;
  Scratch& s = tls_scratch;
  s.Fit(n);
  double* scores = s.scores.data();
  uint64_t* row = s.row.data();
  std::fill(scores, scores + n, 0.0);
  const int64_t now = weight_cache_ns_ > 0 ? MonoNanos() : 0;

  if (p.aggregation == Aggregation::kSum) {
    for (size_t i = 0; i < refs.size(); ++i) {
      if (history::RefSeenBefore(refs, i)) continue;  // counts once
      const double w = Weight(refs[i], p.weighting, now);
      if (w <= 0 || !state_->ReadRow(refs[i], row)) continue;
      for (int q = 0; q < n; ++q) scores[q] += w * static_cast<double>(row[q]);
    }
  } else {
    absl::InlinedVector<double, 16> weights(refs.size());
    double best = 0;
    for (size_t i = 0; i < refs.size(); ++i) {
      weights[i] = Weight(refs[i], p.weighting, now);
      best = std::max(best, weights[i]);
    }
    if (best > 0) {
      for (size_t i = 0; i < refs.size(); ++i) {
        if (weights[i] != best || !state_->ReadRow(refs[i], row)) continue;
        for (int q = 0; q < n; ++q) {
          scores[q] = std::max(scores[q], best * static_cast<double>(row[q]));
        }
      }
    }
  }
  if (scores_out != nullptr) scores_out->assign(scores, scores + n);
  return QueueId(PickQueue(scores));
}

QueueId Schedule::PlaceLearned(const Policy& p, absl::Span<const RefId> refs) {
  if (p.aggregation == Aggregation::kMax && !refs.empty()) {
    const int64_t now = weight_cache_ns_ > 0 ? MonoNanos() : 0;
    absl::InlinedVector<double, 16> weights(refs.size());
    double best = 0;
    size_t lead = 0;
    int tied = 0;  // distinct references with the top weight
    for (size_t i = 0; i < refs.size(); ++i) {
      if (history::RefSeenBefore(refs, i)) {
        weights[i] = -1;  // already counted
        continue;
      }
      const double w = Weight(refs[i], p.weighting, now);
      weights[i] = w;
      if (w > best) {
        best = w;
        lead = i;
        tied = 1;
      } else if (w == best && w > 0) {
        ++tied;
      }
    }
    if (tied <= 1) {
      // One State operation on the lead reads its row, scores and records;
      // no reference scores when best == 0 (every queue ties at 0).
      const int n = num_queues_;
      return state_->RecordChosen(refs, lead, [&](const state::State::RowView& row) {
        Scratch& s = tls_scratch;
        s.Fit(n);
        double* scores = s.scores.data();
        if (best > 0 && !row.empty()) {
          for (int q = 0; q < n; ++q) scores[q] = best * static_cast<double>(row[q]);
        } else {
          std::fill(scores, scores + n, 0.0);
        }
        return QueueId(PickQueue(scores));
      });
    }
    // Several references share the top weight: the general path.
  }
  const QueueId q = DecideLearned(p, refs, nullptr);
  state_->Record(refs, q);
  return q;
}

QueueId Schedule::Place(Txn& txn) {
  bool recorded = false;
  return Place(txn, &recorded);
}

QueueId Schedule::Place(Txn& txn, bool* state_recorded) {
  const Policy p = policy();
  const bool learned = p.kind == PolicyKind::kLearned;
  const QueueId q =
      learned ? PlaceLearned(p, txn.refs) : DecideWith(p, txn.refs, txn.partition_key, nullptr);
  txn.queue = q;
  *state_recorded = learned;
  return q;
}

}  // namespace scheduler
}  // namespace corral
