// The small cluster and traces the simulator's hand-computed tests share (engine_test.cc,
// pod_line_test.cc, features_test.cc): their expected figures are worked out on these.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "sim/trace.h"
#include "tests/test_util.h"
#include "topology/cluster.h"

namespace topogang::sim::mini {

// A trace from its header line and job (and @event) lines; a parse error fails the test.
inline Trace ParseUnder(const std::string& header, const std::string& body) {
  auto t = ParseTraceCsv(header + "\n" + body, "mini.csv");
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

// A trace from its job (and @event) lines under the engine tests' header.
inline Trace Parse(const std::string& body) {
  return ParseUnder(
      "id,arrival_s,members,gpus_per_member,duration_s,comm_fraction,required_tier,preferred_tier",
      body);
}

// 32 GPUs: 1 zone, 1 spine, 2 leaves x 2 nodes x 8 GPUs.
inline Cluster MiniCluster() { return testing::MakeCluster(1, 1, 2, 2, 8); }

// a (1 node) and b (the whole cluster) arrive at 0, c (1 node) at 10; none communicates.
inline Trace ThreeJobs() {
  return Parse(
      "a,0,1,8,100,0,,\n"
      "b,0,4,8,50,0,,\n"
      "c,10,1,8,100,0,,\n");
}

}  // namespace topogang::sim::mini
