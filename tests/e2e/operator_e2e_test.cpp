// The whole story: the spotshift binary, the CRD and policies applied with kubectl, and the cluster
// watched, on kubesim and (SPOTSHIFT_E2E_BACKEND=real, the scenarios meson registers for it) on the
// real control plane. Scenarios that inject kubesim's faults or reach into its cluster run on
// kubesim only.

#include "env.hpp"
#include "kube/certs.hpp"
#include "support/metrics_text.hpp"
#include "support/steering_webhook.hpp"

using namespace spotshift;
using namespace spotshift::e2e;

using spotshift::testing::kSteeringFlags;
using spotshift::testing::metric_sample;
using spotshift::testing::metric_sum;
using spotshift::testing::steering_webhook_yaml;

namespace {
// Returns once the operator has planned `policy` three more times, nudging it until it has (a
// label on the nodes changes, and every policy is planned again). The third plan began after the
// reconcile of the second had acted on its plan, so what the test checks next is what the
// operator decided about the cluster as it is now, not something it had not got round to yet.
void replanned(Env& env, const Operator& op, const std::string& policy) {
  const std::string count = fmt::format(R"(spotshift_plan_duration_seconds_count{{policy="{}"}})", policy);
  const double target = std::max(0.0, metric_sample(op.metrics(), count)) + 3;
  int nudge = 0;
  REQUIRE(eventually(
      [&] {
        if (metric_sample(op.metrics(), count) >= target) return true;
        env.kubectl(fmt::format("label nodes --all spotshift.io/e2e-nudge={} --overwrite", ++nudge));
        return false;
      },
      30s, 200ms));
}

// `spotshift plan` offline, on kubectl's snapshot of the cluster (the kinds it reads, and `extra`
// ones) and the policy as the cluster has it.
spotshift::testing::CommandResult plan_offline(Env& env, const std::string& policy, const std::string& extra = "") {
  env.dir.write("snapshot.json",
                env.kubectl(fmt::format("get nodes,pods,pdb,namespaces,rs,sts,jobs{}{} -A -o json", extra.empty() ? "" : ",", extra)));
  env.dir.write("policy.yaml", env.kubectl(fmt::format("get rsp {} -o yaml", policy)));
  return spotshift::testing::run(
      fmt::format("{} plan --snapshot {} --policy {}", SPOTSHIFT_BIN, env.dir.file("snapshot.json"), env.dir.file("policy.yaml")));
}

// Returns once the drain delay the policy's status records has passed.
void past_drain_delay(Env& env, const std::string& policy) {
  REQUIRE(eventually(
      [&] {
        auto next = parse_time(env.status(policy, {"nextDrainAfter"}));
        return next && std::chrono::system_clock::now() >= *next;
      },
      60s, 100ms));
}
}  // namespace

TEST_CASE("on-demand nodes empty onto spot nodes one after another, least requested first, budgets respected", "[e2e]") {
  Env env;
  BudgetWatch budget(env);
  env.apply("policy", policy_yaml("default", ""));
  auto op = env.start("operator");

  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "ondemand-1"; }, 30s));
  CHECK(env.status("default", {"lastDrain", "result"}) == "Succeeded");
  REQUIRE(eventually([&] { return env.status("default", {"nodesDrainedTotal"}) == "2"; }, 30s));
  CHECK(env.status("default", {"lastDrain", "node"}) == "ondemand-2");
  INFO(op->log());

  // Only DaemonSet pods are left on the two drained nodes; the moved workloads run on spot nodes.
  REQUIRE(eventually([&] { return env.all_running(); }, 20s));
  for (const auto& [pod, node] : env.pods()) {
    if (node == "ondemand-1" || node == "ondemand-2") CHECK(pod.starts_with("kube-system/node-agent-"));
    if (pod.starts_with("shop/api-") || pod.starts_with("shop/worker-")) CHECK(node.starts_with("spot-"));
  }
  // The pinned billing pod and the budget-bound node were left alone.
  CHECK(env.pods().at("shop/billing-0") == "ondemand-3");
  for (const auto& r : env.operator_requests("/eviction")) {
    CHECK(r.find("billing-0") == std::string::npos);
    CHECK(r.find("web-7d4b9c-b5d6f") == std::string::npos);  // on ondemand-4
    CHECK(r.find("web-7d4b9c-g7l8q") == std::string::npos);
  }
  CHECK(budget.min_ready() >= 4);
  CHECK_FALSE(env.any_draining());

  // The drain delay spaced the drains.
  auto started = env.events("DrainStarted");
  CHECK(std::count_if(started.begin(), started.end(), [](const std::string& e) { return e.starts_with("Node/"); }) == 2);
  // They say what is known, not where the replacements will run: the cluster's scheduler decides.
  for (const auto& e : started) {
    INFO(e);
    CHECK(e.find("fit on spot nodes now (the plan found room on spot-") != std::string::npos);
  }
  auto taint_patches = env.operator_requests("PATCH /api/v1/nodes/");
  CHECK(taint_patches.size() == 4);  // taint and untaint, twice

  // What a person sees.
  std::string table = env.kubectl("get reschedulepolicies");
  CHECK(table.find("ON-DEMAND") != std::string::npos);
  CHECK(table.find("LAST DRAIN") != std::string::npos);
  std::string events = env.kubectl("events -A");
  for (auto reason : {"DrainStarted", "PodEvicted", "DrainSucceeded", "NodeNotDrainable", "DrainPlanned"})
    CHECK(events.find(reason) != std::string::npos);
  CHECK(env.condition("default", "Valid") == "True");
  CHECK(env.condition("default", "Draining") == "False");
  std::string undrainable = env.status("default", {"undrainableNodes"});
  CHECK(undrainable.find("pinned to on-demand") != std::string::npos);
  CHECK(undrainable.find("PodDisruptionBudget shop/web-pdb allows 1 disruption now") != std::string::npos);

  // Events go through a client of their own (its own rate limit), so they never spend the
  // budget status writes and evictions need: every event request the cluster saw was counted
  // there, and every other request by the controller's client.
  const size_t event_requests = env.operator_requests("/events").size();
  const size_t other_requests = env.operator_requests("/").size() - event_requests;
  REQUIRE(event_requests > 0);
  std::string metrics = op->metrics();
  CHECK(metric_sum(metrics, "spotshift_api_requests_total", {R"(client="events")"}) >= static_cast<double>(event_requests));
  CHECK(metric_sum(metrics, "spotshift_api_requests_total", {R"(client="controller")"}) >= static_cast<double>(other_requests));
  // By status code: lists and status writes answered 200, evictions 201.
  CHECK(metric_sample(metrics, R"(spotshift_api_requests_total{client="controller",code="200"})") > 0);
  CHECK(metric_sample(metrics, R"(spotshift_api_requests_total{client="controller",code="201"})") >= 5);
  CHECK(metric_sample(metrics, R"(spotshift_api_rate_limit_wait_seconds_total{client="events"})") >= 0);
  CHECK(metrics.find(R"(spotshift_drains_total{policy="default",result="succeeded"} 2)") != std::string::npos);
  CHECK(metrics.find(R"(spotshift_evictions_total{policy="default",result="evicted"} 5)") != std::string::npos);
  CHECK(metrics.find(R"(spotshift_nodes{policy="default",class="on_demand"})") != std::string::npos);
  CHECK(metrics.find("spotshift_build_info") != std::string::npos);
  CHECK(metrics.find("spotshift_plan_duration_seconds_count") != std::string::npos);
  CHECK(metric_sample(metrics, "spotshift_reconcile_duration_seconds_count") > 0);
  CHECK(metric_sample(metrics, R"(spotshift_drain_duration_seconds_count{policy="default",result="succeeded"})") == 2);
  CHECK(metric_sample(metrics, R"(spotshift_drain_in_progress{policy="default"})") == 0);
  // The nodes left: ondemand-3 (a pinned pod) and ondemand-4 (a budget); nothing drainable, no gate.
  CHECK(metric_sample(metrics, R"(spotshift_undrainable_nodes{policy="default",reason="pinned"})") == 1);
  CHECK(metric_sample(metrics, R"(spotshift_undrainable_nodes{policy="default",reason="budget"})") == 1);
  CHECK(metric_sample(metrics, R"(spotshift_undrainable_nodes{policy="default",reason="no-room"})") == 0);
  CHECK(metric_sum(metrics, "spotshift_gate_blocked", {R"(policy="default")"}) == 0);
  // The caches' labels, namespaces and node names went through the interning pool.
  CHECK(metric_sample(metrics, "spotshift_interned_strings") > 0);
  CHECK(metric_sample(metrics, "spotshift_interned_string_bytes") > metric_sample(metrics, "spotshift_interned_strings"));

  op->stop(SIGTERM);
  CHECK(op->log().find("stopped exitCode=0") != std::string::npos);
  CHECK(op->exit_status() == 0);  // and nothing went wrong after the last line (a crash at exit)
}

TEST_CASE("the drain delay spaces drains by nodeDrainDelay", "[e2e]") {
  Env env;
  env.apply("policy", policy_yaml("default", "", "6s"));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "ondemand-1"; }, 30s));
  std::string first_finished = env.status("default", {"lastDrain", "finishedAt"});
  auto t0 = std::chrono::steady_clock::now();
  CHECK(env.condition("default", "Blocked") == "True");
  CHECK(env.condition("default", "Blocked", "reason") == "DrainDelay");
  REQUIRE(eventually([&] { return env.draining("ondemand-2"); }, 20s, 10ms));
  CHECK(std::chrono::steady_clock::now() - t0 >= 4500ms);  // 6 s after the first drain ended
  CHECK(parse_time(env.status("default", {"nextDrainAfter"})).value() >= parse_time(first_finished).value() + 6s);
}

TEST_CASE("maxDrainsPerHour holds the next drain for the rest of the hour, across a restart", "[e2e]") {
  Env env;
  env.apply("policy", policy_yaml("default", "  maxDrainsPerHour: 1\n", "0s"));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "ondemand-1"; }, 30s));
  REQUIRE(eventually([&] { return env.condition("default", "Blocked", "reason") == "MaxDrainsPerHour"; }, 10s));
  INFO(env.condition("default", "Blocked", "message"));
  CHECK(env.condition("default", "Blocked", "message").starts_with("1 drain started within the last hour (maxDrainsPerHour is 1)"));
  const std::string started = env.status("default", {"recentDrainStarts"});
  CHECK(started.find(R"([")") == 0);
  CHECK(metric_sample(op->metrics(), R"(spotshift_gate_blocked{policy="default",gate="MaxDrainsPerHour"})") == 1);
  // A new operator reads the count from the status: still held, nothing more drained.
  op->stop(SIGTERM);
  auto again = env.start("operator-2");
  replanned(env, *again, "default");
  CHECK(env.condition("default", "Blocked", "reason") == "MaxDrainsPerHour");
  CHECK(env.status("default", {"nodesDrainedTotal"}) == "1");
  CHECK_FALSE(env.any_draining());
}

