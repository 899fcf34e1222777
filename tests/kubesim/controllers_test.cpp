#include "test_cluster.hpp"

#include <fmt/format.h>

#include <map>

using namespace spotshift;
using namespace spotshift::kubesim;
using namespace std::chrono_literals;
using testing::parse;
using testing::TestCluster;

namespace {

std::string node_yaml(const std::string& name, const std::string& cpu, const std::string& extra = "", const std::string& pods = "110") {
  return "---\napiVersion: v1\nkind: Node\nmetadata: {name: " + name + ", labels: {kubernetes.io/hostname: " + name + "}}\n" + extra +
         "status: {allocatable: {cpu: \"" + cpu + "\", memory: 8Gi, pods: \"" + pods + "\"}}\n";
}

std::string pod_yaml(const std::string& name, const std::string& cpu, const std::string& extra = "") {
  return "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n" + extra +
         "  containers: [{name: c, resources: {requests: {cpu: " + cpu + "}}}]\n";
}

std::string node_of(TestCluster& t, const std::string& pod) {
  auto p = t.pod("default/" + pod);
  return p ? std::string(json_string(p->doc, {"spec", "nodeName"})) : "<gone>";
}

std::string scheduled_condition(TestCluster& t, const std::string& pod) {
  auto p = t.pod("default/" + pod);
  for (const auto& c : (*json_path(p->doc, {"status", "conditions"})).GetArray())
    if (json_string(c, {"type"}) == "PodScheduled")
      return std::string(json_string(c, {"reason"})) + ": " + std::string(json_string(c, {"message"}));
  return "";
}

}  // namespace

TEST_CASE("the scheduler binds to the least allocated feasible node and emits Scheduled", "[scheduler]") {
  TestCluster t({}, node_yaml("big", "4") + node_yaml("small", "2"));
  t.apply(pod_yaml("p1", "1"));
  CHECK(node_of(t, "p1") == "big");  // 75% free beats 50%
  t.apply(pod_yaml("p2", "1500m"));
  CHECK(node_of(t, "p2") == "big");  // big: (4-1-1.5)/4 = 37.5%; small: (2-1.5)/2 = 25%
  t.apply(pod_yaml("p3", "1"));
  CHECK(node_of(t, "p3") == "small");
  auto events = t.get("/api/v1/namespaces/default/events?fieldSelector=reason%3DScheduled");
  CHECK(parse(events.body)["items"].Size() == 3);
}

TEST_CASE("the scheduler keeps a pod's charge through metadata writes and frees it when the pod ends", "[scheduler]") {
  TestCluster t({}, node_yaml("only", "1"));
  t.apply(pod_yaml("first", "800m"));
  REQUIRE(node_of(t, "first") == "only");
  const auto& pods = *t.cluster().registry().pods();
  t.cluster().mutate(pods, "default/first",
                     [](Value& o, Alloc& a) { set_str(ensure_object(ensure_object(o, "metadata", a), "labels", a), "touched", "yes", a); });
  t.apply(pod_yaml("second", "500m"));
  CHECK(node_of(t, "second").empty());    // the label write did not drop first's 800m
  t.cluster().options().kubelet = false;  // keeps the phase this test sets
  t.cluster().mutate(pods, "default/first", [](Value& o, Alloc& a) { set_str(ensure_object(o, "status", a), "phase", "Succeeded", a); });
  t.settle();
  CHECK(node_of(t, "second") == "only");
}

TEST_CASE("the scheduler explains why nothing fits, in kube-scheduler's words", "[scheduler]") {
  TestCluster t({}, node_yaml("a", "1") + node_yaml("b", "1", "spec: {unschedulable: true}\n") +
                        node_yaml("c", "8", "spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}\n") +
                        node_yaml("d", "8", "", "1"));
  t.apply(pod_yaml("filler", "100m", "  nodeName: d\n"));
  t.apply(pod_yaml("big", "2"));
  CHECK(node_of(t, "big").empty());
  CHECK(scheduled_condition(t, "big") ==
        "Unschedulable: 0/4 nodes are available: 1 Insufficient cpu, 1 Too many pods, 1 node(s) had untolerated taint "
        "{dedicated: gpu}, 1 node(s) were unschedulable. preemption: 0/4 nodes are available: 4 Preemption is not "
        "helpful for scheduling.");
  auto events = t.get("/api/v1/namespaces/default/events?fieldSelector=reason%3DFailedScheduling");
  REQUIRE(parse(events.body)["items"].Size() == 1);
  CHECK(json_string(parse(events.body)["items"][0], {"type"}) == "Warning");
  // More capacity arrives: the pending pod is retried without any other change.
  t.apply(node_yaml("e", "4"));
  CHECK(node_of(t, "big") == "e");
}

