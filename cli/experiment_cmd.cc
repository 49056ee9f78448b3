// `corral experiment --spec=FILE`: runs an experiment spec (sweeps, 2^k
// factorial over the policy dimensions, baselines alongside, repeated cells
// with 95% CIs; bench/runner/spec.h documents the format) and writes its
// output directory (runs.csv, cells.csv, timeline.csv, table.md, effects.md,
// throttled.md; bench/runner/experiment.h). Prints the Table-3-shaped
// Markdown (and the effects table) to stdout.
//
//   corral experiment --spec=bench/experiments/quick.spec --out=/tmp/quick
//   corral experiment --spec=... --max_interference=0   # keep runs a busy machine disturbed
//
// Every cell runs once per round, rounds interleaved and shuffled; verdicts
// are ratios paired per round with 95% intervals (bench/runner/experiment.h).
//
// Exit code: 0 on success, 1 when a run or a consistency check failed, 2 on
// a bad spec.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "adapters/pg_executor.h"
#include "bench/pgbackend/pg_backend.h"
#include "bench/runner/experiment.h"
#include "bench/runner/runner.h"
#include "bench/runner/spec.h"
#include "bench/runner/workload_select.h"

ABSL_FLAG(std::string, spec, "", "experiment spec file (key = value lines; see bench/runner/spec.h)");
// Defined in bench_cmd.cc (same binary).
ABSL_DECLARE_FLAG(std::string, conninfo);
ABSL_DECLARE_FLAG(std::string, isolation);
ABSL_FLAG(std::string, out, "", "output directory (default: bench/results/<spec name>)");
ABSL_FLAG(double, max_interference, -1,
          "override the spec's max_interference (share of the machine's CPU a run may lose to other "
          "processes before it is re-run and left out; 0 = rule off; negative = the spec's value)");
ABSL_FLAG(double, time_cap_s, -1, "override the spec's time_cap_s (0 = no cap; negative = the spec's value)");

namespace corral {
namespace cli {

// Declared in cli/commands.h.
int RunExperiment(const std::vector<char*>& args) {
  std::string path = absl::GetFlag(FLAGS_spec);
  if (path.empty() && args.size() > 1) path = args[1];
  if (path.empty()) {
    std::fprintf(stderr, "corral experiment: --spec=FILE is required\n");
    return 2;
  }
  auto spec = bench::ReadSpecFile(path);
  if (!spec.ok()) {
    std::fprintf(stderr, "corral experiment: %s\n", std::string(spec.status().message()).c_str());
    return 2;
  }
  if (absl::GetFlag(FLAGS_max_interference) >= 0) spec->max_interference = absl::GetFlag(FLAGS_max_interference);
  if (absl::GetFlag(FLAGS_time_cap_s) >= 0) spec->time_cap_s = absl::GetFlag(FLAGS_time_cap_s);
  std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) out = "bench/results/" + spec->name;
  // backend = postgres in the spec (or --backend/--conninfo/--isolation of
  // `corral bench`, shared flags) runs on PostgreSQL.
  bench::PgBackendOptions pg;
  pg.conninfo = absl::GetFlag(FLAGS_conninfo);
  auto iso = adapters::ParsePgIsolation(absl::GetFlag(FLAGS_isolation));
  if (!iso.ok()) {
    std::fprintf(stderr, "corral experiment: --isolation: %s\n", std::string(iso.status().message()).c_str());
    return 2;
  }
  pg.isolation = *iso;
  bench::Runner runner(bench::MakeBackendSelector(pg), bench::MakeWorkloadFactory());
  auto sum = bench::RunExperiment(*spec, &runner, out);
  if (!sum.ok()) {
    std::fprintf(stderr, "corral experiment: %s\n", std::string(sum.status().message()).c_str());
    return 1;
  }
  std::printf("%s", sum->table_md.c_str());
  if (!sum->effects_md.empty()) std::printf("\n%s", sum->effects_md.c_str());
  if (!sum->throttled_md.empty()) std::printf("\n%s", sum->throttled_md.c_str());
  std::printf("\n(output files in %s)\n", out.c_str());
  bool ok = true;
  for (const auto& c : sum->cells) ok &= c.checks_ok;
  return ok ? 0 : 1;
}

}  // namespace cli
}  // namespace corral
