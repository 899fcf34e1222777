// Benchmarks against kubesim over HTTP, with the real client and the real operator:
//
//   kubesim_bench ingest     d. watch events per second from kubesim into an informer's store
//   kubesim_bench reaction   e. from a spot node turning Ready to the policy's status showing the
//                               new plan, and to the operator's first eviction request
//   kubesim_bench realized   g. realized drains: the operator on an openb cluster made live until it
//                               stops draining; on-demand nodes really emptied against the first
//                               plan's drainable ones, where the replacements went, Pending pods;
//                               on kubesim or on the real control plane (scripts/realkube.sh)
//                               (--seeds, --variants, --profiles, --steering, --backends,
//                               --drain-order, --max-minutes, --keep; --help)
//
// With no argument it runs all three. Each figure is one JSON line: {"name","value","unit","goal"};
// details go to stderr.

#include "bench.hpp"
#include "scenario.hpp"

#include "core/flags.hpp"
#include "core/strings.hpp"
#include "kube/client.hpp"
#include "model/pod.hpp"
#include "runtime/informer.hpp"
#include "runtime/spawn.hpp"
#include "runtime/timers.hpp"
#include "simulator.hpp"
#include "support/asio_run.hpp"
#include "support/metrics_text.hpp"
#include "support/process.hpp"
#include "support/sim_client.hpp"
#include "support/steering_webhook.hpp"

#include <rapidjson/document.h>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

using namespace spotshift;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

// Run before a failure exits (std::exit runs no destructors): stops a real control plane.
std::string g_on_failure;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "kubesim_bench: %s\n", what.c_str());
  if (!g_on_failure.empty()) testing::run(g_on_failure);
  std::exit(1);
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double ms_between(clock_type::time_point a, clock_type::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

std::string pod_yaml(const std::string& name, const std::string& node, const std::string& app) {
  return fmt::format(R"(---
apiVersion: v1
kind: Pod
metadata:
  name: {0}
  namespace: bench
  labels: {{app: {2}, tier: backend, team: payments}}
  ownerReferences:
  - {{apiVersion: apps/v1, kind: ReplicaSet, name: {2}, uid: rs-{2}, controller: true, blockOwnerDeletion: true}}
spec:
  nodeName: {1}
  tolerations:
  - {{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}}
  - {{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 300}}
  containers:
  - name: app
    image: registry.example/{2}:1.0
    ports: [{{containerPort: 8080}}]
    resources:
      requests: {{cpu: 100m, memory: 128Mi}}
)",
                     name, node, app);
}

std::string node_yaml(const std::string& name, const std::string& role, bool ready) {
  return fmt::format(R"(---
apiVersion: v1
kind: Node
metadata:
  name: {0}
  labels: {{kubernetes.io/hostname: {0}, kubernetes.io/os: linux, node-role.kubernetes.io/{1}: ""}}
status:
  capacity: {{cpu: "64", memory: 256Gi, pods: "1000"}}
  allocatable: {{cpu: "64", memory: 256Gi, pods: "1000"}}
  conditions: [{{type: Ready, status: "{2}"}}]
)",
                     name, role, ready ? "True" : "False");
}

const std::string kNamespace = "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: bench}\n";

// ---- d: watch ingest -------------------------------------------------------------------------

