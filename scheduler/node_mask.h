// Hides nodes from planning for its lifetime (GangScheduler::MaskNodes / UnmaskNodes), so every
// return path gives them back before the lock that guards the scheduler is released. Health
// changes must not be applied while one is alive (they would be undone with the mask).
#pragma once

#include <vector>

#include "scheduler/gang_scheduler.h"

namespace topogang {

class NodeMask {
 public:
  NodeMask(GangScheduler& s, const std::vector<int>& nodes) : s_(s), masked_(s.MaskNodes(nodes)) {}
  ~NodeMask() { s_.UnmaskNodes(masked_); }
  NodeMask(const NodeMask&) = delete;
  NodeMask& operator=(const NodeMask&) = delete;

 private:
  GangScheduler& s_;
  std::vector<int> masked_;
};

}  // namespace topogang
