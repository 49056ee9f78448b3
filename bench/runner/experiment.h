// The experiment driver behind `corral experiment`: runs every cell of a
// spec (config sweeps x policies, each repeated and averaged), reusing one
// Phase I History per (cell without the policy, extraction half), and writes
// an output directory:
//   runs.csv       every Phase II run (runner.h CsvHeader)
//   cells.csv      one row per cell: means and 95% CI half-widths
//   table.md       the paper's Table 3 shape: per policy, tps and abort rate
//                  (+- 95% CI) per protocol, one table per (workload, queues)
//   effects.md     2^4 effects (Naming, Grouping, Weighting, Aggregation) on
//                  tps and abort rate, where all sixteen learned policies ran
//   timeline.csv   per-sample throughput, abort rate, History/State memory
//   throttled.md   (throttle_target_ms) highest arrival rate meeting the target
//
//   ExperimentSpec spec = ReadSpecFile("bench/experiments/quick.spec").value();
//   Runner runner(MakeEngineBackend(), factory);
//   auto summary = RunExperiment(spec, &runner, "out/quick");
//   std::cout << summary->table_md;
//
// Thread-safety: one call at a time per Runner.
#ifndef CORRAL_BENCH_RUNNER_EXPERIMENT_H_
#define CORRAL_BENCH_RUNNER_EXPERIMENT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/runner/runner.h"
#include "bench/runner/spec.h"
#include "bench/runner/stats.h"

namespace corral {
namespace bench {

struct CellResult {
  BenchConfig config;
  MeanCi tps, abort_rate, p50_us, p99_us, sched_cost_ns;
  bool checks_ok = true;
  // Throttled search (when asked).
  bool throttled = false;
  double best_rate = 0, best_tps = 0, best_abort_rate = 0, best_mean_us = 0;
};

struct ExperimentSummary {
  std::vector<CellResult> cells;
  std::string table_md;
  std::string effects_md;
  std::string throttled_md;
};

// Runs the cells; writes the files into out_dir when it is non-empty (created
// if missing).
absl::StatusOr<ExperimentSummary> RunExperiment(const ExperimentSpec& spec, Runner* runner,
                                                const std::string& out_dir);

// Markdown builders (exposed for tests).
std::string Table3Markdown(const std::string& title, const std::vector<CellResult>& cells);
// 2^4 effects tables for every (workload, protocol, queues) group where all
// sixteen learned policies are present; "" if none.
std::string EffectsMarkdown(const std::vector<CellResult>& cells);

}  // namespace bench
}  // namespace corral

#endif  // CORRAL_BENCH_RUNNER_EXPERIMENT_H_
