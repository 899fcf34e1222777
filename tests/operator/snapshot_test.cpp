// spotshift plan's snapshot reader: a List read object by object from its text.

#include "core/strings.hpp"
#include "plan_command.hpp"
#include "support/catch.hpp"

#include <fmt/format.h>

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

namespace {

// A List written as kubectl writes it: four spaces per level, each item on lines of its own.
std::string pretty_list(const std::vector<std::string>& items, const std::string& after_items = "") {
  std::string text = "{\n    \"apiVersion\": \"v1\",\n    \"items\": [";
  for (size_t i = 0; i < items.size(); ++i)
    text += (i ? ",\n        {\n            " : "\n        {\n            ") + items[i] + "\n        }";
  return text + "\n    ],\n" + after_items + "    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n";
}

std::string node_item(int i) {
  return fmt::format(R"("apiVersion": "v1", "kind": "Node", "metadata": {{"name": "n-{}"}},
            "status": {{"allocatable": {{"cpu": "4", "memory": "8Gi", "pods": "110"}}, "conditions": [{{"type": "Ready", "status": "True"}}]}})",
                     i);
}

std::string pod_item(int i, const std::string& node_name = "") {
  return fmt::format(R"("apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "p-{}", "namespace": "ns-{}", "labels": {{"app": "a{}"}}}},
            "spec": {{"nodeName": {}, "containers": [{{"name": "c", "resources": {{"requests": {{"cpu": "{}m"}}}}}}]}}, "status": {{"phase": "Running"}})",
                     i, i % 3, i % 5, node_name.empty() ? fmt::format("\"n-{}\"", i % 7) : node_name, 10 + i);
}

std::string namespace_item(int ns, int team) {
  return fmt::format(R"("apiVersion": "v1", "kind": "Namespace", "metadata": {{"name": "ns-{}", "labels": {{"team": "t{}"}}}})", ns, team);
}

// Nodes, pods (one that does not decode), a namespace listed twice (the later one counts) and
// budgets, over the whole list.
std::vector<std::string> mixed_items() {
  std::vector<std::string> items;
  for (int i = 0; i < 400; ++i) {
    if (i % 50 == 0) items.push_back(node_item(i / 50));
    if (i % 97 == 0) items.push_back(namespace_item(i % 3, i));
    if (i == 333) items.push_back(pod_item(i, "7"));
    items.push_back(pod_item(i));
    if (i % 120 == 0)
      items.push_back(
          fmt::format(R"("apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {{"name": "b{}", "namespace": "ns-0"}},
            "spec": {{"minAvailable": 1, "selector": {{"matchLabels": {{"app": "a{}"}}}}}})",
                      i, i % 5));
  }
  return items;
}

void require_same(const op::Snapshot& a, const op::Snapshot& b) {
  REQUIRE(a.input.nodes.size() == b.input.nodes.size());
  for (size_t i = 0; i < a.input.nodes.size(); ++i) CHECK(*a.input.nodes[i] == *b.input.nodes[i]);
  REQUIRE(a.input.pods.size() == b.input.pods.size());
  for (size_t i = 0; i < a.input.pods.size(); ++i) CHECK(*a.input.pods[i] == *b.input.pods[i]);
  REQUIRE(a.input.pdbs.size() == b.input.pdbs.size());
  for (size_t i = 0; i < a.input.pdbs.size(); ++i) CHECK(*a.input.pdbs[i] == *b.input.pdbs[i]);
  REQUIRE(a.input.namespaces.size() == b.input.namespaces.size());
  for (const auto& [name, labels] : a.input.namespaces) CHECK(b.input.namespaces.at(name) == labels);
  CHECK(a.warnings == b.warnings);
}

}  // namespace

TEST_CASE("a long List as kubectl writes it is read by several readers into the same snapshot", "[snapshot]") {
  const std::string text = pretty_list(mixed_items());
  size_t used = 0;
  auto one = op::read_snapshot(text, {.readers = 1, .min_bytes_per_reader = 1, .used = &used});
  REQUIRE(one);
  CHECK(used == 1);
  REQUIRE(one->input.pods.size() == 400);
  REQUIRE(one->warnings.size() == 1);
  CHECK(one->input.namespaces.at("ns-1").get("team")->view() == "t388");  // the later of two
  for (size_t readers : {2, 3, 4, 7}) {
    INFO(readers << " readers");
    auto shared = op::read_snapshot(text, {.readers = readers, .min_bytes_per_reader = 1, .used = &used});
    REQUIRE(shared);
    CHECK(used == readers);
    require_same(*one, *shared);
  }
  // Shares no smaller than a minimum: this text is about 170 KB.
  auto few = op::read_snapshot(text, {.readers = 4, .min_bytes_per_reader = text.size() / 2, .used = &used});
  REQUIRE(few);
  CHECK(used == 2);
  require_same(*one, *few);
}