void figure_ingest() {
  constexpr int kPods = 2000, kRounds = 10;
  std::string scenario = kNamespace + node_yaml("n1", "worker", true);
  for (int i = 0; i < kPods; ++i) scenario += pod_yaml(fmt::format("app-{:05d}", i), "n1", fmt::format("app-{}", i % 50));
  kubesim::SimulatorOptions o;
  o.scenario_text = scenario;
  o.cluster.kubelet_start_delay = 0ms;
  kubesim::Simulator sim(o);
  if (auto r = sim.start(); !r) fail(r.error().message);

  boost::asio::io_context ioc;
  auto client = spotshift::testing::sim_client(ioc, sim, "kubesim-bench");
  if (!client) fail(client.error().message);
  runtime::Timers timers(ioc.get_executor(), SystemClock::instance());
  runtime::Informer<model::Pod> informer("pods", *client, timers, {});
  int64_t updates = 0;
  informer.on_event([&](const runtime::ObjectEvent<model::Pod>& e) {
    if (e.type == runtime::ObjectEvent<model::Pod>::Type::kUpdated) ++updates;
  });
  runtime::spawn(ioc.get_executor(), informer.run(), "informer");
  if (!testing::run_sync(ioc, informer.wait_synced(30s))) fail("the pod informer did not sync");
  // Let the kubelet's status writes settle before counting.
  for (int64_t last = -1; last != updates;) {
    last = updates;
    testing::run_for(ioc, 300ms);
  }

  // kRounds label changes on every pod, made on kubesim's thread while this one ingests them.
  const int64_t start_updates = updates, want = int64_t(kPods) * kRounds;
  auto started = clock_type::now();
  const double cpu_started = thread_cpu_seconds();
  std::thread writer([&] {
    for (int round = 0; round < kRounds; ++round)
      sim.run([&](kubesim::Cluster& cl) {
        const auto& pods = *cl.registry().pods();
        for (int i = 0; i < kPods; ++i)
          cl.mutate(pods, fmt::format("bench/app-{:05d}", i), [&](kubesim::Value& obj, kubesim::Alloc& a) {
            kubesim::set_str(kubesim::ensure_object(kubesim::ensure_object(obj, "metadata", a), "labels", a), "round",
                             std::to_string(round), a);
          });
      });
  });
  auto deadline = started + 120s;
  while (updates - start_updates < want && clock_type::now() < deadline) testing::run_for(ioc, 5ms);
  auto done = clock_type::now();
  const double cpu = thread_cpu_seconds() - cpu_started;
  writer.join();
  if (updates - start_updates < want) fail(fmt::format("only {} of {} updates arrived", updates - start_updates, want));
  double seconds = ms_between(started, done) / 1000;
  std::fprintf(stderr,
               "ingest: %lld pod updates from kubesim into the store in %.3f s of wall time (kubesim making and serving "
               "them on its own thread at the same time); the informer's thread used %.3f s of CPU\n",
               static_cast<long long>(want), seconds, cpu);
  bench::report("watch_ingest_pod_events_end_to_end", double(want) / seconds, "events/s", ">= 20000 events/s");
  bench::report("watch_ingest_pod_events_per_informer_cpu_second", double(want) / cpu, "events/s", ">= 20000 events/s");
}

// ---- e: reaction latency ---------------------------------------------------------------------

struct ReactionSample {
  double plan_ms = 0, eviction_ms = 0;
  std::string plan_duration;  // the status's lastPlanDuration: the plan alone
};

// Where a reaction is measured: a cluster, the spot node that turns Ready, and what in the
// policy's status shows the new plan.
struct ReactionSetup {
  std::string scenario;
  std::string spot_node;
  bool dry_run = false;      // at scale: plan only (the first drain would start before the flip)
  std::string status_field;  // a status count that grows by one with the new plan
  std::chrono::seconds first_plan_timeout{30};
};

