#include "core/strings.hpp"
#include "model/lease.hpp"
#include "model/node.hpp"
#include "model/pdb.hpp"
#include "model/pod.hpp"
#include "model/workload.hpp"
#include "model/yaml.hpp"

#include "support/catch.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

using namespace spotshift;
using namespace spotshift::model;

namespace {

std::string fixture(const std::string& name) { return read_file(std::string(TESTDATA_DIR "/") + name).value(); }

// Every kind decodes from its text in one pass, as the client reads it.
Result<Pod> pod_from(const std::string& text) { return decode_pod(std::string_view(text)); }
Result<Node> node_from(const std::string& text) { return decode_node(std::string_view(text)); }

}  // namespace

TEST_CASE("a node decodes labels, taints, allocatable and conditions", "[decode]") {
  auto n = node_from(fixture("node.json"));
  REQUIRE(n);
  CHECK(n->name() == "spot-a");
  CHECK(n->meta.uid == "6f1c2a5e-7d0c-4c55-9c51-7a8e9a1b2c3d");
  CHECK(n->meta.resource_version == "1042");
  CHECK(n->meta.labels.get("karpenter.sh/capacity-type")->view() == "spot");
  CHECK(n->meta.labels.has("node-role.kubernetes.io/spot-worker"));
  CHECK(n->unschedulable);
  REQUIRE(n->taints.size() == 2);
  CHECK(n->taints[0].to_string() == "dedicated=batch:PreferNoSchedule");
  CHECK(n->has_taint("node.kubernetes.io/unschedulable", TaintEffect::kNoSchedule));
  CHECK(n->allocatable.cpu_milli == 3920);
  CHECK(n->allocatable.memory == 15629472LL * 1024);
  CHECK(n->allocatable.pods == 110);
  CHECK(n->allocatable.ephemeral_storage == 95491281146LL);
  CHECK(n->allocatable.get("nvidia.com/gpu") == 1);
  CHECK(n->ready());
  CHECK(n->healthy());
  CHECK(n->conditions.network_unavailable == ConditionStatus::kAbsent);
}

TEST_CASE("a Job ignores disruptions only when its first rule that can match an evicted pod says Ignore", "[decode]") {
  auto job = [](const std::string& rules) {
    auto c = decode_workload_controller(std::string_view(fmt::format(R"({{"metadata":{{"name":"j","namespace":"ns","uid":"u1"}},
                                          "spec":{{"backoffLimit":0,"podFailurePolicy":{{"rules":[{}]}}}}}})",
                                                                     rules)),
                                        "Job");
    REQUIRE(c);
    CHECK(c->kind == "Job");
    CHECK(c->meta.uid == "u1");
    return c->ignores_disruptions;
  };
  const std::string ignore = R"({"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]})";
  CHECK(job(ignore));
  CHECK(job(R"({"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget","status":"True"}]})"));
  CHECK_FALSE(job(R"({"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget","status":"False"}]})"));
  CHECK_FALSE(job(R"({"action":"FailJob","onPodConditions":[{"type":"DisruptionTarget"}]})"));
  CHECK_FALSE(job(R"({"action":"Count","onPodConditions":[{"type":"DisruptionTarget"}]})"));
  CHECK_FALSE(job(""));
  // An exit-code rule first may match the evicted pod's exit code before the Ignore rule does.
  CHECK_FALSE(job(R"({"action":"FailJob","onExitCodes":{"operator":"In","values":[42]}},)" + ignore));
  // A rule on another condition does not decide.
  CHECK(job(R"({"action":"FailJob","onPodConditions":[{"type":"ConfigIssue"}]},)" + ignore));
  // No podFailurePolicy at all: a failure.
  auto plain = decode_workload_controller(std::string_view(R"({"metadata":{"name":"j","namespace":"ns"},"spec":{}})"), "Job");
  REQUIRE(plain);
  CHECK_FALSE(plain->ignores_disruptions);
  // Other kinds: only what they are.
  auto rs = decode_workload_controller(
      std::string_view(R"({"metadata":{"name":"web-1","namespace":"ns","uid":"u2"},"spec":{"replicas":3}})"), "ReplicaSet");
  REQUIRE(rs);
  CHECK(rs->meta.key() == "ns/web-1");
  CHECK_FALSE(rs->ignores_disruptions);
}

