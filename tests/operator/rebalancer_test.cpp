// The SpotRebalancer in process against kubesim over HTTP, as the operator wires it: informers
// for its caches, the real client, events and metrics. Reconciles are called one at a time, so
// each test sees what a reconcile does and what the drain task it starts does after it: the gate
// order, the status writes, and the task's lifecycle (started by a reconcile that returns at
// once, observed and stopped by later reconciles, its end enqueueing the policy).

#include "rebalancer.hpp"
#include "drain/evictor.hpp"
#include "resources.hpp"
#include "runtime/informer.hpp"
#include "runtime/spawn.hpp"
#include "simulator.hpp"
#include "support/asio_run.hpp"
#include "support/catch.hpp"
#include "support/sim_client.hpp"
#include "support/small_cluster.hpp"

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace spotshift;
using namespace spotshift::op;
using namespace std::chrono_literals;
using spotshift::testing::run_for;
using spotshift::testing::run_sync;

namespace {

const std::string kSource = SOURCE_ROOT;

// The ReschedulePolicy CRD, then `objects`.
std::string with_crd(const std::string& objects) {
  std::ifstream crd(kSource + "/crds/reschedulepolicies.spotshift.io.yaml");
  std::stringstream text;
  text << crd.rdbuf();
  return text.str() + "\n" + objects;
}

// od-1 runs web-a, web-b (ReplicaSet web, under web-pdb) and api-a (ReplicaSet api); od-2 runs
// db-a (ReplicaSet db, 2 CPUs: drained after od-1, least requested CPU first), so a node stays
// drainable after od-1; spot-1 and spot-2 are empty.
std::string scenario() {
  using namespace spotshift::testing;
  std::string s = with_crd(
      node_yaml("od-1", "node-role.kubernetes.io/worker") + node_yaml("od-2", "node-role.kubernetes.io/worker") +
      node_yaml("spot-1", "node-role.kubernetes.io/spot-worker") + node_yaml("spot-2", "node-role.kubernetes.io/spot-worker") +
      replicaset_yaml("web", 2) + replicaset_yaml("api", 1) + replicaset_yaml("db", 1, "2") + replica_pod_yaml("web-a", "web", "od-1") +
      replica_pod_yaml("web-b", "web", "od-1") + replica_pod_yaml("api-a", "api", "od-1") + replica_pod_yaml("db-a", "db", "od-2", "2"));
  s += R"(
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-pdb, namespace: default}
spec: {maxUnavailable: 2, selector: {matchLabels: {app: web}}}
)";
  return s;
}