ReactionSample one_reaction(const ReactionSetup& setup, int run_index) {
  kubesim::SimulatorOptions o;
  o.scenario_text = setup.scenario;
  o.cluster.kubelet_start_delay = 0ms;
  kubesim::Simulator sim(o);
  if (auto r = sim.start(); !r) fail(r.error().message);
  auto set_ready = [&](bool ready) {
    sim.run([&](kubesim::Cluster& c) {
      if (!c.set_node_condition(setup.spot_node, "Ready", ready ? "True" : "False")) fail("cannot set " + setup.spot_node + " Ready");
    });
  };
  set_ready(false);
  testing::TempDir dir;
  if (auto r = sim.write_kubeconfig(dir.file("kubeconfig")); !r) fail(r.error().message);
  auto kubectl = [&](const std::string& args) {
    auto r = testing::run(fmt::format("kubectl --kubeconfig {} {}", dir.file("kubeconfig"), args));
    if (r.status != 0) fail("kubectl " + args + ": " + r.output);
  };
  kubectl(fmt::format("apply -f {}/crds/reschedulepolicies.spotshift.io.yaml", SOURCE_ROOT));
  // Housekeeping far away: whatever happens is the watch's doing.
  dir.write("policy.yaml", fmt::format(R"(apiVersion: spotshift.io/v1alpha1
kind: ReschedulePolicy
metadata: {{name: default}}
spec:
  housekeepingInterval: 10m
  nodeDrainDelay: 0s
  podEvictionTimeout: 20s
  dryRun: {}
)",
                                       setup.dry_run));
  kubectl("apply -f " + dir.file("policy.yaml"));
  std::string log = dir.file("operator.log");
  auto pid =
      testing::run(fmt::format("{} run --kubeconfig {} --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 "
                               ">{} 2>&1 & echo $!",
                               SPOTSHIFT_BIN, dir.file("kubeconfig"), log));
  auto stop = [&] { testing::run("kill -9 " + std::string(pid.output.substr(0, pid.output.find('\n'))) + " 2>/dev/null"); };
  // Reads the policy's status inside kubesim's store.
  auto with_status = [&](auto&& read) {
    sim.run([&](kubesim::Cluster& c) {
      if (const auto* rt = c.registry().find("spotshift.io", "v1alpha1", "reschedulepolicies"))
        for (const auto& [k, obj] : c.store().objects(*rt)) read(obj->doc);
    });
  };
  auto status_field = [&](std::string_view field) {
    std::string v;
    with_status([&](const kubesim::Value& doc) {
      if (auto n = kubesim::json_int(doc, {"status", field})) v = std::to_string(*n);
    });
    return v;
  };
  // The operator has planned once, without the spot node.
  std::string before;
  if (!testing::eventually(
          [&] {
            before = status_field(setup.status_field);
            return status_field("observedGeneration") == "1" && !before.empty();
          },
          setup.first_plan_timeout, 5ms)) {
    stop();
    fail("the operator did not report a first plan:\n" + testing::run("cat " + log).output);
  }
  std::this_thread::sleep_for(500ms);
  before = status_field(setup.status_field);
  const std::string after = std::to_string(std::stoll(before) + 1);
  auto evicted = [&] {
    for (const auto& a : sim.audit())
      if (a.path.ends_with("/eviction") && a.method == "POST") return true;
    return false;
  };

  auto t0 = clock_type::now();
  set_ready(true);
  ReactionSample s;
  bool planned = testing::eventually([&] { return status_field(setup.status_field) == after; }, 60s, 1ms);
  s.plan_ms = ms_between(t0, clock_type::now());
  bool first = setup.dry_run || testing::eventually(evicted, 20s, 1ms);
  s.eviction_ms = ms_between(t0, clock_type::now());
  with_status([&](const kubesim::Value& doc) { s.plan_duration = std::string(kubesim::json_string(doc, {"status", "lastPlanDuration"})); });
  stop();
  if (!planned || !first)
    fail(fmt::format("run {}: no {} after the spot node turned Ready:\n{}", run_index, planned ? "eviction" : "new plan",
                     testing::run("cat " + log).output));
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void figure_reaction() {
  if (!testing::tool_installed("kubectl")) fail("kubectl is not installed; run scripts/setup.sh (make bench does)");
  // Small: one on-demand node with 3 pods; its drain starts as soon as the spot node is Ready.
  ReactionSetup small;
  small.scenario = kNamespace + node_yaml("ondemand-1", "worker", true) + node_yaml("spot-1", "spot-worker", true);
  for (int i = 0; i < 3; ++i) small.scenario += pod_yaml(fmt::format("web-{}", i), "ondemand-1", "web");
  small.spot_node = "spot-1";
  small.status_field = "drainableNodes";
  std::vector<double> plan, eviction;
  for (int i = 0; i < 5; ++i) {
    auto s = one_reaction(small, i);
    std::fprintf(stderr, "reaction (1 on-demand node, 3 pods) run %d: plan in the status after %.1f ms, first eviction after %.1f ms\n", i,
                 s.plan_ms, s.eviction_ms);
    plan.push_back(s.plan_ms);
    eviction.push_back(s.eviction_ms);
  }
  bench::report("reaction_spot_ready_to_plan_in_status_median", median(plan), "ms", "<= 50 ms");
  bench::report("reaction_spot_ready_to_first_eviction_median", median(eviction), "ms", "<= 1000 ms");

  // At scale, dry run: the synthetic cluster of figure a at a fifth of its size.
  bench::SyntheticOptions so;
  so.nodes = 1000;
  so.pods = 30000;
  so.seed = 4;
  ReactionSetup big;
  big.scenario = bench::synthetic_cluster(so);
  big.spot_node = fmt::format("spot-{:05d}", static_cast<int>(so.nodes * so.on_demand_share));
  big.dry_run = true;
  big.status_field = "spotNodes";
  big.first_plan_timeout = std::chrono::seconds(120);
  std::vector<double> big_plan;
  for (int i = 0; i < 3; ++i) {
    auto s = one_reaction(big, i);
    std::fprintf(stderr, "reaction (1,000 nodes, 30,000 pods, dry run) run %d: plan in the status after %.1f ms (the plan itself %s)\n", i,
                 s.plan_ms, s.plan_duration.c_str());
    big_plan.push_back(s.plan_ms);
  }
  bench::report("reaction_spot_ready_to_plan_in_status_1000_nodes_30000_pods_median", median(big_plan), "ms", "<= 50 ms");
}

// ---- g: realized drains ----------------------------------------------------------------------

// One run of figure g: an openb cluster made live (ReplicaSets, a DaemonSet, budgets), the
// operator with nodeDrainDelay 1s until it stops draining, kubesim's scheduler placing every
// replacement.
struct RealizedCase {
  std::string name;
  bench::OpenbOptions scenario;
  bool packing = false;
  bool steering = false;    // spec.steering Preferred, the operator serving the webhook
  bool real = false;        // the real control plane (scripts/realkube.sh): kube-scheduler places the replacements
  std::string drain_order;  // spec.drainOrder when given; otherwise the profile's (ScarceResources with packing)
};