TEST_CASE("dry-run plans and reports without touching nodes or pods", "[e2e]") {
  Env env;
  auto before = env.pods();
  env.apply("policy", policy_yaml("default", "  dryRun: true\n"));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return !env.events("WouldDrain").empty(); }, 20s));
  CHECK(env.events("WouldDrain")[0] ==
        "Node/ondemand-1: Policy default would drain ondemand-1 now (2 pods fit on spot nodes); dryRun is true, so nothing is touched");
  REQUIRE(eventually([&] { return env.condition("default", "Blocked", "reason") == "DryRun"; }, 10s));
  CHECK(env.status("default", {"drainableNodes"}) == "2");
  // kubectl get rsp: a policy in dry run does not look like a live one.
  CHECK(env.kubectl("get rsp default -o jsonpath={.status.mode}/{.status.blockedBy}") == "DryRun/DryRun");
  std::string metrics = op->metrics();
  CHECK(metric_sample(metrics, R"(spotshift_gate_blocked{policy="default",gate="DryRun"})") == 1);
  CHECK(metric_sample(metrics, R"(spotshift_gate_blocked{policy="default",gate="DrainDelay"})") == 0);
  replanned(env, *op, "default");
  CHECK(env.operator_requests("PATCH /api/v1/nodes").empty());
  CHECK(env.operator_requests("/eviction").empty());
  CHECK(env.pods() == before);
}

TEST_CASE("pricing: the plan, the status, events and metrics say what draining saves; the dearest per pod drains first", "[e2e]") {
  Env env;
  // ondemand-1 (2 pods) costs 0.8 an hour, ondemand-2 (3 pods) 3.6: per pod 0.4 and 1.2.
  env.kubectl("label node ondemand-1 example.com/price-per-hour=0.8");
  env.kubectl("label node ondemand-2 example.com/price-per-hour=3.6");
  const std::string pricing = "  pricing: {label: example.com/price-per-hour}\n  drainOrder: HighestSavingsPerEviction\n";
  env.apply("policy", policy_yaml("default", pricing + "  dryRun: true\n"));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return !env.events("WouldDrain").empty(); }, 20s));
  CHECK(env.events("WouldDrain")[0] ==
        "Node/ondemand-2: Policy default would drain ondemand-2 now (3 pods fit on spot nodes; saves about 3.6 per hour); dryRun is true, "
        "so nothing is touched");
  REQUIRE(eventually([&] { return env.status("default", {"estimatedHourlySavings"}) == "4.4"; }, 10s));
  CHECK(metric_sample(op->metrics(), R"(spotshift_estimated_hourly_savings{policy="default"})") == Approx(4.4));
  // The same plan offline, from kubectl's snapshot and the policy as the cluster has it.
  auto offline = plan_offline(env, "default");
  INFO(offline.output);
  CHECK(offline.output.find("Draining them saves about 4.4 per hour.") != std::string::npos);
  CHECK(offline.output.find("1            ondemand-2") != std::string::npos);
  // Live: the dearest per pod first, and DrainStarted says what it saves.
  env.apply("policy", policy_yaml("default", pricing + "  dryRun: false\n"));
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "ondemand-2"; }, 30s));
  auto started = env.events("DrainStarted");
  INFO(fmt::format("{}", fmt::join(started, "\n")));
  CHECK(std::any_of(started.begin(), started.end(), [](const std::string& e) {
    return e.starts_with("Node/ondemand-2: Draining ondemand-2") && e.ends_with("; saves about 3.6 per hour");
  }));
}

TEST_CASE("minOnDemandNodes: a drain that would leave fewer on-demand nodes running pods is not planned (OnDemandFloor)", "[e2e]") {
  Env env;
  // Four on-demand nodes run pods; a floor of 3 lets one drain.
  env.apply("policy", policy_yaml("default", "  minOnDemandNodes: 3\n", "1s"));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "result"}) == "Succeeded"; }, 30s));
  CHECK(env.status("default", {"lastDrain", "node"}) == "ondemand-1");
  const std::string floor = "OnDemandFloor: minOnDemandNodes is 3 and 3 on-demand nodes run pods, so none may be drained";
  REQUIRE(eventually([&] { return env.status("default", {"undrainableNodes"}).find(floor) != std::string::npos; }, 20s));
  past_drain_delay(env, "default");
  replanned(env, *op, "default");
  CHECK(env.status("default", {"nodesDrainedTotal"}) == "1");
  CHECK(env.status("default", {"drainableNodes"}) == "0");
  CHECK(metric_sample(op->metrics(), R"(spotshift_undrainable_nodes{policy="default",reason="on-demand-floor"})") >= 1);
  // The same decision offline.
  auto offline = plan_offline(env, "default");
  INFO(offline.output);
  CHECK(offline.output.find(floor) != std::string::npos);
  // Lowering the floor lets the next drain start.
  env.apply("policy", policy_yaml("default", "  minOnDemandNodes: 2\n", "1s"));
  REQUIRE(eventually([&] { return env.status("default", {"nodesDrainedTotal"}) == "2"; }, 30s));
}

TEST_CASE("disruptionWindows: outside every window no drain starts, the status says when the next opens; inside, drains run", "[e2e]") {
  using namespace std::chrono;
  Env env;
  // A window of one minute opening at a full hour one to two hours ahead in Kolkata (UTC+05:30,
  // no daylight saving), so the status must name its start in UTC.
  const auto now = system_clock::now();
  const auto local_hour = floor<hours>(now + 5h + 30min) + 2h;
  const Time opens = local_hour - 5h - 30min;
  const int hour = static_cast<int>((local_hour.time_since_epoch() / 1h) % 24);
  const std::string later = fmt::format("  - {{schedule: \"0 {} * * *\", duration: 1m, timeZone: Asia/Kolkata}}\n", hour);
  env.apply("policy", policy_yaml("default", "  disruptionWindows:\n" + later, "1s"));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.condition("default", "Blocked", "reason") == "OutsideWindow"; }, 20s));
  CHECK(env.condition("default", "Blocked", "message") == "outside every disruption window; the next opens at " + format_time(opens));
  CHECK(env.status("default", {"nextWindowStart"}) == format_time(opens));
  CHECK(env.kubectl("get rsp default -o jsonpath={.status.blockedBy}") == "OutsideWindow");
  CHECK(metric_sample(op->metrics(), R"(spotshift_gate_blocked{policy="default",gate="OutsideWindow"})") == 1);
  replanned(env, *op, "default");
  CHECK(env.operator_requests("/eviction").empty());
  CHECK_FALSE(env.any_draining());
  // spotshift plan says the same offline.
  auto offline = plan_offline(env, "default");
  INFO(offline.output);
  CHECK(offline.output.find("Drains wait: outside every disruption window; the next opens at " + format_time(opens) + ".") !=
        std::string::npos);
  // A time zone the tz database does not have: the policy is invalid, and says why.
  env.apply("policy",
            policy_yaml("default", "  disruptionWindows:\n  - {schedule: \"@daily\", duration: 1h, timeZone: Mars/Olympus_Mons}\n", "1s"));
  REQUIRE(eventually([&] { return env.condition("default", "Valid") == "False"; }, 20s));
  CHECK(env.condition("default", "Valid", "message").find("spec.disruptionWindows[0].timeZone: unknown time zone \"Mars/Olympus_Mons\"") !=
        std::string::npos);
  // A window open now (every minute opens one for a minute): the drains start.
  env.apply("policy", policy_yaml("default", "  disruptionWindows:\n" + later + "  - {schedule: \"* * * * *\", duration: 1m}\n", "1s"));
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "ondemand-1"; }, 30s));
  CHECK(env.status("default", {"lastDrain", "result"}) == "Succeeded");
  CHECK(env.status("default", {"nextWindowStart"}).empty());
}

TEST_CASE("waitForReplacementReady: each replacement must be Ready before the drain goes on, or the drain stops", "[e2e]") {
  Env env;
  // ondemand-1 runs web (a spare replica under a budget) and api (one replica). api's new pods
  // will never pass their readiness probe.
  env.kubectl(
      R"(patch rs api-7d4b9c -n shop --type merge -p '{"spec":{"template":{"metadata":{"annotations":{"kubesim.spotshift.io/never-ready":"true"}}}}}')");
  env.apply("policy", policy_yaml("default", "  waitForReplacementReady: true\n  replacementReadyTimeout: 3s\n", "1h"));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "result"}) == "Aborted"; }, 40s));
  INFO(op->log());
  CHECK(env.status("default", {"lastDrain", "node"}) == "ondemand-1");
  const std::string reason = env.status("default", {"lastDrain", "reason"});
  CHECK(reason.find("(ReplicaSet api-7d4b9c) was not Ready 3s after its eviction (waitForReplacementReady)") != std::string::npos);
  // web's replacement was Ready, so api was evicted after it; nothing else was.
  std::vector<std::string> evicted;  // the apps whose pods were evicted, in order (retries once)
  for (const auto& r : env.operator_requests("/eviction")) {
    std::string app = r.substr(r.find("/pods/") + 6, 3);
    if (evicted.empty() || evicted.back() != app) evicted.push_back(app);
  }
  CHECK(evicted == std::vector<std::string>{"web", "api"});
  // The taint is gone, and the aborted drain says why in its event.
  REQUIRE(eventually([&] { return !env.any_draining(); }, 10s));
  auto aborted = env.events("DrainAborted");
  CHECK(std::any_of(aborted.begin(), aborted.end(),
                    [](const std::string& e) { return e.find("waitForReplacementReady") != std::string::npos; }));
}

namespace {
// The port the operator serves the steering webhook on (from its log).
std::string webhook_port(const Operator& op) {
  std::smatch m;
  std::string log;
  eventually(
      [&] {
        log = op.log();
        return std::regex_search(log, m, std::regex(R"(serving the steering webhook address=127\.0\.0\.1:([0-9]+))"));
      },
      10s);
  INFO(log);
  REQUIRE(m.size() == 2);
  return m[1].str();
}
// Returns once the API server calls the operator's webhook and trusts its certificate (it caches
// webhook configurations and fails open until then): a controller's pod created in a dry run in
// shop is answered.
void webhook_called(Env& env, const Operator& op) {
  env.dir.write("probe.yaml", R"(apiVersion: v1
kind: Pod
metadata:
  name: webhook-probe
  namespace: shop
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: probe, uid: 3f0d7c1e-0000-4000-8000-0000000000ff, controller: true}]
spec:
  containers: [{name: pause, image: pause}]
)");
  std::string last;
  const bool called = eventually(
      [&] {
        last = env.kubectl("create --dry-run=server -f " + env.dir.file("probe.yaml"));
        return metric_sample(op.metrics(), R"(spotshift_webhook_admissions_total{result="untouched"})") > 0;
      },
      30s, 500ms);
  if (!called) FAIL("the webhook was never called; kubectl: " << last << "\nthe operator's log:\n" << op.log());
}
}  // namespace

