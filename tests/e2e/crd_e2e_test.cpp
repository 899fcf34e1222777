// The ReschedulePolicy CRD as the API server serves it: defaults, the schema kubectl explain reads,
// printer columns, the status subresource, and the messages users get for invalid policies (the
// ones docs/policy-reference.md shows). On kubesim and, with SPOTSHIFT_E2E_BACKEND=real, on the
// real API server, with the same assertions.

#include "drain/policy.hpp"
#include "env.hpp"

using namespace spotshift;
using namespace spotshift::e2e;

namespace {

// What `kubectl apply` prints after "is invalid: " for a policy with this spec, or "" if it is
// accepted.
std::string rejection(Env& env, const std::string& name, const std::string& spec) {
  env.dir.write(name + ".yaml",
                fmt::format("apiVersion: spotshift.io/v1alpha1\nkind: ReschedulePolicy\nmetadata:\n  name: {}\nspec:\n{}", name, spec));
  std::string out = env.kubectl("apply -f " + env.dir.file(name + ".yaml"), false);
  auto at = out.find("is invalid: ");
  return at == std::string::npos ? "" : std::string(trim(out.substr(at + 12)));
}

// The API server checks the CRD's CEL rules only once the schema's blocking checks (types, enums,
// required fields, lengths) pass, and says so after the causes that stopped it.
const std::string kRulesNotChecked =
    "\n* <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing "
    "errors to complete validation";

EnvOptions empty_cluster() {
  EnvOptions o;
  o.demo = false;
  return o;
}

}  // namespace

TEST_CASE("the CRD defaults a policy, shows it in printer columns and explains its fields", "[crd]") {
  Env env({}, empty_cluster());
  env.apply("policy", policy_yaml("default", ""));
  // Defaults from the schema are stored.
  CHECK(env.kubectl("get rsp default -o jsonpath={.spec.kubeSystemPodsWithoutPDB}/{.spec.unschedulablePodsGate}/{.spec.drainOrder}") ==
        "Block/Any/Auto");
  // The printer columns, in order.
  std::string table = env.kubectl("get reschedulepolicies");
  INFO(table);
  CHECK(table.starts_with("NAME      MODE   READY   ON-DEMAND   SPOT   DRAINABLE   DRAINING   BLOCKED   LAST DRAIN   AGE\n"));
  // The short name serves the same table (up to the AGE column, which may tick between the two reads).
  auto without_age = [](const std::string& t) {
    std::string out;
    for (auto line : split(t, '\n')) out += std::string(trim(line.substr(0, line.rfind(' ')))) + "\n";
    return out;
  };
  CHECK(without_age(env.kubectl("get rsp")) == without_age(table));
  // The status fills the columns; a policy in dry run does not look like a live one, and -o wide
  // adds when the next drain may start.
  env.kubectl(
      R"(patch rsp default --subresource status --type merge -p '{"status":{"mode":"DryRun","blockedBy":"DryRun","onDemandNodes":2,)"
      R"("spotNodes":3,"drainableNodes":1,"nextDrainAfter":"2030-01-01T00:00:00Z","conditions":[{"type":"Ready","status":"True",)"
      R"("reason":"Planned","message":"2 on-demand nodes","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}')");
  std::string row = std::string(split(env.kubectl("get rsp default"), '\n')[1]);
  INFO(row);
  CHECK(row.starts_with("default   DryRun   True    2           3      1                      DryRun    "));
  std::string wide = env.kubectl("get rsp default -o wide");
  INFO(wide);
  CHECK(wide.find("   LAST DRAIN   NEXT DRAIN             AGE\n") != std::string::npos);
  CHECK(wide.find("   2030-01-01T00:00:00Z   ") != std::string::npos);
  // kubectl explain reads the published schema.
  std::string explain = env.kubectl("explain rsp.spec");
  INFO(explain);
  CHECK(explain.find("KIND:       ReschedulePolicy") != std::string::npos);
  CHECK(explain.find("FIELD: spec <Object>") != std::string::npos);
  CHECK(explain.find("nodeDrainDelay\t<string>") != std::string::npos);
  CHECK(explain.find("unschedulablePodsGate\t<string>") != std::string::npos);
  std::string field = env.kubectl("explain rsp.spec.nodeDrainDelay");
  CHECK(field.find("FIELD: nodeDrainDelay <string>") != std::string::npos);
}

