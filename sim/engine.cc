// Over 500 lines: one discrete-event loop whose steps share its state (clock, event queue,
// per-job progress); what stands alone lives beside it (uplink_book.h, network_model.h).
#include "sim/engine.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "scheduler/placement.h"
#include "sim/comm_model.h"
#include "sim/network_model.h"
#include "sim/pod_line.h"
#include "sim/policy.h"
#include "sim/policy_features.h"
#include "sim/rng.h"
#include "sim/uplink_book.h"

namespace topogang::sim {
namespace {

enum class EvType { kFinish = 0, kNodeUp = 1, kNodeDown = 2, kArrive = 3, kWake = 4, kSlow = 5 };

struct Event {
  double t;
  EvType type;
  long seq;
  int a = 0;  // job or node
  int b = 0;  // generation, or fail flag
  bool operator>(const Event& o) const {
    return std::tie(t, type, seq) > std::tie(o.t, o.type, o.seq);
  }
};

struct JobState {
  // Work left, in seconds of the whole job (all `members`) on its ideal placement.
  double remaining_base = 0;
  double run_start = 0;  // when progress (re)started
  double stretch = 1;
  // Work per second: the share of its members it runs with (elastic gangs run with fewer;
  // throughput is taken as proportional to members) over its stretch.
  double speed = 1;
  long gpus_now = 0;
  double failed_at = -1;  // hit by a failure and not running again yet
  int gen = 0;
  bool running = false;
  // The current placement's run so far, for its time-weighted stretch: its speed changes with
  // slow nodes and, under uplink contention, with the jobs sharing its uplinks.
  double segment_start = 0;
  double run_s = 0, stretch_run_s = 0;
  bool stretch_varied = false;
};

// Whether the job fits the domains of level `req` made of nodes of model `sku` alone.
bool FitsModel(const Cluster& c, const TraceJob& t, int sku, int req) {
  for (int d = c.LevelBegin(req); d < c.LevelEnd(req); ++d) {
    long members = 0;
    for (int n = c.domain(d).node_begin; n < c.domain(d).node_end; ++n) {
      if (c.node(n).sku == sku) members += c.node(n).gpus / t.gpus_per_member;
    }
    if (members >= t.members) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::vector<SimJob>> MakeSimJobs(const Cluster& cluster, const Trace& trace,
                                                const SimOptions& opt) {
  std::vector<SimJob> jobs;
  jobs.reserve(trace.jobs.size());
  for (const TraceJob& t : trace.jobs) {
    SimJob j;
    j.trace = &t;
    j.gang.name = t.id;
    j.gang.members = t.members;
    j.gang.gpus_per_member = t.gpus_per_member;
    j.gang.required_tier = t.required_tier;
    j.gang.preferred_tier = t.preferred_tier;
    j.gang.sku = t.sku;
    j.gang.priority = t.priority;
    const double estimate = opt.estimates == Estimates::kExact  ? t.duration_s
                            : opt.estimates == Estimates::kNone ? 0
                                                                : t.estimate_s;
    // A trace's estimate is a user's time limit, as Slurm's: never below the run time, so
    // enforced by construction (sim/generator.h UserEstimate).
    j.gang.runtime_estimate = j.gang.runtime_limit = absl::Seconds(estimate);
    if (!t.sku.empty() && cluster.FindSku(t.sku) < 0) {
      std::string known;
      for (int s = 0; s < cluster.num_skus(); ++s) {
        absl::StrAppend(&known, s ? ", " : "", cluster.SkuName(s));
      }
      return absl::InvalidArgumentError(absl::StrCat("line ", t.line, ": job ", t.id,
                                                     ": unknown GPU model '", t.sku,
                                                     "' for this cluster (models: ", known, ")"));
    }
    for (const std::string* tier : {&t.required_tier, &t.preferred_tier}) {
      if (!tier->empty() && cluster.LevelByName(*tier) <= 0) {
        std::string known;
        for (int l = 1; l < cluster.num_levels(); ++l) {
          absl::StrAppend(&known, l > 1 ? ", " : "", cluster.LevelName(l));
        }
        return absl::InvalidArgumentError(absl::StrCat("line ", t.line, ": job ", t.id,
                                                       ": unknown tier '", *tier,
                                                       "' for this cluster (tiers: ", known, ")"));
      }
    }
    jobs.push_back(std::move(j));
  }
  return jobs;
}

absl::StatusOr<PolicyResult> Simulate(const Cluster& cluster, const Trace& trace,
                                      const std::string& full_name, const SimOptions& options) {
  SimOptions opt = options;
  auto base_name = ApplyPolicyFeatures(full_name, &opt);
  if (!base_name.ok()) return base_name.status();
  const std::string& policy_name = *base_name;
  if (opt.spares) {
    const int level =
        opt.spare_tier.empty() ? cluster.node_level() - 1 : cluster.LevelByName(opt.spare_tier);
    if (level <= 0 || level >= cluster.node_level() || opt.spares_per_domain < 1) {
      return absl::InvalidArgumentError(absl::StrCat("spares: need a tier above the nodes (got '",
                                                     opt.spare_tier,
                                                     "') and at least one spare per domain"));
    }
  }
  auto built = MakeSimJobs(cluster, trace, opt);
  if (!built.ok()) return built.status();
  std::vector<SimJob>& jobs = *built;
  std::vector<char> schedulable(trace.jobs.size(), 1);
  for (size_t i = 0; i < trace.jobs.size(); ++i) {
    const TraceJob& t = trace.jobs[i];
    const int req = t.required_tier.empty() ? 0 : cluster.LevelByName(t.required_tier);
    if (t.gpus_per_member > cluster.max_gpus_per_node() ||
        t.total_gpus() > cluster.MaxDomainGpus(req) ||
        (!t.sku.empty() && !FitsModel(cluster, t, cluster.FindSku(t.sku), req))) {
      schedulable[i] = 0;  // can never fit on this cluster, even empty
    }
  }
  const bool network = opt.comm_model == CommModel::kNetwork;
  const NetworkModel net(cluster);
  constexpr double kBytes = 1e9;  // the ratio to the ideal time does not depend on the size
  std::vector<double> ideal(jobs.size());       // bandwidth, Gb/s per GPU
  std::vector<double> ideal_time(jobs.size());  // network: all-reduce seconds, compact placement
  std::map<std::tuple<int, int, int>, CollectiveCost> compact;  // by shape and GPU model
  const bool contention = network && opt.uplink_contention;
  // Contention: the running jobs' uplinks, and each one's all-reduce as placed, re-priced
  // when the load on its uplinks changes.
  UplinkBook uplinks(jobs.size());
  std::vector<PreparedAllReduce> job_cost(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const GangSpec& g = jobs[i].gang;
    if (!network) {
      ideal[i] = IdealBandwidthGbps(cluster, g.members, g.gpus_per_member);
      continue;
    }
    const int sku = g.sku.empty() ? kAnySku : cluster.FindSku(g.sku);
    auto [it, added] = compact.try_emplace({g.members, g.gpus_per_member, sku});
    if (added) {
      it->second = net.AllReduce(net.CompactPlacement(g.members, g.gpus_per_member, sku), kBytes);
    }
    ideal[i] = it->second.busbw_gbytes_s * 8;
    ideal_time[i] = it->second.seconds;
  }
  std::vector<JobState> st(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) st[i].remaining_base = jobs[i].trace->duration_s;

  // Slow nodes (@slow events): a synchronous job is paced by its slowest member.
  std::vector<int> slow_count(cluster.num_nodes(), 0);
  auto on_slow = [&](const std::vector<MemberPlacement>& members) {
    return std::any_of(members.begin(), members.end(),
                       [&](const MemberPlacement& m) { return slow_count[m.node] > 0; });
  };
  // Placement -> (level, bandwidth, stretch). `prepared`: the members' all-reduce, worked out
  // already; `summarize`: false when only the bandwidth can have changed (p->level is not set);
  // `self_in_load`: the job is running and counted in the uplinks' load.
  auto evaluate_links = [&](int j, const std::vector<MemberPlacement>& members, Placement* p,
                            const PreparedAllReduce* prepared, bool summarize, bool self_in_load) {
    if (summarize || !network) {
      p->members = members;
      SummarizePlacement(cluster, p);
    }
    if (!network) return Stretch(jobs[j].trace->comm_fraction, ideal[j], p->bandwidth_gbps);
    const UplinkLoad* load = contention ? &uplinks.load() : nullptr;
    const CollectiveCost cost = prepared != nullptr ? prepared->Best(load, self_in_load)
                                                    : net.AllReduce(members, kBytes, load);
    p->bandwidth_gbps = cost.busbw_gbytes_s * 8;
    if (ideal_time[j] <= 0) return 1.0;
    const double f = jobs[j].trace->comm_fraction;
    return std::max(1.0, (1 - f) + f * cost.seconds / ideal_time[j]);
  };
  auto evaluate = [&](int j, const std::vector<MemberPlacement>& members, Placement* p,
                      const PreparedAllReduce* prepared = nullptr, bool summarize = true,
                      bool self_in_load = false) {
    const double s = evaluate_links(j, members, p, prepared, summarize, self_in_load);
    return on_slow(members) ? s * opt.slow_factor : s;
  };

  PolicyContext ctx;
  ctx.jobs = &jobs;
  ctx.seed = opt.seed;
  ctx.rendezvous_timeout_s = opt.rendezvous_timeout_s;
  ctx.locality_patience_s = opt.locality_patience_s;
  ctx.required_tier_max_wait_s = opt.required_tier_max_wait_s;
  ctx.queue = opt.queue;
  ctx.queue_base = opt.queue_base;
  ctx.required_tier_max_wait_by_tier = opt.required_tier_max_wait_by_tier;
  ctx.repair_in_place_always = opt.repair_in_place_always;
  ctx.preemption = opt.preemption;
  ctx.elastic = opt.elastic;
  ctx.spares_per_domain = opt.spares ? opt.spares_per_domain : 0;
  ctx.spare_tier = opt.spare_tier;
  ctx.avoid_slow = opt.avoid_slow;
  auto speed_of = [&](int j, const std::vector<MemberPlacement>& members, double stretch) {
    return static_cast<double>(members.size()) / jobs[j].trace->members / stretch;
  };
  ctx.run_time = [&](int j, const std::vector<MemberPlacement>& members) {
    Placement p;
    return st[j].remaining_base / speed_of(j, members, evaluate(j, members, &p));
  };
  auto made = MakePolicy(policy_name, cluster, ctx);
  if (!made.ok()) return made.status();
  Policy& policy = **made;

  PolicyResult res;
  res.policy = full_name;
  res.jobs.resize(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    JobResult& r = res.jobs[i];
    r.id = jobs[i].trace->id;
    r.arrival = jobs[i].trace->arrival_s;
    r.gpus = jobs[i].trace->total_gpus();
    r.members = jobs[i].trace->members;
    r.ideal_bandwidth = ideal[i];
  }

  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> pq;
  long seq = 0;
  PodLine binds(opt.bind_pods_per_s);
  double window = 0;
  // A job reaches the policy once its controller has created its pods, in arrival order; its
  // JCT still counts from the arrival.
  PodLine creates(opt.pods_created_per_s);
  std::vector<double> seen(jobs.size(), 0);  // when it was last enqueued: pods created, or requeued
  std::vector<size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return jobs[a].trace->arrival_s < jobs[b].trace->arrival_s;
  });
  for (size_t i : order) {
    const double arrival = jobs[i].trace->arrival_s;
    window = std::max(window, arrival);
    if (schedulable[i]) {
      seen[i] = arrival + creates.Delay(arrival, jobs[i].trace->members);
      pq.push({seen[i], EvType::kArrive, seq++, static_cast<int>(i), 0});
    } else {
      res.jobs[i].unschedulable = true;
    }
  }
  // Node events: from the trace, then random failures.
  for (const NodeEvent& e : trace.events) {
    int node = cluster.FindNode(e.node);
    if (node < 0) {
      return absl::InvalidArgumentError(absl::StrCat("line ", e.line, ": no node named '", e.node,
                                                     "' in cluster ", cluster.name()));
    }
    if (e.kind == NodeEvent::Kind::kSlow) {  // b: 1 = turns slow, 0 = back to speed
      pq.push({e.time_s, EvType::kSlow, seq++, node, 1});
      if (e.duration_s > 0) pq.push({e.time_s + e.duration_s, EvType::kSlow, seq++, node, 0});
      continue;
    }
    const int fail = e.kind == NodeEvent::Kind::kFail;
    pq.push({e.time_s, EvType::kNodeDown, seq++, node, fail});
    if (e.duration_s > 0) pq.push({e.time_s + e.duration_s, EvType::kNodeUp, seq++, node, 0});
  }
  if (opt.failure_rate_per_node_day > 0 && window > 0 && cluster.num_nodes() > 0) {
    Rng rng(opt.seed ^ 0xfa11);
    const double rate = opt.failure_rate_per_node_day * cluster.num_nodes() / 86400.0;
    for (double t = rng.Exponential(1 / rate); t < window; t += rng.Exponential(1 / rate)) {
      int node = static_cast<int>(rng.Below(cluster.num_nodes()));
      pq.push({t, EvType::kNodeDown, seq++, node, 1});
      pq.push({t + opt.repair_s, EvType::kNodeUp, seq++, node, 0});
    }
  }
  const double snapshot_at = opt.snapshot_at_s >= 0 ? opt.snapshot_at_s : window / 2;
  bool snapped = false;
  std::vector<int> down_count(cluster.num_nodes(), 0);

  double now = 0, last = 0;
  // Steps in a row at one instant: a policy whose wake-ups never move time forward would loop
  // here forever. Each step handles all of the instant's events; more steps come only from work
  // that starts and ends within the instant (durations below a double's step), at most a few per
  // job, so this is far more than any real instant needs.
  const long kMaxStepsAtOneInstant =
      100000 + 4 * static_cast<long>(jobs.size() + trace.events.size());
  long steps_at_now = 0;
  long busy = 0;    // GPUs of running jobs
  double good = 0;  // the same, each divided by its job's stretch: work at ideal speed
  double good_gpu_s = 0, busy_gpu_s = 0, held_gpu_s = 0, frag_gpu_s = 0, frag_share_s = 0,
         frag_time = 0, spare_gpu_s = 0, lost_gpu_s = 0;
  std::vector<double> recoveries;
  std::vector<std::vector<MemberPlacement>> run_members(jobs.size());
  double scheduled_wake = kNever;
  int pending_real = 0;  // events other than wakes
  {
    auto copy = pq;
    while (!copy.empty()) {
      pending_real += copy.top().type != EvType::kWake;
      copy.pop();
    }
  }

  // The current speed's stretch into the placement's time-weighted one (JobResult::stretch).
  auto close_segment = [&](int j) {
    JobState& js = st[j];
    const double t = std::max(0.0, now - js.segment_start);
    js.run_s += t;
    js.stretch_run_s += t * js.stretch;
    if (js.stretch_varied && js.run_s > 0) res.jobs[j].stretch = js.stretch_run_s / js.run_s;
  };
  // `delay`: seconds before it makes progress (an elastic resize). `same_placement`: the
  // members it already runs on, at a new speed (re-timed), so the stretch so far is kept.
  auto start_job = [&](int j, const std::vector<MemberPlacement>& members, double delay = 0,
                       bool same_placement = false) {
    Placement p;
    if (contention && !same_placement) job_cost[j] = net.Prepare(members, kBytes);
    const double s = evaluate(j, members, &p, contention ? &job_cost[j] : nullptr,
                              /*summarize=*/!same_placement, /*self_in_load=*/same_placement);
    JobState& js = st[j];
    if (!same_placement) {
      js.run_s = js.stretch_run_s = 0;
      js.stretch_varied = false;
    } else if (s != js.stretch) {
      js.stretch_varied = true;
    }
    js.segment_start = now + delay;
    js.stretch = s;
    js.speed = speed_of(j, members, s);
    js.gpus_now = static_cast<long>(members.size()) * jobs[j].gang.gpus_per_member;
    js.run_start = now + delay;
    js.running = true;
    ++js.gen;
    JobResult& r = res.jobs[j];
    if (!same_placement) r.level = p.level;
    r.bandwidth = p.bandwidth_gbps;
    if (!js.stretch_varied) r.stretch = s;
    const int n = static_cast<int>(members.size());
    if (r.first_members == 0) r.first_members = n;
    if (!same_placement) run_members[j] = members;
    r.slowed = r.slowed || on_slow(members);
    r.peak_members = std::max(r.peak_members, n);
    if (js.failed_at >= 0) {
      recoveries.push_back(now + delay - js.failed_at);  // until it runs again
      js.failed_at = -1;
    }
    busy += js.gpus_now;
    good += js.gpus_now / s;
    if (delay > 0) {  // held but not working while it resizes: no goodput
      good_gpu_s -=
          js.gpus_now / s * std::max(0.0, std::min(now + delay, window) - std::min(now, window));
    }
    if (contention && !same_placement) uplinks.Add(j, job_cost[j].uplink_use());
    pq.push({js.run_start + js.remaining_base / js.speed, EvType::kFinish, seq++, j, js.gen});
    ++pending_real;
  };
  // `lose`: interrupted (failure, preemption), so the work since its checkpoint is lost; else
  // paused at a checkpoint (an elastic resize). `keep_uplinks`: it goes on on the same members.
  auto stop_progress = [&](int j, bool lose = true, bool keep_uplinks = false) {
    if (!keep_uplinks) uplinks.Remove(j);
    close_segment(j);
    JobState& js = st[j];
    const double done = std::max(0.0, now - js.run_start) * js.speed;
    const double lost = lose ? std::min(done, opt.restart_cost_s) : 0;
    // Stopped before it made progress (binding, resizing): start_job charged that whole delay
    // to goodput; give back what has not elapsed.
    if (js.run_start > now) {
      good_gpu_s +=
          js.gpus_now / js.stretch * (std::min(js.run_start, window) - std::min(now, window));
    }
    js.remaining_base -= done - lost;
    lost_gpu_s += lost * res.jobs[j].gpus;
    js.running = false;
    ++js.gen;
    busy -= js.gpus_now;
    good -= js.gpus_now / js.stretch;
  };
  // Same members, a new speed from now on (a node turned slow or back, its uplinks' share
  // changed); no work lost. Its own uplink use is unchanged, so it changes no other job's.
  auto retime = [&](int j) {
    const std::vector<MemberPlacement>& members = run_members[j];
    JobState& js = st[j];
    Placement p;
    const PreparedAllReduce* prepared = contention ? &job_cost[j] : nullptr;
    if (evaluate(j, members, &p, prepared, /*summarize=*/false, /*self_in_load=*/true) ==
        js.stretch) {
      return;  // bound elsewhere, or clamped at its ideal: nothing changes
    }
    // A bind or resize under way; stop_progress gives back its goodput charge at the old
    // stretch, start_job charges what is left at the new one.
    const double pause = std::max(0.0, js.run_start - now);
    stop_progress(j, /*lose=*/false, /*keep_uplinks=*/true);
    start_job(j, members, pause, /*same_placement=*/true);
  };

  while (!pq.empty()) {
    now = pq.top().t;
    steps_at_now = now == last ? steps_at_now + 1 : 0;
    if (steps_at_now > kMaxStepsAtOneInstant) {
      return absl::InternalError(absl::StrCat(
          "policy ", full_name, " made no progress at t=", now, " s: ", steps_at_now,
          " steps at that instant (a bug in its wake-ups; please report it with the trace)"));
    }
    // Integrals over [last, now).
    const double dt = now - last;
    if (dt > 0) {
      const double in_window = std::max(0.0, std::min(now, window) - std::min(last, window));
      busy_gpu_s += busy * in_window;
      good_gpu_s += good * in_window;
      held_gpu_s += static_cast<double>(policy.HeldIdleGpus()) * dt;
      spare_gpu_s += static_cast<double>(policy.SpareIdleGpus()) * dt;
    }
    last = now;
    while (!pq.empty() && pq.top().t == now) {
      Event e = pq.top();
      pq.pop();
      if (e.type != EvType::kWake) --pending_real;
      switch (e.type) {
        case EvType::kArrive:
          policy.Enqueue(e.a, now);
          break;
        case EvType::kFinish:
          if (e.b != st[e.a].gen || !st[e.a].running) break;
          policy.Finish(e.a);
          uplinks.Remove(e.a);
          job_cost[e.a] = {};  // done with it: its links can be many
          close_segment(e.a);
          st[e.a].running = false;
          busy -= st[e.a].gpus_now;
          good -= st[e.a].gpus_now / st[e.a].stretch;
          res.jobs[e.a].end = now;
          break;
        case EvType::kNodeDown: {
          if (down_count[e.a]++ > 0) break;
          HealthResult hr = policy.SetNodeDown(e.a, true, e.b != 0, now);
          for (int j : hr.killed) {
            stop_progress(j);
            st[j].failed_at = now;
            ++res.jobs[j].restarts;
            policy.Enqueue(j, now);
            seen[j] = now;  // its controller's new pods ask from now
          }
          for (auto& [j, members] : hr.moved) {
            const double pending = std::max(0.0, st[j].run_start - now);  // still binding
            stop_progress(j);
            st[j].failed_at = now;
            start_job(j, members, pending);
          }
          break;
        }
        case EvType::kNodeUp:
          if (down_count[e.a] == 0 || --down_count[e.a] > 0) break;
          policy.SetNodeDown(e.a, false, false, now);
          break;
        case EvType::kWake:
          scheduled_wake = kNever;
          break;
        case EvType::kSlow: {
          const bool was = slow_count[e.a] > 0;
          slow_count[e.a] = std::max(0, slow_count[e.a] + (e.b ? 1 : -1));
          if (was == (slow_count[e.a] > 0)) break;
          policy.SetNodeSlow(e.a, !was, now);
          // Running jobs on the node change speed from now on (no work lost).
          for (size_t j = 0; j < jobs.size(); ++j) {
            if (!st[j].running) continue;
            const auto& m = run_members[j];
            if (std::none_of(m.begin(), m.end(),
                             [&](const MemberPlacement& x) { return x.node == e.a; })) {
              continue;
            }
            retime(static_cast<int>(j));
          }
          break;
        }
      }
    }
    for (Started& s : policy.Schedule(now)) {
      // Its GPUs are taken now; it runs (and counts as started) once its pods are bound. Pods
      // refused before (it waited since the policy saw it) are retried after their backoff.
      const double bind = binds.Delay(now, static_cast<int>(s.members.size()),
                                      now > seen[s.job] ? opt.bind_retry_s : 0);
      res.jobs[s.job].start = now + bind;
      start_job(s.job, s.members, bind);
    }
    for (int j : policy.TakePreempted()) {
      stop_progress(j);
      ++res.jobs[j].preemptions;
      policy.Enqueue(j, now);
      seen[j] = now;
    }
    for (Started& g : policy.TakeGrown()) {
      const double pending = std::max(0.0, st[g.job].run_start - now);  // still binding
      stop_progress(g.job, /*lose=*/false);
      ++res.jobs[g.job].growths;
      start_job(g.job, g.members, std::max(pending, opt.elastic_resize_s));
    }
    // Every running job that shares an uplink whose load changed gets its new share from now.
    if (contention) {
      for (int j : uplinks.TakeAffected()) retime(j);
    }
    const Cluster& c = policy.cluster();
    if (now <= window) {
      // Fragmentation, time-weighted until the next event (approximated by sampling here).
      const double next = pq.empty() ? now : std::min(pq.top().t, window);
      const double span = std::max(0.0, next - now);
      const long unusable = UnusableFreeGpus(c);
      const long free = c.FreeHealthy(0);
      frag_gpu_s += unusable * span;
      if (free > 0) frag_share_s += span * static_cast<double>(unusable) / free;
      frag_time += span;
    }
    if (!snapped && now >= snapshot_at) {
      snapped = true;
      res.snapshot_time = now;
      const int leaf = LeafLevel(c);
      for (int d = c.LevelBegin(leaf); d < c.LevelEnd(leaf); ++d) {
        const double total = c.domain(d).gpu_end - c.domain(d).gpu_begin;
        res.snapshot_leaves.push_back(d);
        res.snapshot_used_fraction.push_back(1.0 - c.FreeHealthy(d) / total);
      }
    }
    const double wake = policy.NextWakeup();
    if (pending_real == 0 && busy == 0 && now > window + 366 * 86400.0) {
      break;  // only timeouts left, a year past the last arrival: what waits never fits
    }
    if (wake < kNever && wake < scheduled_wake) {
      scheduled_wake = wake;
      pq.push({std::max(wake, now), EvType::kWake, seq++, 0, 0});
    }
  }
  Summary& s = res.summary;
  SummarizeJobs(cluster, res.jobs, now, &s);
  s.makespan = now;
  const double capacity = static_cast<double>(cluster.num_gpus()) * window;
  s.utilization = window > 0 ? busy_gpu_s / capacity : 0;
  s.goodput = window > 0 ? good_gpu_s / capacity : 0;
  s.partial_gpu_hours = held_gpu_s / 3600.0;
  s.frag_gpus = frag_time > 0 ? frag_gpu_s / frag_time : 0;
  s.frag_share = frag_time > 0 ? frag_share_s / frag_time : 0;
  for (const JobState& js : st) {
    if (js.failed_at >= 0) recoveries.push_back(now - js.failed_at);  // never ran again
  }
  for (const JobResult& r : res.jobs) {
    s.preemptions += r.preemptions;
    s.growths += r.growths;
  }
  s.recoveries = static_cast<int>(recoveries.size());
  for (double r : recoveries) {
    s.mean_recovery += r / recoveries.size();
    s.max_recovery = std::max(s.max_recovery, r);
  }
  s.p95_recovery = Percentile(recoveries, 0.95);
  s.lost_gpu_hours = lost_gpu_s / 3600.0;
  s.spare_idle_gpu_hours = spare_gpu_s / 3600.0;
  return res;
}

}  // namespace topogang::sim