struct RealizedResult {
  int drainable = 0;        // in the first plan: spotshift plan on the cluster as loaded, with the same policy
  int planned_moves = 0;    // the pods that plan moves off its drainable nodes
  int emptied = 0;          // on-demand nodes running only DaemonSet pods at the end that ran others at the start
  int emptied_planned = 0;  // of them, the first plan's drainable nodes
  double planned = 0, other_spot = 0, not_spot = 0, pending = 0, missing = 0;  // replacements, by where they went
  int pending_pods = 0;                                                        // Pending pods at the end
  double evictions = 0, succeeded = 0, aborted = 0;
  // From the operator's "drain finished" lines: the evictions of the drains of the first plan's
  // nodes emptied at the end, and that plan's pods for those nodes; the evictions of drains that
  // did not succeed.
  int planned_node_evictions = 0, planned_node_pods = 0, unsuccessful_evictions = 0;
  // The evictions of the succeeded drains of every node emptied at the end, against the pods of the
  // plans those drains started from (whichever plan it was), and the drains that evicted more.
  int emptied_node_evictions = 0, emptied_node_plan_pods = 0, drains_over_plan = 0;
  double steered = 0;  // pods the steering webhook steered
  double seconds = 0;
  bool stopped = false;  // stopped draining within the time limit
  std::string blocked;   // why the policy drains no more, when its Blocked condition says
};

std::string realized_policy(const RealizedCase& rc) {
  std::string spec = "  nodeDrainDelay: 1s\n  podEvictionTimeout: 60s\n  maxGracefulTermination: 30s\n";
  if (rc.steering) spec += "  steering: Preferred\n";
  const std::string order = !rc.drain_order.empty() ? rc.drain_order : rc.packing ? "ScarceResources" : "";
  if (!order.empty()) spec += "  drainOrder: " + order + "\n";
  if (rc.packing)
    spec +=
        "  searchIterations: 2000\n  profile:\n    scores:\n"
        "      - {name: Fragmentation, weight: 100}\n      - {name: BestFit, weight: 1}\n";
  return "apiVersion: spotshift.io/v1alpha1\nkind: ReschedulePolicy\nmetadata: {name: default}\nspec:\n" + spec;
}

// The cluster's nodes and pods as JSON objects, from either backend.
struct ClusterObjects {
  std::vector<const rapidjson::Value*> nodes, pods;
};

// The nodes with the pods that are not DaemonSet pods, of the nodes labelled as on-demand.
std::map<std::string, int> workload_pods_on_demand(const ClusterObjects& c) {
  std::map<std::string, int> out;
  for (const auto* node : c.nodes)
    if (model::json_path(*node, {"metadata", "labels", "node-role.kubernetes.io/worker"}))
      out[std::string(model::json_string(*node, {"metadata", "name"}))] = 0;
  for (const auto* pod : c.pods) {
    std::string_view phase = model::json_string(*pod, {"status", "phase"});
    if (phase == "Succeeded" || phase == "Failed" || model::json_string(*pod, {"metadata", "name"}).starts_with("node-agent-")) continue;
    auto it = out.find(std::string(model::json_string(*pod, {"spec", "nodeName"})));
    if (it != out.end()) ++it->second;
  }
  return out;
}

int pending_pods(const ClusterObjects& c) {
  return static_cast<int>(std::count_if(c.pods.begin(), c.pods.end(), [](const rapidjson::Value* pod) {
    return model::json_string(*pod, {"spec", "nodeName"}).empty() && model::json_string(*pod, {"status", "phase"}) == "Pending";
  }));
}

