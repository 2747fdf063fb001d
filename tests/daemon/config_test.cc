// The daemon section of the config file, and the shipped deploy/ manifests agreeing with it
// (the urlPrefix and verbs kube-scheduler calls are the ones topogangd serves).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "config/config_file.h"
#include "tests/support/test_util.h"
#include "topogangd/daemon_config.h"

namespace topogang {
namespace {

std::string Source(const std::string& rel) {
  std::ifstream in(testing::SourceDir() + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(DaemonConfigTest, DefaultsAndOverrides) {
  auto d = ParseDaemonConfig(YAML::Node(), "x");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->http.port, 8888);
  EXPECT_EQ(d->extender.bind_window, absl::Seconds(4));
  auto c = ParseDaemonConfig(YAML::Load("{http_port: 9000, url_prefix: /x, bind_window_ms: 250, "
                                        "gpu_resource: amd.com/gpu, filter_verb: f}"),
                             "x");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->http.port, 9000);
  EXPECT_EQ(c->http.prefix, "/x");
  EXPECT_EQ(c->http.filter_verb, "f");
  EXPECT_EQ(c->extender.gpu_resource, "amd.com/gpu");
  EXPECT_EQ(c->extender.bind_window, absl::Milliseconds(250));
  auto q = ParseDaemonConfig(
      YAML::Load("{starvation_threshold_seconds: 120, hold_min_gpus: 16, max_holds: 2}"), "x");
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->extender.queue.starvation_threshold, absl::Minutes(2));
  EXPECT_EQ(q->extender.queue.hold_min_gpus, 16);
  EXPECT_EQ(q->extender.queue.max_holds, 2);
  // 0: a large gang that does not fit is held GPUs at once; below that is an error.
  auto now = ParseDaemonConfig(YAML::Load("{starvation_threshold_seconds: 0}"), "x");
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ(now->extender.queue.starvation_threshold, absl::ZeroDuration());
  EXPECT_FALSE(ParseDaemonConfig(YAML::Load("{starvation_threshold_seconds: -1}"), "x").ok());
  EXPECT_EQ(now->extender.wake_retry, absl::Seconds(30));  // the default
  auto wake = ParseDaemonConfig(YAML::Load("{wake_retry_seconds: 0}"), "x");
  ASSERT_TRUE(wake.ok()) << wake.status();
  EXPECT_EQ(wake->extender.wake_retry, absl::ZeroDuration());
  EXPECT_FALSE(ParseDaemonConfig(YAML::Load("{wake_retry_seconds: 5000}"), "x").ok());
  EXPECT_EQ(now->extender.queue_pass, absl::Seconds(5));  // the default
  auto pass = ParseDaemonConfig(YAML::Load("{queue_pass_ms: 0}"), "x");
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->extender.queue_pass, absl::ZeroDuration());
  EXPECT_FALSE(ParseDaemonConfig(YAML::Load("{queue_pass_ms: -5}"), "x").ok());
  EXPECT_FALSE(ParseDaemonConfig(YAML::Load("{queue_pass_ms: soon}"), "x").ok());
  auto h =
      ParseDaemonConfig(YAML::Load("{http_threads: 3, max_connections: 64, bind_parallelism: 32, "
                                   "gang_barrier: topogang}"),
                        "x");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->extender.bind_parallelism, 32);
  EXPECT_EQ(h->extender.gang_barrier, GangLedgerOptions::GangBarrier::kTopogang);
  EXPECT_EQ(q->extender.gang_barrier, GangLedgerOptions::GangBarrier::kAuto);
  EXPECT_EQ(h->http.threads, 3);
  EXPECT_EQ(h->http.max_connections, 64);
  auto p = ParseDaemonConfig(
      YAML::Load("{scheduler_names: [topogang-scheduler, batch], preemption: false, "
                 "preemption_retry_seconds: 5, nomination_ttl_seconds: 60}"),
      "x");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->extender.scheduler_names, (std::vector<std::string>{"topogang-scheduler", "batch"}));
  EXPECT_FALSE(p->extender.preemption);
  EXPECT_EQ(p->extender.preemption_retry, absl::Seconds(5));
  EXPECT_EQ(p->extender.nomination_ttl, absl::Minutes(1));
  auto x =
      ParseDaemonConfig(YAML::Load("{failed_node_memory_seconds: 0, slow_node_gang_gpus: 128, "
                                   "slow_node_threshold: 2.5, slow_node_half_life_seconds: 600, "
                                   "locality_patience_seconds: 0, thin_side_patience_seconds: 0, "
                                   "keep_claim_clear: true, large_gangs_in_order: true, "
                                   "large_in_order_min_share: 0.125, "
                                   "large_in_order_overload_backlog: 0.7, "
                                   "large_in_order_overload_memory_seconds: 86400}"),
                        "x");
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(x->extender.failed_node_memory, absl::ZeroDuration());
  EXPECT_EQ(x->extender.slow_node_gang_gpus, 128);
  EXPECT_DOUBLE_EQ(x->slowness.threshold, 2.5);
  EXPECT_EQ(x->slowness.half_life, absl::Minutes(10));
  EXPECT_EQ(x->extender.queue.locality_patience, absl::ZeroDuration());
  EXPECT_EQ(x->extender.queue.thin_side_patience, absl::ZeroDuration());
  EXPECT_EQ(q->extender.queue.thin_side_patience, absl::Hours(6)) << "default";
  EXPECT_TRUE(x->extender.queue.keep_claim_clear);
  EXPECT_FALSE(q->extender.queue.keep_claim_clear) << "off by default";
  EXPECT_TRUE(x->extender.queue.large_gangs_in_order);
  EXPECT_FALSE(q->extender.queue.large_gangs_in_order) << "off by default";
  EXPECT_DOUBLE_EQ(x->extender.queue.large_in_order_min_share, 0.125);
  EXPECT_EQ(q->extender.queue.large_in_order_min_share, 0) << "every large gang, by default";
  EXPECT_DOUBLE_EQ(x->extender.queue.large_in_order_overload_backlog, 0.7);
  EXPECT_EQ(q->extender.queue.large_in_order_overload_backlog, 0) << "off by default";
  EXPECT_EQ(x->extender.queue.large_in_order_overload_memory, absl::Hours(24));
  EXPECT_EQ(q->extender.queue.large_in_order_overload_memory, absl::Hours(48)) << "default";
  EXPECT_EQ(q->extender.slow_node_gang_gpus, 64) << "default";
  EXPECT_TRUE(q->extender.preemption) << "on by default";
  EXPECT_TRUE(q->extender.scheduler_names.empty());
  for (const char* bad : {"{http_port: 0}",
                          "{hold_min_gpus: 0}",
                          "{http_port: abc}",
                          "{bind_window_ms: -1}",
                          "{typo_key: 1}",
                          "[1, 2]",
                          "{filter_verb: ''}",
                          "{http_threads: -1}",
                          "{http_threads: 1000}",
                          "{max_connections: 0}",
                          "{bind_parallelism: 0}",
                          "{bind_parallelism: 100000}",
                          "{gang_barrier: both}",
                          "{scheduler_names: x}",
                          "{scheduler_names: ['']}",
                          "{preemption: maybe}",
                          "{nomination_ttl_seconds: 0}",
                          "{slow_node_threshold: 0}",
                          "{slow_node_threshold: x}",
                          "{slow_node_gang_gpus: -1}",
                          "{slow_node_half_life_seconds: 0}",
                          "{locality_patience_seconds: -5}",
                          "{thin_side_patience_seconds: maybe}",
                          "{thin_side_patience_seconds: 604801}",
                          "{keep_claim_clear: 2}",
                          "{large_gangs_in_order: first}",
                          "{large_in_order_min_share: 1.5}",
                          "{large_in_order_min_share: -0.1}",
                          "{large_in_order_min_share: half}",
                          "{large_in_order_overload_backlog: -1}",
                          "{large_in_order_overload_backlog: 0.7}",  // share 0: every gang stops
                          "{large_in_order_overload_backlog: 101}",
                          "{large_in_order_overload_backlog: most}",
                          "{large_in_order_overload_memory_seconds: -1}",
                          "{large_in_order_overload_memory_seconds: 2592001}"}) {
    EXPECT_FALSE(ParseDaemonConfig(YAML::Load(bad), "x").ok()) << bad;
  }
}

