#include "bench/workloads/factory.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bench/workloads/smallbank.h"
#include "bench/workloads/tatp.h"
#include "bench/workloads/tpcc.h"
#include "bench/workloads/ycsb.h"

namespace corral {
namespace workloads {

const std::vector<std::string>& WorkloadNames() {
  static const auto* names =
      new std::vector<std::string>{"tpcc", "tpcc-np", "smallbank", "tatp", "ycsb"};
  return *names;
}

absl::StatusOr<std::unique_ptr<Workload>> MakeWorkload(absl::string_view name) {
  if (name == "tpcc") return std::unique_ptr<Workload>(new TpccWorkload(TpccParams{}, "tpcc"));
  if (name == "tpcc-np") {
    TpccParams p;
    p.mix = {50, 50, 0, 0, 0};
    return std::unique_ptr<Workload>(new TpccWorkload(p, "tpcc-np"));
  }
  if (name == "smallbank") return std::unique_ptr<Workload>(new SmallBankWorkload({}));
  if (name == "tatp") return std::unique_ptr<Workload>(new TatpWorkload({}));
  if (name == "ycsb") return std::unique_ptr<Workload>(new YcsbWorkload({}));
  return absl::NotFoundError(absl::StrCat("unknown workload \"", std::string(name),
                                          "\"; known: ", absl::StrJoin(WorkloadNames(), ", ")));
}

}  // namespace workloads
}  // namespace corral
