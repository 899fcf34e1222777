// One table per filter; each case's name states the kube-scheduler rule it checks.

#include "sched/plugins.hpp"
#include "builders.hpp"
#include "sched/fork.hpp"
#include "sched/framework.hpp"
#include "support/catch.hpp"

#include <fmt/format.h>

#include <cmath>
#include <random>

using namespace spotshift;
using namespace spotshift::sched;
using namespace spotshift::sched::testing;

namespace {

struct Case {
  const char* rule;
  std::vector<NodePtr> nodes;
  std::vector<PodPtr> existing;
  PodPtr pod;
  const char* node;     // the node to check
  const char* verdict;  // "" for success, else the reason
};

// Runs just one filter and returns its first reason ("" when it passes).
std::string verdict(const std::string& filter, const Case& c) {
  auto snap = ClusterSnapshot::build(c.nodes, c.existing);
  Fork fork(snap);
  ProfileConfig p;
  p.filters = {filter};
  auto fw = Framework::create(p).value();
  auto results = fw.check(*c.pod, fork, *snap.index_of(c.node));
  const Status& s = results.at(0).second;
  return s.ok() ? "" : std::string(s.reasons.at(0));
}

void run_table(const std::string& filter, const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    INFO(filter << ": " << c.rule);
    CHECK(verdict(filter, c) == c.verdict);
  }
}

}  // namespace

TEST_CASE("round_half_away() rounds as std::llround does", "[plugins]") {
  // Halves and the doubles next to them, and values past 2^52, where every double is whole;
  // each with both signs.
  std::vector<double> xs = {0.49999999999999994, 4503599627370495.5, 4503599627370497.0, 9007199254740993.0, 1e18};
  for (double x : {0.0, 0.5, 1.5, 2.5, 1e6 + 0.5, 12345.5}) xs.insert(xs.end(), {x, std::nextafter(x, 0.0), std::nextafter(x, 1e30)});
  for (size_t i = 0, n = xs.size(); i < n; ++i) xs.push_back(-xs[i]);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> wide(-1e15, 1e15), narrow(-3, 3);
  for (int i = 0; i < 100000; ++i) {
    xs.push_back(wide(rng));
    xs.push_back(narrow(rng));
    xs.push_back(std::round(narrow(rng) * 4) / 4);  // quarters: halves among them
  }
  for (double x : xs) {
    INFO(fmt::format("{:.17g}", x));
    REQUIRE(round_half_away(x) == std::llround(x));
  }
}

TEST_CASE("scores normalise to 0..100 over the nodes, as each node's score alone would", "[plugins]") {
  // Against the formula written out, value by value: lists of every length up to 9 and some
  // longer, equal values, negatives, and values beyond 2^51 (normalised another way).
  std::mt19937_64 rng(3);
  auto one = [](const std::vector<int64_t>& raw, size_t k, bool lower_better) {
    const auto [lo, hi] = std::minmax_element(raw.begin(), raw.end());
    const auto min = static_cast<double>(*lo), max = static_cast<double>(*hi), v = static_cast<double>(raw[k]);
    return max == min ? 100.0 : 100.0 * (lower_better ? max - v : v - min) / (max - min);
  };
  int lists = 0;
  for (int round = 0; round < 3000; ++round) {
    const size_t size = round % 50 < 10 ? static_cast<size_t>(round % 50) : 1 + rng() % 300;
    const int64_t spread = std::vector<int64_t>{
        0, 1, 7, 1000, int64_t(1) << 40, (int64_t(1) << 51) - 1, int64_t(1) << 53, std::numeric_limits<int64_t>::max() / 2}[rng() % 8];
    std::vector<int64_t> raw(size);
    for (auto& v : raw) v = spread == 0 ? 5 : static_cast<int64_t>(rng() % (2 * static_cast<uint64_t>(spread) + 1)) - spread;
    if (size > 0 && rng() % 4 == 0) raw[rng() % size] = rng() % 2 ? -(int64_t(1) << 51) : (int64_t(1) << 51);  // at the edges
    for (const bool lower_better : {true, false}) {
      std::vector<double> out(size, -1);
      (lower_better ? scale_lower_better : scale_higher_better)(raw, out);
      for (size_t k = 0; k < size; ++k) {
        INFO(fmt::format("round {} value {} of {}: {}", round, k, size, raw[k]));
        REQUIRE(out[k] == one(raw, k, lower_better));
      }
    }
    lists += size > 0;
  }
  CHECK(lists > 2900);
}