TEST_CASE("a heartbeat-only node change compares equal in content", "[decode]") {
  std::string text = fixture("node.json");
  auto a = node_from(text);
  std::string beat = text;
  beat.replace(beat.find("\"1042\""), 6, "\"1043\"");
  for (size_t pos; (pos = beat.find("\"lastHeartbeatTime\":\"2025-01-02T03:04:05Z\"")) != std::string::npos;)
    beat.replace(pos, 42, "\"lastHeartbeatTime\":\"2025-01-02T03:09:05Z\"");
  auto b = node_from(beat);
  REQUIRE(a);
  REQUIRE(b);
  CHECK_FALSE(*a == *b);
  CHECK(a->same_content(*b));
  std::string retaint = text;
  retaint.replace(retaint.find("\"batch\""), 7, "\"other\"");
  CHECK_FALSE(a->same_content(*node_from(retaint)));
}

TEST_CASE("a pod decodes its effective request with init containers, sidecars and overhead", "[decode]") {
  auto p = pod_from(fixture("pod.json"));
  REQUIRE(p);
  // containers: app 500m/256Mi (+gpu 1 from its limit), log 250m from its limit -> 750m/256Mi.
  // sidecar proxy 100m/32Mi runs alongside -> 850m/288Mi. Init peak: migrate 2 cpu/64Mi.
  // max -> 2000m/288Mi, plus 10m overhead.
  CHECK(p->requests.cpu_milli == 2010);
  CHECK(p->requests.memory == 288LL * 1024 * 1024);
  CHECK(p->requests.get("nvidia.com/gpu") == 1);
  CHECK_FALSE(p->best_effort);
}

TEST_CASE("a pod decodes metadata, owner, scheduling constraints and status", "[decode]") {
  auto p = pod_from(fixture("pod.json"));
  REQUIRE(p);
  CHECK(p->key() == "shop/web-7d9f8c-abcde");
  CHECK(p->node_name.view() == "ondemand-1");
  REQUIRE(p->controller);
  CHECK(p->controller->kind.view() == "ReplicaSet");
  CHECK(p->controller->name.view() == "web-7d9f8c");
  CHECK(p->owned_by("ReplicaSet"));
  CHECK(p->priority == 1000);
  CHECK(p->termination_grace_period_seconds == 45);
  CHECK(p->safe_to_evict == true);
  CHECK_FALSE(p->mirror);
  CHECK(p->node_selector.get("kubernetes.io/os")->view() == "linux");

  REQUIRE(p->host_ports.size() == 3);
  CHECK(p->host_ports[0].port == 80);
  CHECK(p->host_ports[1].protocol == Protocol::kUDP);
  CHECK(p->host_ports[1].host_ip.view() == "10.0.0.1");
  CHECK(p->host_ports[2].port == 15001);  // the sidecar's port counts

  REQUIRE(p->tolerations.size() == 3);
  CHECK(p->tolerations[0].toleration_seconds == 300);
  CHECK(p->tolerations[1].op == TolerationOp::kEqual);
  CHECK(p->tolerations[2].key.empty());
  CHECK(p->tolerations[2].op == TolerationOp::kExists);
  CHECK(p->controller->uid.view() == "9a8b7c6d-0000-4000-8000-000000000001");

  // Another replica with the same tolerations and controller holds the same list and uid; one
  // toleration's seconds changed makes another list.
  auto replica = pod_from(fixture("pod.json"));
  REQUIRE(replica);
  CHECK(replica->tolerations.id() == p->tolerations.id());
  CHECK(replica->controller->uid == p->controller->uid);
  std::string changed = fixture("pod.json");
  changed.replace(changed.find("\"tolerationSeconds\":300"), 23, "\"tolerationSeconds\":301");
  auto other = pod_from(changed);
  REQUIRE(other);
  CHECK(other->tolerations[0].toleration_seconds == 301);
  CHECK_FALSE(other->tolerations == p->tolerations);

  REQUIRE(p->affinity);
  REQUIRE(p->affinity->node_required);
  CHECK(p->affinity->node_required->terms.size() == 1);
  REQUIRE(p->affinity->node_preferred.size() == 1);
  CHECK(p->affinity->node_preferred[0].weight == 50);
  REQUIRE(p->affinity->pod_anti_affinity_required.size() == 1);
  const auto& anti = p->affinity->pod_anti_affinity_required[0];
  CHECK(anti.selector.to_string() == "app=web,pod-template-hash in (7d9f8c)");
  CHECK(anti.topology_key.view() == "kubernetes.io/hostname");
  REQUIRE(p->affinity->pod_anti_affinity_preferred.size() == 1);
  CHECK(p->affinity->pod_anti_affinity_preferred[0].term.namespaces.size() == 2);

  REQUIRE(p->topology_spread.size() == 2);
  CHECK(p->topology_spread[0].min_domains == 3);
  CHECK(p->topology_spread[0].honor_node_taints);
  CHECK(p->topology_spread[0].selector.to_string() == "app=web,pod-template-hash in (7d9f8c)");
  CHECK_FALSE(p->topology_spread[1].do_not_schedule);

  CHECK(p->has_empty_dir);
  CHECK_FALSE(p->has_host_path);
  REQUIRE(p->pvc_claims.size() == 2);
  CHECK(p->pvc_claims[1].view() == "web-7d9f8c-abcde-scratch");

  CHECK(p->phase == PodPhase::kRunning);
  CHECK(p->ready);
  CHECK(p->scheduled == ConditionStatus::kTrue);
  CHECK_FALSE(p->unschedulable);
}

