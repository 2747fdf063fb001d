// topogang: the command-line tool. Subcommands are dispatched here; each lives in its own file.
#include <iostream>
#include <string>

#include "cli/dry_run.h"
#include "cli/simulate.h"

namespace {

const char kHelp[] = R"(topogang: topology-aware gang scheduling for Kubernetes GPU clusters

usage: topogang <command> [flags]

commands:
  dry-run    place jobs on a cluster file, no cluster needed
  simulate   replay a job trace against scheduling policies (placement quality)
  help       this text

Run 'topogang <command> --help' for a command's flags.
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kHelp;
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    std::cout << kHelp;
    return 0;
  }
  if (cmd == "dry-run") return topogang::cli::RunDryRun(argc, argv);
  if (cmd == "simulate") return topogang::cli::RunSimulate(argc, argv);
  std::cerr << "topogang: unknown command '" << cmd << "'\n\n" << kHelp;
  return 2;
}
