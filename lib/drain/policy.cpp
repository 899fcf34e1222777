#include "drain/policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>

namespace spotshift::drain {

std::string_view to_string(Handling h) { return h == Handling::kMove ? "Move" : "Block"; }

std::string_view to_string(GateScope s) {
  switch (s) {
    case GateScope::kAny:
      return "Any";
    case GateScope::kSpotOnly:
      return "SpotOnly";
    case GateScope::kDisabled:
      return "Disabled";
  }
  return "Any";
}

std::string_view to_string(DrainOrder o) {
  switch (o) {
    case DrainOrder::kScarceResources:
      return "ScarceResources";
    case DrainOrder::kHighestSavingsPerEviction:
      return "HighestSavingsPerEviction";
    case DrainOrder::kAuto:
      return "Auto";
    case DrainOrder::kRequestedCpu:
      break;
  }
  return "RequestedCPU";
}

std::optional<double> parse_price(std::string_view text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  std::string copy(text);
  double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !(v >= 0) || v > 1e9) return std::nullopt;
  return v;
}

Result<std::map<std::string, std::string>> config_map_data(std::string_view json) {
  model::JsonDocument doc;
  if (auto parsed = model::parse_json(json, doc); !parsed) return parsed.error();
  std::map<std::string, std::string> data;
  if (const auto* d = model::json_member(doc, "data"); d && d->IsObject())
    for (const auto& m : d->GetObject())
      if (m.value.IsString()) data.emplace(m.name.GetString(), m.value.GetString());
  return data;
}

PriceTable price_table(const std::map<std::string, std::string>& data, std::vector<std::string>* bad) {
  PriceTable out;
  for (const auto& [type, value] : data) {
    if (auto p = parse_price(value)) out.emplace(type, *p);
    else if (bad) bad->push_back(type);
  }
  return out;
}

std::string bad_prices_text(std::string_view config_map, const std::vector<std::string>& bad) {
  if (bad.empty()) return {};
  return fmt::format("ConfigMap {}: the values of {} are not prices per hour (decimal numbers), so those instance types have none",
                     config_map, fmt::join(bad, ", "));
}

std::optional<double> Pricing::price(const model::Node& node) const {
  if (from_config_map()) {
    if (!table) return std::nullopt;
    const auto* type = node.meta.labels.get(std::string_view("node.kubernetes.io/instance-type"));
    if (!type) type = node.meta.labels.get(std::string_view("beta.kubernetes.io/instance-type"));
    if (!type) return std::nullopt;
    auto it = table->find(type->view());
    return it == table->end() ? std::nullopt : std::optional<double>(it->second);
  }
  if (!label.empty()) {
    const auto* v = node.meta.labels.get(std::string_view(label));
    return v ? parse_price(v->view()) : std::nullopt;
  }
  return parse_price(node.number_annotation(annotation));
}