struct Env {
  explicit Env(const std::string& spec_json = R"({"nodeDrainDelay":"1h","podEvictionTimeout":"20s","maxGracefulTermination":"2s"})",
               const std::string& cluster = scenario()) {
    kubesim::SimulatorOptions o;
    o.scenario_text = cluster;
    o.time_scale = 10;  // kubelet start 0.1 s, graceful deletion 0.2 s of real time
    sim = std::make_unique<kubesim::Simulator>(o);
    REQUIRE(sim->start());
    client = spotshift::testing::sim_client(ioc, *sim, "rebalancer-test").value();
    timers = std::make_unique<runtime::Timers>(ioc.get_executor(), SystemClock::instance());
    create_policy(spec_json);
    nodes = std::make_unique<runtime::Informer<model::Node>>("nodes", client, *timers, runtime::Informer<model::Node>::Options{});
    pods = std::make_unique<runtime::Informer<model::Pod>>("pods", client, *timers, runtime::Informer<model::Pod>::Options{});
    pdbs = std::make_unique<runtime::Informer<model::PodDisruptionBudget>>("pdbs", client, *timers,
                                                                           runtime::Informer<model::PodDisruptionBudget>::Options{});
    policies = std::make_unique<runtime::Informer<drain::ReschedulePolicy>>("policies", client, *timers,
                                                                            runtime::Informer<drain::ReschedulePolicy>::Options{});
    namespaces =
        std::make_unique<runtime::Informer<NamespaceInfo>>("namespaces", client, *timers, runtime::Informer<NamespaceInfo>::Options{});
    runtime::spawn(ioc.get_executor(), nodes->run(), "nodes");
    runtime::spawn(ioc.get_executor(), pods->run(), "pods");
    runtime::spawn(ioc.get_executor(), pdbs->run(), "pdbs");
    runtime::spawn(ioc.get_executor(), policies->run(), "policies");
    runtime::spawn(ioc.get_executor(), namespaces->run(), "namespaces");
    events = std::make_unique<runtime::EventRecorder>(client, *timers, runtime::EventRecorderOptions{});
    runtime::spawn(ioc.get_executor(), events->run(), "events");
    REQUIRE(until([&] { return nodes->synced() && pods->synced() && pdbs->synced() && policies->synced() && namespaces->synced(); }));
    REQUIRE(until([&] { return all_running(); }));
    RebalancerOptions ro;
    ro.poll_interval = 50ms;
    ro.replacement_timeout = 5s;
    ro.enqueue = [this](const std::string& policy) { enqueued.push_back(policy); };
    rebalancer = std::make_unique<SpotRebalancer>(
        client, *timers, RebalancerStores{nodes->store(), pods->store(), pdbs->store(), policies->store(), namespaces->store()}, *events,
        metrics, ro);
  }
  ~Env() {
    rebalancer->stop_all();
    until([&] { return rebalancer->tasks().size() == 0; });
    for (auto* stop : {+[](Env& e) { e.nodes->stop(); }, +[](Env& e) { e.pods->stop(); }, +[](Env& e) { e.pdbs->stop(); },
                       +[](Env& e) { e.policies->stop(); }, +[](Env& e) { e.namespaces->stop(); }, +[](Env& e) { e.events->stop(); }})
      stop(*this);
    run_for(ioc, 100ms);
  }

