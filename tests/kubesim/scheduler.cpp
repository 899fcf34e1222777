// kubesim's scheduler. Deliberately its own code (not lib/sched), so end-to-end tests catch a
// planner that disagrees with the cluster. It reads objects through lib/model's decoders.

#include "controllers.hpp"

#include "model/pod.hpp"
#include "patch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace spotshift::kubesim {

namespace {

bool counts_on_node(const Value& pod) {
  std::string_view phase = json_string(pod, {"status", "phase"});
  return !json_string(pod, {"spec", "nodeName"}).empty() && phase != "Succeeded" && phase != "Failed";
}

bool wants_scheduling(const Value& pod) {
  return json_string(pod, {"spec", "nodeName"}).empty() && !json_path(pod, {"metadata", "deletionTimestamp"}) &&
         json_string(pod, {"spec", "schedulerName"}, "default-scheduler") == "default-scheduler";
}

std::string port_key(const model::HostPort& p) { return fmt::format("{}/{}", static_cast<int>(p.protocol), p.port); }

}  // namespace

void SimScheduler::charge(const std::string& key, const Value* pod) {
  // Take back what the pod's previous version held, then charge its current one. Capacity frees
  // up (and unschedulable pods deserve another try) when a pod leaves its node.
  std::string old_node;
  if (auto it = charges_.find(key); it != charges_.end()) {
    old_node = it->second.node;
    Usage& u = usage_[it->second.node];
    u.requested.subtract(it->second.requests);
    u.pods -= 1;
    for (const auto& p : it->second.ports) u.host_ports.erase(p);
    charges_.erase(it);
  }
  if (!pod || !counts_on_node(*pod)) {
    if (!old_node.empty()) capacity_changed_ = true;
    return;
  }
  auto decoded = model::decode_pod(to_json(*pod));
  if (!decoded) return;
  PodCharge c;
  c.node = decoded->node_name.str();
  c.requests = decoded->requests;
  c.priority = decoded->priority;
  c.terminating = decoded->terminating();
  for (const auto& hp : decoded->host_ports) c.ports.push_back(port_key(hp));
  Usage& u = usage_[c.node];
  u.requested.add(c.requests);
  u.pods += 1;
  for (const auto& p : c.ports) u.host_ports.insert(p);
  charges_[key] = std::move(c);
}

void SimScheduler::observe(const Change& c) {
  const Registry& reg = cluster_.registry();
  if (c.rt == reg.nodes()) {
    capacity_changed_ = true;
    std::string name(name_of(c.obj->doc));
    if (c.type == EventType::kDeleted) {
      nodes_.erase(name);
    } else if (auto n = model::decode_node(to_json(c.obj->doc))) {
      nodes_[name] = std::move(*n);
    }
    return;
  }
  if (c.rt != reg.pods()) return;
  const std::string& key = c.obj->key;
  const Value* pod = c.type == EventType::kDeleted ? nullptr : &c.obj->doc;
  // A pod's charge comes from its spec and status alone: a metadata-only write (labels,
  // annotations, finalizers) keeps it without decoding the pod again.
  auto same_part = [&](const char* part) {
    const Value* a = json_member(c.prev->doc, part);
    const Value* b = json_member(c.obj->doc, part);
    return a && b ? json_equal(*a, *b) : a == b;
  };
  if (!(pod && c.prev && same_part("spec") && same_part("status"))) charge(key, pod);
  if (pod && wants_scheduling(*pod)) {
    if (!unschedulable_.count(key)) pending_.insert(key);
  } else {
    pending_.erase(key);
    unschedulable_.erase(key);
  }
}

bool SimScheduler::run() {
  if (capacity_changed_) {
    pending_.insert(unschedulable_.begin(), unschedulable_.end());
    unschedulable_.clear();
    capacity_changed_ = false;
  }
  if (pending_.empty()) return false;
  // Highest priority first, then oldest.
  std::vector<std::pair<std::tuple<int64_t, std::string, std::string>, std::string>> order;
  for (const auto& key : pending_) {
    auto pod = cluster_.store().get(*cluster_.registry().pods(), key);
    if (!pod) continue;
    order.push_back({{-json_int(pod->doc, {"spec", "priority"}).value_or(0),
                      std::string(json_string(pod->doc, {"metadata", "creationTimestamp"})), key},
                     key});
  }
  std::sort(order.begin(), order.end());
  pending_.clear();
  bool changed = false;
  for (const auto& [rank, key] : order) changed |= schedule(key);
  return changed;
}

