// Strong types for the identifiers that cross module boundaries.
//
// A RefId is the fingerprint of a reference's canonical text ("w_id=5",
// "i_id=2 AND w_id=5"); a QueueId names a run queue (0-based); a TxnTypeId
// names a transaction type within a workload (for per-type statistics).
//
//   RefId r = RefId::Of("w_id=5");
//   QueueId q(3);
//   if (q.value() < num_queues) ...
#ifndef CORRAL_COMMON_IDS_H_
#define CORRAL_COMMON_IDS_H_

#include <cstdint>
#include <functional>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "common/hash.h"

namespace corral {

// A value wrapper that only converts explicitly.
template <typename Tag, typename T>
class StrongId {
 public:
  using ValueType = T;
  constexpr StrongId() : v_() {}
  constexpr explicit StrongId(T v) : v_(v) {}
  constexpr T value() const { return v_; }
  friend constexpr bool operator==(StrongId a, StrongId b) { return a.v_ == b.v_; }
  friend constexpr bool operator!=(StrongId a, StrongId b) { return a.v_ != b.v_; }
  friend constexpr bool operator<(StrongId a, StrongId b) { return a.v_ < b.v_; }
  template <typename H>
  friend H AbslHashValue(H h, StrongId id) {
    return H::combine(std::move(h), id.v_);
  }

 private:
  T v_;
};

struct RefIdTag {};
class RefId : public StrongId<RefIdTag, uint64_t> {
 public:
  using StrongId::StrongId;
  // The id of a reference given its canonical text.
  static RefId Of(absl::string_view text) { return RefId(Fingerprint64(text)); }
};

struct QueueIdTag {};
using QueueId = StrongId<QueueIdTag, int32_t>;

struct TxnTypeIdTag {};
using TxnTypeId = StrongId<TxnTypeIdTag, int32_t>;

// References of one transaction. Most transactions have few; inline storage
// keeps the common case allocation-free.
using RefVec = absl::InlinedVector<RefId, 16>;

// How many times each reference of a RefVec was named (statements of the
// transaction that yield it), parallel to it; empty = once each. Scoring may
// weigh a reference by it (Schedule's `ref_multiplicity`); the History and the
// State count a transaction once per reference regardless.
using RefMult = absl::InlinedVector<uint16_t, 16>;

// std::hash for use with libcuckoo / std containers.
struct RefIdHash {
  size_t operator()(RefId r) const { return static_cast<size_t>(Mix64(r.value())); }
};

}  // namespace corral

#endif  // CORRAL_COMMON_IDS_H_
