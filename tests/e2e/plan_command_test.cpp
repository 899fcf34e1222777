// `spotshift plan` on a snapshot taken from kubesim with kubectl, with a policy the CRD accepted:
// the offline path users take (docs/user-guide.md), here with a GPU pool planned by the default
// order, by drainOrder ScarceResources (the packing profile, docs/scheduling.md) and with the
// plan search (searchIterations); the same plan read from the live cluster (list only), also as a
// kubectl plugin; and the operator itself draining what the search chose.

#include "env.hpp"

#include "model/json.hpp"

#include <regex>

using namespace spotshift::e2e;

namespace {

// A GPU pool beside the demo cluster: one spot node with 4 CPUs and 2 GPUs; three on-demand
// nodes. gpu-od-a's pod asks for little CPU but both GPUs, gpu-od-b's and gpu-od-c's for 1 CPU
// and one GPU each.
std::string gpu_pool() {
  std::string out = pool_node("gpu-spot", "gpu-spot", 4, "16Gi", 2);
  for (auto n : {"gpu-od-a", "gpu-od-b", "gpu-od-c"}) out += pool_node(n, "gpu-od", 4, "16Gi", 2);
  out += replica_set_pod("ml", "trainer-a", 1, "gpu-od-a", gpu_resources("500m", 2));
  out += replica_set_pod("ml", "trainer-b", 2, "gpu-od-b", gpu_resources("1", 1));
  out += replica_set_pod("ml", "trainer-c", 3, "gpu-od-c", gpu_resources("1", 1));
  return out;
}

std::string gpu_policy(const std::string& name, const std::string& extra) {
  return fmt::format(R"(apiVersion: spotshift.io/v1alpha1
kind: ReschedulePolicy
metadata:
  name: {}
spec:
  onDemandNodeSelector: {{matchLabels: {{pool: gpu-od}}}}
  spotNodeSelector: {{matchLabels: {{pool: gpu-spot}}}}
{})",
                     name, extra);
}

// Drainable nodes in drain order, from `spotshift plan -o json`.
std::vector<std::string> drain_order(const std::string& json) {
  spotshift::model::JsonDocument doc;
  REQUIRE(spotshift::model::parse_json(json, doc));
  std::vector<std::string> out;
  for (const auto& n : doc["drainableNodes"].GetArray()) out.emplace_back(n["node"].GetString());
  return out;
}

}  // namespace