TEST_CASE("steering Preferred: each replacement gets a preferred affinity for its planned spot node and lands there", "[e2e]") {
  Env env;
  auto op = env.start("operator", kSteeringFlags);
  const std::string port = webhook_port(*op);
  env.apply("webhook", steering_webhook_yaml(port));
  // The operator made its CA and certificate, kept them in the Secret, and put the CA in the
  // configuration's caBundle.
  if (!eventually(
          [&] {
            return !env.kubectl("get mutatingwebhookconfiguration spotshift-steering -o jsonpath={.webhooks[0].clientConfig.caBundle}",
                                false)
                        .empty();
          },
          20s, 100ms))
    FAIL("no caBundle; the operator's log:\n" << op->log());
  const std::string bundle =
      env.kubectl("get mutatingwebhookconfiguration spotshift-steering -o jsonpath={.webhooks[0].clientConfig.caBundle}");
  CHECK(env.kubectl("get secret spotshift-webhook-tls -o 'jsonpath={.data.ca\\.crt}'") == bundle);
  CHECK(env.kubectl("get secret spotshift-webhook-tls -o jsonpath={.type}") == "kubernetes.io/tls");
  webhook_called(env, *op);

  env.apply("policy", policy_yaml("default", "  steering: Preferred\n"));
  REQUIRE(eventually([&] { return env.status("default", {"nodesDrainedTotal"}) == "2"; }, 60s));
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "result"}) == "Succeeded"; }, 30s));
  INFO(op->log());
  REQUIRE(eventually([&] { return env.all_running(); }, 20s));

  // Every replacement was steered, carries the node it was steered to, and runs there: the plan
  // and the outcome agree (without steering, kubesim's and kube-scheduler's scores put some of
  // them on the emptier spot node).
  std::string metrics = op->metrics();
  const double evicted = metric_sample(metrics, R"(spotshift_evictions_total{policy="default",result="evicted"})");
  CHECK(evicted == 5);
  CHECK(metric_sample(metrics, R"(spotshift_webhook_admissions_total{result="steered"})") == evicted);
  CHECK(metric_sample(metrics, R"(spotshift_replacements_total{policy="default",placement="planned"})") == evicted);
  CHECK(metric_sum(metrics, "spotshift_replacements_total", {R"(placement="other_spot")"}) == 0);
  int steered = 0;
  env.for_each("pods", [&](const rapidjson::Value& p) {
    std::string_view to = kubesim::json_string(p, {"metadata", "annotations", "spotshift.io/steered-to"});
    if (to.empty()) return;
    ++steered;
    INFO(Env::key(p));
    CHECK(kubesim::json_string(p, {"spec", "nodeName"}) == to);
    const auto* terms = kubesim::json_path(p, {"spec", "affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution"});
    REQUIRE(terms);
    CHECK(kubesim::to_json(*terms).find(fmt::format(R"("values":["{}"])", to)) != std::string::npos);
  });
  CHECK(steered == evicted);

  // With no drain running, new pods go through untouched.
  const double untouched = metric_sample(op->metrics(), R"(spotshift_webhook_admissions_total{result="untouched"})");
  env.kubectl("delete pod -n shop billing-0 --wait=false");
  REQUIRE(eventually([&] { return env.pods().count("shop/billing-0") && !env.pods().at("shop/billing-0").empty(); }, 30s));
  CHECK(metric_sample(op->metrics(), R"(spotshift_webhook_admissions_total{result="steered"})") == evicted);
  CHECK(metric_sample(op->metrics(), R"(spotshift_webhook_admissions_total{result="untouched"})") == untouched + 1);
  env.for_each("pods", [&](const rapidjson::Value& p) {
    if (Env::key(p) == "shop/billing-0") CHECK(kubesim::json_string(p, {"metadata", "annotations", "spotshift.io/steered-to"}).empty());
  });

  // The operator down: failurePolicy Ignore, pods are created as usual.
  op->stop(SIGKILL);
  env.kubectl("scale rs -n shop api-7d4b9c --replicas 2");
  REQUIRE(eventually(
      [&] {
        int api = 0;
        for (const auto& [pod, node] : env.pods()) api += pod.starts_with("shop/api-") && !node.empty();
        return api == 2;
      },
      40s, 200ms));
}

struct ShopNode {
  const char* name;
  const char* pool;
  int cpu;
  const char* memory;
  int gpus;
};
struct ShopPod {
  const char* app;
  const char* node;
  const char* cpu;
  int gpus;
};

// Namespace shop, these pool nodes (pool_node), and each pod its own ReplicaSet's in shop.
std::string shop_scenario(std::initializer_list<ShopNode> nodes, std::initializer_list<ShopPod> pods) {
  std::string out = "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n";
  for (const auto& n : nodes) out += pool_node(n.name, n.pool, n.cpu, n.memory, n.gpus);
  int id = 0;
  for (const auto& p : pods) out += replica_set_pod("shop", p.app, ++id, p.node, gpu_resources(p.cpu, p.gpus));
  return out;
}

// Two GPU spot nodes: gpu-free (4 CPUs and both GPUs free) and gpu-full (6 CPUs, no GPU free).
// od-1 runs a 3-CPU pod, od-2 a 4-CPU pod with a GPU, each of a ReplicaSet. FreeCPU alone puts
// od-1's pod on the fuller gpu-free, and then od-2's fits nowhere; the plan search puts it on
// gpu-full, and both drain.
std::string gpu_trap_scenario() {
  return shop_scenario(
      {{"gpu-free", "gpu-spot", 8, "32Gi", 2},
       {"gpu-full", "gpu-spot", 8, "32Gi", 2},
       {"od-1", "gpu-od", 8, "32Gi", 0},
       {"od-2", "gpu-od", 8, "32Gi", 2}},
      {{"fill-x", "gpu-free", "4", 0}, {"fill-y", "gpu-full", "2", 2}, {"cpu-only", "od-1", "3", 0}, {"trainer", "od-2", "4", 1}});
}

TEST_CASE("the drains run fewest places first: a pod that fits on one spot node drains before a replacement can take it", "[e2e]") {
  // spot-a is empty with a GPU, spot-b has 3 of its 8 CPUs taken and no GPU. od-1 runs a 2-CPU
  // pod, od-2 a 7-CPU pod with a GPU. The plan (od-1 first by requested CPU) puts od-1's pod on
  // spot-b and od-2's on spot-a, the one node it fits on. The cluster's scheduler prefers the
  // least allocated node: drained first, od-1's replacement would land on spot-a and leave
  // od-2's pod no room. od-2 has one place, od-1 two, so od-2 drains first, and both empty.
  EnvOptions options;
  options.demo = false;
  Env env(
      shop_scenario(
          {{"spot-a", "spot", 8, "32Gi", 1}, {"spot-b", "spot", 8, "32Gi", 0}, {"od-1", "od", 8, "32Gi", 0}, {"od-2", "od", 8, "32Gi", 1}},
          {{"filler", "spot-b", "3", 0}, {"small", "od-1", "2", 0}, {"trainer", "od-2", "7", 1}}),
      options);
  env.apply("policy", policy_yaml("pool", R"(  onDemandNodeSelector: {matchLabels: {pool: od}}
  spotNodeSelector: {matchLabels: {pool: spot}}
)",
                                  "1s"));
  auto offline = plan_offline(env, "pool");
  INFO(offline.output);
  REQUIRE(offline.status == 0);
  CHECK(offline.output.find("\n1            od-2") != std::string::npos);
  CHECK(offline.output.find("\n2            od-1") != std::string::npos);

  auto op = env.start("operator");
  INFO(op->log());
  REQUIRE(eventually([&] { return env.status("pool", {"nodesDrainedTotal"}) == "2"; }, 60s));
  CHECK(env.status("pool", {"lastDrain", "node"}) == "od-1");
  REQUIRE(eventually([&] { return env.all_running(); }, 20s));
  std::map<std::string, std::string> by_app;
  for (const auto& [pod, node] : env.pods()) by_app[pod.substr(0, pod.rfind('-'))] = node;
  CHECK(by_app["shop/trainer"] == "spot-a");
  CHECK(by_app["shop/small"] != "spot-a");  // spot-b, or od-2 emptied before it (the scheduler's choice)
  const std::string metrics = op->metrics();
  CHECK(metric_sample(metrics, R"(spotshift_evictions_total{policy="pool",result="evicted"})") == 2);
  CHECK(metric_sample(metrics, R"(spotshift_drains_total{policy="pool",result="succeeded"})") == 2);
}

TEST_CASE("the plan search with steering Preferred: each drain steers to the targets the search chose, and every planned node drains",
          "[e2e]") {
  // Re-planned alone, od-1's pod would be steered to gpu-free (FreeCPU's choice), and od-2 could
  // never drain. The drain carries out the plan it started from: gpu-full, then od-2.
  EnvOptions options;
  options.demo = false;
  Env env(gpu_trap_scenario(), options);
  auto op = env.start("operator", kSteeringFlags);
  env.apply("webhook", steering_webhook_yaml(webhook_port(*op)));
  webhook_called(env, *op);
  env.apply("policy", policy_yaml("gpu", R"(  onDemandNodeSelector: {matchLabels: {pool: gpu-od}}
  spotNodeSelector: {matchLabels: {pool: gpu-spot}}
  profile: {scores: [{name: FreeCPU}]}
  searchIterations: 50
  steering: Preferred
)",
                                  "1s"));
  INFO(op->log());
  REQUIRE(eventually([&] { return env.status("gpu", {"nodesDrainedTotal"}) == "2"; }, 60s));
  REQUIRE(eventually([&] { return env.all_running(); }, 20s));
  auto pods = env.pods();
  std::map<std::string, std::string> by_app;
  for (const auto& [pod, node] : pods) by_app[pod.substr(0, pod.rfind('-'))] = node;
  CHECK(by_app["shop/cpu-only"] == "gpu-full");
  CHECK(by_app["shop/trainer"] == "gpu-free");
  const std::string metrics = op->metrics();
  CHECK(metric_sample(metrics, R"(spotshift_evictions_total{policy="gpu",result="evicted"})") == 2);
  CHECK(metric_sample(metrics, R"(spotshift_replacements_total{policy="gpu",placement="planned"})") == 2);
}

// od-1 runs a 100m pod, od-2 a 2-CPU pod, od-3 (8 CPUs) a 5-CPU pod no spot node has room for,
// so not every node drains; spot-1 has 4 CPUs and spot-2 3. Each pod is a ReplicaSet's.
std::string plan_stability_scenario() {
  return shop_scenario({{"od-1", "od", 4, "16Gi", 0},
                        {"od-2", "od", 4, "16Gi", 0},
                        {"od-3", "od", 8, "16Gi", 0},
                        {"spot-1", "spot", 4, "16Gi", 0},
                        {"spot-2", "spot", 3, "16Gi", 0}},
                       {{"light", "od-1", "100m", 0}, {"db", "od-2", "2", 0}, {"big", "od-3", "5", 0}});
}