bool SimScheduler::schedule(const std::string& key) {
  auto stored = cluster_.store().get(*cluster_.registry().pods(), key);
  if (!stored || !wants_scheduling(stored->doc)) return false;
  auto pod = model::decode_pod(to_json(stored->doc));
  if (!pod) return false;

  std::map<std::string, int> reasons;
  struct Candidate {
    std::string name;
    double least_allocated;
    int prefer_no_schedule;
    int64_t affinity;
  };
  std::vector<Candidate> feasible;
  std::vector<std::string> resource_only;  // nodes the pod fails on for resources alone
  for (const auto& [name, node] : nodes_) {
    model::Taint unschedulable_taint{model::InternedString("node.kubernetes.io/unschedulable"), model::InternedString(),
                                     model::TaintEffect::kNoSchedule};
    if (node.unschedulable && !model::tolerated(pod->tolerations, unschedulable_taint)) {
      ++reasons["node(s) were unschedulable"];
      continue;
    }
    if (const model::Taint* t = model::first_untolerated(pod->tolerations, node.taints, true, false, true)) {
      ++reasons[fmt::format("node(s) had untolerated taint {{{}: {}}}", t->key.view(), t->value.view())];
      continue;
    }
    if (!pod->selects_node(node.meta.labels, name)) {
      ++reasons["node(s) didn't match Pod's node affinity/selector"];
      continue;
    }
    const Usage& u = usage_[name];
    bool fits = true;
    if (u.pods + 1 > node.allocatable.pods) {
      ++reasons["Too many pods"];
      fits = false;
    }
    pod->requests.for_each([&](std::string_view res, int64_t want) {
      if (res == "pods") return;
      if (u.requested.get(res) + want > node.allocatable.get(res)) {
        ++reasons[fmt::format("Insufficient {}", res)];
        fits = false;
      }
    });
    if (!fits) {
      resource_only.push_back(name);
      continue;
    }
    bool ports_ok = true;
    for (const auto& hp : pod->host_ports)
      if (u.host_ports.count(port_key(hp))) ports_ok = false;
    if (!ports_ok) {
      ++reasons["node(s) didn't have free ports for the requested pod ports"];
      continue;
    }
    auto free_share = [&](int64_t alloc, int64_t used, int64_t want) {
      return alloc <= 0 ? 0.0 : std::max(0.0, double(alloc - used - want) * 100.0 / double(alloc));
    };
    double la = (free_share(node.allocatable.cpu_milli, u.requested.cpu_milli, pod->requests.cpu_milli) +
                 free_share(node.allocatable.memory, u.requested.memory, pod->requests.memory)) /
                2.0;
    int pns = 0;
    for (const auto& t : node.taints)
      if (t.effect == model::TaintEffect::kPreferNoSchedule && !model::tolerated(pod->tolerations, t)) ++pns;
    int64_t aff = 0;
    if (pod->affinity)
      for (const auto& pref : pod->affinity->node_preferred)
        if (pref.preference.matches(node.meta.labels, name)) aff += pref.weight;
    feasible.push_back({name, la, pns, aff});
  }

  if (feasible.empty() && preempt(key, *pod, resource_only)) return true;
  if (feasible.empty()) {
    std::vector<std::string> parts;
    for (const auto& [reason, count] : reasons) parts.push_back(fmt::format("{} {}", count, reason));
    std::sort(parts.begin(), parts.end());
    std::string message = fmt::format(
        "0/{} nodes are available: {}. preemption: 0/{} nodes are available: {} "
        "Preemption is not helpful for scheduling.",
        nodes_.size(), fmt::join(parts, ", "), nodes_.size(), nodes_.size());
    if (nodes_.empty()) message = "no nodes available to schedule pods";
    unschedulable_.insert(key);
    bool already = false;
    if (const Value* conds = json_path(stored->doc, {"status", "conditions"}); conds && conds->IsArray())
      for (const auto& c : conds->GetArray())
        if (json_string(c, {"type"}) == "PodScheduled" && json_string(c, {"message"}) == message) already = true;
    if (already) return false;
    auto r = cluster_.mutate(*cluster_.registry().pods(), key, [&](Value& o, Alloc& a) {
      Value& conds = ensure_array(ensure_object(o, "status", a), "conditions", a);
      for (auto it = conds.Begin(); it != conds.End();) it = json_string(*it, {"type"}) == "PodScheduled" ? conds.Erase(it) : it + 1;
      Value c(rapidjson::kObjectType);
      set_str(c, "type", "PodScheduled", a);
      set_str(c, "status", "False", a);
      set_str(c, "lastTransitionTime", format_time(cluster_.now()), a);
      set_str(c, "reason", "Unschedulable", a);
      set_str(c, "message", message, a);
      conds.PushBack(c, a);
    });
    if (r) cluster_.emit_event(*cluster_.registry().pods(), (*r)->doc, "Warning", "FailedScheduling", message, "default-scheduler");
    return true;
  }

  int max_pns = 0;
  int64_t max_aff = 0;
  for (const auto& c : feasible) {
    max_pns = std::max(max_pns, c.prefer_no_schedule);
    max_aff = std::max(max_aff, c.affinity);
  }
  const Candidate* best = nullptr;
  double best_score = -1;
  for (const auto& c : feasible) {
    // Default weights: TaintToleration 3, NodeAffinity 2, NodeResourcesFit (LeastAllocated) 1.
    double taint = max_pns ? 100.0 * (1.0 - double(c.prefer_no_schedule) / max_pns) : 100.0;
    double affinity = max_aff ? 100.0 * double(c.affinity) / double(max_aff) : 0.0;
    double score = c.least_allocated + 3 * taint + 2 * affinity;
    if (score > best_score + 1e-9) {
      best_score = score;
      best = &c;
    }
  }
  std::string ns(namespace_of(stored->doc)), name(name_of(stored->doc));
  return static_cast<bool>(cluster_.bind(ns, name, best->name));
}

