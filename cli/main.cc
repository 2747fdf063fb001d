// topogang: the command-line tool. Subcommands are dispatched here; each lives in its own file.
#include <iostream>
#include <string>

#include "cli/dry_run.h"
#include "cli/remote.h"
#include "cli/simulate.h"

namespace {

const char kHelp[] = R"(topogang: topology-aware gang scheduling for Kubernetes GPU clusters

usage: topogang <command> [flags]

commands:
  dry-run    place jobs on a cluster file, no cluster needed (or --server: a live daemon)
  simulate   replay a job trace against scheduling policies (placement quality)
  explain    why a gang is placed where it is, or why it does not fit (live daemon)
  gangs      gangs a live daemon holds
  spares     hot spare nodes a live daemon keeps, idle or used by which gang
  drain      admin-drain a node on a live daemon; undrain clears it
  watch      stream a live daemon's decisions
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
  if (cmd == "explain") return topogang::cli::RunExplain(argc, argv);
  if (cmd == "gangs") return topogang::cli::RunGangs(argc, argv);
  if (cmd == "spares") return topogang::cli::RunSpares(argc, argv);
  if (cmd == "drain" || cmd == "undrain") return topogang::cli::RunDrain(argc, argv);
  if (cmd == "watch") return topogang::cli::RunWatch(argc, argv);
  std::cerr << "topogang: unknown command '" << cmd << "'\n\n" << kHelp;
  return 2;
}
