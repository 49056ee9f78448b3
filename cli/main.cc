// The `corral` binary: one entry point, one subcommand per job.
//
//   corral help
//   corral refs --refs=canonical --schema=schemas/tpcc.sql < statements.sql
//   corral <cmd> --help
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/commands.h"

namespace corral {
namespace cli {
namespace {

const Command* g_current = nullptr;

void PrintTopHelp(FILE* out) {
  std::fprintf(out,
               "corral: conflict-aware transaction scheduling\n\n"
               "usage: corral <command> [flags] [args]\n\ncommands:\n");
  for (const Command& c : AllCommands()) {
    std::fprintf(out, "  %-12s %s\n", c.name, c.summary);
  }
  std::fprintf(out, "\n'corral <command> --help' lists a command's flags.\n");
}

const Command* Find(const char* name) {
  for (const Command& c : AllCommands()) {
    if (std::strcmp(c.name, name) == 0) return &c;
  }
  return nullptr;
}

}  // namespace
}  // namespace cli
}  // namespace corral

int main(int argc, char** argv) {
  using corral::cli::Command;
  if (argc < 2 || std::strcmp(argv[1], "help") == 0 || std::strcmp(argv[1], "--help") == 0 ||
      std::strcmp(argv[1], "-h") == 0) {
    if (argc >= 3 && std::strcmp(argv[1], "help") == 0) {
      // `corral help <cmd>` == `corral <cmd> --help`
      argv[1] = argv[2];
      argv[2] = const_cast<char*>("--help");
    } else {
      corral::cli::PrintTopHelp(argc < 2 ? stderr : stdout);
      return argc < 2 ? 2 : 0;
    }
  }
  const Command* cmd = corral::cli::Find(argv[1]);
  if (cmd == nullptr) {
    std::fprintf(stderr, "corral: unknown command '%s'\n\n", argv[1]);
    corral::cli::PrintTopHelp(stderr);
    return 2;
  }
  corral::cli::g_current = cmd;
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, corral::cli::g_current->flag_file);
  };
  config.contains_helpshort_flags = config.contains_help_flags;
  config.normalize_filename = [](absl::string_view f) { return std::string(f); };
  config.version_string = []() { return std::string("corral 0.1\n"); };
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(
      absl::StrCat(cmd->summary, "\n\nusage: ", cmd->usage));
  // Parse flags with the command name in argv[0]'s place.
  std::vector<char*> args(argv + 1, argv + argc);
  std::vector<char*> positional = absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  return cmd->run(positional);
}
