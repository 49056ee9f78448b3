// Reads a whole file into a string: the one file reader of bench/runner
// (schema files, spec files, /proc counters).
//
//   std::string text;
//   if (ReadWholeFile("schemas/tpcc.sql", &text)) { ... }
//
// Thread-safety: a pure function (concurrent calls are independent).
#ifndef CORRAL_BENCH_RUNNER_READ_FILE_H_
#define CORRAL_BENCH_RUNNER_READ_FILE_H_

#include <string>

namespace corral {
namespace bench {

// The bytes of `path` in *out; false (leaving *out alone) when it cannot be
// opened. Callers word their own error.
bool ReadWholeFile(const std::string& path, std::string* out);

}  // namespace bench
}  // namespace corral

#endif  // CORRAL_BENCH_RUNNER_READ_FILE_H_
