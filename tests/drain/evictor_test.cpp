// The evictor against kubesim over HTTP: the real client, the real Eviction API with budgets,
// and injected faults. Whatever happens, no draining taint is left behind.

#include "drain/evictor.hpp"
#include "drain/planner.hpp"
#include "kube/client.hpp"
#include "runtime/informer.hpp"
#include "runtime/spawn.hpp"
#include "simulator.hpp"
#include "support/asio_run.hpp"
#include "support/catch.hpp"
#include "support/sim_client.hpp"
#include "support/small_cluster.hpp"

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <thread>

using namespace spotshift;
using namespace spotshift::drain;
using namespace std::chrono_literals;
using spotshift::testing::run_sync;

namespace {

// od-1 (on-demand, PreferNoSchedule) runs web-a, web-b (ReplicaSet web, under web-pdb)
// and api-a (ReplicaSet api); od-2 is another on-demand node; spot-1 and spot-2 are empty.
std::string scenario(int web_min_available = 0, const std::string& web_a_annotations = "{}") {
  using namespace spotshift::testing;
  std::string s = node_yaml("od-1", "node-role.kubernetes.io/worker", true) + node_yaml("od-2", "node-role.kubernetes.io/worker", true) +
                  node_yaml("spot-1", "node-role.kubernetes.io/spot-worker") + node_yaml("spot-2", "node-role.kubernetes.io/spot-worker") +
                  replicaset_yaml("web", 2) + replicaset_yaml("api", 1) +
                  replica_pod_yaml("web-a", "web", "od-1", "500m", web_a_annotations) + replica_pod_yaml("web-b", "web", "od-1") +
                  replica_pod_yaml("api-a", "api", "od-1");
  s += fmt::format(R"(---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: web-pdb, namespace: default}}
spec: {{minAvailable: {}, selector: {{matchLabels: {{app: web}}}}}}
)",
                   web_min_available);
  return s;
}

struct Env {
  explicit Env(std::string scenario_text) {
    kubesim::SimulatorOptions o;
    o.scenario_text = std::move(scenario_text);
    o.time_scale = 10;  // kubelet start 0.1 s, graceful deletion 0.2 s of real time
    sim = std::make_unique<kubesim::Simulator>(o);
    REQUIRE(sim->start());
    client = spotshift::testing::sim_client(ioc, *sim, "evictor-test").value();
    timers = std::make_unique<runtime::Timers>(ioc.get_executor(), SystemClock::instance());
    options.policy = "pool";
    options.pod_eviction_timeout = 3s;
    options.max_graceful_termination = 2s;
    options.termination_headroom = 1s;
    options.poll_interval = 50ms;
    options.retry_base = 50ms;
    options.retry_cap = 200ms;
    options.replacement_timeout = 5s;
    wait_running();
    // The pod cache the evictor looks for replacements in, as the operator's: an informer.
    pod_informer = std::make_unique<runtime::Informer<model::Pod>>("pods", client, *timers, runtime::Informer<model::Pod>::Options{});
    runtime::spawn(ioc.get_executor(), pod_informer->run(), "pod informer");
    REQUIRE(run_sync(ioc, pod_informer->wait_synced(10s)));
  }
  ~Env() {
    pod_informer->stop();
    spotshift::testing::run_for(ioc, 50ms);
  }

  Evictor evictor(EvictorOptions o) { return Evictor(client, *timers, std::move(o), pod_informer->store()); }

  // Lists the cluster through the client and plans it as the operator would.
  Plan plan() {
    PlanInput in;
    auto nodes = run_sync(ioc, client->list<model::Node>("")).value();
    auto pods = run_sync(ioc, client->list<model::Pod>("")).value();
    auto pdbs = run_sync(ioc, client->list<model::PodDisruptionBudget>("")).value();
    for (auto& n : nodes.items) in.nodes.push_back(std::make_shared<const model::Node>(std::move(n)));
    for (auto& p : pods.items) in.pods.push_back(std::make_shared<const model::Pod>(std::move(p)));
    for (auto& p : pdbs.items) in.pdbs.push_back(std::make_shared<const model::PodDisruptionBudget>(std::move(p)));
    return make_plan(in, default_policy_spec());
  }

  NodePlan node_plan(const std::string& node = "od-1") {
    Plan p = plan();
    const NodePlan* n = p.find(node);
    if (!n) {
      std::string why;
      for (const auto& u : p.undrainable)
        for (const auto& r : u.reasons) why += u.node + ": " + r + "\n";
      FAIL("node " << node << " is not drainable:\n" << why);
    }
    return *n;
  }

