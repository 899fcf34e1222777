// spotshift plan's snapshot reader: a List read object by object from its text.

#include "plan_command.hpp"
#include "support/catch.hpp"

#include <algorithm>
#include <string>
#include <vector>

using namespace spotshift;

namespace {

std::vector<std::string> pod_names(const op::Snapshot& s) {
  std::vector<std::string> out;
  for (const auto& p : s.input.pods) out.push_back(p->key());
  return out;
}

// A Node whose kind comes last, a nested PodList, a pod with escaped strings, a number among the
// items, a kind the planner does not read, a Namespace and a budget.
const char* const kSnapshot = R"({"apiVersion":"v1","items":[
  {"metadata":{"name":"od-1","labels":{"node-role.kubernetes.io/worker":""}},
   "status":{"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"},"conditions":[{"type":"Ready","status":"True"}]},
   "apiVersion":"v1","kind":"Node"},
  42,
  {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"shop"},"data":{"items":"[1,2]"}},
  {"apiVersion":"v1","items":[
     {"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-\u0061","namespace":"shop","labels":{"app":"w\u0065b"}},
      "spec":{"nodeName":"od-1","containers":[{"name":"c","resources":{"requests":{"cpu":"100m"}}}]},"status":{"phase":"Running"}},
     {"apiVersion":"v1","kind":"Pod","metadata":{"name":"broken","namespace":"shop"},"spec":{"nodeName":7}}],
   "kind":"PodList","metadata":{}},
  {"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop","labels":{"team":"a"}}},
  {"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"b","namespace":"shop"},
   "spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"web"}}}}
],"kind":"List","metadata":{"resourceVersion":""}})";

}  // namespace

TEST_CASE("a snapshot is read object by object, whatever the order of an object's members", "[snapshot]") {
  auto s = op::read_snapshot(kSnapshot);
  REQUIRE(s);
  REQUIRE(s->input.nodes.size() == 1);
  CHECK(s->input.nodes[0]->name() == "od-1");
  CHECK(s->input.nodes[0]->allocatable.cpu_milli == 4000);
  CHECK(pod_names(*s) == std::vector<std::string>{"shop/web-a"});
  CHECK(s->input.pods[0]->meta.labels.get("app")->view() == "web");
  CHECK(s->input.pods[0]->requests.cpu_milli == 100);
  REQUIRE(s->input.pdbs.size() == 1);
  CHECK(s->input.pdbs[0]->matches(*s->input.pods[0]));
  CHECK(s->input.namespaces.at("shop").get("team")->view() == "a");
  REQUIRE(s->warnings.size() == 1);
  CHECK(s->warnings[0] == "skipped: decoding pod \"shop/broken\": spec.nodeName: expected a string, got a number");
}

TEST_CASE("a YAML snapshot reads the same as its JSON", "[snapshot]") {
  // JSON is YAML: not starting with '{', the same text takes the YAML reader's path.
  auto json = op::read_snapshot(kSnapshot);
  auto yaml = op::read_snapshot(std::string("---\n") + kSnapshot);
  REQUIRE(json);
  REQUIRE(yaml);
  REQUIRE(json->input.nodes.size() == 1);
  REQUIRE(json->input.pods.size() == 1);
  REQUIRE(json->input.pdbs.size() == 1);
  CHECK(pod_names(*yaml) == pod_names(*json));
  CHECK(*yaml->input.nodes[0] == *json->input.nodes[0]);
  CHECK(*yaml->input.pods[0] == *json->input.pods[0]);
  CHECK(*yaml->input.pdbs[0] == *json->input.pdbs[0]);
  CHECK(yaml->warnings == json->warnings);
}

TEST_CASE("a snapshot that is not JSON, or holds no node, is refused with the reason", "[snapshot]") {
  std::string text = kSnapshot;
  auto cut = op::read_snapshot(std::string_view(text).substr(0, text.size() / 2));
  REQUIRE_FALSE(cut);
  CHECK_THAT(cut.error().message, Catch::StartsWith("invalid JSON at offset"));
  auto trailing = op::read_snapshot(text + " {}");
  REQUIRE_FALSE(trailing);
  CHECK_THAT(trailing.error().message, Catch::Contains("after the value"));
  auto no_nodes = op::read_snapshot(R"({"kind":"List","items":[]})");
  REQUIRE_FALSE(no_nodes);
  CHECK_THAT(no_nodes.error().message, Catch::StartsWith("the snapshot holds no Node objects"));
}
