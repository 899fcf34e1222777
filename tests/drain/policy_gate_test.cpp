// ReschedulePolicy decoding and validation; the drain gates and the node backoff on a fake clock.

#include "core/clock.hpp"
#include "drain/gate.hpp"
#include "drain/policy.hpp"
#include "helpers.hpp"
#include "support/catch.hpp"

using namespace spotshift;
using namespace spotshift::drain;
using namespace spotshift::drain::testing;
using namespace std::chrono_literals;

TEST_CASE("an empty spec takes k8s-spot-rescheduler's defaults", "[policy]") {
  PolicySpec s = spec_from("{}").value();
  CHECK(s == default_policy_spec());
  CHECK(s.on_demand_selector.to_string() == "node-role.kubernetes.io/worker");
  CHECK(s.spot_selector.to_string() == "node-role.kubernetes.io/spot-worker");
  CHECK(s.housekeeping_interval == 10s);
  CHECK(s.node_drain_delay == 10min);
  CHECK(s.pod_eviction_timeout == 2min);
  CHECK(s.max_graceful_termination == 2min);
  CHECK(s.termination_headroom == 30s);
  CHECK(s.drained_node_taint_ttl == 0s);
  CHECK_FALSE(s.delete_non_replicated_pods);
  CHECK(s.empty_dir == Handling::kMove);
  CHECK(s.host_path == Handling::kBlock);
  CHECK(s.kube_system_without_pdb == Handling::kBlock);
  CHECK(s.unschedulable_pods_gate == GateScope::kAny);
  CHECK(s.drain_order == DrainOrder::kAuto);
  CHECK(s.search_iterations == 0);
  CHECK_FALSE(s.dry_run);
  CHECK_FALSE(s.suspend);
  CHECK(s.profile == sched::default_profile());
}

TEST_CASE("every spec field decodes", "[policy]") {
  PolicySpec s = spec_from(R"({
    "onDemandNodeSelector": {"matchLabels": {"karpenter.sh/capacity-type": "on-demand"}},
    "spotNodeSelector": {"matchExpressions": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]},
    "podSelector": {"matchLabels": {"movable": "yes"}},
    "namespaceSelector": {"matchLabels": {"team": "a"}},
    "housekeepingInterval": "30s", "nodeDrainDelay": "1m30s", "podEvictionTimeout": "45s", "maxGracefulTermination": "20s",
    "terminationHeadroom": "10s", "drainedNodeTaintTTL": "5m",
    "deleteNonReplicatedPods": true, "localStorage": {"emptyDir": "Block", "hostPath": "Move"},
    "kubeSystemPodsWithoutPDB": "Move", "unschedulablePodsGate": "SpotOnly", "dryRun": true, "suspend": true,
    "drainOrder": "ScarceResources", "searchIterations": 2000,
    "profile": {"filters": ["NodeResourcesFit"], "scores": [{"name": "FreeCPU", "weight": 5, "args": {"order": "emptiest"}}]}
  })")
                     .value();
  CHECK(s.on_demand_selector.to_string() == "karpenter.sh/capacity-type=on-demand");
  CHECK(s.spot_selector.to_string() == "karpenter.sh/capacity-type in (spot)");
  CHECK(s.pod_selector->to_string() == "movable=yes");
  CHECK(s.namespace_selector->to_string() == "team=a");
  CHECK(s.housekeeping_interval == 30s);
  CHECK(s.node_drain_delay == 90s);
  CHECK(s.pod_eviction_timeout == 45s);
  CHECK(s.max_graceful_termination == 20s);
  CHECK(s.termination_headroom == 10s);
  CHECK(s.drained_node_taint_ttl == 5min);
  CHECK(s.delete_non_replicated_pods);
  CHECK(s.empty_dir == Handling::kBlock);
  CHECK(s.host_path == Handling::kMove);
  CHECK(s.kube_system_without_pdb == Handling::kMove);
  CHECK(s.unschedulable_pods_gate == GateScope::kSpotOnly);
  CHECK(s.drain_order == DrainOrder::kScarceResources);
  CHECK(s.search_iterations == 2000);
  CHECK(s.dry_run);
  CHECK(s.suspend);
  CHECK(s.profile.filters == std::vector<std::string>{"NodeResourcesFit"});
  CHECK(s.profile.scores.at(0).weight == 5);
}