  // Waits until every pod is Running and Ready and the budgets are up to date.
  void wait_running() {
    for (int i = 0; i < 200; ++i) {
      auto pods = run_sync(ioc, client->list<model::Pod>("")).value();
      bool all = !pods.items.empty();
      for (const auto& p : pods.items) all = all && p.ready && !p.node_name.empty();
      auto pdbs = run_sync(ioc, client->list<model::PodDisruptionBudget>("")).value();
      for (const auto& b : pdbs.items) all = all && b.status_current() && b.status.current_healthy == b.status.expected_pods;
      if (all) return;
      std::this_thread::sleep_for(20ms);
    }
    FAIL("pods did not become Running");
  }

  DrainReport drain(NodePlan plan, DrainObserver* observer = nullptr, Evictor::Recheck recheck = {}) {
    Evictor e = evictor(options);
    if (!recheck) recheck = [plan]() -> Result<NodePlan> { return plan; };
    return run_sync(ioc, e.drain(
                             plan, recheck, [](std::string_view n) { return n.starts_with("spot-"); }, observer));
  }

  std::vector<model::Taint> taints(const std::string& node) { return run_sync(ioc, client->get<model::Node>("", node)).value().taints; }
  bool has_our_taint(const std::string& node) {
    for (const auto& t : taints(node))
      if (t.key.view() == kDrainingTaint) return true;
    return false;
  }
  // Audit lines "METHOD path" matching a filter, in order.
  std::vector<std::string> requests(std::string_view part) {
    std::vector<std::string> out;
    for (const auto& r : sim->audit())
      if (r.user_agent == "evictor-test" && (r.method + " " + r.path).find(part) != std::string::npos)
        out.push_back(fmt::format("{} {} {}", r.method, r.path, r.code));
    return out;
  }
  // Waits until the pod of this name (default namespace) is gone from the API.
  bool eventually_gone(const std::string& name) {
    for (int i = 0; i < 200; ++i) {
      auto r = run_sync(ioc, client->get<model::Pod>("default", name));
      if (!r && r.error().is_not_found()) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  std::map<std::string, std::string> pods_by_node() {
    std::map<std::string, std::string> out;
    for (const auto& p : run_sync(ioc, client->list<model::Pod>("")).value().items) out[p.name()] = std::string(p.node_name.view());
    return out;
  }

  boost::asio::io_context ioc;
  std::unique_ptr<kubesim::Simulator> sim;
  std::shared_ptr<kube::Client> client;
  std::unique_ptr<runtime::Timers> timers;
  EvictorOptions options;
  std::unique_ptr<runtime::Informer<model::Pod>> pod_informer;
};

struct Recorder : DrainObserver {
  std::vector<std::string> evicted, refusals, replacements;
  std::function<void()> after_first_eviction;
  std::function<void(const std::string&)> on_evicted;
  void pod_evicted(const NodePlan&, const PodMove& m, int n) override {
    evicted.push_back(m.pod->name());
    if (on_evicted) on_evicted(m.pod->name());
    if (n == 1 && after_first_eviction) after_first_eviction();
  }
  void eviction_refused(const PodMove& m, const Error& e) override { refusals.push_back(fmt::format("{} {}", m.pod->name(), e.code)); }
  void replacement_not_on_spot(const PodMove&, const std::string& msg) override { replacements.push_back(msg); }
  void pod_already_gone(const PodMove& m) override { gone.push_back(m.pod->name()); }
  std::vector<std::string> gone;
};

}  // namespace

TEST_CASE("a drain evicts one pod at a time, budget-covered first, and leaves the node untainted", "[evictor]") {
  Env env(scenario());
  NodePlan plan = env.node_plan();
  REQUIRE(plan.moves.size() == 3);
  CHECK(plan.moves[0].pod->name().starts_with("web-"));  // budget-covered pods first
  CHECK(plan.moves[2].pod->name() == "api-a");

  Recorder rec;
  DrainReport r = env.drain(plan, &rec);
  INFO(r.reason);
  CHECK(r.outcome == DrainOutcome::kSucceeded);
  CHECK(r.evicted.size() == 3);
  CHECK(r.remaining == 0);
  CHECK(r.planned == 3);
  CHECK(r.replacements_not_on_spot.empty());
  CHECK(r.taint_removed);
  CHECK_FALSE(env.has_our_taint("od-1"));
  // Tainted first, untainted last; evictions in plan order, each after the previous pod was gone.
  auto node_patches = env.requests("PATCH /api/v1/nodes/od-1");
  CHECK(node_patches.size() == 2);
  auto evictions = env.requests("/eviction");
  REQUIRE(evictions.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(evictions[i].find(plan.moves[i].pod->name()) != std::string::npos);
  std::vector<std::string> order;
  for (const auto& rq : env.requests("/pods/")) order.push_back(rq);
  // Between two evictions there is a GET of the first pod answering 404.
  auto pos = [&](const std::string& needle) {
    return std::find_if(order.begin(), order.end(), [&](const std::string& s) { return s.find(needle) != std::string::npos; }) -
           order.begin();
  };
  auto first = plan.moves[0].pod->name(), second = plan.moves[1].pod->name();
  CHECK(pos("GET /api/v1/namespaces/default/pods/" + first + " 404") < pos("POST /api/v1/namespaces/default/pods/" + second + "/eviction"));
  // Everything now runs on spot nodes: each replacement on the spot node the plan named, or on
  // another one (the scheduler's scores decide).
  for (const auto& [pod, node] : env.pods_by_node()) CHECK(node.starts_with("spot-"));
  CHECK(r.replacements["planned"] + r.replacements["other_spot"] == 3);
  CHECK(r.replacements.size() <= 2);
  std::map<std::string, int> expected;  // from where the replacements are, against the plan's targets
  std::multiset<std::string> targets;
  for (const auto& m : plan.moves) targets.insert(m.target);
  for (const auto& [pod, node] : env.pods_by_node()) {
    auto t = targets.find(node);
    ++expected[t != targets.end() ? "planned" : "other_spot"];
    if (t != targets.end()) targets.erase(t);
  }
  std::erase_if(r.replacements, [](const auto& kv) { return kv.second == 0; });
  CHECK(r.replacements == expected);
}

TEST_CASE("429s with Retry-After are retried after the time asked", "[evictor]") {
  Env env(scenario());
  auto f = kubesim::FaultRule::answer("create", "pods/eviction", 429, 2);
  f.retry_after_seconds = 1;
  env.sim->faults().add(f);
  Recorder rec;
  auto start = std::chrono::steady_clock::now();
  DrainReport r = env.drain(env.node_plan(), &rec);
  CHECK(r.outcome == DrainOutcome::kSucceeded);
  CHECK(std::chrono::steady_clock::now() - start >= 2s);
  CHECK(rec.refusals.size() == 2);
  CHECK(env.requests("/eviction").size() == 5);
  CHECK_FALSE(env.has_our_taint("od-1"));
}

TEST_CASE("429s without Retry-After are retried with backoff", "[evictor]") {
  Env env(scenario());
  auto f = kubesim::FaultRule::answer("create", "pods/eviction", 429, 3);
  f.name = "api-a";
  env.sim->faults().add(f);
  Recorder rec;
  DrainReport r = env.drain(env.node_plan(), &rec);
  CHECK(r.outcome == DrainOutcome::kSucceeded);
  CHECK(std::count(rec.refusals.begin(), rec.refusals.end(), "api-a 429") == 3);
  CHECK_FALSE(env.has_our_taint("od-1"));
}

TEST_CASE("refusals past podEvictionTimeout abort the drain: nothing more is evicted and the taint goes", "[evictor]") {
  Env env(scenario());
  env.options.pod_eviction_timeout = 1s;
  auto f = kubesim::FaultRule::answer("create", "pods/eviction", 429);
  f.name = "api-a";
  env.sim->faults().add(f);
  DrainReport r = env.drain(env.node_plan());
  CHECK(r.outcome == DrainOutcome::kAborted);
  CHECK(r.reason.find("pod default/api-a could not be evicted within podEvictionTimeout (1s)") != std::string::npos);
  CHECK(r.evicted.size() == 2);  // the two web pods before it
  CHECK(r.remaining == 1);
  CHECK(r.planned == 3);
  CHECK(r.taint_removed);
  CHECK_FALSE(env.has_our_taint("od-1"));
  CHECK(env.pods_by_node().at("api-a") == "od-1");
}

TEST_CASE("a budget refusal on the first pod stops the drain before unprotected pods are touched", "[evictor]") {
  Env env(scenario());
  env.options.pod_eviction_timeout = 500ms;
  NodePlan plan = env.node_plan();
  // The budget tightens after the plan was made: no disruption is allowed any more.
  run_sync(env.ioc, env.client->patch(kube::Resource::pod_disruption_budgets(), "default", "web-pdb", kube::PatchType::kMerge,
                                      R"({"spec":{"minAvailable":2}})"))
      .value();
  env.wait_running();
  DrainReport r = env.drain(plan);
  CHECK(r.outcome == DrainOutcome::kAborted);
  CHECK(r.evicted.empty());
  CHECK(r.reason.find("pod default/web-a could not be evicted within podEvictionTimeout") != std::string::npos);
  CHECK(r.reason.find("disruption budget") != std::string::npos);
  CHECK(env.requests("api-a/eviction").empty());
  CHECK_FALSE(env.has_our_taint("od-1"));
}

TEST_CASE("5xx answers are retried, and a refusal for good aborts at once", "[evictor]") {
  SECTION("two 500s then success") {
    Env env(scenario());
    env.sim->faults().add(kubesim::FaultRule::answer("create", "pods/eviction", 500, 2));
    DrainReport r = env.drain(env.node_plan());
    CHECK(r.outcome == DrainOutcome::kSucceeded);
    CHECK(r.evicted.size() == 3);
    CHECK_FALSE(env.has_our_taint("od-1"));
  }
  SECTION("a 403 aborts without retrying") {
    Env env(scenario());
    env.sim->faults().add(kubesim::FaultRule::answer("create", "pods/eviction", 403, 1));
    DrainReport r = env.drain(env.node_plan());
    CHECK(r.outcome == DrainOutcome::kAborted);
    CHECK(r.evicted.empty());
    CHECK(r.reason.find("the Eviction API refused pod") != std::string::npos);
    CHECK(env.requests("/eviction").size() == 1);
    CHECK_FALSE(env.has_our_taint("od-1"));
  }
}

TEST_CASE("a pod that never terminates aborts the drain and nothing more is evicted", "[evictor]") {
  Env env(scenario(0, R"({"kubesim.spotshift.io/never-terminate": "true"})"));
  env.options.max_graceful_termination = 1s;
  NodePlan plan = env.node_plan();
  // web-a first.
  std::stable_partition(plan.moves.begin(), plan.moves.end(), [](const PodMove& m) { return m.pod->name() == "web-a"; });
  DrainReport r = env.drain(plan);
  CHECK(r.outcome == DrainOutcome::kAborted);
  CHECK(r.reason == "pod default/web-a did not terminate within its grace period (1s) and terminationHeadroom (1s)");
  CHECK(r.evicted == std::vector<std::string>{"default/web-a"});
  CHECK(env.requests("/eviction").size() == 1);
  CHECK_FALSE(env.has_our_taint("od-1"));
}

TEST_CASE("a grace period is never 0: an eviction asks for at least 1 s, never a force deletion", "[evictor]") {
  // A policy written before the CRD refused maxGracefulTermination: 0s.
  Env env(scenario(0, R"({"kubesim.spotshift.io/never-terminate": "true"})"));
  env.options.max_graceful_termination = 0s;
  env.options.termination_headroom = 200ms;
  NodePlan plan = env.node_plan();
  std::stable_partition(plan.moves.begin(), plan.moves.end(), [](const PodMove& m) { return m.pod->name() == "web-a"; });
  DrainReport r = env.drain(plan);
  // A force deletion would have removed web-a at once; a grace period of 1 s leaves it
  // terminating (it never finishes here), so the drain stops at it.
  CHECK(r.outcome == DrainOutcome::kAborted);
  CHECK(r.evicted == std::vector<std::string>{"default/web-a"});
  auto pod = run_sync(env.ioc, env.client->get<model::Pod>("default", "web-a"));
  REQUIRE(pod);
  REQUIRE(pod->deletion_grace_period_seconds);
  CHECK(*pod->deletion_grace_period_seconds == 1);
  CHECK_FALSE(env.has_our_taint("od-1"));
}

TEST_CASE("an evicted pod gets terminationHeadroom beyond its grace period to be gone", "[evictor]") {
  for (bool headroom : {false, true}) {
    DYNAMIC_SECTION("headroom " << headroom) {
      Env env(scenario());
      // Every pod takes its whole grace period (1 s of simulated time), then 20 s more (2 s of
      // real time at kubesim's time scale) until its object is gone: the kill, the kubelet.
      env.sim->run([](kubesim::Cluster& c) {
        c.options().termination_cap = 1h;
        c.options().kill_latency = 20s;
      });
      env.options.max_graceful_termination = 1s;
      env.options.termination_headroom = headroom ? 5s : 0s;
      NodePlan plan = env.node_plan();
      plan.moves.resize(1);
      DrainReport r = env.drain(plan);
      INFO(r.reason);
      if (headroom) {
        CHECK(r.outcome == DrainOutcome::kSucceeded);
      } else {
        CHECK(r.outcome == DrainOutcome::kAborted);
        CHECK(r.reason.find("did not terminate within its grace period (1s) and terminationHeadroom (0s)") != std::string::npos);
      }
      CHECK_FALSE(env.has_our_taint("od-1"));
    }
  }
}

TEST_CASE("a pod already gone when its eviction is sent is reported as gone, not evicted", "[evictor]") {
  Env env(scenario());
  NodePlan plan = env.node_plan();
  std::stable_partition(plan.moves.begin(), plan.moves.end(), [](const PodMove& m) { return m.pod->name() == "api-a"; });
  // api-a is deleted (and replaced) after the plan, before the drain reaches it.
  run_sync(env.ioc, env.client->remove(kube::Resource::pods(), "default", "api-a", kube::DeleteOptions{})).value();
  REQUIRE(env.eventually_gone("api-a"));
  Recorder rec;
  DrainReport r = env.drain(plan, &rec);
  INFO(r.reason);
  CHECK(r.outcome == DrainOutcome::kSucceeded);
  CHECK(r.already_gone == std::vector<std::string>{"default/api-a"});
  CHECK(rec.gone == std::vector<std::string>{"api-a"});
  CHECK(std::find(rec.evicted.begin(), rec.evicted.end(), "api-a") == rec.evicted.end());
  CHECK(r.evicted.size() == 2);
  CHECK(r.remaining == 0);
  CHECK(r.planned == 3);  // the plan named it: gone on its own, not evicted
}

TEST_CASE("the taint stays until every replacement is bound, so none lands back on the emptied node", "[evictor]") {
  // A StatefulSet's replacement is created only once its predecessor is gone: the last pod of a
  // drain, with the scheduler slow, is still Pending when the evictions end.
  Env env(scenario() + R"(---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default, uid: sts-db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: x, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: db-0
  namespace: default
  labels: {app: db}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: sts-db, controller: true}]
spec:
  nodeName: od-1
  hostname: db-0
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: x, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
)");
  NodePlan plan = env.node_plan();
  REQUIRE(plan.moves.size() == 4);
  std::stable_partition(plan.moves.begin(), plan.moves.end(), [](const PodMove& m) { return m.pod->name() != "db-0"; });
  REQUIRE(plan.moves.back().pod->name() == "db-0");
  // The scheduler stops when db-0 is evicted (the replacements before it are bound by then:
  // each held the next eviction until it was).
  Recorder rec;
  rec.on_evicted = [&](const std::string& pod) {
    if (pod == "db-0") env.sim->run([](kubesim::Cluster& c) { c.options().scheduler = false; });
  };
  // Watches the cluster while the drain runs: a Pending replacement beside an untainted od-1 is
  // the moment one could land back on it. Once db-0's replacement has waited Pending on a
  // tainted node for a while, the scheduler comes back.
  std::atomic<bool> done{false}, exposed{false}, resumed{false};
  std::thread watcher([&] {
    auto pending_since = std::chrono::steady_clock::time_point::max();
    while (!done) {
      bool tainted = false, pending = false;
      env.sim->run([&](kubesim::Cluster& c) {
        for (const auto& [k, o] : c.store().objects(*c.registry().pods()))
          if (kubesim::json_string(o->doc, {"spec", "nodeName"}).empty() && !kubesim::json_path(o->doc, {"metadata", "deletionTimestamp"}))
            pending = true;
        if (auto n = c.store().get(*c.registry().nodes(), "od-1"))
          if (const auto* t = kubesim::json_path(n->doc, {"spec", "taints"}))
            for (const auto& x : t->GetArray()) tainted = tainted || kubesim::json_string(x, {"key"}) == kDrainingTaint;
      });
      if (pending && !tainted) exposed = true;
      bool db_pending = false;
      env.sim->run([&](kubesim::Cluster& c) {
        if (auto p = c.store().get(*c.registry().pods(), "default/db-0"))
          db_pending = kubesim::json_string(p->doc, {"spec", "nodeName"}).empty();
      });
      if (db_pending && pending_since == std::chrono::steady_clock::time_point::max()) pending_since = std::chrono::steady_clock::now();
      if (!resumed && std::chrono::steady_clock::now() - pending_since > 500ms) {
        resumed = true;
        env.sim->run([](kubesim::Cluster& c) { c.options().scheduler = true; });
      }
      std::this_thread::sleep_for(5ms);
    }
  });
  DrainReport r = env.drain(plan, &rec);
  done = true;
  watcher.join();
  INFO(r.reason);
  CHECK(r.outcome == DrainOutcome::kSucceeded);
  CHECK(resumed);
  CHECK_FALSE(exposed);
  CHECK(r.replacements_not_on_spot.empty());
  CHECK_FALSE(env.has_our_taint("od-1"));
  for (const auto& [pod, node] : env.pods_by_node()) CHECK(node.starts_with("spot-"));
}

