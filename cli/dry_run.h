// `topogang dry-run`: places the jobs of a jobs file in order on a cluster file, as if each
// stayed running, and prints where each went (or why it did not fit). No cluster needed.
#pragma once

namespace topogang::cli {

int RunDryRun(int argc, char** argv);  // argv[1] == "dry-run"
extern const char kDryRunHelp[];

}  // namespace topogang::cli
