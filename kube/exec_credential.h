// kubeconfig `users[].user.exec` credential plugins (client.authentication.k8s.io), the way
// kubectl runs them: the command with its args and extra env plus KUBERNETES_EXEC_INFO, stdin
// closed, stdout an ExecCredential whose status carries a bearer token and maybe its expiry.
// Cloud kubeconfigs (EKS `aws eks get-token`, GKE `gke-gcloud-auth-plugin`, AKS `kubelogin`)
// authenticate only this way.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace topogang {

struct ExecPlugin {
  std::string command;  // absolute, relative to the kubeconfig's directory, or looked up in PATH
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string api_version;  // client.authentication.k8s.io/v1 or v1beta1
};

struct ExecToken {
  std::string token;
  std::optional<absl::Time> expires;  // none: valid until a request is refused with 401
};

// Runs the plugin (non-interactive) and reads its ExecCredential. The child is killed after
// `timeout`; its stderr (first 4 KiB) is part of any error.
absl::StatusOr<ExecToken> RunExecPlugin(const ExecPlugin& plugin,
                                        absl::Duration timeout = absl::Seconds(30));

// The plugin's stdout: kind ExecCredential, the expected apiVersion, status.token.
absl::StatusOr<ExecToken> ParseExecCredential(absl::string_view json,
                                              absl::string_view api_version);

}  // namespace topogang
