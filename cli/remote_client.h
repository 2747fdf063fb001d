// The client side shared by the remote commands (cli/remote.cc, cli/remote_spares.cc): the
// connection flags and their help, the channel/token/deadline they make, gRPC errors turned into
// exit codes, and --format json output. Split from remote.cc so each command file stays small.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/client_context.h>

#include <initializer_list>
#include <memory>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/args.h"
#include "topogang/v1/placement.grpc.pb.h"

namespace topogang::cli {

// The "connection:" section of every remote command's help.
extern const char kConnHelp[];

// The connection flags (kRemoteFlags) plus a command's own value flags.
std::set<std::string> WithValue(std::initializer_list<const char*> extra);

// A channel, token and deadline from the flags.
struct Remote {
  std::unique_ptr<::topogang::v1::PlacementService::Stub> stub;
  std::string token;
  int timeout_s = 30;
  bool json = false;

  void Prepare(grpc::ClientContext* ctx, bool deadline = true) const;
};

absl::StatusOr<Remote> Connect(const Args& a);

// Prints the error; returns 2 for the caller's mistakes (bad input, not found, refused), else 1.
int Fail(absl::string_view cmd, const grpc::Status& s);

// The response as JSON (proto field names, every field), one document.
void PrintJson(const google::protobuf::Message& m);

}  // namespace topogang::cli
