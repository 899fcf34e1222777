// The Helm chart, rendered with Helm's engine (Go text/template, sprig, include/tpl/required/
// toYaml) for the default values and several value sets, checked object by object, and applied
// to kubesim with kubectl.

#include "chart.hpp"

#include "core/strings.hpp"

#include <map>
#include <regex>
#include <set>

using namespace spotshift;
using namespace spotshift::chart;
using namespace spotshift::e2e;

namespace {

// "group resource: verb,verb" for every rule, so a whole role compares in one CHECK.
std::vector<std::string> rules_of(const kubesim::Value& role) {
  std::vector<std::string> out;
  const auto* rules = kubesim::json_path(role, {"rules"});
  REQUIRE(rules);
  for (const auto& rule : rules->GetArray()) {
    auto join = [&](const char* key) {
      std::string s;
      if (const auto* list = kubesim::json_path(rule, {key}))
        for (const auto& v : list->GetArray()) s += (s.empty() ? "" : ",") + std::string(v.GetString());
      return s;
    };
    out.push_back(fmt::format("{} {}: {}", join("apiGroups"), join("resources"), join("verbs")));
  }
  return out;
}

std::map<std::string, std::string> string_map(const kubesim::Value* v) {
  std::map<std::string, std::string> out;
  if (v)
    for (const auto& m : v->GetObject()) out[m.name.GetString()] = m.value.IsString() ? m.value.GetString() : kubesim::to_json(m.value);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

const std::vector<std::string> kMinimalClusterRules = {
    " nodes: get,list,watch,patch",
    " pods: get,list,watch",
    " pods/eviction: create",
    " namespaces: list,watch",
    "policy poddisruptionbudgets: list,watch",
    "spotshift.io reschedulepolicies: list,watch",
    "spotshift.io reschedulepolicies/status: update",
    "apps replicasets,statefulsets: list,watch",
    "batch jobs: list,watch",
    "events.k8s.io events: create,patch",
    " persistentvolumeclaims,persistentvolumes: list,watch",
};

}  // namespace

TEST_CASE("the default values render every object, with least privilege and a hardened Deployment", "[chart]") {
  TempDir dir;
  auto r = render(dir, "--name spotshift --namespace spotshift --include-crds");
  INFO(r.error);
  REQUIRE(r.status == 0);
  // Helm's install order, CRDs first.
  CHECK(r.kinds() == std::vector<std::string>{"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                                              "RoleBinding", "Service", "Deployment"});
  std::smatch m;
  std::string chart_yaml = read_all(kChart + "/Chart.yaml");
  REQUIRE(std::regex_search(chart_yaml, m, std::regex(R"re(\nappVersion: "([^"]+)")re")));
  const std::string chart_version = m[1];

  // Every object carries the recommended labels.
  for (const auto& d : r.docs) {
    if (kubesim::json_string(d, {"kind"}) == "CustomResourceDefinition") continue;
    auto labels = string_map(kubesim::json_path(d, {"metadata", "labels"}));
    CHECK(labels["app.kubernetes.io/name"] == "spotshift");
    CHECK(labels["app.kubernetes.io/instance"] == "spotshift");
    CHECK(labels["app.kubernetes.io/managed-by"] == "Helm");
    CHECK(labels["app.kubernetes.io/version"] == chart_version);
    CHECK(labels["helm.sh/chart"] == "spotshift-0.1.0");
  }

  // RBAC: only the verbs the operator uses; the Lease only in the release namespace.
  CHECK(rules_of(r.one("ClusterRole")) == kMinimalClusterRules);
  CHECK(rules_of(r.one("Role")) == std::vector<std::string>{"coordination.k8s.io leases: get,create,update"});
  CHECK(kubesim::json_string(r.one("Role"), {"metadata", "namespace"}) == "spotshift");
  for (auto kind : {"ClusterRoleBinding", "RoleBinding"}) {
    const auto& b = r.one(kind);
    const auto* subjects = kubesim::json_path(b, {"subjects"});
    REQUIRE(subjects);
    REQUIRE(subjects->Size() == 1);
    CHECK(kubesim::json_string((*subjects)[0], {"kind"}) == "ServiceAccount");
    CHECK(kubesim::json_string((*subjects)[0], {"name"}) == "spotshift");
    CHECK(kubesim::json_string((*subjects)[0], {"namespace"}) == "spotshift");
  }

  // The Deployment.
  const auto& dep = r.one("Deployment");
  CHECK(kubesim::to_json(*kubesim::json_path(dep, {"spec", "replicas"})) == "2");
  const auto& pod = *kubesim::json_path(dep, {"spec", "template"});
  CHECK(string_map(kubesim::json_path(pod, {"metadata", "annotations"}))["spotshift.io/do-not-move"] == "true");
  CHECK(string_map(kubesim::json_path(pod, {"metadata", "labels"})) ==
        string_map(kubesim::json_path(dep, {"spec", "selector", "matchLabels"})));
  CHECK(string_map(kubesim::json_path(r.one("Service"), {"spec", "selector"})) ==
        string_map(kubesim::json_path(dep, {"spec", "selector", "matchLabels"})));
  CHECK(kubesim::json_string(pod, {"spec", "priorityClassName"}) == "system-cluster-critical");
  CHECK(kubesim::json_string(pod, {"spec", "serviceAccountName"}) == "spotshift");
  CHECK(kubesim::json_bool(pod, {"spec", "securityContext", "runAsNonRoot"}));
  CHECK(kubesim::json_string(pod, {"spec", "securityContext", "seccompProfile", "type"}) == "RuntimeDefault");
  const auto& c = container(r);
  CHECK(kubesim::json_string(c, {"image"}) == "ghcr.io/spotshift/spotshift:" + chart_version);
  CHECK(kubesim::json_bool(c, {"securityContext", "readOnlyRootFilesystem"}));
  CHECK_FALSE(kubesim::json_bool(c, {"securityContext", "allowPrivilegeEscalation"}, true));
  CHECK(kubesim::to_json(*kubesim::json_path(c, {"securityContext", "capabilities", "drop"})) == R"(["ALL"])");
  CHECK(kubesim::json_string(c, {"livenessProbe", "httpGet", "path"}) == "/healthz");
  CHECK(kubesim::json_string(c, {"readinessProbe", "httpGet", "path"}) == "/readyz");
  CHECK(kubesim::json_string(c, {"resources", "limits", "memory"}) == "512Mi");
  auto args = container_args(r);
  for (auto a : {"run", "--leader-elect=true", "--leader-election-namespace=spotshift", "--lease-name=spotshift",
                 "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081", "--watch-volumes=true", "--log-format=json"})
    CHECK(has(args, a));
  // The replicas spread over nodes unless told otherwise.
  CHECK(kubesim::json_path(pod, {"spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution"}));

  // The args are ones the binary accepts.
  std::string quoted;
  for (const auto& a : args) quoted += " " + shell_quote(a);
  auto help = run(fmt::format("{}{} --help", SPOTSHIFT_BIN, quoted));
  INFO(help.output);
  CHECK(help.status == 0);

  // kubectl applies every object to kubesim, and the Deployment's pods start there.
  EnvOptions no_crd;
  no_crd.apply_crd = false;
  Env env({}, no_crd);
  install(env, dir, "spotshift", r);
  CHECK(env.kubectl("get crd reschedulepolicies.spotshift.io -o name") ==
        "customresourcedefinition.apiextensions.k8s.io/reschedulepolicies.spotshift.io\n");
  std::string listed = env.kubectl("get -n spotshift serviceaccount,service,deployment,role,rolebinding -o name");
  for (auto name :
       {"serviceaccount/spotshift", "service/spotshift-metrics", "deployment.apps/spotshift",
        "role.rbac.authorization.k8s.io/spotshift-leader-election", "rolebinding.rbac.authorization.k8s.io/spotshift-leader-election"})
    CHECK(listed.find(name) != std::string::npos);
  CHECK(
      env.kubectl("get clusterrole,clusterrolebinding spotshift -o name").find("clusterrolebinding.rbac.authorization.k8s.io/spotshift") !=
      std::string::npos);
  REQUIRE(eventually(
      [&] {
        auto out = env.kubectl("get pods -n spotshift -l app.kubernetes.io/instance=spotshift --no-headers", false);
        return std::count(out.begin(), out.end(), '\n') == 2 && out.find("Running") != std::string::npos &&
               out.find("Pending") == std::string::npos;
      },
      20s));
  // The operator's pods are protected from itself.
  std::string annotations = env.kubectl("get pods -n spotshift -o jsonpath={.items[*].metadata.annotations}");
  CHECK(annotations.find(R"("spotshift.io/do-not-move":"true")") != std::string::npos);
}

TEST_CASE("value sets: a default policy, a ServiceMonitor, a budget, placement and overrides", "[chart]") {
  TempDir dir;
  dir.write("values.yaml", R"(fullnameOverride: shift
replicaCount: 3
watchVolumes: false
maxPlanningCpu: 25
extraArgs: ["--workers=2"]
log: {format: text, verbosity: 2}
nodeSelector: {node-role.kubernetes.io/worker: ""}
tolerations:
- {key: spotshift.io/on-demand, operator: Exists, effect: PreferNoSchedule}
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [ondemand-3, ondemand-4]}
topologySpreadConstraints:
- maxSkew: 1
  topologyKey: kubernetes.io/hostname
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels: {app.kubernetes.io/instance: '{{ .Release.Name }}'}
podAnnotations: {prometheus.io/scrape: "true"}
podDisruptionBudget: {enabled: true}
metrics:
  serviceMonitor: {enabled: true, labels: {release: prom}}
defaultPolicy:
  create: true
  name: pool-a
  dryRun: false
  nodeDrainDelay: 5m
  extraSpec:
    suspend: true
    podSelector: {matchLabels: {movable: "yes"}}
)");
  auto r =
      render(dir, "--name prod --namespace ops -f " + dir.file("values.yaml") + " --set image.tag=1.2.3 --set resources.limits.memory=2Gi");
  INFO(r.error);
  REQUIRE(r.status == 0);
  CHECK(r.kinds() == std::vector<std::string>{"PodDisruptionBudget", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                                              "RoleBinding", "Service", "Deployment", "ReschedulePolicy", "ServiceMonitor"});
  // No volume watches, so no volume permissions.
  auto rules = rules_of(r.one("ClusterRole", "shift"));
  CHECK(rules.size() == kMinimalClusterRules.size() - 1);
  CHECK_FALSE(has(rules, " persistentvolumeclaims,persistentvolumes: list,watch"));
  auto args = container_args(r);
  for (auto a : {"--watch-volumes=false", "--max-planning-cpu=25", "--workers=2", "--log-format=text", "--v=2", "--lease-name=shift",
                 "--leader-election-namespace=ops"})
    CHECK(has(args, a));
  const auto& c = container(r);
  CHECK(kubesim::json_string(c, {"image"}) == "ghcr.io/spotshift/spotshift:1.2.3");
  CHECK(kubesim::json_string(c, {"resources", "limits", "memory"}) == "2Gi");
  const auto& pod = *kubesim::json_path(r.one("Deployment"), {"spec", "template"});
  auto annotations = string_map(kubesim::json_path(pod, {"metadata", "annotations"}));
  CHECK(annotations["prometheus.io/scrape"] == "true");
  CHECK(annotations["spotshift.io/do-not-move"] == "true");  // user annotations never drop the protection
  CHECK(string_map(kubesim::json_path(pod, {"spec", "nodeSelector"})) ==
        std::map<std::string, std::string>{{"node-role.kubernetes.io/worker", ""}});
  CHECK(kubesim::to_json(*kubesim::json_path(pod, {"spec", "tolerations"})) ==
        R"([{"effect":"PreferNoSchedule","key":"spotshift.io/on-demand","operator":"Exists"}])");
  CHECK(kubesim::json_path(pod, {"spec", "affinity", "nodeAffinity"}));
  CHECK_FALSE(kubesim::json_path(pod, {"spec", "affinity", "podAntiAffinity"}));
  // tpl expands templates inside values.
  CHECK(kubesim::to_json(*kubesim::json_path(pod, {"spec", "topologySpreadConstraints"})).find(R"("app.kubernetes.io/instance":"prod")") !=
        std::string::npos);
  CHECK(kubesim::json_string(r.one("ServiceMonitor"), {"metadata", "labels", "release"}) == "prom");
  const auto& policy = r.one("ReschedulePolicy", "pool-a");
  CHECK(kubesim::json_string(policy, {"spec", "nodeDrainDelay"}) == "5m");
  CHECK(kubesim::json_bool(policy, {"spec", "suspend"}));
  CHECK_FALSE(kubesim::json_bool(policy, {"spec", "dryRun"}, true));

  // All of it applies, the policy passes the CRD's validation, and the operator's pods land where
  // the values put them.
  EnvOptions no_crd;
  no_crd.apply_crd = false;
  Env env({}, no_crd);
  env.apply("servicemonitor-crd", R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: servicemonitors.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {plural: servicemonitors, singular: servicemonitor, kind: ServiceMonitor}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
)");
  env.kubectl("apply -f " + kChart + "/crds/");
  install(env, dir, "ops", r);
  CHECK(env.kubectl("get reschedulepolicy pool-a -o jsonpath={.spec.podEvictionTimeout}") == "2m");
  CHECK(env.kubectl("get servicemonitor -n ops shift -o name") == "servicemonitor.monitoring.coreos.com/shift\n");
  CHECK(env.kubectl("get pdb -n ops shift -o jsonpath={.spec.maxUnavailable}") == "1");
  REQUIRE(eventually(
      [&] {
        auto out = env.kubectl("get pods -n ops -o jsonpath={.items[*].spec.nodeName}", false);
        return std::count(out.begin(), out.end(), ' ') == 2 && out.find("ondemand-1") == std::string::npos &&
               out.find("ondemand-2") == std::string::npos && out.find("spot") == std::string::npos;
      },
      20s));
}

TEST_CASE("one replica without leader election, and no RBAC or ServiceAccount when told so", "[chart]") {
  TempDir dir;
  auto r = render(dir, "--set replicaCount=1,leaderElection.enabled=false");
  INFO(r.error);
  REQUIRE(r.status == 0);
  CHECK(r.all("Role").empty());
  CHECK(has(container_args(r), "--leader-elect=false"));
  CHECK_FALSE(has(container_args(r), "--leader-election-namespace=default"));
  auto notes = run(fmt::format("{} --chart {} --notes --set replicaCount=1,leaderElection.enabled=false", HELM_RENDER, kChart));
  CHECK(notes.output.find("WARNING: leader election is off") != std::string::npos);

  auto bare = render(dir, "--set rbac.create=false,serviceAccount.create=false,serviceAccount.name=ops-sa,metrics.service.enabled=false");
  INFO(bare.error);
  REQUIRE(bare.status == 0);
  CHECK(bare.kinds() == std::vector<std::string>{"Deployment"});
  CHECK(kubesim::json_string(bare.one("Deployment"), {"spec", "template", "spec", "serviceAccountName"}) == "ops-sa");
}

TEST_CASE("values that cannot work fail the render with a message that says why", "[chart]") {
  TempDir dir;
  struct Case {
    std::string set, message;
  };
  for (const auto& c : std::vector<Case>{
           {"leaderElection.enabled=false", "replicaCount above 1 needs leaderElection.enabled"},
           {"serviceAccount.create=false", "serviceAccount.name is required when serviceAccount.create is false"},
           {"log.format=xml", "log.format must be text or json, not \"xml\""},
           {"image.repository=", "image.repository is required"},
           {"metrics.service.enabled=false,metrics.serviceMonitor.enabled=true",
            "metrics.serviceMonitor.enabled needs metrics.service.enabled"},
           {"defaultPolicy.create=true,defaultPolicy.name=", "defaultPolicy.name is required"},
       }) {
    auto r = render(dir, "--set " + shell_quote(c.set));
    INFO(c.set);
    CHECK(r.status == 1);
    CHECK_THAT(r.error, Catch::StartsWith("Error: execution error at (spotshift/templates/"));
    CHECK_THAT(r.error, Catch::Contains(c.message));
  }
}

TEST_CASE("NOTES.txt tells the user what to do next", "[chart]") {
  auto plain = run(fmt::format("{} --chart {} --notes --name shop --namespace ops", HELM_RENDER, kChart));
  REQUIRE(plain.status == 0);
  CHECK(plain.output.find("installed as shop-spotshift in namespace ops") != std::string::npos);
  CHECK(plain.output.find("Nothing moves until a ReschedulePolicy exists") != std::string::npos);
  CHECK(plain.output.find("kubectl -n ops get lease shop-spotshift") != std::string::npos);
  auto with_policy = run(fmt::format("{} --chart {} --notes --set defaultPolicy.create=true", HELM_RENDER, kChart));
  REQUIRE(with_policy.status == 0);
  CHECK(with_policy.output.find("The chart created the ReschedulePolicy \"default\" in dry-run mode") != std::string::npos);
}

TEST_CASE("the chart's CRD is the top-level CRD, byte for byte", "[chart]") {
  auto top = read_all(std::string(SOURCE_ROOT) + "/crds/reschedulepolicies.spotshift.io.yaml");
  auto in_chart = read_all(kChart + "/crds/reschedulepolicies.spotshift.io.yaml");
  REQUIRE_FALSE(top.empty());
  CHECK(in_chart == top);
}

namespace {

// values.yaml flattened: "a.b" -> default, as docs/install.md prints it (strings bare, "" for
// the empty string, JSON for everything else). Empty maps and lists are leaves.
void flatten(const kubesim::Value& v, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (v.IsObject() && v.MemberCount() > 0) {
    for (const auto& m : v.GetObject()) flatten(m.value, prefix.empty() ? m.name.GetString() : prefix + "." + m.name.GetString(), out);
    return;
  }
  out[prefix] = v.IsString() ? (v.GetStringLength() == 0 ? std::string("\"\"") : std::string(v.GetString())) : kubesim::to_json(v);
}

}  // namespace

TEST_CASE("docs/install.md lists every value with its default", "[chart]") {
  auto values = model::parse_yaml(read_all(kChart + "/values.yaml"));
  REQUIRE(values);
  std::map<std::string, std::string> expected;
  flatten(*values, "", expected);

  std::map<std::string, std::string> documented;
  std::string doc = read_all(std::string(SOURCE_ROOT) + "/docs/install.md");
  REQUIRE_FALSE(doc.empty());
  std::regex row(R"(^\| `([A-Za-z0-9_.]+)` \| `([^`]*)` \|)");
  for (auto line : split(doc, '\n')) {
    std::smatch m;
    std::string l(line);
    if (std::regex_search(l, m, row)) documented[m[1]] = m[2];
  }
  for (const auto& [key, value] : expected) {
    INFO(key);
    REQUIRE(documented.count(key));
    CHECK(documented[key] == value);
  }
  for (const auto& [key, value] : documented) {
    INFO("documented but not in values.yaml: " << key);
    CHECK(expected.count(key));
  }
}

TEST_CASE("the Dockerfile's build configures without test dependencies and ships every runtime library", "[image]") {
  // No Docker daemon here: check what the Dockerfile relies on instead.
  std::string dockerfile = read_all(std::string(SOURCE_ROOT) + "/Dockerfile");
  REQUIRE_FALSE(dockerfile.empty());
  auto runtime_stage = dockerfile.substr(dockerfile.rfind("\nFROM "));
  CHECK(runtime_stage.find("USER 65532:65532") != std::string::npos);
  CHECK(runtime_stage.find("bookworm-slim") != std::string::npos);

  // Every shared library the binary links comes from a package the runtime stage installs (or
  // from the slim base: libc, libstdc++, libgcc).
  auto ldd = run(fmt::format("ldd {}", SPOTSHIFT_BIN));
  REQUIRE(ldd.status == 0);
  std::set<std::string> packages;
  std::regex lib(R"(=> (/\S+))");
  for (auto line : split(ldd.output, '\n')) {
    std::string l(line);
    std::smatch m;
    if (!std::regex_search(l, m, lib)) continue;
    // dpkg knows some libraries by their real path, others (libc) by the /lib one.
    std::string path = shell_quote(m[1]);
    auto owner = run(fmt::format("{{ dpkg -S $(readlink -f {0}) || dpkg -S {0}; }} 2>/dev/null | head -1 | cut -d: -f1", path));
    INFO(l);
    REQUIRE_FALSE(trim(owner.output).empty());
    packages.insert(std::string(trim(owner.output)));
  }
  CHECK(packages.count("libfmt9"));
  for (const auto& p : packages) {
    if (p == "libc6" || p == "libstdc++6" || p == "libgcc-s1") continue;
    INFO("the binary needs " << p);
    CHECK(runtime_stage.find(" " + p + " ") != std::string::npos);
  }

  // The build stage's configuration: the operator without tests, Catch2 or Go.
  TempDir dir;
  auto setup = run(
      fmt::format("cd {} && meson setup {} --buildtype=release -Db_ndebug=true -Dtests=disabled", shell_quote(SOURCE_ROOT), dir.file("b")));
  INFO(setup.output);
  REQUIRE(setup.status == 0);
  CHECK(dockerfile.find("-Dtests=disabled") != std::string::npos);
  auto targets = run(fmt::format("ninja -C {} -t targets all", dir.file("b")));
  CHECK(targets.output.find("operator/spotshift:") != std::string::npos);
  CHECK(targets.output.find("tests/") == std::string::npos);
}
