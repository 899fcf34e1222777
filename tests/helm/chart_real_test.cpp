// The chart with real Helm on the real control plane (SPOTSHIFT_E2E_BACKEND=real): helm lint and
// template, helm install, the operator running as the chart's ServiceAccount with a token from the
// TokenRequest API (so the real RBAC authorizer decides what it may do), helm upgrade and helm
// uninstall.

#include "chart.hpp"

#include "core/strings.hpp"

#include <map>
#include <regex>
#include <set>

using namespace spotshift;
using namespace spotshift::chart;
using namespace spotshift::e2e;

namespace {

const std::string kUser = "system:serviceaccount:spotshift:spotshift";

std::string helm(Env& env, const std::string& args, bool must_succeed = true) {
  auto r = run(fmt::format("{} --kubeconfig {} {} 2>&1", testing::RealCluster::tool("helm"), env.kubeconfig(), args));
  if (must_succeed) {
    INFO("helm " << args << "\n" << r.output);
    REQUIRE(r.status == 0);
  }
  return r.output;
}

// Helm's own rendering, read back as objects.
Rendered helm_template(Env& env, const std::string& args) {
  Rendered r;
  std::string out = env.dir.file("helm-template.yaml");
  r.status = run(fmt::format("{} template {} > {} 2>{}", testing::RealCluster::tool("helm"), args, out, out + ".err")).status;
  r.text = read_all(out);
  r.error = read_all(out + ".err");
  INFO(r.error);
  REQUIRE(r.status == 0);
  auto docs = model::parse_yaml_documents(r.text);
  REQUIRE(docs);
  r.docs = std::move(*docs);
  return r;
}

std::multiset<std::string> as_json(const Rendered& r) {
  std::multiset<std::string> out;
  for (const auto& d : r.docs) out.insert(kubesim::to_json(d));
  return out;
}

// Requests of the chart's ServiceAccount the real authorizer refused: "verb resource".
std::vector<std::string> forbidden(Env& env) {
  std::vector<std::string> out;
  for (const auto& a : env.real->audit())
    if (a.user == kUser && a.code == 403) out.push_back(fmt::format("{} {}", a.verb, a.resource));
  return out;
}

// What the chart's service account may do, as the authorizer answers kubectl auth can-i: "yes\n"
// or "no\n".
std::string service_account_can(Env& env, const std::string& what) {
  // The answer is the last line (a cluster-scoped resource gets a warning first).
  std::string out = run(fmt::format("kubectl --kubeconfig {} auth can-i --as {} {} 2>/dev/null", env.kubeconfig(), kUser, what)).output;
  out = out.substr(0, out.find_last_not_of('\n') + 1);
  return out.substr(out.find_last_of('\n') + 1) + "\n";
}

// The same question for one permission of the chart's roles (a Role's in the release namespace).
std::string service_account_can(Env& env, const Atom& atom) {
  const size_t slash = atom.resource.find('/');
  std::string what = fmt::format("{} {}{}", atom.verb, atom.resource.substr(0, slash), atom.group.empty() ? "" : "." + atom.group);
  if (slash != std::string::npos) what += " --subresource " + atom.resource.substr(slash + 1);
  return service_account_can(env, what + (atom.role_kind == "Role" ? " -n spotshift" : " -A"));
}

// The operator's pods on ondemand-3, never drainable in the demo, as the install guide suggests.
std::string values_file(Env& env) {
  env.dir.write("values.yaml", "nodeSelector: {kubernetes.io/hostname: ondemand-3}\n");
  return env.dir.file("values.yaml");
}

EnvOptions demo_without_crd() {
  EnvOptions o;
  o.apply_crd = false;
  return o;
}

}  // namespace

