// The whole-node planner, including the cases from k8s-spot-rescheduler's test suite.

#include "drain/planner.hpp"
#include "drain/plan_format.hpp"
#include "helpers.hpp"
#include "model/volume.hpp"
#include "support/catch.hpp"

using namespace spotshift;
using namespace spotshift::drain;
using namespace spotshift::drain::testing;

namespace {

// Spot nodes of 1 CPU with 700m, 300m and 100m free.
void add_spot_700_300_100(PlanInput& in) {
  in.nodes.push_back(spot("spot-a").cpu("1"));
  in.nodes.push_back(spot("spot-b").cpu("1"));
  in.nodes.push_back(spot("spot-c").cpu("1"));
  in.pods.push_back(replica("fill-a", "fill").cpu("300m").on("spot-a"));
  in.pods.push_back(replica("fill-b", "fill").cpu("700m").on("spot-b"));
  in.pods.push_back(replica("fill-c", "fill").cpu("900m").on("spot-c"));
}

std::map<std::string, std::string> targets(const NodePlan& n) {
  std::map<std::string, std::string> out;
  for (const auto& m : n.moves) out[m.pod->name()] = m.target;
  return out;
}

std::string all_reasons(const Plan& plan, const std::string& node) {
  for (const auto& u : plan.undrainable)
    if (u.node == node) {
      std::string s;
      for (const auto& r : u.reasons) s += r + "\n";
      return s;
    }
  return "(drainable)";
}

PolicySpec flipped_spec() {
  return spec_from(R"({"profile":{"scores":[{"name":"FreeCPU","weight":1,"args":{"order":"emptiest"}}]}})").value();
}

}  // namespace

TEST_CASE("moving 500, 300, 100, 100, 100 m onto 700, 300, 100 m free succeeds", "[planner]") {
  PlanInput in;
  add_spot_700_300_100(in);
  in.nodes.push_back(on_demand("od-1").cpu("2"));
  for (auto [name, cpu] : std::vector<std::pair<std::string, std::string>>{
           {"p500", "500m"}, {"p300", "300m"}, {"p100a", "100m"}, {"p100b", "100m"}, {"p100c", "100m"}})
    in.pods.push_back(replica(name, name).cpu(cpu).on("od-1"));
  Plan plan = make_plan(in, default_policy_spec());
  INFO(plan_to_table(plan));
  REQUIRE(plan.drainable.size() == 1);
  CHECK(plan.drainable[0].node == "od-1");
  auto t = targets(plan.drainable[0]);
  CHECK(t["p500"] == "spot-a");
  CHECK(t["p300"] == "spot-b");
  // The fullest spot node that fits takes each 100m pod: spot-c first, then what is left of spot-a.
  CHECK(t["p100a"] == "spot-c");
  CHECK(t["p100b"] == "spot-a");
  CHECK(t["p100c"] == "spot-a");
  // Largest request first.
  CHECK(plan.drainable[0].moves[0].pod->name() == "p500");
}

TEST_CASE("moving 500, 400, 100, 100, 100 m onto 700, 300, 100 m free fails and moves nothing", "[planner]") {
  PlanInput in;
  add_spot_700_300_100(in);
  in.nodes.push_back(on_demand("od-1").cpu("2"));
  for (auto [name, cpu] : std::vector<std::pair<std::string, std::string>>{
           {"p500", "500m"}, {"p400", "400m"}, {"p100a", "100m"}, {"p100b", "100m"}, {"p100c", "100m"}})
    in.pods.push_back(replica(name, name).cpu(cpu).on("od-1"));
  Plan plan = make_plan(in, default_policy_spec());
  CHECK(plan.drainable.empty());
  CHECK(plan.summary.pods_to_move == 0);
  std::string reasons = all_reasons(plan, "od-1");
  CHECK(reasons.find("fits on no spot node: 0/3 nodes are available: 3 Insufficient cpu.") != std::string::npos);
}

TEST_CASE("on-demand nodes are tried by requested CPU, least first, whatever their names", "[planner]") {
  PlanInput in;
  in.nodes.push_back(spot("spot-1").cpu("8"));
  in.nodes.push_back(on_demand("od-a").cpu("4"));
  in.nodes.push_back(on_demand("od-b").cpu("4"));
  in.pods.push_back(replica("big", "big").cpu("1200m").on("od-a"));
  in.pods.push_back(replica("small", "small").cpu("400m").on("od-b"));
  Plan plan = make_plan(in, default_policy_spec());
  REQUIRE(plan.drainable.size() == 2);
  CHECK(plan.drainable[0].node == "od-b");
  CHECK(plan.drainable[0].requested_cpu_milli == 400);
  CHECK(plan.drainable[1].node == "od-a");
}

TEST_CASE("a pod goes to the fullest spot node that fits by default, to the emptiest with FreeCPU flipped", "[planner]") {
  PlanInput in;
  in.nodes.push_back(spot("spot-x").cpu("4"));  // 3000m free
  in.nodes.push_back(spot("spot-y").cpu("2"));  // 1000m free
  in.nodes.push_back(spot("spot-z").cpu("1"));  // 300m free: too little
  in.pods.push_back(replica("fx", "fill").cpu("1").on("spot-x"));
  in.pods.push_back(replica("fy", "fill").cpu("1").on("spot-y"));
  in.pods.push_back(replica("fz", "fill").cpu("700m").on("spot-z"));
  in.nodes.push_back(on_demand("od-1"));
  in.pods.push_back(replica("p", "p").cpu("500m").on("od-1"));

  Plan fullest = make_plan(in, default_policy_spec());
  REQUIRE(fullest.drainable.size() == 1);
  CHECK(targets(fullest.drainable[0])["p"] == "spot-y");
  CHECK(fullest.spot_nodes == std::vector<std::string>{"spot-z", "spot-y", "spot-x"});

  Plan emptiest = make_plan(in, flipped_spec());
  REQUIRE(emptiest.drainable.size() == 1);
  CHECK(targets(emptiest.drainable[0])["p"] == "spot-x");
  CHECK(emptiest.spot_nodes == std::vector<std::string>{"spot-x", "spot-y", "spot-z"});
}

TEST_CASE("two pods under a budget allowing one disruption make the node undrainable, and the next node is tried", "[planner]") {
  PlanInput in;
  in.nodes.push_back(spot("spot-1").cpu("8"));
  in.nodes.push_back(on_demand("od-1"));
  in.nodes.push_back(on_demand("od-2"));
  in.pods.push_back(replica("web-1", "web").cpu("200m").on("od-1"));
  in.pods.push_back(replica("web-2", "web").cpu("200m").on("od-1"));
  in.pods.push_back(replica("api-1", "api").cpu("1").on("od-2"));
  in.pdbs.push_back(make_pdb("web-pdb", "default", "web", 1));
  Plan plan = make_plan(in, default_policy_spec());
  REQUIRE(plan.drainable.size() == 1);
  CHECK(plan.drainable[0].node == "od-2");
  CHECK(all_reasons(plan, "od-1") ==
        "PodDisruptionBudget default/web-pdb allows 1 disruption now, and draining this node needs 2 (web-1, web-2)\n");
}