  // Runs the io_context (informers, the drain task, events) until pred holds, up to a bound.
  bool until(const std::function<bool()>& pred, Duration limit = 20s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (pred()) return true;
      run_for(ioc, 10ms);
    }
    return pred();
  }
  bool all_running() {
    bool all = pods->store().size() > 0;
    pods->store().for_each([&](const auto& p) { all = all && p->ready && !p->node_name.empty(); });
    // And the budgets' status up to date: a plan does not count on a budget's stale status.
    pdbs->store().for_each(
        [&](const auto& b) { all = all && b->status_current() && b->status.current_healthy == b->status.expected_pods; });
    return all;
  }

  runtime::Action reconcile() {
    auto r = run_sync(ioc, rebalancer->reconcile("pool"));
    INFO((r ? std::string() : r.error().to_string()));
    REQUIRE(r);
    return *r;
  }
  Result<runtime::Action> try_reconcile() { return run_sync(ioc, rebalancer->reconcile("pool")); }

  void create_policy(const std::string& spec_json) {
    auto r = run_sync(
        ioc, client->create(policy_resource(), "",
                            R"({"apiVersion":"spotshift.io/v1alpha1","kind":"ReschedulePolicy","metadata":{"name":"pool"},"spec":)" +
                                spec_json + "}"));
    INFO((r ? std::string() : r.error().to_string()));
    REQUIRE(r);
  }
  // A merge patch of the spec, seen by the policy cache before this returns.
  void patch_spec(const std::string& spec_json) {
    auto r = run_sync(ioc, client->patch(policy_resource(), "", "pool", kube::PatchType::kMerge, R"({"spec":)" + spec_json + "}"));
    REQUIRE(r);
    const std::string rv = model::object_resource_version(*r);
    REQUIRE(until([&] {
      auto now = policies->store().get("pool");
      return now && now->meta.resource_version == rv;
    }));
  }
  // The policy as the API server has it now.
  drain::ReschedulePolicy policy() { return run_sync(ioc, client->get<drain::ReschedulePolicy>("", "pool")).value(); }
  std::string condition(const std::string& type, bool message = false) {
    for (const auto& c : policy().status.conditions)
      if (c.type == type) return message ? c.message : c.status + "/" + c.reason;
    return "";
  }
  // Waits until the policy cache has the status the API server has (a reconcile reads it).
  void sync_policy_cache() {
    const std::string rv = policy().meta.resource_version;
    REQUIRE(until([&] {
      auto p = policies->store().get("pool");
      return p && p->meta.resource_version == rv;
    }));
  }
  bool tainted(const std::string& node) {
    for (const auto& t : run_sync(ioc, client->get<model::Node>("", node)).value().taints)
      if (t.key.view() == drain::kDrainingTaint) return true;
    return false;
  }
  size_t requests(std::string_view part) {
    size_t n = 0;
    for (const auto& r : sim->audit())
      if (r.user_agent == "rebalancer-test" && (r.method + " " + r.path).find(part) != std::string::npos) ++n;
    return n;
  }
  bool draining() { return rebalancer->tasks().running("pool"); }
  // The events of every namespace, each as its JSON text.
  std::vector<std::string> events_now() {
    std::vector<std::string> out;
    auto r = run_sync(ioc, client->list_each(kube::Resource::events(), "", kube::ListOptions{}, [&](model::JsonReader& item) {
      std::string_view text;
      if (item.read_raw(text)) out.emplace_back(text);
    }));
    REQUIRE(r);
    return out;
  }
  // Whether an event's text holds every one of `parts`, waiting a while for it to be written.
  bool event_with(const std::vector<std::string>& parts) {
    return until([&] {
      for (const auto& e : events_now())
        if (std::all_of(parts.begin(), parts.end(), [&](const std::string& p) { return e.find(p) != std::string::npos; })) return true;
      return false;
    });
  }

  boost::asio::io_context ioc;
  std::unique_ptr<kubesim::Simulator> sim;
  std::shared_ptr<kube::Client> client;
  std::unique_ptr<runtime::Timers> timers;
  std::unique_ptr<runtime::Informer<model::Node>> nodes;
  std::unique_ptr<runtime::Informer<model::Pod>> pods;
  std::unique_ptr<runtime::Informer<model::PodDisruptionBudget>> pdbs;
  std::unique_ptr<runtime::Informer<drain::ReschedulePolicy>> policies;
  std::unique_ptr<runtime::Informer<NamespaceInfo>> namespaces;
  std::unique_ptr<runtime::EventRecorder> events;
  runtime::Metrics metrics;
  std::unique_ptr<SpotRebalancer> rebalancer;
  std::vector<std::string> enqueued;
};

// An eviction the API keeps refusing with 429 (as a budget would), so a drain stays in progress.
kubesim::FaultRule refuse_evictions() { return kubesim::FaultRule::answer("create", "pods/eviction", 429, 1000); }

}  // namespace

TEST_CASE("a reconcile starts the drain as a task and returns; the task's end enqueues the policy, whose reconcile records it",
          "[rebalancer]") {
  Env env;
  runtime::Action started = env.reconcile();
  // The reconcile returned with the drain running in its task, its start already in the status.
  CHECK(env.draining());
  CHECK(started.kind == runtime::Action::Kind::kRequeueAfter);
  drain::ReschedulePolicy p = env.policy();
  REQUIRE(p.status.current_drain);
  CHECK(p.status.current_drain->node == "od-1");
  REQUIRE(p.status.next_drain_after);
  CHECK(env.condition("Draining") == "True/Draining");

  // Each eviction enqueues the policy; a reconcile while the task runs records progress only.
  REQUIRE(env.until([&] { return !env.enqueued.empty() || !env.draining(); }));
  if (env.draining()) {
    env.sync_policy_cache();
    runtime::Action observed = env.reconcile();
    CHECK(observed.kind == runtime::Action::Kind::kRequeueAfter);
  }
  REQUIRE(env.until([&] { return !env.draining(); }));
  // The task's end enqueued the policy; nothing is written until its reconcile.
  REQUIRE_FALSE(env.enqueued.empty());
  CHECK(env.enqueued.back() == "pool");
  CHECK_FALSE(env.tainted("od-1"));

  env.sync_policy_cache();
  env.reconcile();
  p = env.policy();
  CHECK_FALSE(p.status.current_drain);
  REQUIRE(p.status.last_drain);
  CHECK(p.status.last_drain->node == "od-1");
  CHECK(p.status.last_drain->result == "Succeeded");
  CHECK(p.status.nodes_drained_total == 1);
  CHECK(p.status.pods_evicted_total == 3);
  CHECK(env.condition("Draining") == "False/Idle");
  // od-2 is drainable next, held back by the drain delay the drain just closed.
  CHECK(env.condition("Blocked") == "True/DrainDelay");
  CHECK_FALSE(env.draining());
  CHECK(env.metrics.render().find(R"(spotshift_drains_total{policy="pool",result="succeeded"} 1)") != std::string::npos);
}

