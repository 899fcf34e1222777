// The whole story on kubesim: the spotshift binary, the CRD and policies applied with kubectl, and
// the cluster watched from the simulator's side.

#include "core/strings.hpp"
#include "simulator.hpp"
#include "support/catch.hpp"
#include "support/process.hpp"

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

using namespace spotshift;
using namespace std::chrono_literals;
using spotshift::testing::eventually;
using spotshift::testing::run;
using spotshift::testing::shell_quote;
using spotshift::testing::TempDir;

namespace {

const std::string kSource = SOURCE_ROOT;

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string policy_yaml(const std::string& name, const std::string& extra_spec, const std::string& delay = "3s") {
  return fmt::format(R"(apiVersion: spotshift.io/v1alpha1
kind: ReschedulePolicy
metadata:
  name: {}
spec:
  nodeDrainDelay: {}
  podEvictionTimeout: 20s
{})",
                     name, delay, extra_spec.find("maxGracefulTermination") == std::string::npos ? "  maxGracefulTermination: 20s\n" + extra_spec : extra_spec);
}

class Operator {
 public:
  Operator(const std::string& kubeconfig, const std::string& log, const std::string& extra) : log_(log) {
    auto r = run(fmt::format("{} run --kubeconfig {} --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 {} >{} 2>&1 "
                             "& echo $!",
                             SPOTSHIFT_BIN, shell_quote(kubeconfig), extra, shell_quote(log)));
    pid_ = std::string(trim(r.output));
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
    return run(fmt::format("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{}; printf \"GET /metrics HTTP/1.0\\r\\n\\r\\n\" >&3; cat <&3'", m[1].str()))
        .output;
  }

 private:
  std::string pid_, log_;
};

class Env {
 public:
  explicit Env(std::string extra_scenario = {}) {
    spotshift::testing::require_tool("kubectl");
    kubesim::SimulatorOptions o;
    o.scenario_text = read_all(kSource + "/tests/kubesim/scenarios/demo.yaml") + extra_scenario;
    o.cluster.kubelet_start_delay = 200ms;
    o.cluster.termination_cap = 500ms;
    sim = std::make_unique<kubesim::Simulator>(o);
    REQUIRE(sim->start());
    REQUIRE(sim->write_kubeconfig(dir.file("kubeconfig")));
    kubectl("apply -f " + kSource + "/crds/reschedulepolicies.spotshift.io.yaml");
    REQUIRE(eventually([&] { return all_running(); }, 20s));
  }

  std::string kubectl(const std::string& args, bool must_succeed = true) {
    auto r = run(fmt::format("kubectl --kubeconfig {} {} 2>&1", dir.file("kubeconfig"), args));
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
    return std::make_unique<Operator>(dir.file("kubeconfig"), dir.file(name + ".log"), extra);
  }

