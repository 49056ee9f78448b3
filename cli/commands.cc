#include "cli/commands.h"

#include <cstdio>

namespace corral {
namespace cli {

int RunVersion(const std::vector<char*>&) {
  std::printf("corral 0.1\n");
  return 0;
}

const std::vector<Command>& AllCommands() {
  static const std::vector<Command> kCommands = {
      {"version", "print the version", "corral version", "cli/commands.cc", &RunVersion},
      {"refs", "print the references of SQL statements",
       "corral refs [--refs=literal|canonical] [--grouping=single|all] [--schema=DDL] [--mapping=FILE] [FILE]",
       "cli/refs_cmd.cc", &RunRefs},
      {"proxy", "run the conflict-aware PostgreSQL proxy (transaction pooling)",
       "corral proxy [--config=FILE] [--server=CONNINFO] [--listen_port=N] [--pool_size=N] [--proxy_policy=NAME]",
       "cli/proxy_cmd.cc", &RunProxy},
      {"bench", "one benchmark run (Phase I + Phase II, or online) on the embedded engine",
       "corral bench [--workload=tpcc] [--protocol=occ] [--policy=...] [--queues=N] [--duration=S] [--json=F] [--csv=F]",
       "cli/bench_cmd.cc", &RunBench},
      {"experiment", "run an experiment spec (sweeps, 2^k policy design); tables, CSVs",
       "corral experiment --spec=FILE [--out=DIR]", "cli/experiment_cmd.cc", &RunExperiment},
  };
  return kCommands;
}

}  // namespace cli
}  // namespace corral