TEST_CASE("a bad spec gets an error naming the field", "[policy]") {
  auto error = [](const std::string& json) {
    auto r = spec_from(json);
    REQUIRE_FALSE(r);
    CHECK(r.error().terminal);
    return r.error().message;
  };
  CHECK(error(R"({"nodeDrainDelay":"ten minutes"})") ==
        "decoding ReschedulePolicy: spec.nodeDrainDelay: must be a duration such as 90s, 10m or 1h30m, got \"ten minutes\"");
  CHECK(error(R"({"housekeepingInterval":"100ms"})") ==
        "decoding ReschedulePolicy: spec.housekeepingInterval: must be at least 1s, got 100ms");
  // A grace period of 0 is a force deletion: refused, as the CRD's rule refuses it.
  CHECK(error(R"({"maxGracefulTermination":"0s"})") ==
        "decoding ReschedulePolicy: spec.maxGracefulTermination: must be at least 1s, got 0s");
  CHECK(error(R"({"maxGracefulTermination":"500ms"})") ==
        "decoding ReschedulePolicy: spec.maxGracefulTermination: must be at least 1s, got 500ms");
  CHECK(error(R"({"nodeDrainDelay":5})") == "decoding ReschedulePolicy: spec.nodeDrainDelay: expected a string, got a number");
  CHECK(error(R"({"localStorage":{"emptyDir":"Keep"}})") ==
        "decoding ReschedulePolicy: spec.localStorage.emptyDir: must be one of Move, Block, got \"Keep\"");
  CHECK(error(R"({"unschedulablePodsGate":"Some"})") ==
        "decoding ReschedulePolicy: spec.unschedulablePodsGate: must be one of Any, SpotOnly, Disabled, got \"Some\"");
  CHECK(error(R"({"drainOrder":"Cheapest"})") ==
        "decoding ReschedulePolicy: spec.drainOrder: must be one of Auto, RequestedCPU, ScarceResources, HighestSavingsPerEviction, got "
        "\"Cheapest\"");
  CHECK(error(R"({"pricing":{"label":"a","annotation":"b"}})") ==
        "decoding ReschedulePolicy: spec.pricing: must name exactly one of label, annotation and configMap");
  CHECK(error(R"({"maxDrainsPerHour":0})") == "decoding ReschedulePolicy: spec.maxDrainsPerHour: must be from 1 to 60, got 0");
  CHECK(error(R"({"maxDrainsPerHour":61})") == "decoding ReschedulePolicy: spec.maxDrainsPerHour: must be from 1 to 60, got 61");
  CHECK(spec_from(R"({"maxDrainsPerHour":4})")->max_drains_per_hour == 4);
  CHECK(error(R"({"minOnDemandNodes":-1})") == "decoding ReschedulePolicy: spec.minOnDemandNodes: must be from 0 to 100000, got -1");
  CHECK(spec_from(R"({"minOnDemandNodes":3})")->min_on_demand_nodes == 3);
  CHECK(default_policy_spec().min_on_demand_nodes == 0);
  CHECK_FALSE(default_policy_spec().wait_for_replacement_ready);
  CHECK(default_policy_spec().replacement_ready_timeout == std::chrono::minutes(5));
  auto ready = spec_from(R"({"waitForReplacementReady":true,"replacementReadyTimeout":"90s"})");
  CHECK(ready->wait_for_replacement_ready);
  CHECK(ready->replacement_ready_timeout == std::chrono::seconds(90));
  CHECK(default_policy_spec().steering == Steering::kOff);
  CHECK(spec_from(R"({"steering":"Preferred"})")->steering == Steering::kPreferred);
  CHECK(spec_from(R"({"steering":"Off"})")->steering == Steering::kOff);
  // YAML reads an unquoted Off as false: a string is wanted.
  CHECK(error(R"({"steering":false})") == "decoding ReschedulePolicy: spec.steering: expected a string, got a boolean");
  CHECK(error(R"({"steering":"Required"})") == "decoding ReschedulePolicy: spec.steering: must be one of Off, Preferred, got \"Required\"");
  CHECK(error(R"({"replacementReadyTimeout":"0s"})") ==
        "decoding ReschedulePolicy: spec.replacementReadyTimeout: must be at least 1s, got 0s");
  CHECK(error(R"({"pricing":{}})") == "decoding ReschedulePolicy: spec.pricing: must name exactly one of label, annotation and configMap");
  CHECK(error(R"({"pricing":{"label":"a","cents":true}})").find("spec.pricing: unknown field \"cents\"") != std::string::npos);
  CHECK(error(R"({"pricing":{"label":"a","configMap":{"namespace":"spotshift","name":"prices"}}})") ==
        "decoding ReschedulePolicy: spec.pricing: must name exactly one of label, annotation and configMap");
  CHECK(error(R"({"pricing":{"configMap":{"name":"prices"}}})") ==
        "decoding ReschedulePolicy: spec.pricing.configMap: must name the namespace and the name");
  auto by_type = spec_from(R"({"pricing":{"configMap":{"namespace":"spotshift","name":"prices"}}})");
  REQUIRE(by_type);
  REQUIRE(by_type->pricing);
  CHECK(by_type->pricing->from_config_map());
  CHECK(by_type->pricing->config_map_namespace == "spotshift");
  CHECK(by_type->pricing->config_map_name == "prices");
  CHECK(error(R"({"drainOrder":"HighestSavingsPerEviction"})") ==
        "decoding ReschedulePolicy: spec: drainOrder HighestSavingsPerEviction needs spec.pricing (where each node's price is)");
  CHECK(spec_from(R"({"drainOrder":"HighestSavingsPerEviction","pricing":{"annotation":"example.com/price"}})")->pricing->annotation ==
        "example.com/price");
  CHECK(error(R"({"searchIterations":-1})") ==
        "decoding ReschedulePolicy: spec.searchIterations: must be from 0 (no search) to 100000, got -1");
  CHECK(error(R"({"searchIterations":100001})") ==
        "decoding ReschedulePolicy: spec.searchIterations: must be from 0 (no search) to 100000, got 100001");
  CHECK(error(R"({"searchIterations":"many"})").find("spec.searchIterations: expected") != std::string::npos);
  CHECK(error(R"({"searchIterations":2.5})").find("spec.searchIterations: expected") != std::string::npos);
  CHECK(error(R"({"nodeDrainDelai":"1m"})").find("spec: unknown field \"nodeDrainDelai\" (valid: onDemandNodeSelector,") !=
        std::string::npos);
  CHECK(error(R"({"spotNodeSelector":{"matchExpressions":[{"key":"a","operator":"Near"}]}})").find("spec.spotNodeSelector") !=
        std::string::npos);
  CHECK(error(R"({"profile":{"filters":["NodeAfinity"]}})") ==
        "decoding ReschedulePolicy: spec.profile.filters[0]: unknown filter plugin \"NodeAfinity\" (valid: NodeUnschedulable, "
        "NodeConditions, NodeName, TaintToleration, NodeAffinity, VolumeZone, NodeResourcesFit, NodePorts, InterPodAffinity, "
        "PodTopologySpread)");
  CHECK(error(R"({"profile":{"scores":[{"name":"FreeCPU","weight":101}]}})") ==
        "decoding ReschedulePolicy: spec.profile.scores[0].weight: must be an integer from 0 to 100");
  CHECK(error(R"([1,2])") == "decoding ReschedulePolicy: spec: expected an object, got an array");
  // The CRD's rules, for policies the API server did not check.
  CHECK(error(R"({"onDemandNodeSelector":{"matchLabels":{"pool":"a"}},"spotNodeSelector":{"matchLabels":{"pool":"a"}}})") ==
        "decoding ReschedulePolicy: spec: onDemandNodeSelector and spotNodeSelector must differ (a node matching both is neither)");
  CHECK(error(R"({"podSelector":{"matchExpressions":[{"key":"app","operator":"In"}]}})") ==
        "decoding ReschedulePolicy: spec.podSelector.matchExpressions[0]: key \"app\": operator In needs at least one value");
  CHECK(error(R"({"profile":{"filters":["NodeName","NodeName"]}})").ends_with("filter plugin \"NodeName\" is listed twice"));
  CHECK(error(R"({"profile":{"scores":[{"name":"LeastAllocated","args":{"order":"fullest"}}]}})")
            .ends_with("score plugin LeastAllocated takes no args (got \"order\")"));
}

