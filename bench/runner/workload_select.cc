#include "bench/runner/workload_select.h"

#include "absl/strings/str_cat.h"
#include "bench/workloads/factory.h"
#include "bench/workloads/smallbank.h"
#include "bench/workloads/tatp.h"
#include "bench/workloads/tpcc.h"
#include "bench/workloads/ycsb.h"

namespace corral {
namespace bench {

WorkloadFactory MakeWorkloadFactory() {
  return [](const BenchConfig& c) -> absl::StatusOr<std::unique_ptr<workloads::Workload>> {
    using W = std::unique_ptr<workloads::Workload>;
    if (c.workload == "tpcc" || c.workload == "tpcc-np") {
      workloads::TpccParams p;
      if (c.warehouses > 0) p.warehouses = c.warehouses;
      if (c.workload == "tpcc-np") p.mix = {50, 50, 0, 0, 0};
      if (c.tpcc_mix == "standard") p.mix = workloads::TpccParams{}.mix;
      if (c.tpcc_mix == "np") p.mix = {50, 50, 0, 0, 0};
      if (c.tpcc_mix == "payment") p.mix = {0, 100, 0, 0, 0};
      if (c.tpcc_mix == "neworder") p.mix = {100, 0, 0, 0, 0};
      if (c.tpcc_rows == "dbx1000") {
        p.insert_rows = false;
        p.items = 100000;
        p.customers_per_district = 3000;
      }
      return W(new workloads::TpccWorkload(p, c.workload));
    }
    if (c.workload == "smallbank") {
      workloads::SmallBankParams p;
      if (c.scale > 0) p.accounts = static_cast<int64_t>(p.accounts * c.scale);
      if (c.hot_fraction >= 0) p.hot_fraction = c.hot_fraction;
      if (c.hot_size > 0) p.hot_size = c.hot_size;
      return W(new workloads::SmallBankWorkload(p));
    }
    if (c.workload == "tatp") {
      workloads::TatpParams p;
      if (c.scale > 0) p.subscribers = static_cast<int64_t>(p.subscribers * c.scale);
      if (c.hot_fraction >= 0) p.hot_fraction = c.hot_fraction;
      if (c.hot_size > 0) p.hot_size = c.hot_size;
      return W(new workloads::TatpWorkload(p));
    }
    if (c.workload == "ycsb") {
      workloads::YcsbParams p;
      if (c.scale > 0) p.records = static_cast<int64_t>(p.records * c.scale);
      if (c.update_rate >= 0) p.update_txn_fraction = c.update_rate;
      if (c.hot_size > 0) p.hot_records = c.hot_size;  // Orthrus's hot set
      return W(new workloads::YcsbWorkload(p));
    }
    return workloads::MakeWorkload(c.workload);  // NotFound listing the names
  };
}

}  // namespace bench
}  // namespace corral
