// Helpers shared by the extender tests: a small labelled GPU cluster, pod JSON builders and the
// captured kube-scheduler request bodies (gzip ones inflated with zlib).
#pragma once

#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_util.h"
#include "extender/wire_types.h"
#include "tests/test_util.h"  // SourceDir(), BinDir()
#include "topology/cluster.h"

namespace topogang::testing {

inline std::string WireDir() { return SourceDir() + "/tests/testdata/kube-scheduler-wire"; }

// Reads a file; ".gz" files are inflated.
inline std::string ReadWire(const std::string& rel) {
  std::string path = WireDir() + "/" + rel;
  if (path.size() > 3 && path.substr(path.size() - 3) == ".gz") {
    gzFile f = gzopen(path.c_str(), "rb");
    if (f == nullptr) return "";
    std::string out;
    char buf[65536];
    int n;
    while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, n);
    gzclose(f);
    return out;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline TopologyConfig TestTopology() {
  TopologyConfig t;
  t.preset = "test";
  t.tiers = {{"zone", "topology.kubernetes.io/zone", 400, 1, false},
             {"switch", "topology.example.com/switch", 400, 1, false},
             {"rack", "topology.example.com/rack", 800, 1, false}};
  return t;
}

// `nodes` nodes "gpu-node-000".. with `gpus` GPUs; 4 nodes per rack, 4 racks per switch.
inline ClusterSpec TestSpec(int nodes = 100, int gpus = 8) {
  ClusterSpec spec;
  spec.name = "test";
  for (int i = 0; i < nodes; ++i) {
    NodeSpec n;
    n.name = absl::StrFormat("gpu-node-%03d", i);
    n.gpus = gpus;
    n.sku = "H100";
    n.labels["topology.kubernetes.io/zone"] = "zone-a";
    n.labels["topology.example.com/switch"] = absl::StrFormat("switch-%02d", i / 16);
    n.labels["topology.example.com/rack"] = absl::StrFormat("rack-%03d", i / 4);
    spec.nodes.push_back(n);
  }
  return spec;
}

inline Cluster TestCluster(int nodes = 100, int gpus = 8) {
  return *Cluster::Build(TestSpec(nodes, gpus), TestTopology());
}

inline std::vector<std::string> NodeNames(int nodes = 100) {
  std::vector<std::string> out;
  for (int i = 0; i < nodes; ++i) out.push_back(absl::StrFormat("gpu-node-%03d", i));
  return out;
}

struct PodOpts {
  std::string name = "p";
  std::string ns = "default";
  std::string uid;  // default: "uid-" + name
  int gpus = 1;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};

// A Pod shaped like the captured ones (null creationTimestamp, limits and requests, status {}).
inline Json MakePod(const PodOpts& o) {
  Json pod = Json::parse(R"({"metadata":{"creationTimestamp":null},"spec":{"containers":[{
      "name":"main","image":"busybox","resources":{"limits":{},"requests":{}}}],
      "schedulerName":"default-scheduler"},"status":{"phase":"Pending"}})");
  pod["metadata"]["name"] = o.name;
  pod["metadata"]["namespace"] = o.ns;
  pod["metadata"]["uid"] = o.uid.empty() ? "uid-" + o.name : o.uid;
  if (!o.labels.empty()) pod["metadata"]["labels"] = o.labels;
  if (!o.annotations.empty()) pod["metadata"]["annotations"] = o.annotations;
  if (o.gpus > 0) {
    auto& r = pod["spec"]["containers"][0]["resources"];
    r["limits"]["nvidia.com/gpu"] = std::to_string(o.gpus);
    r["requests"]["nvidia.com/gpu"] = std::to_string(o.gpus);
  }
  return pod;
}

// A pod bound to `node` and running there, requesting `gpus` GPUs (a job topogang did not place).
inline Json RunningPod(const std::string& name, int gpus, const std::string& node) {
  PodOpts o;
  o.name = name;
  o.gpus = gpus;
  Json pod = MakePod(o);
  pod["spec"]["nodeName"] = node;
  pod["status"]["phase"] = "Running";
  return pod;
}

inline PodOpts GangPod(const std::string& gang, int size, int index, int gpus) {
  PodOpts o;
  o.name = absl::StrCat(gang, "-", index);
  o.gpus = gpus;
  o.labels["topogang.io/gang"] = gang;
  o.annotations["topogang.io/gang-size"] = std::to_string(size);
  return o;
}

inline ExtenderArgs MakeArgs(const Json& pod, const std::vector<std::string>& names) {
  ExtenderArgs a;
  a.pod = pod;
  a.names = names;
  return a;
}

// The body kube-scheduler sends with nodeCacheCapable: true.
inline std::string FilterBody(const Json& pod, const std::vector<std::string>& names) {
  return SerializeExtenderArgs(MakeArgs(pod, names));
}

}  // namespace topogang::testing
