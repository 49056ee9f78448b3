// The experiment driver behind `corral experiment`: runs every cell of a
// spec (config sweeps x policies) in interleaved rounds, reusing one Phase I
// History per (cell without the policy, extraction half), and writes an
// output directory.
//
// Rounds (rounds.h): round r runs every cell's Phase II repetition r once
// (and, with phase1_per_round, a fresh Phase I per learned History), in
// an order shuffled per round (seeded by the spec's seed), before any cell's
// r + 1. Each run's warm-up window is discarded (spec key warmup). A run whose
// measured window lost more than max_interference of the machine's CPU to
// other processes or steal (interference.h) is marked contaminated, kept out
// of every mean and ratio, and re-run at once (max_reruns). After each round
// every headline ratio (each learned policy's tps against original and
// against hard-partition of the same configuration, paired per round) gets a
// 95% interval over its per-round log-ratios; rounds are added from min_reps
// until all are within +-ci_target of their estimates, max_reps rounds ran,
// or the next round would end after time_cap_s (spec.h).
//
//   runs.csv       every Phase II run, contaminated ones included (runner.h
//                  CsvHeader; columns round, interference_share, ...,
//                  contaminated)
//   cells.csv      one row per cell: means and 95% CI half-widths over the
//                  clean runs
//   table.md       the paper's Table 3 shape: per policy, tps and abort rate
//                  (+- 95% CI) per protocol, one table per (workload, queues)
//   effects.md     2^4 effects (Naming, Grouping, Weighting, Aggregation) on
//                  tps and abort rate, where all sixteen learned policies ran
//   ratios.csv     one row per headline ratio: estimate and 95% interval of
//                  tps and abort rate, rounds paired
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
#include "bench/runner/rounds.h"
#include "bench/runner/runner.h"
#include "bench/runner/spec.h"
#include "bench/runner/stats.h"

namespace corral {
namespace bench {

struct CellResult {
  BenchConfig config;
  MeanCi tps, abort_rate, p50_us, p99_us, sched_cost_ns;  // over the clean runs
  MeanCi queues_per_txn;  // qstore: execution queues a transaction spanned (0 for others)
  int contaminated_runs = 0;  // left out (interference above the bound)
  bool checks_ok = true;
  // Throttled search (when asked).
  bool throttled = false;
  double best_rate = 0, best_tps = 0, best_abort_rate = 0, best_mean_us = 0;
};

// One Phase II run of the experiment (contaminated ones included).
struct RunRecord {
  int cell = 0;     // index into ExperimentSummary::cells
  int round = 0;    // 1-based
  int attempt = 0;  // 0 = first, 1.. = re-runs after contamination
  bool ran_phase1 = false;  // this call learned a fresh History first
  RunMetrics metrics;
};

// A learned cell against a baseline of the same configuration, paired per
// round (rounds.h).
struct PairedRatio {
  int cell = 0;           // the learned cell
  int baseline_cell = 0;  // original or hard-partition, same everything else
  std::string baseline;   // its policy name
  RatioCi tps;            // learned / baseline throughput
  RatioCi abort_rate;     // learned / baseline abort rate (SmoothedAbortRate)
};

struct ExperimentSummary {
  std::vector<CellResult> cells;
  std::vector<RunRecord> runs;
  std::vector<PairedRatio> ratios;
  int rounds = 0;
  std::string stop_reason;  // "intervals within +-5%", "time cap", "max_reps", ...
  int contaminated_runs = 0;
  std::string table_md;
  std::string effects_md;
  std::string throttled_md;
};

// Runs the cells; writes the files into out_dir when it is non-empty (created
// if missing).
absl::StatusOr<ExperimentSummary> RunExperiment(const ExperimentSpec& spec, Runner* runner,
                                                const std::string& out_dir);

// Markdown builders (exposed for tests). Under each table, the verdict lines
// of the `ratios` whose cells are in it (VerdictLine wording).
std::string Table3Markdown(const std::string& title, const std::vector<CellResult>& cells,
                           const std::vector<PairedRatio>& ratios = {});
// 2^4 effects tables for every (workload, protocol, queues) group where all
// sixteen learned policies are present; "" if none.
std::string EffectsMarkdown(const std::vector<CellResult>& cells);

}  // namespace bench
}  // namespace corral

#endif  // CORRAL_BENCH_RUNNER_EXPERIMENT_H_
