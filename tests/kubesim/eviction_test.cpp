#include "disruption.hpp"
#include "test_cluster.hpp"

using namespace spotshift;
using namespace spotshift::kubesim;
using namespace std::chrono_literals;
using testing::parse;
using testing::TestCluster;

namespace {

std::string web_cluster(const std::string& pdb_spec) {
  std::string s = R"(
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, uid: 11111111-0000-4000-8000-000000000001}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
)";
  for (auto p : {"a", "b", "c"})
    s += std::string(R"(---
apiVersion: v1
kind: Pod
metadata:
  name: web-)") +
         p + R"(
  labels: {app: web}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: 11111111-0000-4000-8000-000000000001, controller: true}]
spec: {nodeName: n1, containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
)";
  s += "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web-pdb}\nspec: " + pdb_spec + "\n";
  return s;
}

HttpResponse evict(TestCluster& t, const std::string& pod, const std::string& body = "") {
  return t.post(
      "/api/v1/namespaces/default/pods/" + pod + "/eviction",
      body.empty() ? R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":")" + pod + R"(","namespace":"default"}})" : body);
}

int64_t pdb_status(TestCluster& t, const char* field_name) {
  auto pdb = t.object(t.cluster().registry().pdbs(), "default/web-pdb");
  return json_int(pdb->doc, {"status", field_name}).value_or(-1);
}

}  // namespace

TEST_CASE("an eviction within the budget charges it and deletes the pod gracefully", "[eviction]") {
  TestCluster t({}, web_cluster("{minAvailable: 2, selector: {matchLabels: {app: web}}}"));
  t.advance(2s);  // the kubelet makes the pods Ready, the disruption controller counts them
  REQUIRE(pdb_status(t, "currentHealthy") == 3);
  REQUIRE(pdb_status(t, "disruptionsAllowed") == 1);
  auto r = evict(t, "web-a", R"({"metadata":{"name":"web-a"},"deleteOptions":{"gracePeriodSeconds":20}})");
  CHECK(r.status == 201);
  CHECK(r.body == R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201})");
  auto pod = t.pod("default/web-a");
  REQUIRE(pod);  // terminating, not gone yet
  CHECK(json_int(pod->doc, {"metadata", "deletionGracePeriodSeconds"}) == 20);
  CHECK(to_json(*json_member(pod->doc, "status")).find("EvictionByEvictionAPI") != std::string::npos);
  CHECK(pdb_status(t, "disruptionsAllowed") == 0);
  auto pdb = t.object(t.cluster().registry().pdbs(), "default/web-pdb");
  CHECK(json_member(*json_member(pdb->doc, "status"), "disruptedPods") == nullptr);  // the pod is terminating: dropped

  auto refused = evict(t, "web-b");
  CHECK(refused.status == 429);
  CHECK(
      refused.body ==
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web-pdb needs 2 healthy pods and has 2 currently"}]},"code":429})");
  t.advance(3s);  // the old pod finishes terminating; its replacement becomes Ready
  CHECK_FALSE(t.pod("default/web-a"));
  CHECK(pdb_status(t, "currentHealthy") == 3);
  CHECK(evict(t, "web-b").status == 201);
  CHECK(t.cluster().budget_violations().empty());  // every eviction had room
}

TEST_CASE("an eviction accepted on a stale budget status is recorded as a budget violation", "[eviction]") {
  TestCluster t({}, web_cluster("{minAvailable: 2, selector: {matchLabels: {app: web}}}"));
  t.advance(2s);
  REQUIRE(pdb_status(t, "disruptionsAllowed") == 1);
  // web-a stops being Ready, and the disruption controller has not counted it yet: the status
  // still allows one disruption, the pods allow none.
  t.cluster().mutate(*t.cluster().registry().pods(), "default/web-a", [](Value& o, Alloc& a) {
    Value& conds = ensure_array(ensure_object(o, "status", a), "conditions", a);
    for (auto& c : conds.GetArray())
      if (json_string(c, {"type"}) == "Ready") set_str(c, "status", "False", a);
  });
  REQUIRE(pdb_status(t, "disruptionsAllowed") == 1);
  CHECK(evict(t, "web-b").status == 201);  // as a real API server, on the status
  CHECK(t.cluster().budget_violations() == std::vector<std::string>{"default/web-pdb: web-b (healthy 2, desired 2)"});
  CHECK(t.get("/_sim/state").body.find(R"x("budgetViolations":["default/web-pdb: web-b (healthy 2, desired 2)"])x") != std::string::npos);
}

