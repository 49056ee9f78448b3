// RefIndex: the concurrent reference-keyed index under History and State,
// built for the Schedule's hot path (bench/RESULTS.md, "Scheduler
// decisions": libcuckoo took two spinlocks on separate cache lines per
// operation and exposed no addresses to prefetch; a decision was ~10 such
// operations and ~34 cache misses that could not overlap).
//
//   - Lookups are lock-free: no atomic read-modify-write, one bucket word
//     and the node's own lines. Nodes carry their payload (History counters,
//     State row) right after the 16-byte header, so a hit is the bucket line
//     plus the node's line(s).
//   - Prefetch(key) issues the loads of a key's bucket and first node
//     without waiting for them: a caller prefetches all of a transaction's
//     references first and then works on cached lines (their misses
//     overlap instead of queueing behind each other).
//   - Inserts, erases and growth take one of kStripes striped spin latches
//     (growth takes all of them); the bucket array doubles when it holds more
//     nodes than buckets. A lookup that misses while the array was being
//     doubled retries (a sequence counter, as engine/storage.h's HashIndex).
//   - Memory that a lock-free reader may still hold is reclaimed only after
//     a grace period (ReaderDomain): every lookup runs inside a
//     ReaderDomain::Guard; erased nodes are reused, and cleared tables
//     freed, only once every reader that was inside a guard has left.
//
// Payload updates are the caller's business (History: atomic counters;
// State: a per-node spin latch); the index only links and unlinks nodes.
//
//   RefIndex idx(/*initial_buckets=*/1024, /*node_bytes=*/sizeof(MyNode));
//   ReaderDomain::Guard g(idx.domain());
//   RefNode* n = idx.Find(key);                        // lock-free
//   auto [node, fresh] = idx.FindOrInsert(key, [](RefNode* n) { new (n) MyNode(); });
//
// Thread safety: all methods are thread-safe, with the Guard and
// Synchronize rules stated on each.
#ifndef CORRAL_HISTORY_REF_INDEX_H_
#define CORRAL_HISTORY_REF_INDEX_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace corral {
namespace history {

// Grace periods for lock-free readers. A thread inside a Guard may hold
// pointers into a domain's memory; Synchronize() returns once every guard
// that was open when it was called has closed.
//
// Each thread owns a slot (a process-wide index, released when the thread
// exits; the same index in every domain), on its own cache line: entering
// the outermost guard makes the slot's sequence odd, leaving makes it even
// (one atomic increment each; nested guards only count depth). Synchronize
// waits, for each slot that is odd, until its sequence moves: a reader that
// keeps re-entering cannot starve it. Past kSlots live threads, the extra
// threads share one counted slot (Synchronize waits for it to reach zero).
class ReaderDomain {
 public:
  static constexpr int kSlots = 1024;

  class Guard {
   public:
    explicit Guard(const ReaderDomain& d);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    const ReaderDomain& d_;
    int slot_;
  };

  ReaderDomain() = default;
  ReaderDomain(const ReaderDomain&) = delete;
  ReaderDomain& operator=(const ReaderDomain&) = delete;

  // Waits until every reader inside a guard at the time of the call has left.
  // Must not be called from inside a guard of this domain (it would wait for
  // itself).
  void Synchronize() const;

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> seq{0};  // odd: inside (exclusive slots); count (shared slot)
    uint32_t depth = 0;            // owner thread only
  };
  // The calling thread's slot index, kSlots for the shared slot.
  static int ThreadSlot();
  mutable Slot slots_[kSlots + 1];
};

inline ReaderDomain::Guard::Guard(const ReaderDomain& d) : d_(d), slot_(ThreadSlot()) {
  Slot& s = d_.slots_[slot_];
  if (slot_ == kSlots) {
    s.seq.fetch_add(1, std::memory_order_seq_cst);  // shared: a count
  } else if (s.depth++ == 0) {
    // A locked RMW: the odd sequence is visible before this thread's later
    // loads of shared pointers (the store-load order Synchronize needs).
    s.seq.fetch_add(1, std::memory_order_seq_cst);
  }
}

inline ReaderDomain::Guard::~Guard() {
  Slot& s = d_.slots_[slot_];
  if (slot_ == kSlots) {
    s.seq.fetch_sub(1, std::memory_order_release);
  } else if (--s.depth == 0) {
    s.seq.fetch_add(1, std::memory_order_release);
  }
}