// One row per case, as the rules read: laid out by hand.
// clang-format off
TEST_CASE("NodeUnschedulable", "[plugins]") {
  run_table("NodeUnschedulable", {
      {"a schedulable node admits any pod", {make_node("a")}, {}, make_pod("p"), "a", ""},
      {"a cordoned node refuses pods", {make_node("a").unschedulable()}, {}, make_pod("p"), "a", "node(s) were unschedulable"},
      {"a pod tolerating the unschedulable taint may use a cordoned node", {make_node("a").unschedulable()}, {},
       make_pod("p").toleration(R"({"key":"node.kubernetes.io/unschedulable","operator":"Exists","effect":"NoSchedule"})"), "a", ""},
  });
}

TEST_CASE("NodeConditions", "[plugins]") {
  run_table("NodeConditions", {
      {"a Ready node admits pods", {make_node("a")}, {}, make_pod("p"), "a", ""},
      {"a NotReady node refuses pods", {make_node("a").condition("Ready", "False")}, {}, make_pod("p"), "a", "node(s) were not ready"},
      {"an Unknown Ready condition refuses pods", {make_node("a").condition("Ready", "Unknown")}, {}, make_pod("p"), "a", "node(s) were not ready"},
      {"memory pressure refuses BestEffort pods", {make_node("a").condition("MemoryPressure", "True")}, {}, make_pod("p").best_effort(), "a",
       "node(s) had memory pressure"},
      {"memory pressure admits pods with requests", {make_node("a").condition("MemoryPressure", "True")}, {}, make_pod("p"), "a", ""},
      {"disk pressure refuses pods", {make_node("a").condition("DiskPressure", "True")}, {}, make_pod("p"), "a", "node(s) had disk pressure"},
      {"PID pressure refuses pods", {make_node("a").condition("PIDPressure", "True")}, {}, make_pod("p"), "a", "node(s) had PID pressure"},
      {"an unavailable network refuses pods", {make_node("a").condition("NetworkUnavailable", "True")}, {}, make_pod("p"), "a",
       "node(s) had unavailable network"},
  });
}

TEST_CASE("NodeName", "[plugins]") {
  run_table("NodeName", {
      {"a pod without nodeName may go anywhere", {make_node("a")}, {}, make_pod("p"), "a", ""},
      {"a pod with nodeName goes only there", {make_node("a"), make_node("b")}, {}, make_pod("p").on("a"), "b",
       "node(s) didn't match the requested node name"},
      {"a pod with nodeName fits its node", {make_node("a")}, {}, make_pod("p").on("a"), "a", ""},
  });
}