TEST_CASE("the scheduler preempts pods of lower priority, lowest first and as few as it can, and nominates the node", "[scheduler]") {
  TestCluster t({}, node_yaml("only", "2"));
  for (auto [name, value] : {std::pair{"lowest", -100}, {"low", -50}, {"high", 10}})
    t.apply(fmt::format("---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: {}}}\nvalue: {}\n", name, value));
  t.apply(pod_yaml("placeholder-a", "1", "  priorityClassName: lowest\n  terminationGracePeriodSeconds: 1\n"));
  t.apply(pod_yaml("placeholder-b", "500m", "  priorityClassName: low\n  terminationGracePeriodSeconds: 1\n"));
  t.apply(pod_yaml("peer", "400m", "  priorityClassName: high\n"));
  CHECK(json_int(t.pod("default/placeholder-a")->doc, {"spec", "priority"}) == -100);
  REQUIRE(node_of(t, "placeholder-a") == "only");
  REQUIRE(node_of(t, "placeholder-b") == "only");
  // 100m free: a 900m pod of priority 0 needs placeholder-a's room, and only that.
  t.apply(pod_yaml("web", "900m"));
  auto preempted = t.get("/api/v1/namespaces/default/events?fieldSelector=reason%3DPreempted");
  REQUIRE(parse(preempted.body)["items"].Size() == 1);
  CHECK(json_string(parse(preempted.body)["items"][0], {"involvedObject", "name"}) == "placeholder-a");
  CHECK(json_string(t.pod("default/web")->doc, {"status", "nominatedNodeName"}) == "only");
  t.advance(5s);
  CHECK_FALSE(t.pod("default/placeholder-a"));
  CHECK(node_of(t, "web") == "only");
  CHECK(node_of(t, "placeholder-b") == "only");
  // A pod no lower-priority pod can make room for stays Pending, with nothing preempted.
  t.apply(pod_yaml("huge", "3"));
  CHECK(node_of(t, "huge").empty());
  CHECK(parse(t.get("/api/v1/namespaces/default/events?fieldSelector=reason%3DPreempted").body)["items"].Size() == 1);
}

TEST_CASE("the scheduler honours tolerations, node selectors, affinity, pod counts and host ports", "[scheduler]") {
  TestCluster t({}, node_yaml("plain", "4") +
                        node_yaml("gpu", "4", "spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}\n") +
                        node_yaml("spot", "4", "spec: {taints: [{key: od, effect: PreferNoSchedule}]}\n"));
  t.cluster().mutate(*t.cluster().registry().nodes(), "spot",
                     [](Value& o, Alloc& a) { set_str(ensure_object(ensure_object(o, "metadata", a), "labels", a), "pool", "spot", a); });
  t.apply(
      pod_yaml("tolerant", "100m", "  tolerations: [{key: dedicated, operator: Exists}]\n  nodeSelector: {kubernetes.io/hostname: gpu}\n"));
  CHECK(node_of(t, "tolerant") == "gpu");
  t.apply(pod_yaml("affine", "100m",
                   "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
                   "[{matchExpressions: [{key: pool, operator: In, values: [spot]}]}]}}}\n"));
  CHECK(node_of(t, "affine") == "spot");
  t.apply(pod_yaml("avoids-prefer-no-schedule", "100m"));
  CHECK(node_of(t, "avoids-prefer-no-schedule") == "plain");
  t.apply(
      "---\napiVersion: v1\nkind: Pod\nmetadata: {name: hp1}\nspec:\n  nodeSelector: {kubernetes.io/hostname: plain}\n"
      "  containers: [{name: c, ports: [{containerPort: 80, hostPort: 8080}]}]\n"
      "---\napiVersion: v1\nkind: Pod\nmetadata: {name: hp2}\nspec:\n  nodeSelector: {kubernetes.io/hostname: plain}\n"
      "  containers: [{name: c, ports: [{containerPort: 80, hostPort: 8080}]}]\n");
  CHECK(node_of(t, "hp1") == "plain");
  CHECK(node_of(t, "hp2").empty());
  CHECK(scheduled_condition(t, "hp2").find("didn't have free ports") != std::string::npos);
  t.apply(
      "---\napiVersion: v1\nkind: Pod\nmetadata: {name: ext}\nspec:\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n");
  CHECK(node_of(t, "ext").empty());
  CHECK(scheduled_condition(t, "ext").find("Insufficient nvidia.com/gpu") != std::string::npos);
}