TEST_CASE("budget-covered pods are evicted first", "[planner]") {
  PlanInput in;
  in.nodes.push_back(spot("spot-1").cpu("8"));
  in.nodes.push_back(on_demand("od-1"));
  in.pods.push_back(replica("a-big", "free").cpu("1").on("od-1"));
  in.pods.push_back(replica("web-1", "web").cpu("100m").on("od-1"));
  in.pdbs.push_back(make_pdb("web-pdb", "default", "web", 1));
  Plan plan = make_plan(in, default_policy_spec());
  REQUIRE(plan.drainable.size() == 1);
  REQUIRE(plan.drainable[0].moves.size() == 2);
  CHECK(plan.drainable[0].moves[0].pod->name() == "web-1");
  CHECK(plan.drainable[0].moves[0].budgets == std::vector<std::string>{"default/web-pdb"});
  CHECK(plan.drainable[0].moves[1].pod->name() == "a-big");
}

TEST_CASE("later nodes see the placements of earlier ones", "[planner]") {
  PlanInput in;
  in.nodes.push_back(spot("spot-1").cpu("1"));
  in.nodes.push_back(on_demand("od-1"));
  in.nodes.push_back(on_demand("od-2"));
  in.pods.push_back(replica("a", "a").cpu("600m").on("od-1"));
  in.pods.push_back(replica("b", "b").cpu("700m").on("od-2"));
  Plan plan = make_plan(in, default_policy_spec());
  REQUIRE(plan.drainable.size() == 1);
  CHECK(plan.drainable[0].node == "od-1");
  CHECK(all_reasons(plan, "od-2").find("pod default/b fits on no spot node: 0/1 nodes are available: 1 Insufficient cpu.") !=
        std::string::npos);
}

TEST_CASE("every blocking reason of a node is reported", "[planner]") {
  PlanInput in;
  in.nodes.push_back(spot("spot-1").cpu("1"));
  in.nodes.push_back(on_demand("od-1"));
  in.pods.push_back(make_pod("bare").on("od-1"));
  in.pods.push_back(replica("pinned", "billing").selector("karpenter.sh/capacity-type", "on-demand").on("od-1"));
  in.pods.push_back(replica("huge", "huge").cpu("3").on("od-1"));
  in.pods.push_back(make_pod("agent").owner("DaemonSet", "agent").on("od-1"));
  Plan plan = make_plan(in, default_policy_spec());
  CHECK(plan.drainable.empty());
  std::string reasons = all_reasons(plan, "od-1");
  CHECK(reasons.find("pod default/bare: has no controller") != std::string::npos);
  CHECK(reasons.find("pod default/pinned: pinned to on-demand") != std::string::npos);
  CHECK(reasons.find("pod default/huge fits on no spot node") != std::string::npos);
  CHECK(reasons.find("agent") == std::string::npos);  // DaemonSet pods stay and block nothing
}

TEST_CASE("nodes are classified by the policy's selectors, Ready and schedulable", "[planner]") {
  PlanInput in;
  in.nodes.push_back(spot("spot-1").cpu("8"));
  in.nodes.push_back(spot("spot-cordoned").cpu("8").unschedulable());
  in.nodes.push_back(spot("spot-notready").cpu("8").condition("Ready", "False"));
  in.nodes.push_back(on_demand("both").label("node-role.kubernetes.io/spot-worker", ""));
  in.nodes.push_back(on_demand("od-cordoned").unschedulable());
  in.nodes.push_back(on_demand("od-ok"));
  in.nodes.push_back(make_node("unrelated"));
  for (auto n : {"both", "od-cordoned", "od-ok", "unrelated"}) in.pods.push_back(replica(std::string("p-") + n).on(n));
  in.pods.push_back(make_pod("agent").owner("DaemonSet", "agent").on("od-ok"));

  Plan plan = make_plan(in, default_policy_spec());
  CHECK(plan.spot_nodes == std::vector<std::string>{"spot-1"});
  CHECK(plan.summary.on_demand_nodes == 1);
  REQUIRE(plan.drainable.size() == 1);
  CHECK(plan.drainable[0].node == "od-ok");
  CHECK(plan.drainable[0].skipped == std::vector<std::string>{"default/agent: owned by DaemonSet agent"});
  CHECK(all_reasons(plan, "both").find("matches both") != std::string::npos);
  CHECK(all_reasons(plan, "od-cordoned").find("cordoned") != std::string::npos);
  CHECK(all_reasons(plan, "unrelated") == "(drainable)");  // not listed at all
  for (const auto& t : targets(plan.drainable[0])) CHECK(t.second == "spot-1");
}

TEST_CASE("with every spot node cordoned or NotReady, each node says there is none, not that its pods are pinned", "[planner]") {
  PlanInput in;
  in.nodes.push_back(spot("spot-cordoned").cpu("8").unschedulable());
  in.nodes.push_back(spot("spot-notready").cpu("8").condition("Ready", "False"));
  in.nodes.push_back(on_demand("od-1"));
  in.pods.push_back(replica("a", "a").on("od-1"));
  in.pods.push_back(replica("b", "b").on("od-1"));
  Plan plan = make_plan(in, default_policy_spec());
  CHECK(plan.drainable.empty());
  CHECK(all_reasons(plan, "od-1") == "no Ready, schedulable node matches the spotNodeSelector\n");

  // One usable spot node that a pod's selector rules out: that pod is pinned.
  in.nodes.push_back(spot("spot-1").cpu("8"));
  in.pods.push_back(replica("c", "c").selector("disk", "ssd").on("od-1"));
  Plan pinned = make_plan(in, default_policy_spec());
  CHECK(all_reasons(pinned, "od-1").find("pod default/c: pinned to on-demand") != std::string::npos);
}

TEST_CASE("custom selectors, excluded nodes, empty nodes and the single-node re-check", "[planner]") {
  PolicySpec spec = spec_from(R"({"onDemandNodeSelector":{"matchLabels":{"karpenter.sh/capacity-type":"on-demand"}},
                                  "spotNodeSelector":{"matchLabels":{"karpenter.sh/capacity-type":"spot"}}})")
                        .value();
  PlanInput in;
  in.nodes.push_back(make_node("s1").label("karpenter.sh/capacity-type", "spot"));
  in.nodes.push_back(make_node("o1").label("karpenter.sh/capacity-type", "on-demand"));
  in.nodes.push_back(make_node("o2").label("karpenter.sh/capacity-type", "on-demand"));
  in.nodes.push_back(make_node("o3").label("karpenter.sh/capacity-type", "on-demand"));
  in.pods.push_back(replica("a", "a").on("o1"));
  in.pods.push_back(replica("b", "b").cpu("200m").on("o2"));
  in.pods.push_back(make_pod("agent").owner("DaemonSet", "agent").on("o3"));
  in.excluded["o1"] = "also selected as on-demand by policy other";

  Plan plan = make_plan(in, spec);
  REQUIRE(plan.drainable.size() == 1);
  CHECK(plan.drainable[0].node == "o2");
  CHECK(all_reasons(plan, "o1") == "also selected as on-demand by policy other\n");
  CHECK(all_reasons(plan, "o3").find("nothing to move") != std::string::npos);

  in.excluded.clear();
  in.only_node = "o2";
  Plan one = make_plan(in, spec);
  REQUIRE(one.drainable.size() == 1);
  CHECK(one.drainable[0].node == "o2");
  CHECK(one.undrainable.empty());
}

