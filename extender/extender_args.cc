// ParseExtenderArgs: the request body of filter and prioritize, read with simdjson.
//
// Why simdjson and not nlohmann (used for the small bodies): the two shapes that matter are a
// 12,500-name NodeNames array (150 KB) and a full NodeList (1,000 nodes are ~3 MB). nlohmann
// builds a DOM of every node object (~70 ms for 3 MB); simdjson validates the whole body
// (structure and UTF-8) at GB/s and we copy out only what the daemon uses: the names, each node
// item's text (minified) to echo back for passing nodes, and the Pod (a few KB, handed to
// nlohmann because the pod readers work on Json). Invalid bodies are re-read by nlohmann only to
// word the error with a byte position.
#include <simdjson.h>

#include <memory>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "extender/wire_types.h"

namespace topogang {
namespace {

namespace dom = simdjson::dom;

// Bodies above this are parsed by a parser freed afterwards: a thread's reused parser keeps the
// buffers of the largest document it has seen.
constexpr size_t kReusedParserMaxBytes = 8u << 20;

absl::string_view View(std::string_view s) { return {s.data(), s.size()}; }

const char* TypeName(const dom::element& e) {
  switch (e.type()) {
    case dom::element_type::ARRAY:
      return "array";
    case dom::element_type::OBJECT:
      return "object";
    case dom::element_type::STRING:
      return "string";
    case dom::element_type::BOOL:
      return "boolean";
    case dom::element_type::NULL_VALUE:
      return "null";
    default:
      return "number";
  }
}

// The member named `key` as Go's decoder finds it (exact match first, then case-insensitive);
// absent or null → nullopt.
std::optional<dom::element> GoMember(const dom::object& obj, std::string_view key) {
  std::optional<dom::element> folded;
  for (dom::key_value_pair kv : obj) {
    if (kv.key.size() != key.size()) continue;
    if (kv.key == key) {
      if (kv.value.is_null()) return std::nullopt;
      return kv.value;
    }
    if (!folded && absl::EqualsIgnoreCase(View(kv.key), View(key))) folded = kv.value;
  }
  if (folded && folded->is_null()) return std::nullopt;
  return folded;
}

absl::Status WrongType(absl::string_view what, absl::string_view want, const dom::element& got) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": expected ", want, ", got ", TypeName(got)));
}

// Printable ASCII without '"' or '\': safe to copy into a reply without escaping.
bool Plain(std::string_view s) {
  bool bad = false;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    bad |= (c == '"') | (c == '\\') | (c < 0x20) | (c >= 0x7f);
  }
  return !bad;
}

absl::Status ReadArgs(const dom::element& doc, ExtenderArgs* a) {
  dom::object top;
  if (doc.get_object().get(top) != simdjson::SUCCESS) {
    return WrongType("ExtenderArgs", "a JSON object", doc);
  }
  auto pod = GoMember(top, "Pod");
  if (!pod) return absl::InvalidArgumentError("ExtenderArgs.Pod: missing");
  if (!pod->is_object()) return WrongType("ExtenderArgs.Pod", "a JSON object", *pod);
  // The pod is small; the pod readers work on nlohmann's Json.
  auto pod_json = ParseJson(simdjson::minify(*pod));
  if (!pod_json.ok()) return pod_json.status();
  a->pod = *std::move(pod_json);

  auto names = GoMember(top, "NodeNames");
  auto nodes = GoMember(top, "Nodes");
  if (names && !names->is_array()) return WrongType("ExtenderArgs.NodeNames", "an array", *names);
  if (nodes && !nodes->is_object()) {
    return WrongType("ExtenderArgs.Nodes", "a JSON object", *nodes);
  }
  bool plain = true;
  if (names) {
    a->node_cache = true;
    dom::array arr = names->get_array().value_unsafe();
    a->names.reserve(arr.size());
    for (dom::element n : arr) {
      std::string_view s;
      if (n.get_string().get(s) != simdjson::SUCCESS) {
        return WrongType("ExtenderArgs.NodeNames", "strings", n);
      }
      plain = plain && Plain(s);
      a->names.emplace_back(s);
    }
  } else if (nodes) {
    a->node_cache = false;
    dom::object list = nodes->get_object().value_unsafe();
    auto meta = GoMember(list, "metadata");
    a->node_list_meta = meta ? simdjson::minify(*meta) : "{}";
    auto items = GoMember(list, "items");
    if (items && !items->is_array()) {
      return WrongType("ExtenderArgs.Nodes.items", "an array", *items);
    }
    if (items) {
      dom::array arr = items->get_array().value_unsafe();
      a->names.reserve(arr.size());
      a->node_items.reserve(arr.size());
      for (dom::element item : arr) {
        dom::object obj;
        if (item.get_object().get(obj) != simdjson::SUCCESS) {
          return WrongType("ExtenderArgs.Nodes.items[]", "a JSON object", item);
        }
        std::optional<dom::element> name;
        if (auto md = GoMember(obj, "metadata"); md && md->is_object()) {
          name = GoMember(md->get_object().value_unsafe(), "name");
        }
        std::string_view s;
        if (!name || name->get_string().get(s) != simdjson::SUCCESS || s.empty()) {
          return absl::InvalidArgumentError(
              "ExtenderArgs.Nodes.items[]: node without metadata.name");
        }
        plain = plain && Plain(s);
        a->names.emplace_back(s);
        a->node_items.push_back(simdjson::minify(item));
      }
    }
  } else {
    return absl::InvalidArgumentError("ExtenderArgs: neither NodeNames nor Nodes is set");
  }
  a->names_plain = plain;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ExtenderArgs> ParseExtenderArgs(absl::string_view body) {
  thread_local dom::parser reused;
  std::unique_ptr<dom::parser> big;
  dom::parser* parser = &reused;
  if (body.size() > kReusedParserMaxBytes) {
    big = std::make_unique<dom::parser>();
    parser = big.get();
  }
  dom::element doc;
  simdjson::error_code err = parser->parse(body.data(), body.size(), true).get(doc);
  if (err != simdjson::SUCCESS) {
    // Word the error with nlohmann (byte position); simdjson also refuses nesting deeper than
    // 1024, which nlohmann would accept.
    auto j = ParseJson(body);
    if (!j.ok()) return j.status();
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON: ", simdjson::error_message(err)));
  }
  ExtenderArgs a;
  if (absl::Status s = ReadArgs(doc, &a); !s.ok()) return s;
  return a;
}

}  // namespace topogang