  // Every bound pod is Running.
  bool all_running() {
    bool ok = true;
    sim->run([&](kubesim::Cluster& c) {
      for (const auto& [k, p] : c.store().objects(*c.registry().pods()))
        if (!kubesim::get_str(p->doc, {"spec", "nodeName"}).empty())
          ok = ok && kubesim::get_str(p->doc, {"status", "phase"}) == "Running";
    });
    return ok;
  }
  std::vector<std::string> taints(const std::string& node) {
    std::vector<std::string> out;
    sim->run([&](kubesim::Cluster& c) {
      auto n = c.store().get(*c.registry().nodes(), node);
      if (const auto* t = n ? kubesim::get_path(n->doc, {"spec", "taints"}) : nullptr)
        for (const auto& x : t->GetArray()) out.push_back(std::string(kubesim::get_str(x, {"key"})));
    });
    return out;
  }
  bool draining(const std::string& node) {
    auto t = taints(node);
    return std::find(t.begin(), t.end(), "spotshift.io/draining") != t.end();
  }
  bool any_draining() {
    for (auto n : {"ondemand-1", "ondemand-2", "ondemand-3", "ondemand-4", "spot-1", "spot-2"})
      if (draining(n)) return true;
    return false;
  }
  // Live (not terminating) pods by node: "ns/name" -> node.
  std::map<std::string, std::string> pods() {
    std::map<std::string, std::string> out;
    sim->run([&](kubesim::Cluster& c) {
      for (const auto& [k, p] : c.store().objects(*c.registry().pods()))
        if (!kubesim::get_path(p->doc, {"metadata", "deletionTimestamp"})) out[k] = std::string(kubesim::get_str(p->doc, {"spec", "nodeName"}));
    });
    return out;
  }
  std::string status(const std::string& policy, std::initializer_list<std::string_view> path) {
    std::string out;
    sim->run([&](kubesim::Cluster& c) {
      const auto* rt = c.registry().find("spotshift.io", "v1alpha1", "reschedulepolicies");
      auto p = rt ? c.store().get(*rt, policy) : nullptr;
      if (!p) return;
      const auto* v = kubesim::get_path(p->doc, {"status"});
      for (auto part : path) v = v ? kubesim::field(*v, part) : nullptr;
      if (v) out = v->IsString() ? std::string(v->GetString()) : kubesim::to_json(*v);
    });
    return out;
  }
  std::string condition(const std::string& policy, const std::string& type, const char* field = "status") {
    std::string out;
    sim->run([&](kubesim::Cluster& c) {
      const auto* rt = c.registry().find("spotshift.io", "v1alpha1", "reschedulepolicies");
      auto p = rt ? c.store().get(*rt, policy) : nullptr;
      const auto* conds = p ? kubesim::get_path(p->doc, {"status", "conditions"}) : nullptr;
      if (!conds) return;
      for (const auto& cond : conds->GetArray())
        if (kubesim::get_str(cond, {"type"}) == type) out = std::string(kubesim::get_str(cond, {field}));
    });
    return out;
  }
  // Events with this reason: "Kind/name: message".
  std::vector<std::string> events(const std::string& reason) {
    std::vector<std::string> out;
    sim->run([&](kubesim::Cluster& c) {
      for (const auto& [k, e] : c.store().objects(*c.registry().events()))
        if (kubesim::get_str(e->doc, {"reason"}) == reason)
          out.push_back(fmt::format("{}/{}: {}", kubesim::get_str(e->doc, {"involvedObject", "kind"}),
                                    kubesim::get_str(e->doc, {"involvedObject", "name"}), kubesim::get_str(e->doc, {"message"})));
    });
    return out;
  }
  // Requests spotshift made: "METHOD path code".
  std::vector<std::string> operator_requests(const std::string& part) {
    std::vector<std::string> out;
    for (const auto& a : sim->audit())
      if (a.user_agent.starts_with("spotshift/") && (a.method + " " + a.path).find(part) != std::string::npos)
        out.push_back(fmt::format("{} {} {}", a.method, a.path, a.code));
    return out;
  }
  std::string lease_holder() {
    std::string h;
    sim->run([&](kubesim::Cluster& c) {
      if (auto l = c.store().get(*c.registry().leases(), "default/spotshift"))
        h = std::string(kubesim::get_str(l->doc, {"spec", "holderIdentity"}));
    });
    return h;
  }

  TempDir dir;
  std::unique_ptr<kubesim::Simulator> sim;
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
      env_.sim->run([&](kubesim::Cluster& c) {
        for (const auto& [k, p] : c.store().objects(*c.registry().pods())) {
          if (!k.starts_with("shop/web-") || kubesim::get_path(p->doc, {"metadata", "deletionTimestamp"})) continue;
          if (const auto* conds = kubesim::get_path(p->doc, {"status", "conditions"}))
            for (const auto& cond : conds->GetArray())
              if (kubesim::get_str(cond, {"type"}) == "Ready" && kubesim::get_str(cond, {"status"}) == "True") ++ready;
        }
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

  std::string metrics = op->metrics();
  CHECK(metrics.find(R"(spotshift_drains_total{policy="default",result="succeeded"} 2)") != std::string::npos);
  CHECK(metrics.find(R"(spotshift_evictions_total{policy="default",result="evicted"} 5)") != std::string::npos);
  CHECK(metrics.find(R"(spotshift_nodes{policy="default",class="on_demand"})") != std::string::npos);
  CHECK(metrics.find("spotshift_build_info") != std::string::npos);
  CHECK(metrics.find("spotshift_plan_duration_seconds_count") != std::string::npos);

  op->stop(SIGTERM);
  CHECK(op->log().find("stopped exitCode=0") != std::string::npos);
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

TEST_CASE("dry-run plans and reports without touching nodes or pods", "[e2e]") {
  Env env;
  auto before = env.pods();
  env.apply("policy", policy_yaml("default", "  dryRun: true\n"));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return !env.events("WouldDrain").empty(); }, 20s));
  CHECK(env.events("WouldDrain")[0] == "Node/ondemand-1: Policy default would drain ondemand-1 now (2 pods fit on spot nodes); dryRun is true, so nothing is touched");
  REQUIRE(eventually([&] { return env.condition("default", "Blocked", "reason") == "DryRun"; }, 10s));
  CHECK(env.status("default", {"drainableNodes"}) == "2");
  std::this_thread::sleep_for(2s);
  CHECK(env.operator_requests("PATCH /api/v1/nodes").empty());
  CHECK(env.operator_requests("/eviction").empty());
  CHECK(env.pods() == before);
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
  std::this_thread::sleep_for(2s);
  CHECK(env.operator_requests("/eviction").empty());
  env.kubectl("delete pod huge -n shop --wait=false");
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "ondemand-1"; }, 20s));
}

