#pragma once
// Renders charts/spotshift with helm-render (Go text/template + sprig + Helm's functions, built
// from tests/helm/render.go) and reads the result back as objects.

#include "e2e/env.hpp"
#include "json_util.hpp"
#include "model/yaml.hpp"

#include <fmt/format.h>

#include <string>
#include <tuple>
#include <vector>

namespace spotshift::chart {

inline const std::string kChart = std::string(SOURCE_ROOT) + "/charts/spotshift";

struct Rendered {
  int status = -1;
  std::string text;   // the YAML stream
  std::string error;  // stderr
  std::vector<model::JsonDocument> docs;

  std::vector<const kubesim::Value*> all(std::string_view kind) const {
    std::vector<const kubesim::Value*> out;
    for (const auto& d : docs)
      if (kubesim::json_string(d, {"kind"}) == kind) out.push_back(&d);
    return out;
  }
  // The one object of this kind (and name); fails the test when there is not exactly one.
  const kubesim::Value& one(std::string_view kind, std::string_view name = {}) const {
    std::vector<const kubesim::Value*> found;
    for (const auto* d : all(kind))
      if (name.empty() || kubesim::json_string(*d, {"metadata", "name"}) == name) found.push_back(d);
    INFO("kind " << kind << " name " << name << "\n" << text);
    REQUIRE(found.size() == 1);
    return *found[0];
  }
  std::vector<std::string> kinds() const {
    std::vector<std::string> out;
    for (const auto& d : docs) out.emplace_back(kubesim::json_string(d, {"kind"}));
    return out;
  }
  // The YAML of the documents whose kind satisfies pred, in order; hooks (helm test's pod) are
  // left out, as `helm install` leaves them.
  template <class Pred>
  std::string documents(Pred pred) const {
    std::string out;
    for (const auto& d : docs)
      if (pred(std::string(kubesim::json_string(d, {"kind"}))) && !is_hook(d)) out += "---\n" + kubesim::to_json(d) + "\n";
    return out;
  }
  static bool is_hook(const kubesim::Value& d) { return !kubesim::json_string(d, {"metadata", "annotations", "helm.sh/hook"}).empty(); }
};

using e2e::read_all;

// helm-render --chart charts/spotshift ARGS (already shell-quoted).
inline Rendered render(const testing::TempDir& dir, const std::string& args) {
  static int n = 0;
  std::string out = dir.file(fmt::format("render-{}.yaml", ++n)), err = dir.file(fmt::format("render-{}.err", n));
  Rendered r;
  r.status =
      testing::run(fmt::format("{{ {} --chart {} {} >{} 2>{}; }}", HELM_RENDER, testing::shell_quote(kChart), args, out, err)).status;
  r.text = read_all(out);
  r.error = read_all(err);
  if (r.status == 0) {
    auto docs = model::parse_yaml_documents(r.text);
    INFO(r.text);
    REQUIRE(docs);
    r.docs = std::move(*docs);
  }
  return r;
}

// The operator container of the rendered Deployment (its only one).
inline const kubesim::Value& container(const Rendered& r) {
  const auto* containers = kubesim::json_path(r.one("Deployment"), {"spec", "template", "spec", "containers"});
  REQUIRE(containers);
  REQUIRE(containers->Size() == 1);
  return (*containers)[0];
}

// The operator container's args.
inline std::vector<std::string> container_args(const Rendered& r) {
  std::vector<std::string> out;
  const auto* args = kubesim::json_path(container(r), {"args"});
  REQUIRE(args);
  for (const auto& a : args->GetArray()) out.emplace_back(a.GetString());
  return out;
}

// The rendered container args, with both listeners on a free local port (several replicas share
// this host), then the kubeconfig to run with: what the Deployment's pod would run.
inline std::string operator_args(const Rendered& r, const std::string& kubeconfig) {
  std::string out;
  for (auto a : container_args(r)) {
    if (a.starts_with("--metrics-bind-address=")) a = "--metrics-bind-address=127.0.0.1:0";
    if (a.starts_with("--health-probe-bind-address=")) a = "--health-probe-bind-address=127.0.0.1:0";
    out += testing::shell_quote(a) + " ";
  }
  return out + "--kubeconfig " + testing::shell_quote(kubeconfig);
}

// One permission of the chart's roles: an API group, a resource (with its subresource) and a verb.
struct Atom {
  std::string role_kind, group, resource, verb;
  bool operator==(const Atom&) const = default;
  bool operator<(const Atom& o) const {
    return std::tie(role_kind, group, resource, verb) < std::tie(o.role_kind, o.group, o.resource, o.verb);
  }
  std::string text() const { return fmt::format("{}: {} {} in group \"{}\"", role_kind, verb, resource, group); }
};

// The operator's own role of a kind, in a release named spotshift: its ClusterRole (not the
// aggregated ones for people) or its leader-election Role.
inline const kubesim::Value& operator_role(const Rendered& r, std::string_view kind) {
  return kind == "ClusterRole" ? r.one("ClusterRole", "spotshift") : r.one("Role");
}

inline std::vector<Atom> atoms_of(const kubesim::Value& role) {
  std::vector<Atom> out;
  std::string kind(kubesim::json_string(role, {"kind"}));
  for (const auto& rule : kubesim::json_path(role, {"rules"})->GetArray())
    for (const auto& g : rule["apiGroups"].GetArray())
      for (const auto& res : rule["resources"].GetArray())
        for (const auto& v : rule["verbs"].GetArray()) out.push_back(Atom{kind, g.GetString(), res.GetString(), v.GetString()});
  return out;
}

// The role with one rule per atom, `without` left out: the same grants minus exactly one.
inline std::string role_without(const kubesim::Value& role, const Atom& without) {
  kubesim::Doc out;
  out.CopyFrom(role, out.GetAllocator());
  auto& a = out.GetAllocator();
  kubesim::Value rules(rapidjson::kArrayType);
  for (const auto& atom : atoms_of(role)) {
    if (atom == without) continue;
    kubesim::Value rule(rapidjson::kObjectType);
    for (auto [key, value] : {std::pair{"apiGroups", &atom.group}, {"resources", &atom.resource}, {"verbs", &atom.verb}}) {
      kubesim::Value list(rapidjson::kArrayType);
      list.PushBack(kubesim::Value(value->c_str(), a), a);
      rule.AddMember(kubesim::Value(key, a), list, a);
    }
    rules.PushBack(rule, a);
  }
  out["rules"] = rules;
  return kubesim::to_json(out);
}

inline bool is_crd(const std::string& kind) { return kind == "CustomResourceDefinition"; }

// The Prometheus Operator's ServiceMonitor, PodMonitor and PrometheusRule kinds, with schemas that
// keep every field: what the chart's monitoring objects need to apply.
inline void apply_monitoring_crds(e2e::Env& env) {
  for (auto [plural, kind] :
       {std::pair{"servicemonitors", "ServiceMonitor"}, {"podmonitors", "PodMonitor"}, {"prometheusrules", "PrometheusRule"}}) {
    std::string singular = plural;
    singular.pop_back();
    env.apply(singular + "-crd", fmt::format(R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {0}.monitoring.coreos.com}}
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {{plural: {0}, singular: {1}, kind: {2}}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
)",
                                             plural, singular, kind));
  }
}

// What `helm install --create-namespace` does, as kubectl: the namespace, the CRDs first, then
// everything else (already in install order).
inline void install(e2e::Env& env, const testing::TempDir& dir, const std::string& ns, const std::string& crds, const std::string& rest) {
  env.kubectl("create namespace " + ns, false);  // may exist already
  if (!crds.empty()) {
    dir.write("crds.yaml", crds);
    env.kubectl("apply -f " + dir.file("crds.yaml"));
  }
  dir.write("rest.yaml", rest);
  env.kubectl("apply -f " + dir.file("rest.yaml"));
}

inline void install(e2e::Env& env, const testing::TempDir& dir, const std::string& ns, const Rendered& r) {
  install(env, dir, ns, r.documents(is_crd), r.documents([](const std::string& k) { return !is_crd(k); }));
}

}  // namespace spotshift::chart
