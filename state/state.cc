#include "state/state.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace corral {
namespace state {

const char* EvictionModeName(EvictionMode m) {
  return m == EvictionMode::kStable ? "stable" : "direct";
}

absl::StatusOr<EvictionMode> ParseEvictionMode(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "stable") return EvictionMode::kStable;
  if (n == "direct") return EvictionMode::kDirect;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown eviction mode '", std::string(name), "': use stable or direct"));
}

absl::StatusOr<std::unique_ptr<State>> State::Create(const Options& options, const Clock* clock) {
  if (options.num_queues < 1 || options.num_queues > kMaxQueues) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_queues must be in [1, ", kMaxQueues, "], got ", options.num_queues));
  }
  if (clock == nullptr) return absl::InvalidArgumentError("State needs a clock");
  if (options.max_entries < 0 || options.max_bytes < 0) {
    return absl::InvalidArgumentError("State bounds must be >= 0");
  }
  if (!(options.evict_to > 0 && options.evict_to <= 1)) {
    return absl::InvalidArgumentError("evict_to must be in (0, 1]");
  }
  if (options.rate_window_ns <= 0 || !(options.rate_alpha > 0 && options.rate_alpha <= 1)) {
    return absl::InvalidArgumentError("rate_window_ns must be > 0 and rate_alpha in (0, 1]");
  }
  std::unique_ptr<State> s(new State(options, clock));
  if (options.max_bytes > 0) {
    const int64_t by_bytes = options.max_bytes / s->BytesPerEntry();
    if (by_bytes < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "max_bytes ", options.max_bytes, " holds no entry (", s->BytesPerEntry(), " bytes each)"));
    }
    s->bound_ = s->bound_ == 0 ? by_bytes : std::min(s->bound_, by_bytes);
  }
  return s;
}

State::State(const Options& options, const Clock* clock)
    : options_(options),
      num_queues_(options.num_queues),
      clock_(clock),
      bound_(options.max_entries),
      map_(1 << 10),
      totals_(new std::atomic<int64_t>[options.num_queues]) {
  for (int q = 0; q < num_queues_; ++q) totals_[q].store(0, std::memory_order_relaxed);
  // Fold's decay for g empty windows, precomputed (std::pow was ~15% of a
  // decision's instructions when references recur less often than a window).
  for (int g = 0; g < 64; ++g) decay_[g] = std::pow(1 - options_.rate_alpha, static_cast<double>(g));
}

namespace {
constexpr uint32_t kCountMax = std::numeric_limits<uint32_t>::max();
uint32_t Saturate(uint64_t v) { return v > kCountMax ? kCountMax : static_cast<uint32_t>(v); }
}  // namespace

void State::Fold(Entry& e, int64_t window) const {
  if (window <= e.window) return;
  const double a = options_.rate_alpha;
  e.rate = (1 - a) * e.rate + a * e.cur;
  const int64_t gap = window - e.window - 1;  // empty windows in between
  if (gap >= 64) {
    e.rate = 0;  // (1 - a)^64 is negligible for any useful alpha
  } else if (gap > 0) {
    e.rate *= decay_[gap];
  }
  e.cur = 0;
  e.window = window;
}

double State::RateAt(const Entry& e, int64_t window) const {
  Entry copy;
  copy.rate = e.rate;
  copy.cur = e.cur;
  copy.window = e.window;
  Fold(copy, window);
  // R over completed windows; the current partial window counts when it is
  // already busier (makes a brand-new hot entry visible at once).
  const double per_window = std::max(copy.rate, static_cast<double>(copy.cur));
  return per_window * 1e9 / static_cast<double>(options_.rate_window_ns);
}

int64_t State::Bump(Entry& e, int qi, int64_t window) const {
  ++e.total;
  Fold(e, window);
  ++e.cur;
  uint32_t& c = e.counts[qi];
  if (c == kCountMax) return 0;
  ++c;
  if (e.max_queue < 0 || c > e.counts[e.max_queue] ||
      (c == e.counts[e.max_queue] && qi < e.max_queue)) {
    e.max_queue = qi;
  }
  return 1;
}

