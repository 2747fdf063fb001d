// Wire format: quantities, Go-style JSON reading, the extender types (exact keys out, any case
// in, nulls), the captured kube-scheduler bodies, and hostile input.
#include <gtest/gtest.h>

#include <random>

#include "common/json_util.h"
#include "extender/wire_types.h"
#include "k8s/gang_labels.h"
#include "k8s/node_info.h"
#include "k8s/pod_info.h"
#include "k8s/quantity.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

using testing::MakePod;
using testing::PodOpts;
using testing::ReadWire;

TEST(QuantityTest, ParsesTheKubernetesGrammar) {
  EXPECT_EQ(*ParseIntegerQuantity("8"), 8);
  EXPECT_EQ(*ParseIntegerQuantity("0"), 0);
  EXPECT_EQ(*ParseIntegerQuantity("+3"), 3);
  EXPECT_EQ(*ParseIntegerQuantity("1k"), 1000);
  EXPECT_EQ(*ParseIntegerQuantity("2Ki"), 2048);
  EXPECT_EQ(*ParseIntegerQuantity("1e3"), 1000);
  EXPECT_EQ(*ParseIntegerQuantity("1E3"), 1000);
  EXPECT_EQ(*ParseIntegerQuantity("4000m"), 4);
  EXPECT_EQ(*ParseIntegerQuantity("1.0"), 1);
  EXPECT_EQ(*ParseIntegerQuantity("0.5k"), 500);
  EXPECT_EQ(*ParseIntegerQuantity("-2"), -2);
  EXPECT_EQ(*ParseIntegerQuantity("1Gi"), int64_t{1} << 30);
}

TEST(QuantityTest, RejectsFractionsGarbageAndHugeValues) {
  for (const char* bad : {"", "1.5", "500m", "abc", "1x", "1 ", " 1", "--1", "1e", "1e+", "1Ki2",
                          "1.2.3", "1e999", "99999999999999999999999", "1Ei", "8E", "1e40", "."}) {
    auto q = ParseIntegerQuantity(bad);
    EXPECT_FALSE(q.ok()) << bad << " -> " << (q.ok() ? *q : 0);
  }
}

TEST(JsonTest, GoFieldIsCaseInsensitivePreferringExactAndSkipsNull) {
  Json j = Json::parse(R"({"nodenames":[1],"NodeNames":[2],"pod":null,"ERROR":"x"})");
  ASSERT_NE(GoField(j, "NodeNames"), nullptr);
  EXPECT_EQ((*GoField(j, "NodeNames"))[0], 2);
  EXPECT_EQ(GoField(j, "Pod"), nullptr);
  EXPECT_EQ(*GoField(j, "Error"), "x");
  EXPECT_EQ(GoField(j, "Nodes"), nullptr);
}

TEST(JsonTest, InvalidJsonIsAnError) {
  for (const char* bad : {"", "{", "{\"Pod\":}", "nul", "[1,]", "\"\\uZZZZ\""}) {
    EXPECT_FALSE(ParseJson(bad).ok()) << bad;
  }
}

TEST(JsonTest, AppendJsonStringKeepsUtf8AndReplacesWhatIsNot) {
  auto lit = [](absl::string_view s) {
    std::string out;
    AppendJsonString(&out, s);
    return out;
  };
  // Well-formed UTF-8 (2, 3 and 4 bytes) passes as it is.
  EXPECT_EQ(lit("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x9a\x80"),
            "\"caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x9a\x80\"");
  // A character cut short, a stray continuation byte, an overlong '/', a surrogate, past
  // U+10FFFF: each bad byte is \ufffd, and the literal is JSON again.
  for (const char* bad : {"ok\xc3", "ok\xc3(", "\x80ok", "\xc0\xafok", "\xed\xa0\x80ok",
                          "\xf4\x90\x80\x80ok", "\xff"}) {
    const std::string out = lit(bad);
    EXPECT_NE(out.find("\\ufffd"), std::string::npos) << out;
    auto parsed = ParseJson(out);
    ASSERT_TRUE(parsed.ok()) << out << ": " << parsed.status();
  }
  EXPECT_EQ(lit("ok\xc3("), "\"ok\\ufffd(\"");
}