TEST_CASE("the kubelet starts bound pods after a delay and ends graceful deletions", "[kubelet]") {
  TestCluster t({}, node_yaml("n", "4") + pod_yaml("p", "100m", "  nodeName: n\n  terminationGracePeriodSeconds: 30\n"));
  CHECK(json_string(t.pod("default/p")->doc, {"status", "phase"}) == "Pending");
  t.advance(1500ms);
  auto p = t.pod("default/p");
  CHECK(json_string(p->doc, {"status", "phase"}) == "Running");
  CHECK(json_bool((*json_path(p->doc, {"status", "containerStatuses"}))[0], {"ready"}));
  CHECK(json_string((*json_path(p->doc, {"status", "containerStatuses"}))[0], {"imageID"}).starts_with("kubesim://"));
  auto del = t.request("DELETE", "/api/v1/namespaces/default/pods/p");
  CHECK(del.status == 200);
  CHECK(json_path(parse(del.body), {"metadata", "deletionTimestamp"}));
  CHECK(t.pod("default/p"));  // terminating for min(30s, cap=2s)
  t.advance(1s);
  CHECK(t.pod("default/p"));
  t.advance(1500ms);
  CHECK_FALSE(t.pod("default/p"));
  auto killing = t.get("/api/v1/namespaces/default/events?fieldSelector=reason%3DKilling");
  CHECK(parse(killing.body)["items"].Size() == 1);
}

TEST_CASE("a pod that never terminates stays until deleted with grace zero", "[kubelet]") {
  TestCluster t(
      {}, node_yaml("n", "4") +
              "---\napiVersion: v1\nkind: Pod\nmetadata: {name: stuck, annotations: {kubesim.spotshift.io/never-terminate: \"true\"}}\n"
              "spec: {nodeName: n, containers: [{name: c}]}\n");
  t.advance(2s);
  t.request("DELETE", "/api/v1/namespaces/default/pods/stuck");
  t.advance(10min);
  CHECK(t.pod("default/stuck"));
  t.request("DELETE", "/api/v1/namespaces/default/pods/stuck?gracePeriodSeconds=0");
  t.advance(1s);
  CHECK_FALSE(t.pod("default/stuck"));
}

TEST_CASE("a pod that never becomes Ready runs with Ready and ContainersReady False", "[kubelet]") {
  TestCluster t({},
                node_yaml("n", "4") +
                    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: probe, annotations: {kubesim.spotshift.io/never-ready: \"true\"}}\n"
                    "spec: {nodeName: n, containers: [{name: c}]}\n");
  t.advance(2s);
  auto p = t.pod("default/probe");
  REQUIRE(p);
  CHECK(json_string(p->doc, {"status", "phase"}) == "Running");
  std::map<std::string, std::string> conditions;
  for (const auto& c : json_path(p->doc, {"status", "conditions"})->GetArray())
    conditions[std::string(json_string(c, {"type"}))] = std::string(json_string(c, {"status"}));
  CHECK(conditions == std::map<std::string, std::string>{
                          {"Initialized", "True"}, {"Ready", "False"}, {"ContainersReady", "False"}, {"PodScheduled", "True"}});
  CHECK_FALSE(json_bool((*json_path(p->doc, {"status", "containerStatuses"}))[0], {"ready"}));
}

TEST_CASE("a ReplicaSet recreates an evicted replica at once, unscheduled", "[workloads]") {
  ClusterOptions o;
  o.scheduler = false;
  TestCluster t(o, node_yaml("n", "4") + R"(
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c}]}
)");
  auto pods = [&] {
    std::vector<ObjectPtr> out;
    for (const auto& [k, p] : t.cluster().store().objects(*t.cluster().registry().pods())) out.push_back(p);
    return out;
  };
  auto before = pods();
  REQUIRE(before.size() == 2);
  CHECK(name_of(before[0]->doc).starts_with("web-"));
  CHECK(json_string(*json_path(before[0]->doc, {"metadata", "ownerReferences"})->Begin(), {"kind"}) == "ReplicaSet");
  t.cluster().bind("default", name_of(before[0]->doc), "n");
  t.advance(2s);
  REQUIRE(t.post("/api/v1/namespaces/default/pods/" + std::string(name_of(before[0]->doc)) + "/eviction", "{}").status == 201);
  auto after = pods();
  CHECK(after.size() == 3);  // the evicted one terminates while its replacement exists
  int unscheduled = 0;
  for (const auto& p : after) unscheduled += json_string(p->doc, {"spec", "nodeName"}).empty() ? 1 : 0;
  CHECK(unscheduled == 2);
  auto rs = t.object(t.cluster().registry().replicasets(), "default/web");
  CHECK(json_int(rs->doc, {"status", "replicas"}) == 2);
}

