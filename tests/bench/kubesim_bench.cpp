// Benchmarks against kubesim over HTTP, with the real client and the real operator:
//
//   kubesim_bench ingest     d. watch events per second from kubesim into an informer's store
//   kubesim_bench reaction   e. from a spot node turning Ready to the policy's status showing the
//                               new plan, and to the operator's first eviction request
//
// With no argument it runs both. Each figure is one JSON line: {"name","value","unit","goal"};
// details go to stderr.

#include "bench.hpp"
#include "scenario.hpp"

#include "kube/client.hpp"
#include "model/pod.hpp"
#include "runtime/informer.hpp"
#include "runtime/spawn.hpp"
#include "runtime/timers.hpp"
#include "simulator.hpp"
#include "support/asio_run.hpp"
#include "support/process.hpp"
#include "support/sim_client.hpp"

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <thread>

using namespace spotshift;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "kubesim_bench: %s\n", what.c_str());
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

}  // namespace

int main(int argc, char** argv) {
  std::string which = argc > 1 ? argv[1] : "all";
  if (which != "all" && which != "ingest" && which != "reaction") {
    std::fprintf(stderr, "usage: kubesim_bench [ingest|reaction]\n");
    return 2;
  }
  if (which == "all" || which == "ingest") figure_ingest();
  if (which == "all" || which == "reaction") figure_reaction();
  return 0;
}