TEST_CASE("a Pending pod takes the spot room it could use, before any node is planned", "[planner]") {
  PlanInput in;
  in.nodes.push_back(spot("spot-a").cpu("4"));
  in.nodes.push_back(on_demand("od-1").cpu("4"));
  in.pods.push_back(replica("big", "big").cpu("3").on("od-1"));
  CHECK(make_plan(in, default_policy_spec()).drainable.size() == 1);
  // A 2-CPU pod the scheduler has not bound yet (a scale-up, a replacement): 3 CPUs no longer fit.
  in.pods.push_back(replica("scale-up", "other").cpu("2").phase("Pending"));
  Plan plan = make_plan(in, default_policy_spec());
  CHECK(plan.drainable.empty());
  CHECK(all_reasons(plan, "od-1").find("pod default/big fits on no spot node") != std::string::npos);
  // The evictor's re-check counts it too.
  in.only_node = "od-1";
  CHECK(make_plan(in, default_policy_spec()).drainable.empty());
  // A Pending pod that fits on no spot node (pinned elsewhere) takes no spot room.
  in.only_node.reset();
  in.pods.back() = replica("scale-up", "other").cpu("2").phase("Pending").selector("pool", "gpu");
  CHECK(make_plan(in, default_policy_spec()).drainable.size() == 1);
}

TEST_CASE("a Pending pod nominated to a spot node takes room on that node", "[planner]") {
  PlanInput in;
  in.nodes.push_back(spot("spot-a").cpu("4"));
  in.nodes.push_back(spot("spot-b").cpu("4"));
  in.nodes.push_back(on_demand("od-1").cpu("4"));
  in.pods.push_back(replica("fill", "fill").cpu("2").on("spot-a"));
  in.pods.push_back(replica("big", "big").cpu("3").on("od-1"));
  // Not nominated, the pending pod could go to spot-a (2 free), leaving spot-b for the 3 CPUs.
  in.pods.push_back(replica("waiting", "other").cpu("2").phase("Pending"));
  CHECK(make_plan(in, default_policy_spec()).drainable.size() == 1);
  // Nominated to spot-b, it takes half of spot-b: 3 CPUs fit nowhere.
  in.pods.back() = replica("waiting", "other").cpu("2").phase("Pending").nominated("spot-b");
  CHECK(make_plan(in, default_policy_spec()).drainable.empty());
}

TEST_CASE("a pod whose claim or volume is not known blocks its node: the zone it needs cannot be checked", "[planner]") {
  PlanInput in;
  in.nodes.push_back(spot("spot-a").cpu("4"));
  in.nodes.push_back(on_demand("od-1").cpu("4"));
  in.pods.push_back(replica("db", "db").pvc("data").on("od-1"));
  // Volumes not watched: nothing to check.
  CHECK(make_plan(in, default_policy_spec()).drainable.size() == 1);
  // Watched, and the claim is missing (or bound to a volume the caches do not have): fail closed.
  in.volumes_watched = true;
  Plan plan = make_plan(in, default_policy_spec());
  CHECK(plan.drainable.empty());
  CHECK(all_reasons(plan, "od-1") ==
        "pod default/db: PersistentVolumeClaim default/data or its PersistentVolume is not known, so the zone its volume needs "
        "cannot be checked\n");
  // Known, with no zone to keep: it moves.
  in.volumes["default/data"] = {};
  CHECK(make_plan(in, default_policy_spec()).drainable.size() == 1);
}

TEST_CASE("claims are listed with their volumes' zones; a claim whose volume is unknown is left out", "[planner]") {
  auto claim = [](std::string name, std::string volume) {
    model::PersistentVolumeClaim c;
    c.meta.name = std::move(name);
    c.meta.namespace_ = model::InternedString("default");
    c.volume_name = std::move(volume);
    return c;
  };
  model::PersistentVolumeClaim bound = claim("bound", "pv-a"), pending = claim("pending", ""), lost = claim("lost", "pv-gone");
  model::PersistentVolume pv;
  pv.meta.name = "pv-a";
  pv.node_labels = {{"topology.kubernetes.io/zone", "z1"}};
  auto req = model::volume_node_requirements({&bound, &pending, &lost}, {&pv});
  CHECK(req.size() == 2);
  CHECK(req.at("default/bound") == std::vector<std::pair<std::string, std::string>>{{"topology.kubernetes.io/zone", "z1"}});
  CHECK(req.at("default/pending").empty());
  CHECK_FALSE(req.count("default/lost"));
}

TEST_CASE("a node annotated to opt out of disruption is not drained, whichever tool's annotation it carries", "[planner]") {
  for (const char* key :
       {"spotshift.io/do-not-drain", "karpenter.sh/do-not-disrupt", "cluster-autoscaler.kubernetes.io/scale-down-disabled"}) {
    INFO(key);
    PlanInput in;
    in.nodes.push_back(spot("spot-a").cpu("4"));
    in.nodes.push_back(on_demand("od-1").cpu("4").annotation(key, "true"));
    in.nodes.push_back(on_demand("od-2").cpu("4").annotation(key, "false"));
    in.pods.push_back(replica("a", "a").on("od-1"));
    in.pods.push_back(replica("b", "b").on("od-2"));
    Plan plan = make_plan(in, default_policy_spec());
    REQUIRE(plan.drainable.size() == 1);
    CHECK(plan.drainable[0].node == "od-2");
    CHECK(all_reasons(plan, "od-1") == fmt::format("the node is annotated {}=true\n", key));
    // The evictor's re-check sees an annotation added after the plan.
    in.only_node = "od-1";
    CHECK(make_plan(in, default_policy_spec()).drainable.empty());
  }
}

TEST_CASE("a moved pod's own old copy and its siblings count for anti-affinity correctly", "[planner]") {
  const std::string anti =
      R"({"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"kubernetes.io/hostname"}]}})";
  PlanInput in;
  in.nodes.push_back(spot("spot-1").cpu("8"));
  in.nodes.push_back(spot("spot-2").cpu("8"));
  in.nodes.push_back(spot("spot-3").cpu("8"));
  in.nodes.push_back(on_demand("od-1"));
  in.pods.push_back(replica("web-0", "web").affinity(anti).on("spot-1"));
  in.pods.push_back(replica("web-1", "web").affinity(anti).on("od-1"));
  in.pods.push_back(replica("web-2", "web").affinity(anti).on("od-1"));
  Plan plan = make_plan(in, default_policy_spec());
  INFO(plan_to_table(plan));
  REQUIRE(plan.drainable.size() == 1);
  auto t = targets(plan.drainable[0]);
  CHECK(t["web-1"] != "spot-1");
  CHECK(t["web-2"] != "spot-1");
  CHECK(t["web-1"] != t["web-2"]);
}

