// The table of `corral` subcommands. Add a command: declare its Run function
// here, append it to AllCommands() in commands.cc, and add its library to the
// `corral` binary's deps in cli/BUILD.
#ifndef CORRAL_CLI_COMMANDS_H_
#define CORRAL_CLI_COMMANDS_H_

#include <vector>

#include "cli/command.h"

namespace corral {
namespace cli {

const std::vector<Command>& AllCommands();

int RunVersion(const std::vector<char*>& args);
int RunRefs(const std::vector<char*>& args);  // cli/refs_cmd.cc
int RunProxy(const std::vector<char*>& args);  // cli/proxy_cmd.cc
int RunBench(const std::vector<char*>& args);  // cli/bench_cmd.cc
int RunExperiment(const std::vector<char*>& args);  // cli/experiment_cmd.cc

}  // namespace cli
}  // namespace corral

#endif  // CORRAL_CLI_COMMANDS_H_