TEST_CASE("kubectl's own output is shared among readers into the same snapshot", "[snapshot]") {
  // tests/data/kubectl/README.md: the pinned kubectl's -o json of a cluster on the real control plane.
  auto text = read_file(std::string(SOURCE_ROOT) + "/tests/data/kubectl/demo-cluster.json");
  REQUIRE(text);
  size_t used = 0;
  auto one = op::read_snapshot(*text, {.readers = 1, .min_bytes_per_reader = 1, .used = &used});
  REQUIRE(one);
  CHECK(used == 1);
  CHECK(one->input.nodes.size() == 6);
  CHECK(one->input.pods.size() == 15);
  CHECK(one->input.pdbs.size() == 1);
  CHECK(one->warnings.empty());
  for (size_t readers : {2, 3, 6}) {
    INFO(readers << " readers");
    auto shared = op::read_snapshot(*text, {.readers = readers, .min_bytes_per_reader = 1, .used = &used});
    REQUIRE(shared);
    CHECK(used == readers);
    require_same(*one, *shared);
  }
}

TEST_CASE("a List whose lines only look like items where the readers would start is read by one", "[snapshot]") {
  // The second half of the text is another array whose objects are indented as items are: the
  // second reader's guess is not an item, the first reads past it and reads on alone.
  std::vector<std::string> items = mixed_items();
  std::string others = "    \"extra\": [";
  for (size_t i = 0; i < items.size(); ++i)
    others += (i ? ",\n        {\n            " : "\n        {\n            ") + pod_item(1000 + static_cast<int>(i)) + "\n        }";
  others += "\n    ],\n";
  const std::string text = pretty_list(items, others);
  size_t used = 0;
  auto one = op::read_snapshot(text, {.readers = 1, .min_bytes_per_reader = 1, .used = &used});
  auto two = op::read_snapshot(text, {.readers = 2, .min_bytes_per_reader = 1, .used = &used});
  REQUIRE(one);
  REQUIRE(two);
  CHECK(used == 1);
  REQUIRE(one->input.pods.size() == 400);
  require_same(*one, *two);
  // Written on one line, a List has no place to share out.
  std::string line = kSnapshot;
  std::replace(line.begin(), line.end(), '\n', ' ');
  auto compact = op::read_snapshot(line, {.readers = 4, .min_bytes_per_reader = 1, .used = &used});
  REQUIRE(compact);
  CHECK(used == 1);
  CHECK(pod_names(*compact) == std::vector<std::string>{"shop/web-a"});
}

TEST_CASE("an error in a later reader's share is the error one reader finds, at the same offset", "[snapshot]") {
  std::string text = pretty_list(mixed_items());
  const size_t at = text.find("\"p-390\"");
  REQUIRE(at != std::string::npos);
  text.insert(at, "}");
  auto one = op::read_snapshot(text, {.readers = 1, .min_bytes_per_reader = 1});
  REQUIRE_FALSE(one);
  CHECK_THAT(one.error().message, Catch::StartsWith("invalid JSON at offset"));
  for (size_t readers : {2, 3, 5}) {
    size_t used = 0;
    auto shared = op::read_snapshot(text, {.readers = readers, .min_bytes_per_reader = 1, .used = &used});
    REQUIRE_FALSE(shared);
    CHECK(used == readers);
    CHECK(shared.error().message == one.error().message);
  }
  // And an error before the second reader's start stops them all with the first reader's error.
  std::string early = pretty_list(mixed_items());
  early.insert(early.find("\"p-5\""), "]");
  auto first = op::read_snapshot(early, {.readers = 1, .min_bytes_per_reader = 1});
  auto both = op::read_snapshot(early, {.readers = 3, .min_bytes_per_reader = 1});
  REQUIRE_FALSE(first);
  REQUIRE_FALSE(both);
  CHECK(both.error().message == first.error().message);
}