TEST_CASE("helm lint passes and helm template renders what the tests' renderer renders", "[helm-real]") {
  REQUIRE(testing::real_backend());
  Env env({}, demo_without_crd());
  CHECK(helm(env, "lint " + kChart).find("1 chart(s) linted, 0 chart(s) failed") != std::string::npos);
  CHECK(helm(env, "lint " + kChart + " --set replicaCount=3 --set podDisruptionBudget.enabled=true").find("0 chart(s) failed") !=
        std::string::npos);
  const std::string args = "--namespace spotshift --include-crds -f " + values_file(env);
  Rendered helm_r = helm_template(env, "spotshift " + kChart + " " + args);
  Rendered ours = render(env.dir, "--name spotshift " + args);
  REQUIRE(ours.status == 0);
  CHECK(helm_r.kinds().size() == ours.kinds().size());
  CHECK(as_json(helm_r) == as_json(ours));
  // values.schema.json: Helm refuses a misspelt key, a wrong type, a value outside its range or enum.
  for (const auto& [set, message] : std::vector<std::pair<std::string, std::string>>{
           {"--set replicaCont=3", "additional properties 'replicaCont' not allowed"},
           {"--set-string replicaCount=two", "at '/replicaCount': got string, want integer"},
           {"--set workers=0", "at '/workers': minimum: got 0, want 1"},
           {"--set log.format=xml", "at '/log/format': value must be one of 'text', 'json'"},
           {"--set image.digest=latest", "at '/image/digest'"},
       }) {
    INFO(set);
    std::string refused = helm(env, "template spotshift " + kChart + " " + set, false);
    CHECK(refused.find("values don't meet the specifications of the schema") != std::string::npos);
    CHECK(refused.find(message) != std::string::npos);
  }
  CHECK(helm(env, "lint " + std::string(SOURCE_ROOT) + "/charts/spotshift-crds").find("0 chart(s) failed") != std::string::npos);
  // A value the chart refuses fails helm too, with the chart's message.
  std::string bad = helm(env, "template spotshift " + kChart + " --set replicaCount=2 --set leaderElection.enabled=false", false);
  CHECK(bad.find("leaderElection") != std::string::npos);
}

