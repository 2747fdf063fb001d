// Subcommands that talk to a running topogangd over gRPC (PlacementService):
//   dry-run --server, explain, gangs, drain, undrain, watch, spares.
// Tables by default, --format json prints the protobuf response as JSON.
#pragma once

#include "common/args.h"

namespace topogang::cli {

// Connection flags every remote command accepts (value flags).
extern const char* const kRemoteFlags[];

int RunRemoteDryRun(const Args& args);  // `dry-run --server ...`, args already parsed
int RunExplain(int argc, char** argv);  // argv[1] == "explain"
int RunGangs(int argc, char** argv);    // argv[1] == "gangs"
int RunDrain(int argc, char** argv);    // argv[1] == "drain" or "undrain"
int RunWatch(int argc, char** argv);    // argv[1] == "watch"
int RunSpares(int argc, char** argv);   // argv[1] == "spares" (cli/remote_spares.cc)

}  // namespace topogang::cli