TEST_CASE("a replacement still Pending holds the next eviction; one Pending past the timeout stops the drain", "[evictor]") {
  Env env(scenario());
  env.options.replacement_timeout = 1s;
  NodePlan plan = env.node_plan();
  env.sim->run([](kubesim::Cluster& c) { c.options().scheduler = false; });
  DrainReport r = env.drain(plan);
  INFO(r.reason);
  CHECK(r.outcome == DrainOutcome::kAborted);
  CHECK(r.evicted.size() == 1);
  CHECK(r.reason.find("was still Pending 1s after its predecessor's eviction") != std::string::npos);
  CHECK(env.requests("/eviction").size() == 1);
  CHECK_FALSE(env.has_our_taint("od-1"));
}

TEST_CASE("waitForReplacementReady: each eviction waits for its replacement to be Ready; one never Ready stops the drain", "[evictor]") {
  // web's new pods never pass their readiness probe.
  std::string never_ready = scenario();
  const std::string web_template = "    metadata: {labels: {app: web}}\n";
  REQUIRE(never_ready.find(web_template) != std::string::npos);
  never_ready.replace(never_ready.find(web_template), web_template.size(),
                      "    metadata: {labels: {app: web}, annotations: {kubesim.spotshift.io/never-ready: \"true\"}}\n");
  {
    // Without the option the drain goes on regardless.
    Env env(never_ready);
    DrainReport r = env.drain(env.node_plan());
    INFO(r.reason);
    CHECK(r.outcome == DrainOutcome::kSucceeded);
  }
  {
    Env env(never_ready);
    env.options.wait_for_replacement_ready = true;
    env.options.replacement_ready_timeout = 1s;
    DrainReport r = env.drain(env.node_plan());
    INFO(r.reason);
    CHECK(r.outcome == DrainOutcome::kAborted);
    CHECK(r.evicted.size() == 1);
    CHECK(r.reason.find("(ReplicaSet web) was not Ready 1s after its eviction (waitForReplacementReady)") != std::string::npos);
    CHECK(env.requests("/eviction").size() == 1);
    CHECK_FALSE(env.has_our_taint("od-1"));
  }
  {
    // Replacements that become Ready: every pod is evicted, each after the last one's is Ready.
    Env env(scenario());
    env.options.wait_for_replacement_ready = true;
    env.options.replacement_ready_timeout = 5s;
    DrainReport r = env.drain(env.node_plan());
    INFO(r.reason);
    CHECK(r.outcome == DrainOutcome::kSucceeded);
    CHECK(r.evicted.size() == 3);
  }
}

