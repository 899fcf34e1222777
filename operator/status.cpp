#include "status.hpp"

#include "drain/plan_format.hpp"

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace spotshift::op {

namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void str(Writer& w, std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }

void key_str(Writer& w, std::string_view k, std::string_view v) {
  str(w, k);
  str(w, v);
}

void condition(Writer& w, const StatusInput& in, std::string_view type, bool status, std::string_view reason, std::string_view message) {
  std::string_view value = status ? "True" : "False";
  Time since = in.now;
  for (const auto& c : in.previous.conditions)
    if (c.type == type && c.status == value && c.last_transition != Time{}) since = c.last_transition;
  w.StartObject();
  key_str(w, "type", type);
  key_str(w, "status", value);
  key_str(w, "reason", reason);
  key_str(w, "message", message);
  str(w, "observedGeneration");
  w.Int64(in.generation);
  key_str(w, "lastTransitionTime", format_time(since));
  w.EndObject();
}

}  // namespace

std::string_view policy_mode(const drain::PolicySpec& spec) {
  if (spec.suspend) return "Suspended";
  return spec.dry_run ? "DryRun" : "Active";
}

std::string status_body(const StatusInput& in, bool with_plan_duration) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  key_str(w, "apiVersion", fmt::format("{}/{}", drain::kGroup, drain::kVersion));
  key_str(w, "kind", drain::kKind);
  str(w, "metadata");
  w.StartObject();
  key_str(w, "name", in.name);
  if (!in.resource_version.empty()) key_str(w, "resourceVersion", in.resource_version);
  w.EndObject();
  str(w, "status");
  w.StartObject();
  str(w, "observedGeneration");
  w.Int64(in.generation);

  str(w, "conditions");
  w.StartArray();
  if (in.invalid) {
    condition(w, in, "Valid", false, "InvalidSpec", *in.invalid);
    condition(w, in, "Ready", false, "InvalidSpec", "no plan is made until the spec is fixed");
  } else {
    condition(w, in, "Valid", true, "Valid", "the spec is valid");
    const auto& s = in.plan->summary;
    condition(w, in, "Ready", true, "Planned",
              fmt::format("{} on-demand node{}, {} spot node{}, {} drainable", s.on_demand_nodes, s.on_demand_nodes == 1 ? "" : "s",
                          s.spot_nodes, s.spot_nodes == 1 ? "" : "s", s.drainable_nodes));
  }
  if (in.current)
    condition(w, in, "Draining", true, "Draining",
              fmt::format("draining {}: {} pod{} evicted, {} to go", in.current->node, in.current->evicted,
                          in.current->evicted == 1 ? "" : "s", in.current->remaining));
  else condition(w, in, "Draining", false, "Idle", "no drain in progress");
  if (in.blocked) condition(w, in, "Blocked", true, in.blocked->reason, in.blocked->message);
  else condition(w, in, "Blocked", false, "NotBlocked", "no gate holds a drainable node back");
  w.EndArray();
  if (in.spec) key_str(w, "mode", policy_mode(*in.spec));
  if (in.blocked) key_str(w, "blockedBy", in.blocked->reason);

  if (in.plan) {
    str(w, "onDemandNodes");
    w.Int(in.plan->summary.on_demand_nodes);
    str(w, "spotNodes");
    w.Int(in.plan->summary.spot_nodes);
    str(w, "drainableNodes");
    w.Int(in.plan->summary.drainable_nodes);
    str(w, "undrainableNodes");
    w.StartArray();
    size_t n = 0;
    for (const auto& u : in.plan->undrainable) {
      if (n++ == kStatusUndrainableLimit) break;
      w.StartObject();
      key_str(w, "node", u.node);
      str(w, "reasons");
      w.StartArray();
      for (const auto& r : u.reasons) str(w, r);
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
    if (in.plan->summary.hourly_savings) key_str(w, "estimatedHourlySavings", drain::format_price(*in.plan->summary.hourly_savings));
    if (with_plan_duration) key_str(w, "lastPlanDuration", fmt::format("{:.1f}ms", in.plan->summary.plan_millis));
  }
  if (in.current) {
    str(w, "currentDrain");
    w.StartObject();
    key_str(w, "node", in.current->node);
    key_str(w, "startedAt", format_time(in.current->started_at));
    str(w, "podsEvicted");
    w.Int(in.current->evicted);
    str(w, "podsRemaining");
    w.Int(in.current->remaining);
    w.EndObject();
  }
  if (in.last_drain) {
    str(w, "lastDrain");
    w.StartObject();
    key_str(w, "node", in.last_drain->node);
    key_str(w, "result", in.last_drain->result);
    if (!in.last_drain->reason.empty()) key_str(w, "reason", in.last_drain->reason);
    key_str(w, "finishedAt", format_time(in.last_drain->finished_at));
    w.EndObject();
  }
  if (in.next_drain_after) key_str(w, "nextDrainAfter", format_time(*in.next_drain_after));
  if (in.next_window_start) key_str(w, "nextWindowStart", format_time(*in.next_window_start));
  if (!in.recent_drain_starts.empty()) {
    str(w, "recentDrainStarts");
    w.StartArray();
    for (Time t : in.recent_drain_starts) str(w, format_time(t));
    w.EndArray();
  }
  str(w, "nodesDrainedTotal");
  w.Int64(in.nodes_drained_total);
  str(w, "podsEvictedTotal");
  w.Int64(in.pods_evicted_total);
  w.EndObject();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace spotshift::op
