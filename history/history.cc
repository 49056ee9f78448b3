#include "history/history.h"

#include <algorithm>

namespace corral {
namespace history {

History::History(const Options& options, const Clock* clock)
    : options_(options),
      clock_(clock != nullptr ? clock : Clock::Real()),
      aging_(options.half_life_ns, options.age_period_ns, clock_->NowNanos()),
      index_(static_cast<size_t>(std::max<int64_t>(options.initial_capacity, 16)), sizeof(Node)),
      texts_(options.keep_texts ? 64 : 1),
      doorkeeper_(options.commit_doorkeeper_log2_bits > 0
                      ? std::make_unique<Doorkeeper>(options.commit_doorkeeper_log2_bits)
                      : nullptr) {}

bool History::RecordOne(RefId ref, bool committed, const TextProvider* texts, size_t i) {
  auto bump = [committed](Node* n) {
    (committed ? n->commits : n->aborts).fetch_add(1, std::memory_order_relaxed);
  };
  // Fast path: the reference is known (lock-free lookup, one atomic add).
  if (RefNode* n = index_.Find(ref.value())) {
    bump(static_cast<Node*>(n));
    return true;
  }
  if (committed && doorkeeper_ != nullptr && doorkeeper_->FirstSighting(ref)) return true;  // not admitted
  if (options_.max_entries > 0 && index_.size() >= options_.max_entries) {
    if (options_.on_full == OnFull::kRegenerate) return false;
    dropped_full_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  auto [n, inserted] = index_.FindOrInsert(ref.value(), [committed](RefNode* fresh) {
    Node* node = static_cast<Node*>(fresh);
    new (&node->aborts) std::atomic<uint64_t>(committed ? 0 : 1);
    new (&node->commits) std::atomic<uint64_t>(committed ? 1 : 0);
  });
  if (!inserted) {
    bump(static_cast<Node*>(n));
    return true;
  }
  if (texts != nullptr && options_.keep_texts && *texts) texts_.insert(ref, (*texts)(i));
  return true;
}

void History::Record(absl::Span<const RefId> refs, bool committed, const TextProvider* texts,
                     RefId skip) {
  if (frozen()) {
    ignored_frozen_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  size_t i = 0;
  while (i < refs.size()) {
    {
      ReaderDomain::Guard g(index_.domain());
      for (; i < refs.size(); ++i) {
        if (RefSeenBefore(refs, i) || (skip.value() != 0 && refs[i] == skip)) continue;
        if (!RecordOne(refs[i], committed, texts, i)) break;
      }
    }
    // Full under OnFull::kRegenerate: regenerate outside the guard, go on.
    if (i < refs.size()) Regenerate();
  }
}

void History::Add(RefId ref, uint64_t aborts, uint64_t commits) {
  {
    ReaderDomain::Guard g(index_.domain());
    auto [n, inserted] = index_.FindOrInsert(ref.value(), [&](RefNode* fresh) {
      Node* node = static_cast<Node*>(fresh);
      new (&node->aborts) std::atomic<uint64_t>(aborts);
      new (&node->commits) std::atomic<uint64_t>(commits);
    });
    if (!inserted) {
      Node* node = static_cast<Node*>(n);
      node->aborts.fetch_add(aborts, std::memory_order_relaxed);
      node->commits.fetch_add(commits, std::memory_order_relaxed);
    }
  }
  // After the change: a reader that saw the old epoch re-reads.
  epoch_.fetch_add(1, std::memory_order_acq_rel);
}

bool History::CapAborts(RefId ref, uint64_t aborts) {
  {
    ReaderDomain::Guard g(index_.domain());
    Node* n = static_cast<Node*>(index_.Find(ref.value()));
    if (n == nullptr) return false;
    uint64_t cur = n->aborts.load(std::memory_order_relaxed);
    while (cur > aborts && !n->aborts.compare_exchange_weak(cur, aborts, std::memory_order_relaxed)) {
    }
  }
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

bool History::Get(RefId ref, Counts* out) const {
  ReaderDomain::Guard g(index_.domain());
  const Node* n = static_cast<const Node*>(index_.Find(ref.value()));
  if (n == nullptr) return false;
  out->aborts = n->aborts.load(std::memory_order_relaxed);
  out->commits = n->commits.load(std::memory_order_relaxed);
  return true;
}

void History::PrefetchBuckets(absl::Span<const RefId> refs) const {
  ReaderDomain::Guard g(index_.domain());
  for (RefId r : refs) index_.PrefetchBucket(r.value());
  // The commit of a reference the table lacks reads its doorkeeper bit; the
  // word is loaded now, while the transaction runs.
  if (doorkeeper_ != nullptr) {
    for (RefId r : refs) doorkeeper_->Prefetch(r);
  }
}

void History::GetMany(absl::Span<const RefId> refs, Counts* out, bool* known) const {
  ReaderDomain::Guard g(index_.domain());
  // Bucket words are expected in flight already (PrefetchBuckets); the nodes
  // load together here.
  for (RefId r : refs) index_.PrefetchNode(r.value(), 1);
  for (size_t i = 0; i < refs.size(); ++i) {
    const Node* n = static_cast<const Node*>(index_.Find(refs[i].value()));
    known[i] = n != nullptr;
    if (n == nullptr) {
      out[i] = Counts();
      continue;
    }
    out[i].aborts = n->aborts.load(std::memory_order_relaxed);
    out[i].commits = n->commits.load(std::memory_order_relaxed);
  }
}

double History::WeightOf(const Counts& c, Weighting w) {
  if (w == Weighting::kCount) return static_cast<double>(c.aborts);
  const uint64_t n = c.aborts + c.commits;
  return n == 0 ? 0.0 : static_cast<double>(c.aborts) / static_cast<double>(n);
}

double History::Weight(RefId ref, Weighting w, bool* known) const {
  Counts c;
  const bool found = Get(ref, &c);
  if (known != nullptr) *known = found;
  return found ? WeightOf(c, w) : 0.0;
}

std::vector<History::TopEntry> History::TopByAborts(size_t k) const {
  auto better = [](const TopEntry& a, const TopEntry& b) {
    if (a.counts.aborts != b.counts.aborts) return a.counts.aborts > b.counts.aborts;
    if (a.counts.commits != b.counts.commits) return a.counts.commits > b.counts.commits;
    return a.ref < b.ref;
  };
  // A heap of the k best so far, its worst on top: one pass, k entries of
  // memory (callers poll it, e.g. a multi-proxy sync every round, over a
  // History of every reference the traffic touched).
  std::vector<TopEntry> top;
  if (k == 0) return top;
  top.reserve(k + 1);
  {
    ReaderDomain::Guard g(index_.domain());
    index_.ForEach([&](const RefNode* rn) {
      const Node* n = static_cast<const Node*>(rn);
      TopEntry e{RefId(RefIndex::IdOf(n->key.load(std::memory_order_relaxed))),
                 Counts{n->aborts.load(std::memory_order_relaxed), n->commits.load(std::memory_order_relaxed)},
                 {}};
      if (top.size() == k && !better(e, top.front())) return;
      top.push_back(std::move(e));
      std::push_heap(top.begin(), top.end(), better);
      if (top.size() > k) {
        std::pop_heap(top.begin(), top.end(), better);
        top.pop_back();
      }
    });
  }
  std::sort_heap(top.begin(), top.end(), better);
  for (TopEntry& e : top) texts_.find(e.ref, e.text);
  return top;
}

std::string History::TextOf(RefId ref) const {
  std::string text;
  texts_.find(ref, text);
  return text;
}

void History::Regenerate() {
  // Serializes regenerations (a table-full record and an admin call may race).
  std::lock_guard<std::mutex> l(regen_mu_);
  index_.Clear();  // waits for readers of the old table to leave
  texts_.clear();
  regenerations_.fetch_add(1, std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_acq_rel);
}

double History::MaybeAge() {
  if (!aging_.enabled()) return 1.0;
  const int64_t now = clock_->NowNanos();
  if (frozen()) {
    aging_.Skip(now);  // frozen time does not count
    return 1.0;
  }
  const double f = aging_.Due(now);
  if (f < 1.0) Age(f);
  return f;
}

void History::Age(double factor) {
  if (!(factor < 1.0)) return;
  std::lock_guard<std::mutex> l(regen_mu_);
  const uint64_t pass = static_cast<uint64_t>(aging_passes_.fetch_add(1, std::memory_order_relaxed));
  std::vector<uint64_t> emptied;
  {
    ReaderDomain::Guard g(index_.domain());
    index_.ForEach([&](RefNode* rn) {
      Node* n = static_cast<Node*>(rn);
      const uint64_t key = n->key.load(std::memory_order_relaxed);
      const uint64_t salt = Mix64(key ^ (pass * 0x9e3779b97f4a7c15ULL));
      bool zero = true;
      for (std::atomic<uint64_t>* c : {&n->aborts, &n->commits}) {
        const uint64_t old = c->load(std::memory_order_relaxed);
        const uint64_t aged = DecayCount(old, factor, salt + (c == &n->aborts ? 0 : 1));
        // A subtraction keeps records that land meanwhile.
        if (aged < old) c->fetch_sub(old - aged, std::memory_order_relaxed);
        zero &= aged == 0;
      }
      if (zero) emptied.push_back(RefIndex::IdOf(key));
    });
    // References with nothing left are dropped (still zero under the latch:
    // a record that landed since keeps its entry).
    for (uint64_t id : emptied) {
      const bool erased = index_.Erase(id, [](RefNode* rn) {
        const Node* n = static_cast<const Node*>(rn);
        return n->aborts.load(std::memory_order_relaxed) == 0 &&
               n->commits.load(std::memory_order_relaxed) == 0;
      });
      if (erased && options_.keep_texts) texts_.erase(RefId(id));
    }
  }
  if (!emptied.empty()) index_.Reclaim();
  epoch_.fetch_add(1, std::memory_order_acq_rel);
}

int64_t History::ApproxBytes() const { return index_.ApproxBytes(); }

}  // namespace history
}  // namespace corral
