// `topogang dry-run`: places the jobs of a jobs file in order on a cluster file (or on a live
// cluster's current state, read through a kubeconfig), as if each stayed running, and prints
// where each went (or why it did not fit). No daemon needed.
#pragma once

namespace topogang::cli {

int RunDryRun(int argc, char** argv);  // argv[1] == "dry-run"
extern const char kDryRunHelp[];

}  // namespace topogang::cli
