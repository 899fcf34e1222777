// The predicate engine's speed: a plain fit check on one node, placing a plain pod among 2,500
// spot nodes, and the same with required anti-affinity and topology spread.

#include "bench.hpp"
#include "model/json.hpp"
#include "sched/fork.hpp"
#include "sched/framework.hpp"

#include <fmt/format.h>

using namespace spotshift;
using namespace spotshift::sched;

namespace {

PodPtr pod_from(const std::string& json) { return std::make_shared<const model::Pod>(model::decode_pod(std::string_view(json)).value()); }

NodePtr node_from(const std::string& json) {
  return std::make_shared<const model::Node>(model::decode_node(std::string_view(json)).value());
}

std::string pod_json(const std::string& name, const std::string& app, const std::string& node, const std::string& extra) {
  return fmt::format(R"({{"metadata":{{"name":"{}","namespace":"bench","labels":{{"app":"{}"}}}},
    "spec":{{"nodeName":"{}","tolerations":[{{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}],
    "containers":[{{"name":"c","resources":{{"requests":{{"cpu":"250m","memory":"512Mi"}}}}}}]{}}},"status":{{"phase":"Running"}}}})",
                     name, app, node, extra);
}

}  // namespace

int main(int argc, char** argv) {
  // `sched_bench one-node` times only the one-node check, for profiling.
  const bool only_one_node = argc > 1 && std::string_view(argv[1]) == "one-node";
  const int kNodes = 2500, kPodsPerNode = 30;
  std::vector<NodePtr> nodes;
  std::vector<PodPtr> pods;
  for (int i = 0; i < kNodes; ++i) {
    std::string name = fmt::format("spot-{:04}", i);
    nodes.push_back(node_from(fmt::format(
        R"({{"metadata":{{"name":"{}","labels":{{"kubernetes.io/hostname":"{}","topology.kubernetes.io/zone":"zone-{}","karpenter.sh/capacity-type":"spot"}}}},
          "status":{{"allocatable":{{"cpu":"32","memory":"128Gi","pods":"110"}},"conditions":[{{"type":"Ready","status":"True"}}]}}}})",
        name, name, i % 3)));
    for (int k = 0; k < kPodsPerNode - (i % 7); ++k)
      pods.push_back(pod_from(pod_json(fmt::format("p-{}-{}", i, k), fmt::format("app-{}", (i * kPodsPerNode + k) % 500), name, "")));
  }
  auto snap = ClusterSnapshot::build(nodes, pods);
  Fork fork(snap);
  auto fw = Framework::create(default_profile()).value();
  PlacementCache cache(snap);
  std::vector<int> all;
  for (int i = 0; i < snap.size(); ++i) all.push_back(i);
  std::vector<int> one = {1234};

  PodPtr plain = pod_from(pod_json("incoming", "app-7", "", ""));
  PodPtr anti = pod_from(pod_json(
      "incoming-anti", "app-7", "",
      R"(,"affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"app-7"}},"topologyKey":"kubernetes.io/hostname"}]}})"));
  PodPtr spread = pod_from(pod_json(
      "incoming-spread", "app-7", "",
      R"(,"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"app-7"}}}])"));
  if (fw.place(*plain, fork, all, &cache).node < 0 || fw.place(*anti, fork, all, &cache).node < 0 ||
      fw.place(*spread, fork, all, &cache).node < 0) {
    std::fprintf(stderr, "sched_bench: a benchmark pod did not fit\n");
    return 1;
  }
  double one_node =
      bench::time_per_call_ns([&] { fw.place(*plain, fork, one, &cache); }, std::chrono::milliseconds(only_one_node ? 5000 : 500));
  if (only_one_node) {
    bench::report("sched_fit_check_one_node", one_node, "ns", "< 200 ns per plain node check");
    return 0;
  }
  double plain_all = bench::time_per_call_ns([&] { fw.place(*plain, fork, all, &cache); }) / 1000.0;
  double anti_all = bench::time_per_call_ns([&] { fw.place(*anti, fork, all, &cache); }) / 1000.0;
  double spread_all = bench::time_per_call_ns([&] { fw.place(*spread, fork, all, &cache); }) / 1000.0;
  double per_node = plain_all * 1000.0 / kNodes;
  bench::report("sched_fit_check_one_node", one_node, "ns", "< 200 ns per plain node check");
  bench::report("sched_fit_check_per_node_in_2500", per_node, "ns", "< 200 ns per plain node check");
  bench::report("sched_place_plain_2500_nodes", plain_all, "us", "< 50 us");
  bench::report("sched_place_anti_affinity_2500_nodes", anti_all, "us", fmt::format("<= 4x plain ({:.0f} us)", plain_all * 4));
  bench::report("sched_place_topology_spread_2500_nodes", spread_all, "us", fmt::format("<= 4x plain ({:.0f} us)", plain_all * 4));
  return 0;
}
