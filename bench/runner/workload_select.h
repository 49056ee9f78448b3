// The workload factory for `corral bench` / `corral experiment`: a workload
// by name (bench/workloads/factory.h) with the configuration's knobs applied
// (TPC-C warehouses and tpcc_mix, YCSB update_rate; skew knobs go through
// the workload's phase schedule in the runner).
//
//   Runner r(MakeEngineBackend(), MakeWorkloadFactory());
//
// Thread-safety: the returned factory is thread-safe.
#ifndef CORRAL_BENCH_RUNNER_WORKLOAD_SELECT_H_
#define CORRAL_BENCH_RUNNER_WORKLOAD_SELECT_H_

#include "bench/runner/runner.h"

namespace corral {
namespace bench {

WorkloadFactory MakeWorkloadFactory();

}  // namespace bench
}  // namespace corral

#endif  // CORRAL_BENCH_RUNNER_WORKLOAD_SELECT_H_
