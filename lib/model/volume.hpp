#pragma once
// PersistentVolumeClaims and PersistentVolumes, reduced to what VolumeZone needs: which volume a
// claim is bound to, and which node labels a volume requires (its zone and region labels, and
// the single-valued terms of its required node affinity).

#include "model/meta.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace spotshift::model {

struct PersistentVolumeClaim {
  ObjectMeta meta;
  std::string volume_name;  // spec.volumeName; empty while unbound
  bool same_content(const PersistentVolumeClaim& o) const { return volume_name == o.volume_name && meta.uid == o.meta.uid; }
};

struct PersistentVolume {
  ObjectMeta meta;
  std::vector<std::pair<std::string, std::string>> node_labels;  // labels a node must carry
  bool same_content(const PersistentVolume& o) const { return node_labels == o.node_labels && meta.uid == o.meta.uid; }
};

// The object r is at, read whole; or the one object of json.
Result<PersistentVolumeClaim> decode_pvc(JsonReader& r);
Result<PersistentVolumeClaim> decode_pvc(std::string_view json);
Result<PersistentVolume> decode_pv(JsonReader& r);
Result<PersistentVolume> decode_pv(std::string_view json);

// "namespace/claim" -> the node labels its bound volume requires: none for a claim not bound yet
// or bound to a volume with no zone; a claim bound to a volume not in `volumes` is left out, so
// a planner can tell a claim it knows nothing about from one that constrains nothing.
std::map<std::string, std::vector<std::pair<std::string, std::string>>> volume_node_requirements(
    const std::vector<const PersistentVolumeClaim*>& claims, const std::vector<const PersistentVolume*>& volumes);

}  // namespace spotshift::model
