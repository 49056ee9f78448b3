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
  };
  return kCommands;
}

}  // namespace cli
}  // namespace corral
