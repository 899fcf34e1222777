#include "drain/policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace spotshift::drain {

std::string_view to_string(Handling h) { return h == Handling::kMove ? "Move" : "Block"; }

std::string_view to_string(GateScope s) {
  switch (s) {
    case GateScope::kAny: return "Any";
    case GateScope::kSpotOnly: return "SpotOnly";
    case GateScope::kDisabled: return "Disabled";
  }
  return "Any";
}

std::string_view to_string(DrainOrder o) { return o == DrainOrder::kScarceResources ? "ScarceResources" : "RequestedCPU"; }

namespace {

model::LabelSelector exists(std::string_view key) {
  return model::LabelSelector({model::Requirement::make(key, model::SelectorOp::kExists, {}).value()});
}

constexpr std::array kSpecFields = {
    "onDemandNodeSelector", "spotNodeSelector",       "podSelector",       "namespaceSelector",
    "housekeepingInterval", "nodeDrainDelay",         "podEvictionTimeout", "maxGracefulTermination",
    "deleteNonReplicatedPods", "localStorage",        "kubeSystemPodsWithoutPDB", "unschedulablePodsGate",
    "dryRun",               "suspend",                "profile",           "drainOrder",
    "searchIterations",     "terminationHeadroom",    "drainedNodeTaintTTL", "evictJobPods",
};

void reject_unknown(model::JsonDecoder& d, const model::JsonValue& obj, const auto& known) {
  if (!obj.IsObject()) return;
  for (auto it = obj.MemberBegin(); it != obj.MemberEnd(); ++it) {
    std::string_view name(it->name.GetString(), it->name.GetStringLength());
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string valid;
    for (std::string_view k : known) valid += valid.empty() ? std::string(k) : fmt::format(", {}", k);
    return d.fail(fmt::format("unknown field \"{}\" (valid: {})", name, valid));
  }
}

void duration(model::JsonDecoder& d, const model::JsonValue& spec, std::string_view key, Duration& out, Duration min) {
  auto text = d.optional_string(spec, key);
  if (!text || !d.ok()) return;
  auto scope = d.field(key);
  auto parsed = parse_go_duration(*text);
  if (!parsed) return d.fail(fmt::format("must be a duration such as 90s, 10m or 1h30m, got \"{}\"", *text));
  if (*parsed < min) return d.fail(fmt::format("must be at least {}, got {}", format_go_duration(min), *text));
  out = *parsed;
}

template <class E, size_t N>
void choice(model::JsonDecoder& d, const model::JsonValue& obj, std::string_view key, E& out,
            const std::array<std::pair<std::string_view, E>, N>& values) {
  auto text = d.optional_string(obj, key);
  if (!text || !d.ok()) return;
  auto scope = d.field(key);
  std::string valid;
  for (const auto& [name, value] : values) {
    if (name == *text) {
      out = value;
      return;
    }
    valid += valid.empty() ? std::string(name) : fmt::format(", {}", name);
  }
  d.fail(fmt::format("must be one of {}, got \"{}\"", valid, *text));
}

// A step takes from tens of microseconds to a few milliseconds (docs/benchmarks.md, f).
constexpr int64_t kMaxSearchIterations = 100000;

constexpr std::array<std::pair<std::string_view, Handling>, 2> kHandling = {{{"Move", Handling::kMove}, {"Block", Handling::kBlock}}};

}  // namespace

PolicySpec default_policy_spec() {
  PolicySpec s;
  s.on_demand_selector = exists("node-role.kubernetes.io/worker");
  s.spot_selector = exists("node-role.kubernetes.io/spot-worker");
  return s;
}

