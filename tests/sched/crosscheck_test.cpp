// The engine against kubesim's scheduler, which is written independently: for the features both
// implement (resources and pod counts, extended resources, taints, nodeSelector, required node
// affinity, cordons, readiness, host ports), kubesim binds every pod to the node the engine
// proposes, and finds no node for a pod the engine places nowhere.

#include "builders.hpp"
#include "sched/fork.hpp"
#include "sched/framework.hpp"
#include "test_cluster.hpp"

#include <random>

using namespace spotshift;
using namespace spotshift::sched;
using namespace spotshift::sched::testing;

namespace {
ProfileConfig shared_features() {
  ProfileConfig p;
  p.filters = {"NodeUnschedulable", "NodeConditions", "NodeName", "TaintToleration", "NodeAffinity", "NodeResourcesFit", "NodePorts"};
  p.scores = {ScoreConfig{"FreeCPU", 1, {}}};
  return p;
}
}  // namespace

TEST_CASE("kubesim's scheduler accepts every placement the engine proposes", "[crosscheck]") {
  auto fw = Framework::create(shared_features()).value();
  int agreed_placed = 0, agreed_nowhere = 0;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    std::vector<NodeBuilder> node_builders;
    for (int i = 0; i < 4 + pick(4); ++i) {
      auto n = make_node(fmt::format("n{}", i)).cpu(std::to_string(1 + pick(3))).pods(2 + pick(3));
      n.label("pool", pick(2) ? "spot" : "od");
      if (pick(3) == 0) n.scalar("nvidia.com/gpu", std::to_string(pick(3)));
      if (pick(4) == 0) n.taint("dedicated", "gpu", "NoSchedule");
      if (pick(8) == 0) n.unschedulable();
      if (pick(10) == 0) n.condition("Ready", "False");
      node_builders.push_back(n);
    }
    std::string scenario;
    std::vector<NodePtr> nodes;
    for (const auto& n : node_builders) {
      scenario += "---\n" + n.json() + "\n";
      nodes.push_back(n.build());
    }
    kubesim::ClusterOptions o;
    o.kubelet = false;
    kubesim::testing::TestCluster sim(o, scenario);
    std::vector<PodPtr> placed_pods;
    for (int i = 0; i < 12; ++i) {
      auto b = make_pod(fmt::format("p{}", i)).cpu(fmt::format("{}m", 200 + 200 * pick(5)));
      if (pick(3) == 0) b.toleration(R"({"key":"dedicated","operator":"Exists"})");
      if (pick(3) == 0) b.selector("pool", "spot");
      if (pick(4) == 0) b.host_port(9000 + pick(2));
      if (pick(5) == 0) b.scalar("nvidia.com/gpu", "1");
      if (pick(5) == 0)
        b.affinity(
            R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"NotIn","values":["od"]}]}]}}})");
      PodPtr pod = b.build();
      auto snap = ClusterSnapshot::build(nodes, placed_pods);
      Fork fork(snap);
      std::vector<int> all;
      for (int k = 0; k < snap.size(); ++k) all.push_back(k);
      auto placement = fw.place(*pod, fork, all);
      kubesim::Doc d;
      d.Parse(b.json().c_str());
      if (placement.node >= 0) {
        // Only the proposed node is allowed; kubesim must find it feasible.
        std::string node = snap.node(placement.node).name;
        kubesim::set_str(kubesim::ensure_object(*kubesim::get_mut(d, "spec"), "nodeSelector", d.GetAllocator()), "kubernetes.io/hostname",
                         node, d.GetAllocator());
        REQUIRE(sim.cluster().create(*sim.cluster().registry().pods(), "default", std::move(d)));
        sim.settle();
        auto stored = sim.pod(fmt::format("default/p{}", i));
        INFO("seed " << seed << " pod " << i << " proposed " << node << ": "
                     << kubesim::to_json(*kubesim::json_path(stored->doc, {"status"})));
        CHECK(kubesim::json_string(stored->doc, {"spec", "nodeName"}) == node);
        model::Pod bound = *pod;
        bound.node_name = model::InternedString(node);
        placed_pods.push_back(std::make_shared<const model::Pod>(std::move(bound)));
        ++agreed_placed;
      } else {
        REQUIRE(sim.cluster().create(*sim.cluster().registry().pods(), "default", std::move(d)));
        sim.settle();
        auto stored = sim.pod(fmt::format("default/p{}", i));
        INFO("seed " << seed << " pod " << i << " engine: " << placement.diagnosis.message());
        CHECK(kubesim::json_string(stored->doc, {"spec", "nodeName"}).empty());
        // Keep the worlds equal: the pod waits, unscheduled, in both.
        sim.request("DELETE", fmt::format("/api/v1/namespaces/default/pods/p{}", i));
        ++agreed_nowhere;
      }
    }
  }
  CHECK(agreed_placed > 150);
  CHECK(agreed_nowhere > 40);
}