TEST(WireTest, FilterResultUsesExactGoKeysAndIntegerScores) {
  ExtenderFilterResult r;
  r.node_names = {"n1"};
  r.failed = {{"n2", "no room"}};
  std::string s = SerializeFilterResult(r);
  EXPECT_EQ(s, R"({"Nodes":null,"NodeNames":["n1"],"FailedNodes":{"n2":"no room"},)"
               R"("FailedAndUnresolvableNodes":{},"Error":""})");
  ExtenderFilterResult odd;
  odd.node_names = {"q\"uote"};
  odd.failed = {{"back\\slash", "line\nbreak \x01 \u00e9"}};
  odd.error = "<&>";
  auto back = ParseFilterResult(SerializeFilterResult(odd));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->node_names, odd.node_names);
  EXPECT_EQ(back->failed, odd.failed);
  EXPECT_EQ(back->error, "<&>");
  EXPECT_EQ(SerializeHostPriorityList({{"a", 10}, {"b", 0}}),
            R"([{"Host":"a","Score":10},{"Host":"b","Score":0}])");
  EXPECT_EQ(SerializeBindingResult({""}), R"({"Error":""})");
  ExtenderPreemptionResult p;
  p.victims["foo"].uids = {"myuid"};
  p.victims["foo"].num_pdb_violations = 1;
  EXPECT_EQ(SerializePreemptionResult(p),
            R"({"NodeNameToMetaVictims":{"foo":{"Pods":[{"UID":"myuid"}],"NumPDBViolations":1}}})");
}

TEST(WireTest, AcceptsLowercaseKeysNullsAndEscapes) {
  auto a = ParseExtenderArgs(
      R"({"pod":{"metadata":{"name":"a\u003cb","annotations":{"x":"\u0026\u2028"}},)"
      R"("spec":{"containers":null},"status":{}},"nodes":null,"nodenames":["n1","n2"]})");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->node_cache);
  EXPECT_EQ(a->names, (std::vector<std::string>{"n1", "n2"}));
  auto pod = ParsePod(a->pod, "nvidia.com/gpu");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->name, "a<b");
  EXPECT_EQ(pod->annotations.at("x"), "&\u2028");
  EXPECT_EQ(pod->gpus, 0);

  auto b = ParseBindingArgs(R"({"podname":"p","podnamespace":"ns","poduid":"u","node":"n"})");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->pod_name, "p");
  EXPECT_EQ(b->node, "n");
  auto h = ParseHostPriorityList(R"([{"host":"n","score":3}])");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)[0].score, 3);
  auto f = ParseFilterResult(R"({"nodenames":["a"],"failednodes":{"b":"x"},"error":""})");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->node_names, std::vector<std::string>{"a"});
}

TEST(WireTest, FastAndGenericParsingAgree) {
  // Plain names take the fast scanner; escapes, non-ASCII and odd shapes take nlohmann.
  for (const char* body :
       {R"({"Pod":{"metadata":{"name":"p"}},"Nodes":null,"NodeNames":["a","b"]})",
        R"( { "NodeNames" : [ "a" , "b" ] , "Pod" : {"metadata":{"name":"p"}} } )",
        R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":["a","b"]})",
        R"({"Pod":{"metadata":{"name":"p"}},"nodeNames":["a","b"],"Extra":[1,{"x":"]}"}]})"}) {
    auto a = ParseExtenderArgs(body);
    ASSERT_TRUE(a.ok()) << body << ": " << a.status();
    EXPECT_EQ(a->names, (std::vector<std::string>{"a", "b"})) << body;
    EXPECT_EQ(a->pod["metadata"]["name"], "p");
  }
  auto u = ParseExtenderArgs(R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":["né"]})");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->names[0], "n\u00e9");
  for (const char* bad :
       {R"({"Pod":{},"NodeNames":["a"],})", R"({"Pod":{},"NodeNames":["a"]} x)",
        R"({"Pod":{"a":tru},"NodeNames":["a"]})", R"({"Pod":{},"NodeNames":["a")"}) {
    EXPECT_FALSE(ParseExtenderArgs(bad).ok()) << bad;
  }
}

