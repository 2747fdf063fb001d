#include "tests/kubesched/extender_client.h"

#include <cpprest/http_client.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "tests/kubesched/http_post.h"

namespace topogang::kubesched {

using web::http::http_request;
using web::http::http_response;
using web::http::methods;
using web::http::client::http_client;
using web::http::client::http_client_config;

std::string GoJsonEscape(std::string json) {
  return absl::StrReplaceAll(json, {{"<", "\\u003c"},
                                    {">", "\\u003e"},
                                    {"&", "\\u0026"},
                                    {"\xE2\x80\xA8", "\\u2028"},
                                    {"\xE2\x80\xA9", "\\u2029"}});
}

namespace {

std::string TrimSlashes(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// encoding/json's field lookup: an exact key wins, else a case-insensitive match.
const ReplyJson* GoField(const ReplyJson& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  if (auto it = obj.find(key); it != obj.end()) return it->is_null() ? nullptr : &*it;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (absl::EqualsIgnoreCase(it.key(), key)) return it->is_null() ? nullptr : &it.value();
  }
  return nullptr;
}

absl::Status TypeError(const char* field, const char* want) {
  return absl::InvalidArgumentError(
      absl::StrCat("json: cannot unmarshal into field ", field, " of type ", want));
}

absl::StatusOr<std::map<std::string, std::string>> StringMapField(const ReplyJson& obj,
                                                                  const char* field) {
  std::map<std::string, std::string> out;
  const ReplyJson* m = GoField(obj, field);
  if (!m) return out;
  if (!m->is_object()) return TypeError(field, "map[string]string");
  for (auto it = m->begin(); it != m->end(); ++it) {
    if (it->is_null()) {
      out[it.key()] = "";
    } else if (it->is_string()) {
      out[it.key()] = it->get<std::string>();
    } else {
      return TypeError(field, "map[string]string");
    }
  }
  return out;
}

absl::StatusOr<std::string> StringField(const ReplyJson& obj, const char* field) {
  const ReplyJson* v = GoField(obj, field);
  if (!v) return std::string();
  if (!v->is_string()) return TypeError(field, "string");
  return v->get<std::string>();
}

// Go's transport inflates a gzip reply it asked for.
absl::StatusOr<std::string> Gunzip(const std::vector<unsigned char>& in) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return absl::InternalError("inflateInit2");
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char buf[65536];
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      return absl::InvalidArgumentError("gzip: invalid body");
    }
    out.append(buf, sizeof(buf) - zs.avail_out);
  } while (rc != Z_STREAM_END && zs.avail_in > 0);
  inflateEnd(&zs);
  return out;
}

// The reply body as text (inflated when gzip-encoded).
absl::StatusOr<std::string> BodyText(const std::string& content_encoding, std::string raw) {
  if (absl::AsciiStrToLower(content_encoding) == "gzip") {
    return Gunzip(std::vector<unsigned char>(raw.begin(), raw.end()));
  }
  return raw;
}

// Decodes an extender reply the way HTTPExtender.send does.
absl::StatusOr<ReplyJson> DecodeReply(const std::string& verb, const std::string& url, int status,
                                      const std::string& content_encoding, std::string raw) {
  if (status != 200) {
    return absl::UnavailableError(
        absl::StrCat("failed ", verb, " with extender at URL ", url, ", code ", status));
  }
  auto text = BodyText(content_encoding, std::move(raw));
  if (!text.ok()) return text.status();
  // json.Decoder.Decode reads the first value and ignores whatever follows it; nlohmann's
  // stream extraction parses non-strictly in the same way.
  if (absl::StripAsciiWhitespace(*text).empty()) return absl::InvalidArgumentError("EOF");
  std::istringstream in(*text);
  ReplyJson j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("decoding ", verb, " reply: ", e.what()));
  }
  return j;
}

std::string ContentEncoding(const http_response& resp) {
  auto it = resp.headers().find("Content-Encoding");
  return it == resp.headers().end() ? "" : it->second;
}

