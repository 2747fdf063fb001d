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

ExtenderRoutes::ExtenderRoutes(ExtenderService& service, const HttpServerOptions& options,
                               DaemonMetrics* metrics)
    : service_(service),
      metrics_(metrics),
      max_body_bytes_(options.max_body_bytes),
      filter_(JoinPath(options.prefix, options.filter_verb)),
      prioritize_(JoinPath(options.prefix, options.prioritize_verb)),
      bind_(JoinPath(options.prefix, options.bind_verb)),
      preempt_(JoinPath(options.prefix, options.preempt_verb)) {
  if (metrics_) {
    metrics_->SetReady(ready_);
    metrics_->SetLeader(leader_);
  }
}

ExtenderRoutes::Verb ExtenderRoutes::VerbOf(absl::string_view path) const {
  if (path == filter_) return Verb::kFilter;
  if (path == prioritize_) return Verb::kPrioritize;
  if (path == bind_) return Verb::kBind;
  if (path == preempt_) return Verb::kPreempt;
  return Verb::kNone;
}

DaemonMetrics::Verb ExtenderRoutes::MetricsVerb(Verb verb) {
  switch (verb) {
    case Verb::kPrioritize:
      return DaemonMetrics::Verb::kPrioritize;
    case Verb::kBind:
      return DaemonMetrics::Verb::kBind;
    case Verb::kPreempt:
      return DaemonMetrics::Verb::kPreempt;
    default:
      return DaemonMetrics::Verb::kFilter;
  }
}

void ExtenderRoutes::Record(DaemonMetrics* metrics, Verb verb, DaemonMetrics::Result result,
                            Start start) {
  if (metrics == nullptr || verb == Verb::kNone) return;
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  metrics->ObserveRequest(MetricsVerb(verb), result, took.count());
}

void ExtenderRoutes::Shutdown() {
  std::unique_lock<std::shared_mutex> lock(alive_mu_);
  alive_ = false;
}

HttpReply ExtenderRoutes::TooLarge(absl::string_view target, uint64_t declared) const {
  const Verb verb = VerbOf(target.substr(0, target.find('?')));
  if (metrics_ && verb != Verb::kNone) {
    metrics_->CountRequest(MetricsVerb(verb), DaemonMetrics::Result::kTooLarge);
  }
  return TooLargeReply(verb, declared);
}

HttpReply ExtenderRoutes::TooLargeReply(Verb verb, uint64_t declared) const {
  std::string msg =
      declared > 0 ? absl::StrCat("request body of ", declared, " bytes exceeds the limit of ",
                                  max_body_bytes_)
                   : absl::StrCat("request body exceeds the limit of ", max_body_bytes_, " bytes");
  switch (verb) {
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
      GangLedger::Stats st = service_.ledger().GetStats();
      return reply(JsonReply(absl::StrCat("{\"reserved_gangs\":", st.reserved_gangs,
                                          ",\"running_gangs\":", st.running_gangs,
                                          ",\"held_binds\":", st.held_binds, "}")));
    }
    if (path == "/metrics" && metrics_) {
      // Served on a standby too (topogang_leader 0 is what an operator wants to see there).
      std::shared_lock<std::shared_mutex> alive(alive_mu_);
      if (!alive_) return reply(Text(503, "stopping"));
      return reply({200, metrics_->Render(), DaemonMetrics::kContentType});
    }
    return reply(Text(404, "not found"));
  }
  using Result = DaemonMetrics::Result;
  const Start start = std::chrono::steady_clock::now();
  auto answer = [&](Result result, HttpReply r) {
    Record(metrics_, verb, result, start);
    reply(std::move(r));
  };
  if (method != "POST") return answer(Result::kBadRequest, Text(405, "use POST"));
  if (body.size() > max_body_bytes_) return answer(Result::kTooLarge, TooLargeReply(verb, 0));
  std::shared_lock<std::shared_mutex> alive(alive_mu_);
  if (!alive_) return answer(Result::kStopping, Text(503, "topogang is shutting down"));
  if (!leader_) {
    const std::string msg =
        "topogang: this replica is a standby, not the leader; kube-scheduler will retry";
    if (verb == Verb::kFilter) return answer(Result::kStandby, JsonReply(FilterError(msg)));
    if (verb == Verb::kBind) {
      return answer(Result::kStandby, JsonReply(SerializeBindingResult({msg})));
    }
    return answer(Result::kStandby, Text(503, msg));
  }
  try {
    HandleVerb(verb, body, reply, start);
  } catch (const std::exception& e) {
    // Defensive: nothing below should throw, but a bug must not take the daemon down.
    if (reply) answer(Result::kInternal, Text(500, absl::StrCat("internal error: ", e.what())));
  }
}

void ExtenderRoutes::HandleVerb(Verb verb, const std::string& body, ReplyFn& reply, Start start) {
  using Result = DaemonMetrics::Result;
  auto answer = [&](Result result, HttpReply r) {
    Record(metrics_, verb, result, start);
    reply(std::move(r));
  };
  switch (verb) {
    case Verb::kFilter: {
      auto args = ParseExtenderArgs(body);
      if (!args.ok()) {
        return answer(Result::kBadRequest,
                      JsonReply(FilterError(std::string(args.status().message()))));
      }
      FilterVerdicts verdicts = service_.FilterNodes(*args);
      const Result result = verdicts.error.empty() ? Result::kOk : Result::kError;
      return answer(result, JsonReply(SerializeFilterVerdicts(*args, verdicts)));
    }
    case Verb::kPrioritize: {
      auto args = ParseExtenderArgs(body);
      if (!args.ok()) {
        return answer(Result::kBadRequest, Text(400, std::string(args.status().message())));
      }
      auto scores = service_.Prioritize(*args);
      if (!scores.ok()) {
        return answer(Result::kError, Text(400, std::string(scores.status().message())));
      }
      return answer(Result::kOk, JsonReply(SerializeHostPriorityList(*scores)));
    }
    case Verb::kBind: {
      auto args = ParseBindingArgs(body);
      if (!args.ok()) {
        return answer(Result::kBadRequest,
                      JsonReply(SerializeBindingResult({std::string(args.status().message())})));
      }
      // The service owns the reply from here (it may hold it until the gang is complete); the
      // latency recorded is the whole wait.
      ReplyFn done = std::move(reply);
      reply = nullptr;
      service_.Bind(*args, [done = std::move(done), metrics = metrics_,
                            start](const ExtenderBindingResult& r) {
        Record(metrics, Verb::kBind, r.error.empty() ? Result::kOk : Result::kError, start);
        done(JsonReply(SerializeBindingResult(r)));
      });
      return;
    }
    case Verb::kPreempt: {
      auto args = ParsePreemptionArgs(body);
      if (!args.ok()) {
        return answer(Result::kBadRequest, Text(400, std::string(args.status().message())));
      }
      return answer(Result::kOk, JsonReply(SerializePreemptionResult(service_.Preempt(*args))));
    }
    case Verb::kNone:
      return reply(Text(404, "not found"));
  }
}

}  // namespace topogang
