#include "scenario.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

namespace spotshift::bench {

namespace {

// The List writer: items separated by commas.
class ListWriter {
 public:
  ListWriter() {
    out_.reserve(1 << 20);
    out_ += R"({"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[)";
  }
  // Each item starts on a line of its own, as in kubectl's output (which spotshift plan shares
  // among its readers there); the rest of an item is compact.
  std::string& item() {
    if (items_++) out_ += ',';
    out_ += "\n    ";
    return out_;
  }
  std::string finish() {
    out_ += "\n]}";
    return std::move(out_);
  }

 private:
  std::string out_;
  size_t items_ = 0;
};

std::string cpu_text(int64_t milli) { return milli % 1000 == 0 ? std::to_string(milli / 1000) : fmt::format("{}m", milli); }

struct NodeShape {
  int64_t cpu_milli, memory_mib, gpu_milli = 0;
  std::string gpu_model;
};

void write_node(std::string& out, const std::string& name, bool on_demand, const NodeShape& s, std::string_view zone) {
  fmt::format_to(std::back_inserter(out),
                 R"({{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{0}","uid":"node-{0}","resourceVersion":"1","labels":{{)"
                 R"("kubernetes.io/hostname":"{0}","kubernetes.io/os":"linux","{1}":"")",
                 name, on_demand ? "node-role.kubernetes.io/worker" : "node-role.kubernetes.io/spot-worker");
  if (!zone.empty()) fmt::format_to(std::back_inserter(out), R"(,"topology.kubernetes.io/zone":"{}")", zone);
  if (!s.gpu_model.empty()) fmt::format_to(std::back_inserter(out), R"(,"alibabacloud.com/gpu-model":"{}")", s.gpu_model);
  out += "}},\"spec\":{";
  if (on_demand) out += R"("taints":[{"key":"spotshift.io/on-demand","value":"true","effect":"PreferNoSchedule"}])";
  std::string resources = fmt::format(R"("cpu":"{}","memory":"{}Mi","pods":"110")", cpu_text(s.cpu_milli), s.memory_mib);
  if (s.gpu_milli) resources += fmt::format(R"(,"alibabacloud.com/gpu-milli":"{}")", s.gpu_milli);
  fmt::format_to(std::back_inserter(out),
                 R"(}},"status":{{"capacity":{{{0}}},"allocatable":{{{0}}},"conditions":[{{"type":"Ready","status":"True"}}]}}}})",
                 resources);
}

struct PodSpec {
  std::string name, ns, app, node;
  int64_t cpu_milli, memory_mib, gpu_milli = 0;
  int constraint = 0;  // 0 none, 1 anti-affinity on hostname, 2 zone spread
  std::string gpu_spec;
};

// The pod's spec: nodeName when it is bound, the container with its requests, tolerations, and
// the constraint or GPU model affinity it has.
void write_pod_spec(std::string& out, const PodSpec& p) {
  out += '{';
  if (!p.node.empty()) fmt::format_to(std::back_inserter(out), R"("nodeName":"{}",)", p.node);
  fmt::format_to(std::back_inserter(out),
                 R"("containers":[{{"name":"app","image":"registry.example/{0}:1","resources":{{"requests":{{)"
                 R"("cpu":"{1}","memory":"{2}Mi")",
                 p.app, cpu_text(p.cpu_milli), p.memory_mib);
  // An extended resource's limit must equal its request (the API server refuses a pod without it).
  if (p.gpu_milli)
    fmt::format_to(std::back_inserter(out), R"(,"alibabacloud.com/gpu-milli":"{0}"}},"limits":{{"alibabacloud.com/gpu-milli":"{0}")",
                   p.gpu_milli);
  out += R"(}}}],"tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},)"
         R"({"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}])";
  if (p.constraint == 1)
    fmt::format_to(
        std::back_inserter(out),
        R"(,"affinity":{{"podAntiAffinity":{{"requiredDuringSchedulingIgnoredDuringExecution":[{{"labelSelector":{{"matchLabels":{{"app":"{}"}}}},"topologyKey":"kubernetes.io/hostname"}}]}}}})",
        p.app);
  if (p.constraint == 2)
    fmt::format_to(
        std::back_inserter(out),
        R"(,"topologySpreadConstraints":[{{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule","labelSelector":{{"matchLabels":{{"app":"{}"}}}}}}])",
        p.app);
  if (!p.gpu_spec.empty()) {
    std::string values;
    for (auto m : split(p.gpu_spec, '|')) values += fmt::format("{}\"{}\"", values.empty() ? "" : ",", m);
    fmt::format_to(
        std::back_inserter(out),
        R"(,"affinity":{{"nodeAffinity":{{"requiredDuringSchedulingIgnoredDuringExecution":{{"nodeSelectorTerms":[{{"matchExpressions":[{{"key":"alibabacloud.com/gpu-model","operator":"In","values":[{}]}}]}}]}}}}}})",
        values);
  }
  out += '}';
}

