#include "bench/runner/workload_select.h"

#include "absl/strings/str_cat.h"
#include "bench/workloads/factory.h"
#include "bench/workloads/tpcc.h"

namespace corral {
namespace bench {

WorkloadFactory MakeWorkloadFactory() {
  return [](const BenchConfig& c) -> absl::StatusOr<std::unique_ptr<workloads::Workload>> {
    if ((c.workload == "tpcc" || c.workload == "tpcc-np") && c.warehouses > 0) {
      workloads::TpccParams p;
      p.warehouses = c.warehouses;
      if (c.workload == "tpcc-np") p.mix = {50, 50, 0, 0, 0};
      return std::unique_ptr<workloads::Workload>(new workloads::TpccWorkload(p, c.workload));
    }
    return workloads::MakeWorkload(c.workload);
  };
}

}  // namespace bench
}  // namespace corral