namespace {

void decode_spec(model::JsonDecoder& d, const model::JsonValue& spec, PolicySpec& s) {
  if (!spec.IsObject()) return d.wrong_type("an object", spec);
  reject_unknown(d, spec, kSpecFields);
  if (auto sel = d.label_selector(spec, "onDemandNodeSelector")) s.on_demand_selector = std::move(*sel);
  if (auto sel = d.label_selector(spec, "spotNodeSelector")) s.spot_selector = std::move(*sel);
  s.pod_selector = d.label_selector(spec, "podSelector");
  s.namespace_selector = d.label_selector(spec, "namespaceSelector");
  duration(d, spec, "housekeepingInterval", s.housekeeping_interval, std::chrono::seconds(1));
  duration(d, spec, "nodeDrainDelay", s.node_drain_delay, Duration::zero());
  duration(d, spec, "podEvictionTimeout", s.pod_eviction_timeout, std::chrono::seconds(1));
  // A grace period of 0 is a force deletion: the pod's process may still run while its
  // replacement starts (a StatefulSet identity twice). Never ask for one.
  duration(d, spec, "maxGracefulTermination", s.max_graceful_termination, std::chrono::seconds(1));
  duration(d, spec, "terminationHeadroom", s.termination_headroom, Duration::zero());
  duration(d, spec, "drainedNodeTaintTTL", s.drained_node_taint_ttl, Duration::zero());
  s.delete_non_replicated_pods = d.boolean(spec, "deleteNonReplicatedPods", false);
  s.evict_job_pods = d.boolean(spec, "evictJobPods", false);
  if (const model::JsonValue* ls = d.object(spec, "localStorage")) {
    auto scope = d.field("localStorage");
    reject_unknown(d, *ls, std::array{"emptyDir", "hostPath"});
    choice(d, *ls, "emptyDir", s.empty_dir, kHandling);
    choice(d, *ls, "hostPath", s.host_path, kHandling);
  }
  choice(d, spec, "kubeSystemPodsWithoutPDB", s.kube_system_without_pdb, kHandling);
  choice(d, spec, "unschedulablePodsGate", s.unschedulable_pods_gate,
         std::array<std::pair<std::string_view, GateScope>, 3>{
             {{"Any", GateScope::kAny}, {"SpotOnly", GateScope::kSpotOnly}, {"Disabled", GateScope::kDisabled}}});
  choice(d, spec, "drainOrder", s.drain_order,
         std::array<std::pair<std::string_view, DrainOrder>, 2>{
             {{"RequestedCPU", DrainOrder::kRequestedCpu}, {"ScarceResources", DrainOrder::kScarceResources}}});
  if (auto n = d.optional_integer(spec, "searchIterations"); n && d.ok()) {
    auto scope = d.field("searchIterations");
    if (*n < 0 || *n > kMaxSearchIterations)
      return d.fail(fmt::format("must be from 0 (no search) to {}, got {}", kMaxSearchIterations, *n));
    s.search_iterations = static_cast<int>(*n);
  }
  s.dry_run = d.boolean(spec, "dryRun", false);
  s.suspend = d.boolean(spec, "suspend", false);
}

// spec.profile, decoded outside the "spec" path scope: lib/sched's messages carry the full path.
void decode_spec_profile(model::JsonDecoder& d, const model::JsonValue& spec, PolicySpec& s) {
  if (!d.ok() || !spec.IsObject()) return;
  auto it = spec.FindMember(model::json_key("profile"));
  if (it == spec.MemberEnd() || it->value.IsNull()) return;
  auto profile = sched::decode_profile(it->value, "spec.profile");
  if (!profile) return d.fail(profile.error().message);
  if (auto fw = sched::Framework::create(*profile); !fw) return d.fail(fmt::format("spec.profile: {}", fw.error().message));
  s.profile = std::move(*profile);
}

}  // namespace

Result<PolicySpec> decode_policy_spec(const model::JsonValue& spec) {
  model::JsonDecoder d("ReschedulePolicy");
  PolicySpec s = default_policy_spec();
  {
    auto scope = d.field("spec");
    decode_spec(d, spec, s);
  }
  decode_spec_profile(d, spec, s);
  if (!d.ok()) return d.take_error().make_terminal();
  return s;
}

Result<ReschedulePolicy> decode_policy(const model::JsonValue& v) {
  model::JsonDecoder d("ReschedulePolicy");
  ReschedulePolicy p;
  model::decode_meta(d, v, p.meta, [](std::string_view, std::string_view) {});
  if (!d.ok()) return d.take_error();
  if (p.meta.name.empty()) return Error::decode("decoding ReschedulePolicy: metadata.name is missing");

  // The spec: a separate decoder, so a bad spec leaves the object usable.
  model::JsonDecoder sd("ReschedulePolicy");
  sd.name_object("", p.meta.name);
  PolicySpec spec = default_policy_spec();
  {
    auto scope = sd.field("spec");
    auto it = v.FindMember(model::json_key("spec"));
    if (it != v.MemberEnd() && !it->value.IsNull()) decode_spec(sd, it->value, spec);
  }
  if (auto it = v.FindMember(model::json_key("spec")); it != v.MemberEnd()) decode_spec_profile(sd, it->value, spec);
  if (sd.ok()) p.spec = std::move(spec);
  else p.spec_error = sd.take_error().make_terminal();

  // The status fields the operator reads back (its own writes); a malformed status is ignored.
  model::JsonDecoder st("ReschedulePolicy");
  if (const model::JsonValue* status = st.object(v, "status")) {
    p.status.observed_generation = st.integer(*status, "observedGeneration");
    p.status.next_drain_after = st.time(*status, "nextDrainAfter");
    if (const model::JsonValue* cd = st.object(*status, "currentDrain")) {
      auto node = st.string(*cd, "node");
      if (!node.empty()) p.status.current_drain = DrainInProgress{std::string(node), st.time(*cd, "startedAt").value_or(Time{})};
    }
    if (const model::JsonValue* ld = st.object(*status, "lastDrain")) {
      auto node = st.string(*ld, "node");
      if (!node.empty())
        p.status.last_drain = LastDrain{std::string(node), std::string(st.string(*ld, "result")), std::string(st.string(*ld, "reason")),
                                        st.time(*ld, "finishedAt").value_or(Time{})};
    }
    st.each(*status, "conditions", [&](const model::JsonValue& c) {
      p.status.conditions.push_back(StatusCondition{std::string(st.string(c, "type")), std::string(st.string(c, "status")),
                                                    std::string(st.string(c, "reason")), std::string(st.string(c, "message")),
                                                    st.time(c, "lastTransitionTime").value_or(Time{})});
    });
    p.status.nodes_drained_total = st.integer(*status, "nodesDrainedTotal");
    p.status.pods_evicted_total = st.integer(*status, "podsEvictedTotal");
    if (!st.ok()) p.status = PolicyStatusView{};
  }
  return p;
}

bool ReschedulePolicy::same_content(const ReschedulePolicy& o) const {
  auto err = [](const std::optional<Error>& e) { return e ? e->message : std::string(); };
  return meta.name == o.meta.name && meta.uid == o.meta.uid && meta.generation == o.meta.generation &&
         meta.deletion_timestamp == o.meta.deletion_timestamp && spec == o.spec && err(spec_error) == err(o.spec_error) &&
         status == o.status;
}

}  // namespace spotshift::drain
