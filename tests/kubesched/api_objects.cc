#include "tests/kubesched/api_objects.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "tests/kubesched/quantity.h"

namespace topogang::kubesched {

void Resources::Add(const Resources& r) {
  milli_cpu += r.milli_cpu;
  memory += r.memory;
  ephemeral_storage += r.ephemeral_storage;
  allowed_pods += r.allowed_pods;
  for (const auto& [name, v] : r.scalar) scalar[name] += v;
}

void Resources::Subtract(const Resources& r) {
  milli_cpu -= r.milli_cpu;
  memory -= r.memory;
  ephemeral_storage -= r.ephemeral_storage;
  allowed_pods -= r.allowed_pods;
  for (const auto& [name, v] : r.scalar) scalar[name] -= v;
}

int64_t Resources::Scalar(const std::string& name) const {
  auto it = scalar.find(name);
  return it == scalar.end() ? 0 : it->second;
}

bool Resources::IsZero() const {
  return milli_cpu == 0 && memory == 0 && ephemeral_storage == 0 && scalar.empty();
}

bool IsExtendedResourceName(const std::string& n) {
  return n.find('/') != std::string::npos && !absl::StartsWith(n, "kubernetes.io/") &&
         !absl::StartsWith(n, "requests.");
}

ResourceKind KindOf(const std::string& n) {
  if (n == "cpu") return ResourceKind::kCpu;
  if (n == "memory") return ResourceKind::kMemory;
  if (n == "ephemeral-storage") return ResourceKind::kEphemeralStorage;
  if (n == "pods") return ResourceKind::kPods;
  // Extended, hugepages-* and kubernetes.io/-prefixed native resources are scalar resources.
  if (absl::StartsWith(n, "hugepages-") || n.find('/') != std::string::npos) {
    return ResourceKind::kScalar;
  }
  return ResourceKind::kIgnored;
}

namespace {

const Json* Field(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string Str(const Json& obj, const char* key) {
  const Json* f = Field(obj, key);
  return f && f->is_string() ? f->get<std::string>() : "";
}

std::map<std::string, std::string> StringMap(const Json* obj) {
  std::map<std::string, std::string> out;
  if (!obj || !obj->is_object()) return out;
  for (auto it = obj->begin(); it != obj->end(); ++it) {
    if (it.value().is_string()) out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

// A quantity may arrive as a string ("8") or, from hand-written JSON, as a number (8).
absl::StatusOr<int64_t> Quantity(const Json& v, bool milli) {
  std::string text;
  if (v.is_string()) {
    text = v.get<std::string>();
  } else if (v.is_number_integer()) {
    text = std::to_string(v.get<int64_t>());
  } else if (v.is_number()) {
    text = v.dump();
  } else {
    return absl::InvalidArgumentError("quantity is not a string");
  }
  return milli ? ParseQuantityMilli(text) : ParseQuantityValue(text);
}

// A ResourceList (name -> quantity) as Resources. Unparseable quantities are skipped.
Resources ResourceList(const Json* list) {
  Resources r;
  if (!list || !list->is_object()) return r;
  for (auto it = list->begin(); it != list->end(); ++it) {
    const std::string& name = it.key();
    ResourceKind kind = KindOf(name);
    if (kind == ResourceKind::kIgnored) continue;
    auto q = Quantity(it.value(), kind == ResourceKind::kCpu);
    if (!q.ok()) continue;
    switch (kind) {
      case ResourceKind::kCpu:
        r.milli_cpu = *q;
        break;
      case ResourceKind::kMemory:
        r.memory = *q;
        break;
      case ResourceKind::kEphemeralStorage:
        r.ephemeral_storage = *q;
        break;
      case ResourceKind::kPods:
        r.allowed_pods = *q;
        break;
      case ResourceKind::kScalar:
        r.scalar[name] = *q;
        break;
      case ResourceKind::kIgnored:
        break;
    }
  }
  return r;
}

void MaxInto(Resources* into, const Resources& r) {
  into->milli_cpu = std::max(into->milli_cpu, r.milli_cpu);
  into->memory = std::max(into->memory, r.memory);
  into->ephemeral_storage = std::max(into->ephemeral_storage, r.ephemeral_storage);
  for (const auto& [name, v] : r.scalar) {
    auto [it, inserted] = into->scalar.emplace(name, v);
    if (!inserted) it->second = std::max(it->second, v);
  }
}

// One container's requests after API-server defaulting (a limit without a request becomes the
// request), plus its non-zero CPU/memory for scoring.
struct ContainerRequest {
  Resources requests;
  int64_t nonzero_cpu = 0, nonzero_memory = 0;
};

constexpr int64_t kDefaultMilliCpuRequest = 100;                // schedutil.DefaultMilliCPURequest
constexpr int64_t kDefaultMemoryRequest = 200LL * 1024 * 1024;  // schedutil.DefaultMemoryRequest

ContainerRequest ReadContainer(const Json& c, std::set<std::string>* names) {
  ContainerRequest out;
  const Json* res = Field(c, "resources");
  Json merged = Json::object();
  if (res) {
    for (const char* part : {"limits", "requests"}) {  // requests override limits
      const Json* list = Field(*res, part);
      if (!list || !list->is_object()) continue;
      for (auto it = list->begin(); it != list->end(); ++it) {
        names->insert(it.key());
        merged[it.key()] = it.value();
      }
    }
  }
  out.requests = ResourceList(&merged);
  out.nonzero_cpu = merged.contains("cpu") ? out.requests.milli_cpu : kDefaultMilliCpuRequest;
  out.nonzero_memory = merged.contains("memory") ? out.requests.memory : kDefaultMemoryRequest;
  return out;
}

std::vector<Toleration> ReadTolerations(const Json* list) {
  std::vector<Toleration> out;
  if (!list || !list->is_array()) return out;
  for (const Json& t : *list) {
    out.push_back({Str(t, "key"), Str(t, "operator"), Str(t, "value"), Str(t, "effect")});
  }
  return out;
}

std::vector<SelectorRequirement> ReadRequirements(const Json* list) {
  std::vector<SelectorRequirement> out;
  if (!list || !list->is_array()) return out;
  for (const Json& r : *list) {
    SelectorRequirement req{Str(r, "key"), Str(r, "operator"), {}};
    if (const Json* v = Field(r, "values"); v && v->is_array()) {
      for (const Json& s : *v) {
        if (s.is_string()) req.values.push_back(s.get<std::string>());
      }
    }
    out.push_back(std::move(req));
  }
  return out;
}

SelectorTerm ReadTerm(const Json& t) {
  return {ReadRequirements(Field(t, "matchExpressions")),
          ReadRequirements(Field(t, "matchFields"))};
}

}  // namespace

absl::StatusOr<PodPtr> ParsePod(Json object) {
  auto pod = std::make_shared<Pod>();
  const Json empty = Json::object();
  const Json* meta = Field(object, "metadata");
  if (!meta) meta = &empty;
  const Json* spec = Field(object, "spec");
  if (!spec) spec = &empty;
  const Json* status = Field(object, "status");
  if (!status) status = &empty;
  pod->name = Str(*meta, "name");
  if (pod->name.empty()) return absl::InvalidArgumentError("pod without metadata.name");
  pod->ns = Str(*meta, "namespace");
  if (pod->ns.empty()) pod->ns = "default";
  pod->uid = Str(*meta, "uid");
  if (pod->uid.empty()) pod->uid = pod->ns + "/" + pod->name;  // hand-made pods may have none
  pod->resource_version = Str(*meta, "resourceVersion");
  pod->deleting = Field(*meta, "deletionTimestamp") != nullptr;
  pod->labels = StringMap(Field(*meta, "labels"));
  pod->scheduler_name = Str(*spec, "schedulerName");
  if (pod->scheduler_name.empty()) pod->scheduler_name = "default-scheduler";
  pod->node_name = Str(*spec, "nodeName");
  pod->nominated_node_name = Str(*status, "nominatedNodeName");
  pod->phase = Str(*status, "phase");
  if (const Json* p = Field(*spec, "priority"); p && p->is_number_integer()) {
    pod->priority = p->get<int32_t>();
  }
  pod->node_selector = StringMap(Field(*spec, "nodeSelector"));
  pod->tolerations = ReadTolerations(Field(*spec, "tolerations"));
  if (const Json* aff = Field(*spec, "affinity")) {
    if (const Json* na = Field(*aff, "nodeAffinity")) {
      if (const Json* req = Field(*na, "requiredDuringSchedulingIgnoredDuringExecution")) {
        std::vector<SelectorTerm> terms;
        if (const Json* ts = Field(*req, "nodeSelectorTerms"); ts && ts->is_array()) {
          for (const Json& t : *ts) terms.push_back(ReadTerm(t));
        }
        pod->required_terms = std::move(terms);
      }
      if (const Json* pref = Field(*na, "preferredDuringSchedulingIgnoredDuringExecution");
          pref && pref->is_array()) {
        for (const Json& p : *pref) {
          PreferredTerm pt;
          if (const Json* w = Field(p, "weight"); w && w->is_number_integer()) {
            pt.weight = w->get<int32_t>();
          }
          if (const Json* t = Field(p, "preference")) pt.term = ReadTerm(*t);
          pod->preferred_terms.push_back(std::move(pt));
        }
      }
    }
  }
  // Requests: containers and sidecars run together, other init containers one at a time.
  Resources sum, init_max, sidecars;
  int64_t nz_cpu = 0, nz_mem = 0, nz_init_cpu = 0, nz_init_mem = 0, nz_side_cpu = 0,
          nz_side_mem = 0;
  if (const Json* cs = Field(*spec, "containers"); cs && cs->is_array()) {
    for (const Json& c : *cs) {
      ContainerRequest r = ReadContainer(c, &pod->container_resource_names);
      sum.Add(r.requests);
      nz_cpu += r.nonzero_cpu;
      nz_mem += r.nonzero_memory;
    }
  }
  if (const Json* ics = Field(*spec, "initContainers"); ics && ics->is_array()) {
    for (const Json& c : *ics) {
      ContainerRequest r = ReadContainer(c, &pod->container_resource_names);
      if (Str(c, "restartPolicy") == "Always") {  // a sidecar keeps running
        sidecars.Add(r.requests);
        sum.Add(r.requests);
        nz_side_cpu += r.nonzero_cpu;
        nz_side_mem += r.nonzero_memory;
        nz_cpu += r.nonzero_cpu;
        nz_mem += r.nonzero_memory;
        continue;
      }
      Resources with_sidecars = r.requests;
      with_sidecars.Add(sidecars);
      MaxInto(&init_max, with_sidecars);
      nz_init_cpu = std::max(nz_init_cpu, r.nonzero_cpu + nz_side_cpu);
      nz_init_mem = std::max(nz_init_mem, r.nonzero_memory + nz_side_mem);
    }
  }
  MaxInto(&sum, init_max);
  Resources overhead = ResourceList(Field(*spec, "overhead"));
  sum.Add(overhead);
  sum.allowed_pods = 0;
  pod->requests = std::move(sum);
  pod->nonzero_milli_cpu = std::max(nz_cpu, nz_init_cpu) + overhead.milli_cpu;
  pod->nonzero_memory = std::max(nz_mem, nz_init_mem) + overhead.memory;
  pod->object = std::move(object);
  return PodPtr(std::move(pod));
}

absl::StatusOr<NodePtr> ParseNode(Json object, int64_t missing_pods_allocatable) {
  auto node = std::make_shared<Node>();
  const Json empty = Json::object();
  const Json* meta = Field(object, "metadata");
  if (!meta) meta = &empty;
  const Json* spec = Field(object, "spec");
  if (!spec) spec = &empty;
  const Json* status = Field(object, "status");
  if (!status) status = &empty;
  node->name = Str(*meta, "name");
  if (node->name.empty()) return absl::InvalidArgumentError("node without metadata.name");
  node->uid = Str(*meta, "uid");
  node->resource_version = Str(*meta, "resourceVersion");
  node->labels = StringMap(Field(*meta, "labels"));
  node->annotations = StringMap(Field(*meta, "annotations"));
  if (const Json* u = Field(*spec, "unschedulable"); u && u->is_boolean()) {
    node->unschedulable = u->get<bool>();
  }
  if (const Json* ts = Field(*spec, "taints"); ts && ts->is_array()) {
    for (const Json& t : *ts) {
      node->taints.push_back({Str(t, "key"), Str(t, "value"), Str(t, "effect")});
    }
  }
  const Json* alloc = Field(*status, "allocatable");
  node->allocatable = ResourceList(alloc);
  if (!alloc || !alloc->contains("pods")) node->allocatable.allowed_pods = missing_pods_allocatable;
  if (const Json* cs = Field(*status, "conditions"); cs && cs->is_array()) {
    for (const Json& c : *cs) node->conditions[Str(c, "type")] = Str(c, "status");
  }
  // k8s.io/component-helpers/node/topology GetZoneKey.
  auto label = [&](const char* a, const char* b) {
    auto it = node->labels.find(a);
    if (it == node->labels.end()) it = node->labels.find(b);
    return it == node->labels.end() ? std::string() : it->second;
  };
  std::string zone = label("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone");
  std::string region =
      label("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region");
  if (!zone.empty() || !region.empty()) node->zone_key = region + std::string(":\0:", 3) + zone;
  node->object = std::move(object);
  return NodePtr(std::move(node));
}

}  // namespace topogang::kubesched
