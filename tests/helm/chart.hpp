#pragma once
// Renders charts/spotshift with helm-render (Go text/template + sprig + Helm's functions, built
// from tests/helm/render.go) and reads the result back as objects.

#include "json_util.hpp"
#include "model/yaml.hpp"
#include "support/catch.hpp"
#include "support/process.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
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

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// helm-render --chart charts/spotshift ARGS (already shell-quoted).
inline Rendered render(const testing::TempDir& dir, const std::string& args) {
  static int n = 0;
  std::string out = dir.file(fmt::format("render-{}.yaml", ++n)), err = dir.file(fmt::format("render-{}.err", n));
  Rendered r;
  r.status = testing::run(fmt::format("{{ {} --chart {} {} >{} 2>{}; }}", HELM_RENDER, testing::shell_quote(kChart), args, out, err)).status;
  r.text = slurp(out);
  r.error = slurp(err);
  if (r.status == 0) {
    auto docs = model::parse_yaml_documents(r.text);
    INFO(r.text);
    REQUIRE(docs);
    r.docs = std::move(*docs);
  }
  return r;
}

// The operator container's args in the rendered Deployment.
inline std::vector<std::string> container_args(const Rendered& r) {
  std::vector<std::string> out;
  const auto* containers = kubesim::get_path(r.one("Deployment"), {"spec", "template", "spec", "containers"});
  REQUIRE(containers);
  REQUIRE(containers->Size() == 1);
  const auto* args = kubesim::get_path((*containers)[0], {"args"});
  REQUIRE(args);
  for (const auto& a : args->GetArray()) out.emplace_back(a.GetString());
  return out;
}

}  // namespace spotshift::chart