TEST_CASE("helm install, the operator as the chart's ServiceAccount, helm upgrade and helm uninstall on a real cluster", "[helm-real]") {
  REQUIRE(testing::real_backend());
  Env env({}, demo_without_crd());
  const std::string values = "--namespace spotshift -f " + values_file(env);
  std::string installed = helm(env, "install spotshift " + kChart + " --create-namespace " + values);
  CHECK(installed.find("STATUS: deployed") != std::string::npos);
  env.kubectl("wait --for condition=Established --timeout 30s crd/reschedulepolicies.spotshift.io");
  const std::string crd_version = env.kubectl("get crd reschedulepolicies.spotshift.io -o jsonpath={.metadata.resourceVersion}");
  // The Deployment's pods run on the fake node the values name.
  REQUIRE(
      eventually([&] { return env.kubectl("get deploy -n spotshift spotshift -o jsonpath={.status.readyReplicas}") == "2"; }, 60s, 500ms));

  // The operator as the Deployment runs it, with a token the TokenRequest API issued for the
  // chart's ServiceAccount.
  std::string token = env.kubectl("create token spotshift -n spotshift --duration 1h");
  token = token.substr(0, token.find_last_not_of("\n") + 1);
  std::string kubeconfig = env.real->kubeconfig_with_token(env.dir.file("sa.kubeconfig"), token);
  Rendered r = helm_template(env, "spotshift " + kChart + " " + values);
  std::string args = operator_args(r, kubeconfig);
  env.apply("policy", policy_yaml("default", ""));
  auto a = std::make_unique<Operator>(args, env.dir.file("a.log"));
  auto b = std::make_unique<Operator>(args, env.dir.file("b.log"));
  INFO(a->log() << "\n---\n" << b->log());
  REQUIRE(eventually([&] { return env.status("default", {"nodesDrainedTotal"}) == "2"; }, 90s, 200ms));
  CHECK(env.status("default", {"lastDrain", "result"}) == "Succeeded");
  CHECK_FALSE(env.any_draining());
  size_t requests = 0;
  for (const auto& rec : env.real->audit()) requests += rec.user == kUser ? 1 : 0;
  CHECK(requests > 20);
  CHECK(forbidden(env).empty());
  CHECK_FALSE(env.kubectl("get lease -n spotshift spotshift -o jsonpath={.spec.holderIdentity}").empty());
  auto can_i = [&](const std::string& what) { return service_account_can(env, what); };
  CHECK(can_i("create pods --subresource eviction -A") == "yes\n");
  CHECK(can_i("patch nodes") == "yes\n");
  CHECK(can_i("delete pods -A") == "no\n");
  CHECK(can_i("update reschedulepolicies.spotshift.io --subresource status") == "yes\n");
  CHECK(can_i("get secrets -A") == "no\n");
  a->stop(SIGTERM);
  b->stop(SIGTERM);
  CHECK(a->exit_status() == 0);
  CHECK(b->exit_status() == 0);

  // An upgrade with changed values: a new revision, the Deployment changed, the CRD untouched.
  helm(env, "upgrade spotshift " + kChart + " " + values + " --set log.format=text --set replicaCount=1");
  CHECK(env.kubectl("get deploy -n spotshift spotshift -o jsonpath={.spec.replicas}") == "1");
  std::string history = helm(env, "history spotshift -n spotshift");
  INFO(history);
  CHECK(history.find("Upgrade complete") != std::string::npos);
  CHECK(env.kubectl("get crd reschedulepolicies.spotshift.io -o jsonpath={.metadata.resourceVersion}") == crd_version);

  // Uninstalling leaves the CRD (and so every policy) and nothing else of the release (the
  // garbage collector removes the Deployment's pods after it).
  helm(env, "uninstall spotshift -n spotshift --wait");
  CHECK(env.kubectl("get crd reschedulepolicies.spotshift.io -o name") ==
        "customresourcedefinition.apiextensions.k8s.io/reschedulepolicies.spotshift.io\n");
  CHECK(env.kubectl("get rsp -o name") == "reschedulepolicy.spotshift.io/default\n");
  std::string left;
  eventually(
      [&] {
        left = env.kubectl("get deploy,rs,pods,sa,svc,role,rolebinding,pdb -n spotshift -l app.kubernetes.io/instance=spotshift -o name");
        left += env.kubectl("get clusterrole,clusterrolebinding -l app.kubernetes.io/instance=spotshift -o name");
        return left.empty();
      },
      30s, 500ms);
  INFO(left);
  CHECK(left.empty());
}