// The daemon's verdict form must say exactly what the struct form says: same passing nodes in
// order, same reasons in the right map, whatever the names (plain, escaped, hostile) and mode.
TEST(WireTest, VerdictSerializationMatchesTheStructForm) {
  std::mt19937 rng(7);
  const std::vector<std::string> odd = {"quote\"d", "back\\slash", "tab\there", "n\u00e9",
                                        "ctl\x01",  "</script>",   ""};
  for (int round = 0; round < 200; ++round) {
    ExtenderArgs a;
    a.node_cache = round % 4 != 0;
    const int n = static_cast<int>(rng() % 40);
    const bool plain = round % 3 != 0;
    for (int i = 0; i < n; ++i) {
      std::string name = absl::StrCat("node-", i);
      if (!plain && rng() % 3 == 0) name += odd[rng() % odd.size()];
      a.names.push_back(name);
      if (!a.node_cache) {
        a.node_items.push_back(
            DumpJson(Json{{"metadata", {{"name", name}, {"labels", {{"i", i}}}}}}));
      }
    }
    a.names_plain = plain;
    if (!a.node_cache) a.node_list_meta = R"({"resourceVersion":"12"})";
    FilterVerdicts v;
    const int reasons = static_cast<int>(rng() % 4);
    for (int k = 0; k < reasons; ++k) {
      v.AddReason(absl::StrCat("reason \"", k, "\" ", odd[k % odd.size()]), rng() % 2 == 0);
    }
    int omitted = 0;
    for (int i = 0; i < n; ++i) {
      // Now and then a node the reply leaves out (FilterVerdicts::kOmit, steered replies).
      const bool omit = rng() % 7 == 0;
      omitted += omit;
      v.verdict.push_back(omit ? FilterVerdicts::kOmit
                               : static_cast<uint16_t>(rng() % (reasons + 1)));
    }
    if (round % 5 == 0) v.error = "boom \"x\"";
    const std::string fast = SerializeFilterVerdicts(a, v);
    const std::string slow = SerializeFilterResult(ToFilterResult(a, v));
    Json jf = Json::parse(fast, nullptr, false);
    ASSERT_FALSE(jf.is_discarded()) << fast;
    EXPECT_EQ(jf, Json::parse(slow)) << "round " << round;
    // And every input node not left out is answered exactly once.
    auto r = ParseFilterResult(fast);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->node_names.size() + r->failed.size() + r->failed_unresolvable.size(),
              static_cast<size_t>(n - omitted));
  }
  // AddReason reuses an identical reason.
  FilterVerdicts v;
  EXPECT_EQ(v.AddReason("x", true), 1);
  EXPECT_EQ(v.AddReason("y", true), 2);
  EXPECT_EQ(v.AddReason("x", true), 1);
  EXPECT_EQ(v.AddReason("x", false), 3);
}

TEST(WireTest, PreemptionArgsBothForms) {
  auto meta = ParsePreemptionArgs(
      R"({"Pod":{"metadata":{"name":"p"}},"NodeNameToVictims":null,"NodeNameToMetaVictims":)"
      R"({"n1":{"Pods":[{"UID":"u1"}],"NumPDBViolations":1},"n2":{"Pods":[],"NumPDBViolations":0}}})");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_TRUE(meta->meta);
  EXPECT_EQ(meta->victims.at("n1").uids, std::vector<std::string>{"u1"});
  EXPECT_TRUE(meta->victims.at("n2").uids.empty());
  auto full = ParsePreemptionArgs(
      R"({"Pod":{"metadata":{"name":"p"}},"NodeNameToMetaVictims":null,"NodeNameToVictims":)"
      R"({"n1":{"Pods":[{"metadata":{"name":"v","uid":"u9"}}],"NumPDBViolations":2}}})");
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_FALSE(full->meta);
  EXPECT_EQ(full->victims.at("n1").uids, std::vector<std::string>{"u9"});
  EXPECT_EQ(full->victims.at("n1").num_pdb_violations, 2);
}

