// Subcommands of the `corral` binary.
//
// Each subcommand lives in its own file `cli/<name>_cmd.cc`, defines its flags
// there with ABSL_FLAG (so `corral <name> --help` lists exactly those flags)
// and exposes one entry point declared here. main.cc holds the table.
//
//   int RunRefs(const std::vector<char*>& positional);  // returns exit code
#ifndef CORRAL_CLI_COMMAND_H_
#define CORRAL_CLI_COMMAND_H_

#include <vector>

namespace corral {
namespace cli {

struct Command {
  const char* name;
  const char* summary;    // one line for `corral help`
  const char* usage;      // usage line(s) for `corral <name> --help`
  const char* flag_file;  // source file whose flags belong to this command
  // Runs the command. `args` are positional arguments after flag parsing
  // (args[0] is the command name). Returns the process exit code.
  int (*run)(const std::vector<char*>& args);
};

}  // namespace cli
}  // namespace corral

#endif  // CORRAL_CLI_COMMAND_H_