void write_pod(std::string& out, const PodSpec& p) {
  fmt::format_to(
      std::back_inserter(out),
      R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{0}","namespace":"{1}","uid":"pod-{1}-{0}","resourceVersion":"1",)"
      R"("labels":{{"app":"{2}","pod-template-hash":"5d8f7"}},"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet",)"
      R"("name":"{2}-5d8f7","uid":"rs-{1}-{2}","controller":true,"blockOwnerDeletion":true}}]}},"spec":)",
      p.name, p.ns, p.app);
  write_pod_spec(out, p);
  out += R"(,"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}})";
}

// The ReplicaSet the pods of p's workload name as their controller, with p's spec (unbound) as
// its template: kubesim recreates an evicted pod from it.
void write_replicaset(std::string& out, const PodSpec& p, int replicas) {
  fmt::format_to(std::back_inserter(out),
                 R"({{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{{"name":"{1}-5d8f7","namespace":"{0}","uid":"rs-{0}-{1}",)"
                 R"("resourceVersion":"1","labels":{{"app":"{1}","pod-template-hash":"5d8f7"}}}},"spec":{{"replicas":{2},)"
                 R"("selector":{{"matchLabels":{{"app":"{1}","pod-template-hash":"5d8f7"}}}},)"
                 R"("template":{{"metadata":{{"labels":{{"app":"{1}","pod-template-hash":"5d8f7"}}}},"spec":)",
                 p.ns, p.app, replicas);
  PodSpec unbound = p;
  unbound.node.clear();
  write_pod_spec(out, unbound);
  out += "}}}";
}

// A node agent on every node: the DaemonSet and its pod on `node` (what stays on a drained node).
constexpr int64_t kAgentCpuMilli = 50, kAgentMemoryMib = 64;
void write_agent_daemonset(std::string& out) {
  out +=
      R"({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"node-agent","namespace":"kube-system","uid":"ds-node-agent",)"
      R"("resourceVersion":"1"},"spec":{"selector":{"matchLabels":{"app":"node-agent"}},"template":{"metadata":{"labels":)"
      R"({"app":"node-agent"}},"spec":{"tolerations":[{"operator":"Exists"}],"containers":[{"name":"agent","image":"registry.example/agent:1",)"
      R"("resources":{"requests":{"cpu":"50m","memory":"64Mi"}}}]}}}})";
}
void write_agent_pod(std::string& out, const std::string& node) {
  fmt::format_to(std::back_inserter(out),
                 R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"node-agent-{0}","namespace":"kube-system","uid":"agent-{0}",)"
                 R"("resourceVersion":"1","labels":{{"app":"node-agent"}},"ownerReferences":[{{"apiVersion":"apps/v1","kind":"DaemonSet",)"
                 R"("name":"node-agent","uid":"ds-node-agent","controller":true,"blockOwnerDeletion":true}}]}},"spec":{{"nodeName":"{0}",)"
                 R"("tolerations":[{{"operator":"Exists"}}],"containers":[{{"name":"agent","image":"registry.example/agent:1",)"
                 R"("resources":{{"requests":{{"cpu":"{1}m","memory":"{2}Mi"}}}}}}]}},)"
                 R"("status":{{"phase":"Running","conditions":[{{"type":"Ready","status":"True"}}]}}}})",
                 node, kAgentCpuMilli, kAgentMemoryMib);
}

void write_pdb(std::string& out, const std::string& ns, const std::string& app, int replicas) {
  fmt::format_to(
      std::back_inserter(out),
      R"({{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{{"name":"{1}","namespace":"{0}","uid":"pdb-{0}-{1}",)"
      R"("resourceVersion":"1","generation":1}},"spec":{{"maxUnavailable":1,"selector":{{"matchLabels":{{"app":"{1}"}}}}}},)"
      R"("status":{{"observedGeneration":1,"currentHealthy":{2},"desiredHealthy":{3},"disruptionsAllowed":1,"expectedPods":{2}}}}})",
      ns, app, replicas, replicas - 1);
}

}  // namespace

