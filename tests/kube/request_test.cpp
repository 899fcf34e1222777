#include "kube/request.hpp"
#include "model/json.hpp"
#include "support/catch.hpp"

using namespace spotshift::kube;

TEST_CASE("paths cover core and group resources, namespaces, names and subresources", "[request]") {
  CHECK(resource_path(Resource::pods(), "", "") == "/api/v1/pods");
  CHECK(resource_path(Resource::pods(), "shop", "") == "/api/v1/namespaces/shop/pods");
  CHECK(resource_path(Resource::pods(), "shop", "web-1", "eviction") == "/api/v1/namespaces/shop/pods/web-1/eviction");
  CHECK(resource_path(Resource::nodes(), "ignored", "n1") == "/api/v1/nodes/n1");
  CHECK(resource_path(Resource::pod_disruption_budgets(), "shop", "b") == "/apis/policy/v1/namespaces/shop/poddisruptionbudgets/b");
  Resource policy{"spotshift.io", "v1alpha1", "reschedulepolicies", "ReschedulePolicy", false};
  CHECK(resource_path(policy, "", "default", "status") == "/apis/spotshift.io/v1alpha1/reschedulepolicies/default/status");
}

TEST_CASE("list and watch requests escape selectors and carry paging and watch parameters", "[request]") {
  ListOptions o;
  o.label_selector = "app in (web,agent),!multi";
  o.field_selector = "spec.nodeName=node-b";
  o.limit = 500;
  o.continue_token = "abc+/=";
  auto r = list_request(Resource::pods(), "", o);
  CHECK(r.method == "GET");
  CHECK(r.target() ==
        "/api/v1/pods?labelSelector=app%20in%20%28web%2Cagent%29%2C%21multi&fieldSelector=spec.nodeName%3Dnode-b"
        "&limit=500&continue=abc%2B%2F%3D");
  CHECK(r.idempotent);
  CHECK(*r.header("Accept") == "application/json");
  ListOptions relist;
  relist.limit = 0;
  relist.resource_version = "1011";
  CHECK(list_request(Resource::nodes(), "", relist).target() == "/api/v1/nodes?resourceVersion=1011");

  WatchOptions w;
  w.resource_version = "1013";
  w.timeout_seconds = 385;
  w.field_selector = "metadata.name=x";
  auto wr = watch_request(Resource::nodes(), "", w);
  CHECK(wr.watch);
  CHECK(wr.target() ==
        "/api/v1/nodes?watch=true&fieldSelector=metadata.name%3Dx&resourceVersion=1013&allowWatchBookmarks=true&timeoutSeconds=385");
  WatchOptions streaming;
  streaming.send_initial_events = true;
  CHECK(watch_request(Resource::pods(), "ns", streaming).target() ==
        "/api/v1/namespaces/ns/pods?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan");
}

TEST_CASE("writes carry content types, write options and preconditions", "[request]") {
  WriteOptions o;
  o.dry_run = true;
  o.field_manager = "spotshift";
  auto c = create_request(Resource::leases(), "ops", R"({"a":1})", o);
  CHECK(c.method == "POST");
  CHECK(c.target() == "/apis/coordination.k8s.io/v1/namespaces/ops/leases?dryRun=All&fieldManager=spotshift");
  CHECK(*c.header("Content-Type") == "application/json");
  CHECK_FALSE(c.idempotent);

  auto p = patch_request(Resource::nodes(), "", "n1", PatchType::kMerge, R"({"metadata":{"resourceVersion":"7"},"spec":{"taints":[]}})");
  CHECK(p.method == "PATCH");
  CHECK(*p.header("Content-Type") == "application/merge-patch+json");
  CHECK(p.idempotent);  // a resourceVersion precondition makes it safe to resend
  CHECK_FALSE(patch_request(Resource::nodes(), "", "n1", PatchType::kStrategic, R"({"spec":{}})").idempotent);
  CHECK(content_type(PatchType::kJson) == "application/json-patch+json");
  CHECK(content_type(PatchType::kApply) == "application/apply-patch+yaml");
  auto s = patch_request(Resource::pod_disruption_budgets(), "ns", "b", PatchType::kMerge, "{}", {}, "status");
  CHECK(s.path == "/apis/policy/v1/namespaces/ns/poddisruptionbudgets/b/status");

  DeleteOptions d;
  d.grace_period_seconds = 30;
  d.uid_precondition = "u-1";
  d.resource_version_precondition = "9";
  d.propagation_policy = "Background";
  auto del = delete_request(Resource::pods(), "ns", "p", d);
  CHECK(del.method == "DELETE");
  CHECK(
      del.body ==
      R"({"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":30,"preconditions":{"uid":"u-1","resourceVersion":"9"},"propagationPolicy":"Background"})");
  CHECK(del.idempotent);

  DeleteOptions grace;
  grace.grace_period_seconds = 20;
  auto e = eviction_request("default", "web-abc-1", grace);
  CHECK(e.method == "POST");
  CHECK(e.path == "/api/v1/namespaces/default/pods/web-abc-1/eviction");
  CHECK(
      e.body ==
      R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-abc-1","namespace":"default"},"deleteOptions":{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":20}})");
  CHECK_FALSE(e.idempotent);
}

TEST_CASE("strings in request bodies are escaped as JSON, control characters included", "[request]") {
  DeleteOptions d;
  d.resource_version_precondition = "9\n\t\"\\\x01";
  auto del = delete_request(Resource::pods(), "ns", "p", d);
  spotshift::model::JsonDocument doc;
  REQUIRE(spotshift::model::parse_json(del.body, doc));
  CHECK(spotshift::model::json_string(doc, {"preconditions", "resourceVersion"}) == d.resource_version_precondition);
  auto e = eviction_request("default", "web\x1f", d);
  spotshift::model::JsonDocument eviction;
  REQUIRE(spotshift::model::parse_json(e.body, eviction));
  CHECK(spotshift::model::json_string(eviction, {"metadata", "name"}) == "web\x1f");
}
