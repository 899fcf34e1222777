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

Result<PodDisruptionBudget> decode_pdb(const JsonValue& v) {
  JsonDecoder d("poddisruptionbudget");
  PodDisruptionBudget b;
  if (!v.IsObject()) {
    d.wrong_type("an object", v);
    return d.take_error();
  }
  decode_meta(d, v, b.meta, [](std::string_view, std::string_view) {});
  if (const JsonValue* spec = d.object(v, "spec")) {
    auto s = d.field("spec");
    b.selector = d.label_selector(*spec, "selector");
    b.min_available = decode_int_or_string(d, *spec, "minAvailable");
    b.max_unavailable = decode_int_or_string(d, *spec, "maxUnavailable");
    b.always_allow_unhealthy = d.string(*spec, "unhealthyPodEvictionPolicy") == "AlwaysAllow";
  }
  if (const JsonValue* status = d.object(v, "status")) {
    auto s = d.field("status");
    b.status.observed_generation = d.integer(*status, "observedGeneration");
    b.status.disruptions_allowed = static_cast<int32_t>(d.integer(*status, "disruptionsAllowed"));
    b.status.current_healthy = static_cast<int32_t>(d.integer(*status, "currentHealthy"));
    b.status.desired_healthy = static_cast<int32_t>(d.integer(*status, "desiredHealthy"));
    b.status.expected_pods = static_cast<int32_t>(d.integer(*status, "expectedPods"));
    d.each_member(*status, "disruptedPods",
                  [&](std::string_view name, const JsonValue&) { b.status.disrupted_pods.emplace_back(name); });
  }
  if (!d.ok()) return d.take_error();
  return b;
}

}  // namespace spotshift::model