TEST_CASE("pods decoded one after another each keep their own strings", "[decode]") {
  // The decoders compare each repeated field with the pod decoded before (replicas come
  // together in a list): a pod that repeats some of its neighbour's fields, changes others, or
  // has fewer or more labels and tolerations must still decode exactly as itself.
  struct Shape {
    int ns, app, owner, node, labels, tolerations;
  };
  const std::vector<Shape> shapes = {{0, 0, 0, 0, 2, 2}, {0, 0, 0, 1, 2, 2}, {0, 1, 0, 1, 2, 2},  {1, 1, 1, 0, 3, 1},
                                     {1, 1, 1, 0, 1, 0}, {0, 0, 0, 0, 2, 2}, {2, 2, 2, 2, 10, 6}, {0, 0, 0, 0, 2, 2}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& sh = shapes[i];
    std::vector<std::string> labels, tolerations;
    for (int l = 0; l < sh.labels; ++l) labels.push_back(fmt::format(R"("key-{}":"app-{}-{}")", l, sh.app, l));
    for (int t = 0; t < sh.tolerations; ++t)
      tolerations.push_back(fmt::format(R"({{"key":"taint-{}-{}","operator":"Equal","value":"v{}","effect":"NoSchedule"}})", sh.app, t, t));
    const std::string text = fmt::format(
        R"({{"metadata":{{"name":"p{}","namespace":"ns-{}","labels":{{{}}},)"
        R"("ownerReferences":[{{"apiVersion":"apps/v{}","kind":"Kind{}","name":"owner-{}","uid":"uid-{}","controller":true}}]}},)"
        R"("spec":{{"nodeName":"node-{}","tolerations":[{}]}}}})",
        i, sh.ns, fmt::join(labels, ","), sh.owner, sh.owner, sh.owner, sh.owner, sh.node, fmt::join(tolerations, ","));
    INFO("pod " << i << ": " << text);
    auto p = decode_pod(std::string_view(text));
    REQUIRE(p);
    CHECK(p->meta.namespace_.view() == fmt::format("ns-{}", sh.ns));
    CHECK(p->node_name.view() == fmt::format("node-{}", sh.node));
    REQUIRE(p->meta.labels.size() == size_t(sh.labels));
    for (int l = 0; l < sh.labels; ++l) CHECK(p->meta.labels.get(fmt::format("key-{}", l))->view() == fmt::format("app-{}-{}", sh.app, l));
    REQUIRE(p->controller);
    CHECK(p->controller->api_version.view() == fmt::format("apps/v{}", sh.owner));
    CHECK(p->controller->kind.view() == fmt::format("Kind{}", sh.owner));
    CHECK(p->controller->name.view() == fmt::format("owner-{}", sh.owner));
    CHECK(p->controller->uid.view() == fmt::format("uid-{}", sh.owner));
    REQUIRE(p->tolerations.size() == size_t(sh.tolerations));
    for (int t = 0; t < sh.tolerations; ++t) {
      CHECK(p->tolerations[size_t(t)].key.view() == fmt::format("taint-{}-{}", sh.app, t));
      CHECK(p->tolerations[size_t(t)].value.view() == fmt::format("v{}", t));
    }
  }
}

TEST_CASE("pod annotations and conditions set the drain-relevant flags", "[decode]") {
  auto p = pod_from(R"({"metadata":{"name":"m","namespace":"kube-system","annotations":{
      "kubernetes.io/config.mirror":"abc","karpenter.sh/do-not-disrupt":"true","spotshift.io/do-not-move":"true",
      "cluster-autoscaler.kubernetes.io/safe-to-evict":"false"},"deletionTimestamp":"2025-01-02T03:04:05Z",
      "deletionGracePeriodSeconds":30},
    "spec":{"containers":[{"name":"c"}]},
    "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}})");
  REQUIRE(p);
  CHECK(p->mirror);
  CHECK(p->do_not_disrupt);
  CHECK(p->do_not_move);
  CHECK(p->safe_to_evict == false);
  CHECK(p->terminating());
  CHECK(p->deletion_grace_period_seconds == 30);
  CHECK(p->best_effort);
  CHECK(p->unschedulable);
  CHECK(p->scheduled == ConditionStatus::kFalse);
  CHECK_FALSE(p->controller);
}

