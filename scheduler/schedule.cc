#include "scheduler/schedule.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <memory>

#include "absl/container/inlined_vector.h"
#include "common/clock.h"
#include "common/hash.h"
#include "history/ref_table.h"

namespace corral {
namespace scheduler {
namespace {

// Per-thread scratch, grown to the largest queue count (and reference count)
// a thread has seen.
struct Scratch {
  std::vector<double> scores;
  std::vector<uint64_t> row;
  std::vector<int64_t> totals;
  std::vector<double> weights;
  std::vector<history::History::Counts> counts;  // GetMany
  std::unique_ptr<bool[]> known;                  // GetMany
  void Fit(int n) {
    if (static_cast<int>(scores.size()) < n) {
      scores.resize(n);
      row.resize(n);
      totals.resize(n);
    }
  }
  double* Weights(size_t k) {
    if (weights.size() < k) weights.resize(std::max<size_t>(k, 16));
    return weights.data();
  }
};
thread_local Scratch tls_scratch;

// This thread's latest learned Place: what it recorded in the State, so that
// Unplace takes back exactly that.
struct LastPlace {
  const void* owner = nullptr;  // Schedule
  const Txn* txn = nullptr;
  int32_t queue = -1;
  bool partial = false;          // scoring-only: `tracked` + `untracked`
  std::vector<RefId> tracked;    // references given a row
  int64_t untracked = 0;         // references counted in the total only
};
thread_local LastPlace tls_last;

// Per-thread History read cache (see Schedule's constructor). A slot is
// valid when its key matches and either it was read while the History was
// frozen at the current epoch, or (not frozen) it is younger than
// weight_cache_ns.
struct WeightCache {
  static constexpr int kSize = 4096;  // 32 bytes each: 128 KiB per thread
  static constexpr uint64_t kUnknown = ~uint64_t{0};  // aborts of a miss
  struct Slot {
    uint64_t key = 0;
    int64_t stamp = INT64_MIN;  // read time, or epoch (frozen read)
    uint64_t aborts = 0;        // kUnknown: not in the History
    uint64_t commits = 0;
  };
  uint64_t owner = 0;  // Schedule instance
  int64_t generation = -1;  // History regenerations seen
  Slot slots[kSize];
  // Bit i set: slot i was read while frozen (its stamp is an epoch, not a
  // time); a bitmap keeps Slot at 32 bytes.
  uint64_t frozen_bits[kSize / 64] = {};
};
thread_local std::unique_ptr<WeightCache> tls_cache;
std::atomic<uint64_t> next_instance{1};

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

}  // namespace

Schedule::Schedule(const history::History* history, state::State* state, const Policy& policy,
                   uint64_t seed, const ScheduleOptions& options)
    : history_(history),
      weight_cache_ns_(options.weight_cache_ns),
      state_scoring_only_(options.state_scoring_only),
      lead_seeds_rows_(options.lead_seeds_rows),
      ref_multiplicity_(options.ref_multiplicity),
      established_lead_share_(options.established_lead_share),
      lead_attributed_aborts_(options.lead_attributed_aborts),
      hot_spots_(options.hot_spots),
      instance_(next_instance.fetch_add(1)),
      state_(state),
      num_queues_(state->num_queues()),
      policy_(Pack(policy)),
      rng_(Mix64(seed)),
      seeds_(new std::atomic<int64_t>[static_cast<size_t>(state->num_queues())]) {
  for (int q = 0; q < num_queues_; ++q) seeds_[q].store(0, std::memory_order_relaxed);
}

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
                         std::vector<double>* scores_out, absl::Span<const uint16_t> mult) const {
  return DecideWith(policy(), refs, partition_key, scores_out, mult);
}

QueueId Schedule::DecideWith(const Policy& p, absl::Span<const RefId> refs,
                             uint64_t partition_key, std::vector<double>* scores_out,
                             absl::Span<const uint16_t> mult) const {
  if (p.kind == PolicyKind::kLearned) return DecideLearned(p, refs, scores_out, mult);
  if (scores_out != nullptr) scores_out->assign(num_queues_, 0.0);
  if (p.kind == PolicyKind::kHardPartition) {
    return QueueId(static_cast<int32_t>(partition_key % static_cast<uint64_t>(num_queues_)));
  }
  const uint64_t r = Mix64(rng_.fetch_add(kGolden, std::memory_order_relaxed));
  return QueueId(static_cast<int32_t>(r % static_cast<uint64_t>(num_queues_)));
}

Schedule::ReadMode Schedule::ReadModeNow() const {
  ReadMode m;
  // epoch before frozen before the counters (see History::epoch()).
  m.epoch = history_->epoch();
  m.frozen = history_->frozen();
  m.cached = weight_cache_ns_ > 0;
  if (m.cached && !m.frozen) m.now = MonoNanos();
  return m;
}

double Schedule::Weight(RefId r, Weighting w, const ReadMode& m) const {
  history::History::Counts counts;
  const bool known = m.cached ? CachedCounts(r, m, &counts) : history_->Get(r, &counts);
  return known ? history::History::WeightOf(counts, w) : 0.0;
}

bool Schedule::CachedCounts(RefId r, const ReadMode& m, history::History::Counts* out) const {
  if (tls_cache == nullptr) tls_cache = std::make_unique<WeightCache>();
  WeightCache& c = *tls_cache;
  const int64_t gen = history_->regenerations();
  if (c.owner != instance_ || c.generation != gen) {
    for (auto& slot : c.slots) slot.stamp = INT64_MIN;
    std::fill(std::begin(c.frozen_bits), std::end(c.frozen_bits), 0);
    c.owner = instance_;
    c.generation = gen;
  }
  const size_t i = Mix64(r.value()) & (WeightCache::kSize - 1);
  WeightCache::Slot& slot = c.slots[i];
  uint64_t& bits = c.frozen_bits[i / 64];
  const uint64_t bit = uint64_t{1} << (i % 64);
  bool valid = slot.stamp != INT64_MIN && slot.key == r.value();
  if (valid) {
    if (m.frozen) {
      valid = (bits & bit) != 0 && slot.stamp == m.epoch;
    } else {
      valid = (bits & bit) == 0 && m.now - slot.stamp <= weight_cache_ns_;
    }
  }
  if (!valid) {
    history::History::Counts got;
    const bool known = history_->Get(r, &got);
    slot.key = r.value();
    slot.aborts = known ? got.aborts : WeightCache::kUnknown;
    slot.commits = got.commits;
    if (m.frozen) {
      slot.stamp = m.epoch;
      bits |= bit;
    } else {
      slot.stamp = m.now;
      bits &= ~bit;
    }
  }
  if (slot.aborts == WeightCache::kUnknown) return false;
  out->aborts = slot.aborts;
  out->commits = slot.commits;
  return true;
}

int Schedule::PickQueue(const double* scores, bool advance, const std::atomic<int64_t>* seeds) const {
  const int n = num_queues_;
  Scratch& s = tls_scratch;
  s.Fit(n);
  int64_t* totals = s.totals.data();
  state_->ReadTotals(totals);
  double top = 0;
  for (int q = 0; q < n; ++q) top = std::max(top, scores[q]);
  const double floor = top - top * 1e-9;  // ties within a relative 1e-9
  // Among the tied queues, the smallest total; among equal totals, the first
  // at or after a cursor that every placement advances, so deciders that
  // read the same totals at once (the first transactions of a run) still
  // spread over the queues, and a fresh State fills round-robin. Decide()
  // reads the cursor without advancing it (it then agrees with the next
  // Place). One deciding thread: deterministic.
  const uint64_t cursor = advance ? tie_cursor_.fetch_add(1, std::memory_order_relaxed)
                                  : tie_cursor_.load(std::memory_order_relaxed);
  auto seeded = [seeds](int q) { return seeds == nullptr ? 0 : seeds[q].load(std::memory_order_relaxed); };
  int chosen = -1;
  int64_t chosen_total = 0, chosen_seeds = 0;
  int equal = 0;
  for (int q = 0; q < n; ++q) {
    if (scores[q] < floor) continue;
    const int64_t t = totals[q];
    const int64_t sd = seeded(q);
    if (chosen < 0 || sd < chosen_seeds || (sd == chosen_seeds && t < chosen_total)) {
      chosen = q;
      chosen_total = t;
      chosen_seeds = sd;
      equal = 1;
    } else if (sd == chosen_seeds && t == chosen_total) {
      ++equal;
    }
  }
  if (equal > 1) {
    const int start = static_cast<int>(cursor % static_cast<uint64_t>(n));
    for (int i = 0; i < n; ++i) {
      const int q = (start + i) % n;
      if (scores[q] >= floor && totals[q] == chosen_total && seeded(q) == chosen_seeds) return q;
    }
  }
  return chosen;
}

Schedule::WeightSummary Schedule::Weights(const Policy& p, absl::Span<const RefId> refs,
                                          absl::Span<const uint16_t> mult, double* w,
                                          bool distinct) const {
  const bool use_mult = ref_multiplicity_ && !mult.empty();
  const ReadMode m = ReadModeNow();
  WeightSummary ws;
  history::History::Counts* counts = nullptr;
  bool* known = nullptr;
  // One batch: every reference's History lookup overlaps the others' misses,
  // and the State lines the placement will touch load meanwhile.
  if (!m.cached) history_->PrefetchBuckets(refs);
  state_->Prefetch(refs);  // its node loads wait for its buckets only
  if (!m.cached) {
    Scratch& s = tls_scratch;
    if (s.counts.size() < refs.size()) {
      s.counts.resize(std::max<size_t>(refs.size(), 16));
      s.known.reset(new bool[s.counts.size()]);
    }
    counts = s.counts.data();
    known = s.known.get();
    history_->GetMany(refs, counts, known);
  }
  for (size_t i = 0; i < refs.size(); ++i) {
    if (!distinct && history::RefSeenBefore(refs, i)) {
      w[i] = -1;  // already counted
      continue;
    }
    ++ws.distinct;
    if (m.cached) {
      w[i] = Weight(refs[i], p.weighting, m);
    } else {
      w[i] = known[i] ? history::History::WeightOf(counts[i], p.weighting) : 0.0;
    }
    if (use_mult && i < mult.size() && mult[i] > 1) w[i] *= mult[i];
    if (w[i] > ws.best) {
      ws.best = w[i];
      ws.lead = i;
      ws.tied = 1;
    } else if (w[i] == ws.best && w[i] > 0) {
      ++ws.tied;
    }
  }
  return ws;
}

Schedule::WeightSummary Schedule::Established(absl::Span<const RefId> refs, const double* w,
                                              absl::Span<const uint16_t> mult,
                                              WeightSummary ws) const {
  const double floor = ws.best * established_lead_share_;
  uint64_t* row = tls_scratch.row.data();
  size_t top = ws.lead;
  uint64_t top_placed = 0;
  // The candidates with rows (the first few; a transaction has one to three).
  constexpr int kCand = 8;
  size_t cand[kCand];
  uint64_t cand_placed[kCand];
  int ncand = 0;
  for (size_t i = 0; i < refs.size(); ++i) {
    if (w[i] <= 0 || w[i] < floor || !state_->ReadRow(refs[i], row)) continue;
    uint64_t placed = 0;
    for (int q = 0; q < num_queues_; ++q) placed += row[q];
    if (ncand < kCand) {
      cand[ncand] = i;
      cand_placed[ncand++] = placed;
    }
    if (placed > top_placed || (placed == top_placed && placed > 0 && w[i] > w[top])) {
      top_placed = placed;
      top = i;
    }
  }
  // Rows within 0.8x of the top's placements are alike (two warehouses of a
  // uniform load): the one the transaction names in more statements leads
  // (a remote Payment's home warehouse: 5 statements, its customer's 3-5).
  auto m = [&](size_t i) -> int { return ref_multiplicity_ && i < mult.size() ? mult[i] : 1; };
  if (top_placed > 0) {
    size_t pick = top;
    for (int c = 0; c < ncand; ++c) {
      if (cand_placed[c] * 5 >= top_placed * 4 && m(cand[c]) > m(pick)) pick = cand[c];
    }
    top = pick;
  }
  if (top_placed > 0 && (top != ws.lead || ws.tied > 1)) {
    ws.lead = top;
    ws.best = w[top];
    ws.tied = 1;
  }
  return ws;
}

bool Schedule::Seeds(const Policy& p, absl::Span<const RefId> refs, const WeightSummary& ws) const {
  return lead_seeds_rows_ && p.aggregation == Aggregation::kMax && ws.tied <= 1 && ws.best > 0 &&
         ws.lead < refs.size() && !state_->Contains(refs[ws.lead]);
}

void Schedule::Score(const Policy& p, absl::Span<const RefId> refs, const double* w, double best,
                     double* scores) const {
  const int n = num_queues_;
  uint64_t* row = tls_scratch.row.data();
  std::fill(scores, scores + n, 0.0);
  if (p.aggregation == Aggregation::kSum) {
    for (size_t i = 0; i < refs.size(); ++i) {
      if (w[i] <= 0 || !state_->ReadRow(refs[i], row)) continue;
      for (int q = 0; q < n; ++q) scores[q] += w[i] * static_cast<double>(row[q]);
    }
  } else if (best > 0) {
    for (size_t i = 0; i < refs.size(); ++i) {
      if (w[i] != best || !state_->ReadRow(refs[i], row)) continue;
      for (int q = 0; q < n; ++q) scores[q] = std::max(scores[q], best * static_cast<double>(row[q]));
    }
  }
}

QueueId Schedule::DecideLearned(const Policy& p, absl::Span<const RefId> refs,
                                std::vector<double>* scores_out,
                                absl::Span<const uint16_t> mult) const {
  const int n = num_queues_;
  Scratch& s = tls_scratch;
  s.Fit(n);
  double* w = s.Weights(refs.size());
  const WeightSummary ws = Weights(p, refs, mult, w);
  double* scores = s.scores.data();
  Score(p, refs, w, ws.best, scores);
  if (scores_out != nullptr) scores_out->assign(scores, scores + n);
  return QueueId(PickQueue(scores, /*advance=*/false, Seeds(p, refs, ws) ? seeds_.get() : nullptr));
}

QueueId Schedule::PlaceLearned(const Policy& p, Txn& txn) {
  const absl::Span<const RefId> refs = txn.refs;
  const int n = num_queues_;
  Scratch& s = tls_scratch;
  s.Fit(n);
  double* w = s.Weights(refs.size());
  WeightSummary ws = Weights(p, refs, txn.ref_mult, w, txn.refs_distinct);
  if (established_lead_share_ > 0 && lead_seeds_rows_ && p.aggregation == Aggregation::kMax && ws.best > 0) {
    ws = Established(refs, w, txn.ref_mult, ws);
  }
  const RefId lead = ws.best > 0 && ws.lead < refs.size() ? refs[ws.lead] : RefId(0);

  // What the State records: every reference, or (scoring-only) those with a
  // weight > 0, the rest counted in the total only.
  LastPlace& last = tls_last;
  last.owner = this;
  last.txn = &txn;
  last.partial = state_scoring_only_;
  absl::Span<const RefId> rec = refs;
  size_t rec_lead = ws.lead;
  int64_t untracked = 0;
  if (state_scoring_only_) {
    last.tracked.clear();
    for (size_t i = 0; i < refs.size(); ++i) {
      if (w[i] <= 0) continue;
      // A row is created only by a transaction its reference leads (top
      // weight): a reference first seen beside a heavier one would otherwise
      // inherit that one's queue for good (header: "Lead-seeded rows").
      if (lead_seeds_rows_ && w[i] < ws.best && !state_->Contains(refs[i])) continue;
      if (i == ws.lead) rec_lead = last.tracked.size();
      last.tracked.push_back(refs[i]);
    }
    rec = last.tracked;
    untracked = ws.distinct - static_cast<int64_t>(last.tracked.size());
    last.untracked = untracked;
  }

  QueueId q;
  if (hot_spots_ != nullptr && ws.best > 0 && hot_spots_->Route(lead, &q)) {
    // A split hot reference: one of its k queues, the State records it there.
    if (lead_attributed_aborts_) {
      txn.placed_by = lead;
      txn.placed_split = true;
    }
    state_->Record(rec, q, untracked, txn.refs_distinct);
  } else if (p.aggregation == Aggregation::kMax && ws.tied <= 1 && !rec.empty()) {
    // One State operation on the lead reads its row, scores and records; no
    // reference scores when best == 0 (every queue ties at 0).
    const double best = ws.best;
    bool seeding = false;
    auto place = [&] {
      return state_->RecordChosen(
          rec, rec_lead,
          [&](const state::State::RowView& row) {
            double* scores = tls_scratch.scores.data();
            if (best > 0 && !row.empty()) {
              for (int i = 0; i < n; ++i) scores[i] = best * static_cast<double>(row[i]);
            } else {
              std::fill(scores, scores + n, 0.0);
            }
            const bool seed = seeding && row.empty();
            const int qi = PickQueue(scores, /*advance=*/true, seed ? seeds_.get() : nullptr);
            if (seed && qi >= 0) seeds_[qi].fetch_add(1, std::memory_order_relaxed);
            return QueueId(qi);
          },
          untracked, txn.refs_distinct);
    };
    if (lead_attributed_aborts_) txn.placed_by = lead;
    if (lead_seeds_rows_ && best > 0 && !state_->Contains(rec[rec_lead])) {
      // Seeding a new row: one seed at a time, so that concurrent seeds see
      // each other's choices (and a second transaction of the same reference
      // finds the first one's row) instead of all reading the same totals.
      std::lock_guard<std::mutex> l(seed_mu_);
      seeding = true;
      q = place();
    } else {
      q = place();
    }
  } else {
    // Sum, several references sharing the top weight, or nothing to record
    // a row for.
    double* scores = s.scores.data();
    Score(p, refs, w, ws.best, scores);
    q = QueueId(PickQueue(scores, /*advance=*/true));
    state_->Record(rec, q, untracked, txn.refs_distinct);
  }
  last.queue = q.value();
  if (hot_spots_ != nullptr && ws.best > 0) {
    thread_local uint32_t vote_tick = 0;
    if ((++vote_tick & 7) == 0) hot_spots_->NoteLead(q.value(), lead);
  }
  return q;
}

void Schedule::Unplace(const Txn& txn, QueueId q) {
  LastPlace& last = tls_last;
  if (last.owner == this && last.txn == &txn && last.queue == q.value()) {
    last.txn = nullptr;
    if (last.partial) {
      state_->Unrecord(last.tracked, q, last.untracked);
      return;
    }
  }
  state_->Unrecord(txn.refs, q);
}

QueueId Schedule::Place(Txn& txn) {
  bool recorded = false;
  return Place(txn, &recorded);
}

QueueId Schedule::Place(Txn& txn, bool* state_recorded) {
  const Policy p = policy();
  const bool learned = p.kind == PolicyKind::kLearned;
  txn.placed_by = RefId(0);  // PlaceLearned names the lead (lead_attributed_aborts)
  txn.placed_split = false;
  const QueueId q =
      learned ? PlaceLearned(p, txn) : DecideWith(p, txn.refs, txn.partition_key, nullptr, {});
  txn.queue = q;
  *state_recorded = learned;
  return q;
}

}  // namespace scheduler
}  // namespace corral
