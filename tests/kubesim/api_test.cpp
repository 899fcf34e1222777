#include "delete_options.hpp"
#include "test_cluster.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>

using namespace spotshift;
using namespace spotshift::kubesim;
using testing::parse;
using testing::TestCluster;

namespace {
constexpr const char* kPod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","labels":{"app":"web"}},
  "spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"500m"}}}]}})";

std::string body_field(const HttpResponse& r, std::initializer_list<std::string_view> path) {
  Doc d = parse(r.body);
  const Value* v = json_path(d, path);
  if (!v) return "<absent>";
  return v->IsString() ? std::string(v->GetString()) : to_json(*v);
}
}  // namespace

TEST_CASE("create, get, update and delete follow the apiserver's semantics", "[api]") {
  TestCluster t;
  auto created = t.post("/api/v1/namespaces/default/pods", kPod);
  REQUIRE(created.status == 201);
  CHECK(body_field(created, {"metadata", "namespace"}) == "default");
  CHECK(body_field(created, {"metadata", "uid"}).size() == 36);
  CHECK(body_field(created, {"status", "phase"}) == "Pending");
  CHECK(body_field(created, {"spec", "schedulerName"}) == "default-scheduler");
  CHECK(body_field(created, {"spec", "containers"}) ==
        R"([{"name":"c","image":"i","resources":{"limits":{"cpu":"500m"},"requests":{"cpu":"500m"}}}])");
  CHECK(body_field(created, {"spec", "tolerations"}).find("node.kubernetes.io/not-ready") != std::string::npos);

  auto again = t.post("/api/v1/namespaces/default/pods", kPod);
  CHECK(again.status == 409);
  CHECK(
      again.body ==
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"web-1\" already exists","reason":"AlreadyExists","details":{"name":"web-1","kind":"pods"},"code":409})");

  auto missing = t.get("/api/v1/namespaces/default/pods/nope");
  CHECK(missing.status == 404);
  CHECK(
      missing.body ==
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"pods"},"code":404})");

  auto no_ns = t.post("/api/v1/namespaces/ghost/pods", kPod);
  CHECK(no_ns.status == 404);
  CHECK(body_field(no_ns, {"message"}) == "namespaces \"ghost\" not found");

  auto node = t.post("/api/v1/nodes", R"({"metadata":{"name":"n1","labels":{"a":"b"}}})");
  REQUIRE(node.status == 201);
  std::string rv = body_field(node, {"metadata", "resourceVersion"});
  auto stale = t.request("PUT", "/api/v1/nodes/n1", R"({"metadata":{"name":"n1","resourceVersion":"1"},"spec":{"unschedulable":true}})");
  CHECK(stale.status == 409);
  CHECK(body_field(stale, {"message"}) ==
        "Operation cannot be fulfilled on nodes \"n1\": the object has been modified; please apply your changes to the "
        "latest version and try again");
  auto fresh =
      t.request("PUT", "/api/v1/nodes/n1", R"({"metadata":{"name":"n1","resourceVersion":")" + rv + R"("},"spec":{"unschedulable":true}})");
  CHECK(fresh.status == 200);
  CHECK(body_field(fresh, {"spec", "unschedulable"}) == "true");

  auto deleted = t.request("DELETE", "/api/v1/nodes/n1");
  CHECK(deleted.status == 200);
  CHECK(t.get("/api/v1/nodes/n1").status == 404);
}

TEST_CASE("generateName, name validation and kind checks", "[api]") {
  TestCluster t;
  auto gen = t.post("/api/v1/namespaces/default/pods", R"({"metadata":{"generateName":"web-"},"spec":{"containers":[{"name":"c"}]}})");
  REQUIRE(gen.status == 201);
  std::string name = body_field(gen, {"metadata", "name"});
  CHECK(name.size() == 9);
  CHECK(name.starts_with("web-"));
  auto bad = t.post("/api/v1/namespaces/default/pods", R"({"metadata":{"name":"Bad_Name"},"spec":{"containers":[{"name":"c"}]}})");
  CHECK(bad.status == 422);
  CHECK(body_field(bad, {"details", "kind"}) == "Pod");
  CHECK(body_field(bad, {"details", "causes"}).find("metadata.name") != std::string::npos);
  auto no_containers = t.post("/api/v1/namespaces/default/pods", R"({"metadata":{"name":"x"},"spec":{}})");
  CHECK(no_containers.status == 422);
  CHECK(body_field(no_containers, {"message"}) == "Pod \"x\" is invalid: spec.containers: Required value");
  auto wrong_kind = t.post("/api/v1/nodes", R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}})");
  CHECK(wrong_kind.status == 400);
  auto wrong_ns =
      t.post("/api/v1/namespaces/default/pods", R"({"metadata":{"name":"x","namespace":"other"},"spec":{"containers":[{"name":"c"}]}})");
  CHECK(wrong_ns.status == 400);
  CHECK(body_field(wrong_ns, {"message"}) == "the namespace of the provided object does not match the namespace sent on the request");
  auto not_json = t.post("/api/v1/nodes", "{nope");
  CHECK(not_json.status == 400);
}

TEST_CASE("the status subresource and generation behave like the apiserver's", "[api]") {
  TestCluster t;
  REQUIRE(
      t.post(
           "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
           R"({"metadata":{"name":"b"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"a":"b"}}},"status":{"disruptionsAllowed":99}})")
          .status == 201);
  auto b = t.get("/apis/policy/v1/namespaces/default/poddisruptionbudgets/b");
  CHECK(body_field(b, {"metadata", "generation"}) == "1");
  CHECK(body_field(b, {"status", "disruptionsAllowed"}) == "0");  // the create's status was ignored
  auto main = t.request("PATCH", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/b",
                        R"({"spec":{"minAvailable":2},"status":{"disruptionsAllowed":50}})", "application/merge-patch+json");
  CHECK(main.status == 200);
  CHECK(body_field(main, {"metadata", "generation"}) == "2");
  CHECK(body_field(main, {"status", "disruptionsAllowed"}) == "0");
  auto status = t.request("PATCH", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/b/status",
                          R"({"spec":{"minAvailable":7},"status":{"disruptionsAllowed":3}})", "application/merge-patch+json");
  CHECK(body_field(status, {"spec", "minAvailable"}) == "2");
  CHECK(body_field(status, {"metadata", "generation"}) == "2");
  auto labels = t.request("PATCH", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/b", R"({"metadata":{"labels":{"x":"y"}}})",
                          "application/merge-patch+json");
  CHECK(body_field(labels, {"metadata", "generation"}) == "2");  // metadata changes do not bump it
  std::string rv = body_field(labels, {"metadata", "resourceVersion"});
  auto noop = t.request("PATCH", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/b", R"({"metadata":{"labels":{"x":"y"}}})",
                        "application/merge-patch+json");
  CHECK(body_field(noop, {"metadata", "resourceVersion"}) == rv);  // a no-op write does not bump it
}

// The (field, message) of each cause of a 422.
static std::vector<std::pair<std::string, std::string>> causes_of(const HttpResponse& r) {
  Doc d = parse(r.body);
  std::vector<std::pair<std::string, std::string>> out;
  if (const Value* causes = json_path(d, {"details", "causes"}); causes && causes->IsArray())
    for (const auto& c : causes->GetArray()) out.emplace_back(json_string(c, {"field"}), json_string(c, {"message"}));
  return out;
}

