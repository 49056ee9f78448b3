#include "scheduler/hot_spots.h"

#include <algorithm>

namespace corral {
namespace scheduler {

namespace {
constexpr auto kRelaxed = std::memory_order_relaxed;
}  // namespace

std::pair<int, int> RebalanceRule::Pick(const std::vector<int64_t>& started,
                                        const std::vector<bool>& movable) const {
  const int n = static_cast<int>(started.size());
  if (n < 2) return {-1, -1};
  int64_t sum = 0;
  for (int64_t v : started) sum += v;
  const double mean = static_cast<double>(sum) / n;
  int hi = -1, lo = -1;
  for (int q = 0; q < n; ++q) {
    if (!movable[q]) continue;
    if (hi < 0 || started[q] > started[hi]) hi = q;
    if (lo < 0 || started[q] < started[lo]) lo = q;
  }
  if (hi < 0 || hi == lo) return {-1, -1};
  if (static_cast<double>(started[lo]) >= low * mean || static_cast<double>(started[hi]) <= high * mean) {
    return {-1, -1};
  }
  return {hi, lo};
}

std::vector<std::pair<int, int>> RebalanceRule::PlanMoves(
    const std::vector<int64_t>& started, std::vector<bool> movable,
    absl::FunctionRef<double(int hi, int lo, int64_t est_hi, int64_t est_lo)> move) const {
  std::vector<std::pair<int, int>> moved;
  std::vector<int64_t> est = started;
  // Each round closes a queue (a target, or a source with nothing to move).
  for (size_t round = 0; round < est.size(); ++round) {
    const auto [hi, lo] = Pick(est, movable);
    if (hi < 0) break;
    const double load = move(hi, lo, est[hi], est[lo]);
    if (load < 0) {
      movable[hi] = false;
      continue;
    }
    const int64_t l = static_cast<int64_t>(load + 0.5);
    est[hi] -= std::min(l, est[hi]);
    est[lo] += l;
    movable[lo] = false;
    moved.emplace_back(hi, lo);
  }
  return moved;
}

int SplitRule::Step(SplitState* st, const SplitSample& s) const {
  const int cap = std::max(1, std::min(max_k, HotSpots::kMaxSet));
  st->k = std::max(1, std::min(st->k, cap));
  while (static_cast<int>(st->steps.size()) > st->k - 1) st->steps.pop_back();
  while (static_cast<int>(st->steps.size()) < st->k - 1) st->steps.push_back({});
  const double r = std::max(0.0, s.aborts_per_commit);
  const double a = std::max(0.0, s.attempt_ns);
  const double w = s.wait_ns;
  if (a <= 0) return st->k;  // nothing ran: no evidence
  st->no_gain = false;
  if (!st->steps.empty()) {
    SplitState::Growth& last = st->steps.back();
    if (st->measure_saving) {
      last.saved_ns = std::max(0.0, st->wait_before_ns - w);
      if (require_gain && last.commits_before >= 0 && s.commits >= 0 && r - last.r_before >= min_abort_rate &&
          s.commits < (1 + min_gain) * last.commits_before) {
        // It added retries and no throughput: back, and hold.
        st->measure_saving = false;
        st->steps.pop_back();
        st->no_gain = true;
        st->next_hold = st->next_hold <= 0 ? hold_windows : std::min(2 * st->next_hold, max_hold_windows);
        st->hold = st->next_hold;
        st->grow_streak = 0;
        return --st->k;
      }
    } else {
      last.saved_ns *= saved_decay;
    }
  }
  st->measure_saving = false;
  if (st->hold > 0) {
    --st->hold;
    st->grow_streak = 0;
  }
  const bool grow = w > (1 + r) * a && st->k < cap && st->hold == 0;
  st->grow_streak = grow ? st->grow_streak + 1 : 0;
  // The first split waits for `grow_windows` in a row (noise, or a start
  // before the State spread the references, is not a hot spot); a split
  // reference grows a step a window while its wait says so (measured
  // online, YCSB Zipf 0.99: k 1 -> 5 took 2 s of a 5 s phase at a step per
  // two windows, the hot key's queues the bottleneck meanwhile).
  const int need = st->k == 1 ? std::max(1, grow_windows) : 1;
  if (grow && st->grow_streak >= need) {
    st->grow_streak = 0;
    st->steps.push_back({r, 0, s.commits});
    st->wait_before_ns = w;
    st->measure_saving = true;
    return ++st->k;
  }
  if (st->k > 1 && r >= min_abort_rate) {
    const SplitState::Growth& last = st->steps.back();
    if ((r - last.r_before) * a > last.saved_ns) {
      st->steps.pop_back();
      return --st->k;
    }
  }
  return st->k;
}

HotSpots::HotSpots(int num_queues, int max_entries)
    : num_queues_(num_queues),
      max_entries_(std::max(1, max_entries)),
      entries_(new Entry[static_cast<size_t>(std::max(1, max_entries))]),
      leads_(new LeadTable[static_cast<size_t>(std::max(1, num_queues))]) {}

bool HotSpots::Set(RefId ref, const std::vector<int>& queues_in) {
  std::vector<int> queues;
  for (int q : queues_in) {
    if (q >= 0 && q < num_queues_ && std::find(queues.begin(), queues.end(), q) == queues.end()) {
      queues.push_back(q);
    }
  }
  if (queues.size() > static_cast<size_t>(kMaxSet)) queues.resize(kMaxSet);
  const uint64_t key = ref.value();
  Entry* slot = nullptr;
  Entry* free_slot = nullptr;
  for (int i = 0; i < max_entries_; ++i) {
    Entry& e = entries_[i];
    const uint64_t r = e.ref.load(kRelaxed);
    if (r == key) slot = &e;
    if (r == 0 && free_slot == nullptr) free_slot = &e;
  }
  if (queues.size() <= 1) {
    if (slot != nullptr) {
      slot->gen.fetch_add(1, std::memory_order_acq_rel);
      slot->ref.store(0, std::memory_order_release);
      slot->k.store(0, kRelaxed);
      slot->gen.fetch_add(1, std::memory_order_release);
      active_.fetch_sub(1, std::memory_order_acq_rel);
    }
    return true;
  }
  const bool fresh = slot == nullptr;
  if (fresh) slot = free_slot;
  if (slot == nullptr) return false;
  slot->gen.fetch_add(1, std::memory_order_acq_rel);  // odd: readers retry
  for (size_t i = 0; i < queues.size(); ++i) slot->queues[i].store(queues[i], kRelaxed);
  slot->k.store(static_cast<int32_t>(queues.size()), kRelaxed);
  slot->ref.store(key, std::memory_order_release);
  slot->gen.fetch_add(1, std::memory_order_release);
  if (fresh) active_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

void HotSpots::Clear() {
  for (int i = 0; i < max_entries_; ++i) {
    if (entries_[i].ref.load(kRelaxed) != 0) Set(RefId(entries_[i].ref.load(kRelaxed)), {});
  }
}

std::vector<int> HotSpots::Get(RefId ref) const {
  for (int i = 0; i < max_entries_; ++i) {
    const Entry& e = entries_[i];
    if (e.ref.load(std::memory_order_acquire) != ref.value()) continue;
    std::vector<int> out;
    for (;;) {
      const uint32_t g = e.gen.load(std::memory_order_acquire);
      if (g & 1) continue;
      out.clear();
      const int k = e.k.load(kRelaxed);
      for (int j = 0; j < k; ++j) out.push_back(e.queues[j].load(kRelaxed));
      std::atomic_thread_fence(std::memory_order_acquire);
      if (e.gen.load(kRelaxed) == g) break;
    }
    if (e.ref.load(std::memory_order_acquire) != ref.value()) return {};
    return out;
  }
  return {};
}

int HotSpots::K(RefId ref) const {
  if (empty()) return 0;
  for (int i = 0; i < max_entries_; ++i) {
    const Entry& e = entries_[i];
    if (e.ref.load(std::memory_order_acquire) == ref.value()) return e.k.load(kRelaxed);
  }
  return 0;
}

bool HotSpots::Route(RefId lead, QueueId* q) const {
  if (empty()) return false;
  const uint64_t key = lead.value();
  for (int i = 0; i < max_entries_; ++i) {
    const Entry& e = entries_[i];
    if (e.ref.load(std::memory_order_acquire) != key) continue;
    int set[kMaxSet];
    int k = 0;
    for (;;) {
      const uint32_t g = e.gen.load(std::memory_order_acquire);
      if (g & 1) continue;
      k = std::min<int>(e.k.load(kRelaxed), kMaxSet);
      for (int j = 0; j < k; ++j) set[j] = e.queues[j].load(kRelaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (e.gen.load(kRelaxed) == g) break;
    }
    if (k < 2 || e.ref.load(std::memory_order_acquire) != key) return false;
    // Round-robin start, then the shortest run queue from there.
    const int start = static_cast<int>(e.cursor.fetch_add(1, kRelaxed) % static_cast<uint32_t>(k));
    int best = set[start];
    if (probe_) {
      int64_t best_len = probe_(best);
      for (int j = 1; j < k; ++j) {
        const int cand = set[(start + j) % k];
        const int64_t len = probe_(cand);
        if (len < best_len) {
          best = cand;
          best_len = len;
        }
      }
    }
    *q = QueueId(best);
    return true;
  }
  return false;
}

std::vector<std::pair<RefId, int>> HotSpots::Entries() const {
  std::vector<std::pair<RefId, int>> out;
  for (int i = 0; i < max_entries_; ++i) {
    const uint64_t r = entries_[i].ref.load(std::memory_order_acquire);
    const int k = entries_[i].k.load(kRelaxed);
    if (r != 0 && k > 1) out.emplace_back(RefId(r), k);
  }
  return out;
}

int HotSpots::MaxK() const {
  int k = 1;
  for (const auto& e : Entries()) k = std::max(k, e.second);
  return k;
}

int RebalanceRule::PickLead(int64_t hi, int64_t lo, const std::vector<LeadCandidate>& leads) const {
  for (size_t i = 0; i < leads.size(); ++i) {
    if (leads[i].weight < min_lead_weight || leads[i].moved_lately || leads[i].hot || !Worth(hi, lo, leads[i].load)) continue;
    return static_cast<int>(i);
  }
  return -1;
}

void HotSpots::NoteLead(int q, RefId lead) {
  if (q < 0 || q >= num_queues_ || lead.value() == 0) return;
  LeadTable& t = leads_[q];
  const uint64_t key = lead.value();
  // Misra-Gries over kLeadSlots counters; races only blur the counts.
  LeadSlot* empty = nullptr;
  for (LeadSlot& s : t.slots) {
    if (s.ref.load(kRelaxed) == key) {
      if (s.weight.load(kRelaxed) < kMaxLeadWeight) s.weight.fetch_add(1, kRelaxed);
      return;
    }
    if (empty == nullptr && s.weight.load(kRelaxed) <= 0) empty = &s;
  }
  if (empty != nullptr) {
    empty->ref.store(key, kRelaxed);
    empty->weight.store(1, kRelaxed);
    return;
  }
  for (LeadSlot& s : t.slots) s.weight.fetch_sub(1, kRelaxed);
}

void HotSpots::AgeLeads() {
  for (int q = 0; q < num_queues_; ++q) {
    for (LeadSlot& s : leads_[q].slots) s.weight.store(s.weight.load(kRelaxed) / 2, kRelaxed);
  }
}

int HotSpots::Leads(int q, Lead* out) const {
  if (q < 0 || q >= num_queues_) return 0;
  int n = 0;
  for (const LeadSlot& s : leads_[q].slots) {
    const uint64_t r = s.ref.load(kRelaxed);
    const int64_t w = s.weight.load(kRelaxed);
    if (r == 0 || w <= 0) continue;
    bool dup = false;  // a race can name one reference in two slots
    for (int i = 0; i < n; ++i) {
      if (out[i].ref.value() == r) {
        out[i].weight += w;
        dup = true;
      }
    }
    if (!dup) out[n++] = Lead{RefId(r), w};
  }
  std::sort(out, out + n, [](const Lead& a, const Lead& b) {
    return a.weight != b.weight ? a.weight > b.weight : a.ref.value() < b.ref.value();
  });
  return n;
}

RefId HotSpots::DominantLead(int q, int64_t* weight) const {
  Lead leads[kLeadSlots];
  const int n = Leads(q, leads);
  if (weight != nullptr) *weight = n > 0 ? leads[0].weight : 0;
  return n > 0 ? leads[0].ref : RefId(0);
}

uint32_t HotSpots::Routed(RefId ref) const {
  for (int i = 0; i < max_entries_; ++i) {
    const Entry& e = entries_[i];
    if (e.ref.load(std::memory_order_acquire) == ref.value()) return e.cursor.load(kRelaxed);
  }
  return 0;
}

}  // namespace scheduler
}  // namespace corral
