#pragma once
// The end-to-end harness: kubesim in process (plain HTTP, or HTTPS with bearer tokens) or the real
// control plane, the spotshift binary as a child process, and views of the cluster.

#include "core/strings.hpp"
#include "simulator.hpp"
#include "support/catch.hpp"
#include "support/process.hpp"
#include "support/realkube.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

namespace spotshift::e2e {

using namespace std::chrono_literals;
using spotshift::testing::eventually;
using spotshift::testing::run;
using spotshift::testing::shell_quote;
using spotshift::testing::TempDir;

inline const std::string kSource = SOURCE_ROOT;

inline std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A node labelled pool=<pool> (for a policy's selectors) with `cpu` CPUs, `memory` and `gpus` of
// the extended resource example.com/gpu.
inline std::string pool_node(const std::string& name, const std::string& pool, int cpu, const std::string& memory, int gpus) {
  return fmt::format(R"(---
apiVersion: v1
kind: Node
metadata:
  name: {0}
  labels: {{kubernetes.io/hostname: {0}, kubernetes.io/os: linux, pool: {1}}}
status:
  capacity: {{cpu: "{2}", memory: {3}, pods: "110", example.com/gpu: "{4}"}}
  allocatable: {{cpu: "{2}", memory: {3}, pods: "110", example.com/gpu: "{4}"}}
)",
                     name, pool, cpu, memory, gpus);
}

// A container's resources: `cpu`, 1 GiB and, unless 0, `gpus` of example.com/gpu.
inline std::string gpu_resources(const std::string& cpu, int gpus) {
  return gpus == 0 ? fmt::format(R"({{requests: {{cpu: "{}", memory: 1Gi}}}})", cpu)
                   : fmt::format(R"({{requests: {{cpu: "{0}", memory: 1Gi, example.com/gpu: "{1}"}}, limits: {{example.com/gpu: "{1}"}}}})",
                                 cpu, gpus);
}

// A ReplicaSet `app` of one replica (uid numbered `id`) in namespace `ns`, and its pod `app`-x1
// bound to `node`, with these resources.
inline std::string replica_set_pod(const std::string& ns, const std::string& app, int id, const std::string& node,
                                   const std::string& resources) {
  return fmt::format(R"(---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {{name: {0}, namespace: {1}, uid: 5a0d7c1e-0000-4000-8000-{2:012x}, labels: {{app: {0}}}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {0}}}}}
  template:
    metadata: {{labels: {{app: {0}}}}}
    spec:
      containers: [{{name: c, image: registry.example/{0}:1, resources: {4}}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: {0}-x1
  namespace: {1}
  labels: {{app: {0}}}
  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: {0}, uid: 5a0d7c1e-0000-4000-8000-{2:012x}, controller: true}}]
spec:
  nodeName: {3}
  containers: [{{name: c, image: registry.example/{0}:1, resources: {4}}}]
)",
                     app, ns, id, node, resources);
}

inline std::string policy_yaml(const std::string& name, const std::string& extra_spec, const std::string& delay = "3s") {
  return fmt::format(
      R"(apiVersion: spotshift.io/v1alpha1
kind: ReschedulePolicy
metadata:
  name: {}
spec:
  nodeDrainDelay: {}
  podEvictionTimeout: 20s
{})",
      name, delay,
      extra_spec.find("maxGracefulTermination") == std::string::npos ? "  maxGracefulTermination: 20s\n" + extra_spec : extra_spec);
}