TEST_CASE("a budget's minAvailable and maxUnavailable are validated as the API server does", "[api]") {
  TestCluster t;
  const std::string path = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
  auto budget = [](std::string_view name, std::string_view fields) {
    return fmt::format(R"({{"metadata":{{"name":"{}"}},"spec":{{{},"selector":{{"matchLabels":{{"a":"b"}}}}}}}})", name, fields);
  };
  const std::string percent_only =
      ": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is "
      "'[0-9]+%')";
  using Causes = std::vector<std::pair<std::string, std::string>>;
  for (const auto& [fields, field, value] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{R"("minAvailable":"abc")", "spec.minAvailable", R"("abc")"},
                                                                      {R"("minAvailable":"5")", "spec.minAvailable", R"("5")"},
                                                                      {R"("maxUnavailable":"-5%")", "spec.maxUnavailable", R"("-5%")"},
                                                                      {R"("maxUnavailable":"+5%")", "spec.maxUnavailable", R"("+5%")"},
                                                                      {R"("maxUnavailable":"%")", "spec.maxUnavailable", R"("%")"}}) {
    INFO(fields);
    auto r = t.post(path, budget("x", fields));
    CHECK(r.status == 422);
    CHECK(causes_of(r) == Causes{{field, "Invalid value: " + value + percent_only}});
  }
  auto over = t.post(path, budget("x", R"("minAvailable":"150%")"));
  CHECK(body_field(over, {"message"}) ==
        R"(PodDisruptionBudget.policy "x" is invalid: spec.minAvailable: Invalid value: "150%": must not be greater than 100%)");
  auto negative = t.post(path, budget("x", R"("minAvailable":-1)"));
  CHECK(body_field(negative, {"message"}) ==
        R"(PodDisruptionBudget.policy "x" is invalid: spec.minAvailable: Invalid value: -1: must be greater than or equal to 0)");
  // Every failing field is named, after the two being set at once.
  auto both = t.post(path, budget("x", R"("minAvailable":"x","maxUnavailable":"200%")"));
  CHECK(both.status == 422);
  const Causes both_causes = causes_of(both);
  REQUIRE(both_causes.size() == 3);
  CHECK(both_causes[0].first == "spec");
  CHECK(both_causes[1] == std::pair<std::string, std::string>{"spec.minAvailable", R"(Invalid value: "x")" + percent_only});
  CHECK(both_causes[2] ==
        std::pair<std::string, std::string>{"spec.maxUnavailable", R"(Invalid value: "200%": must not be greater than 100%)"});
  // What cannot be decoded into an int32 or a string is a bad request.
  for (const char* value : {"2.5", "3000000000", "true", "{}"}) {
    INFO(value);
    auto r = t.post(path, budget("x", fmt::format(R"("maxUnavailable":{})", value)));
    CHECK(r.status == 400);
    CHECK(body_field(r, {"message"}).find("into Go struct field PodDisruptionBudgetSpec.spec.maxUnavailable of type int32") !=
          std::string::npos);
  }
  // Leading zeros and 100 % are fine; null is the field left out; an update is checked too.
  auto padded = t.post(path, budget("padded", R"("minAvailable":"05%","maxUnavailable":null)"));
  CHECK(padded.status == 201);
  CHECK(body_field(padded, {"spec", "maxUnavailable"}) == "<absent>");
  CHECK(t.post(path, budget("whole", R"("maxUnavailable":"100%")")).status == 201);
  auto patched = t.request("PATCH", path + "/whole", R"({"spec":{"maxUnavailable":"101%"}})", "application/merge-patch+json");
  CHECK(patched.status == 422);
  CHECK(body_field(t.get(path + "/whole"), {"spec", "maxUnavailable"}) == "100%");
}

TEST_CASE("workloads are validated as the API server does: replicas, selector, rolling update bounds", "[api]") {
  TestCluster t;
  const std::string tmpl = R"("template":{"metadata":{"labels":{"b":"2","a":"1"}},"spec":{"containers":[{"name":"c","image":"x"}]}})";
  auto post = [&](std::string_view plural, std::string_view name, std::string_view fields) {
    return t.post(fmt::format("/apis/apps/v1/namespaces/default/{}", plural),
                  fmt::format(R"({{"metadata":{{"name":"{}"}},"spec":{{{}{}{}}}}})", name, fields, fields.empty() ? "" : ",", tmpl));
  };
  using Causes = std::vector<std::pair<std::string, std::string>>;
  const std::string mismatch = R"(Invalid value: {"a":"1","b":"2"}: `selector` does not match template `labels`)";
  // A negative count used to reach the ReplicaSet controller, which then took a pod from an empty list.
  auto negative = post("deployments", "d", R"("replicas":-1)");
  CHECK(negative.status == 422);
  CHECK(causes_of(negative) == Causes{{"spec.replicas", "Invalid value: -1: must be greater than or equal to 0"},
                                      {"spec.selector", "Required value"},
                                      {"spec.template.metadata.labels", mismatch}});
  CHECK(causes_of(post("replicasets", "r", R"("replicas":-2,"selector":{"matchLabels":{"a":"1"}})")) ==
        Causes{{"spec.replicas", "Invalid value: -2: must be greater than or equal to 0"}});
  CHECK(causes_of(post("statefulsets", "s", R"("selector":{"matchLabels":{"a":"9"}})")) ==
        Causes{{"spec.template.metadata.labels", mismatch}});
  CHECK(causes_of(post("daemonsets", "ds", R"("selector":{})")) ==
        Causes{{"spec.selector", "Invalid value: {}: empty selector is invalid for daemonset"}});
  // (The API server names a Deployment for a ReplicaSet.)
  CHECK(causes_of(post("replicasets", "rs", R"("selector":{})")) ==
        Causes{{"spec.selector", "Invalid value: {}: empty selector is invalid for deployment"}});
  CHECK(post("deployments", "d", R"("replicas":2.5,"selector":{"matchLabels":{"a":"1"}})").status == 400);
  // The rolling update's bounds: each one valid, not both 0, maxUnavailable at most 100 %.
  const std::string sel = R"("selector":{"matchLabels":{"a":"1"}},)";
  CHECK(causes_of(post("deployments", "d", sel + R"("strategy":{"rollingUpdate":{"maxUnavailable":"0%","maxSurge":0}})")) ==
        Causes{{"spec.strategy.rollingUpdate.maxUnavailable", R"(Invalid value: "0%": may not be 0 when `maxSurge` is 0)"}});
  CHECK(causes_of(post("deployments", "d", sel + R"("strategy":{"rollingUpdate":{"maxUnavailable":"150%","maxSurge":"200%"}})")) ==
        Causes{{"spec.strategy.rollingUpdate.maxUnavailable", R"(Invalid value: "150%": must not be greater than 100%)"}});
  CHECK(causes_of(post("deployments", "d", sel + R"("strategy":{"type":"Recreate","rollingUpdate":{"maxSurge":1}})")) ==
        Causes{{"spec.strategy.rollingUpdate", "Forbidden: may not be specified when strategy `type` is 'Recreate'"}});
  // A bound left out defaults to 25 %, and the type to RollingUpdate.
  auto partial = post("deployments", "d", sel + R"("replicas":0,"strategy":{"rollingUpdate":{"maxSurge":1}})");
  CHECK(partial.status == 201);
  CHECK(body_field(partial, {"spec", "strategy"}) == R"({"rollingUpdate":{"maxSurge":1,"maxUnavailable":"25%"},"type":"RollingUpdate"})");
  // An update is checked too.
  auto scaled =
      t.request("PATCH", "/apis/apps/v1/namespaces/default/deployments/d", R"({"spec":{"replicas":-1}})", "application/merge-patch+json");
  CHECK(scaled.status == 422);
}

