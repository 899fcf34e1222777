#pragma once
// A compact Node: what scheduling and planning read, nothing else.

#include "model/meta.hpp"
#include "model/resources.hpp"
#include "model/taints.hpp"

#include <vector>

namespace spotshift::model {

struct NodeConditions {
  ConditionStatus ready = ConditionStatus::kAbsent;
  ConditionStatus memory_pressure = ConditionStatus::kAbsent;
  ConditionStatus disk_pressure = ConditionStatus::kAbsent;
  ConditionStatus pid_pressure = ConditionStatus::kAbsent;
  ConditionStatus network_unavailable = ConditionStatus::kAbsent;
  bool operator==(const NodeConditions&) const = default;
};

struct Node {
  ObjectMeta meta;
  bool unschedulable = false;
  std::vector<Taint> taints;
  ResourceList allocatable;
  NodeConditions conditions;
  // The first opt-out annotation set to "true": spotshift.io/do-not-drain,
  // karpenter.sh/do-not-disrupt or cluster-autoscaler.kubernetes.io/scale-down-disabled. Empty
  // when the node has none.
  std::string opt_out;
  // Annotations whose value is a decimal number (a price per hour a policy may read, by a key the
  // policy names); others are not kept.
  std::vector<std::pair<std::string, std::string>> number_annotations;

  const std::string& name() const { return meta.name; }
  bool ready() const { return conditions.ready == ConditionStatus::kTrue; }
  // Ready, and no pressure or network condition set.
  bool healthy() const;
  bool has_taint(std::string_view key, TaintEffect effect) const;
  // The value of a kept number annotation, or empty.
  std::string_view number_annotation(std::string_view key) const;

  // Equal in everything the operator reads. Heartbeats only change condition timestamps and the
  // resourceVersion, so they compare equal here and never trigger replanning.
  bool same_content(const Node& other) const;
  bool operator==(const Node&) const = default;
};

// The object r is at, read whole; or the one object of json.
Result<Node> decode_node(JsonReader& r);
Result<Node> decode_node(std::string_view json);

}  // namespace spotshift::model
