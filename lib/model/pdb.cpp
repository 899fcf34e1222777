#include "model/pdb.hpp"

namespace spotshift::model {

bool PodDisruptionBudget::matches(const Pod& pod) const {
  if (pod.meta.namespace_ != meta.namespace_) return false;
  if (!selector) return false;  // a null selector matches no pod; {} matches every pod
  return selector->matches(pod.meta.labels);
}

bool PodDisruptionBudget::same_content(const PodDisruptionBudget& other) const {
  PodDisruptionBudget copy = *this;
  copy.meta.resource_version = other.meta.resource_version;
  return copy == other;
}

Result<PodDisruptionBudget> decode_pdb(JsonReader& r) {
  JsonDecoder d("poddisruptionbudget");
  PodDisruptionBudget b;
  auto spec = [&](std::string_view key) {
    if (key == "selector") b.selector = d.label_selector(r);
    else if (key == "minAvailable") b.min_available = decode_int_or_string(d, r);
    else if (key == "maxUnavailable") b.max_unavailable = decode_int_or_string(d, r);
    else if (key == "unhealthyPodEvictionPolicy") b.always_allow_unhealthy = d.string(r) == "AlwaysAllow";
    else return false;
    return true;
  };
  auto status = [&](std::string_view key) {
    auto int32 = [&] { return static_cast<int32_t>(d.integer(r)); };
    if (key == "observedGeneration") b.status.observed_generation = d.integer(r);
    else if (key == "disruptionsAllowed") b.status.disruptions_allowed = int32();
    else if (key == "currentHealthy") b.status.current_healthy = int32();
    else if (key == "desiredHealthy") b.status.desired_healthy = int32();
    else if (key == "expectedPods") b.status.expected_pods = int32();
    else if (key == "disruptedPods")
      d.members(r, [&](std::string_view name) {
        b.status.disrupted_pods.emplace_back(name);
        return false;  // the value (when the eviction was granted) is skipped
      });
    else return false;
    return true;
  };
  auto done = decode_object(d, r, b.meta, [&](std::string_view key) {
    if (key == "spec") d.members(r, spec);
    else if (key == "status") d.members(r, status);
    else return false;
    return true;
  });
  if (!done) return done.error();
  return b;
}

Result<PodDisruptionBudget> decode_pdb(std::string_view json) {
  return decode_whole("poddisruptionbudget", json, [](JsonReader& r) { return decode_pdb(r); });
}

}  // namespace spotshift::model