void State::InsertOrBump(RefId r, int qi, int64_t window, int64_t* added, bool* inserted) {
  Entry fresh;
  fresh.counts.assign(num_queues_, 0);
  fresh.seq = next_seq_.fetch_add(1, std::memory_order_relaxed);
  fresh.window = window;
  const int64_t got = Bump(fresh, qi, window);
  int64_t raced = 0;
  if (map_.upsert(r, [&](Entry& e) { raced = Bump(e, qi, window); }, std::move(fresh))) {
    entries_.fetch_add(1, std::memory_order_relaxed);
    *inserted = true;
    *added += got;
  } else {
    *added += raced;
  }
}

void State::RecordRest(absl::Span<const RefId> refs, size_t skip, int qi, int64_t window,
                       int64_t* added, bool* inserted) {
  for (size_t i = 0; i < refs.size(); ++i) {
    if (i == skip || history::RefSeenBefore(refs, i)) continue;
    const RefId r = refs[i];
    if (skip < refs.size() && r == refs[skip]) continue;
    int64_t got = 0;
    if (map_.update_fn(r, [&](Entry& e) { got = Bump(e, qi, window); })) {
      *added += got;
    } else {
      InsertOrBump(r, qi, window, added, inserted);
    }
  }
}

bool State::Contains(RefId ref) const { return map_.contains(ref); }

void State::Record(absl::Span<const RefId> refs, QueueId q, int64_t untracked) {
  const int qi = q.value();
  if (qi < 0 || qi >= num_queues_) return;
  if (refs.empty()) {
    if (untracked != 0) totals_[qi].fetch_add(untracked, std::memory_order_relaxed);
    return;
  }
  const int64_t window = clock_->NowNanos() / options_.rate_window_ns;
  int64_t added = untracked;
  bool inserted = false;
  RecordRest(refs, refs.size(), qi, window, &added, &inserted);
  totals_[qi].fetch_add(added, std::memory_order_relaxed);
  if (inserted && bound_ > 0 && entries_.load(std::memory_order_relaxed) > bound_) MaybeEvict();
}

QueueId State::RecordChosen(absl::Span<const RefId> refs, size_t lead,
                            absl::FunctionRef<QueueId(const RowView&)> choose,
                            int64_t untracked) {
  const int64_t window = clock_->NowNanos() / options_.rate_window_ns;
  const int n = num_queues_;
  QueueId chosen(-1);
  int64_t added = untracked;
  bool inserted = false;
  const bool held = map_.update_fn(refs[lead], [&](Entry& e) {
    chosen = choose(RowView(e.counts.data(), n));
    if (chosen.value() >= 0 && chosen.value() < n) added += Bump(e, chosen.value(), window);
  });
  if (!held) chosen = choose(RowView());
  const int qi = chosen.value();
  if (qi < 0 || qi >= n) return chosen;
  if (!held) InsertOrBump(refs[lead], qi, window, &added, &inserted);
  RecordRest(refs, lead, qi, window, &added, &inserted);
  totals_[qi].fetch_add(added, std::memory_order_relaxed);
  if (inserted && bound_ > 0 && entries_.load(std::memory_order_relaxed) > bound_) MaybeEvict();
  return chosen;
}

void State::Unrecord(absl::Span<const RefId> refs, QueueId q, int64_t untracked) {
  const int qi = q.value();
  if (qi < 0 || qi >= num_queues_) return;
  int64_t removed = untracked;
  for (size_t i = 0; i < refs.size(); ++i) {
    if (history::RefSeenBefore(refs, i)) continue;
    map_.update_fn(refs[i], [&](Entry& e) {
      if (e.counts[qi] == 0) return;
      --e.counts[qi];
      if (e.total > 0) --e.total;
      ++removed;
      if (e.max_queue != qi) return;
      int best = -1;
      for (int j = 0; j < num_queues_; ++j) {
        if (e.counts[j] > 0 && (best < 0 || e.counts[j] > e.counts[best])) best = j;
      }
      e.max_queue = best;
    });
  }
  totals_[qi].fetch_sub(removed, std::memory_order_relaxed);
}