TEST_CASE("a policy object with a bad spec still decodes, carrying the error", "[policy]") {
  const std::string d = R"({"apiVersion":"spotshift.io/v1alpha1","kind":"ReschedulePolicy",
      "metadata":{"name":"pool-a","uid":"u1","generation":3},"spec":{"nodeDrainDelay":"soon"},
      "status":{"observedGeneration":2,"nextDrainAfter":"2026-11-22T10:00:00Z",
                "currentDrain":{"node":"od-1","startedAt":"2026-11-22T09:50:00Z"},"nodesDrainedTotal":4,
                "recentDrainStarts":["2026-11-22T09:20:00Z","2026-11-22T09:50:00Z"]}})";
  auto p = decode_policy(d).value();
  CHECK(p.name() == "pool-a");
  CHECK_FALSE(p.spec);
  REQUIRE(p.spec_error);
  CHECK(p.spec_error->message ==
        "decoding ReschedulePolicy \"pool-a\": spec.nodeDrainDelay: must be a duration such as 90s, 10m or 1h30m, got \"soon\"");
  CHECK(p.status.observed_generation == 2);
  CHECK(format_time(*p.status.next_drain_after) == "2026-11-22T10:00:00Z");
  REQUIRE(p.status.current_drain);
  CHECK(p.status.current_drain->node == "od-1");
  REQUIRE(p.status.recent_drain_starts.size() == 2);
  CHECK(format_time(p.status.recent_drain_starts[1]) == "2026-11-22T09:50:00Z");
  CHECK(p.status.nodes_drained_total == 4);

  CHECK_FALSE(decode_policy(std::string_view(R"({"metadata":{}})")));
}