TEST_CASE("from its first drain on, each plan carries on from the last: a spot node joining does not move the next node's targets",
          "[e2e]") {
  // FreeCPU fullest first plans od-1's and od-2's pods onto spot-2. While od-1 drains, spot-3
  // joins with 2 CPUs: a fresh plan would put od-2's pod there, the fullest node with room. But
  // spot-2 still has room for it, and the next drain carries out the plan the drains started.
  EnvOptions options;
  options.demo = false;
  Env env(plan_stability_scenario(), options);
  env.apply("policy", policy_yaml("pool", R"(  onDemandNodeSelector: {matchLabels: {pool: od}}
  spotNodeSelector: {matchLabels: {pool: spot}}
  profile: {scores: [{name: FreeCPU}]}
)",
                                  "10s"));
  auto op = env.start("operator");
  INFO(op->log());
  REQUIRE(eventually([&] { return !env.events("DrainStarted").empty(); }, 30s));
  // A spot node joins (kwok's, on the real control plane).
  env.apply("spot-3", R"(apiVersion: v1
kind: Node
metadata:
  name: spot-3
  labels: {kubernetes.io/hostname: spot-3, kubernetes.io/os: linux, pool: spot}
  annotations: {kwok.x-k8s.io/node: fake}
status:
  capacity: {cpu: "2", memory: 16Gi, pods: "110"}
  allocatable: {cpu: "2", memory: 16Gi, pods: "110"}
)");
  REQUIRE(eventually([&] { return env.status("pool", {"nodesDrainedTotal"}) == "2"; }, 60s));
  std::map<std::string, std::string> started;
  for (const auto& e : env.events("DrainStarted"))
    if (e.starts_with("Node/")) started[e.substr(5, e.find(':') - 5)] = e;
  INFO(fmt::format("{}", fmt::join(env.events("DrainStarted"), "\n")));
  CHECK(started["od-1"].find("(the plan found room on spot-2)") != std::string::npos);
  CHECK(started["od-2"].find("(the plan found room on spot-2)") != std::string::npos);
  CHECK(started.count("od-3") == 0);
}

TEST_CASE("the webhook's certificate: made when missing, renewed when expiring or wrong, the CA kept, caBundle kept current", "[e2e]") {
  Env env;
  // Flags that cannot work are refused before anything starts.
  for (auto [flags, message] : {std::pair<std::string, std::string>{"--webhook-bind-address 127.0.0.1:0",
                                                                    "error: --webhook-bind-address needs --webhook-dns-names"},
                                {"--webhook-bind-address 127.0.0.1:0 --webhook-ip-addresses 127.0.0.1 --webhook-secret nope",
                                 "error: --webhook-secret must be namespace/name, not \"nope\""},
                                {"--webhook-bind-address 127.0.0.1:0 --webhook-ip-addresses 127.0.0.1 --webhook-leader-pod a/b/c",
                                 "error: --webhook-leader-pod must be namespace/name, not \"a/b/c\""}}) {
    auto r = run(fmt::format("{} run --kubeconfig {} {} 2>&1", SPOTSHIFT_BIN, env.kubeconfig(), flags));
    INFO(flags << "\n" << r.output);
    CHECK(r.status == 2);
    CHECK(r.output.find(message) != std::string::npos);
  }
  auto secret_field = [&](const std::string& field) {
    auto text = base64_decode(env.kubectl(fmt::format("get secret spotshift-webhook-tls -o 'jsonpath={{.data.{}}}'", field), false));
    return text ? *text : std::string();
  };
  // A Secret whose serving certificate expires in a month, from a CA of its own.
  auto ca = kube::CertificateAuthority::create("earlier-ca").value();
  auto soon = ca.issue_server({}, {"127.0.0.1"}, std::chrono::hours(24 * 30)).value();
  env.apply("secret", fmt::format(R"(apiVersion: v1
kind: Secret
metadata: {{name: spotshift-webhook-tls, namespace: default}}
type: kubernetes.io/tls
data: {{ca.crt: {}, ca.key: {}, tls.crt: {}, tls.key: {}}}
)",
                                  base64_encode(ca.pair().cert_pem), base64_encode(ca.pair().key_pem), base64_encode(soon.cert_pem),
                                  base64_encode(soon.key_pem)));
  env.apply("webhook", steering_webhook_yaml("1"));
  const std::string flags = kSteeringFlags;
  // The leader labels its own pod for the webhook Service (billing-0 stands in for it here).
  auto leader_label = [&] {
    return env.kubectl("get pod -n shop billing-0 -o 'jsonpath={.metadata.labels.spotshift\\.io/webhook-leader}'");
  };
  auto op = env.start("operator", flags + " --webhook-leader-pod shop/billing-0");
  REQUIRE(eventually([&] { return leader_label() == "true"; }, 20s, 100ms));
  // Renewed from the same CA, for a year; the CA went into the caBundle.
  REQUIRE(eventually([&] { return secret_field("tls\\.crt") != soon.cert_pem; }, 20s, 100ms));
  CHECK(secret_field("ca\\.crt") == ca.pair().cert_pem);
  auto expiry = kube::certificate_expiry(secret_field("tls\\.crt"));
  REQUIRE(expiry);
  CHECK(*expiry - std::chrono::system_clock::now() > std::chrono::hours(24 * 360));
  CHECK(kube::check_server_certificate({secret_field("tls\\.crt"), secret_field("tls\\.key")}, ca.pair().cert_pem, {}, {"127.0.0.1"}));
  auto bundle = [&] {
    auto b = base64_decode(
        env.kubectl("get mutatingwebhookconfiguration spotshift-steering -o jsonpath={.webhooks[0].clientConfig.caBundle}", false));
    return b ? *b : std::string();
  };
  REQUIRE(eventually([&] { return bundle() == ca.pair().cert_pem; }, 20s, 100ms));
  CHECK(op->log().find("why=\"the serving certificate expires within four months\"") != std::string::npos);
  op->stop(SIGTERM);

  // Names that changed (another IP address): a new certificate, the CA kept.
  op = env.start("operator2", flags + " --webhook-ip-addresses 127.0.0.1,127.0.0.2");
  REQUIRE(eventually(
      [&] {
        return kube::check_server_certificate({secret_field("tls\\.crt"), secret_field("tls\\.key")}, ca.pair().cert_pem, {},
                                              {"127.0.0.1", "127.0.0.2"})
            .has_value();
      },
      20s, 100ms));
  op->stop(SIGTERM);

  // A Secret that is not usable (a CA key that is not the CA's): a new CA and certificate, and
  // the caBundle follows.
  env.kubectl(fmt::format(R"(patch secret spotshift-webhook-tls --type merge -p '{{"data":{{"ca.key":"{}"}}}}')",
                          base64_encode(kube::CertificateAuthority::create("other").value().pair().key_pem)));
  op = env.start("operator3", flags);
  REQUIRE(eventually([&] { return secret_field("ca\\.crt") != ca.pair().cert_pem && !secret_field("ca\\.crt").empty(); }, 20s, 100ms));
  REQUIRE(eventually([&] { return bundle() == secret_field("ca\\.crt"); }, 20s, 100ms));
  CHECK(
      kube::check_server_certificate({secret_field("tls\\.crt"), secret_field("tls\\.key")}, secret_field("ca\\.crt"), {}, {"127.0.0.1"}));
  op->stop(SIGTERM);

  // A replica that does not lead takes the label off its pod (a restarted container keeps it).
  CHECK(leader_label() == "true");
  const std::string now = format_micro_time(std::chrono::system_clock::now());
  env.apply("lease", fmt::format(R"(apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {{name: spotshift, namespace: default}}
spec: {{holderIdentity: someone-else, leaseDurationSeconds: 3600, acquireTime: "{}", renewTime: "{}"}}
)",
                                 now, now));
  op = env.start("operator4", flags + " --webhook-leader-pod shop/billing-0 --leader-elect");
  REQUIRE(eventually([&] { return leader_label().empty(); }, 20s, 100ms));
  CHECK(env.lease_holder() == "someone-else");
  op->stop(SIGTERM);

  // cert-manager's certificate, mounted: read from the directory, and the API server trusts it
  // through the caBundle cert-manager's cainjector would set (here, the test).
  auto cm_ca = kube::CertificateAuthority::create("cert-manager-ca").value();
  auto cm_cert = cm_ca.issue_server({}, {"127.0.0.1"}).value();
  run("mkdir -p " + env.dir.file("certs"));
  env.dir.write("certs/tls.crt", cm_cert.cert_pem);
  env.dir.write("certs/tls.key", cm_cert.key_pem);
  op = env.start("operator5", "--webhook-bind-address 127.0.0.1:0 --webhook-cert-dir " + env.dir.file("certs"));
  env.kubectl("delete mutatingwebhookconfiguration spotshift-steering");
  env.apply("webhook-cm", steering_webhook_yaml(webhook_port(*op)));
  env.kubectl(fmt::format(
      R"(patch mutatingwebhookconfiguration spotshift-steering --type json -p '[{{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":"{}"}}]')",
      base64_encode(cm_ca.pair().cert_pem)));
  webhook_called(env, *op);
}

namespace {
// Overprovisioning placeholders (PriorityClass overprovisioning, -100) hold all but 500m of
// spot-1 and 100m of spot-2, so nothing of ondemand-1 fits unless their room counts as free.
std::string headroom_scenario() {
  std::string s = R"(---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: overprovisioning}
value: -100
description: Placeholders the scheduler preempts for any other pod.
---
apiVersion: v1
kind: Namespace
metadata: {name: capacity}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: headroom, namespace: capacity, uid: 3f0d7c1e-0000-4000-8000-00000000c001}
spec:
  replicas: 3
  selector: {matchLabels: {app: headroom}}
  template:
    metadata: {labels: {app: headroom}}
    spec:
      priorityClassName: overprovisioning
      terminationGracePeriodSeconds: 1
      containers: [{name: pause, image: pause, resources: {requests: {cpu: 1700m, memory: 64Mi}}}]
)";
  for (auto [name, node, cpu] :
       {std::tuple{"headroom-a", "spot-1", "1700m"}, {"headroom-b", "spot-1", "1700m"}, {"headroom-c", "spot-2", "1800m"}})
    s += fmt::format(R"(---
apiVersion: v1
kind: Pod
metadata:
  name: {}
  namespace: capacity
  labels: {{app: headroom}}
  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: headroom, uid: 3f0d7c1e-0000-4000-8000-00000000c001, controller: true}}]
spec:
  nodeName: {}
  priorityClassName: overprovisioning
  terminationGracePeriodSeconds: 1
  containers: [{{name: pause, image: pause, resources: {{requests: {{cpu: {}, memory: 64Mi}}}}}}]
)",
                     name, node, cpu);
  return s;
}
}  // namespace