void State::Set(RefId ref, absl::Span<const uint64_t> counts) {
  std::vector<int64_t> delta(num_queues_, 0);
  auto assign = [&](Entry& e) {
    e.total = 0;
    e.max_queue = -1;
    for (int q = 0; q < num_queues_; ++q) {
      const uint32_t v = Saturate(q < static_cast<int>(counts.size()) ? counts[q] : 0);
      delta[q] += static_cast<int64_t>(v) - static_cast<int64_t>(e.counts[q]);
      e.counts[q] = v;
      e.total += v;
      if (v > 0 && (e.max_queue < 0 || v > e.counts[e.max_queue])) e.max_queue = q;
    }
  };
  Entry fresh;
  fresh.counts.assign(num_queues_, 0);
  fresh.seq = next_seq_.fetch_add(1, std::memory_order_relaxed);
  fresh.window = clock_->NowNanos() / options_.rate_window_ns;
  if (!map_.update_fn(ref, assign)) {
    assign(fresh);
    if (map_.upsert(ref, assign, std::move(fresh))) {
      entries_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  for (int q = 0; q < num_queues_; ++q) totals_[q].fetch_add(delta[q], std::memory_order_relaxed);
}

bool State::ReadRow(RefId ref, uint64_t* row) const {
  const int n = num_queues_;
  return map_.find_fn(ref, [row, n](const Entry& e) {
    for (int q = 0; q < n; ++q) row[q] = e.counts[q];
  });
}

bool State::Get(RefId ref, Info* out) const {
  const int64_t window = clock_->NowNanos() / options_.rate_window_ns;
  return map_.find_fn(ref, [&](const Entry& e) {
    out->counts.assign(e.counts.begin(), e.counts.end());
    out->total = e.total;
    out->max_queue = QueueId(e.max_queue);
    out->rate_per_s = RateAt(e, window);
  });
}

void State::ReadTotals(int64_t* out) const {
  for (int q = 0; q < num_queues_; ++q) out[q] = totals_[q].load(std::memory_order_relaxed);
}

int64_t State::BytesPerEntry() const {
  // A bucket slot holds the key, the Entry and a partial-key byte; cuckoo
  // tables run between half and ~95% full, so count a slot and a half.
  const int64_t slot = sizeof(RefId) + sizeof(Entry) + 2;
  const int64_t heap = num_queues_ > 8 ? num_queues_ * static_cast<int64_t>(sizeof(uint32_t)) : 0;
  return slot * 3 / 2 + heap;
}

int64_t State::ApproxBytes() const {
  const int64_t slot = sizeof(RefId) + sizeof(Entry) + 2;
  const int64_t heap = num_queues_ > 8 ? num_queues_ * static_cast<int64_t>(sizeof(uint32_t)) : 0;
  return static_cast<int64_t>(map_.bucket_count() * map_.slot_per_bucket()) * slot +
         size() * heap;
}

void State::MaybeEvict() {
  if (!evict_mu_.TryLock()) return;  // another thread is evicting
  const int64_t target = static_cast<int64_t>(static_cast<double>(bound_) * options_.evict_to);
  if (entries_.load(std::memory_order_relaxed) > bound_) EvictPass(std::max<int64_t>(target, 0));
  evict_mu_.Unlock();
}

int64_t State::EvictTo(int64_t target) {
  TsanVisibleMutexLock l(&evict_mu_);
  if (entries_.load(std::memory_order_relaxed) <= target) return 0;
  return EvictPass(std::max<int64_t>(target, 0));
}

int64_t State::EvictPass(int64_t target) {
  const int64_t window = clock_->NowNanos() / options_.rate_window_ns;
  std::vector<Candidate>& cand = scratch_;
  cand.clear();
  // (entries_, not map_.size(): libcuckoo sums its per-lock counters unlocked.)
  cand.reserve(static_cast<size_t>(std::max<int64_t>(entries_.load(std::memory_order_relaxed), 0)) + 64);
  int64_t held = 0;
  {
    // The whole table is locked only while the candidates are copied out;
    // ranking and erasing run with records proceeding.
    auto lt = map_.lock_table();
    held = static_cast<int64_t>(lt.size());
    if (held <= target) return 0;
    for (const auto& kv : lt) {
      const Entry& e = kv.second;
      cand.push_back(Candidate{kv.first, RateAt(e, window), e.total, e.seq, e.max_queue, false, 0});
    }
  }
  const int64_t need = held - target;

  if (options_.eviction == EvictionMode::kDirect) {
    // Oldest first, hot or not.
    for (Candidate& c : cand) c.rank = static_cast<double>(c.seq);
  } else {
    // Crowding of each queue: how many held entries have it as their Q.
    std::vector<int64_t> crowd(num_queues_ + 1, 0);
    auto slot = [this](int32_t q) { return q < 0 ? num_queues_ : q; };
    for (const Candidate& c : cand) ++crowd[slot(c.queue)];
    const double mean = std::max(1.0, static_cast<double>(held) / num_queues_);
    // Protect the hottest entries of each queue (by R, then T).
    const int k = std::max(0, options_.protect_per_queue);
    std::vector<int64_t> top(static_cast<size_t>(num_queues_) * k, -1);
    auto hotter = [&cand](int64_t a, int64_t b) {
      if (cand[a].rate != cand[b].rate) return cand[a].rate > cand[b].rate;
      return cand[a].total > cand[b].total;
    };
    for (int64_t i = 0; i < static_cast<int64_t>(cand.size()); ++i) {
      Candidate& c = cand[i];
      if (options_.hot_rate_per_s > 0 && c.rate >= options_.hot_rate_per_s) c.is_protected = true;
      if (c.queue < 0 || k == 0) continue;
      int64_t* t = &top[static_cast<size_t>(c.queue) * k];
      // Insertion into a small sorted array (k is a handful).
      int64_t cur = i;
      for (int j = 0; j < k; ++j) {
        if (t[j] < 0) {
          t[j] = cur;
          break;
        }
        if (hotter(cur, t[j])) std::swap(cur, t[j]);
      }
    }
    for (int64_t idx : top) {
      if (idx >= 0) cand[idx].is_protected = true;
    }
    for (Candidate& c : cand) {
      const double crowd_ratio = static_cast<double>(crowd[slot(c.queue)]) / mean;
      // Low R, small T, crowded Q -> small rank -> evicted first.
      c.rank = (1.0 + c.rate) * (1.0 + std::log2(1.0 + static_cast<double>(c.total))) /
               std::max(crowd_ratio, 1e-9);
    }
  }
  // Unprotected entries first, then by rank.
  auto before = [](const Candidate& a, const Candidate& b) {
    if (a.is_protected != b.is_protected) return !a.is_protected;
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.ref < b.ref;
  };
  std::nth_element(cand.begin(), cand.begin() + (need - 1), cand.end(), before);
  int64_t forced = 0;
  int64_t evicted = 0;
  std::vector<int64_t> removed(num_queues_, 0);
  for (int64_t i = 0; i < need; ++i) {
    const Candidate& c = cand[i];
    // Erased under the key's bucket locks with its counts as they are now
    // (records may have landed since the scan), so totals stay exact.
    const bool erased = map_.erase_fn(c.ref, [&](Entry& e) {
      for (int q = 0; q < num_queues_; ++q) removed[q] += static_cast<int64_t>(e.counts[q]);
      return true;
    });
    if (!erased) continue;
    ++evicted;
    if (c.is_protected) ++forced;
  }
  for (int q = 0; q < num_queues_; ++q) totals_[q].fetch_sub(removed[q], std::memory_order_relaxed);
  entries_.fetch_sub(evicted, std::memory_order_relaxed);
  evictions_.fetch_add(evicted, std::memory_order_relaxed);
  forced_evictions_.fetch_add(forced, std::memory_order_relaxed);
  passes_.fetch_add(1, std::memory_order_relaxed);
  return evicted;
}

}  // namespace state
}  // namespace corral