TEST_CASE("a workload's selector that does not parse, and its update strategy, are refused as the API server refuses them", "[api]") {
  TestCluster t;
  const std::string tmpl = R"("template":{"metadata":{"labels":{"a":"1"}},"spec":{"containers":[{"name":"c","image":"x"}]}})";
  auto post = [&](std::string_view plural, std::string_view fields) {
    return t.post(fmt::format("/apis/apps/v1/namespaces/default/{}", plural),
                  fmt::format(R"({{"metadata":{{"name":"w"}},"spec":{{{},{}}}}})", fields, tmpl));
  };
  using Causes = std::vector<std::pair<std::string, std::string>>;
  // The selector's own errors, and "invalid label selector" instead of a mismatch with the template.
  CHECK(causes_of(post("deployments", R"("selector":{"matchLabels":{"a":"1"},"matchExpressions":[{"key":"b","operator":"Foo"}]})")) ==
        Causes{{"spec.selector.matchExpressions[0].operator", R"(Invalid value: "Foo": not a valid selector operator)"},
               {"spec.selector",
                R"(Invalid value: {"matchLabels":{"a":"1"},"matchExpressions":[{"key":"b","operator":"Foo"}]}: invalid label selector)"}});
  CHECK(causes_of(post("replicasets", R"("selector":{"matchExpressions":[{"key":"a","operator":"In"}]})")) ==
        Causes{{"spec.selector.matchExpressions[0].values", "Required value: must be specified when `operator` is 'In' or 'NotIn'"},
               {"spec.selector", R"(Invalid value: {"matchExpressions":[{"key":"a","operator":"In"}]}: invalid label selector)"}});
  // A StatefulSet's gives no detail, and a DaemonSet's adds nothing to the selector's own errors.
  CHECK(causes_of(post("statefulsets", R"("selector":{"matchLabels":{"a b":"1"}})")).back() ==
        std::pair<std::string, std::string>{"spec.selector", R"(Invalid value: {"matchLabels":{"a b":"1"}})"});
  CHECK(causes_of(post("daemonsets", R"("selector":{"matchExpressions":[{"key":"a","operator":"Exists","values":["1"]}]})")) ==
        Causes{
            {"spec.selector.matchExpressions[0].values", "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"}});
  const std::string sel = R"("selector":{"matchLabels":{"a":"1"}},)";
  // A Deployment's strategy of an unknown type, quoted as Go prints the internal type.
  CHECK(causes_of(post("deployments", sel + R"("strategy":{"type":"Blue","rollingUpdate":{"maxSurge":2}})")) ==
        Causes{{"spec.strategy", R"(Unsupported value: {"Type":"Blue","RollingUpdate":{"MaxUnavailable":0,"MaxSurge":2}}: )"
                                 R"(supported values: "Recreate", "RollingUpdate")"}});
  // A DaemonSet's: a known type, both bounds at most 100 %, exactly one of them not 0.
  CHECK(causes_of(post("daemonsets", sel + R"("updateStrategy":{"type":"Green"})")) ==
        Causes{{"spec.updateStrategy", R"(Unsupported value: {"Type":"Green","RollingUpdate":null}: )"
                                       R"(supported values: "RollingUpdate", "OnDelete")"}});
  CHECK(causes_of(post("daemonsets", sel + R"("updateStrategy":{"rollingUpdate":{"maxUnavailable":0}})")) ==
        Causes{{"spec.updateStrategy.rollingUpdate.maxUnavailable", "Required value: cannot be 0 when maxSurge is 0"}});
  CHECK(causes_of(post("daemonsets", sel + R"("updateStrategy":{"rollingUpdate":{"maxUnavailable":"110%","maxSurge":1}})")) ==
        Causes{{"spec.updateStrategy.rollingUpdate.maxUnavailable", R"(Invalid value: "110%": must not be greater than 100%)"},
               {"spec.updateStrategy.rollingUpdate.maxSurge", "Invalid value: 1: may not be set when maxUnavailable is non-zero"}});
  // A StatefulSet's: a known type, a rolling update only with RollingUpdate, a partition not
  // negative, a maxUnavailable not 0.
  CHECK(causes_of(post("statefulsets", sel + R"("replicas":0,"updateStrategy":{"type":"OnDelete","rollingUpdate":{"partition":2}})")) ==
        Causes{{"spec.updateStrategy.rollingUpdate",
                R"(Invalid value: {"Partition":2,"MaxUnavailable":null}: only allowed for updateStrategy 'RollingUpdate')"}});
  CHECK(causes_of(post("statefulsets", sel + R"("replicas":0,"updateStrategy":{"type":"Red"})")) ==
        Causes{{"spec.updateStrategy", R"(Invalid value: {"Type":"Red","RollingUpdate":null}: must be 'RollingUpdate' or 'OnDelete')"}});
  CHECK(
      causes_of(post("statefulsets", sel + R"("replicas":0,"updateStrategy":{"rollingUpdate":{"partition":-1,"maxUnavailable":"0%"}})")) ==
      Causes{{"spec.updateStrategy.rollingUpdate.partition", "Invalid value: -1: must be greater than or equal to 0"},
             {"spec.updateStrategy.rollingUpdate.maxUnavailable", R"(Invalid value: "0%": cannot be 0)"}});
  // Defaulted field by field: a surge alone gets maxUnavailable 1 and is refused with it; with
  // maxUnavailable 0 it is kept. OnDelete takes no defaults.
  CHECK(causes_of(post("daemonsets", sel + R"("updateStrategy":{"rollingUpdate":{"maxSurge":"10%"}})")) ==
        Causes{{"spec.updateStrategy.rollingUpdate.maxSurge", R"(Invalid value: "10%": may not be set when maxUnavailable is non-zero)"}});
  auto surge = post("daemonsets", sel + R"("updateStrategy":{"rollingUpdate":{"maxSurge":"10%","maxUnavailable":0}})");
  CHECK(surge.status == 201);
  CHECK(body_field(surge, {"spec", "updateStrategy"}) ==
        R"({"rollingUpdate":{"maxSurge":"10%","maxUnavailable":0},"type":"RollingUpdate"})");
  auto on_delete =
      t.post("/apis/apps/v1/namespaces/default/daemonsets",
             fmt::format(R"({{"metadata":{{"name":"od"}},"spec":{{{}"updateStrategy":{{"type":"OnDelete"}},{}}}}})", sel, tmpl));
  CHECK(on_delete.status == 201);
  CHECK(body_field(on_delete, {"spec", "updateStrategy"}) == R"({"type":"OnDelete"})");
  // A rolling update given with OnDelete comes back with both bounds (the internal type's are
  // not pointers); a StatefulSet's rolling update gets a partition and maxUnavailable.
  auto kept = t.post(
      "/apis/apps/v1/namespaces/default/daemonsets",
      fmt::format(
          R"({{"metadata":{{"name":"kept"}},"spec":{{{}"updateStrategy":{{"type":"OnDelete","rollingUpdate":{{"maxSurge":1}}}},{}}}}})",
          sel, tmpl));
  CHECK(body_field(kept, {"spec", "updateStrategy", "rollingUpdate"}) == R"({"maxSurge":1,"maxUnavailable":0})");
  auto stateful = t.post("/apis/apps/v1/namespaces/default/statefulsets",
                         fmt::format(R"({{"metadata":{{"name":"s"}},"spec":{{"replicas":0,{}{}}}}})", sel, tmpl));
  CHECK(body_field(stateful, {"spec", "updateStrategy"}) ==
        R"({"type":"RollingUpdate","rollingUpdate":{"partition":0,"maxUnavailable":1}})");
}

