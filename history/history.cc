#include "history/history.h"

#include <algorithm>

namespace corral {
namespace history {

History::History(const Options& options)
    : options_(options),
      map_(static_cast<size_t>(std::max<int64_t>(options.initial_capacity, 16))),
      texts_(options.keep_texts ? 64 : 1) {}

void History::RecordOne(RefId ref, bool committed, const TextProvider* texts, size_t i) {
  auto bump = [committed](Counts& c) {
    if (committed) {
      ++c.commits;
    } else {
      ++c.aborts;
    }
  };
  // Fast path: the reference is known (no allocation, bucket locks only).
  if (map_.update_fn(ref, bump)) return;
  if (options_.max_entries > 0 &&
      entries_.load(std::memory_order_relaxed) >= options_.max_entries) {
    if (options_.on_full == OnFull::kDropNew) {
      dropped_full_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    Regenerate();
  }
  Counts init;
  bump(init);
  if (map_.upsert(ref, bump, init)) {
    entries_.fetch_add(1, std::memory_order_relaxed);
    if (texts != nullptr && options_.keep_texts && *texts) {
      texts_.insert(ref, (*texts)(i));
    }
  }
}

void History::Record(absl::Span<const RefId> refs, bool committed, const TextProvider* texts) {
  if (frozen()) {
    ignored_frozen_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  records_.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < refs.size(); ++i) {
    if (!RefSeenBefore(refs, i)) RecordOne(refs[i], committed, texts, i);
  }
}

void History::Add(RefId ref, uint64_t aborts, uint64_t commits) {
  Counts init{aborts, commits};
  if (map_.upsert(
          ref,
          [aborts, commits](Counts& c) {
            c.aborts += aborts;
            c.commits += commits;
          },
          init)) {
    entries_.fetch_add(1, std::memory_order_relaxed);
  }
  // After the change: a reader that saw the old epoch re-reads.
  epoch_.fetch_add(1, std::memory_order_acq_rel);
}

bool History::Get(RefId ref, Counts* out) const { return map_.find(ref, *out); }

double History::WeightOf(const Counts& c, Weighting w) {
  if (w == Weighting::kCount) return static_cast<double>(c.aborts);
  const uint64_t n = c.aborts + c.commits;
  return n == 0 ? 0.0 : static_cast<double>(c.aborts) / static_cast<double>(n);
}

double History::Weight(RefId ref, Weighting w, bool* known) const {
  Counts c;
  const bool found = map_.find(ref, c);
  if (known != nullptr) *known = found;
  return found ? WeightOf(c, w) : 0.0;
}

std::vector<History::TopEntry> History::TopByAborts(size_t k) const {
  std::vector<TopEntry> all;
  {
    auto lt = const_cast<Map&>(map_).lock_table();
    all.reserve(lt.size());
    for (const auto& kv : lt) all.push_back(TopEntry{kv.first, kv.second, {}});
  }
  auto better = [](const TopEntry& a, const TopEntry& b) {
    if (a.counts.aborts != b.counts.aborts) return a.counts.aborts > b.counts.aborts;
    if (a.counts.commits != b.counts.commits) return a.counts.commits > b.counts.commits;
    return a.ref < b.ref;
  };
  k = std::min(k, all.size());
  std::partial_sort(all.begin(), all.begin() + k, all.end(), better);
  all.resize(k);
  for (TopEntry& e : all) texts_.find(e.ref, e.text);
  return all;
}

void History::Regenerate() {
  {
    auto lt = map_.lock_table();
    lt.clear();
    entries_.store(0, std::memory_order_relaxed);
    records_.store(0, std::memory_order_relaxed);
    // Shrinks back to the initial capacity, releasing the grown buckets.
    lt.reserve(static_cast<size_t>(std::max<int64_t>(options_.initial_capacity, 16)));
  }
  texts_.clear();
  regenerations_.fetch_add(1, std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_acq_rel);
}

int64_t History::ApproxBytes() const {
  // Buckets hold (key, value) pairs plus a partial-key byte and occupancy flag.
  const int64_t slot = sizeof(RefId) + sizeof(Counts) + 2;
  return static_cast<int64_t>(map_.bucket_count() * map_.slot_per_bucket()) * slot;
}

}  // namespace history
}  // namespace corral
