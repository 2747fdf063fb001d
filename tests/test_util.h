// Shared helpers for topogang tests: small generated clusters and repo paths.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "topology/cluster.h"
#include "topology/cluster_file.h"

namespace topogang::testing {

// Paths baked in at build time (tests/CMakeLists.txt); the environment may override them.
inline std::string SourceDir() {
  const char* d = std::getenv("TOPOGANG_SOURCE_DIR");
  return d ? d : TOPOGANG_SOURCE_DIR;
}

inline std::string BinDir() {
  const char* d = std::getenv("TOPOGANG_BIN_DIR");
  return d ? d : TOPOGANG_BIN_DIR;
}

// Removes what it was given when the test process exits. TempFile's names carry the process id,
// so nothing else ever reuses them: without this every run left its files behind (2,000 in /tmp
// after a day of runs).
class TempPaths {
 public:
  static TempPaths& Get() {
    static TempPaths paths;
    return paths;
  }
  void Add(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    paths_.push_back(path);
  }
  ~TempPaths() {
    std::error_code ignored;  // best effort: a file a test removed itself is fine
    for (const auto& p : paths_) std::filesystem::remove_all(p, ignored);
  }

 private:
  std::mutex mu_;
  std::vector<std::string> paths_;
};

// Writes `text` to a file named after `name` in the test temp dir and returns its path; the file
// goes when the process exits. The process id is part of the name: ctest runs every TEST as its
// own process, in parallel, and tests of one file reuse names ("jobs.yaml"), so a shared path let
// one test read another's.
inline std::string TempFile(const std::string& name, const std::string& text) {
  std::string path = absl::StrCat(::testing::TempDir(), "/", getpid(), "-", name);
  std::ofstream(path) << text;
  TempPaths::Get().Add(path);
  return path;
}

struct CliResult {
  int code;         // exit status, -1 when it did not exit normally
  std::string out;  // what it printed (stderr too when merged)
};

// Runs `topogang ARGS` from the build; stderr joins stdout unless merge_stderr is false (for
// output a test parses as JSON).
inline CliResult RunTopogang(const std::string& args, bool merge_stderr = true) {
  std::string cmd = BinDir() + "/topogang " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
  CliResult r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A generated cluster: zones x spines x leaves x nodes x gpus (Topograph labels, one SKU unless
// `skus` lists several, e.g. "[H100, A100]").
inline Cluster MakeCluster(int zones, int spines, int leaves, int nodes, int gpus,
                           const std::string& skus = "[H100]", int nvlink_nodes = 0,
                           const std::string& topology = "") {
  std::string text = absl::StrCat(topology, "generate: {zones: ", zones,
                                  ", spines_per_zone: ", spines, ", leaves_per_spine: ", leaves,
                                  ", nodes_per_leaf: ", nodes, ", gpus_per_node: ", gpus,
                                  ", skus: ", skus, ", nvlink_domain_nodes: ", nvlink_nodes, "}\n");
  auto spec = ParseClusterFile(text, "test.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  TopologyConfig topo = spec->topology ? *spec->topology : *PresetTopology("topograph");
  auto c = Cluster::Build(*spec, topo);
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

// NVL72-like, scaled down: 1 spine over `leaves` leaves of 2 racks (NVLink domains, labelled
// nvidia.com/gpu.clique as the GPU operator does) of 4 trays x 4 GPUs, gb200 preset. Node n is
// in rack n / 4 and leaf n / 8.
inline Cluster MakeNvlCluster(int leaves = 2) {
  auto spec = ParseClusterFile(
      absl::StrCat("generate: {zones: 1, spines_per_zone: 1, leaves_per_spine: ", leaves,
                   ", nodes_per_leaf: 8, gpus_per_node: 4, nvlink_domain_nodes: 4, skus: [GB200], "
                   "labels: {nvlink: nvidia.com/gpu.clique}}\n"),
      "nvl.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto c = Cluster::Build(*spec, *PresetTopology("gb200"));
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

}  // namespace topogang::testing