TEST_CASE("tolerations, affinity, container names, taints and priority classes are validated as the API server does", "[api]") {
  TestCluster t;
  using Causes = std::vector<std::pair<std::string, std::string>>;
  auto pod = [&](std::string_view name, std::string_view spec) {
    return t.post("/api/v1/namespaces/default/pods",
                  fmt::format(R"({{"metadata":{{"name":"{}"}},"spec":{{{}"containers":[{{"name":"c"}}]}}}})", name, spec));
  };
  CHECK(
      causes_of(pod("t", R"("tolerations":[{"key":"a","operator":"Exists","value":"v"},{"key":"b","operator":"Maybe"},)"
                         R"({"operator":"Equal"},{"key":"d","tolerationSeconds":5,"effect":"NoSchedule"}],)")) ==
      Causes{{"spec.tolerations[0].operator", R"(Invalid value: "v": value must be empty when `operator` is 'Exists')"},
             {"spec.tolerations[1].operator", R"(Unsupported value: "Maybe": supported values: "Equal", "Exists")"},
             {"spec.tolerations[2].operator", R"(Invalid value: "Equal": operator must be Exists when `key` is empty, which means )"
                                              R"("match all values and all keys")"},
             {"spec.tolerations[3].effect", R"(Invalid value: "NoSchedule": effect must be 'NoExecute' when `tolerationSeconds` is set)"}});
  const std::string term =
      "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions";
  CHECK(causes_of(pod(
            "a", R"("affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[)"
                 R"({"matchExpressions":[{"key":"a","operator":"Foo"},{"key":"b","operator":"In"},{"key":"c","operator":"Gt"}]}]}}},)")) ==
        Causes{{term + "[0].operator", R"(Invalid value: "Foo": not a valid selector operator)"},
               {term + "[1].values", "Required value: must be specified when `operator` is 'In' or 'NotIn'"},
               {term + "[2].values", "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"}});
  auto twins =
      t.post("/api/v1/namespaces/default/pods", R"({"metadata":{"name":"twins"},"spec":{"containers":[{"name":"c"},{"name":"c"}]}})");
  CHECK(causes_of(twins) == Causes{{"spec.containers[1].name", R"(Duplicate value: "c")"}});
  // A node's taints, on an update too (the operator's taint writes go through this).
  REQUIRE(t.post("/api/v1/nodes", R"({"metadata":{"name":"n"}})").status == 201);
  auto taints = t.request("PATCH", "/api/v1/nodes/n",
                          R"({"spec":{"taints":[{"key":"a","effect":"Sometimes"},{"key":"b"},{"key":"c","effect":"NoSchedule"},)"
                          R"({"key":"c","value":"y","effect":"NoSchedule"}]}})",
                          "application/merge-patch+json");
  CHECK(causes_of(taints) ==
        Causes{{"metadata.taints[0].effect",
                R"(Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute")"},
               {"metadata.taints[1].effect", "Required value"},
               {"metadata.taints[3]", R"(Duplicate value: {"Key":"c","Value":"y","Effect":"NoSchedule","TimeAdded":null}: taints must be )"
                                      "unique by key and effect pair"}});
  const std::string classes = "/apis/scheduling.k8s.io/v1/priorityclasses";
  CHECK(causes_of(t.post(classes, R"({"metadata":{"name":"high"},"value":1000000001})")) ==
        Causes{{"value", "Forbidden: maximum allowed value of a user defined priority is 1000000000"}});
  CHECK(causes_of(t.post(classes, R"({"metadata":{"name":"system-mine"},"value":1,"preemptionPolicy":"Sometimes"})")) ==
        Causes{{"metadata.name",
                "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine "
                "is not a known system priority class"},
               {"preemptionPolicy", R"(Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never")"}});
  auto top = t.post(classes, R"({"metadata":{"name":"top"},"value":1000000000})");
  CHECK(top.status == 201);
  CHECK(body_field(top, {"preemptionPolicy"}) == "PreemptLowerPriority");
  // Labels (of any kind, a node selector, matchLabels) and a ConfigMap's keys.
  const std::string name_part =
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
      "'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  auto labelled = t.post("/api/v1/namespaces/default/configmaps",
                         R"({"metadata":{"name":"l","labels":{"/x":"a","Ex.com/y":"b","ok":"-v"}},"data":{"a b":"c"}})");
  const Causes label_causes = causes_of(labelled);
  REQUIRE(label_causes.size() == 4);
  CHECK(label_causes[0] == std::pair<std::string, std::string>{"metadata.labels", R"(Invalid value: "/x": prefix part must be non-empty)"});
  CHECK(label_causes[1].second.starts_with(R"(Invalid value: "Ex.com/y": prefix part a lowercase RFC 1123 subdomain must consist)"));
  CHECK(label_causes[2].second.starts_with(R"(Invalid value: "-v": a valid label must be an empty string or consist of)"));
  CHECK(label_causes[3].first == "data[a b]");
  CHECK(causes_of(pod("s", R"("nodeSelector":{"a b":"c"},)")) == Causes{{"spec.nodeSelector", R"(Invalid value: "a b": )" + name_part}});
  CHECK(t.post("/api/v1/namespaces/default/configmaps", R"({"metadata":{"name":"m","labels":{"example.com/ok":""}},"data":{"k.1":"v"}})")
            .status == 201);
  // A name that is not valid does not hide the labels' errors; a Namespace's name is one of its
  // labels (kubernetes.io/metadata.name), whose values have at most 63 bytes too.
  const Causes both =
      causes_of(t.post("/api/v1/namespaces/default/configmaps", R"({"metadata":{"name":"Bad_Name","labels":{"k":"a b"}}})"));
  REQUIRE(both.size() == 2);
  CHECK(both[0].first == "metadata.name");
  CHECK(both[1].first == "metadata.labels");
  const std::string long_name(64, 'n');
  CHECK(causes_of(t.post("/api/v1/namespaces", fmt::format(R"({{"metadata":{{"name":"{}"}}}})", long_name))) ==
        Causes{{"metadata.name", fmt::format(R"(Invalid value: "{}": must be no more than 63 characters)", long_name)},
               {"metadata.labels", fmt::format(R"(Invalid value: "{}": must be no more than 63 bytes)", long_name)}});
}

TEST_CASE("events.k8s.io events are validated as the API server does, and a body is read as Go reads UTF-8", "[api]") {
  TestCluster t;
  auto event = [&](std::string_view ns, std::string_view name, std::string_view fields) {
    return t.post(
        fmt::format("/apis/events.k8s.io/v1/namespaces/{}/events", ns),
        fmt::format(R"({{"metadata":{{"name":"{}"}},"regarding":{{"kind":"Node","name":"n","apiVersion":"v1"}}{}}})", name, fields));
  };
  const std::string good = R"(,"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"spotshift.io/operator",)"
                           R"("reportingInstance":"i","action":"Drain","reason":"DrainStarted","type":"Normal")";
  CHECK(event("default", "ok", good + R"(,"note":")" + std::string(1024, 'x') + "\"").status == 201);
  using Causes = std::vector<std::pair<std::string, std::string>>;
  auto too_long = event("default", "long", good + R"(,"note":")" + std::string(1025, 'x') + "\"");
  CHECK(body_field(too_long, {"message"}) == R"(Event "long" is invalid: message: Invalid value: "": can have at most 1024 characters)");
  CHECK(body_field(too_long, {"details", "group"}) == "<absent>");  // the internal core Event, as the API server names it
  // A Node's event belongs in "default"; the reporting fields are required with an eventTime.
  CHECK(causes_of(event("kube-system", "elsewhere", good)) ==
        Causes{{"involvedObject.namespace", R"(Invalid value: "": does not match event.namespace)"}});
  CHECK(causes_of(event("default", "bare", R"(,"eventTime":"2026-01-01T00:00:00.000000Z","type":"Info")")) ==
        Causes{{"reportingController", "Required value"},
               {"reportingController", R"(Invalid value: "": name part must be non-empty)"},
               {"reportingController",
                R"(Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an )"
                R"(alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is )"
                R"('([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'))"},
               {"reportingInstance", "Required value"},
               {"action", "Required value"},
               {"reason", "Required value"},
               {"type", R"(Invalid value: "": has invalid value: Info)"}});
  CHECK(causes_of(event("default", "old", R"(,"type":"Normal")")) == Causes{{"eventTime", "Required value"}});
  // A byte that starts no UTF-8 sequence becomes U+FFFD (three bytes), as in Go's decoder: 1023
  // bytes and half a character make a note of 1026 bytes, too long.
  auto half = event("default", "half", good + R"(,"note":")" + std::string(1023, 'x') + "\xc3\"");
  CHECK(body_field(half, {"message"}) == R"(Event "half" is invalid: message: Invalid value: "": can have at most 1024 characters)");
  auto replaced = event("default", "replaced",
                        good +
                            ",\"note\":\"a\xc3"
                            "b\xed\xa0\x80\xc3\xa9\"");
  CHECK(replaced.status == 201);
  CHECK(body_field(replaced, {"note"}) ==
        "a\xef\xbf\xbd"
        "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9");
}

