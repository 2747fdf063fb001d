// `topogang spares`: the hot spare nodes a live daemon keeps (daemon.spares, the
// topogang.io/spare=true label), their domain, and idle or used by which gang.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/placement_format.h"
#include "cli/remote.h"
#include "cli/remote_client.h"

namespace topogang::cli {

namespace v1 = ::topogang::v1;

int RunSpares(int argc, char** argv) {
  static const char kHelp[] =
      R"(usage: topogang spares --server HOST:PORT

Hot spare nodes the daemon keeps idle per domain (daemon.spares, label topogang.io/spare=true):
ordinary work never lands on them; a running gang that loses a node gets its replacement
member on the spare of that node's domain first.
)";
  auto a = ParseArgs(argc, argv, 2, WithValue({}), {"help"});
  if (!a.ok() || a->Has("help") || !a->positional.empty()) {
    if (a.ok() && a->Has("help")) {
      std::cout << kHelp << kConnHelp;
      return 0;
    }
    std::cerr << "topogang spares: "
              << (a.ok() ? "takes no arguments" : std::string(a.status().message())) << "\n\n"
              << kHelp << kConnHelp;
    return 2;
  }
  auto r = Connect(*a);
  if (!r.ok()) {
    std::cerr << "topogang spares: " << r.status().message() << "\n";
    return 2;
  }
  grpc::ClientContext ctx;
  r->Prepare(&ctx);
  v1::ListSparesResponse resp;
  if (grpc::Status s = r->stub->ListSpares(&ctx, v1::ListSparesRequest(), &resp); !s.ok()) {
    return Fail("spares", s);
  }
  if (r->json) {
    PrintJson(resp);
    return 0;
  }
  if (!resp.error().empty()) std::cout << "spares not kept: " << resp.error() << "\n";
  if (resp.tier().empty()) {
    std::cout << "no spares (daemon.spares and the topogang.io/spare label are unset)\n";
    return 0;
  }
  Table t({"NODE", "DOMAIN", "GPUS", "FREE", "SOURCE", "STATE", "USED BY"});
  int idle = 0;
  for (const v1::SpareNode& n : resp.spares()) {
    const bool used = n.used_gpus() > 0;
    const bool is_idle = !used && n.healthy() && n.free_gpus() == n.gpus();
    idle += is_idle ? 1 : 0;
    t.Add({n.node(), n.domain(), absl::StrCat(n.gpus()), absl::StrCat(n.free_gpus()),
           n.marked() ? "label" : "per-domain", used ? "in-use" : (is_idle ? "idle" : "unhealthy"),
           n.gangs_size() ? absl::StrJoin(n.gangs(), ", ") : "-"});
  }
  std::cout << t.Render() << resp.spares_size() << " spare(s) per " << resp.tier() << " ("
            << resp.per_domain() << " per domain besides labelled nodes), " << idle << " idle\n";
  return 0;
}

}  // namespace topogang::cli