TEST_CASE("Deployments own a ReplicaSet; DaemonSets run one pod per eligible node; StatefulSets name pods by ordinal", "[workloads]") {
  TestCluster t({}, node_yaml("a", "4") + node_yaml("b", "4", "spec: {taints: [{key: x, effect: NoSchedule}]}\n") + R"(
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: c}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c}]}
)");
  t.advance(2s);
  const auto& rss = t.cluster().store().objects(*t.cluster().registry().replicasets());
  REQUIRE(rss.size() == 1);
  CHECK(rss.begin()->first.starts_with("default/api-"));
  int api = 0, agent = 0;
  for (const auto& [k, p] : t.cluster().store().objects(*t.cluster().registry().pods())) {
    if (k.starts_with("default/api-")) ++api;
    if (k.starts_with("default/agent-")) {
      ++agent;
      CHECK(json_string(p->doc, {"spec", "nodeName"}) == "a");  // b's taint is not tolerated
    }
  }
  CHECK(api == 2);
  CHECK(agent == 1);
  CHECK(t.pod("default/db-0"));
  CHECK(t.pod("default/db-1"));
  auto dep = t.object(t.cluster().registry().deployments(), "default/api");
  CHECK(json_int(dep->doc, {"status", "readyReplicas"}) == 2);
  // Deleting the Deployment collects its ReplicaSet and pods.
  t.request("DELETE", "/apis/apps/v1/namespaces/default/deployments/api");
  t.advance(3s);
  CHECK(t.cluster().store().objects(*t.cluster().registry().replicasets()).empty());
}