TEST_CASE("expendablePodsPriorityCutoff: placeholder pods are free room on spot nodes, never moved, and preempted by the moves", "[e2e]") {
  Env env(headroom_scenario());
  // Placeholders counted as workloads: nothing fits.
  env.apply("policy", policy_yaml("default", "  dryRun: true\n  expendablePodsPriorityCutoff: -1000\n", "1s"));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.condition("default", "Ready") == "True"; }, 20s));
  replanned(env, *op, "default");
  CHECK(env.status("default", {"drainableNodes"}) == "0");
  // The default cutoff (-10): their room is free, and the plan says whose room a drain takes.
  env.apply("policy", policy_yaml("default", "  dryRun: true\n", "1s"));
  REQUIRE(eventually([&] { return !env.events("WouldDrain").empty(); }, 20s));
  CHECK(env.events("WouldDrain")[0] ==
        "Node/ondemand-1: Policy default would drain ondemand-1 now (2 pods fit on spot nodes; displaces 1 expendable pod); dryRun is "
        "true, so nothing is touched");
  auto offline = plan_offline(env, "default");
  INFO(offline.output);
  CHECK(offline.output.find("    displaces: capacity/headroom-") != std::string::npos);
  // Live. kube-scheduler preempts only for a pod that fits on no node, so the other on-demand
  // nodes, which have room, are cordoned: the replacements must take the placeholders' room. A
  // placeholder Pending for want of room holds no drain back (the unschedulable-pods gate is Any).
  env.kubectl("cordon ondemand-2 ondemand-3 ondemand-4");
  env.kubectl(
      R"(run waiting -n capacity --image=pause --restart=Never --overrides='{"spec":{"priorityClassName":"overprovisioning","containers":[{"name":"waiting","image":"pause","resources":{"requests":{"cpu":"64"}}}]}}')");
  REQUIRE(eventually(
      [&] { return env.kubectl("get pod waiting -n capacity -o jsonpath={.status.conditions[0].reason}") == "Unschedulable"; }, 10s));
  env.apply("policy", policy_yaml("default", "", "1s"));
  bool drained = eventually([&] { return env.status("default", {"lastDrain", "result"}) == "Succeeded"; }, 60s);
  INFO(op->log());
  INFO(env.kubectl("get pods -A -o wide"));
  REQUIRE(drained);
  CHECK(env.status("default", {"lastDrain", "node"}) == "ondemand-1");
  // spotshift evicted none of them: the scheduler preempted one for the moved pods.
  for (const auto& r : env.operator_requests("/eviction")) CHECK(r.find("/namespaces/capacity/") == std::string::npos);
  REQUIRE(eventually([&] { return env.all_running(); }, 20s));
  for (const auto& [pod, node] : env.pods())
    if (pod.starts_with("shop/api-")) CHECK(node.starts_with("spot-"));
  CHECK(env.kubectl("get events -n capacity --field-selector reason=Preempted -o name").find("event") != std::string::npos);
}

TEST_CASE("pricing from a ConfigMap of instance-type prices: read again as it changes, problems reported", "[e2e]") {
  Env env;
  env.kubectl("label node ondemand-1 node.kubernetes.io/instance-type=m5.large");
  env.kubectl("label node ondemand-2 node.kubernetes.io/instance-type=m5.2xlarge");
  env.kubectl(
      R"(create configmap node-prices -n default --from-literal=m5.large=0.096 --from-literal=m5.2xlarge=0.384 --from-literal=m5.huge=lots)");
  const std::string pricing =
      "  pricing: {configMap: {namespace: default, name: node-prices}}\n  housekeepingInterval: 1s\n  dryRun: true\n";
  env.apply("policy", policy_yaml("default", pricing));
  // A second policy, for no node, names a ConfigMap that is not there.
  env.apply("absent",
            policy_yaml("absent",
                        "  onDemandNodeSelector: {matchLabels: {pool: none}}\n  spotNodeSelector: {matchLabels: {pool: none-spot}}\n"
                        "  pricing: {configMap: {namespace: default, name: absent}}\n"));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.status("default", {"estimatedHourlySavings"}) == "0.48"; }, 20s));
  // What cannot be read is said once, in a Warning on the policy.
  REQUIRE(eventually([&] { return env.events("PricingUnavailable").size() == 2; }, 20s));
  auto warnings = env.events("PricingUnavailable");
  std::sort(warnings.begin(), warnings.end());
  CHECK(warnings[0].starts_with("ReschedulePolicy/absent: cannot read ConfigMap default/absent for spec.pricing: "));
  CHECK(warnings[1] ==
        "ReschedulePolicy/default: ConfigMap default/node-prices: the values of m5.huge are not prices per hour (decimal numbers), so "
        "those instance types have none");
  CHECK(env.status("absent", {"estimatedHourlySavings"}) == "0.0");
  // A new price is read within a housekeepingInterval.
  env.kubectl(R"(patch configmap node-prices -n default --type merge -p '{"data":{"m5.large":"0.1"}}')");
  REQUIRE(eventually([&] { return env.status("default", {"estimatedHourlySavings"}) == "0.484"; }, 20s));
  if (env.on_kubesim()) {
    // A read that fails (a 500, not a 404) keeps the prices read before.
    kubesim::FaultRule broken;
    broken.verb = "get";
    broken.resource = "configmaps";
    broken.status = 500;
    env.kubesim().faults().add(broken);
    const std::string failures = R"(spotshift_api_requests_total{client="controller",code="500"})";
    // Read again (and failing) once per housekeepingInterval; the plans after it keep the prices.
    REQUIRE(eventually([&] { return metric_sample(op->metrics(), failures) >= 2; }, 20s));
    replanned(env, *op, "default");
    CHECK(env.status("default", {"estimatedHourlySavings"}) == "0.484");
    env.kubesim().faults().clear();
  }
  // The same offline, from a snapshot that holds the ConfigMap.
  auto offline = plan_offline(env, "default", "configmaps");
  INFO(offline.output);
  CHECK(offline.output.find("Draining them saves about 0.484 per hour.") != std::string::npos);
  CHECK(offline.output.find("warning: ConfigMap default/node-prices: the values of m5.huge are not prices per hour") != std::string::npos);
  // And live.
  auto live = spotshift::testing::run(fmt::format("{} plan --kubeconfig {} --policy-name default", SPOTSHIFT_BIN, env.kubeconfig()));
  INFO(live.output);
  CHECK(live.output.find("Draining them saves about 0.484 per hour.") != std::string::npos);
}

TEST_CASE("a node annotated to opt out (Karpenter's, cluster-autoscaler's or spotshift's annotation) is not drained", "[e2e]") {
  Env env;
  env.kubectl("annotate node ondemand-1 karpenter.sh/do-not-disrupt=true");
  env.kubectl("annotate node ondemand-2 cluster-autoscaler.kubernetes.io/scale-down-disabled=true");
  env.apply("policy", policy_yaml("default", "  dryRun: true\n"));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.status("default", {"undrainableNodes"}).find("ondemand-2") != std::string::npos; }, 20s));
  replanned(env, *op, "default");
  std::string undrainable = env.status("default", {"undrainableNodes"});
  INFO(undrainable);
  CHECK(undrainable.find("the node is annotated karpenter.sh/do-not-disrupt=true") != std::string::npos);
  CHECK(undrainable.find("the node is annotated cluster-autoscaler.kubernetes.io/scale-down-disabled=true") != std::string::npos);
  CHECK(env.status("default", {"drainableNodes"}) == "0");
  CHECK(metric_sample(op->metrics(), R"(spotshift_undrainable_nodes{policy="default",reason="node-annotation"})") == 2);
  // The opt-out lifted, the node is drained as before; spotshift's own annotation holds the other.
  env.kubectl("annotate node ondemand-1 karpenter.sh/do-not-disrupt-");
  env.kubectl("annotate node ondemand-2 cluster-autoscaler.kubernetes.io/scale-down-disabled- spotshift.io/do-not-drain=true");
  env.apply("policy", policy_yaml("default", "  dryRun: false\n", "1s"));
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "ondemand-1"; }, 30s));
  CHECK(env.status("default", {"lastDrain", "result"}) == "Succeeded");
  past_drain_delay(env, "default");
  replanned(env, *op, "default");
  CHECK(env.status("default", {"nodesDrainedTotal"}) == "1");
  CHECK(env.status("default", {"undrainableNodes"}).find("the node is annotated spotshift.io/do-not-drain=true") != std::string::npos);
}

TEST_CASE("a suspended policy plans but starts no drain until it is resumed", "[e2e]") {
  Env env;
  auto before = env.pods();
  env.apply("policy", policy_yaml("default", "  suspend: true\n"));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.condition("default", "Blocked", "reason") == "Suspended"; }, 20s));
  CHECK(env.status("default", {"drainableNodes"}) == "2");
  CHECK(env.status("default", {"mode"}) == "Suspended");
  replanned(env, *op, "default");
  CHECK_FALSE(env.any_draining());
  CHECK(env.operator_requests("/eviction").empty());
  CHECK(env.pods() == before);
  env.apply("policy", policy_yaml("default", "  suspend: false\n"));
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "ondemand-1"; }, 30s));
  CHECK(env.status("default", {"lastDrain", "result"}) == "Succeeded");
  CHECK(env.status("default", {"mode"}) == "Active");
}

// A `kubectl get nodes,pods -A -o json` snapshot holds no Namespace objects: the scenario's pods
// load into the namespaces they name, on both backends.
TEST_CASE("a scenario's pods load into a namespace it does not declare", "[e2e]") {
  Env env(R"(
---
apiVersion: v1
kind: Pod
metadata: {name: lone, namespace: undeclared}
spec:
  nodeName: spot-1
  containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]
)");
  CHECK(env.kubectl("get pod lone -n undeclared -o jsonpath={.spec.nodeName}") == "spot-1");
  CHECK(env.kubectl("get namespace undeclared -o jsonpath={.status.phase}") == "Active");
}

TEST_CASE("kubectl drain evicts through the Eviction API, a budget holds it back, and kubectl events tells", "[e2e]") {
  Env env;
  // ondemand-1 holds web (budget-covered: one disruption allowed) and api.
  std::string drain = env.kubectl("drain ondemand-1 --ignore-daemonsets --timeout=60s");
  CHECK(drain.find("node/ondemand-1 cordoned") != std::string::npos);
  CHECK(drain.find("evicting pod shop/web-7d4b9c-x1a2b") != std::string::npos);
  CHECK(drain.find("evicting pod shop/api-7d4b9c-k8s2q") != std::string::npos);
  CHECK(drain.find("node/ondemand-1 drained") != std::string::npos);
  REQUIRE(eventually([&] { return env.all_running(); }, 30s));
  for (const auto& [pod, node] : env.pods())
    if (pod.starts_with("shop/")) CHECK(node != "ondemand-1");
  // Every eviction went through pods/eviction, none through a DELETE of the pod.
  CHECK(env.requests("kubectl/", "/eviction").size() >= 2);
  CHECK(env.requests("kubectl/", "DELETE /api/v1/namespaces/shop/pods").empty());
  CHECK(env.kubectl("get node ondemand-1 -o jsonpath={.spec.unschedulable}") == "true");
  // The replacements were scheduled, and kubectl events shows it.
  std::string events = env.kubectl("events -n shop");
  CHECK(events.find("Scheduled") != std::string::npos);
  CHECK(events.starts_with("LAST SEEN"));

  // A spot node holding one of the replacements drains the same way (a spot interruption notice,
  // say): through the Eviction API, the budget respected.
  std::string spot;
  for (const auto& [pod, node] : env.pods())
    if (pod.starts_with("shop/web-") && node.starts_with("spot-")) spot = node;
  REQUIRE_FALSE(spot.empty());
  REQUIRE(eventually([&] { return env.kubectl("get pdb web-pdb -n shop -o jsonpath={.status.disruptionsAllowed}") == "1"; }, 30s));
  const size_t evictions_before = env.requests("kubectl/", "/eviction").size();
  std::string spot_drain = env.kubectl(fmt::format("drain {} --ignore-daemonsets --timeout=60s", spot));
  CHECK(spot_drain.find(fmt::format("node/{} drained", spot)) != std::string::npos);
  CHECK(env.requests("kubectl/", "/eviction").size() > evictions_before);
  for (const auto& [pod, node] : env.pods())
    if (pod.starts_with("shop/")) CHECK(node != spot);

  // ondemand-4 holds two web pods while the budget allows one disruption, with every node
  // cordoned so no replacement can become Ready: the second eviction is refused until the
  // timeout, and the pod stays.
  REQUIRE(eventually([&] { return env.kubectl("get pdb web-pdb -n shop -o jsonpath={.status.disruptionsAllowed}") == "1"; }, 30s));
  env.kubectl("cordon --selector=kubernetes.io/hostname");
  std::string held = env.kubectl("drain ondemand-4 --ignore-daemonsets --timeout=8s", false);
  CHECK(held.find("Cannot evict pod as it would violate the pod's disruption budget.") != std::string::npos);
  size_t left = 0;
  for (const auto& [pod, node] : env.pods()) left += node == "ondemand-4" && pod.starts_with("shop/web-") ? 1 : 0;
  CHECK(left == 1);
}