TEST_CASE("the plan prints as a table and as JSON", "[planner]") {
  PlanInput in;
  in.nodes.push_back(spot("spot-1").cpu("8"));
  in.nodes.push_back(on_demand("od-1"));
  in.nodes.push_back(on_demand("od-2"));
  in.pods.push_back(replica("web-1", "web").cpu("250m").on("od-1"));
  in.pods.push_back(make_pod("bare").on("od-2"));
  in.pdbs.push_back(make_pdb("web-pdb", "default", "web", 1));
  Plan plan = make_plan(in, default_policy_spec());

  std::string table = plan_to_table(plan);
  CHECK(table.find("2 on-demand nodes, 1 spot node: 1 drainable, 1 not drainable, 1 pod to move") == 0);
  CHECK(table.find("1            od-1  250m           1") != std::string::npos);
  CHECK(table.find("default/web-1 -> spot-1  (PodDisruptionBudget default/web-pdb)") != std::string::npos);
  CHECK(table.find("NOT DRAINABLE\nod-2\n    - pod default/bare: has no controller") != std::string::npos);

  model::JsonDocument d;
  REQUIRE(model::parse_json(plan_to_json(plan), d));
  const auto& drainable = d["drainableNodes"];
  REQUIRE(drainable.Size() == 1);
  CHECK(std::string(drainable[0]["node"].GetString()) == "od-1");
  CHECK(std::string(drainable[0]["moves"][0]["namespace"].GetString()) == "default");
  CHECK(std::string(drainable[0]["moves"][0]["pod"].GetString()) == "web-1");
  CHECK(std::string(drainable[0]["moves"][0]["targetNode"].GetString()) == "spot-1");
  CHECK(std::string(d["undrainableNodes"][0]["node"].GetString()) == "od-2");
  CHECK(d["undrainableNodes"][0]["reasons"].Size() == 1);
  CHECK(d["summary"]["drainableNodes"].GetInt() == 1);
  CHECK(d["summary"]["onDemandNodes"].GetInt() == 2);
  CHECK(d["summary"]["planMillis"].IsNumber());
}

namespace {
// A plan's JSON up to its timing, which differs from run to run.
std::string without_timing(const Plan& plan) {
  std::string json = plan_to_json(plan);
  return json.substr(0, json.find("\"planMillis\""));
}
}  // namespace

TEST_CASE("the planner is deterministic", "[planner]") {
  PlanInput in;
  for (int i = 0; i < 6; ++i) in.nodes.push_back(spot(fmt::format("spot-{}", i)).cpu("2"));
  for (int i = 0; i < 6; ++i) {
    in.nodes.push_back(on_demand(fmt::format("od-{}", i)));
    for (int k = 0; k < 3; ++k) in.pods.push_back(replica(fmt::format("p-{}-{}", i, k), "x").cpu("300m").on(fmt::format("od-{}", i)));
  }
  std::string first = without_timing(make_plan(in, default_policy_spec()));
  std::reverse(in.nodes.begin(), in.nodes.end());
  std::reverse(in.pods.begin(), in.pods.end());
  CHECK(first == without_timing(make_plan(in, default_policy_spec())));
}

namespace {
constexpr const char* kGpu = "example.com/gpu";

// One spot node with 4 CPUs and 2 GPUs. od-a asks for little CPU but both GPUs; od-b and od-c
// for one GPU and 1 CPU each. By requested CPU, od-a goes first and takes every GPU: one node
// drains. Weighted by scarcity (GPUs: 4 asked, 2 free), od-b and od-c go first: two drain.
PlanInput scarce_gpus() {
  PlanInput in;
  in.nodes.push_back(spot("spot-1").cpu("4").scalar(kGpu, "2"));
  for (auto name : {"od-a", "od-b", "od-c"}) in.nodes.push_back(on_demand(name).scalar(kGpu, "2"));
  in.pods.push_back(replica("a", "a").cpu("500m").scalar(kGpu, "2").on("od-a"));
  in.pods.push_back(replica("b", "b").cpu("1").scalar(kGpu, "1").on("od-b"));
  in.pods.push_back(replica("c", "c").cpu("1").scalar(kGpu, "1").on("od-c"));
  return in;
}
}  // namespace

TEST_CASE("drainOrder ScarceResources plans the nodes needing least of the scarce GPUs first", "[planner]") {
  PlanInput in = scarce_gpus();

  Plan by_cpu = make_plan(in, spec_from(R"({"drainOrder":"RequestedCPU"})").value());
  INFO(plan_to_table(by_cpu));
  REQUIRE(by_cpu.drainable.size() == 1);
  CHECK(by_cpu.drainable[0].node == "od-a");
  CHECK(by_cpu.summary.drain_order == DrainOrder::kRequestedCpu);

  Plan scarce = make_plan(in, spec_from(R"({"drainOrder":"ScarceResources"})").value());
  INFO(plan_to_table(scarce));
  REQUIRE(scarce.drainable.size() == 2);
  CHECK(scarce.drainable[0].node == "od-b");
  CHECK(scarce.drainable[1].node == "od-c");
  CHECK(all_reasons(scarce, "od-a").find("pod default/a fits on no spot node") != std::string::npos);
  CHECK(scarce.summary.drain_order == DrainOrder::kScarceResources);
  CHECK(scarce.summary.scarce_resource == kGpu);
}