TEST_CASE("spotshift plan on a kubectl snapshot of kubesim honours drainOrder, the packing scores and the plan search", "[plan]") {
  Env env("---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n" + gpu_pool());
  env.apply("by-cpu", gpu_policy("by-cpu", "  drainOrder: RequestedCPU\n"));
  env.apply("auto", gpu_policy("auto", ""));
  env.apply("packing", gpu_policy("packing", R"(  drainOrder: ScarceResources
  profile:
    scores:
    - {name: Fragmentation, weight: 100}
    - {name: BestFit, weight: 1}
)"));
  env.apply("searched", gpu_policy("searched", "  drainOrder: RequestedCPU\n  searchIterations: 100\n"));
  // The CRD's schema refuses what the operator could not use.
  env.dir.write("bad.yaml", gpu_policy("bad", "  drainOrder: Cheapest\n"));
  std::string refused = env.kubectl("apply -f " + env.dir.file("bad.yaml"), false);
  CHECK(refused.find("spec.drainOrder") != std::string::npos);
  CHECK(refused.find("Unsupported value: \"Cheapest\"") != std::string::npos);
  env.dir.write("bad-search.yaml", gpu_policy("bad-search", "  searchIterations: -5\n"));
  refused = env.kubectl("apply -f " + env.dir.file("bad-search.yaml"), false);
  CHECK(refused.find("spec.searchIterations") != std::string::npos);
  CHECK(refused.find("should be greater than or equal to 0") != std::string::npos);

  env.dir.write("snapshot.json", env.kubectl("get nodes,pods,pdb,namespaces -A -o json"));
  auto plan = [&](const std::string& policy) {
    env.dir.write(policy + "-policy.yaml", env.kubectl("get reschedulepolicy " + policy + " -o yaml"));
    auto r = spotshift::testing::run(fmt::format("{} plan --snapshot {} --policy {} -o json", SPOTSHIFT_BIN, env.dir.file("snapshot.json"),
                                                 env.dir.file(policy + "-policy.yaml")));
    INFO(r.output);
    REQUIRE(r.status == 0);
    return r.output;
  };
  // By requested CPU, gpu-od-a (500m) goes first and takes both GPUs.
  CHECK(drain_order(plan("by-cpu")) == std::vector<std::string>{"gpu-od-a"});
  // Weighted by scarcity (4 GPUs asked, 2 free), the one-GPU nodes go first and both drain.
  std::string packed = plan("packing");
  CHECK(drain_order(packed) == std::vector<std::string>{"gpu-od-b", "gpu-od-c"});
  // drainOrder Auto (the CRD's default) takes that order here, since the pods ask for GPUs, and says so.
  std::string automatic = plan("auto");
  CHECK(drain_order(automatic) == std::vector<std::string>{"gpu-od-b", "gpu-od-c"});
  CHECK(automatic.find(R"("drainOrder":"ScarceResources","scarceResource":"example.com/gpu")") != std::string::npos);
  CHECK(plan("by-cpu").find(R"("drainOrder":"RequestedCPU")") != std::string::npos);
  CHECK(packed.find("pod ml/trainer-a-x1 fits on no spot node: 0/1 nodes are available: 1 Insufficient example.com/gpu.") !=
        std::string::npos);
  // In the order by requested CPU, the plan search takes gpu-od-a back to drain the other two.
  std::string searched = plan("searched");
  CHECK(drain_order(searched) == std::vector<std::string>{"gpu-od-b", "gpu-od-c"});
  CHECK(searched.find(R"("searchedNodes":1)") != std::string::npos);
  CHECK(plan("by-cpu").find(R"("searchedNodes":0)") != std::string::npos);
}

TEST_CASE("spotshift plan checks pods' controllers when the snapshot holds ReplicaSets, StatefulSets and Jobs", "[plan]") {
  // A Job's pod on ondemand-1 (a Job that counts evictions as failures), a pod of a StatefulSet
  // that is gone on ondemand-2.
  Env env(read_all(kSource + "/tests/e2e/job-and-orphan.yaml"));
  auto plan = [&](const std::string& kinds) {
    env.dir.write("snapshot.json", env.kubectl("get " + kinds + " -A -o json"));
    auto r = spotshift::testing::run(fmt::format("{} plan --snapshot {}", SPOTSHIFT_BIN, env.dir.file("snapshot.json")));
    INFO(r.output);
    REQUIRE(r.status == 0);
    return r.output;
  };
  std::string full = plan("nodes,pods,pdb,namespaces,rs,sts,jobs");
  INFO(full);
  CHECK(full.find("shop/report-x7k2p: owned by Job report, whose podFailurePolicy does not ignore disruptions") != std::string::npos);
  CHECK(full.find("shop/cache-0: its controller StatefulSet cache no longer exists") != std::string::npos);
  // Without the controllers, owners are not checked, and a Job's pod is not known to be safe to evict.
  std::string bare = plan("nodes,pods,pdb,namespaces");
  INFO(bare);
  CHECK(bare.find("shop/report-x7k2p: owned by Job report, which is not known here") != std::string::npos);
  CHECK(bare.find("StatefulSet cache no longer exists") == std::string::npos);
}

TEST_CASE("the operator drains the node the plan search chose first", "[operator]") {
  // By requested CPU, gpu-od-a would go first and take both GPUs (the test above). With the
  // search, the operator's plan drains gpu-od-b and gpu-od-c instead, and its first drain is
  // gpu-od-b's, through the real evictor; trainer-a is never evicted.
  Env env("---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n" + gpu_pool());
  env.apply("searched", gpu_policy("searched", R"(  searchIterations: 100
  nodeDrainDelay: 1h
  podEvictionTimeout: 20s
  maxGracefulTermination: 2s
)"));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.status("searched", {"lastDrain", "result"}) == "Succeeded"; }, 30s));
  INFO(op->log());
  CHECK(env.status("searched", {"lastDrain", "node"}) == "gpu-od-b");
  auto started = env.events("DrainStarted");
  REQUIRE_FALSE(started.empty());
  CHECK(started[0].starts_with("Node/gpu-od-b:"));
  for (const auto& r : env.operator_requests("/eviction")) CHECK(r.find("trainer-a") == std::string::npos);
  CHECK_FALSE(env.operator_requests("/eviction").empty());
  CHECK_FALSE(env.any_draining());
  op->stop(SIGTERM);
  CHECK(op->exit_status() == 0);
}

TEST_CASE("spotshift plan on the live cluster reads it without writing and plans as on a snapshot of it", "[plan]") {
  Env env("---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n" + gpu_pool());
  env.apply("packing", gpu_policy("packing", "  drainOrder: ScarceResources\n"));
  auto spotshift = [&](const std::string& args) {
    auto r = spotshift::testing::run(fmt::format("{} plan {} 2>&1", SPOTSHIFT_BIN, args));
    INFO(args << "\n" << r.output);
    return r;
  };
  auto without_timing = [](std::string json) { return std::regex_replace(json, std::regex(R"("planMillis":[0-9.e+-]+,?)"), ""); };
  // The same plan as from kubectl's snapshot with the policy as the cluster has it.
  env.dir.write("snapshot.json", env.kubectl("get nodes,pods,pdb,namespaces,pvc,pv,rs,sts,jobs -A -o json"));
  env.dir.write("packing.yaml", env.kubectl("get rsp packing -o yaml"));
  auto offline = spotshift(fmt::format("--snapshot {} --policy {} -o json", env.dir.file("snapshot.json"), env.dir.file("packing.yaml")));
  REQUIRE(offline.status == 0);
  auto live = spotshift(fmt::format("--kubeconfig {} --policy-name packing -o json", env.kubeconfig()));
  REQUIRE(live.status == 0);
  CHECK(without_timing(live.output) == without_timing(offline.output));
  CHECK(drain_order(live.output) == std::vector<std::string>{"gpu-od-b", "gpu-od-c"});
  // List only: nothing written, nothing watched.
  auto requests = env.requests("spotshift/", "/");
  REQUIRE_FALSE(requests.empty());
  for (const auto& r : requests) {
    INFO(r);
    CHECK(r.starts_with("GET "));
    CHECK(r.find("watch") == std::string::npos);
  }
  // YAML and the table; the only policy is the default choice.
  auto yaml = spotshift(fmt::format("--kubeconfig {} -o yaml", env.kubeconfig()));
  REQUIRE(yaml.status == 0);
  CHECK(yaml.output.find("drainableNodes:\n  - node: gpu-od-b\n") != std::string::npos);
  auto table = spotshift(fmt::format("--kubeconfig {}", env.kubeconfig()));
  CHECK(table.output.starts_with("Policy packing: "));
  // --exit-code: 0 when a node is drainable, 3 when none is.
  CHECK(spotshift(fmt::format("--kubeconfig {} --exit-code", env.kubeconfig())).status == 0);
  env.apply("none", policy_yaml("none", "  onDemandNodeSelector: {matchLabels: {pool: nowhere}}\n"));
  CHECK(spotshift(fmt::format("--kubeconfig {} --policy-name none --exit-code", env.kubeconfig())).status == 3);
  // Clear errors: two policies and none named, a name the cluster does not have, flags that do not go together.
  auto two = spotshift(fmt::format("--kubeconfig {}", env.kubeconfig()));
  CHECK(two.status == 1);
  CHECK(two.output == "error: the cluster has 2 ReschedulePolicies (none, packing): choose one with --policy-name\n");
  auto missing = spotshift(fmt::format("--kubeconfig {} --policy-name nope", env.kubeconfig()));
  CHECK(missing.output == "error: the cluster has no ReschedulePolicy named nope (it has none, packing)\n");
  auto mixed = spotshift(fmt::format("--snapshot {} --policy-name packing", env.dir.file("snapshot.json")));
  CHECK(mixed.status == 2);
  // As a kubectl plugin: kubectl finds kubectl-spotshift on the PATH and passes the rest on.
  std::string bin = env.dir.file("bin");
  REQUIRE(spotshift::testing::run(fmt::format("mkdir -p {0} && ln -s {1} {0}/kubectl-spotshift", bin, SPOTSHIFT_BIN)).status == 0);
  auto plugin = spotshift::testing::run(
      fmt::format("PATH={}:$PATH KUBECONFIG={} kubectl spotshift plan --policy-name packing -o json 2>&1", bin, env.kubeconfig()));
  INFO(plugin.output);
  CHECK(plugin.status == 0);
  CHECK(without_timing(plugin.output) == without_timing(offline.output));
}