TEST(WireTest, HostileInputsAreClearErrors) {
  // Wrong types, missing pieces, huge numbers.
  for (const char* bad :
       {R"([])", R"("x")", R"({})", R"({"Pod":5,"NodeNames":[]})", R"({"Pod":{},"NodeNames":"n1"})",
        R"({"Pod":{},"NodeNames":[1]})", R"({"Pod":{},"Nodes":{"items":[{"metadata":{}}]}})",
        R"({"Pod":{},"Nodes":{"items":5}})"}) {
    auto a = ParseExtenderArgs(bad);
    EXPECT_FALSE(a.ok()) << bad;
  }
  EXPECT_FALSE(ParseBindingArgs(R"({"PodName":5,"Node":"n"})").ok());
  EXPECT_FALSE(ParseBindingArgs(R"({"PodName":"p"})").ok());
  EXPECT_FALSE(ParseHostPriorityList(R"([{"Host":"n","Score":5.5}])").ok());
  EXPECT_FALSE(ParseHostPriorityList(R"([{"Host":"n","Score":99999999999999999999}])").ok());
  EXPECT_FALSE(
      ParsePreemptionArgs(R"({"Pod":{},"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":1}]}}})").ok());
  // Deep nesting does not crash the parser.
  std::string deep(100000, '[');
  EXPECT_FALSE(ParseExtenderArgs(deep).ok());
}

TEST(PodTest, GpuRequestAsKubernetesComputesIt) {
  Json pod = Json::parse(R"({"metadata":{"name":"p","namespace":"ns","uid":"u"},"spec":{
    "containers":[{"name":"a","resources":{"limits":{"nvidia.com/gpu":"2"}}},
                  {"name":"b","resources":{"requests":{"nvidia.com/gpu":"1"},"limits":{"nvidia.com/gpu":"1"}}}],
    "initContainers":[{"name":"i1","resources":{"requests":{"nvidia.com/gpu":"4"}}},
                      {"name":"side","restartPolicy":"Always","resources":{"limits":{"nvidia.com/gpu":"1"}}},
                      {"name":"i2","resources":{"requests":{"nvidia.com/gpu":"2"}}}]}})");
  auto p = ParsePod(pod, "nvidia.com/gpu");
  ASSERT_TRUE(p.ok()) << p.status();
  // apps 3 + sidecar 1 = 4; init max(4, 2+1) = 4 -> 4.
  EXPECT_EQ(p->gpus, 4);
  pod["spec"]["initContainers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "7";
  EXPECT_EQ(ParsePod(pod, "nvidia.com/gpu")->gpus, 7);
  // A configurable resource name.
  EXPECT_EQ(ParsePod(pod, "example.com/tpu")->gpus, 0);
  EXPECT_EQ(ParsePod(pod, "nvidia.com/gpu")->Key(), "ns/p");
}

TEST(PodTest, AbsurdOrMalformedRequestsAreErrors) {
  for (const char* q : {"\"1000000\"", "\"-1\"", "\"1.5\"", "\"lots\"", "true", "{}",
                        "\"99999999999999999999999999\""}) {
    Json pod = Json::parse(absl::StrCat(
        R"({"metadata":{"name":"p"},"spec":{"containers":[{"resources":{"requests":{"nvidia.com/gpu":)",
        q, "}}}]}}"));
    EXPECT_FALSE(ParsePod(pod, "nvidia.com/gpu").ok()) << q;
  }
  // 100 containers of 100 GPUs each: too many in total.
  PodOpts big;
  big.name = "big";
  big.gpus = 100;
  Json pod = MakePod(big);
  for (int i = 0; i < 99; ++i) pod["spec"]["containers"].push_back(pod["spec"]["containers"][0]);
  auto p = ParsePod(pod, "nvidia.com/gpu");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("at most"), std::string::npos);
  EXPECT_FALSE(ParsePod(Json::parse(R"({"metadata":{"name":5}})"), "nvidia.com/gpu").ok());
  EXPECT_FALSE(ParsePod(Json::parse(R"({"metadata":{}})"), "nvidia.com/gpu").ok());
  EXPECT_FALSE(
      ParsePod(Json::parse(R"({"metadata":{"name":"p","labels":{"a":1}}})"), "nvidia.com/gpu")
          .ok());
}