TEST_CASE("drainedNodeTaintTTL keeps the taint that much longer after the replacements are bound", "[evictor]") {
  Env env(scenario());
  env.options.drained_node_taint_ttl = 1500ms;
  NodePlan plan = env.node_plan();
  auto start = std::chrono::steady_clock::now();
  DrainReport r = env.drain(plan);
  CHECK(r.outcome == DrainOutcome::kSucceeded);
  CHECK(std::chrono::steady_clock::now() - start >= 1500ms);
  auto patches = env.requests("PATCH /api/v1/nodes/od-1");
  CHECK(patches.size() == 2);
  CHECK_FALSE(env.has_our_taint("od-1"));
}

TEST_CASE("a 409 on the taint patch is retried with a fresh read", "[evictor]") {
  Env env(scenario());
  env.sim->faults().conflict_next_update("nodes", "od-1");
  DrainReport r = env.drain(env.node_plan());
  CHECK(r.outcome == DrainOutcome::kSucceeded);
  auto patches = env.requests("PATCH /api/v1/nodes/od-1");
  REQUIRE(patches.size() == 3);
  CHECK(patches[0].ends_with("409"));
  CHECK(patches[1].ends_with("200"));
  CHECK(env.requests("GET /api/v1/nodes/od-1").size() >= 3);
  CHECK_FALSE(env.has_our_taint("od-1"));
}

