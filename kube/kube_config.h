// Where the API server is and how to authenticate: in-cluster (service-account token and CA,
// KUBERNETES_SERVICE_HOST/PORT) or a kubeconfig file (current context: server, CA, bearer token
// or client certificate, or an exec credential plugin). TLS is always verified unless the
// kubeconfig itself says insecure-skip-tls-verify.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kube/exec_credential.h"

namespace topogang {

struct KubeConfig {
  std::string server;      // "https://10.0.0.1:443" (http:// only for tests on loopback)
  std::string token;       // bearer token ("" = none)
  std::string token_file;  // re-read periodically (projected tokens rotate)
  std::string ca_pem;      // PEM bundle; "" = system roots
  std::string client_cert_pem;
  std::string client_key_pem;
  bool insecure_skip_verify = false;
  std::optional<ExecPlugin> exec;  // token from a credential plugin (run when needed)
  // The program name sent as User-Agent "<program>/<version> (linux)", as client-go names its
  // clients: the API server's audit events tell topogangd's requests from the CLI's.
  std::string program = "topogangd";
};

inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// `dir` is the service-account mount (tests point it elsewhere).
absl::StatusOr<KubeConfig> InClusterConfig(const std::string& dir = kServiceAccountDir);

// Reads a kubeconfig file; relative paths in it are relative to the file's directory.
absl::StatusOr<KubeConfig> LoadKubeconfig(const std::string& path);
absl::StatusOr<KubeConfig> ParseKubeconfig(absl::string_view text, absl::string_view source,
                                           const std::string& base_dir);

}  // namespace topogang