std::string synthetic_cluster(const SyntheticOptions& o) {
  std::mt19937_64 rng(o.seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::array<NodeShape, 4> kShapes{{{16000, 65536, 0, ""}, {32000, 131072, 0, ""}, {48000, 196608, 0, ""}, {64000, 262144, 0, ""}}};
  constexpr std::array<const char*, 3> kZones{"zone-a", "zone-b", "zone-c"};
  ListWriter list;
  const int on_demand = static_cast<int>(o.nodes * o.on_demand_share);
  std::vector<std::string> od_names, spot_names;
  for (int i = 0; i < o.nodes; ++i) {
    bool od = i < on_demand;
    std::string name = fmt::format("{}-{:05d}", od ? "ondemand" : "spot", i);
    write_node(list.item(), name, od, kShapes[static_cast<size_t>(pick(0, 3))], kZones[static_cast<size_t>(i % 3)]);
    (od ? od_names : spot_names).push_back(name);
  }
  // Workloads of 5 to 60 replicas; each replica on the next node of its pool, so one workload's
  // replicas are on distinct nodes and spread over the zones. A little over the node share of
  // pods runs on on-demand nodes: what is left after a spot shortage.
  constexpr std::array<int64_t, 6> kCpu{100, 250, 250, 500, 500, 1000};
  constexpr std::array<int64_t, 5> kMem{256, 512, 512, 1024, 2048};
  size_t od_cursor = 0, spot_cursor = 0;
  int made = 0;
  for (int w = 0; made < o.pods; ++w) {
    int replicas = std::min(pick(5, 60), o.pods - made);
    std::string ns = fmt::format("team-{:02d}", w % 50), app = fmt::format("app-{:05d}", w);
    int64_t cpu = kCpu[static_cast<size_t>(pick(0, 5))], mem = kMem[static_cast<size_t>(pick(0, 4))];
    int constraint = 0;
    if (std::uniform_real_distribution<double>(0, 1)(rng) < o.constrained_share) constraint = pick(1, 2);
    for (int r = 0; r < replicas; ++r, ++made) {
      bool od = !od_names.empty() && std::uniform_real_distribution<double>(0, 1)(rng) < o.on_demand_share * 1.1;
      const std::string& node = od ? od_names[od_cursor++ % od_names.size()] : spot_names[spot_cursor++ % spot_names.size()];
      write_pod(list.item(), PodSpec{fmt::format("{}-5d8f7-{:04d}", app, r), ns, app, node, cpu, mem, 0, constraint, ""});
    }
    if (w % 2 == 0 && replicas > 1) write_pdb(list.item(), ns, app, replicas);
  }
  return list.finish();
}

namespace {

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> row;
    for (auto f : split(line, ',')) row.emplace_back(trim(f));
    rows.push_back(std::move(row));
  }
  return rows;
}

struct SimNode {
  std::string name;
  NodeShape shape;
  bool on_demand = false, present = false;
  int64_t cpu = 0, mem = 0, gpu = 0;
  int pods = 0;
  bool fits(const PodSpec& p) const {
    if (!p.gpu_spec.empty() && ("|" + p.gpu_spec + "|").find("|" + shape.gpu_model + "|") == std::string::npos) return false;
    return pods < 110 && cpu + p.cpu_milli <= shape.cpu_milli && mem + p.memory_mib <= shape.memory_mib &&
           gpu + p.gpu_milli <= shape.gpu_milli;
  }
  // LeastAllocated: the mean free share of cpu and memory after placing the pod.
  double score(const PodSpec& p) const {
    return (1.0 - double(cpu + p.cpu_milli) / double(shape.cpu_milli)) + (1.0 - double(mem + p.memory_mib) / double(shape.memory_mib));
  }
};

}  // namespace

std::string default_openb_dir() {
  if (const char* env = std::getenv("SPOTSHIFT_OPENB")) return env;
  return std::string(SOURCE_ROOT) + "/tests/data/openb";
}

