#include "cli/remote.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <cstdlib>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "api/convert.h"
#include "cli/placement_format.h"
#include "cli/remote_client.h"
#include "common/file_util.h"
#include "scheduler/gang_file.h"
#include "topogang/v1/placement.grpc.pb.h"

namespace topogang::cli {

namespace v1 = ::topogang::v1;

const char* const kRemoteFlags[] = {"server",          "token-file", "ca",     "cert", "key",
                                    "tls-server-name", "timeout",    "format", nullptr};

namespace {

std::string NodeSummary(const v1::Placement& p) {
  const int n = p.nodes_size();
  if (n == 0) return "-";
  if (n <= 3) return absl::StrJoin(p.nodes(), ", ");
  return absl::StrCat(p.nodes(0), " .. ", p.nodes(n - 1), " (", n, " nodes)");
}

// Replacement members on hot spares, e.g. " [spare: gpu-node-7 (member 3)]".
std::string SpareSummary(const v1::Gang& g) {
  std::vector<std::string> on;
  for (int m : g.spare_members()) {
    if (m >= 0 && m < g.placement().members_size()) {
      on.push_back(absl::StrCat(g.placement().members(m).node(), " (member ", m, ")"));
    }
  }
  return on.empty() ? "" : absl::StrCat(" [spare: ", absl::StrJoin(on, ", "), "]");
}

std::string Span(const v1::Placement& p) { return absl::StrCat(p.tier(), " ", p.domain()); }

const char* StateName(v1::GangState s) {
  switch (s) {
    case v1::GANG_STATE_RESERVED:
      return "reserved";
    case v1::GANG_STATE_RUNNING:
      return "running";
    default:
      return "-";
  }
}

std::string Millis(int64_t ms) {
  if (ms == 0) return "-";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

}  // namespace

int RunRemoteDryRun(const Args& args) {
  auto r = Connect(args);
  if (!r.ok()) {
    std::cerr << "topogang dry-run: " << r.status().message() << "\n";
    return 2;
  }
  if (!args.Has("jobs")) {
    std::cerr << "topogang dry-run: --jobs is required (the cluster is the daemon's)\n";
    return 2;
  }
  if (args.Has("cluster") || args.Has("config")) {
    std::cerr << "topogang dry-run: --cluster/--config do not apply with --server\n";
    return 2;
  }
  auto text = ReadFileToString(args.Get("jobs"));
  if (!text.ok()) {
    std::cerr << "topogang dry-run: " << text.status().message() << "\n";
    return 2;
  }
  auto jobs = ParseJobsFile(*text, args.Get("jobs"));
  if (!jobs.ok()) {
    std::cerr << "topogang dry-run: " << jobs.status().message() << "\n";
    return 2;
  }
  v1::DryRunRequest req;
  for (const GangSpec& g : *jobs) GangToProto(g, req.add_gangs());
  for (absl::string_view n : absl::StrSplit(args.Get("drain"), ',', absl::SkipEmpty())) {
    req.add_drained_nodes(std::string(n));
  }
  grpc::ClientContext ctx;
  r->Prepare(&ctx);
  v1::DryRunResponse resp;
  if (grpc::Status s = r->stub->DryRun(&ctx, req, &resp); !s.ok()) return Fail("dry-run", s);
  if (r->json) {
    PrintJson(resp);
    return 0;
  }
  Table t({"GANG", "GPUS", "PLACED", "TIER", "BW(Gb/s)", "DOMAIN", "NODES / REASON"});
  int placed = 0;
  for (int i = 0; i < resp.results_size(); ++i) {
    const v1::DryRunResult& res = resp.results(i);
    const GangSpec& g = (*jobs)[i];
    if (!res.fits()) {
      t.Add({res.gang(), absl::StrCat(g.total_gpus()), "no", "-", "-", "-", res.no_fit_reason()});
      continue;
    }
    ++placed;
    const v1::Placement& p = res.placement();
    t.Add({res.gang(), absl::StrCat(g.total_gpus()), "yes", p.tier(),
           absl::StrFormat("%.0f", p.bandwidth_gbps()), p.domain(), NodeSummary(p)});
  }
  std::cout << "daemon " << args.Get("server") << ": " << resp.free_healthy_gpus() << " of "
            << resp.total_gpus() << " GPUs free and healthy before this dry run\n\n"
            << t.Render() << "\n"
            << placed << " of " << resp.results_size()
            << " gangs would be placed (nothing reserved)\n";
  return 0;
}

int RunExplain(int argc, char** argv) {
  static const char kHelp[] = R"(usage: topogang explain GANG --server HOST:PORT [spec flags]

Why GANG is placed where it is, or why it does not fit: per tier (node first),
how many domains could hold it and why the closest ones were rejected. For a
gang the daemon does not hold, give its spec:
  --members N --gpus-per-member G [--sku S] [--required-tier T]
  [--preferred-tier T] [--slice-members K --slice-tier T]
  --max-domains N         rejected domains listed per tier (default 5)
)";
  auto a = ParseArgs(argc, argv, 2,
                     WithValue({"members", "gpus-per-member", "sku", "required-tier",
                                "preferred-tier", "slice-members", "slice-tier", "max-domains"}),
                     {"help"});
  if (!a.ok() || a->Has("help") || a->positional.size() != 1) {
    if (a.ok() && a->Has("help")) {
      std::cout << kHelp << kConnHelp;
      return 0;
    }
    std::cerr << "topogang explain: "
              << (a.ok() ? "exactly one GANG name expected" : std::string(a.status().message()))
              << "\n\n"
              << kHelp << kConnHelp;
    return 2;
  }
  auto r = Connect(*a);
  if (!r.ok()) {
    std::cerr << "topogang explain: " << r.status().message() << "\n";
    return 2;
  }
  v1::ExplainRequest req;
  req.set_gang(a->positional[0]);
  auto int_flag = [&](const char* f, int* out) {
    if (!a->Has(f)) return true;
    if (absl::SimpleAtoi(a->Get(f), out)) return true;
    std::cerr << "topogang explain: --" << f << " wants a number\n";
    return false;
  };
  int members = 0, gpm = 0, slice = 0, max_domains = 0;
  if (!int_flag("members", &members) || !int_flag("gpus-per-member", &gpm) ||
      !int_flag("slice-members", &slice) || !int_flag("max-domains", &max_domains)) {
    return 2;
  }
  if (a->Has("members") || a->Has("gpus-per-member")) {
    v1::GangSpec* s = req.mutable_spec();
    s->set_name(a->positional[0]);
    s->set_members(members ? members : 1);
    s->set_gpus_per_member(gpm ? gpm : 1);
    s->set_sku(a->Get("sku"));
    s->set_required_tier(a->Get("required-tier"));
    s->set_preferred_tier(a->Get("preferred-tier"));
    s->set_slice_members(slice);
    s->set_slice_tier(a->Get("slice-tier"));
  }
  req.set_max_domains_per_tier(max_domains);
  grpc::ClientContext ctx;
  r->Prepare(&ctx);
  v1::ExplainResponse resp;
  if (grpc::Status s = r->stub->Explain(&ctx, req, &resp); !s.ok()) return Fail("explain", s);
  if (r->json) {
    PrintJson(resp);
    return 0;
  }
  const v1::GangSpec& sp = resp.spec();
  std::cout << "gang " << resp.gang() << ": " << sp.members() << " x " << sp.gpus_per_member()
            << " GPUs"
            << (sp.required_tier().empty() ? "" : ", required tier " + sp.required_tier())
            << (resp.held() ? absl::StrCat(", ", StateName(resp.state()))
                            : ", not held by the daemon")
            << "\n";
  if (resp.held()) {
    std::cout << "placement: " << Span(resp.placement()) << ", "
              << absl::StrFormat("%.0f", resp.placement().bandwidth_gbps()) << " Gb/s per GPU, "
              << resp.placement().leftover_gpus() << " GPUs left in the domain; nodes "
              << NodeSummary(resp.placement()) << "\n";
  }
  std::cout << "\n";
  Table t({"TIER", "ALLOWED", "DOMAINS", "FIT", "MOST ROOM", "VERDICT"});
  for (const v1::TierExplanation& x : resp.tiers()) {
    t.Add({x.tier(), x.allowed() ? "yes" : "no", absl::StrCat(x.domains()),
           absl::StrCat(x.domains_that_fit()),
           absl::StrCat(x.best_domain(), " (", x.best_member_capacity(), ")"), x.verdict()});
  }
  std::cout << t.Render();
  // The rejections that explain a no-fit: those of the widest tier the gang may use.
  const v1::TierExplanation* widest = nullptr;
  for (const v1::TierExplanation& x : resp.tiers()) {
    if (x.allowed()) widest = &x;
  }
  if (!resp.would_fit_now() && widest && widest->domains_that_fit() == 0 &&
      !widest->rejected().empty()) {
    std::cout << "\nrejected " << widest->tier() << " domains (most room first):\n";
    for (const v1::DomainRejection& d : widest->rejected()) {
      std::cout << "  " << d.domain() << ": " << d.reason() << "\n";
    }
  }
  if (resp.avoided_nodes_size() > 0) {
    std::cout << "\navoided nodes (left out of the tiers above):\n";
    for (const v1::AvoidedNode& n : resp.avoided_nodes()) {
      std::cout << "  " << n.node() << ": " << n.reason() << "\n";
    }
  }
  if (resp.slow_nodes_size() > 0) {
    std::cout << "\nslow nodes now"
              << (resp.slow_node_gang_gpus() > 0
                      ? absl::StrCat(" (gangs of ", resp.slow_node_gang_gpus(),
                                     "+ GPUs avoid them)")
                      : std::string(" (no gang avoids them: slow_node_gang_gpus is 0)"))
              << ":\n";
    for (const v1::AvoidedNode& n : resp.slow_nodes()) {
      std::cout << "  " << n.node() << ": " << n.reason() << "\n";
    }
  }
  std::cout << "\n" << resp.summary() << "\n";
  return 0;
}

int RunGangs(int argc, char** argv) {
  static const char kHelp[] =
      R"(usage: topogang gangs --server HOST:PORT [--state reserved|running|held]

Gangs the daemon holds, with their placement.
)";
  auto a = ParseArgs(argc, argv, 2, WithValue({"state"}), {"help"});
  if (!a.ok() || a->Has("help")) {
    if (a.ok()) {
      std::cout << kHelp << kConnHelp;
      return 0;
    }
    std::cerr << "topogang gangs: " << a.status().message() << "\n\n" << kHelp << kConnHelp;
    return 2;
  }
  v1::ListGangsRequest req;
  const std::string state = a->Get("state");
  if (state == "reserved") {
    req.set_state(v1::GANG_STATE_RESERVED);
  } else if (state == "running") {
    req.set_state(v1::GANG_STATE_RUNNING);
  } else if (state == "held") {
    req.set_state(v1::GANG_STATE_HELD);
  } else if (!state.empty()) {
    std::cerr << "topogang gangs: --state must be reserved, running or held\n";
    return 2;
  }
  auto r = Connect(*a);
  if (!r.ok()) {
    std::cerr << "topogang gangs: " << r.status().message() << "\n";
    return 2;
  }
  grpc::ClientContext ctx;
  r->Prepare(&ctx);
  v1::ListGangsResponse resp;
  if (grpc::Status s = r->stub->ListGangs(&ctx, req, &resp); !s.ok()) return Fail("gangs", s);
  if (r->json) {
    PrintJson(resp);
    return 0;
  }
  Table t({"GANG", "STATE", "GPUS", "TIER", "DOMAIN", "BW(Gb/s)", "EXPIRES", "NODES"});
  std::string slower;  // why, below the table: too long for a column
  for (const v1::Gang& g : resp.gangs()) {
    const v1::Placement& p = g.placement();
    if (!g.slower_since_repair().empty()) {
      absl::StrAppend(&slower, g.spec().name(),
                      " runs slower since a repair: ", g.slower_since_repair(), "\n");
    }
    t.Add({g.spec().name(),
           absl::StrCat(StateName(g.state()), g.slower_since_repair().empty() ? "" : " (slower)"),
           absl::StrCat(static_cast<long>(g.spec().members()) * g.spec().gpus_per_member()),
           p.tier(), p.domain(), absl::StrFormat("%.0f", p.bandwidth_gbps()),
           Millis(g.expires_at_unix_ms()), NodeSummary(p) + SpareSummary(g)});
  }
  std::cout << t.Render() << resp.gangs_size() << " gang(s)\n" << slower;
  return 0;
}