class Operator {
 public:
  // `spotshift run` with local bind addresses and `extra` flags.
  Operator(const std::string& kubeconfig, const std::string& log, const std::string& extra)
      : Operator(fmt::format("run --kubeconfig {} --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 {}",
                             shell_quote(kubeconfig), extra),
                 log) {}
  // spotshift with exactly these (already quoted) arguments. A small launcher script waits for it
  // and writes its exit status next to the log, so a test sees a crash after the last log line.
  Operator(const std::string& args, const std::string& log) : log_(log) {
    {
      std::ofstream script(log + ".sh");
      script << fmt::format("{} {} >{} 2>&1 &\necho $! >{}.pid\nwait $!\necho $? >{}.status.tmp && mv {}.status.tmp {}.status\n",
                            SPOTSHIFT_BIN, args, shell_quote(log), shell_quote(log), shell_quote(log), shell_quote(log), shell_quote(log));
    }
    run(fmt::format("rm -f {0}.pid {0}.status; sh {0}.sh >/dev/null 2>&1 &", shell_quote(log)));
    eventually([&] { return !trim(read_all(log + ".pid")).empty(); }, 10s, 5ms);
    pid_ = std::string(trim(read_all(log + ".pid")));
  }
  // The process's exit status once it has ended (128 + the signal when a signal ended it), or -1
  // if it has not ended within a few seconds.
  int exit_status() const {
    std::string text;
    eventually([&] { return !(text = read_all(log_ + ".status")).empty(); }, 10s, 10ms);
    return text.empty() ? -1 : std::stoi(std::string(trim(text)));
  }
  ~Operator() { stop(SIGKILL); }
  void stop(int sig) {
    if (pid_.empty()) return;
    run(fmt::format("kill -{} {} 2>/dev/null", sig, pid_));
    eventually([&] { return run("kill -0 " + pid_ + " 2>/dev/null").status != 0; }, 20s);
    pid_.clear();
  }
  bool alive() const { return !pid_.empty() && run("kill -0 " + pid_ + " 2>/dev/null").status == 0; }
  std::string log() const { return read_all(log_); }
  // The /metrics text (the port is in the log).
  std::string metrics() const {
    std::smatch m;
    std::string l = log();
    if (!std::regex_search(l, m, std::regex(R"(serving metrics address=127\.0\.0\.1:([0-9]+))"))) return "";
    return run(fmt::format("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{}; printf \"GET /metrics HTTP/1.0\\r\\n\\r\\n\" >&3; cat <&3'",
                           m[1].str()))
        .output;
  }

 private:
  std::string pid_, log_;
};

struct EnvOptions {
  bool tls = false;
  std::vector<std::pair<std::string, std::string>> tokens;  // token -> user; the first one is kubectl's
  bool apply_crd = true;
  bool demo = true;  // start from tests/kubesim/scenarios/demo.yaml (the extra scenario is added to it)
};

// The cluster a scenario runs on: kubesim in process, or the real control plane
// (SPOTSHIFT_E2E_BACKEND=real, scripts/realkube.sh; one per test process, reset and loaded with
// the same scenario for each test). Every view of
// the cluster below reads the same objects either way: kubesim's store in process, or the API
// through kubectl. Faults and kubesim's internals (kubesim()) exist on kubesim only.
class Env {
 public:
  explicit Env(std::string extra_scenario = {}, EnvOptions options = {}) {
    spotshift::testing::require_tool("kubectl");
    std::string scenario = (options.demo ? read_all(kSource + "/tests/kubesim/scenarios/demo.yaml") : std::string()) + extra_scenario;
    if (spotshift::testing::real_backend()) {
      std::vector<std::string> files;
      if (!scenario.empty()) {
        dir.write("scenario.yaml", scenario);
        files.push_back(dir.file("scenario.yaml"));
      }
      // One control plane per test process, reset to a fresh cluster for each scenario.
      real = &spotshift::testing::RealCluster::shared();
      real->fresh(files);
      kubeconfig_ = real->kubeconfig();
    } else {
      kubesim::SimulatorOptions o;
      o.scenario_text = scenario;
      o.cluster.kubelet_start_delay = 200ms;
      o.cluster.termination_cap = 500ms;
      o.tls = options.tls;
      o.tokens = options.tokens;
      sim = std::make_unique<kubesim::Simulator>(o);
      REQUIRE(sim->start());
      kubeconfig_ = dir.file("kubeconfig");
      REQUIRE(sim->write_kubeconfig(kubeconfig_));
    }
    if (options.apply_crd) {
      kubectl("apply -f " + kSource + "/crds/reschedulepolicies.spotshift.io.yaml");
      if (real) {
        kubectl("wait --for condition=Established --timeout 30s crd/reschedulepolicies.spotshift.io");
        // A real API server publishes a new CRD's schema (what kubectl explain and kubectl's
        // field validation read) a moment after it is Established, later on a busy machine.
        REQUIRE(
            eventually([&] { return kubectl("explain rsp.spec.nodeDrainDelay", false).find("FIELD: nodeDrainDelay") != std::string::npos; },
                       30s, 200ms));
      }
    }
    REQUIRE(eventually([&] { return all_running(); }, 30s));
  }
  bool on_kubesim() const { return sim != nullptr; }
  const std::string& kubeconfig() const { return kubeconfig_; }
  // A kubeconfig that authenticates with this token (kubesim only).
  std::string kubeconfig_for(const std::string& token) {
    REQUIRE(sim);
    std::string path = dir.file("kubeconfig-" + token);
    REQUIRE(sim->write_kubeconfig(path, token));
    return path;
  }