TEST_CASE("a PodDisruptionBudget decodes its spec and status", "[decode]") {
  auto b = decode_pdb(std::string_view(fixture("pdb.json")));
  REQUIRE(b);
  CHECK(b->meta.key() == "shop/web-pdb");
  REQUIRE(b->min_available);
  CHECK(b->min_available->is_percent);
  CHECK(b->min_available->value == 50);
  CHECK(b->min_available->scaled(3, true) == 2);
  CHECK_FALSE(b->max_unavailable);
  CHECK(b->always_allow_unhealthy);
  CHECK(b->status.disruptions_allowed == 1);
  CHECK(b->status.expected_pods == 3);
  CHECK(b->status.disrupted_pods == std::vector<std::string>{"web-7d9f8c-zzzzz"});
  CHECK(b->status_current());
  auto p = pod_from(fixture("pod.json"));
  CHECK(b->matches(*p));
  PodDisruptionBudget no_selector = *b;
  no_selector.selector.reset();
  CHECK_FALSE(no_selector.matches(*p));
  PodDisruptionBudget empty_selector = *b;
  empty_selector.selector = LabelSelector{};
  CHECK(empty_selector.matches(*p));  // policy/v1: an empty selector matches every pod of the namespace
  PodDisruptionBudget elsewhere = empty_selector;
  elsewhere.meta.namespace_ = InternedString("other");
  CHECK_FALSE(elsewhere.matches(*p));
}

TEST_CASE("a Lease decodes and encodes back to the same object", "[decode]") {
  auto l = decode_lease(std::string_view(fixture("lease.json")));
  REQUIRE(l);
  CHECK(l->spec.holder_identity == "host-1_5f0c");
  CHECK(l->spec.lease_duration_seconds == 15);
  CHECK(l->spec.lease_transitions == 2);
  CHECK(format_micro_time(*l->spec.renew_time) == "2025-01-01T00:00:14.200000Z");
  auto again = decode_lease(std::string_view(encode_lease(*l)));
  REQUIRE(again);
  CHECK(again->spec == l->spec);
  CHECK(again->meta.resource_version == "812");
}