TEST_CASE("the gates hold a drain back in their order, and the status names the first closed one", "[rebalancer]") {
  Env env(R"({"nodeDrainDelay":"1h","podEvictionTimeout":"20s","maxGracefulTermination":"2s","suspend":true,"dryRun":true})");
  // A pod no node can run: Pending and unschedulable.
  REQUIRE(run_sync(env.ioc, env.client->create(kube::Resource::pods(), "default", R"({"apiVersion":"v1","kind":"Pod",
      "metadata":{"name":"huge","namespace":"default"},
      "spec":{"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"64"}}}]}})")));
  REQUIRE(env.until([&] {
    auto p = env.pods->store().get("default/huge");
    return p && p->unschedulable;
  }));
  // A drain delay still running, as a status from an earlier drain says.
  const std::string later = format_time(SystemClock::instance().now() + 1h);
  REQUIRE(run_sync(env.ioc, env.client->patch_status(policy_resource(), "", "pool", kube::PatchType::kMerge,
                                                     R"({"status":{"nextDrainAfter":")" + later + R"("}})")));
  env.sync_policy_cache();

  auto blocked = [&] {
    env.sync_policy_cache();
    env.reconcile();
    CHECK_FALSE(env.draining());
    return env.condition("Blocked");
  };
  CHECK(blocked() == "True/Suspended");
  env.patch_spec(R"({"suspend":false})");
  CHECK(blocked() == "True/DrainDelay");
  CHECK(env.condition("Blocked", true).find(later) != std::string::npos);
  REQUIRE(run_sync(
      env.ioc, env.client->patch_status(policy_resource(), "", "pool", kube::PatchType::kMerge, R"({"status":{"nextDrainAfter":null}})")));
  CHECK(blocked() == "True/UnschedulablePods");
  REQUIRE(run_sync(env.ioc, env.client->remove(kube::Resource::pods(), "default", "huge", {})));
  REQUIRE(env.until([&] { return !env.pods->store().get("default/huge"); }));
  CHECK(blocked() == "True/DryRun");
  CHECK(env.condition("Blocked", true) == "dryRun is true: od-1 would be drained now");
  // Nothing was touched while the gates were closed.
  CHECK(env.requests("/eviction") == 0);
  CHECK_FALSE(env.tainted("od-1"));
  env.patch_spec(R"({"dryRun":false})");
  env.reconcile();
  CHECK(env.draining());
  CHECK(env.condition("Blocked") == "False/NotBlocked");
}

TEST_CASE("a drain whose start cannot be saved in the status does not start", "[rebalancer]") {
  Env env;
  env.sim->faults().add(kubesim::FaultRule::answer("update", "reschedulepolicies/status", 500, 1000));
  auto r = env.try_reconcile();
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("recording the start of the drain of od-1") != std::string::npos);
  CHECK_FALSE(env.draining());
  CHECK_FALSE(env.tainted("od-1"));
  CHECK(env.requests("/eviction") == 0);
  CHECK_FALSE(env.policy().status.current_drain);

  // Once the status can be written, the retry starts it.
  env.sim->faults().clear();
  env.reconcile();
  CHECK(env.draining());
  CHECK(env.policy().status.current_drain);
}

