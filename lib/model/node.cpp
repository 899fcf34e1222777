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

std::string_view Node::number_annotation(std::string_view key) const {
  for (const auto& [k, v] : number_annotations)
    if (k == key) return v;
  return {};
}

bool Node::same_content(const Node& other) const {
  return meta.name == other.meta.name && meta.uid == other.meta.uid && meta.labels == other.meta.labels &&
         meta.deletion_timestamp == other.meta.deletion_timestamp && unschedulable == other.unschedulable && taints == other.taints &&
         allocatable == other.allocatable && conditions == other.conditions && opt_out == other.opt_out &&
         number_annotations == other.number_annotations;
}

namespace {

// A plain decimal number, as a price is written ("3.06", "12"): digits with at most one point.
bool is_decimal(std::string_view v) {
  if (v.empty() || v.size() > 32) return false;
  bool digit = false, point = false;
  for (char c : v) {
    if (c >= '0' && c <= '9') digit = true;
    else if (c == '.' && !point) point = true;
    else return false;
  }
  return digit;
}

void decode_node_spec(JsonDecoder& d, JsonReader& r, Node& n) {
  d.members(r, [&](std::string_view key) {
    if (key == "unschedulable") {
      n.unschedulable = d.boolean(r);
    } else if (key == "taints") {
      d.elements(r, [&] {
        Taint taint;
        std::string_view effect_text;
        d.members(r, [&](std::string_view f) {
          if (f == "key") taint.key = InternedString(d.string(r));
          else if (f == "value") taint.value = InternedString(d.string(r));
          else if (f == "effect") effect_text = d.string(r);
          else return false;
          return true;
        });
        if (!d.ok()) return;
        auto effect = parse_taint_effect(effect_text);
        if (!effect) {
          auto f = d.field("effect");
          return d.fail(effect.error().message);
        }
        taint.effect = *effect;
        n.taints.push_back(taint);
      });
    } else {
      return false;
    }
    return true;
  });
}

void decode_node_status(JsonDecoder& d, JsonReader& r, Node& n) {
  d.members(r, [&](std::string_view key) {
    if (key == "allocatable") {
      n.allocatable = d.resource_list(r);
    } else if (key == "conditions") {
      d.elements(r, [&] {
        std::string_view type, status;
        d.members(r, [&](std::string_view f) {
          if (f == "type") type = d.string(r);
          else if (f == "status") status = d.string(r);
          else return false;
          return true;
        });
        auto st = parse_condition_status(status);
        if (type == "Ready") n.conditions.ready = st;
        else if (type == "MemoryPressure") n.conditions.memory_pressure = st;
        else if (type == "DiskPressure") n.conditions.disk_pressure = st;
        else if (type == "PIDPressure") n.conditions.pid_pressure = st;
        else if (type == "NetworkUnavailable") n.conditions.network_unavailable = st;
      });
    } else {
      return false;
    }
    return true;
  });
}

}  // namespace

Result<Node> decode_node(JsonReader& r) {
  JsonDecoder d("node");
  Node n;
  auto opt_out = [&](std::string_view key, std::string_view value) {
    if (is_decimal(value)) n.number_annotations.emplace_back(key, value);
    if (value != "true" || !n.opt_out.empty()) return;
    if (key == "spotshift.io/do-not-drain" || key == "karpenter.sh/do-not-disrupt" ||
        key == "cluster-autoscaler.kubernetes.io/scale-down-disabled")
      n.opt_out = std::string(key);
  };
  auto done = decode_object(d, r, n.meta, opt_out, [&](std::string_view key) {
    if (key == "spec") decode_node_spec(d, r, n);
    else if (key == "status") decode_node_status(d, r, n);
    else return false;
    return true;
  });
  if (!done) return done.error();
  if (n.meta.name.empty()) {
    d.fail("metadata.name is empty");
    return d.take_error();
  }
  return n;
}

Result<Node> decode_node(std::string_view json) {
  return decode_whole("node", json, [](JsonReader& r) { return decode_node(r); });
}

}  // namespace spotshift::model