std::string TransportError(const std::string& url, const std::exception& e, absl::Duration real,
                           absl::Duration timeout) {
  if (real >= timeout * 0.9) {
    return absl::StrCat("Post \"", url,
                        "\": context deadline exceeded (Client.Timeout exceeded while awaiting "
                        "headers)");
  }
  return absl::StrCat("Post \"", url, "\": ", e.what());
}

absl::Duration RealTimeout(const Clock* clock, absl::Duration virtual_timeout) {
  if (virtual_timeout <= absl::ZeroDuration()) virtual_timeout = absl::Seconds(5);
  return std::max(clock->ToReal(virtual_timeout), absl::Milliseconds(1));
}

std::unique_ptr<http_client> MakeClient(const std::string& authority, absl::Duration timeout) {
  http_client_config cfg;
  cfg.set_timeout(std::chrono::microseconds(absl::ToInt64Microseconds(timeout)));
  return std::make_unique<http_client>(authority, cfg);
}

}  // namespace

ExtenderClient::ExtenderClient(ExtenderConfig config, const Clock* clock)
    : config_(std::move(config)),
      clock_(clock),
      cancel_(std::make_unique<pplx::cancellation_token_source>()) {
  web::uri u(TrimSlashes(config_.url_prefix));
  path_prefix_ = TrimSlashes(u.path());
  if (path_prefix_ == "/") path_prefix_.clear();
  client_ = MakeClient(u.scheme() + "://" + u.host() + ":" + std::to_string(u.port()),
                       RealTimeout(clock_, config_.http_timeout));
  poster_ = std::make_unique<HttpPoster>(u.host(), std::to_string(u.port()));
}

ExtenderClient::~ExtenderClient() { CancelAll(); }

void ExtenderClient::CancelAll() {
  cancel_->cancel();
  poster_->Cancel();
}

bool ExtenderClient::IsInterested(const Pod& pod) const {
  if (config_.managed_resources.empty()) return true;
  for (const ManagedResource& r : config_.managed_resources) {
    if (pod.container_resource_names.count(r.name)) return true;
  }
  return false;
}

namespace {

// A name as a JSON string. Node names are DNS subdomains ([a-z0-9.-]), which need no escaping;
// anything else goes through the JSON library and Go's HTML escaping.
void AppendJsonName(std::string* out, const std::string& name) {
  const bool plain = std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
  });
  if (plain) {
    out->push_back('"');
    out->append(name);
    out->push_back('"');
  } else {
    out->append(GoJsonEscape(ReplyJson(name).dump()));
  }
}

}  // namespace

// Written straight into one string, as encoding/json streams it: a 12,500-name body built as a
// JSON document first cost the emulator several times what kube-scheduler spends on it, which
// the benchmark would have charged to the extender.
std::string ExtenderClient::ArgsBody(const Pod& pod,
                                     const std::vector<const NodeState*>& nodes) const {
  std::string body = "{\"Pod\":" + GoJsonEscape(pod.object.dump());
  if (config_.node_cache_capable) {
    size_t size = body.size() + 64;
    for (const NodeState* n : nodes) size += n->node->name.size() + 3;
    body.reserve(size);
    body += ",\"Nodes\":null,\"NodeNames\":[";
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (i) body.push_back(',');
      AppendJsonName(&body, nodes[i]->node->name);
    }
    body += "]}";
  } else {
    body += ",\"Nodes\":{\"metadata\":{},\"items\":[";
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (i) body += ",";
      body += GoJsonEscape(nodes[i]->node->object.dump());
    }
    body += "]},\"NodeNames\":null}";
  }
  return body;
}

absl::StatusOr<ReplyJson> ExtenderClient::Send(const std::string& verb, std::string body) {
  const std::string url = TrimSlashes(config_.url_prefix) + "/" + verb;
  const absl::Time start = absl::Now();
  const absl::Duration timeout = RealTimeout(clock_, config_.http_timeout);
  auto reply = poster_->Post(path_prefix_ + "/" + verb, body, timeout);
  if (!reply.ok()) {
    if (absl::IsCancelled(reply.status())) return reply.status();
    return absl::DeadlineExceededError(
        TransportError(url, std::runtime_error(std::string(reply.status().message())),
                       absl::Now() - start, timeout));
  }
  return DecodeReply(verb, url, reply->status, reply->content_encoding, std::move(reply->body));
}

