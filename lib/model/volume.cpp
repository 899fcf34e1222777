#include "model/volume.hpp"

#include <algorithm>
#include <unordered_map>

namespace spotshift::model {

namespace {
// Zone and region labels a volume carries (the legacy ones are still set by some provisioners).
constexpr std::string_view kTopologyLabels[] = {"topology.kubernetes.io/zone", "topology.kubernetes.io/region",
                                                "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"};
}  // namespace

Result<PersistentVolumeClaim> decode_pvc(JsonReader& r) {
  JsonDecoder d("persistentvolumeclaim");
  PersistentVolumeClaim c;
  auto done = decode_object(d, r, c.meta, [&](std::string_view key) {
    if (key != "spec") return false;
    d.members(r, [&](std::string_view f) {
      if (f != "volumeName") return false;
      c.volume_name = std::string(d.string(r));
      return true;
    });
    return true;
  });
  if (!done) return done.error();
  return c;
}

Result<PersistentVolumeClaim> decode_pvc(std::string_view json) {
  return decode_whole("persistentvolumeclaim", json, [](JsonReader& r) { return decode_pvc(r); });
}

Result<PersistentVolume> decode_pv(JsonReader& r) {
  JsonDecoder d("persistentvolume");
  PersistentVolume pv;
  auto done = decode_object(d, r, pv.meta, [&](std::string_view key) {
    if (key != "spec") return false;
    d.members(r, [&](std::string_view f) {
      if (f != "nodeAffinity") return false;
      d.members(r, [&](std::string_view g) {
        if (g != "required") return false;
        // One term whose expressions are single-valued In requirements pins the volume to those
        // labels. Several terms (an OR) cannot be written as one label list: they are left out.
        if (auto required = d.node_selector(r); required && required->terms.size() == 1)
          for (const auto& e : required->terms[0].match_expressions)
            if (e.op == SelectorOp::kIn && e.values.size() == 1) pv.node_labels.emplace_back(e.key.str(), e.values[0].str());
        return true;
      });
      return true;
    });
    return true;
  });
  if (!done) return done.error();
  for (std::string_view key : kTopologyLabels)
    if (auto value = pv.meta.labels.get(key)) pv.node_labels.emplace_back(std::string(key), value->str());
  std::sort(pv.node_labels.begin(), pv.node_labels.end());
  pv.node_labels.erase(std::unique(pv.node_labels.begin(), pv.node_labels.end()), pv.node_labels.end());
  return pv;
}

Result<PersistentVolume> decode_pv(std::string_view json) {
  return decode_whole("persistentvolume", json, [](JsonReader& r) { return decode_pv(r); });
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
