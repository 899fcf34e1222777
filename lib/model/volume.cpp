#include "model/volume.hpp"

#include <algorithm>
#include <unordered_map>

namespace spotshift::model {

namespace {
// Zone and region labels a volume carries (the legacy ones are still set by some provisioners).
constexpr std::string_view kTopologyLabels[] = {
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region"};
}  // namespace

Result<PersistentVolumeClaim> decode_pvc(const JsonValue& v) {
  JsonDecoder d("persistentvolumeclaim");
  PersistentVolumeClaim c;
  decode_meta(d, v, c.meta, [](std::string_view, std::string_view) {});
  if (const JsonValue* spec = d.object(v, "spec")) {
    auto scope = d.field("spec");
    c.volume_name = std::string(d.string(*spec, "volumeName"));
  }
  if (!d.ok()) return d.take_error();
  return c;
}

Result<PersistentVolume> decode_pv(const JsonValue& v) {
  JsonDecoder d("persistentvolume");
  PersistentVolume pv;
  decode_meta(d, v, pv.meta, [](std::string_view, std::string_view) {});
  for (std::string_view key : kTopologyLabels)
    if (auto value = pv.meta.labels.get(key)) pv.node_labels.emplace_back(std::string(key), value->str());
  if (const JsonValue* spec = d.object(v, "spec")) {
    auto s = d.field("spec");
    if (const JsonValue* na = d.object(*spec, "nodeAffinity")) {
      auto f = d.field("nodeAffinity");
      if (auto required = d.node_selector(*na, "required")) {
        // One term whose expressions are single-valued In requirements pins the volume to those
        // labels. Several terms (an OR) cannot be written as one label list: they are left out.
        if (required->terms.size() == 1)
          for (const auto& r : required->terms[0].match_expressions)
            if (r.op == SelectorOp::kIn && r.values.size() == 1) pv.node_labels.emplace_back(r.key.str(), r.values[0].str());
      }
    }
  }
  if (!d.ok()) return d.take_error();
  std::sort(pv.node_labels.begin(), pv.node_labels.end());
  pv.node_labels.erase(std::unique(pv.node_labels.begin(), pv.node_labels.end()), pv.node_labels.end());
  return pv;
}

std::map<std::string, std::vector<std::pair<std::string, std::string>>> volume_node_requirements(
    const std::vector<const PersistentVolumeClaim*>& claims, const std::vector<const PersistentVolume*>& volumes) {
  std::unordered_map<std::string_view, const PersistentVolume*> by_name;
  for (const auto* v : volumes) by_name.emplace(v->meta.name, v);
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> out;
  for (const auto* c : claims) {
    if (c->volume_name.empty()) {
      out[c->meta.key()];  // not bound yet: it binds where the pod is scheduled
      continue;
    }
    auto it = by_name.find(c->volume_name);
    if (it == by_name.end()) continue;  // its volume is unknown
    out[c->meta.key()] = it->second->node_labels;
  }
  return out;
}

}  // namespace spotshift::model