TEST_CASE("the scale subresource reads and writes spec.replicas as an autoscaling/v1 Scale", "[api]") {
  TestCluster t;
  const std::string deploy = "/apis/apps/v1/namespaces/default/deployments";
  REQUIRE(t.post(deploy,
                 R"({"metadata":{"name":"web"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"},)"
                 R"("matchExpressions":[{"key":"tier","operator":"In","values":["fe","be"]}]},)"
                 R"("template":{"metadata":{"labels":{"app":"web","tier":"fe"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}})")
              .status == 201);
  t.settle();
  auto scale = t.get(deploy + "/web/scale");
  REQUIRE(scale.status == 200);
  CHECK(body_field(scale, {"kind"}) == "Scale");
  CHECK(body_field(scale, {"apiVersion"}) == "autoscaling/v1");
  CHECK(body_field(scale, {"metadata", "name"}) == "web");
  CHECK(body_field(scale, {"metadata", "uid"}) == body_field(t.get(deploy + "/web"), {"metadata", "uid"}));
  CHECK(body_field(scale, {"spec", "replicas"}) == "2");
  CHECK(body_field(scale, {"status", "replicas"}) == "2");
  CHECK(body_field(scale, {"status", "selector"}) == "app=web,tier in (be,fe)");
  const std::string rv = body_field(scale, {"metadata", "resourceVersion"});

  // kubectl scale: a merge patch. The Deployment's spec (and generation) change; the workloads follow.
  auto patched = t.request("PATCH", deploy + "/web/scale", R"({"spec":{"replicas":4}})", "application/merge-patch+json");
  REQUIRE(patched.status == 200);
  CHECK(body_field(patched, {"spec", "replicas"}) == "4");
  auto d = t.get(deploy + "/web");
  CHECK(body_field(d, {"spec", "replicas"}) == "4");
  CHECK(body_field(d, {"metadata", "generation"}) == "2");
  t.settle();
  CHECK(body_field(t.get(deploy + "/web/scale"), {"status", "replicas"}) == "4");

  // kubectl scale --current-replicas: a PUT with the resourceVersion it read. A stale one is 409.
  auto stale = t.request("PUT", deploy + "/web/scale",
                         R"({"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"web","resourceVersion":")" + rv +
                             R"("},"spec":{"replicas":1}})");
  CHECK(stale.status == 409);
  CHECK(body_field(stale, {"message"}).starts_with("Operation cannot be fulfilled on deployments.apps \"web\""));
  auto put = t.request("PUT", deploy + "/web/scale", R"({"metadata":{"name":"web"},"spec":{"replicas":1}})");
  CHECK(put.status == 200);
  CHECK(body_field(t.get(deploy + "/web"), {"spec", "replicas"}) == "1");
  auto dry = t.request("PUT", deploy + "/web/scale?dryRun=All", R"({"spec":{"replicas":7}})");
  CHECK(body_field(dry, {"spec", "replicas"}) == "7");
  CHECK(body_field(t.get(deploy + "/web"), {"spec", "replicas"}) == "1");

  auto negative = t.request("PATCH", deploy + "/web/scale", R"({"spec":{"replicas":-1}})", "application/merge-patch+json");
  CHECK(negative.status == 422);
  CHECK(body_field(negative, {"message"}) ==
        "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0");
  auto json =
      t.request("PATCH", deploy + "/web/scale", R"([{"op":"replace","path":"/spec/replicas","value":3}])", "application/json-patch+json");
  CHECK(body_field(json, {"spec", "replicas"}) == "3");
  CHECK(t.request("PUT", deploy + "/web/scale", R"({"metadata":{"name":"other"},"spec":{"replicas":1}})").status == 400);
  CHECK(t.request("PUT", deploy + "/web/scale", R"({"kind":"Deployment","spec":{"replicas":1}})").status == 400);
  CHECK(t.get(deploy + "/nope/scale").status == 404);
  CHECK(t.get("/apis/apps/v1/namespaces/default/daemonsets/x/scale").status == 404);  // DaemonSets have none
  CHECK(t.request("DELETE", deploy + "/web/scale").status == 405);
}

TEST_CASE("patches carry resourceVersion preconditions and unknown patch types get 415", "[api]") {
  TestCluster t;
  t.post("/api/v1/nodes", R"({"metadata":{"name":"n1"}})");
  auto conflict = t.request("PATCH", "/api/v1/nodes/n1", R"({"metadata":{"resourceVersion":"1"},"spec":{"taints":[]}})",
                            "application/merge-patch+json");
  CHECK(conflict.status == 409);
  auto smp = t.request("PATCH", "/api/v1/nodes/n1", R"({"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}})",
                       "application/strategic-merge-patch+json");
  CHECK(smp.status == 200);
  auto json =
      t.request("PATCH", "/api/v1/nodes/n1", R"([{"op":"test","path":"/metadata/name","value":"other"}])", "application/json-patch+json");
  CHECK(json.status == 422);
  CHECK(
      json.body ==
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"testing value /metadata/name failed: test failed","reason":"Invalid","code":422})");
  auto unknown = t.request("PATCH", "/api/v1/nodes/n1", "{}", "text/plain");
  CHECK(unknown.status == 415);
  CHECK(body_field(unknown, {"reason"}) == "UnsupportedMediaType");
  auto missing = t.request("PATCH", "/api/v1/nodes/nope", "{}", "application/merge-patch+json");
  CHECK(missing.status == 404);
  auto forced = t.request("PATCH", "/api/v1/nodes/n1", R"({"metadata":{"labels":{"a":"b"}}})", "application/merge-patch+json");
  REQUIRE(forced.status == 200);
  t.cluster().faults().conflict_next_update("nodes", "n1");
  CHECK(t.request("PATCH", "/api/v1/nodes/n1", R"({"metadata":{"labels":{"a":"c"}}})", "application/merge-patch+json").status == 409);
  CHECK(t.request("PATCH", "/api/v1/nodes/n1", R"({"metadata":{"labels":{"a":"c"}}})", "application/merge-patch+json").status == 200);
}

TEST_CASE("pod specs are immutable except for images, tolerations and deadlines", "[api]") {
  TestCluster t;
  t.post("/api/v1/namespaces/default/pods", kPod);
  auto move =
      t.request("PATCH", "/api/v1/namespaces/default/pods/web-1", R"({"spec":{"nodeName":"elsewhere"}})", "application/merge-patch+json");
  CHECK(move.status == 422);
  CHECK(body_field(move, {"message"}).find("pod updates may not change fields other than") != std::string::npos);
  auto image = t.request("PATCH", "/api/v1/namespaces/default/pods/web-1", R"({"spec":{"containers":[{"name":"c","image":"j"}]}})",
                         "application/strategic-merge-patch+json");
  CHECK(image.status == 200);
}

