#include "kube/kube_config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/file_util.h"
#include "common/yaml_util.h"

namespace topogang {

absl::StatusOr<KubeConfig> InClusterConfig(const std::string& dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return absl::FailedPreconditionError(
        "not running in a cluster: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set");
  }
  KubeConfig c;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  c.server = absl::StrCat("https://", h, ":", port);
  c.token_file = dir + "/token";
  auto token = ReadFileToString(c.token_file, 1 << 20);
  if (!token.ok()) return token.status();
  c.token = std::string(absl::StripAsciiWhitespace(*token));
  auto ca = ReadFileToString(dir + "/ca.crt", 1 << 20);
  if (!ca.ok()) return ca.status();
  c.ca_pem = *ca;
  return c;
}

namespace {

// Reads "<key>-data" (base64) or "<key>" (a file path) from `m`.
absl::StatusOr<std::string> DataOrFile(const YAML::Node& m, const std::string& key,
                                       absl::string_view source, const std::string& base_dir) {
  if (m[key + "-data"]) {
    std::string decoded;
    if (!absl::Base64Unescape(m[key + "-data"].as<std::string>(), &decoded)) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": ", key, "-data is not base64"));
    }
    return decoded;
  }
  if (m[key]) {
    std::string path = m[key].as<std::string>();
    if (!path.empty() && path[0] != '/') path = base_dir + "/" + path;
    return ReadFileToString(path, 1 << 20);
  }
  return std::string();
}

const YAML::Node FindNamed(const YAML::Node& list, const std::string& name, const char* inner) {
  if (list && list.IsSequence()) {
    for (const YAML::Node& e : list) {
      if (e["name"] && e["name"].as<std::string>() == name) return e[inner];
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

}  // namespace

namespace {

absl::StatusOr<ExecPlugin> ParseExecPlugin(const YAML::Node& exec, const std::string& where,
                                           const std::string& base_dir) {
  if (!exec.IsMap()) return absl::InvalidArgumentError(absl::StrCat(where, ": expected a mapping"));
  ExecPlugin p;
  if (!exec["command"] || !exec["command"].IsScalar() ||
      exec["command"].as<std::string>().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": command is required"));
  }
  p.command = exec["command"].as<std::string>();
  // Like kubectl: a command with a path separator is relative to the kubeconfig's directory.
  if (p.command.find('/') != std::string::npos && p.command[0] != '/' && !base_dir.empty()) {
    p.command = base_dir + "/" + p.command;
  }
  p.api_version = exec["apiVersion"] ? exec["apiVersion"].as<std::string>() : "";
  if (p.api_version != "client.authentication.k8s.io/v1" &&
      p.api_version != "client.authentication.k8s.io/v1beta1") {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": apiVersion \"", p.api_version,
                     "\" (want client.authentication.k8s.io/v1 or v1beta1)"));
  }
  if (YAML::Node args = exec["args"]; args && !args.IsNull()) {
    if (!args.IsSequence()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": args must be a list"));
    }
    for (const YAML::Node& a : args) p.args.push_back(a.as<std::string>());
  }
  if (YAML::Node env = exec["env"]; env && !env.IsNull()) {
    if (!env.IsSequence()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": env must be a list"));
    }
    for (const YAML::Node& e : env) {
      if (!e.IsMap() || !e["name"] || e["name"].as<std::string>().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": env entries need a name"));
      }
      p.env.emplace_back(e["name"].as<std::string>(),
                         e["value"] ? e["value"].as<std::string>() : "");
    }
  }
  if (exec["interactiveMode"] && exec["interactiveMode"].as<std::string>() == "Always") {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": interactiveMode Always needs a terminal; topogangd has none"));
  }
  return p;
}

}  // namespace

absl::StatusOr<KubeConfig> ParseKubeconfig(absl::string_view text, absl::string_view source,
                                           const std::string& base_dir) {
  auto root = YamlParse(text, source);
  if (!root.ok()) return root.status();
  try {
    if (!root->IsMap())
      return absl::InvalidArgumentError(absl::StrCat(source, ": not a kubeconfig"));
    std::string ctx_name =
        (*root)["current-context"] ? (*root)["current-context"].as<std::string>() : "";
    YAML::Node ctx = FindNamed((*root)["contexts"], ctx_name, "context");
    if (!ctx && (*root)["contexts"] && (*root)["contexts"].size() == 1) {
      ctx = (*root)["contexts"][0]["context"];
    }
    if (!ctx) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": no context named '", ctx_name, "' (current-context)"));
    }
    std::string cluster_name = ctx["cluster"] ? ctx["cluster"].as<std::string>() : "";
    std::string user_name = ctx["user"] ? ctx["user"].as<std::string>() : "";
    YAML::Node cluster = FindNamed((*root)["clusters"], cluster_name, "cluster");
    if (!cluster || !cluster["server"]) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": cluster '", cluster_name, "' has no server"));
    }
    KubeConfig c;
    c.server = cluster["server"].as<std::string>();
    while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
    if (cluster["insecure-skip-tls-verify"]) {
      c.insecure_skip_verify = cluster["insecure-skip-tls-verify"].as<bool>();
    }
    auto ca = DataOrFile(cluster, "certificate-authority", source, base_dir);
    if (!ca.ok()) return ca.status();
    c.ca_pem = *ca;
    YAML::Node user = FindNamed((*root)["users"], user_name, "user");
    if (user) {
      if (user["token"]) c.token = user["token"].as<std::string>();
      if (user["tokenFile"]) {
        c.token_file = user["tokenFile"].as<std::string>();
        auto t = ReadFileToString(c.token_file, 1 << 20);
        if (!t.ok()) return t.status();
        c.token = std::string(absl::StripAsciiWhitespace(*t));
      }
      auto cert = DataOrFile(user, "client-certificate", source, base_dir);
      if (!cert.ok()) return cert.status();
      c.client_cert_pem = *cert;
      auto key = DataOrFile(user, "client-key", source, base_dir);
      if (!key.ok()) return key.status();
      c.client_key_pem = *key;
      if (user["auth-provider"] && c.token.empty() && c.client_cert_pem.empty()) {
        return absl::UnimplementedError(absl::StrCat(
            source, ": user '", user_name,
            "' authenticates with an auth-provider plugin (removed from Kubernetes in 1.26), which "
            "topogangd does not run; use an exec plugin, a token or a client certificate"));
      }
      if (YAML::Node exec = user["exec"]; exec && c.token.empty()) {
        auto p =
            ParseExecPlugin(exec, absl::StrCat(source, ": user '", user_name, "' exec"), base_dir);
        if (!p.ok()) return p.status();
        c.exec = *std::move(p);
      }
    }
    if (!c.client_cert_pem.empty() != !c.client_key_pem.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": client certificate and key must be given together"));
    }
    return c;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", e.what()));
  }
}

absl::StatusOr<KubeConfig> LoadKubeconfig(const std::string& path) {
  auto text = ReadFileToString(path, 16 << 20);
  if (!text.ok()) return text.status();
  std::string dir = ".";
  if (auto slash = path.rfind('/'); slash != std::string::npos) dir = path.substr(0, slash);
  return ParseKubeconfig(*text, path, dir);
}

}  // namespace topogang
