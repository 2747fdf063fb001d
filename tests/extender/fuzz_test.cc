// A seeded mutation fuzz of the extender's HTTP verbs: the real ExtenderHttpServer on 127.0.0.1
// over a real GangLedger, fed the bodies a real kube-scheduler sent (tests/testdata/
// kube-scheduler-wire) and gangs built like the other suites', intact or mutated (bytes flipped,
// cut, doubled, dropped, inserted; a JSON value made a wrong type, huge, negative, empty, long,
// null, a deep array; a field dropped; a pod or node name duplicated), to filter, prioritize, bind
// and preempt. fuzz/ covers the parsers alone; this, what hostile requests do to the ledger.
//
// It fails on: a crash or hang (a failed request); filter or bind answered with anything but 200
// (kube-scheduler would fail the pod instead of reading Error); prioritize or preempt answered
// with anything but 200 or a 400 that says why; a reply not JSON of the wire shape, or naming a
// node it was not offered; an unreadable filter answered without Error; a held bind never
// answered; a plain gang that no longer filters and binds (every 50 requests, and after); a model
// that lost its invariants (a GPU promised twice, a node holding more GPUs than it has). Failures
// name seed, request, mutation and body; TOPOGANG_FUZZ_VERBOSE=1 prints each request before it
// goes (for a crash).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/support/harness.h"