TEST_CASE("the drain delay gate holds until nextDrainAfter, from the persisted status", "[gate]") {
  ManualClock clock;
  PolicySpec spec = default_policy_spec();
  PolicyStatusView status;
  CHECK(drain_delay_gate(status, clock.now()).open);  // never drained: open

  status.next_drain_after = next_drain_after(clock.now(), spec);
  CHECK(*status.next_drain_after == clock.now() + 10min);
  auto closed = drain_delay_gate(status, clock.now());
  CHECK_FALSE(closed.open);
  CHECK(closed.reason.find("nodeDrainDelay") != std::string::npos);
  CHECK(closed.reopens_at == status.next_drain_after);

  clock.advance(9min + 59s);
  CHECK_FALSE(drain_delay_gate(status, clock.now()).open);
  clock.advance(1s);
  CHECK(drain_delay_gate(status, clock.now()).open);
}

TEST_CASE("nextDrainAfter is rounded up to the second, so the gate the status keeps never reopens early", "[gate]") {
  PolicySpec spec = default_policy_spec();
  spec.node_drain_delay = 90s;
  const Time whole = parse_time("2026-11-22T10:00:00Z").value();
  CHECK(next_drain_after(whole, spec) == whole + 90s);
  CHECK(next_drain_after(whole + 1ms, spec) == whole + 91s);
  CHECK(next_drain_after(whole + 999ms, spec) == whole + 91s);
}