TEST_CASE("a stream of pod changes plans at most --max-planning-cpu of a core, and the last change is planned", "[e2e]") {
  Env env;
  env.apply("policy", policy_yaml("default", "  dryRun: true\n"));
  auto op = env.start("operator", "--max-planning-cpu 1");
  REQUIRE(eventually([&] { return env.status("default", {"drainableNodes"}) == "2"; }, 20s));
  const std::string count = R"(spotshift_plan_duration_seconds_count{policy="default"})";
  const std::string sum = R"(spotshift_plan_duration_seconds_sum{policy="default"})";
  std::string before = op->metrics();
  REQUIRE(metric_sample(before, count) >= 1);

  // A label changes on a pod every millisecond for 1.5 s: each change asks for a plan.
  std::string pod;
  for (const auto& [key, node] : env.pods())
    if (key.starts_with("shop/api-")) pod = key;
  REQUIRE(!pod.empty());
  auto started = std::chrono::steady_clock::now();
  int changes = 0;
  while (std::chrono::steady_clock::now() - started < 1500ms) {
    env.kubesim().run([&](kubesim::Cluster& c) {
      c.mutate(*c.registry().pods(), pod, [&](kubesim::Value& o, kubesim::Alloc& a) {
        kubesim::set_str(kubesim::ensure_object(kubesim::ensure_object(o, "metadata", a), "labels", a), "churn", std::to_string(changes),
                         a);
      });
    });
    ++changes;
    std::this_thread::sleep_for(1ms);
  }
  // Then a change the plan must show: no spot node takes pods any more.
  env.kubectl("cordon spot-1 spot-2");
  REQUIRE(eventually([&] { return env.status("default", {"drainableNodes"}) == "0"; }, 10s));
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::string after = op->metrics();
  double plans = metric_sample(after, count) - metric_sample(before, count);
  double planning = metric_sample(after, sum) - metric_sample(before, sum);
  INFO(changes << " changes in " << elapsed << " s: " << plans << " plans, " << planning << " s planning\n" << op->log());
  CHECK(plans < changes / 2.0);
  // 1 % of the time plus the plans at either end; without the wait it is 3 to 4 %.
  CHECK(planning <= 0.02 * elapsed + 0.005);
}

TEST_CASE("no drain starts while a pod is Pending and unschedulable", "[e2e]") {
  Env env(R"(
---
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: shop}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: "64"}}}]
)");
  env.apply("policy", policy_yaml("default", ""));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.condition("default", "Blocked", "reason") == "UnschedulablePods"; }, 20s));
  CHECK(env.condition("default", "Blocked", "message").find("shop/huge") != std::string::npos);
  replanned(env, *op, "default");
  CHECK(env.operator_requests("/eviction").empty());
  env.kubectl("delete pod huge -n shop --wait=false");
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "ondemand-1"; }, 20s));
}

TEST_CASE("a budget whose selector is {} covers every pod of its namespace: pods it shares with another budget block their node", "[e2e]") {
  Env env(R"(
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: everything, namespace: shop}
spec:
  maxUnavailable: 1
  selector: {}
)");
  env.apply("policy", policy_yaml("default", "  dryRun: true\n"));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.status("default", {"undrainableNodes"}).find("shop/everything") != std::string::npos; }, 20s));
  std::string undrainable = env.status("default", {"undrainableNodes"});
  INFO(undrainable);
  CHECK(undrainable.find("pod shop/web-7d4b9c-x1a2b is covered by more than one PodDisruptionBudget (shop/everything, shop/web-pdb), "
                         "which the Eviction API refuses") != std::string::npos);
  // The API server's Eviction API says the same.
  env.dir.write("eviction.json",
                R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-7d4b9c-x1a2b","namespace":"shop"}})");
  std::string refused =
      env.kubectl("create --raw /api/v1/namespaces/shop/pods/web-7d4b9c-x1a2b/eviction -f " + env.dir.file("eviction.json"), false);
  CHECK(refused.find("more than one PodDisruptionBudget") != std::string::npos);
}

TEST_CASE("pods still Pending take the spot room they will need: nothing is drained into it until they are gone", "[e2e]") {
  // Two pods for a scheduler that does not run (as pods the scheduler has not tried yet: no
  // Unschedulable condition, so the unschedulable-pods gate does not see them): with them, the
  // spot nodes have no room left for any on-demand node's pods.
  Env env(R"(
---
apiVersion: v1
kind: Pod
metadata: {name: batch-a, namespace: shop}
spec:
  schedulerName: later-scheduler
  containers: [{name: c, image: x, resources: {requests: {cpu: 3800m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: batch-b, namespace: shop}
spec:
  schedulerName: later-scheduler
  containers: [{name: c, image: x, resources: {requests: {cpu: 1800m}}}]
)");
  env.apply("policy", policy_yaml("default", ""));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.condition("default", "Ready") == "True"; }, 20s));
  std::string undrainable = env.status("default", {"undrainableNodes"});
  INFO(undrainable);
  CHECK(env.status("default", {"drainableNodes"}) == "0");
  CHECK(undrainable.find(R"("node":"ondemand-1")") != std::string::npos);
  CHECK(undrainable.find("Insufficient cpu") != std::string::npos);
  replanned(env, *op, "default");
  CHECK(env.operator_requests("/eviction").empty());
  env.kubectl("delete pod batch-a batch-b -n shop --wait=false");
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "ondemand-1"; }, 30s));
}

TEST_CASE(
    "pods of a Job that counts evictions as failures block their node until its podFailurePolicy ignores disruptions; so does a pod whose controller is gone",
    "[e2e]") {
  // report-x7k2p runs on ondemand-1 for Job report (backoffLimit 0: one failed pod fails the
  // Job); cache-0 on ondemand-2 names a StatefulSet that is not there.
  Env env(read_all(kSource + "/tests/e2e/job-and-orphan.yaml"));
  env.apply("policy", policy_yaml("default", ""));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.status("default", {"undrainableNodes"}).find("report-x7k2p") != std::string::npos; }, 20s));
  std::string undrainable = env.status("default", {"undrainableNodes"});
  INFO(undrainable);
  CHECK(undrainable.find("shop/report-x7k2p: owned by Job report, whose podFailurePolicy does not ignore disruptions (DisruptionTarget): "
                         "an eviction would count against its backoffLimit (evictJobPods is false)") != std::string::npos);
  CHECK(undrainable.find("shop/cache-0: its controller StatefulSet cache no longer exists, so nothing would recreate it") !=
        std::string::npos);
  replanned(env, *op, "default");
  CHECK(env.operator_requests("/eviction").empty());
  // A Job that tolerates disruptions: its pod moves, and the node drains. (kubesim runs no Job
  // controller, so the drain waits out the replacement timeout for the Job pod's replacement.)
  env.kubectl(
      R"(patch job report -n shop --type merge -p '{"spec":{"podFailurePolicy":{"rules":[{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]}}}')");
  REQUIRE(eventually([&] { return env.draining("ondemand-1"); }, 20s));
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "ondemand-1"; }, 60s));
  CHECK(env.status("default", {"lastDrain", "result"}) == "Succeeded");
  CHECK(env.status("default", {"undrainableNodes"}).find("StatefulSet cache no longer exists") != std::string::npos);
}

TEST_CASE("a node that took a drain's replacements is held, so two on-demand nodes do not hand pods back and forth", "[e2e]") {
  // The cluster's scheduler prefers the emptiest node, and the pod tolerates the on-demand taint:
  // the replacement of the pod drained off od-a lands on od-b, not on the fuller spot node.
  // Draining od-b next would send it back to od-a (empty by then), and so on.
  EnvOptions options;
  options.demo = false;
  auto node = [](const std::string& name, bool on_demand) {
    return fmt::format(R"(---
apiVersion: v1
kind: Node
metadata:
  name: {0}
  labels: {{kubernetes.io/hostname: {0}, node-role.kubernetes.io/{1}: ""}}
spec:
  taints: {2}
status:
  capacity: {{cpu: "8", memory: 32Gi, pods: "110"}}
)",
                       name, on_demand ? "worker" : "spot-worker",
                       on_demand ? R"([{key: spotshift.io/on-demand, value: "true", effect: PreferNoSchedule}])" : "[]");
  };
  Env env(node("od-a", true) + node("od-b", true) + node("spot-1", false) + R"(---
apiVersion: v1
kind: Pod
metadata: {name: filler, namespace: shop}
spec:
  nodeName: spot-1
  containers: [{name: c, image: x, resources: {requests: {cpu: "6"}}}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: bouncer, namespace: shop, uid: rs-bouncer, labels: {app: bouncer}}
spec:
  replicas: 1
  selector: {matchLabels: {app: bouncer}}
  template:
    metadata: {labels: {app: bouncer}}
    spec:
      tolerations: [{key: spotshift.io/on-demand, operator: Exists}]
      containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: bouncer-1
  namespace: shop
  labels: {app: bouncer}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: bouncer, uid: rs-bouncer, controller: true}]