absl::StatusOr<ExtenderFilterResult> ExtenderClient::Filter(
    const Pod& pod, const std::vector<const NodeState*>& nodes) {
  ExtenderFilterResult out;
  if (!IsFilter()) {
    for (const NodeState* n : nodes) out.nodes.push_back(n->node->name);
    return out;
  }
  auto reply = Send(config_.filter_verb, ArgsBody(pod, nodes));
  if (!reply.ok()) return reply.status();
  const ReplyJson& r = *reply;
  if (!r.is_object()) return TypeError("ExtenderFilterResult", "object");
  auto error = StringField(r, "Error");
  if (!error.ok()) return error.status();
  auto failed = StringMapField(r, "FailedNodes");
  if (!failed.ok()) return failed.status();
  auto unresolvable = StringMapField(r, "FailedAndUnresolvableNodes");
  if (!unresolvable.ok()) return unresolvable.status();
  const ReplyJson* names = GoField(r, "NodeNames");
  if (names && !names->is_array()) return TypeError("NodeNames", "[]string");
  const ReplyJson* node_list = GoField(r, "Nodes");
  if (node_list && !node_list->is_object()) return TypeError("Nodes", "v1.NodeList");
  if (!error->empty()) return absl::UnknownError(*error);
  std::unordered_map<std::string_view, const NodeState*> offered;
  offered.reserve(nodes.size());
  for (const NodeState* n : nodes) offered.emplace(n->node->name, n);
  if (config_.node_cache_capable && names) {
    for (const ReplyJson& n : *names) {
      if (!n.is_string()) return TypeError("NodeNames", "[]string");
      const std::string& name = n.get_ref<const std::string&>();
      auto it = offered.find(name);
      if (it == offered.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("extender \"", config_.url_prefix, "\" claims a filtered node \"", name,
                         "\" which is not found in the input node list"));
      }
      out.nodes.push_back(name);
      out.offered.push_back(it->second);
    }
  } else if (node_list) {
    // The returned Node objects are used as they are; only their names matter here.
    if (const ReplyJson* items = GoField(*node_list, "items"); items && items->is_array()) {
      for (const ReplyJson& item : *items) {
        const ReplyJson* meta = GoField(item, "metadata");
        const ReplyJson* name = meta ? GoField(*meta, "name") : nullptr;
        out.nodes.push_back(name && name->is_string() ? name->get<std::string>() : "");
        auto it = offered.find(out.nodes.back());
        out.offered.push_back(it == offered.end() ? nullptr : it->second);
      }
    }
  }
  out.failed = std::move(*failed);
  out.failed_and_unresolvable = std::move(*unresolvable);
  return out;
}

absl::StatusOr<std::vector<HostPriority>> ExtenderClient::Prioritize(
    const Pod& pod, const std::vector<const NodeState*>& nodes) {
  std::vector<HostPriority> out;
  if (!IsPrioritizer()) {
    for (const NodeState* n : nodes) out.push_back({n->node->name, 0});
    return out;
  }
  auto reply = Send(config_.prioritize_verb, ArgsBody(pod, nodes));
  if (!reply.ok()) return reply.status();
  if (reply->is_null()) return out;
  if (!reply->is_array()) return TypeError("HostPriorityList", "array");
  for (const ReplyJson& hp : *reply) {
    if (!hp.is_object()) return TypeError("HostPriority", "object");
    HostPriority p;
    auto host = StringField(hp, "Host");
    if (!host.ok()) return host.status();
    p.host = *host;
    if (const ReplyJson* s = GoField(hp, "Score")) {
      if (!s->is_number_integer()) return TypeError("Score", "int64");
      p.score = s->get<int64_t>();
    }
    out.push_back(std::move(p));
  }
  return out;
}