TEST_CASE("pricing from a ConfigMap: a node's price is its instance type's; other values and nodes are unpriced", "[policy]") {
  std::vector<std::string> bad;
  PriceTable table = price_table({{"m5.xlarge", "0.192"}, {"c5.2xlarge", "0.34"}, {"p3.2xlarge", "three"}, {"free", "-1"}}, &bad);
  CHECK(table == PriceTable{{"c5.2xlarge", 0.34}, {"m5.xlarge", 0.192}});
  CHECK(bad == std::vector<std::string>{"free", "p3.2xlarge"});
  Pricing p = spec_from(R"({"pricing":{"configMap":{"namespace":"spotshift","name":"prices"}}})")->pricing.value();
  auto m5 = on_demand("m5").label("node.kubernetes.io/instance-type", "m5.xlarge").build();
  auto old_label = on_demand("c5").label("beta.kubernetes.io/instance-type", "c5.2xlarge").build();
  auto unknown = on_demand("t3").label("node.kubernetes.io/instance-type", "t3.large").build();
  auto untyped = on_demand("bare").build();
  CHECK_FALSE(p.price(*m5));  // not read yet
  p.table = std::make_shared<const PriceTable>(table);
  CHECK(p.price(*m5) == 0.192);
  CHECK(p.price(*old_label) == 0.34);
  CHECK_FALSE(p.price(*unknown));
  CHECK_FALSE(p.price(*untyped));
  // The table read is not part of what the policy says.
  Pricing unread = p;
  unread.table.reset();
  CHECK(unread == p);
}

TEST_CASE("maxDrainsPerHour: no more drains start within any hour, counted from the starts the status keeps", "[gate]") {
  const Time t0 = parse_time("2026-11-22T10:00:00Z").value();
  // No limit: always open.
  CHECK(drains_per_hour_gate({t0, t0 + 1min, t0 + 2min}, std::nullopt, t0 + 3min).open);
  // Two an hour: two starts within the hour close it until the older is an hour old.
  std::vector<Time> starts = {t0 - 2h, t0, t0 + 20min};
  CHECK(drains_per_hour_gate(starts, 3, t0 + 30min).open);
  auto closed = drains_per_hour_gate(starts, 2, t0 + 30min);
  CHECK_FALSE(closed.open);
  CHECK(closed.reopens_at == t0 + 1h);
  CHECK(closed.reason == "2 drains started within the last hour (maxDrainsPerHour is 2); the next may start at 2026-11-22T11:00:00Z");
  CHECK_FALSE(drains_per_hour_gate(starts, 2, t0 + 59min + 59s).open);
  CHECK(drains_per_hour_gate(starts, 2, t0 + 1h).open);
  // One an hour: the newest start decides.
  CHECK(drains_per_hour_gate(starts, 1, t0 + 1h).reopens_at == t0 + 1h + 20min);
  // The starts kept: the last hour's, oldest first, once each, at most the newest 60.
  CHECK(starts_within_hour({t0 + 20min, t0 - 2h, t0, t0}, t0 + 30min) == std::vector<Time>{t0, t0 + 20min});
  std::vector<Time> many;
  for (int i = 0; i < 70; ++i) many.push_back(t0 + std::chrono::seconds(i));
  auto kept = starts_within_hour(many, t0 + 2min);
  REQUIRE(kept.size() == 60);
  CHECK(kept.front() == t0 + 10s);
}