TEST_CASE("NodeResourcesFit", "[plugins]") {
  run_table("NodeResourcesFit", {
      {"requests within allocatable fit", {make_node("a").cpu("1")}, {make_pod("e").cpu("500m").on("a")}, make_pod("p").cpu("500m"), "a", ""},
      {"cpu beyond allocatable is insufficient", {make_node("a").cpu("1")}, {make_pod("e").cpu("600m").on("a")}, make_pod("p").cpu("500m"),
       "a", "Insufficient cpu"},
      {"memory beyond allocatable is insufficient", {make_node("a").memory("1Gi")}, {}, make_pod("p").memory("2Gi"), "a",
       "Insufficient memory"},
      {"the pod count is a resource", {make_node("a").pods(1)}, {make_pod("e").on("a")}, make_pod("p"), "a", "Too many pods"},
      {"extended resources must be available", {make_node("a").scalar("nvidia.com/gpu", "1")}, {make_pod("e").scalar("nvidia.com/gpu", "1").on("a")},
       make_pod("p").scalar("nvidia.com/gpu", "1"), "a", "Insufficient nvidia.com/gpu"},
      {"an extended resource the node lacks is insufficient", {make_node("a")}, {}, make_pod("p").scalar("example.com/fpga", "1"), "a",
       "Insufficient example.com/fpga"},
      {"terminal pods use nothing", {make_node("a").cpu("1")}, {make_pod("done").cpu("1").on("a").phase("Succeeded")},
       make_pod("p").cpu("1"), "a", ""},
      // Requests beyond int64 saturate; their sums must not wrap around to a node that looks empty.
      {"a request beyond int64 keeps its node full", {make_node("a").cpu("4")},
       {make_pod("huge").cpu("1e20").on("a"), make_pod("e").cpu("250m").on("a")}, make_pod("p").cpu("1"), "a", "Insufficient cpu"},
      {"a pod asking beyond int64 fits nowhere", {make_node("a").cpu("4")}, {make_pod("e").cpu("1").on("a")},
       make_pod("p").cpu("1e20"), "a", "Insufficient cpu"},
      {"an extended request beyond int64 keeps its node full", {make_node("a").scalar("nvidia.com/gpu", "4")},
       {make_pod("huge").scalar("nvidia.com/gpu", "1e20").on("a")}, make_pod("p").scalar("nvidia.com/gpu", "1"), "a",
       "Insufficient nvidia.com/gpu"},
      {"a pod asking beyond int64 of an extended resource fits nowhere", {make_node("a").scalar("nvidia.com/gpu", "4")}, {},
       make_pod("p").scalar("nvidia.com/gpu", "1e20"), "a", "Insufficient nvidia.com/gpu"},
  });
}

TEST_CASE("TaintToleration", "[plugins]") {
  run_table("TaintToleration", {
      {"an untainted node admits any pod", {make_node("a")}, {}, make_pod("p"), "a", ""},
      {"a NoSchedule taint refuses pods that do not tolerate it", {make_node("a").taint("dedicated", "gpu", "NoSchedule")}, {}, make_pod("p"),
       "a", "node(s) had untolerated taint {dedicated: gpu}"},
      {"a NoExecute taint refuses pods too", {make_node("a").taint("k", "v", "NoExecute")}, {}, make_pod("p"), "a",
       "node(s) had untolerated taint {k: v}"},
      {"a PreferNoSchedule taint only scores", {make_node("a").taint("k", "v", "PreferNoSchedule")}, {}, make_pod("p"), "a", ""},
      {"an Equal toleration with the right value tolerates", {make_node("a").taint("dedicated", "gpu", "NoSchedule")}, {},
       make_pod("p").toleration(R"({"key":"dedicated","value":"gpu","effect":"NoSchedule"})"), "a", ""},
      {"an Exists toleration with an empty key tolerates everything", {make_node("a").taint("k", "v", "NoExecute")}, {},
       make_pod("p").toleration(R"({"operator":"Exists"})"), "a", ""},
  });
}

TEST_CASE("NodeAffinity", "[plugins]") {
  std::string spot_only = R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
      {"matchExpressions":[{"key":"capacity","operator":"In","values":["spot"]}]},
      {"matchFields":[{"key":"metadata.name","operator":"In","values":["special"]}]}]}}})";
  run_table("NodeAffinity", {
      {"nodeSelector labels must all match", {make_node("a").label("disk", "ssd")}, {}, make_pod("p").selector("disk", "ssd"), "a", ""},
      {"a missing nodeSelector label refuses", {make_node("a")}, {}, make_pod("p").selector("disk", "ssd"), "a",
       "node(s) didn't match Pod's node affinity/selector"},
      {"required terms are ORed: the first matches", {make_node("a").label("capacity", "spot")}, {}, make_pod("p").affinity(spot_only), "a", ""},
      {"required terms are ORed: matchFields on the name", {make_node("special")}, {}, make_pod("p").affinity(spot_only), "special", ""},
      {"no term matching refuses", {make_node("a").label("capacity", "on-demand")}, {}, make_pod("p").affinity(spot_only), "a",
       "node(s) didn't match Pod's node affinity/selector"},
  });
}