bool SimScheduler::preempt(const std::string& key, const model::Pod& pod, const std::vector<std::string>& resource_only) {
  // A pod nominated to a node where pods of lower priority are still terminating waits for them.
  if (!pod.nominated_node.empty())
    for (const auto& [k, c] : charges_)
      if (c.node == pod.nominated_node.view() && c.terminating && c.priority < pod.priority) return false;
  struct Choice {
    std::string node;
    std::vector<std::string> victims;
    int32_t highest = 0;  // the highest priority among the victims
  };
  std::optional<Choice> best;
  for (const auto& name : resource_only) {
    const model::Node& node = nodes_.at(name);
    std::vector<std::pair<const std::string*, const PodCharge*>> lower;
    for (const auto& [k, c] : charges_)
      if (c.node == name && !c.terminating && c.priority < pod.priority) lower.push_back({&k, &c});
    std::sort(lower.begin(), lower.end(), [](const auto& a, const auto& b) {
      if (a.second->priority != b.second->priority) return a.second->priority < b.second->priority;
      if (a.second->requests.cpu_milli != b.second->requests.cpu_milli) return a.second->requests.cpu_milli > b.second->requests.cpu_milli;
      return *a.first < *b.first;
    });
    model::ResourceList freed;
    int64_t freed_pods = 0;
    const Usage& u = usage_[name];
    auto fits = [&] {
      bool ok = u.pods - freed_pods + 1 <= node.allocatable.pods;
      pod.requests.for_each([&](std::string_view res, int64_t want) {
        if (res != "pods" && u.requested.get(res) - freed.get(res) + want > node.allocatable.get(res)) ok = false;
      });
      return ok;
    };
    Choice choice{name, {}, 0};
    for (const auto& [k, c] : lower) {
      if (fits()) break;
      freed.add(c->requests);
      ++freed_pods;
      choice.victims.push_back(*k);
      choice.highest = c->priority;
    }
    if (choice.victims.empty() || !fits()) continue;
    if (!best || choice.victims.size() < best->victims.size() ||
        (choice.victims.size() == best->victims.size() && choice.highest < best->highest))
      best = std::move(choice);
  }
  if (!best) return false;
  for (const auto& victim : best->victims) {
    auto obj = cluster_.store().get(*cluster_.registry().pods(), victim);
    if (!obj) continue;
    cluster_.emit_event(*cluster_.registry().pods(), obj->doc, "Normal", "Preempted",
                        fmt::format("Preempted by pod {} on node {}", pod.meta.uid, best->node), "default-scheduler");
    (void)cluster_.remove(*cluster_.registry().pods(), namespace_of(obj->doc), name_of(obj->doc), DeleteOptions{});
  }
  unschedulable_.insert(key);  // tried again once the victims are gone
  auto r = cluster_.mutate(*cluster_.registry().pods(), key,
                           [&](Value& o, Alloc& a) { set_str(ensure_object(o, "status", a), "nominatedNodeName", best->node, a); });
  return static_cast<bool>(r);
}

}  // namespace spotshift::kubesim