  std::string kubectl(const std::string& args, bool must_succeed = true) {
    auto r = run(fmt::format("kubectl --kubeconfig {} --cache-dir {} {} 2>&1", kubeconfig_, dir.file("kubectl-cache"), args));
    if (must_succeed) {
      INFO("kubectl " << args << "\n" << r.output);
      REQUIRE(r.status == 0);
    }
    return r.output;
  }
  void apply(const std::string& name, const std::string& yaml) {
    dir.write(name + ".yaml", yaml);
    kubectl("apply -f " + dir.file(name + ".yaml"));
  }
  std::unique_ptr<Operator> start(const std::string& name, const std::string& extra = "") {
    return std::make_unique<Operator>(kubeconfig_, dir.file(name + ".log"), extra);
  }
  // Keeps the pod terminating once it is deleted, until the test ends: kubesim's never-terminate
  // annotation, or on the real control plane the fake kubelet's termination delay.
  void make_pod_hang(const std::string& ns, const std::string& name) {
    kubectl(fmt::format("annotate pod -n {} {} {}", ns, name,
                        sim ? "kubesim.spotshift.io/never-terminate=true" : "realkube.spotshift.io/termination-delay=1h"));
  }

  // Calls fn for every object of a resource ("pods", "nodes", "events", "reschedulepolicies",
  // "leases"), across namespaces.
  void for_each(const std::string& resource, const std::function<void(const rapidjson::Value&)>& fn) {
    if (sim) {
      sim->run([&](kubesim::Cluster& c) {
        const kubesim::ResourceType* rt = resource == "pods"     ? c.registry().pods()
                                          : resource == "nodes"  ? c.registry().nodes()
                                          : resource == "events" ? c.registry().events()
                                          : resource == "leases" ? c.registry().leases()
                                                                 : c.registry().find("spotshift.io", "v1alpha1", resource);
        if (!rt) return;
        for (const auto& [k, o] : c.store().objects(*rt)) fn(o->doc);
      });
      return;
    }
    auto r = run(fmt::format("kubectl --kubeconfig {} --cache-dir {} get {} -A -o json 2>/dev/null", kubeconfig_, dir.file("kubectl-cache"),
                             resource));
    rapidjson::Document d;
    if (r.status != 0 || d.Parse(r.output.c_str()).HasParseError() || !d.IsObject() || !d.HasMember("items")) return;
    for (const auto& o : d["items"].GetArray()) fn(o);
  }