namespace {

// The demo cluster again under other names (nodes COPY-ondemand-N and COPY-spot-N, namespace
// shop-COPY), without its DaemonSet (one per cluster): each atom gets a cluster of its own on the
// one control plane, and a policy that selects only its nodes.
std::string demo_copy(const std::string& copy) {
  std::string demo = read_all(kSource + "/tests/kubesim/scenarios/demo.yaml");
  std::string out;
  size_t start = 0;
  while (start < demo.size()) {
    size_t end = demo.find("\n---\n", start);
    std::string doc = demo.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? demo.size() : end + 5;
    if (doc.find("kind: DaemonSet") != std::string::npos) continue;
    doc = std::regex_replace(doc, std::regex(R"(\b(ondemand|spot)-([0-9]))"), copy + "-$1-$2");
    doc = std::regex_replace(doc, std::regex(R"((namespace|name): shop\b)"), "$1: shop-" + copy);
    out += "---\n" + doc + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("every permission the chart grants is needed on the real RBAC authorizer: taking one away gets a request refused",
          "[helm-real]") {
  REQUIRE(testing::real_backend());
  EnvOptions empty;
  empty.demo = false;
  empty.apply_crd = false;
  Env env({}, empty);
  // The operator runs below as a process with the chart's ServiceAccount. The Deployment's pods
  // would only be scheduled onto some copy's nodes and change what that copy can drain.
  helm(env, "install spotshift " + kChart + " --create-namespace --namespace spotshift --set replicaCount=0");
  env.kubectl("wait --for condition=Established --timeout 30s crd/reschedulepolicies.spotshift.io");
  Rendered r = helm_template(env, "spotshift " + kChart + " --namespace spotshift --set replicaCount=0");
  std::vector<Atom> atoms = atoms_of(operator_role(r, "ClusterRole"));
  auto lease_atoms = atoms_of(operator_role(r, "Role"));
  atoms.insert(atoms.end(), lease_atoms.begin(), lease_atoms.end());
  REQUIRE(atoms.size() == 31);
  // The policies take their prices from a ConfigMap in the release namespace (the Role's get).
  env.kubectl("create configmap node-prices -n spotshift --from-literal=m5.large=0.1");
  std::string token = env.kubectl("create token spotshift -n spotshift --duration 1h");
  token = token.substr(0, token.find_last_not_of("\n") + 1);
  std::string args = operator_args(r, env.real->kubeconfig_with_token(env.dir.file("sa.kubeconfig"), token));

  std::vector<std::string> unused;
  for (size_t i = 0; i < atoms.size(); ++i) {
    const Atom& atom = atoms[i];
    INFO(atom.text());
    const std::string copy = fmt::format("a{}", i);
    env.dir.write(copy + ".yaml", demo_copy(copy));
    auto loaded = run(fmt::format("{}/scripts/realkube.sh load {} {} 2>&1", kSource, env.real->dir(), env.dir.file(copy + ".yaml")));
    INFO(loaded.output);
    REQUIRE(loaded.status == 0);
    env.kubectl(fmt::format(
        "label node {0}-ondemand-1 {0}-ondemand-2 {0}-ondemand-3 {0}-ondemand-4 {0}-spot-1 {0}-spot-2 spotshift.io/copy={0}", copy));
    REQUIRE(eventually([&] { return env.all_running(); }, 30s, 200ms));
    env.dir.write("role.json", role_without(operator_role(r, atom.role_kind), atom));
    env.kubectl("apply -f " + env.dir.file("role.json"));
    // The authorizer reads roles from its own cache: the operator starts once it has the change.
    REQUIRE(eventually([&] { return service_account_can(env, atom) == "no\n"; }, 30s, 100ms));
    env.apply(
        copy + "-policy",
        policy_yaml(copy,
                    fmt::format(R"(  onDemandNodeSelector: {{matchLabels: {{node-role.kubernetes.io/worker: "", spotshift.io/copy: {0}}}}}
  spotNodeSelector: {{matchLabels: {{node-role.kubernetes.io/spot-worker: "", spotshift.io/copy: {0}}}}}
  pricing: {{configMap: {{namespace: spotshift, name: node-prices}}}}
)",
                                copy)));
    const size_t seen = env.real->audit().size();
    Operator op(args, env.dir.file(copy + ".log"));
    if (atom.resource == "events" && atom.verb == "patch") {
      // A repeated event becomes a series with a patch: have a node's reason reported again.
      REQUIRE(eventually(
          [&] {
            for (const auto& e : env.events("NodeNotDrainable"))
              if (e.starts_with(fmt::format("Node/{}-ondemand-4", copy))) return true;
            return false;
          },
          30s));
      env.kubectl(fmt::format(R"(patch pdb web-pdb -n shop-{} --type merge -p '{{"spec":{{"minAvailable":6}}}}')", copy));
    }
    const std::string want = fmt::format("{} {}", atom.verb, atom.resource);
    bool refused = eventually(
        [&] {
          auto records = env.real->audit();
          for (size_t k = seen; k < records.size(); ++k)
            if (records[k].user == kUser && records[k].code == 403 && fmt::format("{} {}", records[k].verb, records[k].resource) == want)
              return true;
          return false;
        },
        90s, 100ms);
    if (!refused)
      unused.push_back(fmt::format("{}\nthe policy's status: {}\nthe operator's log:\n{}", atom.text(),
                                   env.kubectl("get rsp " + copy + " -o jsonpath={.status}"), op.log()));
    op.stop(SIGKILL);
    // The next operator takes the Lease at once, and this copy's policy stops.
    env.kubectl("delete lease -n spotshift spotshift --ignore-not-found");
    env.kubectl("delete rsp " + copy);
    env.dir.write("role.json", kubesim::to_json(operator_role(r, atom.role_kind)));
    env.kubectl("apply -f " + env.dir.file("role.json"));
    REQUIRE(eventually([&] { return service_account_can(env, atom) == "yes\n"; }, 30s, 100ms));
  }
  INFO("permissions the operator never needed:\n" << fmt::format("{}", fmt::join(unused, "\n\n")));
  CHECK(unused.empty());
}

namespace {

// One promtool alert_rule_test case: the alert expected at eval_time with these labels (none
// expected when labels is empty), its annotations taken from the rule with $labels filled in.
struct AlertCase {
  std::string alert, eval_time;
  std::map<std::string, std::string> labels;
};

std::string expected_alert(const kubesim::Value& rule, const AlertCase& c) {
  std::string out = fmt::format("      - eval_time: {}\n        alertname: {}\n        exp_alerts:", c.eval_time, c.alert);
  if (c.labels.empty()) return out + " []\n";
  out += "\n          - exp_labels:\n";
  for (const auto& [k, v] : c.labels) out += fmt::format("              {}: {}\n", k, json_quote(v));
  out += "            exp_annotations:\n";
  for (const auto& a : rule["annotations"].GetObject()) {
    std::string text = a.value.GetString();
    for (const auto& [k, v] : c.labels) {
      const std::string var = "{{ $labels." + k + " }}";
      for (size_t at; (at = text.find(var)) != std::string::npos;) text.replace(at, var.size(), v);
    }
    out += fmt::format("              {}: {}\n", a.name.GetString(), json_quote(text));
  }
  return out;
}

}  // namespace

TEST_CASE("the PrometheusRule's alerts fire on the conditions they name, and only then (promtool)", "[helm-real]") {
  TempDir dir;
  auto rendered =
      run(fmt::format("{} template spotshift {} --namespace ops --set metrics.prometheusRule.enabled=true "
                      "--set metrics.prometheusRule.alertLabels.team=platform --show-only templates/prometheusrule.yaml",
                      testing::RealCluster::tool("helm"), kChart));
  INFO(rendered.output);
  REQUIRE(rendered.status == 0);
  auto rule = model::parse_yaml(rendered.output);
  REQUIRE(rule);
  const auto& spec = (*rule)["spec"];
  dir.write("rules.yaml", kubesim::to_json(spec));
  auto check = run(fmt::format("{} check rules {} 2>&1", testing::RealCluster::tool("promtool"), dir.file("rules.yaml")));
  INFO(check.output);
  CHECK(check.status == 0);
  std::map<std::string, const kubesim::Value*> rules;
  for (const auto& r : spec["groups"][0]["rules"].GetArray()) rules[r["alert"].GetString()] = &r;
  REQUIRE(rules.size() == 5);

  // Each alert: a group of series where its condition holds (it fires, with these labels) and one
  // where it does not. Series carry the namespace label a ServiceMonitor adds.
  struct Group {
    std::string series;
    std::vector<AlertCase> cases;
  };
  const std::map<std::string, std::string> base = {{"severity", "warning"}, {"team", "platform"}};
  auto with = [](std::map<std::string, std::string> m, std::map<std::string, std::string> more) {
    for (auto& [k, v] : more) m[k] = v;
    return m;
  };
  const auto info = with(base, {{"severity", "info"}});
  const std::vector<Group> groups = {
      // No leader: every replica reports 0, or none reports at all; one leading keeps it quiet.
      {"      - {series: 'spotshift_leader{namespace=\"ops\",pod=\"a\"}', values: '0x10'}\n"
       "      - {series: 'spotshift_leader{namespace=\"ops\",pod=\"b\"}', values: '0x10'}\n",
       {{"SpotshiftNoLeader", "4m", {}}, {"SpotshiftNoLeader", "6m", base}}},
      {"      - {series: 'spotshift_build_info{namespace=\"ops\"}', values: '1x10'}\n", {{"SpotshiftNoLeader", "6m", base}}},
      {"      - {series: 'spotshift_leader{namespace=\"ops\",pod=\"a\"}', values: '0x10'}\n"
       "      - {series: 'spotshift_leader{namespace=\"ops\",pod=\"b\"}', values: '1x10'}\n"
       "      - {series: 'spotshift_leader{namespace=\"other\",pod=\"c\"}', values: '0x10'}\n",
       {{"SpotshiftNoLeader", "6m", {}}}},
      // An invalid policy, for five minutes.
      {"      - {series: 'spotshift_policy_valid{namespace=\"ops\",policy=\"a\"}', values: '0x10'}\n"
       "      - {series: 'spotshift_policy_valid{namespace=\"ops\",policy=\"b\"}', values: '1x10'}\n",
       {{"SpotshiftPolicyInvalid", "6m", with(base, {{"namespace", "ops"}, {"policy", "a"}})}}},
      // Drains aborting: one a minute fires; one in all does not.
      {"      - {series: 'spotshift_drains_total{namespace=\"ops\",policy=\"a\",result=\"aborted\"}', values: '0+1x60'}\n"
       "      - {series: 'spotshift_drains_total{namespace=\"ops\",policy=\"b\",result=\"aborted\"}', values: '0x30 1x30'}\n"
       "      - {series: 'spotshift_drains_total{namespace=\"ops\",policy=\"b\",result=\"succeeded\"}', values: '0+1x60'}\n",
       {{"SpotshiftDrainsAborting", "30m", with(base, {{"namespace", "ops"}, {"policy", "a"}, {"result", "aborted"}})}}},
      // A drainable node, every gate open and no drain for three hours; a gate closed keeps it quiet.
      {"      - {series: 'spotshift_nodes{namespace=\"ops\",policy=\"a\",class=\"drainable\"}', values: '1x200'}\n"
       "      - {series: 'spotshift_gate_blocked{namespace=\"ops\",policy=\"a\",gate=\"DrainDelay\"}', values: '0x200'}\n"
       "      - {series: 'spotshift_drain_in_progress{namespace=\"ops\",policy=\"a\"}', values: '0x200'}\n"
       "      - {series: 'spotshift_nodes{namespace=\"ops\",policy=\"b\",class=\"drainable\"}', values: '1x200'}\n"
       "      - {series: 'spotshift_gate_blocked{namespace=\"ops\",policy=\"b\",gate=\"DrainDelay\"}', values: '1x200'}\n"
       "      - {series: 'spotshift_drain_in_progress{namespace=\"ops\",policy=\"b\"}', values: '0x200'}\n",
       {{"SpotshiftDrainableNodeIdle", "2h", {}}, {"SpotshiftDrainableNodeIdle", "3h1m", with(info, {{"policy", "a"}})}}},
      // The API server answering 429 for a quarter of an hour; answers of 200 do not count.
      {"      - {series: 'spotshift_api_requests_total{namespace=\"ops\",client=\"controller\",code=\"429\"}', values: '0+10x40'}\n"
       "      - {series: 'spotshift_api_requests_total{namespace=\"ops\",client=\"events\",code=\"200\"}', values: '0+100x40'}\n",
       {{"SpotshiftApiThrottled", "10m", {}}, {"SpotshiftApiThrottled", "30m", with(info, {{"client", "controller"}})}}},
  };
  std::string tests = "rule_files: [rules.yaml]\nevaluation_interval: 1m\ntests:\n";
  for (const auto& g : groups) {
    tests += "  - interval: 1m\n    input_series:\n" + g.series + "    alert_rule_test:\n";
    for (const auto& c : g.cases) tests += expected_alert(*rules.at(c.alert), c);
  }
  dir.write("tests.yaml", tests);
  auto tested = run(fmt::format("cd {} && {} test rules tests.yaml 2>&1", dir.path(), testing::RealCluster::tool("promtool")));
  INFO(tests);
  INFO(tested.output);
  CHECK(tested.status == 0);
  CHECK(tested.output.find("SUCCESS") != std::string::npos);
}