TEST_CASE("the gates hold a drain in one order, Suspended first and SharedSpotNodes last", "[gate]") {
  PolicySpec spec = default_policy_spec();
  int asked_pods = 0, asked_shared = 0;
  GateDecision closed{false, "not yet", parse_time("2026-11-22T10:00:00Z").value()};
  auto input = [&](GateDecision delay, bool pods_open, bool shared) {
    return GateInput{spec,
                     delay,
                     [&, pods_open] {
                       ++asked_pods;
                       return pods_open ? GateDecision{} : GateDecision{false, "1 pod is Pending", std::nullopt};
                     },
                     [&, shared]() -> std::optional<std::string> {
                       ++asked_shared;
                       if (shared) return "policy b is draining od-9";
                       return std::nullopt;
                     },
                     "od-1",
                     {},
                     {}};
  };
  // Every gate open: a drain may start, and every gate was asked.
  CHECK_FALSE(evaluate_gates(input({}, true, false)));
  CHECK(asked_pods == 1);
  CHECK(asked_shared == 1);
  // Each closed alone.
  CHECK(evaluate_gates(input({}, true, true))->reason == "SharedSpotNodes");
  CHECK(evaluate_gates(input({}, true, true))->message == "policy b is draining od-9");
  CHECK(evaluate_gates(input({}, false, false))->reason == "UnschedulablePods");
  auto delay = evaluate_gates(input(closed, true, false));
  CHECK(delay->reason == "DrainDelay");
  CHECK(delay->message == "not yet");
  CHECK(delay->reopens_at == closed.reopens_at);
  // The first closed one wins, and the gates after it are not asked.
  asked_pods = asked_shared = 0;
  CHECK(evaluate_gates(input(closed, false, true))->reason == "DrainDelay");
  CHECK(asked_pods == 0);
  CHECK(asked_shared == 0);
  CHECK(evaluate_gates(input({}, false, true))->reason == "UnschedulablePods");
  CHECK(asked_shared == 0);
  // Dry run: after the gates a live drain would wait on, before another policy's drain.
  spec.dry_run = true;
  CHECK(evaluate_gates(input(closed, true, true))->reason == "DrainDelay");
  CHECK(evaluate_gates(input({}, false, true))->reason == "UnschedulablePods");
  // The drains-per-hour gate comes after the delay and before the pods.
  GateInput per_hour = input({}, false, true);
  per_hour.drains_per_hour = closed;
  CHECK(evaluate_gates(per_hour)->reason == "MaxDrainsPerHour");
  per_hour.drain_delay = closed;
  CHECK(evaluate_gates(per_hour)->reason == "DrainDelay");
  // Outside every disruption window: before the delay.
  per_hour.window = GateDecision{false, "outside every disruption window; the next opens at 2026-11-22T10:00:00Z", closed.reopens_at};
  CHECK(evaluate_gates(per_hour)->reason == "OutsideWindow");
  CHECK(evaluate_gates(per_hour)->reopens_at == closed.reopens_at);
  auto dry = evaluate_gates(input({}, true, true));
  CHECK(dry->reason == "DryRun");
  CHECK(dry->message == "dryRun is true: od-1 would be drained now");
  // Suspend outranks everything.
  spec.suspend = true;
  CHECK(evaluate_gates(input(closed, false, true))->reason == "Suspended");
  CHECK(evaluate_gates(per_hour)->reason == "Suspended");
}