namespace topogang {
namespace {

using testing::FilterBody;
using testing::GangPod;
using testing::Harness;
using testing::MakePod;
using testing::NodeNames;
using testing::Reply;

enum class Verb { kFilter, kPrioritize, kBind, kPreempt };
constexpr Verb kVerbs[] = {Verb::kFilter, Verb::kPrioritize, Verb::kBind, Verb::kPreempt};
const char* PathOf(Verb v) {
  static const char* const kPaths[] = {"/filter", "/prioritize", "/bind", "/preempt"};
  return kPaths[static_cast<int>(v)];
}

struct Entry {
  Verb verb;
  std::string origin;  // capture file or builder, for failure messages
  std::string body;
  Json json;        // the body parsed, when small enough to mutate as JSON; null otherwise
  std::string pod;  // built bodies: the pod (uid "uid-" + pod; a bind names its filter's node)
};

Entry MakeEntry(Verb v, std::string origin, std::string body, std::string pod = "") {
  Entry e{v, std::move(origin), std::move(body), nullptr, std::move(pod)};
  if (e.body.size() <= 64 * 1024) e.json = Json::parse(e.body, nullptr, false);
  if (e.json.is_discarded()) e.json = nullptr;
  return e;
}

// A preempt body: `pod` preempting victims on two nodes, meta (UIDs) or full (pod objects) form.
std::string PreemptBody(const Json& pod, const std::vector<Json>& victims, bool meta) {
  Json by_node = Json::object();
  for (size_t i = 0; i < victims.size(); ++i) {
    Json& n = by_node[i % 2 ? "gpu-node-007" : "gpu-node-003"];
    n["Pods"].push_back(meta ? Json{{"UID", victims[i]["metadata"]["uid"]}} : victims[i]);
    n["NumPDBViolations"] = 0;
  }
  return DumpJson({{"Pod", pod},
                   {"NodeNameToVictims", meta ? Json(nullptr) : by_node},
                   {"NodeNameToMetaVictims", meta ? by_node : Json(nullptr)}});
}

// Every captured body, then gangs built the way the other suites build them, with most of the keys
// a pod's gang is read from.
std::vector<Entry> Corpus() {
  std::vector<Entry> out;
  std::set<std::string> files;  // sorted: directory order is unspecified
  for (const auto& d : std::filesystem::recursive_directory_iterator(testing::WireDir())) {
    const std::string rel = std::filesystem::relative(d.path(), testing::WireDir()).string();
    if (absl::StrContains(rel, "-request.json")) files.insert(rel);
  }
  for (const std::string& f : files) {
    const std::string base = f.substr(f.find('/') + 1);
    out.push_back(MakeEntry(base.starts_with("filter")       ? Verb::kFilter
                            : base.starts_with("prioritize") ? Verb::kPrioritize
                                                             : Verb::kBind,
                            f, testing::ReadWire(f)));
  }
  // Gang, pods, GPUs each, keys ("key=value;...": annotations, labels when marked "L:").
  const std::vector<std::tuple<std::string, int, int, std::string>> built = {
      {"fz-plain", 3, 4, ""},
      {"fz-tiers", 2, 8,
       "topogang.io/preferred-tier=rack;topogang.io/required-tier=switch;"
       "topogang.io/required-tier-max-wait=5m"},
      {"fz-elastic", 4, 2, "topogang.io/min-members=2"},
      {"fz-slice", 4, 2, "topogang.io/slice-size=2;topogang.io/slice-tier=rack"},
      {"fz-avoid", 2, 1,
       "topogang.io/avoid-nodes=gpu-node-000,gpu-node-001;topogang.io/runtime-estimate=1h30m"},
      {"fz-kueue", 2, 1,
       "L:kueue.x-k8s.io/pod-group-name=fz-kueue;kueue.x-k8s.io/pod-group-total-count=2"},
      {"fz-podgroup", 2, 1, "L:scheduling.x-k8s.io/pod-group=fz-podgroup"},
      {"fz-solo", 1, 1, ""},
      {"fz-cpu", 1, 0, ""}};
  std::map<std::string, Json> pods;  // by name
  for (const auto& [gang, size, gpus, keys] : built) {
    for (int i = 0; i < size; ++i) {
      testing::PodOpts o = GangPod(gang, size, i, gpus);
      if (size == 1 || absl::StrContains(keys, "pod-group")) o.labels = o.annotations = {};
      for (absl::string_view kv : absl::StrSplit(keys, ';', absl::SkipEmpty())) {
        const bool label = absl::ConsumePrefix(&kv, "L:");
        const std::pair<std::string, std::string> p = absl::StrSplit(kv, '=');
        (label ? o.labels : o.annotations)[p.first] = p.second;
      }
      const Json& pod = pods[o.name] = MakePod(o);
      const std::string origin = absl::StrCat("built ", o.name),
                        body = FilterBody(pod, NodeNames());
      out.push_back(MakeEntry(Verb::kFilter, origin, body, o.name));
      out.push_back(MakeEntry(Verb::kPrioritize, origin, body));
      out.push_back(MakeEntry(
          Verb::kBind, origin,
          SerializeBindingArgs({o.name, "default", "uid-" + o.name, "gpu-node-000"}), o.name));
    }
  }
  // A member offered only 8 nodes, and preemptions naming members of other gangs as victims.
  out.push_back(MakeEntry(Verb::kFilter, "built fz-plain-1 on 8 nodes",
                          FilterBody(pods["fz-plain-1"], NodeNames(8)), "fz-plain-1"));
  out.push_back(
      MakeEntry(Verb::kPreempt, "built preempt meta",
                PreemptBody(pods["fz-tiers-0"],
                            {pods["fz-plain-0"], pods["fz-plain-1"], pods["fz-kueue-1"]}, true)));
  out.push_back(MakeEntry(
      Verb::kPreempt, "built preempt full",
      PreemptBody(pods["fz-kueue-1"], {pods["fz-elastic-0"], pods["fz-podgroup-0"]}, false)));
  return out;
}

std::string Nest(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

class Mutator {
 public:
  Mutator(uint32_t seed, const std::vector<Entry>& corpus) : rng_(seed) {
    for (const Entry& e : corpus) {  // every pod name and uid, for duplicates
      for (const char* p : {"/Pod/metadata/name", "/PodName", "/Pod/metadata/uid", "/PodUID"}) {
        const Json::json_pointer at(p);
        if (e.json.is_object() && e.json.contains(at) && e.json[at].is_string()) {
          (absl::EndsWithIgnoreCase(p, "name") ? names_ : uids_)
              .push_back(e.json[at].get<std::string>());
        }
      }
    }
  }
  size_t Below(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }
  bool Chance(int percent) { return Below(100) < static_cast<size_t>(percent); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

  std::string Bytes(std::string s, std::string* how) {
    // Structure, escapes, a NUL, bytes that are not UTF-8.
    static constexpr char kText[] =
        "{ } [ ] \" \\ , : null - 1e999 \\u0000 \\ud800 \"\": ]]]] {{{{ \xff \xc3\x28 \0";
    static const std::vector<std::string> kTokens =
        absl::StrSplit(absl::string_view(kText, sizeof(kText) - 1), ' ');
    static const char* const kKinds[] = {"flip", "truncate", "duplicate", "remove", "insert"};
    for (size_t k = 0, n = 1 + Below(3); k < n; ++k) {
      const size_t at = Below(s.size() + 1), kind = Below(5);
      if (kind == 0 && at < s.size()) s[at] = static_cast<char>(s[at] ^ (1 << Below(8)));
      if (kind == 1) s.resize(at);
      if (kind == 2) s.insert(at, s.substr(at, 1 + Below(64)));
      if (kind == 3) s.erase(at, 1 + Below(16));
      if (kind == 4) s.insert(at, Pick(kTokens));
      absl::StrAppend(how, kKinds[kind], "@", at, " ");
    }
    return s;
  }

  std::string JsonLevel(Json j, std::string* how) {
    std::vector<Json::json_pointer> all, hot;
    Walk(j, Json::json_pointer(), &all);
    // Half the time a field the daemon reads: names, uids, gang keys, GPU counts, node lists.
    static const std::vector<std::string> kHot = absl::StrSplit(
        "metadata/name metadata/uid metadata/namespace labels annotations nvidia.com /Node "
        "/PodName /PodUID /PodNamespace schedulerName nodeName",
        ' ');
    for (const auto& p : all) {
      const std::string s = p.to_string();
      if (std::any_of(kHot.begin(), kHot.end(), [&](auto& k) { return absl::StrContains(s, k); })) {
        hot.push_back(p);
      }
    }
    const Json::json_pointer at = !hot.empty() && Chance(50) ? Pick(hot) : Pick(all);
    Json& v = j[at];
    // Replacement values as JSON text (numbers nlohmann cannot hold go in as text).
    static const std::vector<std::pair<const char*, std::vector<std::string>>> kValues = {
        {"huge number",
         {"1e400", "18446744073709551616", "9223372036854775807", "123456789012345678901234567890",
          "1.7976931348623157e308"}},
        {"negative number",
         {"-1", "-9223372036854775808", "-9223372036854775809", "-0", "-0.5", "-1e400", "\"-1\""}},
        {"empty string", {"\"\""}},
        {"null", {"null"}},
        {"long string",
         {absl::StrCat("\"", std::string(3000, 'x'), "\""),
          absl::StrCat("\"", std::string(70000, '9'), "\"")}},
        {"nested array", {Nest(64), Nest(1023), Nest(1025), Nest(5000), Nest(100000)}},
        // Number-like strings the daemon must read (gang size, GPUs, min members).
        {"odd quantity",
         {"\"0\"", "\"-1\"", "\"1e9\"", "\"2147483648\"", "\"3.5\"", "\"0x10\"", "\" 2\"",
          "\"1Ki\"", "\"999999999999999999999\"", "\"NaN\"", "\"+4\"", "\"2 \""}}};
    std::string raw;
    *how = absl::StrCat("at ", at.to_string(), ": ");
    switch (const size_t kind = Below(kValues.size() + 4)) {
      case 0:
        *how += "wrong type";
        raw = v.is_string()   ? "7"
              : v.is_number() ? "\"7\""
              : v.is_object() ? "[1]"
              : v.is_array()  ? "{\"a\":1}"
                              : "\"true\"";
        break;
      case 1:
        *how += "dropped";
        j = at.empty() ? Json::object()
                       : j.patch(Json::array({{{"op", "remove"}, {"path", at.to_string()}}}));
        break;
      case 2: {  // another pod's name or uid: two pods claiming one identity
        const bool uid = Chance(50);
        *how = absl::StrCat("duplicate pod ", uid ? "uid" : "name");
        const Json::json_pointer md("/Pod/metadata");
        const bool wire = !j.contains(md);  // a bind body
        if (Json& obj = wire ? j : j[md]; obj.is_object()) {
          obj[uid ? (wire ? "PodUID" : "uid") : (wire ? "PodName" : "name")] =
              Pick(uid ? uids_ : names_);
        }
        break;
      }
      case 3:  // a node named twice, or another node
        *how = "duplicate node name";
        if (j.contains("NodeNames") && j["NodeNames"].is_array() && !j["NodeNames"].empty()) {
          Json& n = j["NodeNames"];
          const Json copy = n[Below(n.size())];
          n[Chance(50) ? n.size() : Below(n.size())] = copy;  // at size(): appended
        } else if (j.contains("Node")) {
          j["Node"] = Pick<std::string>({"gpu-node-000", "gpu-node-099", "gpu-node-100", "", " "});
        }
        break;
      default:
        *how += kValues[kind - 4].first;
        raw = Pick(kValues[kind - 4].second);
    }
    if (raw.empty()) return DumpJson(j);
    if (at.empty()) return raw;
    v = "@@raw@@";  // a marker, replaced by the raw text once dumped
    std::string out = DumpJson(j);
    return out.replace(out.find("\"@@raw@@\""), 9, raw);
  }

 private:
  static void Walk(const Json& j, const Json::json_pointer& at,
                   std::vector<Json::json_pointer>* out) {
    out->push_back(at);
    if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) Walk(*it, at / it.key(), out);
    } else if (j.is_array()) {
      for (size_t i = 0; i < j.size(); ++i) Walk(j[i], at / i, out);
    }
  }

  std::mt19937 rng_;
  std::vector<std::string> names_, uids_;
};

// "" when `r` is a sound answer to `sent` on `verb`, else what is wrong.
std::string CheckReply(Verb verb, const std::string& sent, const Reply& r) {
  if ((verb == Verb::kFilter || verb == Verb::kBind) && r.status != 200) {
    return absl::StrCat("status ", r.status, " (filter and bind answer 200, problems in Error)");
  }
  if (r.status != 200 && r.status != 400) return absl::StrCat("status ", r.status, ": ", r.body);
  if (r.status == 400) return r.body.empty() ? "400 with an empty body" : "";
  const Json j = Json::parse(r.body, nullptr, false);
  if (j.is_discarded()) return "a 200 body that is not JSON";
  switch (verb) {
    case Verb::kFilter: {
      if (!j.is_object() || !j.contains("Error") || !j["Error"].is_string()) {
        return "not an ExtenderFilterResult";
      }
      auto f = ParseFilterResult(r.body);
      if (!f.ok()) return std::string(f.status().message());
      auto args = ParseExtenderArgs(sent);
      if (!args.ok()) return f->error.empty() ? "an unreadable filter answered without Error" : "";
      const std::set<std::string> offered(args->names.begin(), args->names.end());
      for (const auto& [n, _] : f->failed) f->node_names.push_back(n);
      for (const auto& [n, _] : f->failed_unresolvable) f->node_names.push_back(n);
      for (const std::string& n : f->node_names) {
        if (!offered.count(n)) return absl::StrCat("filter answered for node ", n, ", not offered");
      }
      return "";
    }
    case Verb::kPrioritize: {
      auto p = ParseHostPriorityList(r.body);
      if (!p.ok()) return std::string(p.status().message());
      auto args = ParseExtenderArgs(sent);
      if (!args.ok()) return "200 to a prioritize it cannot read";
      if (p->size() != args->names.size()) return "not one score per node";
      std::set<std::string> tens;
      for (size_t i = 0; i < p->size(); ++i) {
        if ((*p)[i].host != args->names[i]) return "hosts not in the order sent";
        if ((*p)[i].score != 0 && (*p)[i].score != 10) return "a score other than 0 or 10";
        if ((*p)[i].score == 10) tens.insert((*p)[i].host);
      }
      return tens.size() > 1 ? "two nodes scored 10" : "";
    }
    case Verb::kBind:
      return j.is_object() && j.size() == 1 && j.contains("Error") && j["Error"].is_string()
                 ? ""
                 : "not an ExtenderBindingResult";
    case Verb::kPreempt: {
      auto p = ParsePreemptionResult(r.body);
      if (!p.ok()) return std::string(p.status().message());
      auto args = ParsePreemptionArgs(sent);
      if (!args.ok()) return "200 to a preempt it cannot read";
      for (const auto& [node, _] : p->victims) {
        if (!args->victims.count(node)) return absl::StrCat("victims on ", node, ", not sent");
      }
      return "";
    }
  }
  return "";
}

// A fresh 2 x 1-GPU gang filters to one node per member and binds whole.
void ExpectGangWorks(Harness& h, const std::string& gang, const std::string& context) {
  std::vector<pplx::task<Reply>> binds;
  std::vector<std::string> nodes;
  for (int i = 0; i < 2; ++i) {
    const std::string body = FilterBody(MakePod(GangPod(gang, 2, i, 1)), NodeNames());
    const Reply r = h.Post("/filter", body);
    ASSERT_EQ(CheckReply(Verb::kFilter, body, r), "") << context << "; " << r.body;
    auto f = ParseFilterResult(r.body);
    ASSERT_TRUE(f->error.empty() && f->node_names.size() == 1) << context << "; " << r.body;
    nodes.push_back(f->node_names[0]);
    const std::string pod = absl::StrCat(gang, "-", i);
    binds.push_back(
        h.PostAsync("/bind", SerializeBindingArgs({pod, "default", "uid-" + pod, nodes.back()})));
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(binds[i].get().body, R"({"Error":""})") << context;
    EXPECT_EQ(h.memory().Bindings()[absl::StrCat("default/", gang, "-", i)], nodes[i]) << context;
  }
}

// The model after the run: CheckInvariants (no GPU held twice, used == held), each member's GPUs
// on its node, and no node holding more GPUs than it has.
void ExpectSoundModel(Harness& h) {
  h.state().With([](GangScheduler& s) {
    EXPECT_TRUE(s.CheckInvariants().ok()) << s.CheckInvariants();
    const Cluster& c = s.cluster();
    std::vector<int> held(c.num_nodes(), 0);
    for (const auto& [name, rec] : s.gangs()) {
      for (const MemberPlacement& m : rec.placement.members) {
        for (int g : m.gpus) {
          if (g < 0 || g >= c.num_gpus()) continue;  // CheckInvariants said so
          EXPECT_EQ(c.GpuNode(g), m.node) << name << ": GPU " << g << " is off its member's node";
          ++held[c.GpuNode(g)];
        }
      }
    }
    for (int n = 0; n < c.num_nodes(); ++n) EXPECT_LE(held[n], c.node(n).gpus) << c.node(n).name;
    return 0;
  });
}

// A request on its way; a bind's reply may come once its gang is whole or its window ends.
struct Sent {
  Verb verb;
  pplx::task<Reply> reply;
  std::string body, where;
};

// Waits for the reply and checks it (a failed request counts as a failure).
Reply Settle(Sent& s) {
  try {
    const Reply r = s.reply.get();
    EXPECT_EQ(CheckReply(s.verb, s.body, r), "")
        << s.where << "\nreply: " << absl::CHexEscape(r.body.substr(0, 300));
    return r;
  } catch (const std::exception& ex) {
    ADD_FAILURE() << "request failed: " << ex.what() << "; " << s.where;
    return {};
  }
}

void RunFuzz(uint32_t seed, int requests) {
  GangLedgerOptions eo;
  eo.bind_window = absl::Milliseconds(300);  // binds of incomplete gangs answer soon
  eo.tick = absl::Milliseconds(20);
  Harness h(testing::TestCluster(), eo);
  ASSERT_TRUE(h.ok());
  const std::vector<Entry> corpus = Corpus();
  ASSERT_GT(corpus.size(), 60u) << "captured bodies missing from " << testing::WireDir();
  Mutator m(seed, corpus);
  std::map<std::string, std::string> learned;  // built pod -> node its intact filter got
  std::vector<Sent> binds;
  static const bool verbose = std::getenv("TOPOGANG_FUZZ_VERBOSE") != nullptr;
  int controls = 0;
  for (int i = 0; i < requests; ++i) {
    if (i % 50 == 0) {
      ExpectGangWorks(h, absl::StrCat("ctl", seed, "-", controls++),
                      absl::StrCat("seed ", seed, " before request ", i));
      if (::testing::Test::HasFailure()) return;
    }
    const Entry& e = m.Pick(corpus);
    std::string base = e.body;
    Json json = e.json;
    if (e.verb == Verb::kBind && learned.count(e.pod)) {
      base = SerializeBindingArgs({e.pod, "default", "uid-" + e.pod, learned[e.pod]});
      json = Json::parse(base);
    }
    std::string how = "intact", body = base;
    if (const size_t r = m.Below(100); r >= 15) {
      how.clear();
      body = r < 60 && json.is_structured() ? m.JsonLevel(json, &how) : m.Bytes(base, &how);
    }
    const Verb verb = m.Chance(5) ? kVerbs[m.Below(4)] : e.verb;
    const std::string where =
        absl::StrCat("seed ", seed, " request ", i, ": ", e.origin, ", ", how, ", to ",
                     PathOf(verb), "; body starts: ", absl::CHexEscape(body.substr(0, 300)));
    if (verbose) std::cerr << where << "\n";
    Sent sent{verb, h.PostAsync(PathOf(verb), body), body, where};
    if (verb == Verb::kBind) {  // settled at the end
      binds.push_back(std::move(sent));
      continue;
    }
    const Reply r = Settle(sent);
    if (::testing::Test::HasFailure()) return;
    if (how == "intact" && verb == Verb::kFilter && !e.pod.empty()) {
      if (auto f = ParseFilterResult(r.body); f.ok() && f->node_names.size() == 1) {
        learned[e.pod] = f->node_names[0];
      }
    }
  }
  for (Sent& b : binds) Settle(b);  // every held bind answered, in shape
  if (::testing::Test::HasFailure()) return;
  EXPECT_EQ(h.ledger().GetStats().held_binds, 0);
  EXPECT_EQ(h.Get("/healthz").status, 200);
  EXPECT_EQ(h.Get("/stats").status, 200);
  ExpectGangWorks(h, absl::StrCat("after", seed), absl::StrCat("seed ", seed, " after the run"));
  ExpectSoundModel(h);
}

// Found by this fuzz: {"Pod":[[[...100,000 deep...]]],"NodeNames":[...]} crashed the daemon (the
// server thread's stack overflowed in nlohmann, which copies an object's members, recursively,
// when the object grows). ParseJson now refuses nesting deeper than 1024 levels.
TEST(ExtenderFuzzTest, DeeplyNestedBodyIsRefusedNotACrash) {
  Harness h(testing::TestCluster(8));
  ASSERT_TRUE(h.ok());
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (Verb verb : kVerbs) {
    const std::string body =
        verb == Verb::kBind ? absl::StrCat(R"({"PodName":)", deep, R"(,"Node":"gpu-node-000"})")
                            : absl::StrCat(R"({"Pod":)", deep, R"(,"NodeNames":["gpu-node-000"]})");
    const Reply r = h.Post(PathOf(verb), body);
    EXPECT_EQ(CheckReply(verb, body, r), "") << PathOf(verb);
    EXPECT_NE(r.body.find("nest"), std::string::npos) << PathOf(verb) << ": " << r.body;
  }
  EXPECT_EQ(h.Get("/healthz").status, 200);
}

// Found by this fuzz: a filter body that is not UTF-8 got an Error quoting nlohmann's last bytes
// raw, so the reply was not UTF-8 either, hence not JSON. ParseJson's message is now ASCII.
TEST(ExtenderFuzzTest, ErrorForABodyThatIsNotUtf8IsValidJson) {
  Harness h(testing::TestCluster(8));
  ASSERT_TRUE(h.ok());
  for (const std::string& body : {std::string("{\"Pod\":{\xc3(\"metadata\":{}}"),
                                  std::string("{\"Pod\":{\"metadata\":{\"name\":\"g\xf0u\"}}}")}) {
    const Reply r = h.Post("/filter", body);
    EXPECT_EQ(CheckReply(Verb::kFilter, body, r), "") << absl::CHexEscape(r.body);
  }
}

// 3 seeds x 600 fuzzed requests (plus a 4-request gang every 50): ~2,000 requests.
TEST(ExtenderFuzzTest, Seed1) { RunFuzz(1, 600); }
TEST(ExtenderFuzzTest, Seed2) { RunFuzz(2, 600); }
TEST(ExtenderFuzzTest, Seed3) { RunFuzz(3, 600); }

}  // namespace
}  // namespace topogang
