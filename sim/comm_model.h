// Turns a placement into time. A job spends a fraction f of its ideal-placement run time
// communicating; communication slows down in proportion to the placement's bandwidth:
//   duration = base * ((1 - f) + f * ideal_bw / placement_bw)
// ideal_bw is what the best placement of that shape could get on an empty cluster: the span
// bandwidth of the lowest level whose largest domain holds the whole job. Bandwidths are the
// Cluster's own model (Cluster::SpanBandwidthGbps), the one the planner optimises and reports.
#pragma once

#include "topology/cluster.h"

namespace topogang::sim {

// Level of the best possible placement for members x gpus_per_member on an empty cluster.
int IdealLevel(const Cluster& cluster, int members, int gpus_per_member);
double IdealBandwidthGbps(const Cluster& cluster, int members, int gpus_per_member);

// How much longer than `base` the job runs on a placement with `placement_bw` (>= 1).
double Stretch(double comm_fraction, double ideal_bw, double placement_bw);

}  // namespace topogang::sim