TEST_CASE("lists paginate as a consistent snapshot and honour resourceVersion rules", "[api]") {
  TestCluster t;
  for (int i = 0; i < 5; ++i) t.post("/api/v1/nodes", R"({"metadata":{"name":"n)" + std::to_string(i) + R"("}})");
  auto first = t.get("/api/v1/nodes?limit=2");
  REQUIRE(first.status == 200);
  Doc d = parse(first.body);
  CHECK(json_string(d, {"kind"}) == "NodeList");
  CHECK(json_member(d, "items")->Size() == 2);
  std::string rv(json_string(d, {"metadata", "resourceVersion"}));
  std::string cont(json_string(d, {"metadata", "continue"}));
  REQUIRE_FALSE(cont.empty());
  t.post("/api/v1/nodes", R"({"metadata":{"name":"n9"}})");  // after the snapshot: must not show
  t.request("DELETE", "/api/v1/nodes/n4");                   // deleted after the snapshot: must show
  std::vector<std::string> names;
  for (int page = 0; page < 10 && !cont.empty(); ++page) {
    auto r = t.get("/api/v1/nodes?limit=2&continue=" + url_encode(cont));
    REQUIRE(r.status == 200);
    Doc p = parse(r.body);
    CHECK(json_string(p, {"metadata", "resourceVersion"}) == rv);
    for (const auto& item : json_member(p, "items")->GetArray()) names.emplace_back(name_of(item));
    cont = std::string(json_string(p, {"metadata", "continue"}));
  }
  CHECK(names == std::vector<std::string>{"n2", "n3", "n4"});

  CHECK(t.get("/api/v1/nodes?resourceVersionMatch=NotOlderThan").status == 400);
  CHECK(t.get("/api/v1/nodes?resourceVersion=0&resourceVersionMatch=Exact").status == 400);
  CHECK(t.get("/api/v1/nodes?resourceVersion=3&continue=abc").status == 400);
  CHECK(t.get("/api/v1/nodes?continue=%21%21").status == 400);
  CHECK(t.get("/api/v1/nodes?resourceVersion=0&limit=1").status == 200);
  auto too_large = t.get("/api/v1/nodes?resourceVersion=999999&resourceVersionMatch=NotOlderThan");
  CHECK(too_large.status == 504);
  CHECK(body_field(too_large, {"details", "causes"}).find("ResourceVersionTooLarge") != std::string::npos);
  auto exact = t.get("/api/v1/nodes?resourceVersion=" + rv + "&resourceVersionMatch=Exact");
  CHECK(exact.status == 200);
  CHECK(parse(exact.body)["items"].Size() == 5);

  t.cluster().faults().expire_next_continue();
  auto expired = t.get("/api/v1/nodes?limit=2&continue=" + url_encode(std::string(json_string(d, {"metadata", "continue"}))));
  CHECK(expired.status == 410);
  CHECK(body_field(expired, {"reason"}) == "Expired");
  t.cluster().store().compact(t.cluster().store().resource_version());
  auto compacted = t.get("/api/v1/nodes?resourceVersion=" + rv + "&resourceVersionMatch=Exact");
  CHECK(compacted.status == 410);
}

TEST_CASE("label and field selectors filter lists, and unknown fields are rejected", "[api]") {
  TestCluster t({}, R"(
apiVersion: v1
kind: Node
metadata: {name: a, labels: {tier: web}}
---
apiVersion: v1
kind: Node
metadata: {name: b, labels: {tier: db}}
---
apiVersion: v1
kind: Pod
metadata: {name: p1, labels: {app: web}}
spec: {nodeName: a, containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: p2, labels: {app: web, multi: "1"}}
spec: {nodeName: b, containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: p3, namespace: kube-system, labels: {app: agent}}
spec: {containers: [{name: c}]}
)");
  auto names = [&](const std::string& path) {
    auto r = t.get(path);
    REQUIRE(r.status == 200);
    std::vector<std::string> out;
    Doc d = parse(r.body);
    for (const auto& item : d["items"].GetArray()) out.emplace_back(name_of(item));
    return out;
  };
  CHECK(names("/api/v1/nodes?labelSelector=tier%3Dweb") == std::vector<std::string>{"a"});
  CHECK(names("/api/v1/pods?labelSelector=app+in+%28web%2Cagent%29%2C%21multi") == std::vector<std::string>{"p1", "p3"});
  CHECK(names("/api/v1/pods?fieldSelector=spec.nodeName%3Db") == std::vector<std::string>{"p2"});
  CHECK(names("/api/v1/pods?fieldSelector=spec.nodeName%3D") == std::vector<std::string>{"p3"});
  CHECK(names("/api/v1/namespaces/default/pods") == std::vector<std::string>{"p1", "p2"});
  CHECK(names("/api/v1/pods?fieldSelector=metadata.namespace%21%3Ddefault") == std::vector<std::string>{"p3"});
  auto bad = t.get("/api/v1/pods?fieldSelector=spec.foo%3Dx");
  CHECK(bad.status == 400);
  CHECK(body_field(bad, {"message"}) == "field label not supported: spec.foo");
  CHECK(t.get("/api/v1/pods?labelSelector=a+in+b").status == 400);
}

TEST_CASE("kubectl's Table and metadata-only requests get their shapes", "[api]") {
  TestCluster t({}, R"(
apiVersion: v1
kind: Node
metadata: {name: a, labels: {node-role.kubernetes.io/worker: ""}}
spec: {unschedulable: true}
)");
  auto table = t.request("GET", "/api/v1/nodes?limit=500", "", "",
                         "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json");
  CHECK(table.content_type == "application/json;as=Table;v=v1;g=meta.k8s.io");
  Doc d = parse(table.body);
  CHECK(json_string(d, {"kind"}) == "Table");
  REQUIRE(d["rows"].Size() == 1);
  // Every column's cell, the -o wide ones (priority 1) included: kubectl hides those itself.
  CHECK(to_json(d["rows"][0]["cells"]) ==
        R"x(["a","Ready,SchedulingDisabled","worker","0s","v1.32.0","10.0.0.1","<none>","kubesim simulated node",)x"
        R"x("none (simulated)","kubesim://1"])x");
  CHECK(json_string(d["rows"][0], {"object", "kind"}) == "PartialObjectMetadata");
  auto partial = t.request("GET", "/api/v1/nodes", "", "", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1");
  CHECK(json_string(parse(partial.body), {"kind"}) == "PartialObjectMetadataList");
}

TEST_CASE("deletes take options as JSON, query or kubectl's protobuf envelope", "[api]") {
  // "k8s\0" + Unknown{raw(2): DeleteOptions{gracePeriodSeconds(1): 5, preconditions(2){uid(1): "u"}}}
  std::string raw("\x08\x05\x12\x03\x0a\x01u", 7);
  std::string envelope = std::string("\x12", 1) + static_cast<char>(raw.size()) + raw;
  std::string body = std::string("k8s\0", 4) + envelope;
  auto pb = decode_delete_options_protobuf(body);
  REQUIRE(pb);
  CHECK(pb->grace_period_seconds == 5);
  CHECK(pb->precondition_uid == "u");
  CHECK_FALSE(decode_delete_options_protobuf("junk"));

  TestCluster t;
  t.post("/api/v1/nodes", R"({"metadata":{"name":"n1"}})");
  auto wrong_uid = t.request("DELETE", "/api/v1/nodes/n1", body, "application/vnd.kubernetes.protobuf");
  CHECK(wrong_uid.status == 409);
  CHECK(body_field(wrong_uid, {"message"}).find("Precondition failed: UID in precondition: u") != std::string::npos);
  auto json = t.request("DELETE", "/api/v1/nodes/n1", R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"})");
  CHECK(json.status == 200);
}

namespace {
// Protobuf as kubectl writes it, for the cases kubectl itself never sends.
std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7f) | 0x80);
  return out + static_cast<char>(v);
}
std::string pb_bytes(uint32_t field, std::string_view v) { return varint(uint64_t(field) << 3 | 2) + varint(v.size()) + std::string(v); }
std::string pb_varint(uint32_t field, uint64_t v) { return varint(uint64_t(field) << 3) + varint(v); }
std::string pb_envelope(std::string_view api_version, std::string_view kind, std::string_view raw) {
  return std::string("k8s\0", 4) + pb_bytes(1, pb_bytes(1, api_version) + pb_bytes(2, kind)) + pb_bytes(2, raw);
}
constexpr const char* kProtobuf = "application/vnd.kubernetes.protobuf";
}  // namespace

