// Over random small clusters: every placement the engine makes (through forks, one pod after
// another) satisfies every enabled filter recomputed from scratch on a freshly built snapshot.

#include "builders.hpp"
#include "sched/fork.hpp"
#include "sched/framework.hpp"
#include "support/catch.hpp"

#include <random>

using namespace spotshift;
using namespace spotshift::sched;
using namespace spotshift::sched::testing;

namespace {

struct World {
  std::vector<NodePtr> nodes;
  std::vector<PodPtr> pods;
};

World random_world(std::mt19937& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  World w;
  int n_nodes = 3 + pick(6);
  for (int i = 0; i < n_nodes; ++i) {
    auto n = make_node(fmt::format("n{}", i)).cpu(std::to_string(1 + pick(4))).memory(fmt::format("{}Gi", 2 + pick(6))).pods(3 + pick(4));
    n.label("zone", fmt::format("z{}", pick(3))).label("pool", pick(2) ? "spot" : "od");
    if (pick(10) < 3) n.taint("dedicated", pick(2) ? "gpu" : "batch", pick(2) ? "NoSchedule" : "PreferNoSchedule");
    if (pick(10) == 0) n.unschedulable();
    if (pick(12) == 0) n.condition("Ready", "False");
    w.nodes.push_back(n);
  }
  int n_pods = pick(10);
  for (int i = 0; i < n_pods; ++i) {
    auto p = make_pod(fmt::format("e{}", i)).cpu(fmt::format("{}m", 100 + 100 * pick(5))).label("app", pick(2) ? "web" : "db");
    if (pick(4) == 0) p.host_port(8000 + pick(3));
    if (pick(5) == 0)
      p.affinity(
          R"({"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"zone"}]}})");
    p.on(fmt::format("n{}", pick(n_nodes)));
    w.pods.push_back(p);
  }
  return w;
}

PodPtr random_incoming(std::mt19937& rng, int i) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto p = make_pod(fmt::format("in{}", i)).cpu(fmt::format("{}m", 100 + 100 * pick(8))).label("app", pick(2) ? "web" : "db");
  if (pick(2)) p.toleration(R"({"key":"dedicated","operator":"Exists"})");
  if (pick(3) == 0) p.selector("pool", "spot");
  if (pick(4) == 0) p.host_port(8000 + pick(3));
  int kind = pick(5);
  if (kind == 0)
    p.affinity(
        R"({"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"zone"}]}})");
  else if (kind == 1)
    p.affinity(
        R"({"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"db"}},"topologyKey":"zone"}]}})");
  else if (kind == 2)
    p.spread(R"({"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"web"}}})");
  return p;
}

}  // namespace

TEST_CASE("every placement satisfies every filter recomputed from scratch", "[property]") {
  auto fw = Framework::create(default_profile()).value();
  int placed = 0, refused = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    World w = random_world(rng);
    auto snap = ClusterSnapshot::build(w.nodes, w.pods);
    Fork plan(snap);
    PlacementCache cache(snap);
    const std::vector<int> all = all_nodes(snap);
    std::vector<PodPtr> accepted = w.pods;
    for (int i = 0; i < 8; ++i) {
      PodPtr pod = random_incoming(rng, i);
      Fork attempt = plan.fork();
      auto p = fw.place(*pod, attempt, all, i % 2 ? &cache : nullptr);
      if (p.node < 0) {
        ++refused;
        continue;
      }
      ++placed;
      // A fresh snapshot with everything accepted so far: every filter must agree.
      auto fresh = ClusterSnapshot::build(w.nodes, accepted);
      Fork fresh_fork(fresh);
      for (const auto& [plugin, status] : fw.check(*pod, fresh_fork, p.node)) {
        INFO("seed " << seed << ", pod " << i << ", node " << snap.node(p.node).name << ", plugin " << plugin << ": "
                     << (status.reasons.empty() ? "" : status.reasons[0]));
        CHECK(status.ok());
      }
      model::Pod bound = *pod;
      bound.node_name = model::InternedString(snap.node(p.node).name);
      auto bound_ptr = std::make_shared<const model::Pod>(std::move(bound));
      attempt.add_pod(p.node, bound_ptr);
      plan.commit(std::move(attempt));
      accepted.push_back(bound_ptr);
    }
  }
  CHECK(placed > 500);
  CHECK(refused > 100);  // the generator makes both outcomes common
}