TEST_CASE("eviction edge cases follow the registry's algorithm", "[eviction]") {
  TestCluster t({}, web_cluster("{minAvailable: 2, selector: {matchLabels: {app: web}}}"));
  t.advance(2s);
  CHECK(evict(t, "nope").status == 404);
  auto mismatch = evict(t, "web-a", R"({"metadata":{"name":"web-b"}})");
  CHECK(mismatch.status == 400);
  CHECK(mismatch.body.find("name in URL does not match name in Eviction object") != std::string::npos);

  // A second budget over the same pods: 500 without a reason, and no retry helps.
  t.apply(
      "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: other}\nspec: {maxUnavailable: 1, selector: {matchLabels: {app: web}}}\n");
  auto two = evict(t, "web-a");
  CHECK(two.status == 500);
  CHECK(
      two.body ==
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.","code":500})");
  REQUIRE(t.request("DELETE", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/other").status == 200);

  // A budget whose status lags its generation: 429 with Retry-After 10.
  t.cluster().options().stall_pdb_status = true;
  t.request("PATCH", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web-pdb", R"({"spec":{"minAvailable":1}})",
            "application/merge-patch+json");
  auto lagging = evict(t, "web-a");
  CHECK(lagging.status == 429);
  CHECK(lagging.headers == std::vector<std::pair<std::string, std::string>>{{"Retry-After", "10"}});
  CHECK(lagging.body.find("The disruption budget web-pdb is still being processed by the server.") != std::string::npos);
  CHECK(lagging.body.find(R"("retryAfterSeconds":10)") != std::string::npos);
  t.cluster().options().stall_pdb_status = false;
  t.settle();
  CHECK(evict(t, "web-a").status == 201);

  // Injected refusals.
  t.cluster().faults().refuse_evictions("default/web-c", 1);
  CHECK(evict(t, "web-c").status == 429);
}

TEST_CASE("pods that are not running, or not covered by a budget, are deleted at once", "[eviction]") {
  TestCluster t({}, web_cluster("{minAvailable: 3, selector: {matchLabels: {app: web}}}"));
  t.apply("apiVersion: v1\nkind: Pod\nmetadata: {name: loner}\nspec: {nodeName: n1, containers: [{name: c}]}\n");
  t.advance(2s);
  CHECK(pdb_status(t, "disruptionsAllowed") == 0);
  CHECK(evict(t, "loner").status == 201);
  t.cluster().options().scheduler = false;  // stays unscheduled, so deletion is immediate
  t.apply("apiVersion: v1\nkind: Pod\nmetadata: {name: pending, labels: {app: web}}\nspec: {containers: [{name: c}]}\n");
  CHECK(evict(t, "pending").status == 201);  // Pending: no budget check
  CHECK_FALSE(t.pod("default/pending"));
}

TEST_CASE("unready pods may be evicted when the budget is healthy or the policy says so", "[eviction]") {
  TestCluster t({}, web_cluster("{minAvailable: 2, selector: {matchLabels: {app: web}}}"));
  t.advance(2s);
  t.cluster().options().kubelet = false;
  // web-a stops being Ready: the budget still has 2 healthy of 2 desired.
  t.cluster().mutate(*t.cluster().registry().pods(), "default/web-a", [](Value& o, Alloc& a) {
    for (auto& c : (*get_mut(*get_mut(o, "status"), "conditions")).GetArray())
      if (json_string(c, {"type"}) == "Ready") set_str(c, "status", "False", a);
  });
  t.settle();
  REQUIRE(pdb_status(t, "currentHealthy") == 2);
  REQUIRE(pdb_status(t, "disruptionsAllowed") == 0);
  CHECK(evict(t, "web-a").status == 201);  // unhealthy pod, healthy budget: allowed
  CHECK(evict(t, "web-b").status == 429);  // healthy pod, no disruptions left
}

TEST_CASE("budget status maths follow the disruption controller", "[eviction]") {
  struct Case {
    const char* spec;
    int expected, desired, allowed;
  };
  const Case cases[] = {
      {"{minAvailable: 2, selector: {matchLabels: {app: web}}}", 3, 2, 1},
      {"{minAvailable: \"50%\", selector: {matchLabels: {app: web}}}", 3, 2, 1},  // ceil(1.5)
      {"{maxUnavailable: 1, selector: {matchLabels: {app: web}}}", 3, 2, 1},
      {"{maxUnavailable: \"34%\", selector: {matchLabels: {app: web}}}", 3, 1, 2},  // ceil(1.02) = 2 unavailable
      {"{minAvailable: 5, selector: {matchLabels: {app: web}}}", 3, 5, 0},
      {"{minAvailable: 1, selector: {}}", 3, 1, 2},  // policy/v1: an empty selector matches every pod
      {"{minAvailable: 1}", 0, 1, 0},                // a null selector matches none
  };
  for (const auto& c : cases) {
    INFO(c.spec);
    TestCluster t({}, web_cluster(c.spec));
    t.advance(2s);
    CHECK(pdb_status(t, "expectedPods") == c.expected);
    CHECK(pdb_status(t, "desiredHealthy") == c.desired);
    CHECK(pdb_status(t, "disruptionsAllowed") == c.allowed);
  }
}

TEST_CASE("percentage budgets over pods whose controller is unknown fail to sync", "[eviction]") {
  TestCluster t({}, R"(
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Pod
metadata:
  name: orphan
  labels: {app: x}
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: gone, uid: u-gone, controller: true}]
spec: {nodeName: n1, containers: [{name: c}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: b}
spec: {maxUnavailable: "10%", selector: {matchLabels: {app: x}}}
)");
  t.advance(2s);
  auto pdb = t.object(t.cluster().registry().pdbs(), "default/b");
  CHECK(json_int(pdb->doc, {"status", "disruptionsAllowed"}) == 0);
  CHECK(to_json(*json_path(pdb->doc, {"status", "conditions"})).find("SyncFailed") != std::string::npos);
}