TEST_CASE("malformed objects give an error naming the field path", "[malformed]") {
  struct Bad {
    const char* json;
    const char* message;
  };
  const Bad pods[] = {
      {"[]", "decoding pod: expected an object, got an array"},
      {"{}", "decoding pod: metadata is missing"},
      {R"({"metadata":{"namespace":"n"}})", "decoding pod: metadata.name is empty"},
      {R"({"metadata":{"name":"x","namespace":"n"},"spec":{"containers":[{"resources":{"requests":{"cpu":"abc"}}}]}})",
       "decoding pod \"n/x\": spec.containers[0].resources.requests.cpu: quantity \"abc\": quantities must match"},
      {R"({"metadata":{"name":"x","namespace":"n"},"spec":{"nodeName":5}})",
       "decoding pod \"n/x\": spec.nodeName: expected a string, got a number"},
      {R"({"metadata":{"name":"x","namespace":"n"},"spec":{"tolerations":{}}})",
       "decoding pod \"n/x\": spec.tolerations: expected an array, got an object"},
      {R"({"metadata":{"name":"x","namespace":"n","labels":{"app":1}}})",
       "decoding pod \"n/x\": metadata.labels.app: expected a string, got a number"},
      {R"({"metadata":{"name":"x","namespace":"n"},"spec":{"priority":1.5}})", "decoding pod \"n/x\": spec.priority: expected an integer"},
      {R"({"metadata":{"name":"x","namespace":"n","creationTimestamp":"yesterday"}})",
       "decoding pod \"n/x\": metadata.creationTimestamp: invalid time \"yesterday\""},
      {R"({"metadata":{"name":"x","namespace":"n"},"spec":{"tolerations":[{"key":"k","operator":"Maybe"}]}})",
       "decoding pod \"n/x\": spec.tolerations[0].operator: unknown toleration operator \"Maybe\""},
      {R"({"metadata":{"name":"x","namespace":"n"},"spec":{"containers":[{"resources":{"limits":{"memory":true}}}]}})",
       "decoding pod \"n/x\": spec.containers[0].resources.limits.memory: expected a quantity"},
      {R"({"metadata":{"name":"x","namespace":"n"},"spec":{"affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"-bad":"x"}}}]}}}})",
       "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchLabels.-bad"},
      {R"({"metadata":"x"})", "decoding pod: metadata: expected an object, got a string"},
  };
  for (const auto& c : pods) {
    INFO(c.json);
    auto p = pod_from(c.json);
    REQUIRE_FALSE(p);
    CHECK(p.error().kind == ErrorKind::kDecode);
    CHECK_THAT(p.error().message, Catch::Contains(c.message));
  }

  auto bad_json = pod_from(R"({"metadata": {"name": "x",)");
  REQUIRE_FALSE(bad_json);
  CHECK_THAT(bad_json.error().message, Catch::EndsWith("invalid JSON at offset 26: expected a member name in quotes, found the end"));

  auto bad_taint = node_from(R"({"metadata":{"name":"n"},"spec":{"taints":[{"key":"k","effect":"Sometimes"}]}})");
  REQUIRE_FALSE(bad_taint);
  CHECK(bad_taint.error().message ==
        "decoding node \"n\": spec.taints[0].effect: unknown taint effect \"Sometimes\": want NoSchedule, "
        "PreferNoSchedule or NoExecute");

  auto bad_pdb = decode_pdb(std::string_view(R"({"metadata":{"name":"b","namespace":"n"},"spec":{"minAvailable":"abc%"}})"));
  REQUIRE_FALSE(bad_pdb);
  CHECK_THAT(bad_pdb.error().message, Catch::Contains("spec.minAvailable: invalid value \"abc%\""));
  auto big_pct = decode_pdb(std::string_view(R"({"metadata":{"name":"b","namespace":"n"},"spec":{"maxUnavailable":"150%"}})"));
  REQUIRE_FALSE(big_pct);
  auto bad_lease = decode_lease(std::string_view(R"({"metadata":{"name":"l"},"spec":{"leaseDurationSeconds":"15"}})"));
  REQUIRE_FALSE(bad_lease);
  CHECK_THAT(bad_lease.error().message, Catch::Contains("spec.leaseDurationSeconds: expected an integer, got a string"));
}

TEST_CASE("member lookups honour the key's length, not a NUL terminator", "[decode]") {
  // Regression: RapidJSON's StringRef converts to const char*, which made lookups of a key taken
  // from the middle of a larger string (a JSONPath, a field selector) use strlen and miss.
  JsonDocument doc;
  REQUIRE(parse_json(R"({"spec":{"size":5}})", doc));
  std::string_view path = "spec.size";
  const JsonValue* spec = json_member(doc, path.substr(0, 4));
  REQUIRE(spec);
  CHECK(json_int(*spec, {path.substr(5)}) == 5);
}

TEST_CASE("pods order by namespace/name key without building it", "[decode]") {
  // Namespaces that are prefixes of one another, or differ just where the other has its '/'.
  const char* keys[][2] = {{"a", "x"},   {"a", "y"}, {"a-b", "x"}, {"ab", "a"}, {"a.b", "z"}, {"", "node-pod"},
                           {"a", "a-b"}, {"b", "a"}, {"a0", "x"},  {"a", "0"},  {"aa", ""},   {"a", "~"}};
  std::vector<Pod> pods;
  for (const auto& [ns, name] : keys) {
    Pod p;
    p.meta.namespace_ = InternedString(ns);
    p.meta.name = name;
    pods.push_back(p);
  }
  for (const auto& a : pods)
    for (const auto& b : pods) {
      INFO(a.key() << " vs " << b.key());
      CHECK(a.key_less(b) == (a.key() < b.key()));
    }
}

TEST_CASE("JSON written as YAML reads back the same, strings that look like other types quoted", "[decode]") {
  const std::string json = R"({"name":"a","n":3,"x":1.5,"ok":true,"none":null,"s":["true","3","yes","off","","null","1.5","plain"],)"
                           R"("nested":{"list":[{"k":"v"}],"empty":{},"no":[]}})";
  model::JsonDocument doc;
  REQUIRE(model::parse_json(json, doc));
  std::string yaml = model::to_yaml(doc);
  INFO(yaml);
  CHECK(yaml.find("\n  - \"true\"\n  - \"3\"\n  - \"yes\"\n  - \"off\"\n") != std::string::npos);
  CHECK(yaml.find("  - plain\n") != std::string::npos);
  auto back = model::parse_yaml(yaml);
  REQUIRE(back);
  CHECK(model::json_text(*back) == model::json_text(doc));
}