spec:
  nodeName: od-a
  tolerations: [{key: spotshift.io/on-demand, operator: Exists}]
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
)",
          options);
  env.apply("policy", policy_yaml("default", "", "1s"));
  auto op = env.start("operator");
  INFO(op->log());

  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "od-a"; }, 30s));
  CHECK(env.status("default", {"lastDrain", "result"}) == "Succeeded");
  REQUIRE(eventually([&] { return !env.events("NodeHeld").empty(); }, 20s));
  auto held = env.events("NodeHeld");
  REQUIRE(held.size() == 1);
  CHECK(held[0].starts_with("Node/od-b: Policy default leaves od-b alone until "));
  CHECK(held[0].find("it took a replacement pod meant for spot nodes in the drain of od-a (shop/bouncer-") != std::string::npos);
  CHECK(env.events("ReplacementNotOnSpot").size() == 1);
  std::string bouncer;
  for (const auto& [pod, where] : env.pods())
    if (pod.starts_with("shop/bouncer-")) bouncer = where;
  CHECK(bouncer == "od-b");

  // The plan says why od-b is left alone, and well past the drain delay nothing else moved.
  REQUIRE(eventually([&] { return env.status("default", {"undrainableNodes"}).find("held until") != std::string::npos; }, 10s));
  std::string undrainable = env.status("default", {"undrainableNodes"});
  CHECK(undrainable.find(R"("node":"od-b")") != std::string::npos);
  CHECK(undrainable.find("draining it now would likely move it to another on-demand node again") != std::string::npos);
  past_drain_delay(env, "default");
  replanned(env, *op, "default");
  CHECK(env.status("default", {"nodesDrainedTotal"}) == "1");
  CHECK(env.operator_requests("/eviction").size() == 1);
  CHECK_FALSE(env.any_draining());
}

namespace {
// Starts the operator with the policy "default" and returns once ondemand-1's drain has asked to
// evict its first pod (the budget-covered web-7d4b9c-x1a2b), whose eviction is refused for a long
// time: the drain sits retrying it, tainted, until podEvictionTimeout (20 s).
std::unique_ptr<Operator> start_with_first_eviction_refused(Env& env) {
  env.kubesim().faults().refuse_evictions("shop/web-7d4b9c-x1a2b", 1000);
  env.apply("policy", policy_yaml("default", ""));
  auto op = env.start("operator");
  INFO(op->log());
  REQUIRE(eventually([&] { return !env.operator_requests("/eviction").empty(); }, 30s, 10ms));
  return op;
}
}  // namespace

TEST_CASE("a pod annotated do-not-move in the middle of its node's drain is not evicted, and the drain stops", "[e2e]") {
  Env env;
  // The drain is still retrying the first pod when someone protects it.
  auto op = start_with_first_eviction_refused(env);
  INFO(op->log());
  env.kubectl("annotate pod web-7d4b9c-x1a2b -n shop spotshift.io/do-not-move=true");
  REQUIRE(eventually([&] { return !env.events("DrainAborted").empty(); }, 15s, 10ms));
  CHECK(env.events("DrainAborted")[0].find("pod shop/web-7d4b9c-x1a2b may no longer be moved: annotated spotshift.io/do-not-move=true") !=
        std::string::npos);
  for (const auto& r : env.operator_requests("/eviction")) CHECK(r.ends_with(" 429"));  // none went through
  CHECK(env.pods().at("shop/web-7d4b9c-x1a2b") == "ondemand-1");
  REQUIRE(eventually([&] { return !env.draining("ondemand-1"); }, 10s, 10ms));
  // The next plans say why ondemand-1 stays: the annotation, and the backoff.
  REQUIRE(eventually([&] { return env.status("default", {"undrainableNodes"}).find("ondemand-1") != std::string::npos; }, 10s));
}

TEST_CASE("a policy edited in the middle of a drain applies to the next eviction: suspend, dryRun, a narrower podSelector", "[e2e]") {
  const std::vector<std::pair<std::string, std::string>> edits = {
      {R"({"spec":{"suspend":true}})", "spec.suspend is now true: no more pods are evicted"},
      {R"({"spec":{"dryRun":true}})", "spec.dryRun is now true: no more pods are evicted"},
      {R"({"spec":{"podSelector":{"matchLabels":{"app":"api"}}}})", "not selected by the policy's podSelector (app=api)"},
  };
  for (const auto& [edit, why] : edits) {
    DYNAMIC_SECTION(edit) {
      Env env;
      // The drain is still retrying the first pod when the policy changes.
      auto op = start_with_first_eviction_refused(env);
      INFO(op->log());
      env.kubectl("patch rsp default --type merge -p '" + edit + "'");
      REQUIRE(eventually([&] { return !env.events("DrainAborted").empty(); }, 15s, 10ms));
      INFO(env.events("DrainAborted")[0]);
      CHECK(env.events("DrainAborted")[0].find("pod shop/web-7d4b9c-x1a2b may no longer be moved: " + why) != std::string::npos);
      for (const auto& r : env.operator_requests("/eviction")) CHECK(r.ends_with(" 429"));  // none went through
      CHECK(env.pods().at("shop/web-7d4b9c-x1a2b") == "ondemand-1");
      REQUIRE(eventually([&] { return !env.draining("ondemand-1"); }, 10s, 10ms));
    }
  }
}

TEST_CASE("policies sharing spot nodes drain one at a time", "[e2e]") {
  Env env;
  // Policy a's drain of ondemand-1 is held up at its first pod while policy b comes along.
  env.kubesim().faults().refuse_evictions("shop/web-7d4b9c-x1a2b", 1000);
  env.apply("a", policy_yaml("a", "  onDemandNodeSelector: {matchLabels: {kubernetes.io/hostname: ondemand-1}}\n"));
  auto op = env.start("operator");
  INFO(op->log());
  REQUIRE(eventually([&] { return !env.operator_requests("/eviction").empty(); }, 30s, 10ms));
  env.apply("b", policy_yaml("b", "  onDemandNodeSelector: {matchLabels: {kubernetes.io/hostname: ondemand-2}}\n"));
  REQUIRE(eventually([&] { return env.condition("b", "Blocked", "reason") == "SharedSpotNodes"; }, 20s));
  CHECK(env.condition("b", "Blocked", "message").find("policy a is draining ondemand-1 onto spot nodes this policy shares") !=
        std::string::npos);
  replanned(env, *op, "b");
  CHECK_FALSE(env.draining("ondemand-2"));
  for (const auto& r : env.operator_requests("/eviction")) CHECK(r.find("web-7d4b9c-x1a2b") != std::string::npos);
  // Once a's drain is through, b drains.
  env.kubesim().faults().clear();
  REQUIRE(eventually([&] { return env.status("a", {"lastDrain", "node"}) == "ondemand-1"; }, 30s));
  REQUIRE(eventually([&] { return env.status("b", {"lastDrain", "node"}) == "ondemand-2"; }, 30s));
  CHECK(env.status("b", {"lastDrain", "result"}) == "Succeeded");
}

TEST_CASE("when the spot nodes go away in the middle of a drain, the rest of the node is not evicted", "[e2e]") {
  Env env;
  env.apply("policy", policy_yaml("default", ""));
  auto op = env.start("operator");
  INFO(op->log());
  // ondemand-1 drains web-7d4b9c-x1a2b first (budget-covered), then api-7d4b9c-k8s2q. Once the
  // first eviction is in (its pod takes a moment to terminate), both spot nodes turn NotReady:
  // a spot interruption.
  REQUIRE(eventually(
      [&] {
        for (const auto& r : env.operator_requests("/eviction"))
          if (r.find("web-7d4b9c-x1a2b") != std::string::npos && r.ends_with(" 201")) return true;
        return false;
      },
      30s, 2ms));
  bool flipped = true;
  env.kubesim().run([&](kubesim::Cluster& c) {
    for (const char* node : {"spot-1", "spot-2"}) flipped = c.set_node_condition(node, "Ready", "False").has_value() && flipped;
  });
  REQUIRE(flipped);
  REQUIRE(eventually([&] { return !env.events("DrainAborted").empty(); }, 20s, 10ms));
  INFO(env.events("DrainAborted")[0]);
  CHECK(env.events("DrainAborted")[0].find("after 1 of 2 pods: the plan for the rest of the node no longer holds: no Ready, "
                                           "schedulable node matches the spotNodeSelector") != std::string::npos);
  CHECK(env.operator_requests("/eviction").size() == 1);  // api-7d4b9c-k8s2q was left alone
  CHECK(env.pods().at("shop/api-7d4b9c-k8s2q") == "ondemand-1");
  REQUIRE(eventually([&] { return !env.draining("ondemand-1"); }, 10s, 10ms));
}

TEST_CASE("deleting a policy stops its drain in progress: nothing more is evicted and the taint goes", "[e2e]") {
  Env env;
  auto op = start_with_first_eviction_refused(env);
  INFO(op->log());
  REQUIRE(eventually([&] { return env.draining("ondemand-1"); }, 10s, 10ms));
  auto t0 = std::chrono::steady_clock::now();
  env.kubectl("delete reschedulepolicy default");
  REQUIRE(eventually([&] { return !env.draining("ondemand-1"); }, 10s, 10ms));
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
  REQUIRE(eventually([&] { return op->log().find("drain finished") != std::string::npos; }, 10s));
  CHECK(op->log().find("the drain was stopped (ReschedulePolicy default was deleted)") != std::string::npos);
  for (const auto& r : env.operator_requests("/eviction")) CHECK(r.ends_with(" 429"));  // none went through
  CHECK_FALSE(env.any_draining());
  CHECK(op->alive());
  op->stop(SIGTERM);
  CHECK(op->exit_status() == 0);
}

TEST_CASE("an invalid policy is reported while a valid one keeps working; overlapping policies do not drain shared nodes", "[e2e]") {
  Env env;
  // The API server refuses what the CRD's schema and rules catch; a label key's syntax they do not.
  env.apply("bad", policy_yaml("bad", R"(  onDemandNodeSelector: {matchLabels: {kubernetes.io/hostname: ondemand-1}}
  podSelector: {matchLabels: {"app name": web}}
)"));
  env.apply("narrow", policy_yaml("narrow", R"(  onDemandNodeSelector: {matchLabels: {kubernetes.io/hostname: ondemand-2}}
)"));
  env.apply("default", policy_yaml("default", ""));
  // The first status write for the invalid policy fails: it is retried, not dropped.
  auto refused = kubesim::FaultRule::answer("update", "reschedulepolicies/status", 503, 1);
  refused.name = "bad";
  env.kubesim().faults().add(refused);
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.condition("bad", "Valid") == "False"; }, 20s));
  CHECK(op->log().find("reconcile failed; retrying") != std::string::npos);
  CHECK(env.condition("bad", "Valid", "message") ==
        "decoding ReschedulePolicy \"bad\": spec.podSelector.matchLabels.app name: key \"app name\": name part may contain only "
        "alphanumerics, '-', '_' and '.'");
  REQUIRE(eventually([&] { return !env.events("PolicyInvalid").empty(); }, 10s));
  CHECK(env.events("PolicyInvalid")[0].starts_with("ReschedulePolicy/bad: The policy is not applied until its spec is fixed"));

  // default drains ondemand-1; ondemand-2 is also selected by narrow, so neither drains it.
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "ondemand-1"; }, 30s));
  past_drain_delay(env, "default");
  replanned(env, *op, "default");
  CHECK(env.status("default", {"nodesDrainedTotal"}) == "1");
  CHECK(env.status("narrow", {"nodesDrainedTotal"}) == "0");
  CHECK(env.status("default", {"undrainableNodes"}).find("also selected as on-demand by policy narrow") != std::string::npos);
  CHECK(env.status("narrow", {"undrainableNodes"}).find("also selected as on-demand by policy default") != std::string::npos);
  CHECK_FALSE(env.draining("ondemand-2"));

  // Fixing the bad policy makes it valid.
  env.apply("bad", policy_yaml("bad", "  onDemandNodeSelector: {matchLabels: {kubernetes.io/hostname: ondemand-1}}\n"));
  REQUIRE(eventually([&] { return env.condition("bad", "Valid") == "True"; }, 20s));
}

