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
       "corral refs [--refs=literal|canonical] [--grouping=single|all] [--schema=DDL] [--mapping=FILE]\n"
       "            [--sql=STATEMENT] [--params=TYPE:VALUE,TYPE:b:HEX,...] [FILE]\n\n"
       "  e.g. corral refs --schema=schemas/tpcc.sql \\\n"
       "         --sql 'UPDATE warehouse SET w_ytd = w_ytd + $2 WHERE w_id = $1' \\\n"
       "         --params 'int4:b:00000005,numeric:3.50'\n"
       "       corral refs --sql 'SELECT * FROM item WHERE i_id = ANY($1)' --params 'int4[]:{1,2,3}'",
       "cli/refs_cmd.cc", &RunRefs},
      {"proxy", "run the conflict-aware PostgreSQL proxy (transaction pooling)",
       "corral proxy [--config=FILE] [--server=CONNINFO] [--listen_port=N] [--pool_size=N] [--workers=N] "
       "[--proxy_policy=NAME]",
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