TEST_CASE("drainOrder Auto, the default, is ScarceResources when a pod on an on-demand node asks for GPUs, RequestedCPU otherwise",
          "[planner]") {
  // The cluster of the ScarceResources case: by requested CPU one node drains, by scarcity two.
  REQUIRE(default_policy_spec().drain_order == DrainOrder::kAuto);
  PlanInput in = scarce_gpus();
  Plan plan = make_plan(in, default_policy_spec());
  INFO(plan_to_table(plan));
  REQUIRE(plan.drainable.size() == 2);
  CHECK(plan.drainable[0].node == "od-b");
  CHECK(plan.drainable[1].node == "od-c");
  CHECK(plan.summary.drain_order == DrainOrder::kScarceResources);
  // The plan says which order it took, and by which resource.
  CHECK(plan_to_table(plan).find("Drain order: ScarceResources (the scarce resource: example.com/gpu).\n") != std::string::npos);
  model::JsonDocument d;
  REQUIRE(model::parse_json(plan_to_json(plan), d));
  CHECK(std::string(d["summary"]["drainOrder"].GetString()) == "ScarceResources");
  CHECK(std::string(d["summary"]["scarceResource"].GetString()) == kGpu);
  // The evictor's re-check of one node takes the same order: its pods, largest GPU request first.
  PlanInput one = scarce_gpus();
  one.only_node = "od-b";
  CHECK(make_plan(one, default_policy_spec()).summary.drain_order == DrainOrder::kScarceResources);

  // GPUs on the nodes, but no pod on an on-demand node asks for one: by requested CPU, as
  // RequestedCPU plans it (od-a first, its 500m the least).
  PlanInput cpu_only;
  cpu_only.nodes.push_back(spot("spot-1").cpu("4").scalar(kGpu, "2"));
  for (auto name : {"od-a", "od-b", "od-c"}) cpu_only.nodes.push_back(on_demand(name).scalar(kGpu, "2"));
  cpu_only.pods.push_back(replica("a", "a").cpu("500m").on("od-a"));
  cpu_only.pods.push_back(replica("b", "b").cpu("2").on("od-b"));
  cpu_only.pods.push_back(replica("c", "c").cpu("3").on("od-c"));
  cpu_only.pods.push_back(replica("s", "s").cpu("100m").scalar(kGpu, "1").on("spot-1"));
  Plan by_cpu = make_plan(cpu_only, default_policy_spec());
  INFO(plan_to_table(by_cpu));
  CHECK(by_cpu.summary.drain_order == DrainOrder::kRequestedCpu);
  CHECK(by_cpu.summary.scarce_resource.empty());
  CHECK(plan_to_table(by_cpu).find("Drain order: RequestedCPU.\n") != std::string::npos);
  CHECK(without_timing(by_cpu) == without_timing(make_plan(cpu_only, spec_from(R"({"drainOrder":"RequestedCPU"})").value())));
}

namespace {

// gpu-free: 4 CPUs and 2 GPUs free; gpu-full: 6 CPUs and no GPU free. od-1 has a 3-CPU pod,
// od-2 a 4-CPU pod with a GPU. With FreeCPU alone, od-1's pod goes to the fuller gpu-free and
// od-2's then fits nowhere: one node drains where two could.
PlanInput gpu_trap(const std::string& trainer_affinity = "") {
  PlanInput in;
  in.nodes.push_back(spot("gpu-free").cpu("8").scalar(kGpu, "2"));
  in.nodes.push_back(spot("gpu-full").cpu("8").scalar(kGpu, "2"));
  in.pods.push_back(replica("x", "fill").cpu("4").on("gpu-free"));
  in.pods.push_back(replica("y", "fill").cpu("2").scalar(kGpu, "2").on("gpu-full"));
  in.nodes.push_back(on_demand("od-1"));
  in.nodes.push_back(on_demand("od-2").scalar(kGpu, "2"));
  in.pods.push_back(replica("cpu-only", "cpu").cpu("3").on("od-1"));
  auto trainer = replica("trainer", "gpu").cpu("4").scalar(kGpu, "1");
  if (!trainer_affinity.empty()) trainer.affinity(trainer_affinity);
  in.pods.push_back(trainer.on("od-2"));
  return in;
}

// FreeCPU alone, which falls into gpu_trap(); with the plan search or without.
PolicySpec free_cpu_spec(bool search) {
  return spec_from(search ? R"({"profile":{"scores":[{"name":"FreeCPU"}]},"searchIterations":50})"
                          : R"({"profile":{"scores":[{"name":"FreeCPU"}]}})")
      .value();
}

}  // namespace

TEST_CASE("the default profile keeps a CPU-only pod off the spot node whose GPUs the next node needs", "[planner]") {
  // od-1's 3-CPU pod on the fuller gpu-free (FreeCPU alone) would leave 1 CPU there, and od-2's
  // GPU pod, which needs 4, would fit nowhere.
  PlanInput in = gpu_trap();
  Plan plan = make_plan(in, default_policy_spec());
  INFO(plan_to_table(plan));
  REQUIRE(plan.drainable.size() == 2);
  CHECK(targets(*plan.find("od-1"))["cpu-only"] == "gpu-full");
  CHECK(targets(*plan.find("od-2"))["trainer"] == "gpu-free");

  Plan cpu_only = make_plan(in, free_cpu_spec(false));
  INFO(plan_to_table(cpu_only));
  REQUIRE(cpu_only.drainable.size() == 1);
  CHECK(targets(cpu_only.drainable[0])["cpu-only"] == "gpu-free");
}

