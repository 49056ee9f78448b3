#include "engine/storage.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

namespace corral {
namespace engine {

namespace {
constexpr size_t kArenaChunk = size_t{1} << 20;
}

RecordArena::~RecordArena() {
  for (char* c : chunks_) std::free(c);
}

Record* RecordArena::Allocate(uint32_t row_size) {
  size_t need = sizeof(Record) + row_size;
  if (need > left_) {
    size_t sz = need > kArenaChunk ? need : kArenaChunk;
    cur_ = static_cast<char*>(std::calloc(1, sz));
    if (cur_ == nullptr) throw std::bad_alloc();
    chunks_.push_back(cur_);
    left_ = sz;
  }
  Record* r = new (cur_) Record;
  r->tid.store(0, std::memory_order_relaxed);
  r->lock.store(0, std::memory_order_relaxed);
  r->key = 0;
  r->table = nullptr;
  r->hash_next.store(nullptr, std::memory_order_relaxed);
  r->oldest_waiter.store(0, std::memory_order_relaxed);
  cur_ += need;
  left_ -= need;
  return r;
}

void AtomicCopyOut(char* dst, const char* src, uint32_t n) {
  uint64_t* d = reinterpret_cast<uint64_t*>(dst);
  const uint64_t* s = reinterpret_cast<const uint64_t*>(src);
  for (uint32_t i = 0; i < n / 8; ++i) {
    d[i] = __atomic_load_n(const_cast<uint64_t*>(s + i), __ATOMIC_RELAXED);
  }
}

void AtomicCopyIn(char* dst, const char* src, uint32_t n) {
  uint64_t* d = reinterpret_cast<uint64_t*>(dst);
  const uint64_t* s = reinterpret_cast<const uint64_t*>(src);
  for (uint32_t i = 0; i < n / 8; ++i) __atomic_store_n(d + i, s[i], __ATOMIC_RELAXED);
}

HashIndex::HashIndex(size_t expected) {
  size_t n = kStripes;
  while (n < expected) n <<= 1;
  Array* a = new Array{n - 1, new std::atomic<Record*>[n]};
  for (size_t i = 0; i < n; ++i) a->buckets[i].store(nullptr, std::memory_order_relaxed);
  WriteGuard g(&grow_mu_);
  arrays_.push_back(a);
  array_.store(a, std::memory_order_release);
}

HashIndex::~HashIndex() {
  WriteGuard g(&grow_mu_);
  for (Array* a : arrays_) {
    delete[] a->buckets;
    delete a;
  }
}

Record* HashIndex::Find(uint64_t key) const {
  const uint64_t h = Hash(key);
  for (;;) {
    uint64_t seq = resize_seq_.load(std::memory_order_acquire);
    if (seq & 1) {
      std::this_thread::yield();
      continue;
    }
    Array* a = array_.load(std::memory_order_acquire);
    for (Record* r = a->buckets[h & a->mask].load(std::memory_order_acquire); r != nullptr;
         r = r->hash_next.load(std::memory_order_acquire)) {
      if (r->key == key) return r;
    }
    // A miss is only trusted if no resize overlapped the walk.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (resize_seq_.load(std::memory_order_relaxed) == seq) return nullptr;
  }
}

void HashIndex::LockStripe(size_t s) const {
  int spins = 0;
  for (;;) {
    uint32_t expected = 0;
    if (stripes_[s].latch.compare_exchange_weak(expected, 1, std::memory_order_acquire)) return;
    if (++spins > 64) std::this_thread::yield();
  }
}

Record* HashIndex::Insert(Record* rec) {
  const uint64_t h = Hash(rec->key);
  const size_t s = h & (kStripes - 1);
  LockStripe(s);
  Array* a = array_.load(std::memory_order_acquire);
  std::atomic<Record*>& head = a->buckets[h & a->mask];
  for (Record* r = head.load(std::memory_order_relaxed); r != nullptr;
       r = r->hash_next.load(std::memory_order_relaxed)) {
    if (r->key == rec->key) {
      UnlockStripe(s);
      return r;
    }
  }
  rec->hash_next.store(head.load(std::memory_order_relaxed), std::memory_order_relaxed);
  head.store(rec, std::memory_order_release);
  uint32_t count = ++stripes_[s].count;
  // Grow when this stripe averages more than one record per bucket (each
  // chain step is a cache miss on a record).
  bool crowded = count > (a->mask + 1) / kStripes;
  UnlockStripe(s);
  if (crowded) Grow(a);
  return nullptr;
}

void HashIndex::Erase(Record* rec) {
  const uint64_t h = Hash(rec->key);
  const size_t s = h & (kStripes - 1);
  LockStripe(s);
  Array* a = array_.load(std::memory_order_acquire);
  std::atomic<Record*>* link = &a->buckets[h & a->mask];
  for (Record* r = link->load(std::memory_order_relaxed); r != nullptr;
       r = link->load(std::memory_order_relaxed)) {
    if (r == rec) {
      link->store(r->hash_next.load(std::memory_order_relaxed), std::memory_order_release);
      --stripes_[s].count;
      break;
    }
    link = &r->hash_next;
  }
  UnlockStripe(s);
}

void HashIndex::Grow(Array* seen) {
  WriteGuard g(&grow_mu_);
  if (array_.load(std::memory_order_acquire) != seen) return;  // someone else grew it
  for (size_t s = 0; s < kStripes; ++s) LockStripe(s);
  resize_seq_.fetch_add(1, std::memory_order_acq_rel);  // odd: readers wait
  size_t n = (seen->mask + 1) * 2;
  Array* a = new Array{n - 1, new std::atomic<Record*>[n]};
  for (size_t i = 0; i < n; ++i) a->buckets[i].store(nullptr, std::memory_order_relaxed);
  for (size_t b = 0; b <= seen->mask; ++b) {
    Record* r = seen->buckets[b].load(std::memory_order_relaxed);
    while (r != nullptr) {
      Record* next = r->hash_next.load(std::memory_order_relaxed);
      std::atomic<Record*>& head = a->buckets[Hash(r->key) & a->mask];
      r->hash_next.store(head.load(std::memory_order_relaxed), std::memory_order_relaxed);
      head.store(r, std::memory_order_relaxed);
      r = next;
    }
  }
  arrays_.push_back(a);  // the old array stays allocated: readers may stand in it
  array_.store(a, std::memory_order_release);
  resize_seq_.fetch_add(1, std::memory_order_release);
  for (size_t s = 0; s < kStripes; ++s) UnlockStripe(s);
}

void OrderedIndex::Insert(uint64_t key, uint64_t pk, Record* rec) {
  WriteGuard l(&mu_);
  map_[{key, pk}] = rec;
}

void OrderedIndex::Erase(uint64_t key, uint64_t pk, Record* rec) {
  WriteGuard l(&mu_);
  auto it = map_.find({key, pk});
  if (it != map_.end() && it->second == rec) map_.erase(it);
}

void OrderedIndex::Collect(uint64_t lo, uint64_t hi, bool descending, bool has_after,
                           std::pair<uint64_t, uint64_t> after, size_t max,
                           std::vector<Entry>* out) const {
  if (lo > hi || max == 0) return;
  ReadGuard l(&mu_);
  size_t n = 0;
  if (!descending) {
    auto it = has_after ? map_.upper_bound(after) : map_.lower_bound({lo, 0});
    for (; it != map_.end() && it->first.first <= hi && n < max; ++it, ++n) {
      out->push_back({it->first.first, it->first.second, it->second});
    }
  } else {
    // First element strictly greater than the upper end, then walk back.
    auto it = has_after ? map_.lower_bound(after) : map_.upper_bound({hi, ~uint64_t{0}});
    while (it != map_.begin() && n < max) {
      --it;
      if (it->first.first < lo) break;
      out->push_back({it->first.first, it->first.second, it->second});
      ++n;
    }
  }
}

size_t OrderedIndex::size() const {
  ReadGuard l(&mu_);
  return map_.size();
}

Table::Table(int id, std::string name, Schema schema, const TableOptions& options)
    : id_(id),
      name_(std::move(name)),
      schema_(std::move(schema)),
      row_size_(schema_.row_size()),
      hash_(options.expected_rows) {
  if (options.ordered) {
    ordered_.push_back(std::make_unique<OrderedIndex>(name_ + ".primary", this, nullptr));
    primary_ordered_ = ordered_.back().get();
  }
}

Record* Table::InsertHash(Record* rec) {
  return hash_.Insert(rec);
}

void Table::EraseHash(Record* rec) {
  hash_.Erase(rec);
}

void Table::InsertOrdered(Record* rec) {
  ConstRow row(&schema_, rec->data(), rec->key);
  for (auto& idx : ordered_) idx->Insert(idx->KeyOf(row), rec->key, rec);
}

void Table::EraseOrdered(Record* rec) {
  ConstRow row(&schema_, rec->data(), rec->key);
  for (auto& idx : ordered_) idx->Erase(idx->KeyOf(row), rec->key, rec);
}

OrderedIndex* Table::AddOrderedIndex(std::string name, OrderedIndex::KeyFn key_of) {
  ordered_.push_back(std::make_unique<OrderedIndex>(std::move(name), this, std::move(key_of)));
  return ordered_.back().get();
}

size_t Table::CountPresent() const {
  size_t n = 0;
  hash_.ForEach([&n](Record* r) {
    if (!(r->tid.load(std::memory_order_acquire) & kTidAbsentBit)) ++n;
  });
  return n;
}

std::vector<uint64_t> Table::PresentGranules() const {
  std::vector<uint64_t> out;
  hash_.ForEach([&](Record* r) {
    if (!(r->tid.load(std::memory_order_acquire) & kTidAbsentBit)) out.push_back(LockGranule(r->key));
  });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace engine
}  // namespace corral