// The cluster a realized run drains: kubesim in this process, or the real control plane that
// scripts/realkube.sh starts (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok's
// fake nodes), both loaded from the scenario file the first plan read (DIR/cluster.json).
class RealizedCluster {
 public:
  RealizedCluster(bool real, const testing::TempDir& dir, std::string scenario) : real_(real), dir_(dir) {
    if (real_) {
      auto check = testing::run(fmt::format("{}/scripts/kube-tools.sh check 2>&1", SOURCE_ROOT));
      if (check.status != 0) fail("the real control plane's components are not built (scripts/kube-tools.sh build): " + check.output);
      const auto t0 = clock_type::now();
      g_on_failure = stop_command();
      auto r = testing::run(
          fmt::format("{}/scripts/realkube.sh start {} {} 2>&1", SOURCE_ROOT, dir_.file("realkube"), dir_.file("cluster.json")));
      started_ = true;
      if (r.status != 0) fail("scripts/realkube.sh start: " + r.output);
      kubeconfig_ = dir_.file("realkube/kubeconfig");
      // kwok reports the loaded pods Running over a while: the run starts once none is Pending.
      // A pod still unbound after 10 minutes would count against the drains: the run stops.
      for (int i = 0;; ++i) {
        auto c = objects();
        const int pending = c.pods.empty() ? -1 : pending_pods(c);
        if (pending == 0) break;
        if (i == 600)
          fail(pending < 0
                   ? std::string("no pod of the scenario is in the real control plane after 10 minutes")
                   : fmt::format("{} of the scenario's pods are still Pending after 10 minutes on the real control plane", pending));
        std::this_thread::sleep_for(1s);
      }
      std::fprintf(stderr, "realized: the real control plane started, loaded and running in %.0f s\n",
                   std::chrono::duration<double>(clock_type::now() - t0).count());
      return;
    }
    kubesim::SimulatorOptions o;
    o.scenario_text = std::move(scenario);
    o.cluster.kubelet_start_delay = 100ms;
    o.cluster.termination_cap = 200ms;
    sim_ = std::make_unique<kubesim::Simulator>(o);
    if (auto r = sim_->start(); !r) fail(r.error().message);
    if (auto r = sim_->write_kubeconfig(dir_.file("kubeconfig")); !r) fail(r.error().message);
    kubeconfig_ = dir_.file("kubeconfig");
  }
  ~RealizedCluster() {
    if (started_) testing::run(stop_command());
    g_on_failure.clear();
  }
  RealizedCluster(const RealizedCluster&) = delete;
  RealizedCluster& operator=(const RealizedCluster&) = delete;

  const std::string& kubeconfig() const { return kubeconfig_; }

  // Calls f with the cluster's nodes and pods.
  template <class F>
  void with_objects(F&& f) {
    if (real_) {
      f(objects());
      return;
    }
    sim_->run([&](kubesim::Cluster& c) {
      ClusterObjects objs;
      for (const auto& [key, node] : c.store().objects(*c.registry().nodes())) objs.nodes.push_back(&node->doc);
      for (const auto& [key, pod] : c.store().objects(*c.registry().pods())) objs.pods.push_back(&pod->doc);
      f(objs);
    });
  }

  // The policy's progress, read from its status.
  struct Progress {
    bool planned = false;   // the status holds a plan
    bool draining = false;  // a drain runs
    std::string drains;     // changes when a drain starts or ends
    std::string blocked;    // the Blocked condition's reason and message, when it is True
  };
  Progress progress() {
    Progress out;
    auto read = [&](const rapidjson::Value& policy) {
      out.planned = model::json_path(policy, {"status", "drainableNodes"}) != nullptr;
      out.draining = !model::json_string(policy, {"status", "currentDrain", "node"}).empty();
      out.drains = fmt::format("{} {}", model::json_int(policy, {"status", "nodesDrainedTotal"}).value_or(0),
                               model::json_string(policy, {"status", "lastDrain", "startedAt"}));
      if (const auto* conditions = model::json_path(policy, {"status", "conditions"}); conditions && conditions->IsArray())
        for (const auto& c : conditions->GetArray())
          if (model::json_string(c, {"type"}) == "Blocked" && model::json_string(c, {"status"}) == "True")
            out.blocked = fmt::format("{}: {}", model::json_string(c, {"reason"}), model::json_string(c, {"message"}));
    };
    if (real_) {
      auto r = testing::run(fmt::format("kubectl --kubeconfig {} get reschedulepolicies default -o json 2>/dev/null", kubeconfig_));
      doc_.Parse(r.output.c_str(), r.output.size());
      if (r.status == 0 && !doc_.HasParseError() && doc_.IsObject()) read(doc_);
      return out;
    }
    sim_->run([&](kubesim::Cluster& c) {
      if (const auto* rt = c.registry().find("spotshift.io", "v1alpha1", "reschedulepolicies"))
        for (const auto& [k, obj] : c.store().objects(*rt)) read(obj->doc);
    });
    return out;
  }

 private:
  std::string stop_command() const {
    return fmt::format("{}/scripts/realkube.sh stop {} >/dev/null 2>&1", SOURCE_ROOT, dir_.file("realkube"));
  }

  // The real cluster's nodes and pods, read with kubectl (valid until the next read).
  ClusterObjects objects() {
    auto r = testing::run(fmt::format("kubectl --kubeconfig {} get nodes,pods -A -o json 2>&1", kubeconfig_));
    if (r.status != 0) fail("kubectl get nodes,pods: " + r.output);
    doc_.Parse(r.output.c_str(), r.output.size());
    if (doc_.HasParseError() || !doc_.IsObject() || !doc_.HasMember("items")) fail("kubectl get nodes,pods: no List");
    ClusterObjects out;
    for (const auto& item : doc_["items"].GetArray())
      (model::json_string(item, {"kind"}) == "Node" ? out.nodes : out.pods).push_back(&item);
    return out;
  }

