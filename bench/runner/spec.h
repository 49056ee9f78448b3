// Experiment spec files for `corral experiment --spec=FILE`.
//
// Format: one `key = value` per line; `#` starts a comment; blank lines are
// ignored. A value may be a comma-separated list: every listed key is a sweep
// dimension and the experiment runs the cartesian product of all lists
// (policy innermost). Keys are those of a bench run (config.h SettingKeys:
// workload, protocol, policy, queues|threads, clients, arrival_rate,
// warehouses, scale, theta, hot_fraction, hot_size, duration, warmup, phase1,
// repeat, mode, seed, stealing, retry_wait_us, max_attempts, progress, sample, skew_phases
// (one value: `dur:theta dur:theta ...`), backend, conninfo) plus:
//   name = quick                 title of the output tables
//   throttle_target_ms = 2       also search the highest arrival rate whose
//                                mean response time meets the target, per cell
//   throttle_steps = 6           bisection steps of that search
// Rounds (experiment.h: every cell runs once per round, order shuffled per
// round; ratios paired per round):
//   min_reps = 3                 rounds always run (default: repeat)
//   max_reps = 12                rounds at most (default: max(repeat, min_reps))
//   ci_target = 0.05             stop adding rounds once every headline
//                                ratio's 95% interval is within +-5% of its
//                                estimate (0 = run max_reps rounds)
//   time_cap_s = 150             do not start a round that would end after
//                                this many seconds (0 = no cap; at least two
//                                rounds always run)
//   max_interference = 0.3       a run whose window lost more than this share
//                                of the machine's CPU to other processes or
//                                steal (interference.h) is marked
//                                contaminated, left out and re-run (0 = off)
//   max_reruns = 2               re-runs of one (cell, round) at most; still
//                                contaminated then: left out of that round
//   phase1_per_round = on        learn a fresh Phase I History in every round
//                                (default off: one History per experiment),
//                                so the intervals also cover how the learning
//                                varies, not only the measuring
// Policy words: any of the sixteen (count-max-canonical-single, ...),
// original, hard-partition, and `factorial` = all sixteen learned policies.
//
//   name = quick
//   workload = tpcc
//   protocol = occ, 2pl-waitdie
//   policy = original, hard-partition, count-max-canonical-single
//   queues = 8
//   warehouses = 8
//   repeat = 3
//
// A bad line is an InvalidArgument error "spec line N: ...".
//
// Thread-safety: pure functions on values.
#ifndef CORRAL_BENCH_RUNNER_SPEC_H_
#define CORRAL_BENCH_RUNNER_SPEC_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bench/runner/config.h"

namespace corral {
namespace bench {

struct ExperimentSpec {
  std::string name = "experiment";
  BenchConfig base;  // every single-valued key applied
  // Sweep dimensions in file order (policy always last), each with its values.
  std::vector<std::pair<std::string, std::vector<std::string>>> sweeps;
  double throttle_target_ms = 0;  // 0 = no throttled search
  int throttle_steps = 6;
  // Rounds and the stopping rule (see above); 0 = the default named there.
  int min_reps = 0;
  int max_reps = 0;
  double ci_target = 0.05;
  double time_cap_s = 0;
  double max_interference = 0;
  int max_reruns = 2;
  bool phase1_per_round = false;
};

absl::StatusOr<ExperimentSpec> ParseSpec(absl::string_view text);
absl::StatusOr<ExperimentSpec> ReadSpecFile(const std::string& path);

// The cells: the cartesian product of the sweeps applied to the base.
std::vector<BenchConfig> ExpandCells(const ExperimentSpec& spec);

}  // namespace bench
}  // namespace corral

#endif  // CORRAL_BENCH_RUNNER_SPEC_H_