// Every node starts with this header; the payload follows.
struct RefNode {
  std::atomic<uint64_t> key{0};
  std::atomic<RefNode*> next{nullptr};
};

class RefIndex {
 public:
  static constexpr size_t kStripes = 256;

  // `node_bytes`: the size of a full node (header + payload); nodes are
  // allocated at a 32-byte stride (64 when larger than 32 bytes) so a small
  // node never straddles two lines.
  RefIndex(size_t initial_buckets, size_t node_bytes);
  ~RefIndex();
  RefIndex(const RefIndex&) = delete;
  RefIndex& operator=(const RefIndex&) = delete;

  const ReaderDomain& domain() const { return domain_; }
  // The id a node's stored key stands for (RefId(0) is stored as kZeroKey).
  static uint64_t IdOf(uint64_t stored) { return stored == kZeroKey ? 0 : stored; }

  // The node of `key`, or null. Inside a Guard; the node stays readable until
  // the guard closes (it may be unlinked meanwhile).
  RefNode* Find(uint64_t key) const;
  // Starts loading key's bucket word (first pass of a batch).
  void PrefetchBucket(uint64_t key) const {
    const Array* a = array_.load(std::memory_order_acquire);
    __builtin_prefetch(&a->buckets[BucketOf(a, Hash(Key(key)))]);
  }
  // Reads key's bucket word (cached after PrefetchBucket) and starts
  // loading its first node's first `lines` lines. Inside a Guard.
  void PrefetchNode(uint64_t key, int lines) const {
    const Array* a = array_.load(std::memory_order_acquire);
    const RefNode* n = a->buckets[BucketOf(a, Hash(Key(key)))].load(std::memory_order_acquire);
    if (n == nullptr) return;
    const char* p = reinterpret_cast<const char*>(n);
    for (int l = 0; l < lines; ++l) __builtin_prefetch(p + 64 * l, 1);
  }

  // The node of `key`, inserting one if absent: `init(RefNode*)` constructs
  // the payload of the fresh node (header already set) before it is linked.
  // Returns {node, inserted}. Inside a Guard.
  template <typename Init>
  std::pair<RefNode*, bool> FindOrInsert(uint64_t key, Init init);

  // Under key's stripe latch: if key's node exists and fn(node) returns
  // true, unlinks it (the node is retired: reused only after Reclaim()).
  // Returns whether it was unlinked. Inside a Guard.
  template <typename F>
  bool Erase(uint64_t key, F fn);
  // Makes retired nodes reusable after a grace period. Outside guards.
  void Reclaim();

  // Calls fn(node) on every linked node with all stripe latches held (no
  // insert, erase or growth meanwhile; lookups and payload updates go on).
  template <typename F>
  void ForEach(F fn) const;

  // Unlinks everything and shrinks to the initial bucket count; frees all
  // nodes and old bucket arrays after a grace period. Outside guards.
  void Clear();

  int64_t size() const { return size_.load(std::memory_order_relaxed); }
  size_t bucket_count() const { return array_.load(std::memory_order_acquire)->mask + 1; }
  // Bytes held: bucket arrays and node chunks.
  int64_t ApproxBytes() const;

 private:
  struct Array {
    size_t mask;
    int shift;  // 64 - log2(buckets)
    std::atomic<RefNode*>* buckets;
  };
  struct alignas(64) Stripe {
    std::atomic<uint32_t> latch{0};
  };

  // Key 0 marks nothing here, but RefId(0) is a valid id: it is stored as
  // kZeroKey (a collision with a real fingerprint equal to kZeroKey has
  // probability 2^-64).
  static constexpr uint64_t kZeroKey = 0x9c8f2d3b5a7e6141ULL;
  static uint64_t Key(uint64_t k) { return k == 0 ? kZeroKey : k; }
  // Multiplicative hash; the bucket is the top bits, so a bucket's stripe
  // (the top log2(kStripes) bits) does not change when the array doubles.
  static uint64_t Hash(uint64_t k) { return (k ^ (k >> 31)) * 0x9e3779b97f4a7c15ULL; }
  static size_t BucketOf(const Array* a, uint64_t h) { return static_cast<size_t>(h >> a->shift); }
  static size_t StripeOf(uint64_t h) { return static_cast<size_t>(h >> 56); }  // kStripes = 256

