// Invariant checks for libFuzzer targets: a violated invariant prints what
// and on which input detail, then abort()s, which libFuzzer reports as a
// crash (saving the input) and the corpus replay test as a failure.
//
//   fuzz::Check(parsed == again, "wire_fuzzer", "round trip", raw);
//
// Thread-safety: stateless functions; thread-safe.
#ifndef CORRAL_FUZZ_CHECK_H_
#define CORRAL_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#include "absl/strings/string_view.h"

namespace corral {
namespace fuzz {

[[noreturn]] inline void Fail(const char* target, const char* what, absl::string_view detail = "") {
  std::fprintf(stderr, "%s invariant violated: %s\n  %.*s\n", target, what, static_cast<int>(detail.size()),
               detail.data());
  std::abort();
}

inline void Check(bool ok, const char* target, const char* what, absl::string_view detail = "") {
  if (!ok) Fail(target, what, detail);
}

}  // namespace fuzz
}  // namespace corral

#endif  // CORRAL_FUZZ_CHECK_H_