TEST_CASE("an invalid policy is reported while a valid one keeps working; overlapping policies do not drain shared nodes", "[e2e]") {
  Env env;
  env.apply("bad", policy_yaml("bad", R"(  onDemandNodeSelector: {matchLabels: {kubernetes.io/hostname: ondemand-1}}
  profile:
    scores: [{name: FreeCPU, weight: 1, args: {order: most}}]
)"));
  env.apply("narrow", policy_yaml("narrow", R"(  onDemandNodeSelector: {matchLabels: {kubernetes.io/hostname: ondemand-2}}
)"));
  env.apply("default", policy_yaml("default", ""));
  auto op = env.start("operator");
  REQUIRE(eventually([&] { return env.condition("bad", "Valid") == "False"; }, 20s));
  CHECK(env.condition("bad", "Valid", "message") ==
        "decoding ReschedulePolicy \"bad\": spec.profile.scores[0]: score plugin FreeCPU: args.order must be fullest or emptiest, got \"most\"");
  REQUIRE(eventually([&] { return !env.events("PolicyInvalid").empty(); }, 10s));
  CHECK(env.events("PolicyInvalid")[0].starts_with("ReschedulePolicy/bad: The policy is not applied until its spec is fixed"));

  // default drains ondemand-1; ondemand-2 is also selected by narrow, so neither drains it.
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "node"}) == "ondemand-1"; }, 30s));
  std::this_thread::sleep_for(4s);  // past the drain delay
  CHECK(env.status("default", {"nodesDrainedTotal"}) == "1");
  CHECK(env.status("narrow", {"nodesDrainedTotal"}) == "0");
  CHECK(env.status("default", {"undrainableNodes"}).find("also selected as on-demand by policy narrow") != std::string::npos);
  CHECK(env.status("narrow", {"undrainableNodes"}).find("also selected as on-demand by policy default") != std::string::npos);
  CHECK_FALSE(env.draining("ondemand-2"));

  // Fixing the bad policy makes it valid.
  env.apply("bad", policy_yaml("bad", "  onDemandNodeSelector: {matchLabels: {kubernetes.io/hostname: ondemand-1}}\n"));
  REQUIRE(eventually([&] { return env.condition("bad", "Valid") == "True"; }, 20s));
}

namespace {
// ondemand-1's web pod never finishes terminating: a drain of it hangs until maxGracefulTermination.
const std::string kStuckPolicy = R"(  maxGracefulTermination: 60s
)";
void make_stuck(Env& env) {
  env.kubectl("annotate pod -n shop web-7d4b9c-x1a2b kubesim.spotshift.io/never-terminate=true");
}
}  // namespace

TEST_CASE("the operator killed mid-drain comes back, removes its taint and keeps the gate", "[e2e]") {
  Env env;
  make_stuck(env);
  env.apply("policy", policy_yaml("default", kStuckPolicy, "30s"));
  auto op = env.start("first");
  REQUIRE(eventually([&] { return env.draining("ondemand-1"); }, 20s));
  REQUIRE(eventually([&] { return !env.status("default", {"currentDrain", "node"}).empty(); }, 10s));
  std::this_thread::sleep_for(500ms);
  op->stop(SIGKILL);
  CHECK(env.draining("ondemand-1"));  // left behind by the crash

  auto restarted_at = std::chrono::system_clock::now();
  auto again = env.start("second");
  REQUIRE(eventually([&] { return !env.draining("ondemand-1"); }, 20s));
  REQUIRE(eventually([&] { return env.status("default", {"lastDrain", "result"}) == "Aborted"; }, 20s));
  CHECK(env.status("default", {"lastDrain", "reason"}).find("interrupted") != std::string::npos);
  CHECK(env.status("default", {"currentDrain"}).empty());
  // The gate stays closed for nodeDrainDelay from the restart: nothing else drains meanwhile.
  auto next = parse_time(env.status("default", {"nextDrainAfter"})).value();
  CHECK(next >= std::chrono::time_point_cast<std::chrono::seconds>(restarted_at) + 29s);
  std::this_thread::sleep_for(3s);
  CHECK_FALSE(env.any_draining());
  CHECK(env.condition("default", "Blocked", "reason") == "DrainDelay");
  CHECK(!env.events("DrainAborted").empty());
  again->stop(SIGTERM);
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
  std::this_thread::sleep_for(3s);
  // One drain was started, by the first leader; the second neither resumed it nor started another.
  auto started = env.events("DrainStarted");
  CHECK(std::count_if(started.begin(), started.end(), [](const std::string& e) { return e.starts_with("Node/"); }) == 1);
  std::multiset<std::string> evicted;
  for (const auto& r : env.operator_requests("/eviction")) evicted.insert(r.substr(0, r.rfind(' ')));
  for (const auto& e : evicted) CHECK(evicted.count(e) == 1);
  CHECK_FALSE(env.any_draining());
  CHECK(follower->log().find("removed the taint of an interrupted drain") != std::string::npos);
  follower->stop(SIGTERM);
}
