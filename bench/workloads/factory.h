// Workloads by name, with the paper's default parameters (Tables 5 and 6).
//
//   absl::StatusOr<std::unique_ptr<Workload>> w = MakeWorkload("smallbank");
//   for (const std::string& n : WorkloadNames()) ...
//
// Callers that need non-default parameters construct the workload class
// directly (TpccWorkload(TpccParams{...}), ...).
// Thread-safety: both functions are thread-safe.
#ifndef CORRAL_BENCH_WORKLOADS_FACTORY_H_
#define CORRAL_BENCH_WORKLOADS_FACTORY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bench/workloads/workload.h"

namespace corral {
namespace workloads {

// "tpcc" (standard mix), "tpcc-np" (NewOrder + Payment 50/50), "smallbank",
// "tatp", "ycsb". NotFound for another name (the message lists the names).
absl::StatusOr<std::unique_ptr<Workload>> MakeWorkload(absl::string_view name);
const std::vector<std::string>& WorkloadNames();

}  // namespace workloads
}  // namespace corral

#endif  // CORRAL_BENCH_WORKLOADS_FACTORY_H_
