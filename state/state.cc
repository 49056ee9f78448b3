#include "state/state.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "history/aging.h"

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
      index_(1 << 10, NodeBytes(options.num_queues)),
      totals_(new std::atomic<int64_t>[options.num_queues]) {
  static_assert(sizeof(Node) == 64, "State node header: one cache line");
  for (int q = 0; q < num_queues_; ++q) totals_[q].store(0, std::memory_order_relaxed);
  // Fold's decay for g empty windows, precomputed (std::pow was ~15% of a
  // decision's instructions when references recur less often than a window).
  for (int g = 0; g < 64; ++g) decay_[g] = std::pow(1 - options_.rate_alpha, static_cast<double>(g));
}

namespace {
constexpr uint32_t kCountMax = std::numeric_limits<uint32_t>::max();
uint32_t Saturate(uint64_t v) { return v > kCountMax ? kCountMax : static_cast<uint32_t>(v); }
constexpr auto kRelaxed = std::memory_order_relaxed;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

void State::LockNode(Node* n) {
  for (int spins = 0;; ++spins) {
    if (n->latch.load(kRelaxed) == 0 && n->latch.exchange(1, std::memory_order_acquire) == 0) return;
    if (spins < 64) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
}

State::Node* State::FindLocked(RefId r) const {
  for (;;) {
    Node* n = static_cast<Node*>(index_.Find(r.value()));
    if (n == nullptr) return nullptr;
    LockNode(n);
    if (n->dead.load(kRelaxed) == 0) return n;
    // Being erased (or erased since the lookup): look again.
    UnlockNode(n);
    CpuRelax();
  }
}


void State::Prefetch(absl::Span<const RefId> refs) const {
  history::ReaderDomain::Guard g(index_.domain());
  const int lines = static_cast<int>((NodeBytes(num_queues_) + 63) / 64);
  for (RefId r : refs) index_.PrefetchBucket(r.value());
  for (RefId r : refs) index_.PrefetchNode(r.value(), std::min(lines, 2));
}

void State::Fold(double* rate, uint32_t* cur, int64_t* win, int64_t window, uint16_t born_frac) const {
  if (window <= *win) return;
  const double a = options_.rate_alpha;
  double c = *cur;
  if (*rate == 0) {
    // The first window seen (or the first after R decayed to nothing) is R
    // itself: blending it with the 0 before it would halve a new reference's
    // rate for its first seconds. A reference born inside that window
    // counted arrivals over its part of it only: R is their pace there; a
    // part under a quarter of the window says too little and is not folded
    // (the next window, whole, is the first).
    const double lived = 1.0 - born_frac / 65536.0;  // of the window
    if (lived < 0.25) {
      c = 0;
    } else if (lived < 1.0) {
      c = c / lived;
    }
    *rate = c;
  } else {
    *rate = (1 - a) * *rate + a * c;
  }
  const int64_t gap = window - *win - 1;  // empty windows in between
  if (gap >= 64) {
    *rate = 0;  // (1 - a)^64 is negligible for any useful alpha
  } else if (gap > 0) {
    *rate *= decay_[gap];
  }
  *cur = 0;
  *win = window;
}

double State::RateAt(const Node& n, int64_t now_ns) const {
  const int64_t window = now_ns / options_.rate_window_ns;
  double rate = n.rate.load(kRelaxed);
  uint32_t cur = n.cur.load(kRelaxed);
  const int64_t node_win = n.window.load(kRelaxed);
  int64_t win = node_win;
  const uint16_t born_frac = n.born_frac.load(kRelaxed);
  Fold(&rate, &cur, &win, window, born_frac);
  // R over completed windows; the current partial window counts when its
  // pace is faster (makes a brand-new hot entry visible at once). Its pace:
  // its count over the part of the window gone since the window began or
  // the reference was born, whichever is later, once a quarter of a window
  // has gone or 64 arrivals came (before that, the count alone: a handful
  // of arrivals extrapolated 10x would be noise). Measured online: a
  // warehouse read 0.4 s into a run had R = 0.4x its arrival rate with the
  // count alone; read 0.2-0.4 s into a run that began late in a window,
  // 0.1-0.4x with the pace since the window began, and the rebalancer
  // judged it too light to move.
  const int64_t w = options_.rate_window_ns;
  // Still in the window it was born in: its part of it.
  const double since = win == node_win ? born_frac / 65536.0 : 0.0;
  const double gone = std::max(0.0, static_cast<double>(now_ns % w) / static_cast<double>(w) - since);
  const double pace =
      gone >= 0.25 || cur >= 64 ? static_cast<double>(cur) / std::max(gone, 0.01) : static_cast<double>(cur);
  const double per_window = std::max(rate, pace);
  return per_window * 1e9 / static_cast<double>(w);
}

int64_t State::Bump(Node* n, int qi, int64_t window) const {
  n->total.store(n->total.load(kRelaxed) + 1, kRelaxed);
  double rate = n->rate.load(kRelaxed);
  uint32_t cur = n->cur.load(kRelaxed);
  int64_t win = n->window.load(kRelaxed);
  if (window > win) {
    Fold(&rate, &cur, &win, window, n->born_frac.load(kRelaxed));
    n->born_frac.store(0, kRelaxed);  // its first window is folded
  }
  n->rate.store(rate, kRelaxed);
  n->cur.store(cur + 1, kRelaxed);
  n->window.store(win, kRelaxed);
  std::atomic<uint32_t>* counts = n->counts();
  const uint32_t c = counts[qi].load(kRelaxed);
  if (c == kCountMax) return 0;
  counts[qi].store(c + 1, kRelaxed);
  const int32_t mq = n->max_queue.load(kRelaxed);
  if (mq < 0 || c + 1 > counts[mq].load(kRelaxed) ||
      (c + 1 == counts[mq].load(kRelaxed) && qi < mq)) {
    n->max_queue.store(qi, kRelaxed);
  }
  return 1;
}

State::WindowAt State::Now() const {
  const int64_t now = clock_->NowNanos();
  const int64_t w = options_.rate_window_ns;
  WindowAt at;
  at.index = now / w;
  at.frac = static_cast<uint16_t>(std::min<int64_t>(65535, (now % w) * 65536 / w));
  return at;
}

State::Node* State::InitNode(history::RefNode* x, WindowAt at) {
  Node* n = static_cast<Node*>(x);
  new (&n->latch) std::atomic<uint32_t>(0);
  new (&n->max_queue) std::atomic<int32_t>(-1);
  new (&n->total) std::atomic<uint64_t>(0);
  new (&n->seq) std::atomic<uint64_t>(next_seq_.fetch_add(1, kRelaxed));
  new (&n->rate) std::atomic<double>(0);
  new (&n->window) std::atomic<int64_t>(at.index);
  new (&n->cur) std::atomic<uint32_t>(0);
  new (&n->dead) std::atomic<uint16_t>(0);
  new (&n->born_frac) std::atomic<uint16_t>(at.frac);
  std::atomic<uint32_t>* counts = n->counts();
  for (int q = 0; q < num_queues_; ++q) new (&counts[q]) std::atomic<uint32_t>(0);
  return n;
}

void State::InsertOrBump(RefId r, int qi, WindowAt at, int64_t* added, bool* inserted) {
  for (;;) {
    int64_t got = 0;
    auto [rn, fresh] = index_.FindOrInsert(r.value(), [&](history::RefNode* x) {
      Node* n = InitNode(x, at);
      got = Bump(n, qi, at.index);  // not yet published: no latch needed
    });
    if (fresh) {
      *inserted = true;
      *added += got;
      return;
    }
    Node* n = static_cast<Node*>(rn);
    LockNode(n);
    if (n->dead.load(kRelaxed) == 0) {
      *added += Bump(n, qi, at.index);
      UnlockNode(n);
      return;
    }
    UnlockNode(n);  // erased meanwhile: insert afresh
  }
}

void State::RecordRest(absl::Span<const RefId> refs, size_t skip, int qi, WindowAt at,
                       int64_t* added, bool* inserted, bool distinct) {
  for (size_t i = 0; i < refs.size(); ++i) {
    if (i == skip || (!distinct && history::RefSeenBefore(refs, i))) continue;
    const RefId r = refs[i];
    if (skip < refs.size() && r == refs[skip]) continue;
    if (Node* n = FindLocked(r)) {
      if (options_.reinforce_only && n->max_queue.load(kRelaxed) >= 0 &&
          n->max_queue.load(kRelaxed) != qi) {
        *added += 1;  // counts in the total only (see Options::reinforce_only)
      } else {
        *added += Bump(n, qi, at.index);
      }
      UnlockNode(n);
    } else {
      InsertOrBump(r, qi, at, added, inserted);
    }
  }
}

void State::Record(absl::Span<const RefId> refs, QueueId q, int64_t untracked, bool distinct) {
  const int qi = q.value();
  if (qi < 0 || qi >= num_queues_) return;
  if (refs.empty()) {
    if (untracked != 0) totals_[qi].fetch_add(untracked, kRelaxed);
    return;
  }
  const WindowAt at = Now();
  int64_t added = untracked;
  bool inserted = false;
  {
    history::ReaderDomain::Guard g(index_.domain());
    RecordRest(refs, refs.size(), qi, at, &added, &inserted, distinct);
  }
  totals_[qi].fetch_add(added, kRelaxed);
  if (inserted && bound_ > 0 && index_.size() > bound_) MaybeEvict();
}

QueueId State::RecordChosen(absl::Span<const RefId> refs, size_t lead,
                            absl::FunctionRef<QueueId(const RowView&)> choose,
                            int64_t untracked, bool distinct) {
  const WindowAt at = Now();
  const int n = num_queues_;
  QueueId chosen(-1);
  int64_t added = untracked;
  bool inserted = false;
  {
    history::ReaderDomain::Guard g(index_.domain());
    Node* node = FindLocked(refs[lead]);
    if (node != nullptr) {
      chosen = choose(RowView(node->counts(), n));
      if (chosen.value() >= 0 && chosen.value() < n) added += Bump(node, chosen.value(), at.index);
      UnlockNode(node);
    } else {
      chosen = choose(RowView());
    }
    const int qi = chosen.value();
    if (qi < 0 || qi >= n) return chosen;
    if (node == nullptr) InsertOrBump(refs[lead], qi, at, &added, &inserted);
    RecordRest(refs, lead, qi, at, &added, &inserted, distinct);
  }
  totals_[chosen.value()].fetch_add(added, kRelaxed);
  if (inserted && bound_ > 0 && index_.size() > bound_) MaybeEvict();
  return chosen;
}

void State::Unrecord(absl::Span<const RefId> refs, QueueId q, int64_t untracked) {
  const int qi = q.value();
  if (qi < 0 || qi >= num_queues_) return;
  int64_t removed = untracked;
  {
    history::ReaderDomain::Guard g(index_.domain());
    for (size_t i = 0; i < refs.size(); ++i) {
      if (history::RefSeenBefore(refs, i)) continue;
      Node* e = FindLocked(refs[i]);
      if (e == nullptr) continue;
      std::atomic<uint32_t>* counts = e->counts();
      const uint32_t c = counts[qi].load(kRelaxed);
      if (c > 0) {
        counts[qi].store(c - 1, kRelaxed);
        const uint64_t t = e->total.load(kRelaxed);
        if (t > 0) e->total.store(t - 1, kRelaxed);
        ++removed;
        if (e->max_queue.load(kRelaxed) == qi) {
          int best = -1;
          for (int j = 0; j < num_queues_; ++j) {
            const uint32_t v = counts[j].load(kRelaxed);
            if (v > 0 && (best < 0 || v > counts[best].load(kRelaxed))) best = j;
          }
          e->max_queue.store(best, kRelaxed);
        }
      }
      UnlockNode(e);
    }
  }
  totals_[qi].fetch_sub(removed, kRelaxed);
}

void State::Set(RefId ref, absl::Span<const uint64_t> counts_in) {
  std::vector<int64_t> delta(num_queues_, 0);
  auto assign = [&](Node* e) {
    std::atomic<uint32_t>* counts = e->counts();
    uint64_t total = 0;
    int32_t mq = -1;
    for (int q = 0; q < num_queues_; ++q) {
      const uint32_t v = Saturate(q < static_cast<int>(counts_in.size()) ? counts_in[q] : 0);
      delta[q] += static_cast<int64_t>(v) - static_cast<int64_t>(counts[q].load(kRelaxed));
      counts[q].store(v, kRelaxed);
      total += v;
      if (v > 0 && (mq < 0 || v > counts[mq].load(kRelaxed))) mq = q;
    }
    e->total.store(total, kRelaxed);
    e->max_queue.store(mq, kRelaxed);
  };
  const WindowAt at = Now();
  {
    history::ReaderDomain::Guard g(index_.domain());
    for (;;) {
      if (Node* e = FindLocked(ref)) {
        assign(e);
        UnlockNode(e);
        break;
      }
      auto [rn, fresh] = index_.FindOrInsert(ref.value(), [&](history::RefNode* x) {
        assign(InitNode(x, at));
      });
      if (fresh) break;
      (void)rn;  // inserted by another thread meanwhile: assign under its latch
    }
  }
  for (int q = 0; q < num_queues_; ++q) totals_[q].fetch_add(delta[q], kRelaxed);
}

bool State::Contains(RefId ref) const {
  history::ReaderDomain::Guard g(index_.domain());
  return index_.Find(ref.value()) != nullptr;
}

bool State::ReadRow(RefId ref, uint64_t* row) const {
  history::ReaderDomain::Guard g(index_.domain());
  const Node* e = static_cast<const Node*>(index_.Find(ref.value()));
  if (e == nullptr) return false;
  const std::atomic<uint32_t>* counts = e->counts();
  for (int q = 0; q < num_queues_; ++q) row[q] = counts[q].load(kRelaxed);
  return true;
}

bool State::Get(RefId ref, Info* out) const {
  const int64_t now = clock_->NowNanos();
  history::ReaderDomain::Guard g(index_.domain());
  Node* e = FindLocked(ref);
  if (e == nullptr) return false;
  const std::atomic<uint32_t>* counts = e->counts();
  out->counts.resize(num_queues_);
  for (int q = 0; q < num_queues_; ++q) out->counts[q] = counts[q].load(kRelaxed);
  out->total = e->total.load(kRelaxed);
  out->max_queue = QueueId(e->max_queue.load(kRelaxed));
  out->rate_per_s = RateAt(*e, now);
  UnlockNode(e);
  return true;
}

void State::ReadTotals(int64_t* out) const {
  for (int q = 0; q < num_queues_; ++q) out[q] = totals_[q].load(kRelaxed);
}

int64_t State::BytesPerEntry() const {
  // A node (64-byte aligned) plus one to two bucket words (the index doubles
  // when it holds more nodes than buckets).
  const int64_t node = static_cast<int64_t>((NodeBytes(num_queues_) + 63) / 64 * 64);
  return node + 16;
}

int64_t State::ApproxBytes() const { return index_.ApproxBytes(); }

void State::Age(double factor) {
  if (!(factor < 1.0)) return;
  // One pass at a time, and not beside an eviction pass (both walk the table).
  TsanVisibleMutexLock l(&evict_mu_);
  const uint64_t pass = static_cast<uint64_t>(aging_passes_.fetch_add(1, kRelaxed));
  std::vector<int64_t> before(num_queues_, 0), after(num_queues_, 0);
  std::vector<uint64_t> emptied;
  {
    history::ReaderDomain::Guard g(index_.domain());
    index_.ForEach([&](history::RefNode* rn) {
      Node* e = static_cast<Node*>(rn);
      const uint64_t key = e->key.load(kRelaxed);
      const uint64_t salt = Mix64(key ^ (pass * 0x9e3779b97f4a7c15ULL));
      LockNode(e);
      std::atomic<uint32_t>* counts = e->counts();
      int32_t mq = -1;
      uint64_t sum = 0;
      for (int q = 0; q < num_queues_; ++q) {
        const uint32_t c = counts[q].load(kRelaxed);
        const uint32_t d = static_cast<uint32_t>(history::DecayCount(c, factor, salt + q));
        counts[q].store(d, kRelaxed);
        before[q] += c;
        after[q] += d;
        sum += d;
        if (d > 0 && (mq < 0 || d > counts[mq].load(kRelaxed))) mq = q;
      }
      e->total.store(history::DecayCount(e->total.load(kRelaxed), factor, ~salt), kRelaxed);
      e->max_queue.store(mq, kRelaxed);
      UnlockNode(e);
      if (sum == 0) emptied.push_back(history::RefIndex::IdOf(key));
    });
    for (uint64_t id : emptied) {
      index_.Erase(id, [&](history::RefNode* rn) {
        Node* e = static_cast<Node*>(rn);
        LockNode(e);
        // Still empty under the latch (a record may have landed since).
        bool empty = true;
        for (int q = 0; q < num_queues_ && empty; ++q) empty = e->counts()[q].load(kRelaxed) == 0;
        if (empty) e->dead.store(1, kRelaxed);
        UnlockNode(e);
        return empty;
      });
    }
  }
  if (!emptied.empty()) index_.Reclaim();
  for (int q = 0; q < num_queues_; ++q) {
    // totals = held rows + untracked placements: the rows' part by what they
    // lost, the untracked part decayed as one count.
    const int64_t total = totals_[q].load(kRelaxed);
    const int64_t untracked = std::max<int64_t>(0, total - before[q]);
    const int64_t untracked_aged = static_cast<int64_t>(
        history::DecayCount(static_cast<uint64_t>(untracked), factor, Mix64(pass + q)));
    totals_[q].fetch_sub((before[q] - after[q]) + (untracked - untracked_aged), kRelaxed);
  }
}

void State::MaybeEvict() {
  if (!evict_mu_.TryLock()) return;  // another thread is evicting
  const int64_t target = static_cast<int64_t>(static_cast<double>(bound_) * options_.evict_to);
  if (index_.size() > bound_) EvictPass(std::max<int64_t>(target, 0));
  evict_mu_.Unlock();
}

int64_t State::EvictTo(int64_t target) {
  TsanVisibleMutexLock l(&evict_mu_);
  if (index_.size() <= target) return 0;
  return EvictPass(std::max<int64_t>(target, 0));
}

int64_t State::EvictPass(int64_t target) {
  const int64_t now = clock_->NowNanos();
  std::vector<Candidate>& cand = scratch_;
  cand.clear();
  cand.reserve(static_cast<size_t>(std::max<int64_t>(index_.size(), 0)) + 64);
  int64_t held = 0;
  {
    // Inserts and erases wait while the candidates are copied out; updates of
    // held entries go on. Ranking and erasing run with records proceeding.
    history::ReaderDomain::Guard g(index_.domain());
    index_.ForEach([&](history::RefNode* rn) {
      Node* e = static_cast<Node*>(rn);
      LockNode(e);
      cand.push_back(Candidate{RefId(history::RefIndex::IdOf(e->key.load(kRelaxed))),
                               RateAt(*e, now), e->total.load(kRelaxed), e->seq.load(kRelaxed),
                               e->max_queue.load(kRelaxed), false, 0});
      UnlockNode(e);
    });
    held = static_cast<int64_t>(cand.size());
  }
  if (held <= target) return 0;
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
  {
    history::ReaderDomain::Guard g(index_.domain());
    for (int64_t i = 0; i < need; ++i) {
      const Candidate& c = cand[i];
      // Erased with its counts as they are now (records may have landed since
      // the scan), under its latch, so totals stay exact.
      const bool erased = index_.Erase(c.ref.value(), [&](history::RefNode* rn) {
        Node* e = static_cast<Node*>(rn);
        LockNode(e);
        const std::atomic<uint32_t>* counts = e->counts();
        for (int q = 0; q < num_queues_; ++q) removed[q] += static_cast<int64_t>(counts[q].load(kRelaxed));
        e->dead.store(1, kRelaxed);
        UnlockNode(e);
        return true;
      });
      if (!erased) continue;
      ++evicted;
      if (c.is_protected) ++forced;
    }
  }
  index_.Reclaim();  // victims' nodes become reusable once no reader holds them
  for (int q = 0; q < num_queues_; ++q) totals_[q].fetch_sub(removed[q], std::memory_order_relaxed);
  evictions_.fetch_add(evicted, std::memory_order_relaxed);
  forced_evictions_.fetch_add(forced, std::memory_order_relaxed);
  passes_.fetch_add(1, std::memory_order_relaxed);
  return evicted;
}

}  // namespace state
}  // namespace corral