// The cluster's default required-tier wait (Slurm's max_switch_wait): per tier, off unless set,
// each bad entry an error that names the key.
TEST(DaemonConfigTest, RequiredTierMaxWait) {
  auto off = ParseDaemonConfig(YAML::Node(), "x");
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE(off->extender.required_tier_max_wait.empty()) << "required tiers bind by default";
  auto on = ParseDaemonConfig(
      YAML::Load("{required_tier_max_wait_seconds: {leaf: 300, spine: 0, rack: 604800}}"), "x");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_EQ(on->extender.required_tier_max_wait,
            (std::map<std::string, absl::Duration>{{"leaf", absl::Minutes(5)},
                                                   {"spine", absl::ZeroDuration()},
                                                   {"rack", absl::Hours(24 * 7)}}));
  for (const char* bad :
       {"{required_tier_max_wait_seconds: 300}", "{required_tier_max_wait_seconds: [leaf, 300]}",
        "{required_tier_max_wait_seconds: {leaf: -1}}",
        "{required_tier_max_wait_seconds: {leaf: 604801}}",
        "{required_tier_max_wait_seconds: {leaf: 5m}}",
        "{required_tier_max_wait_seconds: {Leaf!: 300}}",
        "{required_tier_max_wait_seconds: {[a, b]: 300}}"}) {
    auto r = ParseDaemonConfig(YAML::Load(bad), "x");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("required_tier_max_wait_seconds"), std::string::npos)
        << r.status();
  }
}