TEST_CASE("a 409 on removing the taint is retried too", "[evictor]") {
  Env env(scenario());
  Recorder rec;
  rec.after_first_eviction = [&] { env.sim->faults().conflict_next_update("nodes", "od-1"); };
  DrainReport r = env.drain(env.node_plan(), &rec);
  CHECK(r.outcome == DrainOutcome::kSucceeded);
  CHECK(r.taint_removed);
  CHECK_FALSE(env.has_our_taint("od-1"));
}

TEST_CASE("the taint keeps other taints and is set with a resourceVersion precondition", "[evictor]") {
  Env env(scenario());
  Evictor evictor = env.evictor(env.options);
  CHECK(run_sync(env.ioc, evictor.set_taint("od-1", true)).value());
  CHECK_FALSE(run_sync(env.ioc, evictor.set_taint("od-1", true)).value());  // already there
  auto t = env.taints("od-1");
  REQUIRE(t.size() == 2);
  CHECK(t[0].key.view() == "spotshift.io/on-demand");
  CHECK(t[1].to_string() == "spotshift.io/draining=pool:NoSchedule");
  CHECK(run_sync(env.ioc, evictor.set_taint("od-1", false)).value());
  CHECK(env.taints("od-1").size() == 1);
  CHECK_FALSE(run_sync(env.ioc, evictor.set_taint("od-1", false)).value());
  CHECK_FALSE(run_sync(env.ioc, evictor.set_taint("no-such-node", false)).value());

  // Another policy's drain is not ours to take over.
  Evictor other = env.evictor([&] {
    auto o = env.options;
    o.policy = "other";
    return o;
  }());
  CHECK(run_sync(env.ioc, other.set_taint("od-2", true)).value());
  auto clash = run_sync(env.ioc, evictor.set_taint("od-2", true));
  REQUIRE_FALSE(clash);
  CHECK(clash.error().message == "node od-2 is being drained by policy other");
}