namespace {

model::LabelSelector exists(std::string_view key) {
  return model::LabelSelector({model::Requirement::make(key, model::SelectorOp::kExists, {}).value()});
}

constexpr std::array kSpecFields = {
    "onDemandNodeSelector",
    "spotNodeSelector",
    "podSelector",
    "namespaceSelector",
    "housekeepingInterval",
    "nodeDrainDelay",
    "podEvictionTimeout",
    "maxGracefulTermination",
    "deleteNonReplicatedPods",
    "localStorage",
    "kubeSystemPodsWithoutPDB",
    "unschedulablePodsGate",
    "dryRun",
    "suspend",
    "profile",
    "drainOrder",
    "searchIterations",
    "terminationHeadroom",
    "drainedNodeTaintTTL",
    "evictJobPods",
    "pricing",
    "maxDrainsPerHour",
    "minOnDemandNodes",
    "disruptionWindows",
    "waitForReplacementReady",
    "replacementReadyTimeout",
    "expendablePodsPriorityCutoff",
    "steering",
};

// An unknown member of an object whose members are the known ones: an error on the object.
void unknown_member(model::JsonDecoder& d, std::string_view name, const auto& known) {
  std::string valid;
  for (std::string_view k : known) valid += valid.empty() ? std::string(k) : fmt::format(", {}", k);
  d.fail_above(fmt::format("unknown field \"{}\" (valid: {})", name, valid));
}

void duration(model::JsonDecoder& d, model::JsonReader& r, Duration& out, Duration min) {
  auto text = d.optional_string(r);
  if (!text || !d.ok()) return;
  auto parsed = parse_go_duration(*text);
  if (!parsed) return d.fail(fmt::format("must be a duration such as 90s, 10m or 1h30m, got \"{}\"", *text));
  if (*parsed < min) return d.fail(fmt::format("must be at least {}, got {}", format_go_duration(min), *text));
  out = *parsed;
}

// An integer from min to max ("must be from <min_text> to max, got n" otherwise); nothing when
// absent or refused.
std::optional<int64_t> integer_in(model::JsonDecoder& d, model::JsonReader& r, int64_t min, int64_t max, std::string_view min_text = {}) {
  auto n = d.optional_integer(r);
  if (!n || !d.ok()) return std::nullopt;
  if (*n >= min && *n <= max) return n;
  d.fail(fmt::format("must be from {} to {}, got {}", min_text.empty() ? std::to_string(min) : std::string(min_text), max, *n));
  return std::nullopt;
}

template <class E, size_t N>
void choice(model::JsonDecoder& d, model::JsonReader& r, E& out, const std::array<std::pair<std::string_view, E>, N>& values) {
  auto text = d.optional_string(r);
  if (!text || !d.ok()) return;
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

// spec.disruptionWindows: each window's schedule, duration and time zone, checked as the CRD
// cannot (a cron field out of range, a zone the tz database does not have, a schedule that never
// fires).
void disruption_windows(model::JsonDecoder& d, model::JsonReader& r, std::vector<DisruptionWindow>& out) {
  size_t count = 0;
  d.elements(r, [&] {
    if (++count > kMaxDisruptionWindows) return d.fail(fmt::format("must have at most {} items", kMaxDisruptionWindows));
    DisruptionWindow w;
    bool has_schedule = false, has_duration = false;
    d.members(r, [&](std::string_view k) {
      if (k == "schedule") {
        auto text = d.optional_string(r);
        if (!text || !d.ok()) return true;
        auto cron = CronSchedule::parse(*text);
        if (!cron) d.fail(cron.error().message);
        else {
          w.schedule = std::move(*cron);
          has_schedule = true;
        }
      } else if (k == "duration") {
        duration(d, r, w.duration, std::chrono::minutes(1));
        has_duration = d.ok() && w.duration > Duration::zero();
      } else if (k == "timeZone") {
        auto text = d.optional_string(r);
        if (!text || !d.ok()) return true;
        auto zone = tz::load(*text);
        if (!zone) d.fail(zone.error().message);
        else {
          w.time_zone = std::string(*text);
          w.zone = *zone;
        }
      } else {
        unknown_member(d, k, std::array{"schedule", "duration", "timeZone"});
        return false;
      }
      return true;
    });
    if (!d.ok()) return;
    if (!has_schedule) return d.fail("schedule is required");
    if (!has_duration) return d.fail("duration is required");
    if (!w.zone) {
      auto utc = tz::load("UTC");
      if (!utc) return d.fail(utc.error().message);
      w.zone = *utc;
    }
    // Eight years from 2000 hold every date a schedule can name (29 February included).
    constexpr Time kFrom = Time(std::chrono::seconds(946684800));
    if (!w.schedule.next(kFrom, tz::Zone::fixed("UTC", 0), 8))
      return d.fail(fmt::format("schedule \"{}\" names no date that exists, so the window never opens", w.schedule.text()));
    out.push_back(std::move(w));
  });
}

}  // namespace

PolicySpec default_policy_spec() {
  PolicySpec s;
  s.on_demand_selector = exists("node-role.kubernetes.io/worker");
  s.spot_selector = exists("node-role.kubernetes.io/spot-worker");
  return s;
}

namespace {

// The spec object r is at, over the defaults in s. Errors name the field ("spec.nodeDrainDelay:
// ..."); the caller puts "spec" on the path.
void decode_spec(model::JsonDecoder& d, model::JsonReader& r, PolicySpec& s) {
  if (!d.at_object(r)) return;
  d.members(r, [&](std::string_view key) {
    if (key == "onDemandNodeSelector") {
      if (auto sel = d.label_selector(r)) s.on_demand_selector = std::move(*sel);
    } else if (key == "spotNodeSelector") {
      if (auto sel = d.label_selector(r)) s.spot_selector = std::move(*sel);
    } else if (key == "podSelector") {
      s.pod_selector = d.label_selector(r);
    } else if (key == "namespaceSelector") {
      s.namespace_selector = d.label_selector(r);
    } else if (key == "housekeepingInterval") {
      duration(d, r, s.housekeeping_interval, std::chrono::seconds(1));
    } else if (key == "nodeDrainDelay") {
      duration(d, r, s.node_drain_delay, Duration::zero());
    } else if (key == "podEvictionTimeout") {
      duration(d, r, s.pod_eviction_timeout, std::chrono::seconds(1));
    } else if (key == "maxGracefulTermination") {
      // A grace period of 0 is a force deletion: the pod's process may still run while its
      // replacement starts (a StatefulSet identity twice). Never ask for one.
      duration(d, r, s.max_graceful_termination, std::chrono::seconds(1));
    } else if (key == "terminationHeadroom") {
      duration(d, r, s.termination_headroom, Duration::zero());
    } else if (key == "drainedNodeTaintTTL") {
      duration(d, r, s.drained_node_taint_ttl, Duration::zero());
    } else if (key == "deleteNonReplicatedPods") {
      s.delete_non_replicated_pods = d.boolean(r, false);
    } else if (key == "evictJobPods") {
      s.evict_job_pods = d.boolean(r, false);
    } else if (key == "localStorage") {
      d.members(r, [&](std::string_view k) {
        if (k == "emptyDir") choice(d, r, s.empty_dir, kHandling);
        else if (k == "hostPath") choice(d, r, s.host_path, kHandling);
        else {
          unknown_member(d, k, std::array{"emptyDir", "hostPath"});
          return false;
        }
        return true;
      });
    } else if (key == "kubeSystemPodsWithoutPDB") {
      choice(d, r, s.kube_system_without_pdb, kHandling);
    } else if (key == "unschedulablePodsGate") {
      choice(d, r, s.unschedulable_pods_gate,
             std::array<std::pair<std::string_view, GateScope>, 3>{
                 {{"Any", GateScope::kAny}, {"SpotOnly", GateScope::kSpotOnly}, {"Disabled", GateScope::kDisabled}}});
    } else if (key == "drainOrder") {
      choice(
          d, r, s.drain_order,
          std::array<std::pair<std::string_view, DrainOrder>, 4>{{{"Auto", DrainOrder::kAuto},
                                                                  {"RequestedCPU", DrainOrder::kRequestedCpu},
                                                                  {"ScarceResources", DrainOrder::kScarceResources},
                                                                  {"HighestSavingsPerEviction", DrainOrder::kHighestSavingsPerEviction}}});
    } else if (key == "pricing") {
      Pricing p;
      d.members(r, [&](std::string_view k) {
        if (k == "label") p.label = d.string(r);
        else if (k == "annotation") p.annotation = d.string(r);
        else if (k == "configMap") {
          d.members(r, [&](std::string_view m) {
            if (m == "namespace") p.config_map_namespace = d.string(r);
            else if (m == "name") p.config_map_name = d.string(r);
            else {
              unknown_member(d, m, std::array{"namespace", "name"});
              return false;
            }
            return true;
          });
          if (d.ok() && (p.config_map_namespace.empty() || p.config_map_name.empty())) d.fail("must name the namespace and the name");
        } else {
          unknown_member(d, k, std::array{"label", "annotation", "configMap"});
          return false;
        }
        return true;
      });
      const int named = !p.label.empty() + !p.annotation.empty() + p.from_config_map();
      if (d.ok() && named != 1) d.fail("must name exactly one of label, annotation and configMap");
      else if (d.ok()) s.pricing = std::move(p);
    } else if (key == "searchIterations") {
      if (auto n = integer_in(d, r, 0, kMaxSearchIterations, "0 (no search)")) s.search_iterations = static_cast<int>(*n);
    } else if (key == "maxDrainsPerHour") {
      if (auto n = integer_in(d, r, 1, kMaxDrainsPerHour)) s.max_drains_per_hour = static_cast<int>(*n);
    } else if (key == "minOnDemandNodes") {
      if (auto n = integer_in(d, r, 0, kMaxOnDemandFloor)) s.min_on_demand_nodes = static_cast<int>(*n);
    } else if (key == "expendablePodsPriorityCutoff") {
      if (auto n = d.optional_integer(r); n && d.ok()) {
        if (*n < INT32_MIN || *n > INT32_MAX) d.fail(fmt::format("must be a 32-bit integer, as pod priorities are, got {}", *n));
        else s.expendable_pods_priority_cutoff = static_cast<int32_t>(*n);
      }
    } else if (key == "waitForReplacementReady") {
      s.wait_for_replacement_ready = d.boolean(r, false);
    } else if (key == "steering") {
      choice(d, r, s.steering,
             std::array<std::pair<std::string_view, Steering>, 2>{{{"Off", Steering::kOff}, {"Preferred", Steering::kPreferred}}});
    } else if (key == "replacementReadyTimeout") {
      duration(d, r, s.replacement_ready_timeout, std::chrono::seconds(1));
    } else if (key == "disruptionWindows") {
      disruption_windows(d, r, s.disruption_windows);
    } else if (key == "dryRun") {
      s.dry_run = d.boolean(r, false);
    } else if (key == "suspend") {
      s.suspend = d.boolean(r, false);
    } else if (key == "profile") {
      if (auto profile = sched::decode_profile(d, r); profile && d.ok()) {
        if (auto fw = sched::Framework::create(*profile); !fw) d.fail(fw.error().message);
        else s.profile = std::move(*profile);
      }
    } else {
      unknown_member(d, key, kSpecFields);
      return false;
    }
    return true;
  });
  // The CRD's rules, checked again for policies the API server did not check (files, older CRDs).
  if (d.ok() && s.drain_order == DrainOrder::kHighestSavingsPerEviction && !s.pricing)
    d.fail("drainOrder HighestSavingsPerEviction needs spec.pricing (where each node's price is)");
  if (d.ok() && s.on_demand_selector == s.spot_selector)
    d.fail("onDemandNodeSelector and spotNodeSelector must differ (a node matching both is neither)");
}

// The status fields the operator reads back (its own writes).
void decode_status(model::JsonDecoder& d, model::JsonReader& r, PolicyStatusView& status) {
  auto drain_record = [&](auto&& field) { d.members(r, [&](std::string_view key) { return field(key); }); };
  d.members(r, [&](std::string_view key) {
    if (key == "observedGeneration") {
      status.observed_generation = d.integer(r);
    } else if (key == "nextDrainAfter") {
      status.next_drain_after = d.time(r);
    } else if (key == "currentDrain") {
      DrainInProgress cd;
      drain_record([&](std::string_view f) {
        if (f == "node") cd.node = d.string(r);
        else if (f == "startedAt") cd.started_at = d.time(r).value_or(Time{});
        else return false;
        return true;
      });
      if (!cd.node.empty()) status.current_drain = std::move(cd);
    } else if (key == "lastDrain") {
      LastDrain ld;
      drain_record([&](std::string_view f) {
        if (f == "node") ld.node = d.string(r);
        else if (f == "result") ld.result = d.string(r);
        else if (f == "reason") ld.reason = d.string(r);
        else if (f == "finishedAt") ld.finished_at = d.time(r).value_or(Time{});
        else return false;
        return true;
      });
      if (!ld.node.empty()) status.last_drain = std::move(ld);
    } else if (key == "conditions") {
      d.elements(r, [&] {
        StatusCondition c;
        d.members(r, [&](std::string_view f) {
          if (f == "type") c.type = d.string(r);
          else if (f == "status") c.status = d.string(r);
          else if (f == "reason") c.reason = d.string(r);
          else if (f == "message") c.message = d.string(r);
          else if (f == "lastTransitionTime") c.last_transition = d.time(r).value_or(Time{});
          else return false;
          return true;
        });
        status.conditions.push_back(std::move(c));
      });
    } else if (key == "recentDrainStarts") {
      d.elements(r, [&] {
        if (auto t = d.time(r)) status.recent_drain_starts.push_back(*t);
      });
    } else if (key == "nodesDrainedTotal") {
      status.nodes_drained_total = d.integer(r);
    } else if (key == "podsEvictedTotal") {
      status.pods_evicted_total = d.integer(r);
    } else {
      return false;
    }
    return true;
  });
}

}  // namespace

Result<PolicySpec> decode_policy_spec(std::string_view json) {
  model::JsonDecoder d("ReschedulePolicy");
  PolicySpec s = default_policy_spec();
  model::JsonReader r(json);
  {
    auto scope = d.field("spec");
    decode_spec(d, r, s);
  }
  if (d.ok() && !r.finish()) d.fail(r.error());
  if (!d.ok()) return d.take_error().make_terminal();
  return s;
}

Result<ReschedulePolicy> decode_policy(model::JsonReader& r) {
  model::JsonDecoder d("ReschedulePolicy");
  // The spec and the status have decoders of their own: a bad spec leaves the object usable,
  // and a malformed status is ignored.
  model::JsonDecoder sd("ReschedulePolicy");
  model::JsonDecoder st("ReschedulePolicy");
  ReschedulePolicy p;
  PolicySpec spec = default_policy_spec();
  std::string_view spec_text;  // a spec that came before the metadata, read once the name is known
  bool has_meta = false;
  auto read_spec = [&](model::JsonReader& from) {
    sd.name_object("", p.meta.name);
    auto scope = sd.field("spec");
    decode_spec(sd, from, spec);
  };
  if (r.peek() != model::JsonType::kObject) {
    d.wrong_type("an object", r);
    return d.take_error();
  }
  d.members(r, [&](std::string_view key) {
    if (key == "metadata") {
      has_meta = r.peek() == model::JsonType::kObject;
      model::decode_meta(
          d, r, p.meta, [](std::string_view, std::string_view) {}, [](std::string_view) { return false; });
    } else if (key == "spec") {
      if (has_meta) read_spec(r);
      else r.read_raw(spec_text);
    } else if (key == "status") {
      decode_status(st, r, p.status);
    } else {
      return false;
    }
    return true;
  });
  if (d.ok() && !has_meta) d.fail("metadata is missing");
  if (!d.ok()) return d.take_error();
  if (p.meta.name.empty()) return Error::decode("decoding ReschedulePolicy: metadata.name is missing");
  if (!spec_text.empty()) {
    model::JsonReader later(spec_text);
    read_spec(later);
  }
  if (sd.ok()) p.spec = std::move(spec);
  else p.spec_error = sd.take_error().make_terminal();
  if (!st.ok()) p.status = PolicyStatusView{};
  return p;
}

Result<ReschedulePolicy> decode_policy(std::string_view json) {
  return model::decode_whole("ReschedulePolicy", json, [](model::JsonReader& r) { return decode_policy(r); });
}

bool ReschedulePolicy::same_content(const ReschedulePolicy& o) const {
  auto err = [](const std::optional<Error>& e) { return e ? e->message : std::string(); };
  return meta.name == o.meta.name && meta.uid == o.meta.uid && meta.generation == o.meta.generation &&
         meta.deletion_timestamp == o.meta.deletion_timestamp && spec == o.spec && err(spec_error) == err(o.spec_error) &&
         status == o.status;
}

}  // namespace spotshift::drain