TEST_CASE("a policy deleted mid-drain: its reconcile stops the task, which removes the taint; the next forgets the policy",
          "[rebalancer]") {
  Env env;
  env.sim->faults().add(refuse_evictions());
  env.reconcile();
  REQUIRE(env.draining());
  REQUIRE(env.until([&] { return env.requests("/eviction") > 0; }));
  CHECK(env.tainted("od-1"));
  // The task keeps running while nothing tells it to stop.
  env.reconcile();
  CHECK(env.draining());

  REQUIRE(run_sync(env.ioc, env.client->remove(policy_resource(), "", "pool", {})));
  REQUIRE(env.until([&] { return !env.policies->store().get("pool"); }));
  env.enqueued.clear();
  CHECK(env.reconcile().kind == runtime::Action::Kind::kDone);
  REQUIRE(env.until([&] { return !env.draining(); }, 5s));
  CHECK_FALSE(env.tainted("od-1"));
  CHECK(env.enqueued == std::vector<std::string>{"pool"});
  CHECK(env.metrics.render().find(R"(spotshift_drains_total{policy="pool",result="aborted"} 1)") != std::string::npos);
  CHECK(env.reconcile().kind == runtime::Action::Kind::kDone);
}

TEST_CASE("stop_all ends every drain task at its next step, with the taint removed (shutdown)", "[rebalancer]") {
  Env env;
  env.sim->faults().add(refuse_evictions());
  env.reconcile();
  REQUIRE(env.draining());
  REQUIRE(env.until([&] { return env.tainted("od-1"); }));
  env.rebalancer->stop_all();
  REQUIRE(env.until([&] { return !env.draining(); }, 5s));
  CHECK_FALSE(env.tainted("od-1"));
  env.sync_policy_cache();
  env.sim->faults().clear();
  env.reconcile();
  drain::ReschedulePolicy p = env.policy();
  REQUIRE(p.status.last_drain);
  CHECK(p.status.last_drain->result == "Aborted");
  CHECK(p.status.last_drain->reason.find("shutdown or lost leadership") != std::string::npos);
  CHECK_FALSE(env.draining());  // the drain delay holds the next one
  CHECK(env.condition("Blocked") == "True/DrainDelay");
}

TEST_CASE("a taint of the policy that no drain task holds is removed at the next reconcile", "[rebalancer]") {
  Env env(R"({"nodeDrainDelay":"1h","suspend":true})");
  drain::EvictorOptions o;
  o.policy = "pool";
  REQUIRE(run_sync(env.ioc, drain::set_taint(*env.client, *env.timers, o, "od-2", true)).value());
  REQUIRE(env.until([&] { return drain::has_draining_taint(*env.nodes->store().get("od-2"), "pool"); }));
  env.reconcile();
  CHECK_FALSE(env.tainted("od-2"));
}