TEST_CASE("a plan that no longer holds touches nothing", "[evictor]") {
  Env env(scenario());
  DrainReport r =
      env.drain(env.node_plan(), nullptr, []() -> Result<NodePlan> { return Error::invalid("pod default/new-pod: has no controller"); });
  CHECK(r.outcome == DrainOutcome::kStale);
  CHECK(r.reason == "the plan no longer holds: pod default/new-pod: has no controller");
  CHECK(env.requests("PATCH").empty());
  CHECK(env.requests("/eviction").empty());
}

TEST_CASE("a plan that stops holding once the node is tainted is dropped, untainted", "[evictor]") {
  Env env(scenario());
  int calls = 0;
  NodePlan plan = env.node_plan();
  DrainReport r = env.drain(plan, nullptr, [&]() -> Result<NodePlan> {
    if (++calls == 1) return plan;
    return Error::invalid("a pod landed meanwhile");
  });
  CHECK(r.outcome == DrainOutcome::kStale);
  CHECK(env.requests("PATCH /api/v1/nodes/od-1").size() == 2);
  CHECK(env.requests("/eviction").empty());
  CHECK_FALSE(env.has_our_taint("od-1"));
}

TEST_CASE("stopping a drain part-way evicts nothing more and removes the taint", "[evictor]") {
  Env env(scenario());
  Evictor evictor = env.evictor(env.options);
  Recorder rec;
  rec.after_first_eviction = [&] { evictor.stop(); };
  NodePlan plan = env.node_plan();
  DrainReport r = run_sync(env.ioc, evictor.drain(
                                        plan, [plan]() -> Result<NodePlan> { return plan; }, [](std::string_view) { return true; }, &rec));
  CHECK(r.outcome == DrainOutcome::kAborted);
  CHECK(r.evicted.size() == 1);
  CHECK(r.remaining == 2);
  CHECK(r.reason.find("stopped") != std::string::npos);
  CHECK_FALSE(evictor.draining());
  CHECK_FALSE(env.has_our_taint("od-1"));
}