Result<std::string> openb_cluster(const OpenbOptions& o) {
  auto node_rows = read_csv(o.data_dir + "/openb_node_list_gpu_node.csv");
  auto pod_rows = read_csv(o.data_dir + "/" + o.pod_list);
  if (node_rows.empty() || pod_rows.empty()) return Error::invalid(fmt::format("no openb trace in {} (set SPOTSHIFT_OPENB)", o.data_dir));
  std::mt19937_64 rng(o.seed);
  std::vector<SimNode> nodes;
  for (int copy = 0; copy < std::max(1, o.copies); ++copy)
    for (const auto& r : node_rows) {
      if (r.size() < 4) return Error::invalid("openb node list: a row has fewer than 4 columns");
      SimNode n;
      n.name = copy == 0 ? r[0] : fmt::format("{}-r{}", r[0], copy);
      n.shape = NodeShape{std::stoll(r[1]), std::stoll(r[2]), std::stoll(r[3]) * 1000, r.size() > 4 ? r[4] : ""};
      nodes.push_back(std::move(n));
    }
  if (o.max_nodes > 0 && nodes.size() > static_cast<size_t>(o.max_nodes)) nodes.resize(static_cast<size_t>(o.max_nodes));
  std::shuffle(nodes.begin(), nodes.end(), rng);
  const size_t od = std::min(nodes.size(), static_cast<size_t>(o.on_demand_nodes));
  const size_t spot_now = od + static_cast<size_t>(static_cast<double>(nodes.size() - od) * o.spot_available_share);
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodes[i].on_demand = i < od;
    nodes[i].present = i < spot_now;
    if (o.workloads) {
      nodes[i].cpu += kAgentCpuMilli;
      nodes[i].mem += kAgentMemoryMib;
      ++nodes[i].pods;
    }
  }
  std::vector<PodSpec> tasks;
  for (const auto& r : pod_rows) {
    if (r.size() < 5) return Error::invalid("openb pod list: a row has fewer than 5 columns");
    PodSpec p;
    p.name = r[0];
    p.ns = "openb";
    p.cpu_milli = std::stoll(r[1]);
    p.memory_mib = std::stoll(r[2]);
    p.gpu_milli = std::stoll(r[3]) * std::stoll(r[4]);
    if (r.size() > 5) p.gpu_spec = r[5];
    tasks.push_back(std::move(p));
  }
  // Workload inflation, as the trace's simulator does: tasks drawn at random (with replacement)
  // from the list until they ask for `fill` times the GPUs of the nodes present. Each goes where
  // the default scheduler would put it: spot nodes first (on-demand ones carry PreferNoSchedule),
  // least allocated among those that fit. Tasks that fit nowhere stay out of the snapshot.
  int64_t present_gpu = 0;
  for (const auto& n : nodes)
    if (n.present) present_gpu += n.shape.gpu_milli;
  const auto target = static_cast<int64_t>(static_cast<double>(present_gpu) * o.fill);
  std::uniform_int_distribution<size_t> draw(0, tasks.size() - 1);
  std::vector<PodSpec> placed;
  auto place = [&](PodSpec p) {
    SimNode* best = nullptr;
    for (bool want_od : {false, true}) {
      double best_score = -1e9;
      for (auto& n : nodes) {
        if (!n.present || n.on_demand != want_od || !n.fits(p)) continue;
        if (double score = n.score(p); score > best_score) {
          best_score = score;
          best = &n;
        }
      }
      if (best) break;
    }
    if (!best) return;
    best->cpu += p.cpu_milli;
    best->mem += p.memory_mib;
    best->gpu += p.gpu_milli;
    ++best->pods;
    p.node = best->name;
    placed.push_back(std::move(p));
  };
  for (int64_t asked = 0, drawn = 0; asked < target; ++drawn) {
    PodSpec p = tasks[draw(rng)];
    // The multi-GPU variant: whole GPUs, 2 to 8 of them, for this share of the GPU tasks.
    if (o.multi_gpu_share > 0 && p.gpu_milli > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < o.multi_gpu_share)
      p.gpu_milli = 1000 * std::uniform_int_distribution<int64_t>(2, 8)(rng);
    asked += p.gpu_milli;
    p.name = fmt::format("{}-{:05d}", p.name, drawn);
    p.app = p.name;
    place(std::move(p));
  }
  // Web pods in workloads of 5 to 60 replicas, 100m to 1 CPU and 256 Mi to 2 Gi, as the
  // synthetic scenario's, placed the same way.
  constexpr std::array<int64_t, 6> kCpu{100, 250, 250, 500, 500, 1000};
  constexpr std::array<int64_t, 5> kMem{256, 512, 512, 1024, 2048};
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int w = 0, made = 0; made < o.web_pods; ++w) {
    const int replicas = std::min(pick(5, 60), o.web_pods - made);
    const std::string ns = fmt::format("team-{:02d}", w % 50), app = fmt::format("web-{:05d}", w);
    const int64_t cpu = kCpu[static_cast<size_t>(pick(0, 5))], mem = kMem[static_cast<size_t>(pick(0, 4))];
    for (int r = 0; r < replicas; ++r, ++made) place(PodSpec{fmt::format("{}-5d8f7-{:04d}", app, r), ns, app, "", cpu, mem, 0, 0, ""});
  }
  ListWriter list;
  for (const auto& n : nodes) write_node(list.item(), n.name, n.on_demand, n.shape, "");
  for (const auto& p : placed) write_pod(list.item(), p);
  if (o.workloads) {
    write_agent_daemonset(list.item());
    for (const auto& n : nodes) write_agent_pod(list.item(), n.name);
    // One ReplicaSet per workload, with as many replicas as it has pods placed; a budget
    // (maxUnavailable 1) for each web workload of more than one.
    std::vector<std::pair<const PodSpec*, int>> workloads;
    for (const auto& p : placed) {
      if (workloads.empty() || workloads.back().first->app != p.app || workloads.back().first->ns != p.ns) workloads.emplace_back(&p, 0);
      ++workloads.back().second;
    }
    for (const auto& [p, replicas] : workloads) {
      write_replicaset(list.item(), *p, replicas);
      if (p->gpu_milli == 0 && replicas > 1) write_pdb(list.item(), p->ns, p->app, replicas);
    }
  }
  return list.finish();
}

}  // namespace spotshift::bench