void ExtenderClient::BindAsync(const Pod& pod, const std::string& node,
                               std::function<void(absl::Status)> done) {
  const std::string url = TrimSlashes(config_.url_prefix) + "/" + config_.bind_verb;
  Json args = Json::object();
  args["PodName"] = pod.name;
  args["PodNamespace"] = pod.ns;
  args["PodUID"] = pod.uid;
  args["Node"] = node;
  http_request req(methods::POST);
  req.set_request_uri(path_prefix_ + "/" + config_.bind_verb);
  req.headers().add("User-Agent", "Go-http-client/1.1");
  req.headers().add("Accept-Encoding", "gzip");
  req.set_body(GoJsonEscape(args.dump()), "application/json");
  const absl::Time start = absl::Now();
  const absl::Duration timeout = RealTimeout(clock_, config_.http_timeout);
  auto finish = std::make_shared<std::function<void(absl::Status)>>(std::move(done));
  client_->request(req, cancel_->get_token())
      .then([url](http_response resp) {
        return resp.extract_vector().then([resp, url](std::vector<unsigned char> raw) {
          return DecodeReply("bind", url, resp.status_code(), ContentEncoding(resp),
                             std::string(raw.begin(), raw.end()));
        });
      })
      .then([finish, url, start, timeout](pplx::task<absl::StatusOr<ReplyJson>> t) {
        absl::Status st;
        try {
          absl::StatusOr<ReplyJson> reply = t.get();
          if (!reply.ok()) {
            st = reply.status();
          } else if (!reply->is_object()) {
            st = TypeError("ExtenderBindingResult", "object");
          } else {
            auto error = StringField(*reply, "Error");
            if (!error.ok()) {
              st = error.status();
            } else if (!error->empty()) {
              st = absl::UnknownError(*error);
            }
          }
        } catch (const std::exception& e) {
          st = absl::DeadlineExceededError(TransportError(url, e, absl::Now() - start, timeout));
        }
        (*finish)(st);
      });
}

ApiBinder::ApiBinder(const std::string& server_url, const Clock* clock)
    : client_(MakeClient(TrimSlashes(server_url), RealTimeout(clock, absl::Seconds(30)))),
      cancel_(std::make_unique<pplx::cancellation_token_source>()) {}

ApiBinder::~ApiBinder() { CancelAll(); }

void ApiBinder::CancelAll() { cancel_->cancel(); }

void ApiBinder::BindAsync(const Pod& pod, const std::string& node,
                          std::function<void(absl::Status)> done) {
  Json binding = {{"kind", "Binding"},
                  {"apiVersion", "v1"},
                  {"metadata", {{"name", pod.name}, {"namespace", pod.ns}, {"uid", pod.uid}}},
                  {"target", {{"kind", "Node"}, {"name", node}}}};
  http_request req(methods::POST);
  req.set_request_uri("/api/v1/namespaces/" + web::uri::encode_data_string(pod.ns) + "/pods/" +
                      web::uri::encode_data_string(pod.name) + "/binding");
  req.set_body(binding.dump(), "application/json");
  auto finish = std::make_shared<std::function<void(absl::Status)>>(std::move(done));
  client_->request(req, cancel_->get_token())
      .then([](http_response resp) {
        return resp.extract_utf8string(true).then([code = resp.status_code()](std::string body) {
          if (code >= 200 && code < 300) return absl::OkStatus();
          Json status = Json::parse(body, nullptr, false);
          std::string msg =
              status.is_object() && status.contains("message") && status["message"].is_string()
                  ? status["message"].get<std::string>()
                  : body.substr(0, 200);
          return absl::UnavailableError(absl::StrCat("binding: HTTP ", code, ": ", msg));
        });
      })
      .then([finish](pplx::task<absl::Status> t) {
        absl::Status st;
        try {
          st = t.get();
        } catch (const std::exception& e) {
          st = absl::UnavailableError(absl::StrCat("binding: ", e.what()));
        }
        (*finish)(st);
      });
}

}  // namespace topogang::kubesched
