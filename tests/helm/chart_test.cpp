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
  // Helm's install order, CRDs first; the operator's own budget (two replicas); helm test's pod.
  CHECK(r.kinds() == std::vector<std::string>{"CustomResourceDefinition", "PodDisruptionBudget", "ServiceAccount", "ClusterRole",
                                              "ClusterRole", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "Pod",
                                              "Deployment"});
  std::smatch m;
  std::string chart_yaml = read_all(kChart + "/Chart.yaml");
  REQUIRE(std::regex_search(chart_yaml, m, std::regex(R"re(\nappVersion: "([^"]+)")re")));
  const std::string chart_version = m[1];

  // Every object carries the recommended labels.
  for (const auto& d : r.docs) {
    if (kubesim::json_string(d, {"kind"}) == "CustomResourceDefinition" || Rendered::is_hook(d)) continue;
    auto labels = string_map(kubesim::json_path(d, {"metadata", "labels"}));
    CHECK(labels["app.kubernetes.io/name"] == "spotshift");
    CHECK(labels["app.kubernetes.io/instance"] == "spotshift");
    CHECK(labels["app.kubernetes.io/managed-by"] == "Helm");
    CHECK(labels["app.kubernetes.io/version"] == chart_version);
    CHECK(labels["helm.sh/chart"] == "spotshift-0.1.0");
  }

  // RBAC: only the verbs the operator uses; the Lease only in the release namespace.
  CHECK(rules_of(r.one("ClusterRole", "spotshift")) == kMinimalClusterRules);
  // People bound to view read policies; edit and admin write them.
  const auto& view = r.one("ClusterRole", "spotshift-view");
  CHECK(string_map(kubesim::json_path(view, {"metadata", "labels"}))["rbac.authorization.k8s.io/aggregate-to-view"] == "true");
  CHECK(rules_of(view) == std::vector<std::string>{"spotshift.io reschedulepolicies,reschedulepolicies/status: get,list,watch"});
  const auto& edit = r.one("ClusterRole", "spotshift-edit");
  auto edit_labels = string_map(kubesim::json_path(edit, {"metadata", "labels"}));
  CHECK(edit_labels["rbac.authorization.k8s.io/aggregate-to-edit"] == "true");
  CHECK(edit_labels["rbac.authorization.k8s.io/aggregate-to-admin"] == "true");
  CHECK(rules_of(edit) == std::vector<std::string>{"spotshift.io reschedulepolicies: create,update,patch,delete,deletecollection"});
  // The operator's budget keeps one replica up through voluntary disruptions.
  CHECK(kubesim::to_json(*kubesim::json_path(r.one("PodDisruptionBudget"), {"spec", "maxUnavailable"})) == "1");
  // helm test's pod fetches the metrics Service, and is not selected by it or by the budget.
  const auto& test_pod = r.one("Pod");
  CHECK(kubesim::json_string(test_pod, {"metadata", "annotations", "helm.sh/hook"}) == "test");
  CHECK(kubesim::to_json(*kubesim::json_path((*kubesim::json_path(test_pod, {"spec", "containers"}))[0], {"command"}))
            .find("wget -q -O - http://spotshift-metrics.spotshift:8080/metrics | grep -q '^spotshift_build_info'") != std::string::npos);
  CHECK(string_map(kubesim::json_path(test_pod, {"metadata", "labels"})).count("app.kubernetes.io/name") == 0);
  CHECK(rules_of(r.one("Role")) == std::vector<std::string>{"coordination.k8s.io leases: get,create,update", " configmaps: get"});
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
  for (auto name : {"serviceaccount/spotshift", "service/spotshift-metrics", "deployment.apps/spotshift",
                    "role.rbac.authorization.k8s.io/spotshift", "rolebinding.rbac.authorization.k8s.io/spotshift"})
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
commonLabels: {team: platform}
revisionHistoryLimit: 3
terminationGracePeriodSeconds: 45
extraEnv:
- {name: GODEBUG, value: "x=1"}
image: {digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
metrics:
  serviceMonitor:
    enabled: true
    namespace: monitoring
    labels: {release: prom}
    honorLabels: true
    relabelings:
    - {targetLabel: cluster, replacement: prod-eu}
    metricRelabelings:
    - {sourceLabels: [__name__], regex: go_.*, action: drop}
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
  CHECK(r.kinds() == std::vector<std::string>{"PodDisruptionBudget", "ServiceAccount", "ClusterRole", "ClusterRole", "ClusterRole",
                                              "ClusterRoleBinding", "Role", "RoleBinding", "Service", "Pod", "Deployment",
                                              "ReschedulePolicy", "ServiceMonitor"});
  // No volume watches, so no volume permissions.
  auto rules = rules_of(r.one("ClusterRole", "shift"));
  CHECK(rules.size() == kMinimalClusterRules.size() - 1);
  CHECK_FALSE(has(rules, " persistentvolumeclaims,persistentvolumes: list,watch"));
  auto args = container_args(r);
  for (auto a : {"--watch-volumes=false", "--max-planning-cpu=25", "--workers=2", "--log-format=text", "--v=2", "--lease-name=shift",
                 "--leader-election-namespace=ops"})
    CHECK(has(args, a));
  const auto& c = container(r);
  // A digest pins the image; the tag is then ignored.
  CHECK(kubesim::json_string(c, {"image"}) ==
        "ghcr.io/spotshift/spotshift@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  CHECK(kubesim::to_json(*kubesim::json_path(c, {"env"})) == R"([{"name":"GODEBUG","value":"x=1"}])");
  const auto& dep = r.one("Deployment");
  CHECK(kubesim::to_json(*kubesim::json_path(dep, {"spec", "revisionHistoryLimit"})) == "3");
  CHECK(kubesim::to_json(*kubesim::json_path(dep, {"spec", "template", "spec", "terminationGracePeriodSeconds"})) == "45");
  // commonLabels on every object and on the pods, never in the Deployment's (immutable) selector.
  for (const auto& d : r.docs) {
    INFO(kubesim::json_string(d, {"kind"}));
    CHECK(kubesim::json_string(d, {"metadata", "labels", "team"}) == "platform");
  }
  CHECK(kubesim::json_string(dep, {"spec", "template", "metadata", "labels", "team"}) == "platform");
  CHECK(kubesim::json_string(dep, {"spec", "selector", "matchLabels", "team"}).empty());
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
  const auto& sm = r.one("ServiceMonitor");
  CHECK(kubesim::json_string(sm, {"metadata", "labels", "release"}) == "prom");
  // In Prometheus' namespace, scraping the release's.
  CHECK(kubesim::json_string(sm, {"metadata", "namespace"}) == "monitoring");
  CHECK(kubesim::to_json(*kubesim::json_path(sm, {"spec", "namespaceSelector"})) == R"({"matchNames":["ops"]})");
  const auto& endpoint = (*kubesim::json_path(sm, {"spec", "endpoints"}))[0];
  CHECK(kubesim::json_bool(endpoint, {"honorLabels"}));
  CHECK(kubesim::to_json(*kubesim::json_path(endpoint, {"relabelings"})) == R"([{"replacement":"prod-eu","targetLabel":"cluster"}])");
  CHECK(kubesim::to_json(*kubesim::json_path(endpoint, {"metricRelabelings"})) ==
        R"([{"action":"drop","regex":"go_.*","sourceLabels":["__name__"]}])");
  const auto& policy = r.one("ReschedulePolicy", "pool-a");
  CHECK(kubesim::json_string(policy, {"spec", "nodeDrainDelay"}) == "5m");
  CHECK(kubesim::json_bool(policy, {"spec", "suspend"}));
  CHECK_FALSE(kubesim::json_bool(policy, {"spec", "dryRun"}, true));

  // All of it applies, the policy passes the CRD's validation, and the operator's pods land where
  // the values put them.
  EnvOptions no_crd;
  no_crd.apply_crd = false;
  Env env({}, no_crd);
  apply_monitoring_crds(env);
  env.kubectl("apply -f " + kChart + "/crds/");
  env.kubectl("create namespace monitoring");
  install(env, dir, "ops", r);
  CHECK(env.kubectl("get reschedulepolicy pool-a -o jsonpath={.spec.podEvictionTimeout}") == "2m");
  CHECK(env.kubectl("get servicemonitor -n monitoring shift -o name") == "servicemonitor.monitoring.coreos.com/shift\n");
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
  CHECK(rules_of(r.one("Role")) == std::vector<std::string>{" configmaps: get"});  // no Lease
  CHECK(r.all("PodDisruptionBudget").empty());  // one replica: a budget would only block drains of its node
  CHECK(has(container_args(r), "--leader-elect=false"));
  CHECK_FALSE(has(container_args(r), "--leader-election-namespace=default"));
  auto notes = run(fmt::format("{} --chart {} --notes --set replicaCount=1,leaderElection.enabled=false", HELM_RENDER, kChart));
  CHECK(notes.output.find("WARNING: leader election is off") != std::string::npos);

  auto bare = render(dir, "--set rbac.create=false,serviceAccount.create=false,serviceAccount.name=ops-sa,metrics.service.enabled=false");
  INFO(bare.error);
  REQUIRE(bare.status == 0);
  CHECK(bare.kinds() == std::vector<std::string>{"PodDisruptionBudget", "Deployment"});
  CHECK(kubesim::json_string(bare.one("Deployment"), {"spec", "template", "spec", "serviceAccountName"}) == "ops-sa");
}

TEST_CASE("steering: the webhook, the Service to the leader, the certificate's RBAC and the args, only when enabled", "[chart]") {
  TempDir dir;
  auto off = render(dir, "--name prod --namespace ops");
  REQUIRE(off.status == 0);
  CHECK(off.all("MutatingWebhookConfiguration").empty());
  CHECK(off.all("Service").size() == 1);  // metrics only
  for (const auto& a : container_args(off)) CHECK_FALSE(a.starts_with("--webhook"));

  auto r = render(dir, "--name prod --namespace ops --set steering.enabled=true,steering.excludeNamespaces={batch}");
  INFO(r.error);
  REQUIRE(r.status == 0);
  const auto& hook = r.one("MutatingWebhookConfiguration", "prod-spotshift");
  const auto& w = (*kubesim::json_path(hook, {"webhooks"}))[0];
  CHECK(kubesim::json_string(w, {"failurePolicy"}) == "Ignore");
  CHECK(kubesim::json_string(w, {"sideEffects"}) == "None");
  CHECK(kubesim::json_int(w, {"timeoutSeconds"}) == 2);
  CHECK(kubesim::json_string(w, {"clientConfig", "service", "name"}) == "prod-spotshift-webhook");
  CHECK(kubesim::json_string(w, {"clientConfig", "service", "namespace"}) == "ops");
  CHECK(kubesim::json_string(w, {"clientConfig", "service", "path"}) == "/mutate-pods");
  CHECK(kubesim::to_json(*kubesim::json_path(w, {"rules"})) ==
        R"([{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"],"scope":"Namespaced"}])");
  CHECK(kubesim::to_json(*kubesim::json_path(w, {"namespaceSelector"})) ==
        R"({"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","ops","batch"]}]})");
  CHECK(kubesim::json_string((*kubesim::json_path(w, {"matchConditions"}))[0], {"expression"}).find("r.controller") != std::string::npos);
  // The Service reaches the leader's pod only.
  const auto& svc = r.one("Service", "prod-spotshift-webhook");
  CHECK(kubesim::json_string(svc, {"spec", "selector", "spotshift.io/webhook-leader"}) == "true");
  CHECK(kubesim::json_string((*kubesim::json_path(svc, {"spec", "ports"}))[0], {"targetPort"}) == "webhook");
  auto args = container_args(r);
  for (auto a :
       {"--webhook-bind-address=:9443", "--webhook-dns-names=prod-spotshift-webhook.ops.svc,prod-spotshift-webhook.ops.svc.cluster.local",
        "--webhook-secret=ops/prod-spotshift-webhook-tls", "--webhook-configuration=prod-spotshift"}) {
    INFO(a);
    CHECK(has(args, a));
  }
  std::string env = kubesim::to_json(*kubesim::json_path(container(r), {"env"}));
  CHECK(env.find(R"("name":"POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}})") != std::string::npos);
  CHECK(env.find(R"("name":"POD_NAMESPACE")") != std::string::npos);
  CHECK(kubesim::to_json(*kubesim::json_path(container(r), {"ports"})).find(R"({"name":"webhook","containerPort":9443)") !=
        std::string::npos);
  // RBAC: the leader's label, the Secret (get and update by name) and the caBundle (by name).
  auto role = rules_of(r.one("Role"));
  CHECK(has(role, " pods: patch"));
  CHECK(has(role, " secrets: create"));
  CHECK(has(role, " secrets: get,update"));
  CHECK(kubesim::to_json(*kubesim::json_path(r.one("Role"), {"rules"})).find(R"("resourceNames":["prod-spotshift-webhook-tls"])") !=
        std::string::npos);
  auto cluster = rules_of(r.one("ClusterRole", "prod-spotshift"));
  CHECK(has(cluster, "admissionregistration.k8s.io mutatingwebhookconfigurations: get,patch"));
  CHECK(r.all("Certificate").empty());

  // cert-manager: an Issuer and a Certificate, the CA injected, the Secret mounted; the operator
  // neither writes a Secret nor patches the configuration.
  auto cm = render(dir, "--name prod --namespace ops --set steering.enabled=true,steering.certManager.enabled=true");
  INFO(cm.error);
  REQUIRE(cm.status == 0);
  CHECK(kubesim::json_string(cm.one("MutatingWebhookConfiguration"), {"metadata", "annotations", "cert-manager.io/inject-ca-from"}) ==
        "ops/prod-spotshift-webhook");
  CHECK(kubesim::json_string(cm.one("Certificate"), {"spec", "secretName"}) == "prod-spotshift-webhook-tls");
  CHECK(kubesim::json_string(cm.one("Issuer"), {"metadata", "name"}) == "prod-spotshift-webhook");
  auto cm_args = container_args(cm);
  CHECK(has(cm_args, "--webhook-cert-dir=/etc/spotshift/webhook"));
  CHECK_FALSE(has(cm_args, "--webhook-secret=ops/prod-spotshift-webhook-tls"));
  CHECK(rules_of(cm.one("Role")) ==
        std::vector<std::string>{"coordination.k8s.io leases: get,create,update", " configmaps: get", " pods: patch"});
  CHECK_FALSE(
      has(rules_of(cm.one("ClusterRole", "prod-spotshift")), "admissionregistration.k8s.io mutatingwebhookconfigurations: get,patch"));
  CHECK(kubesim::to_json(*kubesim::json_path(cm.one("Deployment"), {"spec", "template", "spec", "volumes"})) ==
        R"([{"name":"webhook-tls","secret":{"secretName":"prod-spotshift-webhook-tls"}}])");
}

TEST_CASE("values that cannot work fail the render with a message that says why", "[chart]") {
  TempDir dir;
  struct Case {
    std::string set, message;
  };
  for (const auto& c : std::vector<Case>{
           {"leaderElection.enabled=false", "replicaCount above 1 needs leaderElection.enabled"},
           {"serviceAccount.create=false", "serviceAccount.name is required when serviceAccount.create is false"},
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

namespace {

// The `# -- text` comments of values.yaml (continued by `# more` lines), by the key below them.
std::map<std::string, std::string> value_comments(const std::string& yaml) {
  std::map<std::string, std::string> out;
  std::vector<std::string> path;
  std::optional<std::string> pending;
  for (auto line : split(yaml, '\n')) {
    std::string l(line);
    std::smatch m;
    if (std::regex_match(l, m, std::regex(R"(\s*# -- (.*))"))) {
      pending = m[1];
    } else if (pending && std::regex_match(l, m, std::regex(R"(\s*# (.*))"))) {
      *pending += " " + m[1].str();
    } else if (std::regex_match(l, m, std::regex(R"((\s*)([A-Za-z0-9_]+):.*)"))) {
      path.resize(m[1].length() / 2);
      path.push_back(m[2]);
      if (pending) out[join(path, ".")] = *pending;
      pending.reset();
    } else if (!trim(l).empty()) {
      pending.reset();
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the chart's README lists every value with its default and its comment", "[chart]") {
  const std::string yaml = read_all(kChart + "/values.yaml");
  auto values = model::parse_yaml(yaml);
  REQUIRE(values);
  std::map<std::string, std::string> expected;
  flatten(*values, "", expected);

  std::map<std::string, std::string> defaults, descriptions;
  std::string readme = read_all(kChart + "/README.md");
  REQUIRE_FALSE(readme.empty());
  std::regex row(R"(^\| `([A-Za-z0-9_.]+)` \| `([^`]*)` \| (.*) \|$)");
  for (auto line : split(readme, '\n')) {
    std::smatch m;
    std::string l(line);
    if (std::regex_search(l, m, row)) {
      defaults[m[1]] = m[2];
      descriptions[m[1]] = m[3];
    }
  }
  for (const auto& [key, value] : expected) {
    INFO(key);
    REQUIRE(defaults.count(key));
    CHECK(defaults[key] == value);
  }
  // Every commented key is in the table (a map's own row too), described by its comment.
  for (const auto& [key, comment] : value_comments(yaml)) {
    INFO(key);
    REQUIRE(descriptions.count(key));
    CHECK(descriptions[key].starts_with(comment));
  }
  for (const auto& [key, value] : defaults) {
    INFO("in the README but not in values.yaml: " << key);
    CHECK((expected.count(key) || value_comments(yaml).count(key)));
  }
}

TEST_CASE("monitoring: a PodMonitor, alerts on the metrics that exist, and a dashboard of them", "[chart]") {
  TempDir dir;
  auto r = render(dir,
                  "--name spotshift --namespace ops --set metrics.podMonitor.enabled=true,metrics.prometheusRule.enabled=true,"
                  "metrics.grafanaDashboard.enabled=true,metrics.prometheusRule.labels.release=prom,"
                  "metrics.prometheusRule.alertLabels.team=platform,metrics.prometheusRule.idleDrainableFor=6h");
  INFO(r.error);
  REQUIRE(r.status == 0);
  const auto& pm = r.one("PodMonitor");
  CHECK(kubesim::json_string(pm, {"metadata", "namespace"}) == "ops");
  CHECK(kubesim::json_string((*kubesim::json_path(pm, {"spec", "podMetricsEndpoints"}))[0], {"port"}) == "metrics");
  CHECK(string_map(kubesim::json_path(pm, {"spec", "selector", "matchLabels"})) ==
        string_map(kubesim::json_path(r.one("Deployment"), {"spec", "selector", "matchLabels"})));

  // Every metric the alerts and the dashboard read is one docs/events-and-metrics.md documents
  // (and a docs test holds that table to the declarations).
  const std::string metrics_doc = read_all(std::string(SOURCE_ROOT) + "/docs/events-and-metrics.md");
  auto check_metrics = [&](const std::string& text) {
    std::set<std::string> used;
    std::regex name(R"(spotshift_[a-z_]+)");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator(); ++it) {
      std::string n = it->str();
      for (auto suffix : {"_bucket", "_count", "_sum"})
        if (n.ends_with(suffix) && !n.ends_with("_seconds_total")) n.resize(n.size() - std::string_view(suffix).size());
      used.insert(n);
    }
    REQUIRE(used.size() >= 5);
    for (const auto& n : used) {
      INFO(n);
      CHECK(metrics_doc.find("| `" + n + "` |") != std::string::npos);
    }
    return used;
  };
  const auto& rule = r.one("PrometheusRule");
  CHECK(kubesim::json_string(rule, {"metadata", "labels", "release"}) == "prom");
  std::vector<std::string> alerts;
  for (const auto& a : (*kubesim::json_path(rule, {"spec", "groups"}))[0]["rules"].GetArray()) {
    alerts.emplace_back(kubesim::json_string(a, {"alert"}));
    CHECK(kubesim::json_string(a, {"labels", "team"}) == "platform");
    // Scoped to the release's namespace.
    CHECK(kubesim::json_string(a, {"expr"}).find(R"(namespace="ops")") != std::string::npos);
    if (alerts.back() == "SpotshiftDrainableNodeIdle") CHECK(kubesim::json_string(a, {"for"}) == "6h");
  }
  CHECK(alerts == std::vector<std::string>{"SpotshiftNoLeader", "SpotshiftPolicyInvalid", "SpotshiftDrainsAborting",
                                           "SpotshiftDrainableNodeIdle", "SpotshiftApiThrottled"});
  auto in_alerts = check_metrics(kubesim::to_json(rule));
  for (auto n : {"spotshift_leader", "spotshift_policy_valid", "spotshift_drains_total", "spotshift_gate_blocked",
                 "spotshift_drain_in_progress", "spotshift_api_requests_total"})
    CHECK(in_alerts.count(n));

  const auto& cm = r.one("ConfigMap", "spotshift-dashboard");
  CHECK(kubesim::json_string(cm, {"metadata", "labels", "grafana_dashboard"}) == "1");
  std::string dashboard(kubesim::json_string(cm, {"data", "spotshift.json"}));
  CHECK(dashboard == trim(read_all(kChart + "/dashboards/spotshift.json")));
  auto parsed = model::parse_yaml(dashboard);
  REQUIRE(parsed);
  CHECK(kubesim::json_string(*parsed, {"uid"}) == "spotshift");
  check_metrics(dashboard);

  // All of it applies, beside the Prometheus Operator's kinds.
  EnvOptions no_crd;
  no_crd.apply_crd = false;
  Env env({}, no_crd);
  apply_monitoring_crds(env);
  install(env, dir, "ops", r);
  CHECK(env.kubectl("get podmonitor/spotshift prometheusrule/spotshift configmap/spotshift-dashboard -n ops -o name") ==
        "podmonitor.monitoring.coreos.com/spotshift\nprometheusrule.monitoring.coreos.com/spotshift\nconfigmap/spotshift-dashboard\n");
}

TEST_CASE("the spotshift-crds chart's template is the top-level CRD, byte for byte, kept on uninstall", "[chart]") {
  auto top = read_all(std::string(SOURCE_ROOT) + "/crds/reschedulepolicies.spotshift.io.yaml");
  CHECK(read_all(std::string(SOURCE_ROOT) + "/charts/spotshift-crds/templates/reschedulepolicies.spotshift.io.yaml") == top);
  CHECK(top.find("helm.sh/resource-policy: keep") != std::string::npos);
  TempDir dir;
  auto r = run(fmt::format("{} --chart {}/charts/spotshift-crds", HELM_RENDER, SOURCE_ROOT));
  REQUIRE(r.status == 0);
  auto docs = model::parse_yaml_documents(r.output);
  REQUIRE(docs);
  REQUIRE(docs->size() == 1);
  CHECK(kubesim::json_string((*docs)[0], {"metadata", "annotations", "helm.sh/resource-policy"}) == "keep");
}

namespace {

// A blob of an OCI layout, by its digest ("sha256:...").
std::string blob(const std::string& layout, std::string_view digest) {
  return read_all(layout + "/blobs/sha256/" + std::string(digest.substr(digest.find(':') + 1)));
}

}  // namespace

TEST_CASE("the image archive: from scratch, the user, entrypoint and labels the chart expects, and the binary runs inside", "[image]") {
  TempDir dir;
  auto built = run(fmt::format("{}/scripts/build-image.sh --binary {} --out {} --tag test 2>&1", SOURCE_ROOT, SPOTSHIFT_BIN,
                               dir.file("spotshift.oci.tar")));
  INFO(built.output);
  REQUIRE(built.status == 0);
  const std::string layout = dir.file("layout"), rootfs = dir.file("rootfs");
  REQUIRE(run(fmt::format("mkdir -p {0} {1} && tar -C {0} -xf {2}", layout, rootfs, dir.file("spotshift.oci.tar"))).status == 0);
  auto index = model::parse_yaml(read_all(layout + "/index.json"));
  REQUIRE(index);
  const auto& ref = (*index)["manifests"][0];
  CHECK(kubesim::json_string(ref, {"annotations", "org.opencontainers.image.ref.name"}) == "test");
  auto manifest = model::parse_yaml(blob(layout, kubesim::json_string(ref, {"digest"})));
  REQUIRE(manifest);
  auto config = model::parse_yaml(blob(layout, kubesim::json_string(*manifest, {"config", "digest"})));
  REQUIRE(config);
  INFO(kubesim::to_json(*config));

  // What the chart's Deployment relies on: a numeric non-root user (runAsNonRoot, runAsUser
  // 65532), the entrypoint its args follow ("run" first), the ports it names.
  auto r = render(dir, "");
  REQUIRE(r.status == 0);
  const auto& pod = *kubesim::json_path(r.one("Deployment"), {"spec", "template", "spec"});
  const std::string run_as = kubesim::to_json(*kubesim::json_path(pod, {"securityContext", "runAsUser"}));
  CHECK(kubesim::json_string(*config, {"config", "User"}) == run_as + ":" + run_as);
  CHECK(kubesim::to_json(*kubesim::json_path(*config, {"config", "Entrypoint"})) == R"(["/usr/local/bin/spotshift"])");
  CHECK(kubesim::to_json(*kubesim::json_path(*config, {"config", "Cmd"})) == R"(["run"])");
  CHECK(container_args(r)[0] == "run");
  CHECK(kubesim::json_path(*config, {"config", "ExposedPorts", "8080/tcp"}));
  CHECK(kubesim::json_path(*config, {"config", "ExposedPorts", "8081/tcp"}));
  CHECK(kubesim::json_string(*config, {"config", "Labels", "org.opencontainers.image.title"}) == "spotshift");
  CHECK(kubesim::json_string(*config, {"config", "Labels", "org.opencontainers.image.version"}) ==
        kubesim::json_string(*model::parse_yaml(read_all(kChart + "/Chart.yaml")), {"appVersion"}));

  // One layer from scratch: the binary, its libraries and loader, the CA bundle, the user; no shell.
  const auto* layers = kubesim::json_path(*manifest, {"layers"});
  REQUIRE(layers);
  REQUIRE(layers->Size() == 1);
  std::string layer = layout + "/blobs/sha256/" + std::string(kubesim::json_string((*layers)[0], {"digest"}).substr(7));
  REQUIRE(run(fmt::format("tar -C {} -xzf {}", rootfs, layer)).status == 0);
  for (auto f : {"/usr/local/bin/spotshift", "/etc/ssl/certs/ca-certificates.crt", "/lib64/ld-linux-x86-64.so.2",
                 "/usr/share/zoneinfo/Europe/Berlin", "/usr/share/zoneinfo/UTC"})
    CHECK(run(fmt::format("test -f {}{}", rootfs, f)).status == 0);
  CHECK(read_all(rootfs + "/etc/passwd").find(":65532:65532:") != std::string::npos);
  CHECK(run(fmt::format("test -e {}/bin/sh", rootfs)).status != 0);
  // The binary runs there with only the image's files, as the image's user.
  std::string chroot = run("id -u").output == "0\n" ? "chroot --userspec=65532:65532" : "unshare -r chroot";
  auto version = run(fmt::format("{} {} /usr/local/bin/spotshift version 2>&1", chroot, rootfs));
  INFO(version.output);
  CHECK(version.status == 0);
  CHECK(version.output.starts_with("spotshift "));
  // A policy's disruption window in a time zone reads the image's tz database.
  dir.write(
      "rootfs/tmp/snapshot.json",
      R"({"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"},"conditions":[{"type":"Ready","status":"True"}]}}]})");
  dir.write("rootfs/tmp/policy.yaml",
            "apiVersion: spotshift.io/v1alpha1\nkind: ReschedulePolicy\nmetadata: {name: windows}\n"
            "spec:\n  disruptionWindows: [{schedule: \"0 22 * * *\", duration: 1h, timeZone: Europe/Berlin}]\n");
  auto plan =
      run(fmt::format("{} {} /usr/local/bin/spotshift plan --snapshot /tmp/snapshot.json --policy /tmp/policy.yaml 2>&1", chroot, rootfs));
  INFO(plan.output);
  CHECK(plan.status == 0);
  CHECK(plan.output.find("Policy windows: ") != std::string::npos);
  CHECK((plan.output.find("Drains wait: outside every disruption window; the next opens at ") != std::string::npos ||
         plan.output.find("A disruption window is open now.") != std::string::npos));
}

TEST_CASE("the Dockerfile builds the same root filesystem on scratch, and its build configures without test dependencies", "[image]") {
  std::string dockerfile = read_all(std::string(SOURCE_ROOT) + "/Dockerfile");
  REQUIRE_FALSE(dockerfile.empty());
  CHECK(dockerfile.find("scripts/build-image.sh --rootfs-only /rootfs") != std::string::npos);
  auto runtime_stage = dockerfile.substr(dockerfile.rfind("\nFROM "));
  CHECK(runtime_stage.starts_with("\nFROM scratch\n"));
  CHECK(runtime_stage.find("USER 65532:65532") != std::string::npos);
  CHECK(runtime_stage.find(R"(ENTRYPOINT ["/usr/local/bin/spotshift"])") != std::string::npos);
  // The root filesystem the build stage lays out holds every library the binary links.
  TempDir dir;
  auto rootfs =
      run(fmt::format("{}/scripts/build-image.sh --rootfs-only {} --binary {} 2>&1", SOURCE_ROOT, dir.file("rootfs"), SPOTSHIFT_BIN));
  INFO(rootfs.output);
  REQUIRE(rootfs.status == 0);
  auto ldd = run(fmt::format("ldd {}", SPOTSHIFT_BIN));
  std::regex lib(R"(=> (/\S+))");
  for (auto line : split(ldd.output, '\n')) {
    std::string l(line);
    std::smatch m;
    if (!std::regex_search(l, m, lib)) continue;
    INFO(l);
    CHECK(run(fmt::format("test -f {}{}", dir.file("rootfs"), m[1].str())).status == 0);
  }

  // The build stage's configuration: the operator without tests, Catch2 or Go.
  auto setup = run(
      fmt::format("cd {} && meson setup {} --buildtype=release -Db_ndebug=true -Dtests=disabled", shell_quote(SOURCE_ROOT), dir.file("b")));
  INFO(setup.output);
  REQUIRE(setup.status == 0);
  auto targets = run(fmt::format("ninja -C {} -t targets all", dir.file("b")));
  CHECK(targets.output.find("operator/spotshift:") != std::string::npos);
  CHECK(targets.output.find("tests/") == std::string::npos);
}