TEST_CASE("protobuf creates: pointer fields keep their zero, other zeros are left out, unknown fields are refused", "[api]") {
  TestCluster t;
  // Deployment{metadata{name d}, spec{replicas 0, template{spec{containers[{name c, image i,
  // resources{requests{cpu: 100m}}}], hostPID false}}, minReadySeconds 0, paused false}}, with
  // the zero values gogo-protobuf writes for fields that are not pointers.
  const std::string container = pb_bytes(1, "c") + pb_bytes(2, "i") + pb_bytes(5, "") +
                                pb_bytes(8, pb_bytes(2, pb_bytes(1, "cpu") + pb_bytes(2, pb_bytes(1, "100m")))) + pb_varint(16, 0);
  const std::string pod_spec = pb_bytes(2, container) + pb_bytes(3, "") + pb_varint(12, 0);
  const std::string spec = pb_varint(1, 0) +
                           pb_bytes(3, pb_bytes(1, pb_bytes(11, pb_bytes(1, "app") + pb_bytes(2, "d"))) + pb_bytes(2, pod_spec)) +
                           pb_bytes(2, pb_bytes(1, pb_bytes(1, "app") + pb_bytes(2, "d"))) + pb_varint(5, 0) + pb_varint(7, 0);
  const std::string meta = pb_bytes(1, pb_bytes(1, "d") + pb_bytes(2, "") + pb_varint(7, 0) + pb_bytes(8, ""));
  auto created = t.request("POST", "/apis/apps/v1/namespaces/default/deployments",
                           pb_envelope("apps/v1", "Deployment", meta + pb_bytes(2, spec)), kProtobuf);
  INFO(created.body);
  REQUIRE(created.status == 201);
  CHECK(body_field(created, {"spec", "replicas"}) == "0");
  CHECK(body_field(created, {"spec", "minReadySeconds"}) == "<absent>");
  CHECK(body_field(created, {"spec", "paused"}) == "<absent>");
  CHECK(body_field(created, {"metadata", "generateName"}) == "<absent>");
  CHECK(body_field(created, {"spec", "template", "spec", "containers"}) ==
        R"([{"name":"c","image":"i","resources":{"requests":{"cpu":"100m"}}}])");
  CHECK(body_field(created, {"spec", "template", "spec", "hostPID"}) == "<absent>");

  // PodSpec's affinity (18) is outside what kubesim reads: refused, naming it, not dropped.
  const std::string affinity = pb_bytes(2, pb_bytes(3, pb_bytes(2, pb_bytes(2, pb_bytes(1, "c") + pb_bytes(2, "i")) + pb_bytes(18, ""))));
  auto refused = t.request("POST", "/apis/apps/v1/namespaces/default/deployments",
                           pb_envelope("apps/v1", "Deployment", pb_bytes(1, pb_bytes(1, "e")) + affinity), kProtobuf);
  CHECK(refused.status == 415);
  CHECK(
      body_field(refused, {"message"}) ==
      "kubesim does not read field 18 of PodSpec (at spec.template.spec) of a Deployment sent as protobuf: send JSON (kubectl create -f)");
  CHECK(t.get("/apis/apps/v1/namespaces/default/deployments/e").status == 404);

  // A kind kubesim has no protobuf schema for, a body of another kind, and a cut-off body.
  auto replica_set = t.request("POST", "/apis/apps/v1/namespaces/default/replicasets",
                               pb_envelope("apps/v1", "ReplicaSet", pb_bytes(1, pb_bytes(1, "r"))), kProtobuf);
  CHECK(replica_set.status == 415);
  CHECK(body_field(replica_set, {"message"}) == "kubesim does not read a ReplicaSet sent as protobuf: send JSON (kubectl create -f)");
  auto other = t.request("POST", "/apis/apps/v1/namespaces/default/deployments",
                         pb_envelope("v1", "Service", pb_bytes(1, pb_bytes(1, "s"))), kProtobuf);
  CHECK(other.status == 400);
  CHECK(body_field(other, {"message"}) == "the protobuf body is a Service, not a Deployment");
  std::string cut = pb_envelope("apps/v1", "Deployment", meta + pb_bytes(2, spec));
  cut.resize(cut.size() - 3);
  CHECK(t.request("POST", "/apis/apps/v1/namespaces/default/deployments", cut, kProtobuf).status == 400);
  // A negative int32 is ten bytes of two's complement.
  auto low = t.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                       pb_envelope("scheduling.k8s.io/v1", "PriorityClass", pb_bytes(1, pb_bytes(1, "low")) + pb_varint(2, uint64_t(-5))),
                       kProtobuf);
  REQUIRE(low.status == 201);
  CHECK(body_field(low, {"value"}) == "-5");
}

TEST_CASE("events are one storage with two API views", "[api]") {
  TestCluster t;
  auto created = t.post("/apis/events.k8s.io/v1/namespaces/default/events",
                        R"({"metadata":{"name":"e1"},"eventTime":"2025-01-01T00:00:00.000000Z","action":"Drain",
                            "reason":"DrainStarted","note":"draining node a","type":"Normal","reportingController":"spotshift.io/rescheduler",
                            "reportingInstance":"op-1","regarding":{"kind":"Node","name":"a","apiVersion":"v1"}})");
  REQUIRE(created.status == 201);
  CHECK(body_field(created, {"note"}) == "draining node a");
  auto core = t.get("/api/v1/namespaces/default/events/e1");
  CHECK(body_field(core, {"message"}) == "draining node a");
  CHECK(body_field(core, {"involvedObject", "name"}) == "a");
  CHECK(body_field(core, {"reportingComponent"}) == "spotshift.io/rescheduler");
  CHECK(body_field(core, {"source", "component"}) == "spotshift.io/rescheduler");
  auto listed = t.get("/api/v1/events?fieldSelector=involvedObject.kind%3DNode%2Creason%3DDrainStarted");
  CHECK(parse(listed.body)["items"].Size() == 1);
  auto view = t.get("/apis/events.k8s.io/v1/events");
  CHECK(json_string(parse(view.body)["items"][0], {"regarding", "kind"}) == "Node");
}

TEST_CASE("discovery lists the eviction subresource and CRDs join discovery and OpenAPI", "[api]") {
  TestCluster t;
  auto v1 = t.get("/api/v1");
  CHECK(
      v1.body.find(
          R"({"name":"pods/eviction","singularName":"","namespaced":true,"group":"policy","version":"v1","kind":"Eviction","verbs":["create"]})") !=
      std::string::npos);
  auto apps = t.get("/apis/apps/v1").body;
  CHECK(
      apps.find(
          R"({"name":"deployments/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]})") !=
      std::string::npos);
  CHECK(apps.find("daemonsets/scale") == std::string::npos);
  CHECK(t.get("/version").status == 200);
  CHECK(t.get("/apis").body.find("\"coordination.k8s.io/v1\"") != std::string::npos);
  CHECK(t.get("/apis/example.com/v1").status == 404);
  auto crd = t.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", R"({"metadata":{"name":"widgets.example.com"},
      "spec":{"group":"example.com","scope":"Cluster","names":{"plural":"widgets","kind":"Widget"},
      "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}})");
  REQUIRE(crd.status == 201);
  CHECK(body_field(crd, {"status", "conditions"}).find("Established") != std::string::npos);
  CHECK(t.get("/apis/example.com/v1").body.find("\"widgets\"") != std::string::npos);
  CHECK(t.get("/openapi/v3").body.find("apis/example.com/v1") != std::string::npos);
  CHECK(t.get("/openapi/v3/apis/example.com/v1").body.find("fieldValidation") != std::string::npos);
  // The CRD's schema under the apiserver's name for it, with the GVK kubectl explain looks for.
  auto openapi = t.get("/openapi/v3/apis/example.com/v1").body;
  CHECK(openapi.find(R"("com.example.v1.Widget":{"type":"object","x-kubernetes-preserve-unknown-fields":true,)"
                     R"("x-kubernetes-group-version-kind":[{"group":"example.com","version":"v1","kind":"Widget"}],)") !=
        std::string::npos);
  REQUIRE(t.post("/apis/example.com/v1/widgets", R"({"metadata":{"name":"w"},"spec":{"any":1}})").status == 201);
  CHECK(t.request("PATCH", "/apis/example.com/v1/widgets/w", "{}", "application/strategic-merge-patch+json").status == 415);
  auto bad_crd =
      t.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
             R"({"metadata":{"name":"wrong"},"spec":{"group":"g.io","names":{"plural":"ps","kind":"P"},"versions":[{"name":"v1"}]}})");
  CHECK(bad_crd.status == 422);
  REQUIRE(t.request("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com").status == 200);
  CHECK(t.get("/apis/example.com/v1/widgets").status == 404);
}