TEST_CASE("NodePorts", "[plugins]") {
  run_table("NodePorts", {
      {"a free host port fits", {make_node("a")}, {make_pod("e").host_port(80).on("a")}, make_pod("p").host_port(8080), "a", ""},
      {"a host port in use conflicts", {make_node("a")}, {make_pod("e").host_port(80).on("a")}, make_pod("p").host_port(80), "a",
       "node(s) didn't have free ports for the requested pod ports"},
  });
}

TEST_CASE("InterPodAffinity", "[plugins]") {
  auto anti = R"({"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"zone"}]}})";
  auto with_db = R"({"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"db"}},"topologyKey":"zone"}]}})";
  auto self = R"({"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"zone"}]}})";
  std::vector<NodePtr> zones = {make_node("a1").label("zone", "a"), make_node("a2").label("zone", "a"), make_node("b1").label("zone", "b")};
  run_table("InterPodAffinity", {
      {"anti-affinity refuses a domain holding a matching pod", zones, {make_pod("w").label("app", "web").on("a1")},
       make_pod("p").label("app", "web").affinity(anti), "a2", "node(s) didn't match pod anti-affinity rules"},
      {"anti-affinity admits another domain", zones, {make_pod("w").label("app", "web").on("a1")}, make_pod("p").label("app", "web").affinity(anti),
       "b1", ""},
      {"an existing pod's anti-affinity refuses the incoming pod (symmetry)", zones, {make_pod("w").label("app", "web").affinity(anti).on("a1")},
       make_pod("p").label("app", "web"), "a2", "node(s) didn't satisfy existing pods anti-affinity rules"},
      {"anti-affinity only counts pods in the term's namespaces", zones, {make_pod("w").ns("other").label("app", "web").on("a1")},
       make_pod("p").label("app", "web").affinity(anti), "a2", ""},
      {"affinity needs a matching pod in the domain", zones, {make_pod("d").label("app", "db").on("b1")}, make_pod("p").affinity(with_db), "a1",
       "node(s) didn't match pod affinity rules"},
      {"affinity is satisfied in the matching pod's domain", zones, {make_pod("d").label("app", "db").on("b1")}, make_pod("p").affinity(with_db),
       "b1", ""},
      {"the first pod of a group matching its own affinity may go anywhere", zones, {}, make_pod("p").label("app", "web").affinity(self), "a1", ""},
      {"affinity refuses a node without the topology key", {make_node("nokey")}, {make_pod("d").label("app", "db").on("nokey")},
       make_pod("p").affinity(with_db), "nokey", "node(s) didn't match pod affinity rules"},
  });
}

TEST_CASE("PodTopologySpread", "[plugins]") {
  auto spread = R"({"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"web"}}})";
  auto min3 = R"({"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule","minDomains":3,"labelSelector":{"matchLabels":{"app":"web"}}})";
  std::vector<NodePtr> zones = {make_node("a1").label("zone", "a"), make_node("b1").label("zone", "b"), make_node("nokey")};
  std::vector<PodPtr> one_in_a = {make_pod("w1").label("app", "web").on("a1")};
  run_table("PodTopologySpread", {
      {"a domain at the minimum admits the pod", zones, one_in_a, make_pod("p").label("app", "web").spread(spread), "b1", ""},
      {"a domain one above the minimum would exceed maxSkew 1", zones, one_in_a, make_pod("p").label("app", "web").spread(spread), "a1",
       "node(s) didn't match pod topology spread constraints"},
      {"a node without the topology key is refused", zones, one_in_a, make_pod("p").label("app", "web").spread(spread), "nokey",
       "node(s) didn't match pod topology spread constraints (missing required label)"},
      {"with minDomains above the eligible domains the minimum is zero", zones, {make_pod("w1").label("app", "web").on("b1")},
       make_pod("p").label("app", "web").spread(min3), "b1", "node(s) didn't match pod topology spread constraints"},
      {"a pod not matching its own selector does not count itself", zones, one_in_a, make_pod("p").label("app", "other").spread(spread), "a1", ""},
  });
}

