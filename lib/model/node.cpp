#include "model/node.hpp"

namespace spotshift::model {

bool Node::healthy() const {
  auto off = [](ConditionStatus s) { return s == ConditionStatus::kFalse || s == ConditionStatus::kAbsent; };
  return ready() && off(conditions.memory_pressure) && off(conditions.disk_pressure) && off(conditions.pid_pressure) &&
         off(conditions.network_unavailable);
}

bool Node::has_taint(std::string_view key, TaintEffect effect) const {
  for (const auto& t : taints)
    if (t.key.view() == key && t.effect == effect) return true;
  return false;
}

bool Node::same_content(const Node& other) const {
  return meta.name == other.meta.name && meta.uid == other.meta.uid && meta.labels == other.meta.labels &&
         meta.deletion_timestamp == other.meta.deletion_timestamp && unschedulable == other.unschedulable &&
         taints == other.taints && allocatable == other.allocatable && conditions == other.conditions &&
         opt_out == other.opt_out;
}

Result<Node> decode_node(const JsonValue& v) {
  JsonDecoder d("node");
  Node n;
  if (!v.IsObject()) {
    d.wrong_type("an object", v);
    return d.take_error();
  }
  decode_meta(d, v, n.meta, [&](std::string_view key, std::string_view value) {
    if (value != "true" || !n.opt_out.empty()) return;
    if (key == "spotshift.io/do-not-drain" || key == "karpenter.sh/do-not-disrupt" ||
        key == "cluster-autoscaler.kubernetes.io/scale-down-disabled")
      n.opt_out = std::string(key);
  });
  if (const JsonValue* spec = d.object(v, "spec")) {
    auto s = d.field("spec");
    n.unschedulable = d.boolean(*spec, "unschedulable");
    d.each(*spec, "taints", [&](const JsonValue& t) {
      Taint taint;
      taint.key = InternedString(d.string(t, "key"));
      taint.value = InternedString(d.string(t, "value"));
      auto effect = parse_taint_effect(d.string(t, "effect"));
      if (!effect) {
        auto f = d.field("effect");
        return d.fail(effect.error().message);
      }
      taint.effect = *effect;
      n.taints.push_back(taint);
    });
  }
  if (const JsonValue* status = d.object(v, "status")) {
    auto s = d.field("status");
    n.allocatable = d.resource_list(*status, "allocatable");
    d.each(*status, "conditions", [&](const JsonValue& c) {
      auto type = d.string(c, "type");
      auto st = parse_condition_status(d.string(c, "status"));
      if (type == "Ready") n.conditions.ready = st;
      else if (type == "MemoryPressure") n.conditions.memory_pressure = st;
      else if (type == "DiskPressure") n.conditions.disk_pressure = st;
      else if (type == "PIDPressure") n.conditions.pid_pressure = st;
      else if (type == "NetworkUnavailable") n.conditions.network_unavailable = st;
    });
  }
  if (!d.ok()) return d.take_error();
  if (n.meta.name.empty()) {
    d.fail("metadata.name is empty");
    return d.take_error();
  }
  return n;
}

}  // namespace spotshift::model