TEST_CASE("the status subresource: writes to the policy keep the status, writes to status keep the spec", "[crd]") {
  Env env({}, empty_cluster());
  env.apply("policy", policy_yaml("default", ""));
  env.kubectl(R"(patch rsp default --subresource status --type merge -p '{"status":{"drainableNodes":3}}')");
  CHECK(env.kubectl("get rsp default -o jsonpath={.status.drainableNodes}") == "3");
  // A status in a write to the main resource is ignored.
  env.kubectl(R"(patch rsp default --type merge -p '{"spec":{"dryRun":true},"status":{"drainableNodes":9}}')");
  CHECK(env.kubectl("get rsp default -o jsonpath={.status.drainableNodes}/{.spec.dryRun}") == "3/true");
  // A spec in a write to status is ignored, and the generation counts spec changes only.
  env.kubectl(R"(patch rsp default --subresource status --type merge -p '{"spec":{"dryRun":false},"status":{"drainableNodes":4}}')");
  CHECK(env.kubectl("get rsp default -o jsonpath={.status.drainableNodes}/{.spec.dryRun}/{.metadata.generation}") == "4/true/2");
}

TEST_CASE("invalid policies are refused with the messages the policy reference shows", "[crd]") {
  Env env({}, empty_cluster());
  // Each line of docs/policy-reference.md's "What the API server refuses" table.
  CHECK(
      rejection(env, "a", "  nodeDrainDelay: 5 minutes\n") ==
      R"(spec.nodeDrainDelay: Invalid value: "5 minutes": spec.nodeDrainDelay in body should match '^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$')");
  CHECK(rejection(env, "b", "  unschedulablePodsGate: Some\n") ==
        "* "
        R"(spec.unschedulablePodsGate: Unsupported value: "Some": supported values: "Any", "SpotOnly", "Disabled")" +
            kRulesNotChecked);
  CHECK(rejection(env, "c", "  searchIterations: -1\n") ==
        "spec.searchIterations: Invalid value: -1: spec.searchIterations in body should be greater than or equal to 0");
  CHECK(rejection(env, "d", "  profile:\n    scores: [{name: FreeCPU, weight: 101}]\n") ==
        "spec.profile.scores[0].weight: Invalid value: 101: spec.profile.scores[0].weight in body should be less than or equal to 100");
  std::string e = rejection(env, "e", "  profile:\n    filters: [Fit]\n");
  CHECK(
      e.starts_with("* "
                    R"(spec.profile.filters[0]: Unsupported value: "Fit": supported values: )"));
  CHECK(e.ends_with(kRulesNotChecked));
  CHECK(rejection(env, "j", "  housekeepingInterval: 100ms\n") ==
        R"(spec.housekeepingInterval: Invalid value: "100ms": must be at least 1s)");
  CHECK(rejection(env, "k", "  podEvictionTimeout: 0s\n") == R"(spec.podEvictionTimeout: Invalid value: "0s": must be at least 1s)");
  CHECK(rejection(env, "h", "  maxGracefulTermination: 0s\n") ==
        R"(spec.maxGracefulTermination: Invalid value: "0s": must be at least 1s (a grace period of 0 is a force deletion))");
  CHECK(rejection(env, "i", "  maxGracefulTermination: 1s\n").empty());
  CHECK(rejection(env, "f", "  dryRun: maybe\n") ==
        "* "
        R"(spec.dryRun: Invalid value: "string": spec.dryRun in body must be of type boolean: "string")" +
            kRulesNotChecked);
  // CEL rules and list types.
  const std::string differ = "spec: Invalid value: onDemandNodeSelector and spotNodeSelector must differ (a node matching both is neither)";
  CHECK(rejection(env, "l", "  onDemandNodeSelector: {matchLabels: {pool: a}}\n  spotNodeSelector: {matchLabels: {pool: a}}\n") == differ);
  CHECK(rejection(env, "u",
                  "  onDemandNodeSelector: {matchExpressions: [{key: pool, operator: In, values: [a]}]}\n"
                  "  spotNodeSelector: {matchExpressions: [{key: pool, operator: In, values: [a]}]}\n") == differ);
  const std::string values =
      "spec.podSelector.matchExpressions[0]: Invalid value: values must be non-empty for In and NotIn, and empty for Exists and DoesNotExist";
  CHECK(rejection(env, "m", "  podSelector: {matchExpressions: [{key: app, operator: In}]}\n") == values);
  CHECK(rejection(env, "nn", "  podSelector: {matchExpressions: [{key: app, operator: Exists, values: [a]}]}\n") == values);
  CHECK(rejection(env, "o", "  profile:\n    filters: [NodeName, NodeName]\n") ==
        R"(spec.profile.filters[1]: Duplicate value: "NodeName")");
  CHECK(rejection(env, "p", "  profile:\n    scores: [{name: FreeCPU}, {name: FreeCPU, weight: 2}]\n") ==
        R"(spec.profile.scores[1]: Duplicate value: {"name":"FreeCPU"})");
  const std::string args = "spec.profile.scores[0]: Invalid value: only FreeCPU takes args: order, fullest or emptiest";
  CHECK(rejection(env, "q", "  profile:\n    scores: [{name: FreeCPU, args: {order: sideways}}]\n") == args);
  CHECK(rejection(env, "r", "  profile:\n    scores: [{name: LeastAllocated, args: {order: fullest}}]\n") == args);
  CHECK(rejection(env, "w", "  pricing: {label: a, annotation: b}\n") ==
        "spec.pricing: Invalid value: name exactly one of label, annotation and configMap");
  CHECK(rejection(env, "x", "  drainOrder: HighestSavingsPerEviction\n") ==
        "spec: Invalid value: drainOrder HighestSavingsPerEviction needs pricing (where each node's price is)");
  CHECK(rejection(env, "yy", "  drainOrder: HighestSavingsPerEviction\n  pricing: {annotation: example.com/price}\n").empty());
  CHECK(
      rejection(env, "dw1", "  disruptionWindows: [{schedule: \"0 22 * *\", duration: 8h}]\n") ==
      R"(spec.disruptionWindows[0].schedule: Invalid value: "0 22 * *": spec.disruptionWindows[0].schedule in body should match '^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[^ ]+( +[^ ]+){4})$')");
  CHECK(rejection(env, "dw2", "  disruptionWindows: [{schedule: \"@daily\", duration: 30s}]\n") ==
        R"(spec.disruptionWindows[0].duration: Invalid value: "30s": must be at least 1m)");
  CHECK(rejection(env, "dw3", "  disruptionWindows: [{schedule: \"@daily\"}]\n") ==
        "* spec.disruptionWindows[0].duration: Required value" + kRulesNotChecked);
  // A valid one, with its time zone defaulted.
  CHECK(rejection(env, "dw4", "  disruptionWindows: [{schedule: \"0 22 * * 1-5\", duration: 8h}]\n").empty());
  CHECK(env.kubectl("get rsp dw4 -o jsonpath={.spec.disruptionWindows[0].timeZone}") == "UTC");
  CHECK(rejection(env, "s", "  profile:\n    scores: [{name: FreeCPU, args: {order: emptiest}}]\n").empty());
  CHECK(rejection(env, "t",
                  "  podSelector: {matchExpressions: [{key: app, operator: NotIn, values: [a]}, {key: b, operator: DoesNotExist}]}\n")
            .empty());
  CHECK(rejection(env, "v",
                  "  onDemandNodeSelector: {matchLabels: {pool: a}}\n"
                  "  spotNodeSelector: {matchLabels: {pool: a}, matchExpressions: [{key: spot, operator: Exists}]}\n")
            .empty());
  // A valid one is accepted.
  CHECK(rejection(env, "g", "  nodeDrainDelay: 90s\n").empty());
  // So are the documented examples, and the operator reads them as valid.
  env.kubectl("create namespace spotshift");
  for (auto example : {"docs/examples/reschedulepolicy.yaml", "docs/examples/production-policy.yaml"}) {
    INFO(example);
    CHECK(env.kubectl(fmt::format("apply -f {}/{}", SOURCE_ROOT, example), false).find("created") != std::string::npos);
  }
  for (auto name : {"default", "production"}) {
    auto stored = drain::decode_policy(env.kubectl(fmt::format("get rsp {} -o json", name)));
    REQUIRE(stored);
    INFO(name << ": " << (stored->spec_error ? stored->spec_error->message : ""));
    CHECK(stored->spec);
    env.kubectl(fmt::format("delete rsp {}", name));
  }
  CHECK(
      env.kubectl("get rsp -o name") ==
      "reschedulepolicy.spotshift.io/dw4\nreschedulepolicy.spotshift.io/g\nreschedulepolicy.spotshift.io/i\nreschedulepolicy.spotshift.io/s\n"
      "reschedulepolicy.spotshift.io/t\nreschedulepolicy.spotshift.io/v\nreschedulepolicy.spotshift.io/yy\n");
}