TEST_CASE("Deployments get the apiserver's defaults, number their revisions and reuse a ReplicaSet on rollback", "[workloads]") {
  TestCluster t({}, node_yaml("a", "4") + R"(
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: c, image: v1}]}
)");
  t.advance(2s);
  const auto& reg = t.cluster().registry();
  auto dep = t.object(reg.deployments(), "default/api");
  CHECK(json_string(dep->doc, {"spec", "strategy", "type"}) == "RollingUpdate");
  CHECK(json_string(dep->doc, {"spec", "strategy", "rollingUpdate", "maxSurge"}) == "25%");
  CHECK(json_int(dep->doc, {"spec", "revisionHistoryLimit"}) == 10);
  CHECK(json_int(dep->doc, {"spec", "progressDeadlineSeconds"}) == 600);
  CHECK(json_string(dep->doc, {"metadata", "annotations", "deployment.kubernetes.io/revision"}) == "1");
  auto revisions = [&] {
    std::map<std::string, std::pair<std::string, int64_t>> out;  // revision -> (name, replicas)
    for (const auto& [k, rs] : t.cluster().store().objects(*reg.replicasets()))
      out[std::string(json_string(rs->doc, {"metadata", "annotations", "deployment.kubernetes.io/revision"}))] = {
          std::string(name_of(rs->doc)), json_int(rs->doc, {"spec", "replicas"}).value_or(-1)};
    return out;
  };
  const std::string first = revisions()["1"].first;

  // A new template: a second ReplicaSet, revision 2; the first scales to zero.
  const std::string path = "/apis/apps/v1/namespaces/default/deployments/api";
  REQUIRE(t.request("PATCH", path, R"({"spec":{"template":{"spec":{"containers":[{"name":"c","image":"v2"}]}}}})",
                    "application/strategic-merge-patch+json")
              .status == 200);
  t.advance(2s);
  auto two = revisions();
  REQUIRE(two.size() == 2);
  CHECK(two["1"] == std::pair{first, int64_t{0}});
  CHECK(two["2"].second == 2);
  // kubectl rollout undo: revision 1's template again, with its members reordered and an explicit
  // null (as kubectl sends it). The same ReplicaSet comes back, as revision 3.
  REQUIRE(t.request("PATCH", path,
                    R"([{"op":"replace","path":"/spec/template","value":{"spec":{"containers":[{"image":"v1","name":"c"}]},)"
                    R"("metadata":{"creationTimestamp":null,"labels":{"app":"api"}}}}])",
                    "application/json-patch+json")
              .status == 200);
  t.advance(2s);
  auto three = revisions();
  CHECK(three.size() == 2);
  CHECK(three["3"] == std::pair{first, int64_t{2}});
  CHECK(json_string(t.object(reg.deployments(), "default/api")->doc, {"metadata", "annotations", "deployment.kubernetes.io/revision"}) ==
        "3");
  // up 1, up 2, down 1, up 1 again (counted into the first event, as events are), down 2
  std::map<std::string, int64_t> scaled;  // message -> count
  for (const auto& [k, e] : t.cluster().store().objects(*reg.events()))
    if (json_string(e->doc, {"reason"}) == "ScalingReplicaSet")
      scaled[std::string(json_string(e->doc, {"message"}))] += json_int(e->doc, {"count"}).value_or(1);
  CHECK(scaled.size() == 4);
  CHECK(scaled[fmt::format("Scaled up replica set {} from 0 to 2", first)] == 2);
  CHECK(scaled[fmt::format("Scaled down replica set {} from 2 to 0", first)] == 1);
}

TEST_CASE("a DaemonSet pod keeps running under a NoSchedule taint added later, and goes under NoExecute", "[workloads]") {
  TestCluster t({}, node_yaml("a", "4") + R"(
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c}]}
)");
  t.advance(2s);
  auto agents = [&] {
    std::vector<std::string> out;
    for (const auto& [k, p] : t.cluster().store().objects(*t.cluster().registry().pods()))
      if (k.starts_with("default/agent-") && !json_path(p->doc, {"metadata", "deletionTimestamp"})) out.push_back(k);
    return out;
  };
  auto before = agents();
  REQUIRE(before.size() == 1);
  t.request("PATCH", "/api/v1/nodes/a", R"({"spec":{"taints":[{"key":"spotshift.io/draining","value":"p","effect":"NoSchedule"}]}})",
            "application/merge-patch+json");
  t.advance(2s);
  CHECK(agents() == before);  // kept, as the real DaemonSet controller keeps it
  t.request("PATCH", "/api/v1/nodes/a", R"({"spec":{"taints":[{"key":"dedicated","value":"x","effect":"NoExecute"}]}})",
            "application/merge-patch+json");
  t.advance(5s);
  CHECK(agents().empty());
}

TEST_CASE("node lifecycle mirrors cordons and conditions into taints", "[lifecycle]") {
  TestCluster t({}, node_yaml("n", "4"));
  t.request("PATCH", "/api/v1/nodes/n", R"({"spec":{"unschedulable":true}})", "application/strategic-merge-patch+json");
  CHECK(to_json(*json_path(t.node("n")->doc, {"spec", "taints"})) ==
        R"([{"key":"node.kubernetes.io/unschedulable","effect":"NoSchedule"}])");
  t.post("/_sim/nodes/n/conditions", R"({"type":"Ready","status":"False"})");
  auto taints = to_json(*json_path(t.node("n")->doc, {"spec", "taints"}));
  CHECK(taints.find("node.kubernetes.io/not-ready\",\"effect\":\"NoExecute\"") != std::string::npos);
  t.request("PATCH", "/api/v1/nodes/n", R"({"spec":{"unschedulable":null}})", "application/strategic-merge-patch+json");
  t.post("/_sim/nodes/n/conditions", R"({"type":"Ready","status":"True"})");
  CHECK_FALSE(json_path(t.node("n")->doc, {"spec", "taints"}));
}
