#include "engine/ts_common.h"

#include <cstdlib>
#include <new>

namespace corral {
namespace engine {

MetaPool::~MetaPool() {
  for (auto& v : owned_) {
    for (TsMeta* m : v) {
      FreeChain(m->chain);
      delete m;
    }
  }
}

Version* MetaPool::NewVersion(const Record* rec) {
  uint64_t tid = rec->tid.load(std::memory_order_relaxed);
  bool absent = (tid & kTidAbsentBit) != 0;
  size_t n = absent ? 0 : rec->table->row_size();
  void* p = std::malloc(sizeof(Version) + n);
  if (p == nullptr) throw std::bad_alloc();
  Version* v = new (p) Version;
  v->older = nullptr;
  v->wts = tid & kTidVersionMask;
  v->absent = absent;
  if (!absent) std::memcpy(v->data, rec->data(), n);
  live_versions_.fetch_add(1, std::memory_order_relaxed);
  return v;
}

void MetaPool::FreeChain(Version* v) {
  while (v != nullptr) {
    Version* older = v->older;
    std::free(v);
    live_versions_.fetch_sub(1, std::memory_order_relaxed);
    v = older;
  }
}

}  // namespace engine
}  // namespace corral