// Hot spares (#13): off unless set; tier and count validated with the key named in the error.
TEST(DaemonConfigTest, Spares) {
  auto off = ParseDaemonConfig(YAML::Node(), "x");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->spares.per_domain, 0) << "off by default";
  EXPECT_EQ(off->spares.tier, "");
  auto on = ParseDaemonConfig(YAML::Load("{spares: {tier: leaf, per_domain: 2}}"), "x");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_EQ(on->spares.tier, "leaf");
  EXPECT_EQ(on->spares.per_domain, 2);
  auto just_count = ParseDaemonConfig(YAML::Load("{spares: {per_domain: 1}}"), "x");
  ASSERT_TRUE(just_count.ok()) << just_count.status();
  EXPECT_EQ(just_count->spares.tier, "") << "the tier right above the nodes";
  EXPECT_EQ(just_count->spares.per_domain, 1);
  for (const auto& [bad, says] : std::vector<std::pair<std::string, std::string>>{
           {"{spares: {per_domain: -1}}", "per_domain"},
           {"{spares: {per_domain: 5000}}", "per_domain"},
           {"{spares: {per_domain: two}}", "per_domain"},
           {"{spares: {tier: node, per_domain: 1}}", "daemon.spares.tier"},
           {"{spares: {teir: leaf}}", "teir"},
           {"{spares: 3}", "daemon.spares: expected a mapping"}}) {
    auto r = ParseDaemonConfig(YAML::Load(bad), "cfg.yaml");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(says), std::string::npos) << bad << ": " << r.status();
    EXPECT_NE(r.status().message().find("cfg.yaml"), std::string::npos) << r.status();
  }
}

