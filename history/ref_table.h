// Helpers shared by the reference-keyed libcuckoo tables (History, State) and
// the Schedule: the table hasher and in-transaction duplicate detection.
//
// RefTableHash: libcuckoo hashes every key with the map's Hash on every
// operation. A RefId is already a mixed 64-bit fingerprint (RefId::Of ends in
// Mix64), so a full splitmix finalizer (common's RefIdHash) is wasted work;
// one multiply and a fold keep hand-made ids (RefId(1), RefId(2), ...) well
// spread too. libcuckoo takes the bucket index from the low bits and the
// partial key from all 64 bits.
//
// RefSeenBefore: a transaction may name the same reference twice (two
// statements on one row); it counts once in the History, the State and the
// Sum score. k is small (a handful, at most ~20 in practice): a backward scan
// beats hashing.
//
//   libcuckoo::cuckoohash_map<RefId, V, history::RefTableHash> m;
//   for (size_t i = 0; i < refs.size(); ++i) {
//     if (history::RefSeenBefore(refs, i)) continue;  // duplicate
//     ...
//   }
//
// Thread safety: stateless functions.
#ifndef CORRAL_HISTORY_REF_TABLE_H_
#define CORRAL_HISTORY_REF_TABLE_H_

#include <cstddef>
#include <cstdint>

#include "absl/types/span.h"
#include "common/ids.h"

namespace corral {
namespace history {

// Slots per libcuckoo bucket for the reference tables (libcuckoo's default
// is 4). libcuckoo keeps one 64-byte spinlock per bucket (up to 2^16), so at
// 4 slots the lock array is as large as a small-valued table and every
// operation's two lock lines are cache misses of their own; wider buckets
// shrink the lock array by the same factor. Chosen by measurement
// (bench/RESULTS.md, "Scheduler decisions").
inline constexpr size_t kRefTableSlots = 8;  // libcuckoo allows at most 8

struct RefTableHash {
  size_t operator()(RefId r) const {
    const uint64_t h = r.value() * 0x9e3779b97f4a7c15ULL;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// True when refs[i] also occurs at an index below i.
inline bool RefSeenBefore(absl::Span<const RefId> refs, size_t i) {
  const RefId r = refs[i];
  for (size_t j = 0; j < i; ++j) {
    if (refs[j] == r) return true;
  }
  return false;
}

// The number of distinct references in `refs`.
inline size_t DistinctRefs(absl::Span<const RefId> refs) {
  size_t n = 0;
  for (size_t i = 0; i < refs.size(); ++i) n += RefSeenBefore(refs, i) ? 0 : 1;
  return n;
}

}  // namespace history
}  // namespace corral

#endif  // CORRAL_HISTORY_REF_TABLE_H_
