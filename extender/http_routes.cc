#include "extender/http_routes.h"

#include <mutex>

#include "absl/strings/str_cat.h"

namespace topogang {
namespace {

std::string JoinPath(const std::string& prefix, const std::string& verb) {
  std::string p = prefix;
  while (!p.empty() && p.back() == '/') p.pop_back();
  if (!p.empty() && p.front() != '/') p.insert(p.begin(), '/');
  std::string v = verb;
  while (!v.empty() && v.front() == '/') v.erase(v.begin());
  return p + "/" + v;
}

// A filter reply for a request we could not read: no node list to answer, only the Error.
std::string FilterError(std::string msg) {
  ExtenderFilterResult r;
  r.error = std::move(msg);
  return SerializeFilterResult(r);
}

HttpReply Text(int status, std::string body) { return {status, std::move(body), "text/plain"}; }
HttpReply JsonReply(std::string body) { return {200, std::move(body), "application/json"}; }

}  // namespace

ExtenderRoutes::ExtenderRoutes(ExtenderService& service, const HttpServerOptions& options)
    : service_(service),
      max_body_bytes_(options.max_body_bytes),
      filter_(JoinPath(options.prefix, options.filter_verb)),
      prioritize_(JoinPath(options.prefix, options.prioritize_verb)),
      bind_(JoinPath(options.prefix, options.bind_verb)),
      preempt_(JoinPath(options.prefix, options.preempt_verb)) {}

ExtenderRoutes::Verb ExtenderRoutes::VerbOf(absl::string_view path) const {
  if (path == filter_) return Verb::kFilter;
  if (path == prioritize_) return Verb::kPrioritize;
  if (path == bind_) return Verb::kBind;
  if (path == preempt_) return Verb::kPreempt;
  return Verb::kNone;
}

void ExtenderRoutes::Shutdown() {
  std::unique_lock<std::shared_mutex> lock(alive_mu_);
  alive_ = false;
}

HttpReply ExtenderRoutes::TooLarge(absl::string_view target, uint64_t declared) const {
  std::string msg =
      declared > 0 ? absl::StrCat("request body of ", declared, " bytes exceeds the limit of ",
                                  max_body_bytes_)
                   : absl::StrCat("request body exceeds the limit of ", max_body_bytes_, " bytes");
  absl::string_view path = target.substr(0, target.find('?'));
  switch (VerbOf(path)) {
    case Verb::kFilter:
      return JsonReply(FilterError(msg));
    case Verb::kBind:
      return JsonReply(SerializeBindingResult({msg}));
    default:
      return Text(413, msg);
  }
}

void ExtenderRoutes::Handle(absl::string_view method, absl::string_view target, std::string body,
                            ReplyFn reply) {
  absl::string_view path = target.substr(0, target.find('?'));
  const Verb verb = VerbOf(path);
  if (verb == Verb::kNone) {
    if (method != "GET") return reply(Text(404, "not found"));
    if (path == "/healthz") return reply(Text(200, "ok"));
    if (path == "/readyz") {
      return reply(ready_ && leader_ ? Text(200, "ready")
                                     : Text(503, leader_ ? "not ready" : "standby"));
    }
    if (path == "/stats") {
      std::shared_lock<std::shared_mutex> alive(alive_mu_);
      if (!alive_) return reply(Text(503, "stopping"));
      ExtenderService::Stats st = service_.GetStats();
      return reply(JsonReply(absl::StrCat("{\"reserved_gangs\":", st.reserved_gangs,
                                          ",\"running_gangs\":", st.running_gangs,
                                          ",\"held_binds\":", st.held_binds, "}")));
    }
    return reply(Text(404, "not found"));
  }
  if (method != "POST") return reply(Text(405, "use POST"));
  if (body.size() > max_body_bytes_) return reply(TooLarge(target, 0));
  std::shared_lock<std::shared_mutex> alive(alive_mu_);
  if (!alive_) return reply(Text(503, "topogang is shutting down"));
  if (!leader_) {
    const std::string msg =
        "topogang: this replica is a standby, not the leader; kube-scheduler will retry";
    if (verb == Verb::kFilter) return reply(JsonReply(FilterError(msg)));
    if (verb == Verb::kBind) return reply(JsonReply(SerializeBindingResult({msg})));
    return reply(Text(503, msg));
  }
  try {
    HandleVerb(verb, body, reply);
  } catch (const std::exception& e) {
    // Defensive: nothing below should throw, but a bug must not take the daemon down.
    if (reply) reply(Text(500, absl::StrCat("internal error: ", e.what())));
  }
}

void ExtenderRoutes::HandleVerb(Verb verb, const std::string& body, ReplyFn& reply) {
  switch (verb) {
    case Verb::kFilter: {
      auto args = ParseExtenderArgs(body);
      if (!args.ok()) return reply(JsonReply(FilterError(std::string(args.status().message()))));
      return reply(JsonReply(SerializeFilterVerdicts(*args, service_.FilterNodes(*args))));
    }
    case Verb::kPrioritize: {
      auto args = ParseExtenderArgs(body);
      if (!args.ok()) return reply(Text(400, std::string(args.status().message())));
      auto scores = service_.Prioritize(*args);
      if (!scores.ok()) return reply(Text(400, std::string(scores.status().message())));
      return reply(JsonReply(SerializeHostPriorityList(*scores)));
    }
    case Verb::kBind: {
      auto args = ParseBindingArgs(body);
      if (!args.ok()) {
        return reply(JsonReply(SerializeBindingResult({std::string(args.status().message())})));
      }
      // The service owns the reply from here (it may hold it until the gang is complete).
      ReplyFn done = std::move(reply);
      reply = nullptr;
      service_.Bind(*args, [done = std::move(done)](const ExtenderBindingResult& r) {
        done(JsonReply(SerializeBindingResult(r)));
      });
      return;
    }
    case Verb::kPreempt: {
      auto args = ParsePreemptionArgs(body);
      if (!args.ok()) return reply(Text(400, std::string(args.status().message())));
      return reply(JsonReply(SerializePreemptionResult(service_.Preempt(*args))));
    }
    case Verb::kNone:
      return reply(Text(404, "not found"));
  }
}

}  // namespace topogang