TEST_CASE("the drains are sequenced fewest places first: a pod that fits on few spot nodes drains before others spread there",
          "[planner]") {
  // Planned in drain order, od-1 (3 CPUs requested) before od-2 (4 CPUs). od-2's GPU pod fits
  // on gpu-free alone, od-1's pod on both spot nodes: od-2 drains first, so that a replacement
  // placed by the cluster's scheduler cannot take the one place od-2's pod has.
  PlanInput in = gpu_trap();
  Plan plan = make_plan(in, default_policy_spec());
  INFO(plan_to_table(plan));
  REQUIRE(plan.drainable.size() == 2);
  CHECK(plan.drainable[0].node == "od-2");
  CHECK(plan.drainable[0].places == 1);
  CHECK(plan.drainable[1].node == "od-1");
  CHECK(plan.drainable[1].places == 2);
  CHECK(plan_to_json(plan).find(R"("node":"od-2","requestedCPU":"4","places":1,)") != std::string::npos);

  // Places above the plan's pods to move are plenty: such nodes keep the drain order.
  PlanInput roomy = gpu_trap();
  roomy.nodes.push_back(spot("spare-1").cpu("8").scalar(kGpu, "2"));
  roomy.nodes.push_back(spot("spare-2").cpu("8").scalar(kGpu, "2"));
  Plan plenty = make_plan(roomy, default_policy_spec());
  INFO(plan_to_table(plenty));
  REQUIRE(plenty.drainable.size() == 2);
  CHECK(plenty.drainable[0].node == "od-1");
  CHECK(plenty.drainable[0].places == 3);  // two pods to move: more than two places is plenty
  CHECK(plenty.drainable[1].node == "od-2");
  CHECK(plenty.drainable[1].places == 3);

  // A node's places come from its pod with the fewest, through the node-static filters too.
  PlanInput pinned = gpu_trap();
  pinned.pods.push_back(replica("picky", "picky")
                            .cpu("1")
                            .affinity(R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{
      "nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["gpu-full"]}]}]}}})")
                            .on("od-1"));
  Plan picky = make_plan(pinned, default_policy_spec());
  INFO(plan_to_table(picky));
  REQUIRE(picky.drainable.size() == 2);
  CHECK(picky.find("od-1")->places == 1);
  CHECK(picky.drainable[0].node == "od-1");  // ties keep the drain order

  // drainOrder HighestSavingsPerEviction is the order the drains run in: not sequenced.
  PolicySpec savings = default_policy_spec();
  savings.drain_order = DrainOrder::kHighestSavingsPerEviction;
  savings.pricing = Pricing{};
  savings.pricing->label = "example.com/price";
  Plan by_price = make_plan(gpu_trap(), savings);
  INFO(plan_to_table(by_price));
  REQUIRE(by_price.drainable.size() == 2);
  CHECK(by_price.drainable[0].node == "od-1");
  CHECK(!by_price.drainable[0].places);
  CHECK(plan_to_json(by_price).find("places") == std::string::npos);
}

TEST_CASE("searchIterations: the plan search finds the set of nodes planning node by node misses", "[planner]") {
  PlanInput in = gpu_trap();
  Plan by_node = make_plan(in, free_cpu_spec(false));
  INFO(plan_to_table(by_node));
  REQUIRE(by_node.drainable.size() == 1);
  CHECK(by_node.summary.searched_nodes == 0);

  Plan searched = make_plan(in, free_cpu_spec(true));
  std::string table = plan_to_table(searched);
  INFO(table);
  REQUIRE(searched.drainable.size() == 2);
  CHECK(searched.summary.searched_nodes == 1);
  CHECK(searched.summary.drainable_nodes == 2);
  CHECK(searched.summary.pods_to_move == 2);
  CHECK(targets(*searched.find("od-1"))["cpu-only"] == "gpu-full");
  CHECK(targets(*searched.find("od-2"))["trainer"] == "gpu-free");
  CHECK(table.find("The plan search (spec.searchIterations) found 1 more drainable node than planning node by node.") != std::string::npos);
  CHECK(plan_to_json(searched).find(R"("searchedNodes":1)") != std::string::npos);
  // The same input plans the same way.
  Plan again = make_plan(in, free_cpu_spec(true));
  again.summary.plan_millis = searched.summary.plan_millis;
  CHECK(plan_to_json(again) == plan_to_json(searched));
  // The evictor's re-check of one node plans that node alone, without a search.
  PlanInput one = in;
  one.only_node = "od-2";
  CHECK(make_plan(one, free_cpu_spec(true)).drainable.size() == 1);
}

TEST_CASE("searchIterations: what the search's model leaves out is checked; a plan it cannot improve is kept", "[planner]") {
  // The trainer may not share a node with the fill pods (required anti-affinity), which the
  // search's resource model does not see: it proposes the trainer on gpu-free, the predicate
  // engine refuses it there, and the node-by-node plan stands.
  const std::string anti =
      R"({"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"fill"}},"topologyKey":"kubernetes.io/hostname"}]}})";
  PlanInput in = gpu_trap(anti);
  Plan by_node = make_plan(in, free_cpu_spec(false));
  Plan searched = make_plan(in, free_cpu_spec(true));
  INFO(plan_to_table(searched));
  REQUIRE(searched.drainable.size() == 1);
  CHECK(searched.summary.searched_nodes == 0);
  by_node.summary.plan_millis = searched.summary.plan_millis = 0;
  CHECK(plan_to_json(searched) == plan_to_json(by_node));
  CHECK(all_reasons(searched, "od-2").find("pod default/trainer fits on no spot node") != std::string::npos);
}

namespace {

// Spot nodes of 4 CPUs, spot-a the fuller (FreeCPU puts a pod there first); three on-demand nodes
// with one 3-CPU pod each: any two of them drain, one pod on each spot node.
PlanInput two_of_three() {
  PlanInput in;
  in.nodes.push_back(spot("spot-a").cpu("4"));
  in.nodes.push_back(spot("spot-b").cpu("4"));
  in.pods.push_back(replica("fill", "fill").cpu("500m").on("spot-a"));
  for (std::string n : {"1", "2", "3"}) {
    in.nodes.push_back(on_demand("od-" + n).cpu("4"));
    in.pods.push_back(replica("p" + n, "app" + n).cpu("3").on("od-" + n));
  }
  return in;
}

// A plan as the operator keeps it between drains: each named pod moved to its target, their nodes
// drained in this order.
std::shared_ptr<const Plan> previous_plan(const PlanInput& in, const std::vector<std::pair<std::string, std::string>>& moves) {
  auto plan = std::make_shared<Plan>();
  for (const auto& [pod_name, target] : moves)
    for (const auto& pod : in.pods)
      if (pod->name() == pod_name) {
        if (plan->drainable.empty() || plan->drainable.back().node != pod->node_name.view()) {
          plan->drainable.emplace_back();
          plan->drainable.back().node = std::string(pod->node_name.view());
        }
        PodMove move;
        move.pod = pod;
        move.target = target;
        plan->drainable.back().moves.push_back(std::move(move));
      }
  return plan;
}

}  // namespace

TEST_CASE("the next plan keeps the previous plan's nodes and targets while they drain as many", "[planner]") {
  PlanInput in = two_of_three();
  Plan fresh = make_plan(in, free_cpu_spec(true));
  INFO(plan_to_table(fresh));
  REQUIRE(fresh.drainable.size() == 2);
  CHECK(fresh.drainable[0].node == "od-1");
  CHECK(fresh.drainable[1].node == "od-2");
  CHECK(targets(fresh.drainable[0])["p1"] == "spot-a");

  // The previous plan drained od-3 and od-1, p3 on spot-b: as many nodes, as many pods.
  in.previous = previous_plan(in, {{"p3", "spot-b"}, {"p1", "spot-a"}});
  Plan kept = make_plan(in, free_cpu_spec(true));
  INFO(plan_to_table(kept));
  REQUIRE(kept.drainable.size() == 2);
  CHECK(kept.drainable[0].node == "od-3");
  CHECK(targets(kept.drainable[0])["p3"] == "spot-b");
  CHECK(kept.drainable[1].node == "od-1");
  CHECK(targets(kept.drainable[1])["p1"] == "spot-a");
  CHECK(all_reasons(kept, "od-2").find("pod default/p2 fits on no spot node") != std::string::npos);

  // Without the plan search too: the previous plan is kept, and nothing is counted as searched.
  PolicySpec by_node = free_cpu_spec(false);
  Plan plain = make_plan(in, by_node);
  REQUIRE(plain.drainable.size() == 2);
  CHECK(plain.drainable[0].node == "od-3");
  CHECK(targets(plain.drainable[0])["p3"] == "spot-b");
  CHECK(plain.drainable[1].node == "od-1");
  CHECK(plain.summary.searched_nodes == 0);
  CHECK(kept.summary.searched_nodes == 0);

  // The evictor's re-check of od-3 tries the target the drain's plan chose first, search or not.
  PlanInput one = in;
  one.only_node = "od-3";
  for (const PolicySpec& spec : {free_cpu_spec(true), by_node}) {
    Plan recheck = make_plan(one, spec);
    REQUIRE(recheck.drainable.size() == 1);
    CHECK(targets(recheck.drainable[0])["p3"] == "spot-b");
  }
  one.previous = nullptr;
  CHECK(targets(make_plan(one, by_node).drainable.at(0))["p3"] == "spot-a");
}