int RunDrain(int argc, char** argv) {
  const std::string cmd = argv[1];
  const bool drain = cmd == "drain";
  const std::string help = absl::StrCat(
      "usage: topogang ", cmd, " NODE --server HOST:PORT", drain ? " --reason TEXT" : "", "\n\n",
      drain ? "Admin drain: the node takes no new GPUs; reservations on it are re-planned.\n"
            : "Clears the admin drain (a kube cordon or a lost agent stays).\n");
  auto a = ParseArgs(argc, argv, 2, WithValue({"reason"}), {"help"});
  if (!a.ok() || a->Has("help") || a->positional.size() != 1 || (drain && !a->Has("reason"))) {
    if (a.ok() && a->Has("help")) {
      std::cout << help << kConnHelp;
      return 0;
    }
    std::cerr << "topogang " << cmd << ": "
              << (!a.ok()                     ? std::string(a.status().message())
                  : a->positional.size() != 1 ? "exactly one NODE expected"
                                              : "--reason is required")
              << "\n\n"
              << help << kConnHelp;
    return 2;
  }
  auto r = Connect(*a);
  if (!r.ok()) {
    std::cerr << "topogang " << cmd << ": " << r.status().message() << "\n";
    return 2;
  }
  v1::DrainRequest req;
  req.set_node(a->positional[0]);
  req.set_reason(a->Get("reason"));
  grpc::ClientContext ctx;
  r->Prepare(&ctx);
  v1::NodeHealth resp;
  grpc::Status s = drain ? r->stub->Drain(&ctx, req, &resp) : r->stub->Undrain(&ctx, req, &resp);
  if (!s.ok()) return Fail(cmd, s);
  if (r->json) {
    PrintJson(resp);
    return 0;
  }
  std::cout << "node " << resp.node() << ": "
            << (resp.healthy()
                    ? std::string("healthy")
                    : absl::StrCat("unhealthy (", absl::StrJoin(resp.sources(), ", "),
                                   resp.reason().empty() ? "" : ": " + resp.reason(), ")"))
            << ", " << resp.free_healthy_gpus() << " free healthy GPUs\n";
  return 0;
}