TEST_CASE("a status write that conflicts is written again once the cache has the other write, without a read of the policy",
          "[rebalancer]") {
  Env env(R"({"nodeDrainDelay":"1h","suspend":true})");
  // A user's edit the cache has not seen when the reconcile writes: the write conflicts.
  env.sim->faults().add(kubesim::FaultRule::answer("update", "reschedulepolicies/status", 409, 1));
  REQUIRE(run_sync(env.ioc, env.client->patch(policy_resource(), "", "pool", kube::PatchType::kMerge,
                                              R"({"metadata":{"annotations":{"edited":"yes"}}})")));
  env.reconcile();
  // (The test's own reads go through the same client: count before them.)
  CHECK(env.requests("PUT /apis/spotshift.io/v1alpha1/reschedulepolicies/pool/status") == 2);
  CHECK(env.requests("GET /apis/spotshift.io/v1alpha1/reschedulepolicies/pool") == 0);
  CHECK(env.condition("Blocked") == "True/Suspended");
  const size_t reads = env.requests("GET /apis/spotshift.io/v1alpha1/reschedulepolicies/pool");
  // Writes one after another, before the cache has seen the first: each over the last one's
  // resourceVersion, with no conflict.
  env.patch_spec(R"({"suspend":false,"dryRun":true})");
  env.reconcile();
  env.patch_spec(R"({"dryRun":false})");
  env.sim->faults().add(refuse_evictions());
  env.reconcile();  // the drain's start, then its progress, written as they come
  INFO(env.condition("Blocked", true));
  CHECK(env.draining());
  CHECK(env.requests("GET /apis/spotshift.io/v1alpha1/reschedulepolicies/pool") == reads + 1);  // INFO's
  size_t conflicts = 0;
  for (const auto& r : env.sim->audit())
    if (r.user_agent == "rebalancer-test" && r.resource == "reschedulepolicies/status" && r.code == 409) ++conflicts;
  CHECK(conflicts == 1);  // the injected one
}

TEST_CASE(
    "from its first drain on, the operator plans on from its previous plan: a node drained next keeps the spot node it "
    "was planned onto while that node still has room",
    "[rebalancer]") {
  // od-1 (a 100m pod), od-2 (a 2-CPU pod), od-3 (a 5-CPU pod: no spot node is large enough,
  // so not every node drains and a plan compares the previous plan's nodes with a fresh pass);
  // spot-1 has 4 CPUs and spot-2 3. FreeCPU fullest first plans od-1's and od-2's pods onto
  // spot-2. While od-1 drains, spot-3 joins with 2 CPUs: a fresh plan would now put od-2's pod
  // there (the fullest node with room), but spot-2 still has room for it, and carrying on from
  // the plan the drains started from keeps it there.
  using namespace spotshift::testing;
  const std::string cluster = with_crd(
      node_yaml("od-1", "node-role.kubernetes.io/worker") + node_yaml("od-2", "node-role.kubernetes.io/worker") +
      node_yaml("od-3", "node-role.kubernetes.io/worker", false, "8") + node_yaml("spot-1", "node-role.kubernetes.io/spot-worker") +
      node_yaml("spot-2", "node-role.kubernetes.io/spot-worker", false, "3") + replicaset_yaml("w", 1, "100m") +
      replicaset_yaml("db", 1, "2") + replicaset_yaml("big", 1, "5") + replica_pod_yaml("w-a", "w", "od-1", "100m") +
      replica_pod_yaml("db-a", "db", "od-2", "2") + replica_pod_yaml("big-a", "big", "od-3", "5"));
  Env env(R"({"nodeDrainDelay":"0s","podEvictionTimeout":"20s","maxGracefulTermination":"2s"})", cluster);
  env.reconcile();
  REQUIRE(env.draining());
  REQUIRE(env.event_with({"Draining od-1", "the plan found room on spot-2"}));

  auto created = run_sync(env.ioc, env.client->create(kube::Resource::nodes(), "",
                                                      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"spot-3","labels":{)"
                                                      R"("kubernetes.io/hostname":"spot-3","node-role.kubernetes.io/spot-worker":""}},)"
                                                      R"("status":{"allocatable":{"cpu":"2","memory":"16Gi","pods":"110"}}})"));
  REQUIRE(created);
  REQUIRE(env.until([&] { return env.nodes->store().get("spot-3") != nullptr; }));
  REQUIRE(env.until([&] { return !env.draining(); }));
  REQUIRE(env.until([&] { return env.all_running(); }));
  // The drain delay (0s) ends at the next whole second.
  REQUIRE(env.until(
      [&] {
        env.sync_policy_cache();
        env.reconcile();
        return env.draining();
      },
      5s));
  CHECK(env.event_with({"Draining od-2", "the plan found room on spot-2"}));
  for (const auto& e : env.events_now())
    CHECK_FALSE((e.find("Draining od-2") != std::string::npos && e.find("spot-3") != std::string::npos));
}