TEST(NodeTest, ParsesHealthAndGpus) {
  Json node = Json::parse(R"({"metadata":{"name":"n1","labels":{"nvidia.com/gpu.product":"H100"}},
    "spec":{"unschedulable":true,"taints":[{"key":"k","value":"v","effect":"NoExecute"},
      {"key":"node.kubernetes.io/unreachable","effect":"NoExecute"}]},
    "status":{"allocatable":{"nvidia.com/gpu":"8","cpu":"191450m"},
      "conditions":[{"type":"Ready","status":"False"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":0}}}})");
  auto n = ParseNode(node, "nvidia.com/gpu");
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->gpus, 8);
  EXPECT_EQ(n->sku, "H100");
  EXPECT_TRUE(n->unschedulable);
  EXPECT_TRUE(n->tainted);
  // Only the node lifecycle's taints mean a broken node; k=v is for pods to tolerate.
  EXPECT_EQ(n->taint, "node.kubernetes.io/unreachable:NoExecute");
  EXPECT_FALSE(n->ready);
  node["status"]["allocatable"]["nvidia.com/gpu"] = "100000";
  EXPECT_FALSE(ParseNode(node, "nvidia.com/gpu").ok());
  node["status"]["allocatable"]["nvidia.com/gpu"] = 8;
  EXPECT_FALSE(ParseNode(node, "nvidia.com/gpu").ok());
}

TEST(GangLabelsTest, TopogangAndKueueConventions) {
  auto g = ParseGangMembership("ns", {{"topogang.io/gang", "train"}},
                               {{"topogang.io/gang-size", "16"},
                                {"topogang.io/required-tier", "switch"},
                                {"topogang.io/slice-size", "4"},
                                {"topogang.io/slice-tier", "rack"}});
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(g->has_value());
  EXPECT_EQ((*g)->id, "ns/train");
  EXPECT_EQ((*g)->size, 16);
  EXPECT_EQ((*g)->required_tier, "switch");
  EXPECT_EQ((*g)->slice.members, 4);
  GangSpec spec = (*g)->ToSpec(8);
  EXPECT_EQ(spec.total_gpus(), 128);

  auto k = ParseGangMembership("team", {{"kueue.x-k8s.io/pod-group-name", "job1"}},
                               {{"kueue.x-k8s.io/pod-group-total-count", "3"}});
  ASSERT_TRUE(k.ok() && k->has_value());
  EXPECT_EQ((*k)->id, "team/job1");
  EXPECT_EQ((*k)->size, 3);

  auto none = ParseGangMembership("ns", {{"app", "x"}}, {});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  // Elastic: min-members below the size; equal to it is an ordinary gang.
  auto e = ParseGangMembership("ns", {{"topogang.io/gang", "el"}},
                               {{"topogang.io/gang-size", "8"}, {"topogang.io/min-members", "2"}});
  ASSERT_TRUE(e.ok() && e->has_value()) << e.status();
  EXPECT_EQ((*e)->min_members, 2);
  auto full =
      ParseGangMembership("ns", {{"topogang.io/gang", "el"}},
                          {{"topogang.io/gang-size", "8"}, {"topogang.io/min-members", "8"}});
  ASSERT_TRUE(full.ok() && full->has_value());
  EXPECT_EQ((*full)->min_members, 0);
}

TEST(GangLabelsTest, MalformedMembershipIsAnError) {
  using M = std::map<std::string, std::string>;
  std::vector<std::pair<M, M>> bad = {
      {{{"topogang.io/gang", "g"}}, {}},                                       // no size
      {{{"topogang.io/gang", "g"}}, {{"topogang.io/gang-size", "0"}}},         // zero
      {{{"topogang.io/gang", "g"}}, {{"topogang.io/gang-size", "-3"}}},        // negative
      {{{"topogang.io/gang", "g"}}, {{"topogang.io/gang-size", "1e9"}}},       // not an integer
      {{{"topogang.io/gang", "g"}}, {{"topogang.io/gang-size", "99999999"}}},  // absurd
      {{{"topogang.io/gang", "g"}, {"topogang.io/gang-size", "2"}},
       {{"topogang.io/gang-size", "3"}}},  // label vs annotation
      {{{"topogang.io/gang", "bad name!"}}, {{"topogang.io/gang-size", "2"}}},
      {{}, {{"topogang.io/gang-size", "2"}}},          // size without name
      {{{"kueue.x-k8s.io/pod-group-name", "g"}}, {}},  // Kueue without count
      {{{"topogang.io/gang", "g"}},
       {{"topogang.io/gang-size", "4"}, {"topogang.io/slice-size", "2"}}},
      {{{"topogang.io/gang", "g"}},
       {{"topogang.io/gang-size", "4"}, {"topogang.io/min-members", "5"}}},  // above the size
      {{{"topogang.io/gang", "g"}},
       {{"topogang.io/gang-size", "4"}, {"topogang.io/min-members", "0"}}},
      {{{"topogang.io/gang", "g"}},
       {{"topogang.io/gang-size", "4"},
        {"topogang.io/min-members", "2"},
        {"topogang.io/slice-size", "2"},
        {"topogang.io/slice-tier", "leaf"}}},  // elastic with slices: not yet
  };
  for (const auto& [l, a] : bad) EXPECT_FALSE(ParseGangMembership("ns", l, a).ok());
}

// Every captured body parses; pods and nodes read as the cluster had them.
TEST(CapturedBodiesTest, AllParse) {
  for (const char* f :
       {"bind-api-mode/filter-001-request.json", "bind-api-mode/prioritize-001-request.json",
        "bind-error-mode/filter-001-request.json", "bind-error-mode/filter-002-request.json",
        "bind-error-mode/filter-003-request.json", "bind-error-mode/filter-004-request.json",
        "bind-error-mode/prioritize-001-request.json",
        "bind-error-mode/prioritize-002-request.json",
        "bind-error-mode/prioritize-003-request.json",
        "bind-error-mode/prioritize-004-request.json", "filter-all-failed/filter-001-request.json",
        "filter-all-failed/filter-002-request.json", "filter-failed-prefer/filter-001-request.json",
        "filter-failed-prefer/prioritize-001-request.json"}) {
    std::string body = ReadWire(f);
    ASSERT_FALSE(body.empty()) << f;
    auto a = ParseExtenderArgs(body);
    ASSERT_TRUE(a.ok()) << f << ": " << a.status();
    EXPECT_TRUE(a->node_cache) << f;
    EXPECT_GT(a->names.size(), 0u) << f;
    auto pod = ParsePod(a->pod, "nvidia.com/gpu");
    ASSERT_TRUE(pod.ok()) << f << ": " << pod.status();
    EXPECT_GT(pod->gpus, 0) << f;
    EXPECT_TRUE(pod->mentions_resource);
    EXPECT_FALSE(pod->uid.empty());
  }
  for (const char* f :
       {"bind-api-mode/bind-001-request.json", "bind-error-mode/bind-001-request.json",
        "filter-failed-prefer/bind-001-request.json", "nodecache-false/bind-001-request.json.gz"}) {
    auto b = ParseBindingArgs(ReadWire(f));
    ASSERT_TRUE(b.ok()) << f << ": " << b.status();
    EXPECT_EQ(b->pod_namespace, "default");
    EXPECT_FALSE(b->pod_uid.empty());
  }
}

TEST(CapturedBodiesTest, FullNodeListParsesIntoNodes) {
  for (const char* f : {"nodecache-false/filter-001-request.json.gz",
                        "nodecache-false/prioritize-001-request.json.gz"}) {
    std::string body = ReadWire(f);
    ASSERT_GT(body.size(), 100000u) << f;
    auto a = ParseExtenderArgs(body);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_FALSE(a->node_cache);
    ASSERT_EQ(a->node_items.size(), a->names.size());
    EXPECT_GT(a->names.size(), 90u);
    for (const std::string& item : a->node_items) {
      auto n = ParseNode(Json::parse(item), "nvidia.com/gpu");
      ASSERT_TRUE(n.ok()) << n.status();
      EXPECT_EQ(n->gpus, 8);
      EXPECT_TRUE(n->ready);
      EXPECT_EQ(n->labels.count("topology.example.com/rack"), 1u);
    }
  }
}

}  // namespace
}  // namespace topogang