TEST_CASE("a drain whose start cannot be saved in the policy's status does not start", "[e2e]") {
  Env env;
  env.apply("policy", policy_yaml("default", ""));
  // Every status write fails: the drain delay gate cannot be recorded before the taint.
  env.kubesim().faults().add(kubesim::FaultRule::answer("update", "reschedulepolicies/status", 503));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return op->log().find("not starting the drain") != std::string::npos; }, 20s));
  replanned(env, *op, "default");
  INFO(op->log());
  CHECK(env.operator_requests("/eviction").empty());
  CHECK(env.operator_requests("PATCH /api/v1/nodes/").empty());
  CHECK_FALSE(env.any_draining());
  // Once the status can be written, the drain goes ahead, its gate recorded first.
  env.kubesim().faults().clear();
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "ondemand-1"; }, 30s));
  CHECK(env.status("default", {"lastDrain", "result"}) == "Succeeded");
}

namespace {
// ondemand-1's web pod never finishes terminating: a drain of it hangs until maxGracefulTermination.
const std::string kStuckPolicy = R"(  maxGracefulTermination: 60s
)";
void make_stuck(Env& env) { env.make_pod_hang("shop", "web-7d4b9c-x1a2b"); }
// After a restart at `restarted_at`: the drain the status recorded is Aborted as interrupted, and
// the gate stays closed for nodeDrainDelay (30 s) from the restart: nothing else drains meanwhile.
void expect_interrupted_drain_keeps_gate(Env& env, const Operator& op, std::chrono::system_clock::time_point restarted_at) {
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "result"}) == "Aborted"; }, 20s));
  CHECK(env.status("default", {"lastDrain", "reason"}).find("interrupted") != std::string::npos);
  CHECK(env.status("default", {"currentDrain"}).empty());
  auto next = parse_time(env.status("default", {"nextDrainAfter"})).value();
  CHECK(next >= std::chrono::time_point_cast<std::chrono::seconds>(restarted_at) + 29s);
  replanned(env, op, "default");
  CHECK_FALSE(env.any_draining());
  CHECK(env.condition("default", "Blocked", "reason") == "DrainDelay");
}
}  // namespace

TEST_CASE("the operator killed mid-drain comes back, removes its taint and keeps the gate", "[e2e]") {
  Env env;
  make_stuck(env);
  env.apply("policy", policy_yaml("default", kStuckPolicy, "30s"));
  auto op = env.start("first");
  REQUIRE(eventually([&] { return env.draining("ondemand-1"); }, 20s));
  REQUIRE(eventually([&] { return !env.status("default", {"currentDrain", "node"}).empty(); }, 10s));
  REQUIRE(eventually([&] { return !env.operator_requests("/eviction").empty(); }, 20s, 10ms));
  op->stop(SIGKILL);
  CHECK(op->exit_status() == 128 + SIGKILL);
  CHECK(env.draining("ondemand-1"));  // left behind by the crash

  auto restarted_at = std::chrono::system_clock::now();
  auto again = env.start("second");
  REQUIRE(eventually([&] { return !env.draining("ondemand-1"); }, 20s));
  expect_interrupted_drain_keeps_gate(env, *again, restarted_at);
  CHECK(!env.events("DrainAborted").empty());
  again->stop(SIGTERM);
  CHECK(again->exit_status() == 0);
}

TEST_CASE("a drain whose end was never recorded counts as interrupted after a crash: the gate stays closed", "[e2e]") {
  Env env;
  // The drain is held at its first pod while status writes start failing; then it completes,
  // but its end cannot be recorded, and the operator is killed.
  env.kubesim().faults().refuse_evictions("shop/web-7d4b9c-x1a2b", 1000);
  env.apply("policy", policy_yaml("default", "", "30s"));
  auto op = env.start("first");
  INFO(op->log());
  REQUIRE(eventually([&] { return env.status("default", {"currentDrain", "node"}) == "ondemand-1"; }, 30s, 10ms));
  env.kubesim().faults().add(kubesim::FaultRule::answer("update", "reschedulepolicies/status", 503));
  env.kubesim().faults().refuse_evictions("shop/web-7d4b9c-x1a2b", 0);
  REQUIRE(eventually([&] { return op->log().find("drain finished") != std::string::npos; }, 30s, 10ms));
  REQUIRE(eventually([&] { return !env.draining("ondemand-1"); }, 10s, 10ms));
  op->stop(SIGKILL);
  CHECK(env.status("default", {"currentDrain", "node"}) == "ondemand-1");  // the record of its start
  env.kubesim().faults().clear();

  auto restarted_at = std::chrono::system_clock::now();
  auto again = env.start("second");
  INFO(again->log());
  // What the status says of the drain is its start: it is taken as interrupted.
  expect_interrupted_drain_keeps_gate(env, *again, restarted_at);
}

TEST_CASE("a leader failover in the middle of a drain does not drain twice", "[e2e]") {
  Env env;
  make_stuck(env);
  env.apply("policy", policy_yaml("default", kStuckPolicy, "30s"));
  const std::string flags =
      "--leader-elect --leader-elect-lease-duration 3s --leader-elect-renew-deadline 2s --leader-elect-retry-period 500ms";
  auto a = env.start("a", flags);
  REQUIRE(eventually([&] { return !env.lease_holder().empty(); }, 20s));
  auto b = env.start("b", flags);
  REQUIRE(eventually([&] { return env.draining("ondemand-1"); }, 20s));
  std::string first = env.lease_holder();
  // Kill whichever leads (the one that tainted the node).
  Operator* leader = a->log().find("tainted node") != std::string::npos ? a.get() : b.get();
  REQUIRE(leader->log().find("tainted node") != std::string::npos);
  leader->stop(SIGKILL);
  Operator* follower = leader == a.get() ? b.get() : a.get();
  REQUIRE(eventually([&] { return !env.lease_holder().empty() && env.lease_holder() != first; }, 20s));
  REQUIRE(eventually([&] { return !env.draining("ondemand-1"); }, 20s));
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "result"}) == "Aborted"; }, 20s));
  replanned(env, *follower, "default");
  // One drain was started, by the first leader; the second neither resumed it nor started another.
  auto started = env.events("DrainStarted");
  CHECK(std::count_if(started.begin(), started.end(), [](const std::string& e) { return e.starts_with("Node/"); }) == 1);
  std::multiset<std::string> evicted;
  for (const auto& r : env.operator_requests("/eviction")) evicted.insert(r.substr(0, r.rfind(' ')));
  for (const auto& e : evicted) CHECK(evicted.count(e) == 1);
  CHECK_FALSE(env.any_draining());
  CHECK(follower->log().find("removed the taint of an interrupted drain") != std::string::npos);
  // The lease is renewed through a client of its own, which no other request can hold back.
  CHECK(metric_sum(follower->metrics(), "spotshift_api_requests_total", {R"(client="leader-election")"}) >= 1);
  follower->stop(SIGTERM);
  CHECK(follower->exit_status() == 0);
}

namespace {

// Leader election that gives up within seconds: a 2 s renew deadline.
constexpr const char* kQuickLeases =
    "--leader-elect --leader-elect-lease-duration 3s --leader-elect-renew-deadline 2s --leader-elect-retry-period 500ms";

// Instance "a", leading, in a drain that never ends: every eviction is refused (429) and tried
// again each second.
auto leader_in_endless_drain(Env& env) {
  auto refused = kubesim::FaultRule::answer("create", "pods/eviction", 429);
  refused.retry_after_seconds = 1;
  env.kubesim().faults().add(refused);
  env.apply("policy", policy_yaml("default", "", "30s"));
  auto a = env.start("a", kQuickLeases);
  INFO(a->log());
  REQUIRE(eventually([&] { return !env.operator_requests("/eviction").empty(); }, 30s, 10ms));
  return a;
}

// From now on lease updates (only those of `user_agent`, when given) take 12 s to be answered.
void stall_lease_updates(Env& env, const std::string& user_agent = {}) {
  kubesim::FaultRule slow;
  slow.verb = "update";
  slow.resource = "leases";
  slow.user_agent = user_agent;
  slow.delay_ms = 12000;
  env.kubesim().faults().add(slow);
}

}  // namespace

TEST_CASE("a SIGTERM while the operator stops after losing its lease ends it with its own exit status, not the signal's", "[e2e]") {
  Env env;
  auto a = leader_in_endless_drain(env);
  INFO(a->log());
  // At the renew deadline it gives up leading and stops, with a lease update still in flight,
  // which its shutdown waits for (up to 5 s) before it exits.
  stall_lease_updates(env);
  REQUIRE(eventually([&] { return a->log().find("stopping: leadership lost") != std::string::npos; }, 20s, 5ms));
  // Past the manager's own stop, in that wait, the kubelet's SIGTERM comes (the pod is deleted).
  std::this_thread::sleep_for(600ms);
  REQUIRE(a->alive());
  a->stop(SIGTERM);
  // It goes on stopping and exits as it would have: 1, leadership lost. Not killed by the signal.
  CHECK(a->exit_status() == 1);
  CHECK(a->log().find("stopped exitCode=1") != std::string::npos);
  // Its drain and workers, cancelled as it gave up leading, stopped as asked: not a failure to log.
  CHECK(a->log().find("a background task failed") == std::string::npos);
}

TEST_CASE("a leader whose lease renewals stall stops evicting before another instance can take the lease", "[e2e]") {
  Env env;
  // The drain keeps sending evictions.
  auto a = leader_in_endless_drain(env);
  INFO(a->log());
  const std::string first = env.lease_holder();
  REQUIRE(!first.empty());
  auto b = env.start("b", kQuickLeases);
  // The leader's lease updates, not the other's.
  stall_lease_updates(env, first);
  auto evictions_by_first = [&] {
    size_t n = 0;
    for (const auto& r : env.kubesim().audit())
      if (r.resource == "pods/eviction" && r.user_agent.find(first) != std::string::npos) ++n;
    return n;
  };
  REQUIRE(eventually([&] { return !env.lease_holder().empty() && env.lease_holder() != first; }, 20s, 5ms));
  const size_t at_handover = evictions_by_first();
  // It stops (exit code 1) rather than wait to be told: past that, it can send nothing.
  REQUIRE(eventually([&] { return !a->alive(); }, 20s));
  // Nothing from the old leader once another instance holds the lease.
  CHECK(evictions_by_first() == at_handover);
  CHECK(a->log().find("lost the lease: could not renew it within the renew deadline") != std::string::npos);
}