TEST_CASE("disruptionWindows: drains start only inside a window, read in its time zone across daylight-saving changes", "[gate]") {
  auto spec = spec_from(R"({"disruptionWindows":[{"schedule":"0 1 * * *","duration":"2h","timeZone":"Europe/Berlin"},
                                                  {"schedule":"0 12 * * 6","duration":"30m"}]})");
  REQUIRE(spec);
  REQUIRE(spec->disruption_windows.size() == 2);
  CHECK(spec->disruption_windows[1].time_zone == "UTC");
  auto gate = [&](std::string_view now) { return disruption_window_gate(spec->disruption_windows, parse_time(now).value()); };
  // Winter: 01:00 CET is 00:00 UTC, open for two hours.
  CHECK(gate("2026-11-26T00:00:00Z").open);
  CHECK(gate("2026-11-26T01:59:59Z").open);
  auto closed = gate("2026-11-26T02:00:00Z");
  CHECK_FALSE(closed.open);
  CHECK(closed.reason == "outside every disruption window; the next opens at 2026-11-27T00:00:00Z");
  CHECK(closed.reopens_at == parse_time("2026-11-27T00:00:00Z").value());
  // The second window, Saturdays 12:00 to 12:30 UTC (28 November 2026 is one); after it, the
  // Berlin one opens next.
  CHECK(gate("2026-11-28T12:10:00Z").open);
  CHECK(gate("2026-11-28T12:30:00Z").reopens_at == parse_time("2026-11-29T00:00:00Z").value());
  // Summer: 01:00 CEST is 23:00 UTC the day before.
  CHECK(gate("2026-07-01T23:30:00Z").open);
  CHECK_FALSE(gate("2026-07-02T01:00:00Z").open);
  // The night clocks go forward (29 March 2026): 01:00 CET opens the window, and two hours of
  // elapsed time close it at 04:00 CEST.
  CHECK(gate("2026-03-29T00:00:00Z").open);
  CHECK(gate("2026-03-29T01:59:59Z").open);
  CHECK(gate("2026-03-29T02:00:00Z").reopens_at == parse_time("2026-03-29T23:00:00Z").value());
  // The night they go back (25 October 2026): 01:00 CEST is 23:00 UTC on the 24th.
  CHECK(gate("2026-10-24T23:00:00Z").open);
  CHECK_FALSE(gate("2026-10-25T01:00:00Z").open);
  CHECK(gate("2026-10-25T01:00:00Z").reopens_at == parse_time("2026-10-26T00:00:00Z").value());
  // No windows: always open.
  CHECK(disruption_window_gate({}, parse_time("2026-11-26T02:00:00Z").value()).open);
}

TEST_CASE("disruptionWindows: a bad schedule, duration or time zone is refused with the field named", "[policy]") {
  auto error = [](const std::string& windows) {
    auto r = spec_from(R"({"disruptionWindows":)" + windows + "}");
    return r ? std::string("(valid)") : r.error().message;
  };
  CHECK(error(R"([{"schedule":"61 * * * *","duration":"1h"}])") ==
        "decoding ReschedulePolicy: spec.disruptionWindows[0].schedule: minute field \"61\": 61 is out of range 0-59");
  CHECK(
      error(R"([{"schedule":"0 0 30 2 *","duration":"1h"}])") ==
      "decoding ReschedulePolicy: spec.disruptionWindows[0]: schedule \"0 0 30 2 *\" names no date that exists, so the window never opens");
  CHECK(error(R"([{"schedule":"@daily","duration":"30s"}])") ==
        "decoding ReschedulePolicy: spec.disruptionWindows[0].duration: must be at least 1m, got 30s");
  CHECK(error(R"([{"schedule":"@daily"}])") == "decoding ReschedulePolicy: spec.disruptionWindows[0]: duration is required");
  CHECK(error(R"([{"duration":"1h"}])") == "decoding ReschedulePolicy: spec.disruptionWindows[0]: schedule is required");
  CHECK(error(R"([{"schedule":"@daily","duration":"1h","timeZone":"Mars/Olympus_Mons"}])")
            .starts_with("decoding ReschedulePolicy: spec.disruptionWindows[0].timeZone: unknown time zone \"Mars/Olympus_Mons\""));
  CHECK(error(R"([{"schedule":"@daily","duration":"1h","tz":"UTC"}])") ==
        "decoding ReschedulePolicy: spec.disruptionWindows[0]: unknown field \"tz\" (valid: schedule, duration, timeZone)");
  CHECK(error(R"([])") == "(valid)");
  CHECK(default_policy_spec().disruption_windows.empty());
}

