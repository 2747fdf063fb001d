#include "tests/kubesched/pod_condition.h"

namespace topogang::kubesched {

using web::http::http_request;
using web::http::http_response;
using web::http::methods;

std::optional<Json> PodScheduledFalsePatch(const Pod& pod, const std::string& reason,
                                           const std::string& message, absl::Time now) {
  std::string transition = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", now, absl::UTCTimeZone());
  const Json* conds = nullptr;
  if (pod.object.is_object() && pod.object.contains("status") && pod.object["status"].is_object() &&
      pod.object["status"].contains("conditions") &&
      pod.object["status"]["conditions"].is_array()) {
    conds = &pod.object["status"]["conditions"];
  }
  if (conds != nullptr) {
    for (const Json& c : *conds) {
      if (!c.is_object() || c.value("type", Json()) != "PodScheduled") continue;
      const bool same_status = c.value("status", Json()) == "False";
      if (same_status && c.value("reason", Json()) == reason &&
          c.value("message", Json()) == message) {
        return std::nullopt;  // UpdatePodCondition: nothing changed, nothing written
      }
      if (same_status && c.contains("lastTransitionTime") && c["lastTransitionTime"].is_string()) {
        transition = c["lastTransitionTime"].get<std::string>();
      }
    }
  }
  Json cond = {{"type", "PodScheduled"},   {"status", "False"},
               {"reason", reason},         {"message", message},
               {"lastProbeTime", nullptr}, {"lastTransitionTime", transition}};
  return Json{{"status",
               {{"$setElementOrder/conditions", Json::array({{{"type", "PodScheduled"}}})},
                {"conditions", Json::array({cond})}}}};
}

PodConditionWriter::PodConditionWriter(const std::string& server_url)
    : cancel_(std::make_unique<pplx::cancellation_token_source>()) {
  web::http::client::http_client_config cfg;
  cfg.set_timeout(std::chrono::seconds(30));
  client_ = std::make_unique<web::http::client::http_client>(server_url, cfg);
}

PodConditionWriter::~PodConditionWriter() { CancelAll(); }

void PodConditionWriter::CancelAll() { cancel_->cancel(); }

void PodConditionWriter::PatchAsync(const Pod& pod, const Json& patch) {
  http_request req(methods::PATCH);
  req.set_request_uri("/api/v1/namespaces/" + web::uri::encode_data_string(pod.ns) + "/pods/" +
                      web::uri::encode_data_string(pod.name) + "/status");
  req.set_body(patch.dump(), "application/strategic-merge-patch+json");
  // The answer is dropped: a pod gone meanwhile or a server stopping is only logged upstream.
  client_->request(req, cancel_->get_token()).then([](pplx::task<http_response> t) {
    try {
      t.get();
    } catch (const std::exception&) {
    }
  });
}

}  // namespace topogang::kubesched
