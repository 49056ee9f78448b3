#include "engine/storage.h"

#include <cstdlib>
#include <cstring>
#include <new>

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
  Record* existing = nullptr;
  hash_.upsert(
      rec->key, [&](Record*& v) { existing = v; }, rec);
  return existing;
}

void Table::EraseHash(Record* rec) {
  hash_.erase_fn(rec->key, [rec](Record*& v) { return v == rec; });
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
  auto lt = hash_.lock_table();
  for (const auto& kv : lt) {
    if (!(kv.second->tid.load(std::memory_order_acquire) & kTidAbsentBit)) ++n;
  }
  return n;
}

}  // namespace engine
}  // namespace corral