  bool real_;
  const testing::TempDir& dir_;
  bool started_ = false;
  std::string kubeconfig_;
  std::unique_ptr<kubesim::Simulator> sim_;
  rapidjson::Document doc_;
};

// `keep`: a directory to copy the run's operator log, policy, cluster and first plan to (under the
// case's name), or empty.
RealizedResult run_realized(const RealizedCase& rc, std::chrono::minutes limit, const std::string& keep) {
  auto scenario = bench::openb_cluster(rc.scenario);
  if (!scenario) fail(scenario.error().message);
  testing::TempDir dir;
  dir.write("cluster.json", *scenario);
  dir.write("policy.yaml", realized_policy(rc));
  RealizedResult out;

  // The first plan, offline, on the same objects and policy.
  auto plan = testing::run(
      fmt::format("{} plan --snapshot {} --policy {} -o json", SPOTSHIFT_BIN, dir.file("cluster.json"), dir.file("policy.yaml")));
  if (plan.status != 0) fail("spotshift plan: " + plan.output);
  dir.write("plan.json", plan.output);
  rapidjson::Document doc;
  doc.Parse(plan.output.c_str(), plan.output.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("drainableNodes")) fail("spotshift plan: no JSON plan:\n" + plan.output);
  out.drainable = static_cast<int>(doc["drainableNodes"].Size());
  std::map<std::string, int> first_plan;  // node: the pods the plan moves off it
  for (const auto& n : doc["drainableNodes"].GetArray())
    if (n.HasMember("node") && n["node"].IsString())
      first_plan[n["node"].GetString()] = n.HasMember("moves") && n["moves"].IsArray() ? static_cast<int>(n["moves"].Size()) : 0;
  out.planned_moves = doc.HasMember("summary") ? doc["summary"]["podsToMove"].GetInt() : 0;

  RealizedCluster cluster(rc.real, dir, std::move(*scenario));
  std::map<std::string, int> at_start;
  cluster.with_objects([&](const ClusterObjects& c) { at_start = workload_pods_on_demand(c); });
  auto kubectl = [&](const std::string& args) {
    auto r = testing::run(fmt::format("kubectl --kubeconfig {} {}", cluster.kubeconfig(), args));
    if (r.status != 0) fail("kubectl " + args + ": " + r.output);
  };
  kubectl(fmt::format("apply -f {}/crds/reschedulepolicies.spotshift.io.yaml", SOURCE_ROOT));
  const std::string log = dir.file("operator.log");
  const std::string webhook = rc.steering ? testing::kSteeringFlags : "";
  auto pid =
      testing::run(fmt::format("{} run --kubeconfig {} --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 {} "
                               ">{} 2>&1 & echo $!",
                               SPOTSHIFT_BIN, cluster.kubeconfig(), webhook, log));
  const std::string operator_pid(trim(pid.output));
  if (rc.steering) {
    // The webhook as the chart configures it, at the operator's local URL; the policy once the
    // operator has put its CA in the caBundle.
    std::smatch port;
    std::string text;
    for (int i = 0; i < 100 && !std::regex_search(text = testing::run("cat " + log).output, port,
                               std::regex(R"(serving the steering webhook address=127\.0\.0\.1:([0-9]+))"));
         ++i)
      std::this_thread::sleep_for(100ms);
    if (port.size() != 2) fail("the operator does not serve the steering webhook:\n" + text);
    dir.write("webhook.yaml", testing::steering_webhook_yaml(port[1].str()));
    kubectl("apply -f " + dir.file("webhook.yaml"));
    for (int i = 0; i < 100 && testing::run(fmt::format("kubectl --kubeconfig {} get mutatingwebhookconfiguration spotshift-steering -o "
                                                        "jsonpath={{.webhooks[0].clientConfig.caBundle}}",
                                                        cluster.kubeconfig()))
                                   .output.empty();
         ++i)
      std::this_thread::sleep_for(100ms);
  }
  kubectl("apply -f " + dir.file("policy.yaml"));
  const auto started = clock_type::now();

  // Until it stops draining: a plan in the status, no drain in progress and none started for
  // 15 s (fifteen drain delays), or the time limit.
  RealizedCluster::Progress progress;
  std::string last_drains;
  auto quiet_since = clock_type::now();
  for (;;) {
    std::this_thread::sleep_for(500ms);
    progress = cluster.progress();
    if (!progress.planned || progress.draining || progress.drains != last_drains) quiet_since = clock_type::now();
    last_drains = progress.drains;
    if (clock_type::now() - quiet_since > 15s) {
      out.stopped = true;
      break;
    }
    if (clock_type::now() - started > limit) break;
  }
  out.seconds = std::chrono::duration<double>(clock_type::now() - started).count();
  out.blocked = progress.blocked;

  std::string metrics;
  std::smatch m;
  std::string text = testing::run("cat " + log).output;
  if (std::regex_search(text, m, std::regex(R"(serving metrics address=127\.0\.0\.1:([0-9]+))")))
    metrics = testing::run(fmt::format("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{}; printf \"GET /metrics HTTP/1.0\\r\\n\\r\\n\" >&3; cat <&3'",
                                       m[1].str()))
                  .output;
  testing::run("kill -9 " + operator_pid + " 2>/dev/null");
  auto sample = [&](const std::string& series) { return std::max(0.0, testing::metric_sample(metrics, series)); };
  auto placement = [&](const char* where) {
    return sample(fmt::format(R"(spotshift_replacements_total{{policy="default",placement="{}"}})", where));
  };
  out.planned = placement("planned");
  out.other_spot = placement("other_spot");
  out.not_spot = placement("not_spot");
  out.pending = placement("pending");
  out.missing = placement("missing");
  out.steered = sample(R"(spotshift_webhook_admissions_total{result="steered"})");
  out.evictions = sample(R"(spotshift_evictions_total{policy="default",result="evicted"})");
  out.succeeded = sample(R"(spotshift_drains_total{policy="default",result="succeeded"})");
  out.aborted = sample(R"(spotshift_drains_total{policy="default",result="aborted"})");
  std::set<std::string> emptied;
  cluster.with_objects([&](const ClusterObjects& c) {
    for (const auto& [node, pods] : workload_pods_on_demand(c))
      if (pods == 0 && at_start[node] > 0) {
        emptied.insert(node);
        out.emptied_planned += first_plan.count(node) ? 1 : 0;
      }
    out.pending_pods = pending_pods(c);
  });
  out.emptied = static_cast<int>(emptied.size());
  const std::regex finished(R"re(drain finished node=(\S+) outcome=(\S+) evicted=([0-9]+) planned=([0-9]+))re");
  std::istringstream lines(text);
  int finished_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    std::smatch d;
    if (line.find("drain finished") == std::string::npos || !std::regex_search(line, d, finished)) continue;
    ++finished_lines;
    const int evicted = std::stoi(d[3].str()), planned = std::stoi(d[4].str());
    if (d[2].str() != "Succeeded") {
      out.unsuccessful_evictions += evicted;
      continue;
    }
    if (!emptied.count(d[1].str())) continue;
    out.emptied_node_evictions += evicted;
    out.emptied_node_plan_pods += planned;
    out.drains_over_plan += evicted > planned ? 1 : 0;
    if (auto p = first_plan.find(d[1].str()); p != first_plan.end()) {
      out.planned_node_evictions += evicted;
      out.planned_node_pods += p->second;
    }
  }
  // The splits come from these lines: none read while drains ran means their format changed.
  if (finished_lines == 0 && out.succeeded + out.aborted > 0)
    fail("the operator's log has no \"drain finished ... evicted=N planned=N\" line to count evictions by: " + log);
  if (!keep.empty()) {
    const std::string to = keep + "/" + rc.name;
    auto r = testing::run(fmt::format("mkdir -p {0} && cp {1} {2} {3} {4} {0}/ 2>&1", to, log, dir.file("policy.yaml"),
                                      dir.file("cluster.json"), dir.file("plan.json")));
    if (r.status != 0) fail("--keep " + to + ": " + r.output);
  }
  return out;
}