  static Array* NewArray(size_t buckets);
  static void FreeArray(Array* a);
  void Lock(size_t s) const;
  void Unlock(size_t s) const { stripes_[s].latch.store(0, std::memory_order_release); }
  void LockAll() const;
  void UnlockAll() const;
  RefNode* Alloc();
  // Nodes per chunk: 256 KiB chunks (at least 16 nodes).
  size_t ChunkNodes() const { return std::max<size_t>(16, (size_t{256} << 10) / stride_); }
  void MaybeGrow();

  const size_t initial_buckets_;
  const size_t stride_;
  std::atomic<Array*> array_;
  std::atomic<uint64_t> resize_seq_{0};  // odd while the array is doubled
  std::atomic<int64_t> size_{0};
  mutable Stripe stripes_[kStripes];
  ReaderDomain domain_;

  // Allocation (inserts of new keys, erases, growth): one mutex.
  mutable std::mutex alloc_mu_;
  std::vector<char*> chunks_;        // node memory
  size_t chunk_left_ = 0;            // nodes left in chunks_.back()
  std::vector<RefNode*> free_;       // reusable nodes
  std::vector<RefNode*> retired_;    // erased, awaiting a grace period
  std::vector<Array*> old_arrays_;   // replaced by growth
  std::atomic<int64_t> bytes_{0};
};

// ---- templates ----

template <typename Init>
std::pair<RefNode*, bool> RefIndex::FindOrInsert(uint64_t key, Init init) {
  if (RefNode* n = Find(key)) return {n, false};
  const uint64_t k = Key(key);
  const uint64_t h = Hash(k);
  const size_t s = StripeOf(h);
  Lock(s);
  // Growth holds every stripe, so the array is stable while we hold one.
  Array* a = array_.load(std::memory_order_acquire);
  std::atomic<RefNode*>& head = a->buckets[BucketOf(a, h)];
  for (RefNode* n = head.load(std::memory_order_acquire); n != nullptr;
       n = n->next.load(std::memory_order_acquire)) {
    if (n->key.load(std::memory_order_relaxed) == k) {
      Unlock(s);
      return {n, false};
    }
  }
  RefNode* n = Alloc();
  new (n) RefNode();
  n->key.store(k, std::memory_order_relaxed);
  init(n);
  n->next.store(head.load(std::memory_order_relaxed), std::memory_order_relaxed);
  head.store(n, std::memory_order_release);  // publishes the initialized node
  const int64_t sz = size_.fetch_add(1, std::memory_order_relaxed) + 1;
  Unlock(s);
  if (static_cast<size_t>(sz) > a->mask + 1) MaybeGrow();
  return {n, true};
}

template <typename F>
bool RefIndex::Erase(uint64_t key, F fn) {
  const uint64_t k = Key(key);
  const uint64_t h = Hash(k);
  const size_t s = StripeOf(h);
  Lock(s);
  Array* a = array_.load(std::memory_order_acquire);
  std::atomic<RefNode*>* link = &a->buckets[BucketOf(a, h)];
  for (RefNode* n = link->load(std::memory_order_acquire); n != nullptr;
       link = &n->next, n = link->load(std::memory_order_acquire)) {
    if (n->key.load(std::memory_order_relaxed) != k) continue;
    if (!fn(n)) break;
    // A reader standing on n still reaches the rest of the chain (n->next
    // is left as is until n is reused, after a grace period).
    link->store(n->next.load(std::memory_order_relaxed), std::memory_order_release);
    size_.fetch_sub(1, std::memory_order_relaxed);
    Unlock(s);
    std::lock_guard<std::mutex> l(alloc_mu_);
    retired_.push_back(n);
    return true;
  }
  Unlock(s);
  return false;
}

template <typename F>
void RefIndex::ForEach(F fn) const {
  LockAll();
  const Array* a = array_.load(std::memory_order_acquire);
  for (size_t b = 0; b <= a->mask; ++b) {
    for (RefNode* n = a->buckets[b].load(std::memory_order_acquire); n != nullptr;
         n = n->next.load(std::memory_order_acquire)) {
      fn(n);
    }
  }
  UnlockAll();
}

}  // namespace history
}  // namespace corral

#endif  // CORRAL_HISTORY_REF_INDEX_H_
