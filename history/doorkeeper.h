// Doorkeeper: remembers which references were seen once, so that a table
// admits a reference only at its second sighting (TinyLFU's doorkeeper,
// Einziger/Friedman/Manes). The History uses it for commits: a reference that
// is committed once and never again (a random read among a million rows) no
// longer costs a table node, a text and an aging visit.
//
// A bit array of 2^k bits, one bit per reference (chosen by the reference's
// hash, which RefId already is). FirstSighting(r) sets r's bit and says
// whether it was clear. A set bit may belong to another reference (a false
// positive: r is admitted at its first sighting, as without a doorkeeper);
// the rate stays below 1/8 because the array is cleared every 2^k / 8 first
// sightings, which also forgets references seen once long ago.
//
//   Doorkeeper d(/*log2_bits=*/20);            // 128 KiB
//   if (!d.FirstSighting(ref)) table.Insert(ref);  // second sighting: admit
//
// Thread safety: thread-safe and lock-free. Concurrent calls may lose a bit
// to a concurrent clear (that reference's next sighting counts as its first
// again), never more.
#ifndef CORRAL_HISTORY_DOORKEEPER_H_
#define CORRAL_HISTORY_DOORKEEPER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/hash.h"
#include "common/ids.h"

namespace corral {
namespace history {

class Doorkeeper {
 public:
  // 2^log2_bits bits (clamped to [6, 30]).
  explicit Doorkeeper(int log2_bits)
      : log2_bits_(log2_bits < 6 ? 6 : (log2_bits > 30 ? 30 : log2_bits)),
        words_(size_t{1} << (log2_bits_ - 6)),
        bits_(new std::atomic<uint64_t>[words_]),
        clear_every_(int64_t{1} << (log2_bits_ - 3)) {
    for (size_t i = 0; i < words_; ++i) bits_[i].store(0, std::memory_order_relaxed);
  }
  Doorkeeper(const Doorkeeper&) = delete;
  Doorkeeper& operator=(const Doorkeeper&) = delete;

  // True when `ref`'s bit was clear (now set): its first sighting since the
  // last clear. False when it was set already: a second sighting (or a
  // false positive).
  bool FirstSighting(RefId ref) {
    const uint64_t h = Hash(ref);
    const uint64_t bit = uint64_t{1} << (h & 63);
    std::atomic<uint64_t>& w = bits_[(h >> 6) & (words_ - 1)];
    if (w.load(std::memory_order_relaxed) & bit) return false;
    if (w.fetch_or(bit, std::memory_order_relaxed) & bit) return false;
    if ((firsts_.fetch_add(1, std::memory_order_relaxed) + 1) % clear_every_ == 0) Clear();
    return true;
  }

  // Starts loading `ref`'s word (a later FirstSighting finds it in cache).
  void Prefetch(RefId ref) const { __builtin_prefetch(&bits_[(Hash(ref) >> 6) & (words_ - 1)]); }

  // Forgets every sighting.
  void Clear() {
    clears_.fetch_add(1, std::memory_order_relaxed);
    for (size_t i = 0; i < words_; ++i) bits_[i].store(0, std::memory_order_relaxed);
  }

  int log2_bits() const { return log2_bits_; }
  // First sightings after which the array clears itself.
  int64_t clear_every() const { return clear_every_; }
  int64_t clears() const { return clears_.load(std::memory_order_relaxed); }
  // First sightings so far (FirstSighting's trues), never reset.
  int64_t firsts() const { return firsts_.load(std::memory_order_relaxed); }

 private:
  // Mixed again: RefIds are hashes, but their low bits also pick the index's
  // buckets, and the bit should not correlate with them.
  static uint64_t Hash(RefId ref) { return Mix64(ref.value() ^ 0x5bd1e9955bd1e995ULL); }

  const int log2_bits_;
  const size_t words_;
  const std::unique_ptr<std::atomic<uint64_t>[]> bits_;
  const int64_t clear_every_;
  std::atomic<int64_t> firsts_{0};  // every clear_every_-th clears the bits
  std::atomic<int64_t> clears_{0};
};

}  // namespace history
}  // namespace corral

#endif  // CORRAL_HISTORY_DOORKEEPER_H_