void figure_realized(const std::vector<std::string>& args) {
  if (!testing::tool_installed("kubectl")) fail("kubectl is not installed; run scripts/setup.sh (make bench does)");
  std::string seeds = "1", variants = "single,multi", profiles = "default,packing", steering = "off", backends = "kubesim", keep,
              drain_order;
  int minutes = 30;
  FlagSet flags("kubesim_bench realized", "Figure g: realized drains on openb clusters.");
  flags.add_string("seeds", &seeds, "The openb scenario's seeds, comma-separated.");
  flags.add_string("variants", &variants, "single (the trace's GPU requests) and multi (half the GPU tasks ask 2 to 8 GPUs).");
  flags.add_string("profiles", &profiles, "default and packing (Fragmentation and BestFit, drainOrder ScarceResources, plan search).");
  flags.add_string("steering", &steering,
                   "off and preferred (spec.steering Preferred, the operator serving the webhook), comma-separated.");
  flags.add_string("backends", &backends,
                   "kubesim (its scheduler places the replacements) and real (the real control plane of scripts/realkube.sh, "
                   "kube-scheduler's default profile, kwok's fake nodes), comma-separated.");
  flags.add_string("keep", &keep,
                   "A directory to keep each run's operator log, policy, cluster and first plan in, under the run's name "
                   "(default: none kept).");
  flags.add_string("drain-order", &drain_order,
                   "The policy's drainOrder (Auto, RequestedCPU, ScarceResources or HighestSavingsPerEviction) for every "
                   "profile (default: the profile's own: the CRD's default, Auto, with default; ScarceResources with "
                   "packing).");
  flags.add_int("max-minutes", &minutes, "A run that is still draining after this long is reported as it stands.");
  if (auto code = flags.parse_command(args, std::cout, std::cerr)) std::exit(*code);
  for (auto seed : split(seeds, ','))
    for (auto variant : split(variants, ','))
      for (auto profile : split(profiles, ','))
        for (auto steer : split(steering, ','))
          for (auto backend : split(backends, ',')) {
            RealizedCase rc;
            rc.scenario.data_dir = bench::default_openb_dir();
            rc.scenario.seed = std::stoull(std::string(seed));
            rc.scenario.workloads = true;
            if (variant == "multi") rc.scenario.multi_gpu_share = 0.5;
            else if (variant != "single") fail(fmt::format("unknown variant \"{}\"", variant));
            if (profile != "default" && profile != "packing") fail(fmt::format("unknown profile \"{}\"", profile));
            rc.packing = profile == "packing";
            if (steer != "off" && steer != "preferred") fail(fmt::format("unknown steering \"{}\"", steer));
            rc.steering = steer == "preferred";
            if (backend != "kubesim" && backend != "real") fail(fmt::format("unknown backend \"{}\"", backend));
            rc.real = backend == "real";
            rc.drain_order = drain_order;
            rc.name = fmt::format("openb_seed{}_{}_{}{}{}{}", seed, variant, profile, drain_order.empty() ? "" : "_" + drain_order,
                                  rc.steering ? "_steered" : "", rc.real ? "_real" : "");
            RealizedResult r = run_realized(rc, std::chrono::minutes(minutes), keep);
            const double replacements = r.planned + r.other_spot + r.not_spot + r.pending + r.missing;
            std::fprintf(
                stderr,
                "realized %s: drainable in the first plan %d; on-demand nodes emptied %d, %d of them the first plan's (%s); replacements %.0f: on the planned "
                "node %.0f, other spot %.0f, not spot %.0f, pending %.0f, missing %.0f; Pending at the end %d; evictions %.0f (%.2f "
                "per emptied node; the first plan: %.2f per drainable node; on the first plan's emptied nodes %d against its %d pods for them, in "
                "drains that did not succeed %d; on all emptied nodes %d against %d pods in the plans their drains started from, %d drains above "
                "their plan); drains succeeded %.0f, aborted %.0f; steered %.0f; %.0f s%s%s\n",
                rc.name.c_str(), r.drainable, r.emptied, r.emptied_planned,
                r.stopped ? "stopped draining" : "still draining at the time limit", replacements, r.planned, r.other_spot, r.not_spot,
                r.pending, r.missing, r.pending_pods, r.evictions, r.emptied ? r.evictions / r.emptied : 0.0,
                r.drainable ? double(r.planned_moves) / r.drainable : 0.0, r.planned_node_evictions, r.planned_node_pods,
                r.unsuccessful_evictions, r.emptied_node_evictions, r.emptied_node_plan_pods, r.drains_over_plan, r.succeeded, r.aborted,
                r.steered, r.seconds, r.blocked.empty() ? "" : "; blocked at the end: ", r.blocked.c_str());
            bench::report("realized_drains_" + rc.name, r.drainable ? 100.0 * r.emptied / r.drainable : 100.0, "%", ">= 98 %");
            bench::report("replacements_on_planned_node_" + rc.name, replacements ? 100.0 * r.planned / replacements : 0.0, "%",
                          rc.steering ? "none (steered)" : "none (steering off)");
            bench::report("pending_pods_at_end_" + rc.name, r.pending_pods, "pods", "0");
            bench::report("evictions_against_drain_plans_" + rc.name,
                          r.emptied_node_plan_pods ? 100.0 * r.emptied_node_evictions / r.emptied_node_plan_pods : 100.0, "%", "<= 100 %");
          }
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = argc > 1 ? argv[1] : "all";
  if (which != "all" && which != "ingest" && which != "reaction" && which != "realized") {
    std::fprintf(stderr, "usage: kubesim_bench [ingest|reaction|realized [flags]]\n");
    return 2;
  }
  if (which == "all" || which == "ingest") figure_ingest();
  if (which == "all" || which == "reaction") figure_reaction();
  if (which == "all" || which == "realized") figure_realized(std::vector<std::string>(argv + std::min(argc, 2), argv + argc));
  return 0;
}