TEST_CASE("health paths answer as kube-apiserver's: ok, each check with verbose, one check by name", "[api]") {
  TestCluster t;
  for (const char* path : {"/healthz", "/livez", "/readyz", "/readyz?exclude=etcd", "/readyz/ping", "/livez/log", "/healthz/ping"}) {
    auto r = t.get(path);
    CHECK(r.status == 200);
    CHECK(r.body == "ok");
    CHECK(r.content_type == "text/plain; charset=utf-8");
  }
  CHECK(t.get("/readyz?verbose").body == "[+]ping ok\n[+]log ok\n[+]shutdown ok\nreadyz check passed\n");
  CHECK(t.get("/livez?verbose").body == "[+]ping ok\n[+]log ok\nlivez check passed\n");
  CHECK(t.get("/healthz?verbose&exclude=log&exclude=etcd&exclude=zzz").body ==
        "[+]ping ok\n[+]log excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"etcd\", \"zzz\"\n"
        "healthz check passed\n");
  for (const char* path : {"/readyz/nope", "/readyz/", "/livez/shutdown"}) {
    auto r = t.get(path);
    CHECK(r.status == 404);
    CHECK(r.body == "404 page not found\n");
  }
  CHECK(t.get("/readyzz").status == 404);
}

TEST_CASE("injected faults answer with the requested status and Retry-After", "[api]") {
  TestCluster t;
  FaultRule rule;
  rule.verb = "list";
  rule.resource = "nodes";
  rule.status = 429;
  rule.retry_after_seconds = 1;
  rule.count = 2;
  t.cluster().faults().add(rule);
  auto a = t.get("/api/v1/nodes");
  CHECK(a.status == 429);
  REQUIRE(a.headers.size() == 1);
  CHECK(a.headers[0] == std::pair<std::string, std::string>{"Retry-After", "1"});
  CHECK(body_field(a, {"details", "retryAfterSeconds"}) == "1");
  CHECK(t.get("/api/v1/nodes").status == 429);
  CHECK(t.get("/api/v1/nodes").status == 200);
  auto parsed = FaultRule::from_json(R"({"verb":"create","resource":"pods/eviction","status":503,"count":1})");
  REQUIRE(parsed);
  CHECK(parsed->resource == "pods/eviction");
}

TEST_CASE("mutating webhooks on create: selected by rules, namespaces and matchConditions; patched; failurePolicy decides", "[api]") {
  TestCluster t;
  REQUIRE(t.post("/api/v1/namespaces", R"({"metadata":{"name":"shop"}})").status == 201);
  // The API server labels every namespace with its name.
  CHECK(body_field(t.get("/api/v1/namespaces/shop"), {"metadata", "labels", "kubernetes.io/metadata.name"}) == "shop");
  auto config = [&](std::string_view policy) {
    return fmt::format(R"({{"metadata":{{"name":"hook"}},"webhooks":[{{"name":"h.example.com","admissionReviewVersions":["v1"],
      "sideEffects":"None","failurePolicy":"{}","timeoutSeconds":1,"clientConfig":{{"url":"https://127.0.0.1:9/mutate"}},
      "rules":[{{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"],"scope":"Namespaced"}}],
      "namespaceSelector":{{"matchExpressions":[{{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["default"]}}]}},
      "matchConditions":[{{"name":"labelled","expression":"has(object.metadata.labels) && object.metadata.labels.app == 'web'"}}]}}]}})",
                       policy);
  };
  const std::string hooks = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
  REQUIRE(t.post(hooks, config("Fail")).status == 201);
  // Every call is answered by this stand-in for the webhook: what it was sent, and a patch.
  std::vector<std::string> sent;
  t.cluster().set_webhook_caller([&](const std::string& url, const std::string&, const std::string& body, std::chrono::milliseconds) {
    sent.push_back(url + " " + body);
    Doc review = parse(body);
    std::string patch = base64_encode(R"([{"op":"add","path":"/metadata/labels/steered","value":"yes"}])");
    return Result<std::string>(fmt::format(
        R"({{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{{"uid":"{}","allowed":true,"patchType":"JSONPatch","patch":"{}"}}}})",
        json_string(review, {"request", "uid"}), patch));
  });
  auto created = t.post("/api/v1/namespaces/shop/pods", R"({"metadata":{"generateName":"web-","labels":{"app":"web"}},
    "spec":{"containers":[{"name":"c","image":"i"}]}})");
  REQUIRE(created.status == 201);
  CHECK(body_field(created, {"metadata", "labels", "steered"}) == "yes");
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].starts_with("https://127.0.0.1:9/mutate {\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\""));
  // The webhook saw the pod before its name was generated, in the request's namespace.
  Doc review = parse(sent[0].substr(sent[0].find(' ') + 1));
  CHECK(json_string(review, {"request", "namespace"}) == "shop");
  CHECK(json_string(review, {"request", "operation"}) == "CREATE");
  CHECK(json_string(review, {"request", "object", "metadata", "name"}).empty());
  CHECK(json_string(review, {"request", "object", "metadata", "generateName"}) == "web-");

  // Not sent: another namespace the selector leaves out, a pod the matchCondition does not match.
  CHECK(t.post("/api/v1/namespaces/default/pods", kPod).status == 201);
  CHECK(
      t.post("/api/v1/namespaces/shop/pods", R"({"metadata":{"name":"other"},"spec":{"containers":[{"name":"c","image":"i"}]}})").status ==
      201);
  CHECK(sent.size() == 1);

  // A call that fails: failurePolicy Fail refuses the create with the API server's message,
  // Ignore lets it through untouched.
  t.cluster().set_webhook_caller(
      [](const std::string& url, const std::string&, const std::string&, std::chrono::milliseconds) -> Result<std::string> {
        return Error::network(fmt::format("Post \"{}\": dial tcp 127.0.0.1:9: connect: connection refused", url));
      });
  const char* web = R"({"metadata":{"generateName":"web-","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"i"}]}})";
  auto refused = t.post("/api/v1/namespaces/shop/pods", web);
  CHECK(refused.status == 500);
  CHECK(body_field(refused, {"message"}) ==
        "Internal error occurred: failed calling webhook \"h.example.com\": failed to call webhook: Post \"https://127.0.0.1:9/mutate\": "
        "dial tcp 127.0.0.1:9: connect: connection refused");
  REQUIRE(t.request("DELETE", hooks + "/hook", "").status == 200);
  REQUIRE(t.post(hooks, config("Ignore")).status == 201);
  auto ignored = t.post("/api/v1/namespaces/shop/pods", web);
  CHECK(ignored.status == 201);
  CHECK(body_field(ignored, {"metadata", "labels", "steered"}) == "<absent>");
}