TEST(DaemonConfigTest, LeaderElection) {
  auto d = ParseDaemonConfig(YAML::Node(), "x");
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->leader_election.enabled.has_value());  // the mode decides
  EXPECT_EQ(d->leader_election.lease_name, "topogangd");
  EXPECT_EQ(d->leader_election.lease_namespace, "");
  EXPECT_EQ(d->leader_election.lease_duration_ms, 15000);
  EXPECT_EQ(d->leader_election.renew_deadline_ms, 10000);
  EXPECT_EQ(d->leader_election.retry_period_ms, 2000);
  auto c = ParseDaemonConfig(
      YAML::Load("{leader_election: {enabled: false, lease_name: gang.lock, lease_namespace: "
                 "gpu-system, lease_duration_ms: 600, renew_deadline_ms: 400, "
                 "retry_period_ms: 50}}"),
      "x");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->leader_election.enabled, false);
  EXPECT_EQ(c->leader_election.lease_name, "gang.lock");
  EXPECT_EQ(c->leader_election.lease_namespace, "gpu-system");
  EXPECT_EQ(c->leader_election.lease_duration_ms, 600);
  EXPECT_EQ(c->leader_election.renew_deadline_ms, 400);
  EXPECT_EQ(c->leader_election.retry_period_ms, 50);
  const std::pair<const char*, const char*> bad[] = {
      {"{leader_election: {renew_deadline_ms: 15000}}", "must be less than lease_duration_ms"},
      {"{leader_election: {renew_deadline_ms: 20000}}", "must be less than lease_duration_ms"},
      {"{leader_election: {retry_period_ms: 10000}}", "must be less than renew_deadline_ms"},
      {"{leader_election: {retry_period_ms: 0}}", "retry_period_ms"},
      {"{leader_election: {lease_duration_ms: -5}}", "lease_duration_ms"},
      {"{leader_election: {lease_duration_ms: soon}}", "lease_duration_ms"},
      {"{leader_election: {enabled: maybe}}", "enabled"},
      {"{leader_election: {lease_name: Bad_Name}}", "DNS subdomain"},
      {"{leader_election: {lease_name: ''}}", "DNS subdomain"},
      {"{leader_election: {lease_name: a/b}}", "DNS subdomain"},
      {"{leader_election: {lease_namespace: a.b}}", "DNS label"},
      {"{leader_election: {lease_namespace: ../x}}", "DNS label"},
      {"{leader_election: {lease_secs: 1}}", "lease_secs"},
      {"{leader_election: [1]}", "expected a mapping"},
  };
  for (const auto& [yaml, want] : bad) {
    auto r = ParseDaemonConfig(YAML::Load(yaml), "cfg.yaml");
    ASSERT_FALSE(r.ok()) << yaml;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << yaml << ": " << r.status();
    EXPECT_NE(r.status().message().find("cfg.yaml"), std::string::npos) << r.status();
  }
}

TEST(DaemonConfigTest, QueueJournal) {
  auto d = ParseDaemonConfig(YAML::Node(), "x");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->queue_journal.enabled);
  EXPECT_EQ(d->queue_journal.configmap, "topogangd-queue");
  EXPECT_EQ(d->queue_journal.period_ms, 10000);
  auto c = ParseDaemonConfig(
      YAML::Load("{queue_journal: {enabled: false, configmap: gang.queue, period_ms: 1000}}"), "x");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->queue_journal.enabled);
  EXPECT_EQ(c->queue_journal.configmap, "gang.queue");
  EXPECT_EQ(c->queue_journal.period_ms, 1000);
  const std::pair<const char*, const char*> bad[] = {
      {"{queue_journal: {period_ms: 999}}", "period_ms"},
      {"{queue_journal: {period_ms: 3600001}}", "period_ms"},
      {"{queue_journal: {period_ms: often}}", "period_ms"},
      {"{queue_journal: {enabled: maybe}}", "enabled"},
      {"{queue_journal: {configmap: Bad_Name}}", "DNS subdomain"},
      {"{queue_journal: {configmap: ''}}", "DNS subdomain"},
      {"{queue_journal: {configmap: a/b}}", "DNS subdomain"},
      {"{queue_journal: {name: x}}", "name"},
      {"{queue_journal: 5}", "expected a mapping"},
  };
  for (const auto& [yaml, want] : bad) {
    auto r = ParseDaemonConfig(YAML::Load(yaml), "cfg.yaml");
    ASSERT_FALSE(r.ok()) << yaml;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << yaml << ": " << r.status();
    EXPECT_NE(r.status().message().find("cfg.yaml"), std::string::npos) << r.status();
  }
}

