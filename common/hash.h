// Stable 64-bit hashing for reference keys.
//
// References are keyed by a 64-bit fingerprint of their canonical text so that
// the History and State tables store fixed-size keys and the hot path never
// allocates. The hash is stable across processes and runs (unlike absl::Hash),
// so dumped tables and test vectors stay meaningful.
//
//   uint64_t h = corral::Fingerprint64("w_id=5");
//   h = corral::Fingerprint64Append(h, " AND i_id=2");  // incremental form
#ifndef CORRAL_COMMON_HASH_H_
#define CORRAL_COMMON_HASH_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace corral {

inline constexpr uint64_t kFingerprintSeed = 0xcbf29ce484222325ULL;

// FNV-1a over the bytes, continuing from `h`. Finish with Mix64 before use as a
// table key (FNV alone has weak low bits).
inline uint64_t Fnv1aAppend(uint64_t h, const char* data, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// A strong 64-bit finalizer (splitmix64's).
inline constexpr uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

inline uint64_t Fingerprint64(absl::string_view s) {
  return Mix64(Fnv1aAppend(kFingerprintSeed, s.data(), s.size()));
}

}  // namespace corral

#endif  // CORRAL_COMMON_HASH_H_