int RunWatch(int argc, char** argv) {
  static const char kHelp[] = R"(usage: topogang watch --server HOST:PORT [--after SEQ]

Streams the daemon's decisions (reserve, bind, expire, replan, health) until
interrupted. --after SEQ resumes after an event; default: new events only.
)";
  auto a = ParseArgs(argc, argv, 2, WithValue({"after"}), {"help"});
  if (!a.ok() || a->Has("help")) {
    if (a.ok()) {
      std::cout << kHelp << kConnHelp;
      return 0;
    }
    std::cerr << "topogang watch: " << a.status().message() << "\n\n" << kHelp << kConnHelp;
    return 2;
  }
  auto r = Connect(*a);
  if (!r.ok()) {
    std::cerr << "topogang watch: " << r.status().message() << "\n";
    return 2;
  }
  v1::WatchDecisionsRequest req;
  int64_t after = 0;
  if (a->Has("after")) {
    if (!absl::SimpleAtoi(a->Get("after"), &after) || after < 0) {
      std::cerr << "topogang watch: --after wants a sequence number >= 0\n";
      return 2;
    }
    req.set_after_seq(after);
  } else {
    req.set_from_now(true);
  }
  grpc::ClientContext ctx;
  r->Prepare(&ctx, /*deadline=*/false);
  auto reader = r->stub->WatchDecisions(&ctx, req);
  v1::DecisionEvent ev;
  while (reader->Read(&ev)) {
    if (r->json) {
      std::string out;
      (void)google::protobuf::util::MessageToJsonString(ev, &out);
      std::cout << out << std::endl;
    } else {
      std::cout << ev.seq() << " " << Millis(ev.time_unix_ms()) << " " << ev.kind()
                << (ev.gang().empty() ? "" : " gang=" + ev.gang())
                << (ev.node().empty() ? "" : " node=" + ev.node()) << " " << ev.detail()
                << std::endl;
    }
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return Fail("watch", s);
  return 0;
}

}  // namespace topogang::cli