TEST_CASE("a pod the policy no longer lets move stops the drain before it is evicted", "[evictor]") {
  Env env(scenario());
  NodePlan plan = env.node_plan();
  REQUIRE(plan.moves.size() == 3);
  const std::string protected_pod = plan.moves[1].pod->key();
  Evictor evictor = env.evictor(env.options);
  std::vector<std::string> asked;
  auto still_movable = [&](const model::Pod& pod) -> Result<void> {
    asked.push_back(pod.key());
    if (pod.key() == protected_pod) return Error::invalid("annotated spotshift.io/do-not-move=true");
    return {};
  };
  DrainReport r = run_sync(env.ioc, evictor.drain(
                                        plan, [plan]() -> Result<NodePlan> { return plan; },
                                        [](std::string_view n) { return n.starts_with("spot-"); }, nullptr, still_movable));
  CHECK(r.outcome == DrainOutcome::kAborted);
  CHECK(r.evicted == std::vector<std::string>{plan.moves[0].pod->key()});
  CHECK(r.remaining == 2);
  CHECK(r.reason == "pod " + protected_pod + " may no longer be moved: annotated spotshift.io/do-not-move=true");
  CHECK(asked == std::vector<std::string>{plan.moves[0].pod->key(), protected_pod});
  // Only the first pod's eviction was asked for, and the taint is gone.
  auto evictions = env.requests("/eviction");
  REQUIRE(evictions.size() == 1);
  CHECK(evictions[0].find(plan.moves[0].pod->name()) != std::string::npos);
  CHECK_FALSE(env.has_our_taint("od-1"));
}