TEST(DeployTest, ManifestsAgreeWithTheDaemon) {
  std::vector<YAML::Node> docs = YAML::LoadAll(Source("deploy/topogangd.yaml"));
  ASSERT_FALSE(docs.empty());
  std::string config_text = docs[0]["data"]["config.yaml"].as<std::string>();
  auto cfg = ParseConfigFile(config_text, "configmap");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  auto d = ParseDaemonConfig(cfg->daemon, "configmap");
  ASSERT_TRUE(d.ok()) << d.status();

  YAML::Node sched = YAML::Load(Source("deploy/scheduler-config.yaml"));
  YAML::Node ext = sched["extenders"][0];
  std::string url = ext["urlPrefix"].as<std::string>();
  EXPECT_NE(url.find(":" + std::to_string(d->http.port) + d->http.prefix), std::string::npos)
      << url;
  EXPECT_EQ(ext["filterVerb"].as<std::string>(), d->http.filter_verb);
  EXPECT_EQ(ext["prioritizeVerb"].as<std::string>(), d->http.prioritize_verb);
  EXPECT_EQ(ext["bindVerb"].as<std::string>(), d->http.bind_verb);
  EXPECT_EQ(ext["preemptVerb"].as<std::string>(), d->http.preempt_verb);
  EXPECT_TRUE(ext["nodeCacheCapable"].as<bool>());
  EXPECT_EQ(ext["managedResources"][0]["name"].as<std::string>(), d->extender.gpu_resource);
  // The bind window must end before kube-scheduler gives up on the bind call.
  std::string timeout = ext["httpTimeout"].as<std::string>();
  absl::Duration http_timeout;
  ASSERT_TRUE(absl::ParseDuration(timeout, &http_timeout));
  EXPECT_LT(d->extender.bind_window, http_timeout);
  EXPECT_EQ(sched["percentageOfNodesToScore"].as<int>(), 100);
  // kube-scheduler's client budget takes a PodScheduled write per refused bind: above the rate
  // it can cycle, so a large gang's refusals do not stall its loop (docs/extender.md).
  EXPECT_GE(sched["clientConnection"]["qps"].as<double>(), 200);
  EXPECT_GE(sched["clientConnection"]["burst"].as<int>(),
            sched["clientConnection"]["qps"].as<int>());

  // RBAC: exactly what the daemon does.
  std::vector<YAML::Node> rbac = YAML::LoadAll(Source("deploy/rbac.yaml"));
  std::set<std::string> grants;
  for (const YAML::Node& doc : rbac) {
    // The daemon's own role (topogang-node-drainer is for operators who may drain).
    if (doc["kind"].as<std::string>() != "ClusterRole" ||
        doc["metadata"]["name"].as<std::string>() != "topogangd") {
      continue;
    }
    for (const YAML::Node& rule : doc["rules"]) {
      for (const YAML::Node& r : rule["resources"]) {
        for (const YAML::Node& v : rule["verbs"])
          grants.insert(r.as<std::string>() + ":" + v.as<std::string>());
      }
    }
  }
  // nodes:patch: drains are kept as a Node annotation (kube/node_annotation_writer.h); the group
  // objects that size gangs are listed and watched (kube/group_objects_watch.h); pods/eviction:
  // gang preemption (kube/kube_evictor.h); token and access reviews: agent identity and who may
  // drain (api/reviewers.h).
  EXPECT_EQ(grants, (std::set<std::string>{"nodes:get",
                                           "nodes:list",
                                           "nodes:watch",
                                           "nodes:patch",
                                           "pods:get",
                                           "pods:list",
                                           "pods:watch",
                                           "pods/binding:create",
                                           "pods/eviction:create",
                                           "events:create",
                                           "podgroups:list",
                                           "podgroups:watch",
                                           "workloads:list",
                                           "workloads:watch",
                                           "jobsets:list",
                                           "jobsets:watch",
                                           "leaderworkersets:list",
                                           "leaderworkersets:watch",
                                           "pytorchjobs:list",
                                           "pytorchjobs:watch",
                                           "tokenreviews:create",
                                           "subjectaccessreviews:create"}));

  // Leader election and the queue journal: namespaced Roles on the daemon's Lease and its
  // ConfigMap only, each bound to its account.
  const LeaderElectionConfig& le = d->leader_election;
  EXPECT_EQ(le.enabled, true);
  EXPECT_TRUE(d->queue_journal.enabled);
  std::map<std::string, std::set<std::string>> role_grants;  // Role -> "group/resource/name:verb"
  std::set<std::string> bound;
  for (const YAML::Node& doc : rbac) {
    const std::string kind = doc["kind"].as<std::string>();
    if (kind == "RoleBinding" &&
        doc["metadata"]["namespace"].as<std::string>() == le.lease_namespace &&
        doc["subjects"][0]["name"].as<std::string>() == "topogangd") {
      bound.insert(doc["roleRef"]["name"].as<std::string>());
    }
    if (kind != "Role") continue;
    EXPECT_EQ(doc["metadata"]["namespace"].as<std::string>(), le.lease_namespace);
    for (const YAML::Node& rule : doc["rules"]) {
      std::string names = rule["resourceNames"] ? rule["resourceNames"][0].as<std::string>() : "*";
      for (const YAML::Node& v : rule["verbs"]) {
        role_grants[doc["metadata"]["name"].as<std::string>()].insert(
            rule["apiGroups"][0].as<std::string>() + "/" + rule["resources"][0].as<std::string>() +
            "/" + names + ":" + v.as<std::string>());
      }
    }
  }
  EXPECT_EQ(bound, (std::set<std::string>{"topogangd-leader-election", "topogangd-queue-journal"}));
  const std::string lease = "coordination.k8s.io/leases/";
  EXPECT_EQ(role_grants["topogangd-leader-election"],
            (std::set<std::string>{lease + "*:create", lease + le.lease_name + ":get",
                                   lease + le.lease_name + ":update"}));
  const std::string cm = "/configmaps/";
  EXPECT_EQ(role_grants["topogangd-queue-journal"],
            (std::set<std::string>{cm + "*:create", cm + d->queue_journal.configmap + ":get",
                                   cm + d->queue_journal.configmap + ":update"}));
  EXPECT_EQ(role_grants.size(), 2u) << "no other Role";
  // Two replicas (leader + warm standby) that know their pod name, spread over nodes.
  YAML::Node deploy;
  for (const YAML::Node& doc : docs) {
    if (doc["kind"].as<std::string>() == "Deployment") deploy = doc;
  }
  ASSERT_TRUE(deploy);
  EXPECT_EQ(deploy["spec"]["replicas"].as<int>(), 2);
  EXPECT_EQ(deploy["spec"]["strategy"]["type"].as<std::string>(), "RollingUpdate");
  YAML::Node pod = deploy["spec"]["template"]["spec"];
  EXPECT_EQ(pod["containers"][0]["env"][0]["name"].as<std::string>(), "POD_NAME");
  EXPECT_EQ(pod["containers"][0]["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/readyz");
  EXPECT_TRUE(pod["affinity"]["podAntiAffinity"]);
  // Prometheus scrapes GET /metrics on the daemon's HTTP port.
  YAML::Node ann = deploy["spec"]["template"]["metadata"]["annotations"];
  ASSERT_TRUE(ann);
  EXPECT_EQ(ann["prometheus.io/scrape"].as<std::string>(), "true");
  EXPECT_EQ(ann["prometheus.io/port"].as<std::string>(), std::to_string(d->http.port));
  EXPECT_EQ(ann["prometheus.io/path"].as<std::string>(), "/metrics");
}

}  // namespace
}  // namespace topogang
