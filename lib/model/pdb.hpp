#pragma once
// A compact policy/v1 PodDisruptionBudget.

#include "model/meta.hpp"
#include "model/pod.hpp"
#include "model/selector.hpp"

#include <optional>
#include <string>
#include <vector>

namespace spotshift::model {

struct PodDisruptionBudgetStatus {
  int64_t observed_generation = 0;
  int32_t disruptions_allowed = 0;
  int32_t current_healthy = 0;
  int32_t desired_healthy = 0;
  int32_t expected_pods = 0;
  std::vector<std::string> disrupted_pods;  // names in disruptedPods
  bool operator==(const PodDisruptionBudgetStatus&) const = default;
};

struct PodDisruptionBudget {
  ObjectMeta meta;
  std::optional<LabelSelector> selector;
  std::optional<IntOrString> min_available;
  std::optional<IntOrString> max_unavailable;
  bool always_allow_unhealthy = false;  // unhealthyPodEvictionPolicy: AlwaysAllow
  PodDisruptionBudgetStatus status;

  // Same namespace and a selector that matches. In policy/v1 an absent (null) selector matches
  // no pod and an empty one ({}) every pod of the namespace, as both the eviction subresource and
  // the disruption controller decide.
  bool matches(const Pod& pod) const;
  // The status is current: the disruption controller has seen this generation.
  bool status_current() const { return status.observed_generation >= meta.generation; }

  bool same_content(const PodDisruptionBudget& other) const;
  bool operator==(const PodDisruptionBudget&) const = default;
};

// The object r is at, read whole; or the one object of json.
Result<PodDisruptionBudget> decode_pdb(JsonReader& r);
Result<PodDisruptionBudget> decode_pdb(std::string_view json);

}  // namespace spotshift::model