  // Every bound pod is Running.
  bool all_running() {
    bool ok = true;
    for_each("pods", [&](const rapidjson::Value& p) {
      if (!kubesim::json_string(p, {"spec", "nodeName"}).empty()) ok = ok && kubesim::json_string(p, {"status", "phase"}) == "Running";
    });
    return ok;
  }
  std::vector<std::string> taints(const std::string& node) {
    std::vector<std::string> out;
    for_each("nodes", [&](const rapidjson::Value& n) {
      if (kubesim::json_string(n, {"metadata", "name"}) != node) return;
      if (const auto* t = kubesim::json_path(n, {"spec", "taints"}))
        for (const auto& x : t->GetArray()) out.push_back(std::string(kubesim::json_string(x, {"key"})));
    });
    return out;
  }
  bool draining(const std::string& node) {
    auto t = taints(node);
    return std::find(t.begin(), t.end(), "spotshift.io/draining") != t.end();
  }
  bool any_draining() {
    bool any = false;
    for_each("nodes", [&](const rapidjson::Value& n) {
      if (const auto* t = kubesim::json_path(n, {"spec", "taints"}))
        for (const auto& x : t->GetArray()) any = any || kubesim::json_string(x, {"key"}) == "spotshift.io/draining";
    });
    return any;
  }
  // Live (not terminating) pods by node: "ns/name" -> node.
  std::map<std::string, std::string> pods() {
    std::map<std::string, std::string> out;
    for_each("pods", [&](const rapidjson::Value& p) {
      if (!kubesim::json_path(p, {"metadata", "deletionTimestamp"}))
        out[key(p)] = std::string(kubesim::json_string(p, {"spec", "nodeName"}));
    });
    return out;
  }
  std::string status(const std::string& policy, std::initializer_list<std::string_view> path) {
    std::string out;
    for_each("reschedulepolicies", [&](const rapidjson::Value& p) {
      if (kubesim::json_string(p, {"metadata", "name"}) != policy) return;
      const auto* v = kubesim::json_path(p, {"status"});
      for (auto part : path) v = v ? kubesim::json_member(*v, part) : nullptr;
      if (v) out = v->IsString() ? std::string(v->GetString()) : kubesim::to_json(*v);
    });
    return out;
  }
  std::string condition(const std::string& policy, const std::string& type, const char* field = "status") {
    std::string out;
    for_each("reschedulepolicies", [&](const rapidjson::Value& p) {
      if (kubesim::json_string(p, {"metadata", "name"}) != policy) return;
      if (const auto* conds = kubesim::json_path(p, {"status", "conditions"}))
        for (const auto& cond : conds->GetArray())
          if (kubesim::json_string(cond, {"type"}) == type) out = std::string(kubesim::json_string(cond, {field}));
    });
    return out;
  }
  // Events with this reason: "Kind/name: message".
  std::vector<std::string> events(const std::string& reason) {
    std::vector<std::string> out;
    for_each("events", [&](const rapidjson::Value& e) {
      if (kubesim::json_string(e, {"reason"}) == reason)
        out.push_back(fmt::format("{}/{}: {}", kubesim::json_string(e, {"involvedObject", "kind"}),
                                  kubesim::json_string(e, {"involvedObject", "name"}), kubesim::json_string(e, {"message"})));
    });
    return out;
  }
  // Requests spotshift made: "METHOD path code".
  std::vector<std::string> operator_requests(const std::string& part) { return requests("spotshift/", part); }
  // Requests of clients whose user agent starts with agent (kubectl's is "kubectl/..."): "METHOD path code".
  std::vector<std::string> requests(const std::string& agent_prefix, const std::string& part) {
    std::vector<std::string> out;
    auto add = [&](const std::string& method, const std::string& path, const std::string& agent, int code) {
      if (agent.starts_with(agent_prefix) && (method + " " + path).find(part) != std::string::npos)
        out.push_back(fmt::format("{} {} {}", method, path, code));
    };
    if (sim)
      for (const auto& a : sim->audit()) add(a.method, a.path, a.user_agent, a.code);
    else
      for (const auto& a : real->audit()) add(a.method, a.path, a.user_agent, a.code);
    return out;
  }
  std::string lease_holder() {
    std::string h;
    for_each("leases", [&](const rapidjson::Value& l) {
      if (key(l) == "default/spotshift") h = std::string(kubesim::json_string(l, {"spec", "holderIdentity"}));
    });
    return h;
  }
  static std::string key(const rapidjson::Value& o) {
    return fmt::format("{}/{}", kubesim::json_string(o, {"metadata", "namespace"}), kubesim::json_string(o, {"metadata", "name"}));
  }

  // kubesim's own controls (fault injection, its store, its audit log): a scenario that needs
  // them runs on kubesim only, and on the real control plane fails saying so instead of crashing.
  kubesim::Simulator& kubesim() {
    if (!sim)
      FAIL(
          "this scenario drives kubesim's own controls (fault injection, its store), which the real control plane does not "
          "have: it runs on kubesim only (leave it out of the real backend's list in tests/e2e/meson.build)");
    return *sim;
  }

  TempDir dir;
  spotshift::testing::RealCluster* real = nullptr;  // the process's control plane, on the real backend

 private:
  std::unique_ptr<kubesim::Simulator> sim;  // on kubesim: kubesim() outside
  std::string kubeconfig_;
};

// Samples the web workload's ready, live pods while a test runs: the budget says at least 4.
class BudgetWatch {
 public:
  explicit BudgetWatch(Env& env) : env_(env), thread_([this] { loop(); }) {}
  ~BudgetWatch() {
    stop_ = true;
    thread_.join();
  }
  int min_ready() const { return min_; }

 private:
  void loop() {
    while (!stop_) {
      int ready = 0;
      env_.for_each("pods", [&](const rapidjson::Value& p) {
        if (!Env::key(p).starts_with("shop/web-") || kubesim::json_path(p, {"metadata", "deletionTimestamp"})) return;
        if (const auto* conds = kubesim::json_path(p, {"status", "conditions"}))
          for (const auto& cond : conds->GetArray())
            if (kubesim::json_string(cond, {"type"}) == "Ready" && kubesim::json_string(cond, {"status"}) == "True") ++ready;
      });
      min_ = std::min(min_.load(), ready);
      std::this_thread::sleep_for(5ms);
    }
  }
  Env& env_;
  std::atomic<bool> stop_{false};
  std::atomic<int> min_{1000};
  std::thread thread_;
};

}  // namespace spotshift::e2e