TEST_CASE("VolumeZone", "[plugins]") {
  VolumeRequirements zones = {{"default/data", {{"topology.kubernetes.io/zone", "a"}}}};
  std::vector<NodePtr> nodes = {make_node("a1").label("topology.kubernetes.io/zone", "a"), make_node("b1").label("topology.kubernetes.io/zone", "b")};
  auto snap = ClusterSnapshot::build(nodes, {}, zones);
  Fork fork(snap);
  ProfileConfig p;
  p.filters = {"VolumeZone"};
  auto fw = Framework::create(p).value();
  PodPtr pod = make_pod("p").pvc("data");
  CHECK(fw.check(*pod, fork, 0)[0].second.ok());
  CHECK(fw.check(*pod, fork, 1)[0].second.reasons.at(0) == "node(s) had volume node affinity conflict");
  PodPtr unknown = make_pod("q").pvc("other");  // a claim nothing is known about is not a constraint
  CHECK(fw.check(*unknown, fork, 1)[0].second.ok());
}

TEST_CASE("NodeResourcesFit gives the same verdict over many nodes as node by node", "[plugins]") {
  // place() runs the batch form; check() the single-node one. They must agree, including on an
  // overcommitted node, which still takes a pod that asks for none of the exceeded resource.
  auto snap = ClusterSnapshot::build(
      {make_node("full-cpu").cpu("1").memory("4Gi"), make_node("full-memory").cpu("4").memory("1Gi"),
       make_node("full-pods").cpu("4").memory("4Gi").pods(1), make_node("roomy").cpu("4").memory("4Gi"),
       make_node("gpu").cpu("4").memory("4Gi").scalar("nvidia.com/gpu", "1")},
      {make_pod("e1").cpu("1500m").memory("0").on("full-cpu"), make_pod("e2").cpu("0").memory("1536Mi").on("full-memory"),
       make_pod("e3").cpu("0").memory("0").on("full-pods")});
  Fork fork(snap);
  ProfileConfig p;
  p.filters = {"NodeResourcesFit"};
  auto fw = Framework::create(p).value();
  std::vector<PodPtr> pods = {make_pod("none").cpu("0").memory("0"), make_pod("cpu").cpu("500m").memory("0"),
                              make_pod("memory").cpu("0").memory("256Mi"), make_pod("both").cpu("500m").memory("256Mi"),
                              make_pod("best-effort").best_effort(), make_pod("gpu").cpu("100m").scalar("nvidia.com/gpu", "1")};
  for (const auto& pod : pods) {
    INFO(pod->meta.name);
    std::vector<int> one_by_one;
    for (int n = 0; n < snap.size(); ++n)
      if (fw.check(*pod, fork, n).at(0).second.ok()) one_by_one.push_back(n);
    CHECK(fw.place(*pod, fork, all_nodes(snap)).feasible == one_by_one);
  }
  auto names = [&](const PodPtr& pod) {
    std::vector<std::string> out;
    for (int n : fw.place(*pod, fork, all_nodes(snap)).feasible) out.push_back(snap.node(n).name);
    return out;
  };
  CHECK(names(pods[0]) == std::vector<std::string>{"full-cpu", "full-memory", "gpu", "roomy"});
  CHECK(names(pods[1]) == std::vector<std::string>{"full-memory", "gpu", "roomy"});
  CHECK(names(pods[2]) == std::vector<std::string>{"full-cpu", "gpu", "roomy"});
  CHECK(names(pods[5]) == std::vector<std::string>{"gpu"});
}
// clang-format on