TEST_CASE("after each eviction the plan is re-checked, and a drain whose rest no longer fits stops", "[evictor]") {
  Env env(scenario());
  NodePlan plan = env.node_plan();
  REQUIRE(plan.moves.size() == 3);
  int calls = 0;
  // Before and after tainting the plan holds; after the first eviction the spot nodes are gone.
  DrainReport r = env.drain(plan, nullptr, [&]() -> Result<NodePlan> {
    if (++calls <= 2) return plan;
    return Error::invalid("pod default/web-b fits on no spot node: 0/2 nodes are available: 2 node(s) were not Ready");
  });
  CHECK(calls == 3);
  CHECK(r.outcome == DrainOutcome::kAborted);
  CHECK(r.evicted.size() == 1);
  CHECK(r.remaining == 2);
  CHECK(r.reason ==
        "the plan for the rest of the node no longer holds: pod default/web-b fits on no spot node: 0/2 nodes are "
        "available: 2 node(s) were not Ready");
  CHECK(env.requests("/eviction").size() == 1);
  CHECK_FALSE(env.has_our_taint("od-1"));
}

TEST_CASE("replacements that do not land on a spot node are reported", "[evictor]") {
  Env env(scenario());
  NodePlan plan = env.node_plan();
  // Spot capacity disappears after planning: the replacements go to the other on-demand node.
  for (const auto* n : {"spot-1", "spot-2"})
    run_sync(env.ioc, env.client->patch(kube::Resource::nodes(), "", n, kube::PatchType::kMerge, R"({"spec":{"unschedulable":true}})"))
        .value();
  Recorder rec;
  env.sim->clear_audit();
  DrainReport r = env.drain(plan, &rec);
  CHECK(r.outcome == DrainOutcome::kSucceeded);
  // Replacements were looked for in the pod cache: no pods were listed during the drain.
  for (const auto& a : env.sim->audit()) CHECK_FALSE((a.verb == "list" && a.resource == "pods"));
  REQUIRE(r.replacements_not_on_spot.size() == 3);
  CHECK(rec.replacements.size() == 3);
  CHECK(r.replacements == std::map<std::string, int>{{"not_spot", 3}});
  CHECK(r.replacements_not_on_spot[0].find("was scheduled on od-2, which is not a spot node") != std::string::npos);
  // Where they went, by node: what the operator holds back from the next drains.
  REQUIRE(r.landed_off_spot.size() == 1);
  REQUIRE(r.landed_off_spot.count("od-2"));
  CHECK(r.landed_off_spot.at("od-2").size() == 3);
  for (const auto& key : r.landed_off_spot.at("od-2")) CHECK(key.starts_with("default/"));
  CHECK_FALSE(env.has_our_taint("od-1"));
}

TEST_CASE("stale taints of the policy are removed at start-up, other policies' are left", "[evictor]") {
  Env env(scenario());
  auto other_options = env.options;
  other_options.policy = "other";
  REQUIRE(run_sync(env.ioc, set_taint(*env.client, *env.timers, env.options, "od-1", true)).value());
  REQUIRE(run_sync(env.ioc, set_taint(*env.client, *env.timers, other_options, "od-2", true)).value());
  auto cleaned = run_sync(env.ioc, remove_stale_taints(*env.client, *env.timers, env.options, {"od-1", "od-2", "no-such-node"}));
  CHECK(cleaned.removed == std::vector<std::string>{"od-1"});
  CHECK(cleaned.failed.empty());
  CHECK_FALSE(env.has_our_taint("od-1"));
  CHECK(env.has_our_taint("od-2"));

  // A node whose patch keeps failing is reported, and the others are still cleaned.
  REQUIRE(run_sync(env.ioc, set_taint(*env.client, *env.timers, env.options, "od-1", true)).value());
  REQUIRE(run_sync(env.ioc, set_taint(*env.client, *env.timers, env.options, "spot-1", true)).value());
  auto f = kubesim::FaultRule::answer("patch", "nodes", 403);
  f.name = "od-1";
  env.sim->faults().add(f);
  cleaned = run_sync(env.ioc, remove_stale_taints(*env.client, *env.timers, env.options, {"od-1", "spot-1"}));
  CHECK(cleaned.removed == std::vector<std::string>{"spot-1"});
  REQUIRE(cleaned.failed.size() == 1);
  CHECK(cleaned.failed[0].first == "od-1");
  CHECK(cleaned.failed[0].second.code == 403);
  CHECK(env.has_our_taint("od-1"));
  CHECK_FALSE(env.has_our_taint("spot-1"));
}
