#include "history/ref_index.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <thread>

namespace corral {
namespace history {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

size_t RoundUpPow2(size_t v) {
  size_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

int Log2(size_t pow2) {
  int l = 0;
  while ((size_t{1} << l) < pow2) ++l;
  return l;
}


}  // namespace

namespace {
// Process-wide slot indices: a thread takes the lowest free one on its first
// guard and gives it back when it exits.
class SlotRegistry {
 public:
  int Acquire() {
    std::lock_guard<std::mutex> l(mu_);
    if (!free_.empty()) {
      const int s = free_.back();
      free_.pop_back();
      return s;
    }
    if (next_ < ReaderDomain::kSlots) return next_++;
    return ReaderDomain::kSlots;  // shared
  }
  void Release(int s) {
    if (s == ReaderDomain::kSlots) return;
    std::lock_guard<std::mutex> l(mu_);
    free_.push_back(s);
  }

 private:
  std::mutex mu_;
  std::vector<int> free_;
  int next_ = 0;
};

SlotRegistry& Registry() {
  static SlotRegistry* r = new SlotRegistry();  // never destroyed: threads may exit late
  return *r;
}

struct ThreadSlotHandle {
  int slot = Registry().Acquire();
  ~ThreadSlotHandle() { Registry().Release(slot); }
};
}  // namespace

int ReaderDomain::ThreadSlot() {
  thread_local ThreadSlotHandle h;
  return h.slot;
}

void ReaderDomain::Synchronize() const {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  auto wait = [](auto done) {
    for (int spins = 0; !done(); ++spins) {
      if (spins < 64) {
        CpuRelax();
      } else {
        std::this_thread::yield();
      }
    }
  };
  for (int i = 0; i < kSlots; ++i) {
    const std::atomic<uint64_t>& seq = slots_[i].seq;
    const uint64_t v = seq.load(std::memory_order_acquire);
    if ((v & 1) == 0) continue;  // outside
    wait([&] { return seq.load(std::memory_order_acquire) != v; });  // that guard closed
  }
  const std::atomic<uint64_t>& shared = slots_[kSlots].seq;
  wait([&] { return shared.load(std::memory_order_acquire) == 0; });
}

RefIndex::RefIndex(size_t initial_buckets, size_t node_bytes)
    : initial_buckets_(RoundUpPow2(std::max(initial_buckets, kStripes))),
      stride_(node_bytes <= 32 ? 32 : (node_bytes + 63) / 64 * 64),
      array_(NewArray(initial_buckets_)) {
  bytes_.store(static_cast<int64_t>(initial_buckets_ * sizeof(std::atomic<RefNode*>)),
               std::memory_order_relaxed);
}

RefIndex::~RefIndex() {
  FreeArray(array_.load(std::memory_order_relaxed));
  for (Array* a : old_arrays_) FreeArray(a);
  for (char* c : chunks_) std::free(c);
}

RefIndex::Array* RefIndex::NewArray(size_t buckets) {
  Array* a = new Array;
  a->mask = buckets - 1;
  a->shift = 64 - Log2(buckets);
  a->buckets = new std::atomic<RefNode*>[buckets];
  for (size_t b = 0; b < buckets; ++b) a->buckets[b].store(nullptr, std::memory_order_relaxed);
  return a;
}

void RefIndex::FreeArray(Array* a) {
  delete[] a->buckets;
  delete a;
}

void RefIndex::Lock(size_t s) const {
  std::atomic<uint32_t>& l = stripes_[s].latch;
  for (int spins = 0;; ++spins) {
    if (l.load(std::memory_order_relaxed) == 0 &&
        l.exchange(1, std::memory_order_acquire) == 0) {
      return;
    }
    if (spins < 64) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
}

void RefIndex::LockAll() const {
  for (size_t s = 0; s < kStripes; ++s) Lock(s);
}

void RefIndex::UnlockAll() const {
  for (size_t s = 0; s < kStripes; ++s) Unlock(s);
}

RefNode* RefIndex::Find(uint64_t key) const {
  const uint64_t k = Key(key);
  const uint64_t h = Hash(k);
  for (;;) {
    const uint64_t seq = resize_seq_.load(std::memory_order_acquire);
    if (seq & 1) {
      CpuRelax();
      continue;
    }
    const Array* a = array_.load(std::memory_order_acquire);
    for (RefNode* n = a->buckets[BucketOf(a, h)].load(std::memory_order_acquire); n != nullptr;
         n = n->next.load(std::memory_order_acquire)) {
      if (n->key.load(std::memory_order_relaxed) == k) return n;
    }
    // A miss is trusted only if no doubling moved nodes between chains meanwhile.
    if (resize_seq_.load(std::memory_order_acquire) == seq) return nullptr;
  }
}

RefNode* RefIndex::Alloc() {
  std::lock_guard<std::mutex> l(alloc_mu_);
  if (!free_.empty()) {
    RefNode* n = free_.back();
    free_.pop_back();
    return n;
  }
  const size_t per_chunk = ChunkNodes();
  if (chunk_left_ == 0) {
    char* c = static_cast<char*>(std::aligned_alloc(64, per_chunk * stride_));
    if (c == nullptr) throw std::bad_alloc();
    chunks_.push_back(c);
    chunk_left_ = per_chunk;
    bytes_.fetch_add(static_cast<int64_t>(per_chunk * stride_), std::memory_order_relaxed);
  }
  const size_t used = per_chunk - chunk_left_;
  --chunk_left_;
  return reinterpret_cast<RefNode*>(chunks_.back() + used * stride_);
}

void RefIndex::Reclaim() {
  std::vector<RefNode*> batch;
  {
    std::lock_guard<std::mutex> l(alloc_mu_);
    if (retired_.empty()) return;
    batch.swap(retired_);
  }
  domain_.Synchronize();
  std::lock_guard<std::mutex> l(alloc_mu_);
  free_.insert(free_.end(), batch.begin(), batch.end());
}

void RefIndex::MaybeGrow() {
  LockAll();
  Array* old = array_.load(std::memory_order_relaxed);
  if (static_cast<size_t>(size_.load(std::memory_order_relaxed)) <= old->mask + 1) {
    UnlockAll();
    return;  // another thread grew it
  }
  const size_t buckets = (old->mask + 1) * 2;
  Array* a = NewArray(buckets);
  resize_seq_.fetch_add(1, std::memory_order_acq_rel);  // odd: misses retry
  for (size_t b = 0; b <= old->mask; ++b) {
    RefNode* n = old->buckets[b].load(std::memory_order_relaxed);
    while (n != nullptr) {
      RefNode* next = n->next.load(std::memory_order_relaxed);
      std::atomic<RefNode*>& head = a->buckets[BucketOf(a, Hash(n->key.load(std::memory_order_relaxed)))];
      n->next.store(head.load(std::memory_order_relaxed), std::memory_order_release);
      head.store(n, std::memory_order_relaxed);
      n = next;
    }
  }
  array_.store(a, std::memory_order_release);
  resize_seq_.fetch_add(1, std::memory_order_acq_rel);
  bytes_.fetch_add(static_cast<int64_t>(buckets * sizeof(std::atomic<RefNode*>)),
                   std::memory_order_relaxed);
  UnlockAll();
  std::lock_guard<std::mutex> l(alloc_mu_);
  old_arrays_.push_back(old);  // readers may hold it: freed by Clear or the destructor
}

void RefIndex::Clear() {
  Array* fresh = NewArray(initial_buckets_);
  Array* old;
  std::vector<char*> chunks;
  std::vector<Array*> arrays;
  LockAll();  // no insert, erase or growth until the old memory is detached
  old = array_.load(std::memory_order_relaxed);
  array_.store(fresh, std::memory_order_release);
  size_.store(0, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> l(alloc_mu_);
    chunks.swap(chunks_);
    arrays.swap(old_arrays_);
    chunk_left_ = 0;
    free_.clear();
    retired_.clear();
    bytes_.store(static_cast<int64_t>(initial_buckets_ * sizeof(std::atomic<RefNode*>)),
                 std::memory_order_relaxed);
  }
  UnlockAll();
  // Every reader or updater that could hold the old array or its nodes
  // leaves its guard before they are freed.
  domain_.Synchronize();
  FreeArray(old);
  for (Array* x : arrays) FreeArray(x);
  for (char* c : chunks) std::free(c);
}

int64_t RefIndex::ApproxBytes() const { return bytes_.load(std::memory_order_relaxed); }

}  // namespace history
}  // namespace corral