TEST_CASE("the previous plan's nodes give way to a plan that moves fewer pods", "[planner]") {
  // od-3 now carries two pods (1.5 CPUs each): draining it moves one pod more than od-2 does.
  PlanInput in = two_of_three();
  in.pods.erase(std::remove_if(in.pods.begin(), in.pods.end(), [](const PodPtr& p) { return p->name() == "p3"; }), in.pods.end());
  in.pods.push_back(replica("p3a", "app3").cpu("1500m").on("od-3"));
  in.pods.push_back(replica("p3b", "app3").cpu("1500m").on("od-3"));
  in.previous = previous_plan(in, {{"p3a", "spot-b"}, {"p3b", "spot-b"}, {"p1", "spot-a"}});
  for (bool search : {true, false}) {
    Plan plan = make_plan(in, free_cpu_spec(search));
    INFO(plan_to_table(plan));
    REQUIRE(plan.drainable.size() == 2);
    CHECK(plan.drainable[0].node == "od-1");
    CHECK(plan.drainable[1].node == "od-2");
  }
}

TEST_CASE("a plan through the snapshot cache is the plan made without it; a node change alone reuses the snapshot", "[planner]") {
  // od-1's 800m pod fits only on spot-a, which starts NotReady.
  PlanInput in;
  in.nodes.push_back(spot("spot-a").cpu("1").condition("Ready", "False"));
  in.nodes.push_back(spot("spot-b").cpu("1"));
  in.nodes.push_back(on_demand("od-1"));
  in.pods.push_back(replica("fill", "fill").cpu("500m").on("spot-b"));
  in.pods.push_back(replica("web-1", "web").cpu("800m").on("od-1"));
  in.pods.push_back(replica("pending", "web").cpu("100m"));  // not bound: not in the snapshot
  sched::SnapshotCache cache;
  const PolicySpec spec = default_policy_spec();
  auto set_node = [&](NodePtr node) {
    for (auto& n : in.nodes)
      if (n->name() == node->name()) {
        n = std::move(node);
        return;
      }
  };
  // Plans with the cache and without it; returns the plan made with it.
  auto plan_both = [&] {
    PlanInput cached = in;
    cached.snapshots = &cache;
    Plan with = make_plan(cached, spec);
    Plan without = make_plan(in, spec);
    with.summary.plan_millis = without.summary.plan_millis = 0;
    CHECK(plan_to_json(with) == plan_to_json(without));
    return with;
  };
  // Plans both ways and expects od-1 drained, web-1 onto that spot node.
  auto drains_onto = [&](const std::string& target) {
    Plan plan = plan_both();
    REQUIRE(plan.drainable.size() == 1);
    CHECK(targets(plan.drainable[0])["web-1"] == target);
  };

  CHECK(plan_both().drainable.empty());
  CHECK(cache.builds() == 1);

  SECTION("the spot node turns Ready, then is tainted, then cordoned: the same snapshot with the new node objects") {
    set_node(spot("spot-a").cpu("1"));
    drains_onto("spot-a");
    set_node(spot("spot-a").cpu("1").taint("dedicated", "batch", "NoSchedule"));
    Plan tainted = plan_both();
    CHECK(tainted.drainable.empty());
    CHECK(all_reasons(tainted, "od-1").find("taint") != std::string::npos);
    set_node(spot("spot-a").cpu("1").unschedulable());
    CHECK(plan_both().drainable.empty());
    CHECK(cache.builds() == 1);
    CHECK(cache.reuses() == 3);
  }
  SECTION("a node's labels change: built again (the selectors and topology read them)") {
    set_node(spot("spot-a").cpu("1").label("topology.kubernetes.io/zone", "b"));
    plan_both();
    set_node(on_demand("od-1").label("node-role.kubernetes.io/spot-worker", ""));  // now both
    CHECK(plan_both().drainable.empty());
    CHECK(cache.builds() == 3);
    CHECK(cache.reuses() == 0);
  }
  SECTION("a node's allocatable resources change: built again") {
    set_node(spot("spot-b").cpu("2"));
    drains_onto("spot-b");
    CHECK(cache.builds() == 2);
  }
  SECTION("a node comes or goes: built again") {
    in.nodes.push_back(spot("spot-c").cpu("1"));
    CHECK(plan_both().drainable.size() == 1);
    in.nodes.pop_back();
    CHECK(plan_both().drainable.empty());
    CHECK(cache.builds() == 3);
  }
  SECTION("a pod is replaced, even by an equal object, or one is added or removed: built again") {
    in.pods[0] = std::make_shared<const model::Pod>(*in.pods[0]);
    plan_both();
    in.pods[0] = replica("fill", "fill").cpu("100m").on("spot-b");  // now od-1's pod fits on spot-b
    drains_onto("spot-b");
    in.pods.pop_back();
    plan_both();
    CHECK(cache.builds() == 4);
    CHECK(cache.reuses() == 0);
  }
  SECTION("the volumes' node requirements change: built again") {
    in.volumes["default/data"] = {{"topology.kubernetes.io/zone", "a"}};
    plan_both();
    CHECK(cache.builds() == 2);
  }
  SECTION("nothing changes: reused") {
    plan_both();
    plan_both();
    CHECK(cache.builds() == 1);
    CHECK(cache.reuses() == 2);
  }
}

TEST_CASE("with pricing, a plan says what draining each node saves, and HighestSavingsPerEviction drains the dearest per pod first",
          "[planner]") {
  auto priced = [](const char* key, bool as_label) {
    PolicySpec spec = default_policy_spec();
    spec.pricing = Pricing{};
    (as_label ? spec.pricing->label : spec.pricing->annotation) = key;
    return spec;
  };
  auto input = [](bool as_label) {
    auto price = [&](sched::testing::NodeBuilder n, const char* v) {
      return as_label ? n.label("example.com/price", v) : n.annotation("example.com/price", v);
    };
    PlanInput in;
    in.nodes.push_back(spot("spot-1").cpu("16"));
    // By requested CPU: od-a (300m), od-b (700m with its DaemonSet pod), od-c (900m). Per pod: od-a 1.0 (one pod),
    // od-b 1.5 (two pods at 3.0), od-c no price.
    in.nodes.push_back(price(on_demand("od-a").cpu("4"), "1.0"));
    in.nodes.push_back(price(on_demand("od-b").cpu("4"), "3.0"));
    in.nodes.push_back(price(on_demand("od-c").cpu("4"), "cheap"));
    in.pods.push_back(replica("a1", "a").cpu("300m").on("od-a"));
    in.pods.push_back(replica("b1", "b").cpu("300m").on("od-b"));
    in.pods.push_back(replica("b2", "b").cpu("300m").on("od-b"));
    in.pods.push_back(replica("c1", "c").cpu("900m").on("od-c"));
    in.pods.push_back(make_pod("agent-b").owner("DaemonSet", "agent").on("od-b"));  // stays: not counted
    return in;
  };
  for (bool as_label : {true, false}) {
    INFO((as_label ? "label" : "annotation"));
    PlanInput in = input(as_label);
    PolicySpec spec = priced("example.com/price", as_label);
    Plan plan = make_plan(in, spec);
    REQUIRE(plan.drainable.size() == 3);
    CHECK(plan.drainable[0].node == "od-a");  // drainOrder stays RequestedCPU
    CHECK(plan.drainable[0].hourly_saving == 1.0);
    CHECK(plan.drainable[1].hourly_saving == 3.0);
    CHECK_FALSE(plan.drainable[2].hourly_saving);  // "cheap" is not a price
    REQUIRE(plan.summary.hourly_savings);
    CHECK(*plan.summary.hourly_savings == 4.0);
    CHECK(plan.summary.unpriced_nodes == 1);
    std::string table = plan_to_table(plan);
    CHECK(table.find("Draining them saves about 4.0 per hour (1 of them without a price).") != std::string::npos);
    INFO(table);
    CHECK(table.find("od-b  700m           2  (saves about 3.0 per hour)") != std::string::npos);
    CHECK(plan_to_json(plan).find(R"("hourlySavings":4.0,"unpricedNodes":1,)") != std::string::npos);

    spec.drain_order = DrainOrder::kHighestSavingsPerEviction;
    Plan ordered = make_plan(in, spec);
    REQUIRE(ordered.drainable.size() == 3);
    CHECK(ordered.drainable[0].node == "od-b");
    CHECK(ordered.drainable[1].node == "od-a");
    CHECK(ordered.drainable[2].node == "od-c");
  }
  // Without pricing nothing is said about savings, and the JSON is as before.
  Plan plain = make_plan(input(true), default_policy_spec());
  CHECK_FALSE(plain.summary.hourly_savings);
  CHECK(plan_to_json(plain).find("hourly") == std::string::npos);
  CHECK(plan_to_table(plain).find("saves") == std::string::npos);
}

