#pragma once
// Renders charts/spotshift with helm-render (Go text/template + sprig + Helm's functions, built
// from tests/helm/render.go) and reads the result back as objects.

#include "e2e/env.hpp"
#include "json_util.hpp"
#include "model/yaml.hpp"

#include <fmt/format.h>

#include <string>
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
      if (kubesim::get_str(d, {"kind"}) == kind) out.push_back(&d);
    return out;
  }
  // The one object of this kind (and name); fails the test when there is not exactly one.
  const kubesim::Value& one(std::string_view kind, std::string_view name = {}) const {
    std::vector<const kubesim::Value*> found;
    for (const auto* d : all(kind))
      if (name.empty() || kubesim::get_str(*d, {"metadata", "name"}) == name) found.push_back(d);
    INFO("kind " << kind << " name " << name << "\n" << text);
    REQUIRE(found.size() == 1);
    return *found[0];
  }
  std::vector<std::string> kinds() const {
    std::vector<std::string> out;
    for (const auto& d : docs) out.emplace_back(kubesim::get_str(d, {"kind"}));
    return out;
  }
  // The YAML of the documents whose kind satisfies pred, in order.
  template <class Pred>
  std::string documents(Pred pred) const {
    std::string out;
    for (const auto& d : docs)
      if (pred(std::string(kubesim::get_str(d, {"kind"})))) out += "---\n" + kubesim::to_json(d) + "\n";
    return out;
  }
};

using e2e::read_all;

// helm-render --chart charts/spotshift ARGS (already shell-quoted).
inline Rendered render(const testing::TempDir& dir, const std::string& args) {
  static int n = 0;
  std::string out = dir.file(fmt::format("render-{}.yaml", ++n)), err = dir.file(fmt::format("render-{}.err", n));
  Rendered r;
  r.status = testing::run(fmt::format("{{ {} --chart {} {} >{} 2>{}; }}", HELM_RENDER, testing::shell_quote(kChart), args, out, err)).status;
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
  const auto* containers = kubesim::get_path(r.one("Deployment"), {"spec", "template", "spec", "containers"});
  REQUIRE(containers);
  REQUIRE(containers->Size() == 1);
  return (*containers)[0];
}

// The operator container's args.
inline std::vector<std::string> container_args(const Rendered& r) {
  std::vector<std::string> out;
  const auto* args = kubesim::get_path(container(r), {"args"});
  REQUIRE(args);
  for (const auto& a : args->GetArray()) out.emplace_back(a.GetString());
  return out;
}

inline bool is_crd(const std::string& kind) { return kind == "CustomResourceDefinition"; }

// What `helm install --create-namespace` does, as kubectl: the namespace, the CRDs first, then
// everything else (already in install order).
inline void install(e2e::Env& env, const testing::TempDir& dir, const std::string& ns, const std::string& crds,
                    const std::string& rest) {
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