TEST_CASE("the unschedulable-pods gate, for any pod or only for pods that could run on spot", "[gate]") {
  SpotReach reach({spot("spot-1").build()});
  std::vector<PodPtr> pods = {replica("running").on("spot-1"), replica("pending-bound").phase("Pending").on("spot-1")};
  CHECK(unschedulable_pods_gate(pods, GateScope::kAny, reach).open);

  pods.push_back(replica("stuck").unschedulable().selector("karpenter.sh/capacity-type", "on-demand"));
  auto any = unschedulable_pods_gate(pods, GateScope::kAny, reach);
  CHECK_FALSE(any.open);
  CHECK(any.reason == "1 pod is Pending and unschedulable (first: default/stuck); moving pods now would compete with it");
  // It could never run on a spot node, so the spot-only scope ignores it.
  CHECK(unschedulable_pods_gate(pods, GateScope::kSpotOnly, reach).open);
  CHECK(unschedulable_pods_gate(pods, GateScope::kDisabled, reach).open);

  pods.push_back(replica("wants-spot").unschedulable());
  auto spot_only = unschedulable_pods_gate(pods, GateScope::kSpotOnly, reach);
  CHECK_FALSE(spot_only.open);
  CHECK(spot_only.reason.find("on spot nodes (first: default/wants-spot)") != std::string::npos);

  // A terminating pending pod does not count.
  std::vector<PodPtr> leaving = {replica("gone").unschedulable().terminating()};
  CHECK(unschedulable_pods_gate(leaving, GateScope::kAny, reach).open);
}

TEST_CASE("a node backs off exponentially after aborted drains, up to a cap", "[gate]") {
  ManualClock clock;
  NodeBackoff backoff(5min, 30min);
  CHECK(backoff.active(clock.now()).empty());
  CHECK(backoff.failed("od-1", clock.now()) == clock.now() + 5min);
  CHECK(backoff.active(clock.now()).count("od-1"));
  CHECK(backoff.active(clock.now()).at("od-1").find("after 1 aborted drain") != std::string::npos);
  clock.advance(5min);
  CHECK(backoff.active(clock.now()).empty());
  CHECK(backoff.failed("od-1", clock.now()) == clock.now() + 10min);
  CHECK(backoff.failed("od-1", clock.now()) == clock.now() + 20min);
  CHECK(backoff.failed("od-1", clock.now()) == clock.now() + 30min);  // capped
  CHECK(backoff.failed("od-1", clock.now()) == clock.now() + 30min);
  backoff.succeeded("od-1");
  CHECK_FALSE(backoff.until("od-1"));
  CHECK(backoff.failed("od-1", clock.now()) == clock.now() + 5min);
}

TEST_CASE("a node that took replacement pods is held, longer each time, through successful drains", "[gate]") {
  ManualClock clock;
  NodeBackoff backoff(5min, 30min);
  CHECK(backoff.held("od-2", clock.now(), "took 1 replacement pod of the drain of od-1") == clock.now() + 5min);
  auto active = backoff.active(clock.now());
  REQUIRE(active.count("od-2"));
  CHECK(active.at("od-2").starts_with("held until "));
  CHECK(active.at("od-2").ends_with(": took 1 replacement pod of the drain of od-1"));
  clock.advance(5min);
  CHECK(backoff.active(clock.now()).empty());
  // A successful drain of the node does not forget the hold: the next one is twice as long.
  backoff.succeeded("od-2");
  CHECK(backoff.held("od-2", clock.now(), "again") == clock.now() + 10min);
  clock.advance(10min);
  CHECK(backoff.held("od-2", clock.now(), "again") == clock.now() + 20min);
  // An aborted drain meanwhile does not shorten a hold, and keeps the hold's reason.
  CHECK(backoff.failed("od-2", clock.now()) == clock.now() + 20min);
  CHECK(backoff.active(clock.now()).at("od-2").ends_with(": again"));
  // After a quiet period as long as the cap, holds start over.
  clock.advance(20min + 31min);
  CHECK(backoff.held("od-2", clock.now(), "later") == clock.now() + 5min);
  // Aborted drains alone are still cleared by a success.
  backoff.failed("od-3", clock.now());
  backoff.succeeded("od-3");
  CHECK_FALSE(backoff.until("od-3"));
}