TEST_CASE("minOnDemandNodes keeps that many on-demand nodes running pods: the drainable nodes past the floor are OnDemandFloor",
          "[planner]") {
  PlanInput in;
  in.nodes.push_back(spot("spot-1").cpu("16"));
  for (int i = 1; i <= 3; ++i) {
    std::string node = fmt::format("od-{}", i);
    in.nodes.push_back(on_demand(node).cpu("4"));
    in.pods.push_back(replica(fmt::format("web-{}", i)).cpu(fmt::format("{}00m", i)).on(node));
    in.pods.push_back(make_pod(fmt::format("agent-{}", i)).owner("DaemonSet", "agent").on(node));
  }
  // Neither counts: one runs only a DaemonSet pod, the other is cordoned.
  in.nodes.push_back(on_demand("od-agent-only").cpu("4"));
  in.pods.push_back(make_pod("agent-4").owner("DaemonSet", "agent").on("od-agent-only"));
  in.nodes.push_back(on_demand("od-cordoned").cpu("4").unschedulable());
  in.pods.push_back(replica("web-c").cpu("100m").on("od-cordoned"));

  Plan all = make_plan(in, default_policy_spec());
  REQUIRE(all.drainable.size() == 3);

  Plan floor2 = make_plan(in, spec_from(R"({"minOnDemandNodes":2})").value());
  INFO(plan_to_table(floor2));
  REQUIRE(floor2.drainable.size() == 1);
  CHECK(floor2.drainable[0].node == "od-1");  // least requested CPU first, as without the floor
  CHECK(floor2.summary.drainable_nodes == 1);
  CHECK(floor2.summary.pods_to_move == 1);
  for (std::string node : {"od-2", "od-3"})
    CHECK(all_reasons(floor2, node) ==
          "OnDemandFloor: minOnDemandNodes is 2 and 3 on-demand nodes run pods, so 1 may be drained (the first in drain order)\n");
  for (const auto& u : floor2.undrainable)
    if (u.node == "od-2") CHECK(u.rules == std::vector<std::string_view>{"on-demand-floor"});

  Plan floor3 = make_plan(in, spec_from(R"({"minOnDemandNodes":3})").value());
  CHECK(floor3.drainable.empty());
  CHECK(all_reasons(floor3, "od-1") == "OnDemandFloor: minOnDemandNodes is 3 and 3 on-demand nodes run pods, so none may be drained\n");

  Plan floor1 = make_plan(in, spec_from(R"({"minOnDemandNodes":1})").value());
  CHECK(floor1.drainable.size() == 2);
  CHECK(all_reasons(floor1, "od-3").find("so 2 may be drained (the first 2 in drain order)") != std::string::npos);

  // The evictor's re-check of the node it drains does not count the floor again.
  in.only_node = "od-3";
  CHECK(make_plan(in, spec_from(R"({"minOnDemandNodes":3})").value()).drainable.size() == 1);
}

TEST_CASE(
    "expendable pods (below expendablePodsPriorityCutoff) are free room on spot nodes, never move, and the plan names those "
    "displaced",
    "[planner]") {
  PlanInput in;
  in.nodes.push_back(spot("spot-1").cpu("2"));
  // Overprovisioning placeholders: 1500m of spot-1 at priority -100 and -50.
  in.pods.push_back(replica("headroom-a", "headroom").cpu("1").priority(-100).on("spot-1"));
  in.pods.push_back(replica("headroom-b", "headroom").cpu("500m").priority(-50).on("spot-1"));
  in.nodes.push_back(on_demand("od-1").cpu("4"));
  in.pods.push_back(replica("web-1", "web").cpu("800m").on("od-1"));
  in.pods.push_back(replica("headroom-c", "headroom").cpu("1").priority(-100).on("od-1"));

  // The default cutoff (-10): the placeholders' room is free; web-1 displaces the lowest priority.
  Plan plan = make_plan(in, default_policy_spec());
  INFO(plan_to_table(plan));
  REQUIRE(plan.drainable.size() == 1);
  REQUIRE(plan.drainable[0].moves.size() == 1);  // the placeholder on od-1 stays
  CHECK(plan.drainable[0].moves[0].pod->name() == "web-1");
  CHECK(plan.drainable[0].displaces == std::vector<std::string>{"default/headroom-a on spot-1"});
  CHECK(plan.summary.displaced_pods == 1);
  CHECK(plan_to_table(plan).find("    displaces: default/headroom-a on spot-1 (priority below expendablePodsPriorityCutoff)\n") !=
        std::string::npos);
  CHECK(plan_to_json(plan).find(R"("displaces":["default/headroom-a on spot-1"])") != std::string::npos);

  // A cutoff below their priority: they are workloads like any other, and there is no room.
  Plan strict = make_plan(in, spec_from(R"({"expendablePodsPriorityCutoff":-1000})").value());
  CHECK(strict.drainable.empty());
  CHECK(all_reasons(strict, "od-1").find("fits on no spot node") != std::string::npos);
  CHECK(plan_to_json(strict).find("displace") == std::string::npos);

  // A move that fits beside them displaces none.
  in.pods[2] = replica("web-1", "web").cpu("400m").on("od-1");
  Plan small = make_plan(in, default_policy_spec());
  REQUIRE(small.drainable.size() == 1);
  CHECK(small.drainable[0].displaces.empty());
}
