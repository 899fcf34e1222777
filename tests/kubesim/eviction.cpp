// The eviction and binding subresources of pods.

#include "cluster.hpp"
#include "disruption.hpp"

#include <fmt/format.h>

namespace spotshift::kubesim {

namespace {

constexpr const char* kViolates = "Cannot evict pod as it would violate the pod's disruption budget.";

Error too_many_requests(std::string cause_message, std::optional<int> retry_after) {
  Error e = Error::api(429, "TooManyRequests", kViolates);
  e.causes.push_back({"DisruptionBudget", "", std::move(cause_message)});
  e.retry_after_seconds = retry_after;
  return e;
}

}  // namespace

Result<void> Cluster::evict(std::string_view ns, std::string_view name, const DeleteOptions& opts) {
  const ResourceType& pods = *registry_.pods();
  auto pod = store_.get(pods, Store::key_of(pods, ns, name));
  if (!pod) return not_found(pods, name);
  if (faults_.take_eviction_refusal(pod->key)) return too_many_requests("eviction refused by an injected fault", 5);

  auto delete_pod = [&](bool rv_precondition) -> Result<void> {
    DeleteOptions d = opts;
    if (rv_precondition) d.precondition_resource_version = std::string(json_string(pod->doc, {"metadata", "resourceVersion"}));
    auto r = remove(pods, ns, name, d);
    if (!r) {
      if (r.error().is_conflict()) return too_many_requests("the pod changed while it was being evicted", std::nullopt);
      return r.error();
    }
    emit_event(pods, (*r)->doc, "Normal", "Evicted", "Evicted by the Eviction API", "kubesim-eviction");
    return {};
  };

  std::string_view phase = json_string(pod->doc, {"status", "phase"});
  if (phase == "Pending" || phase == "Succeeded" || phase == "Failed" || json_path(pod->doc, {"metadata", "deletionTimestamp"}))
    return delete_pod(false);

  std::vector<ObjectPtr> budgets;
  const auto& all = store_.objects(*registry_.pdbs());
  std::string prefix = std::string(ns) + "/";
  for (auto it = all.lower_bound(prefix); it != all.end() && it->first.starts_with(prefix); ++it) {
    for (const auto& p : pods_selected_by(*this, it->second->doc))
      if (p->key == pod->key) budgets.push_back(it->second);
  }
  if (budgets.size() > 1)
    return Error::api(500, "", "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.");
  if (budgets.empty()) return delete_pod(false);

  const Value& pdb = budgets[0]->doc;
  std::string pdb_name(name_of(pdb));
  int64_t current = json_int(pdb, {"status", "currentHealthy"}).value_or(0);
  int64_t desired = json_int(pdb, {"status", "desiredHealthy"}).value_or(0);
  if (!pod_ready(pod->doc)) {
    bool always = json_string(pdb, {"spec", "unhealthyPodEvictionPolicy"}) == "AlwaysAllow";
    if (always || (current >= desired && desired > 0)) return delete_pod(true);
  }
  if (json_int(pdb, {"status", "observedGeneration"}).value_or(0) < json_int(pdb, {"metadata", "generation"}).value_or(0))
    return too_many_requests(fmt::format("The disruption budget {} is still being processed by the server.", pdb_name), 10);
  int64_t allowed = json_int(pdb, {"status", "disruptionsAllowed"}).value_or(0);
  const Value* disrupted = json_path(pdb, {"status", "disruptedPods"});
  if (allowed < 0 || (disrupted && disrupted->IsObject() && disrupted->MemberCount() > 2000))
    return Error::api(403, "Forbidden", kViolates);
  if (allowed == 0) {
    // The cause says why, in the order the eviction subresource checks: a failed sync, too few
    // healthy pods, the DisruptionAllowed condition's own message, or nothing more specific.
    std::string_view cond_status, cond_reason, cond_message;
    if (const Value* conds = json_path(pdb, {"status", "conditions"}); conds && conds->IsArray())
      for (const auto& c : conds->GetArray())
        if (json_string(c, {"type"}) == "DisruptionAllowed") {
          cond_status = json_string(c, {"status"});
          cond_reason = json_string(c, {"reason"});
          cond_message = json_string(c, {"message"});
        }
    const bool cond_false = cond_status == "False" && !cond_message.empty();
    std::string why;
    if (cond_false && cond_reason == "SyncFailed")
      why =
          fmt::format("The disruption budget {} does not allow evicting pods currently because it failed sync: {}", pdb_name, cond_message);
    else if (current <= desired)
      why = fmt::format("The disruption budget {} needs {} healthy pods and has {} currently", pdb_name, desired, current);
    else if (cond_false)
      why = fmt::format("The disruption budget {} does not allow evicting pods currently ({}): {}", pdb_name, cond_reason, cond_message);
    else why = fmt::format("The disruption budget {} does not allow evicting pods currently", pdb_name);
    return too_many_requests(why, std::nullopt);
  }

  // Accepted. Counted afresh from the pods, was there room? (Not when the status is stale.)
  if (PdbStatus fresh = compute_pdb_status(*this, pdb); fresh.disruptions_allowed <= 0)
    budget_violations_.push_back(
        fmt::format("{}/{}: {} (healthy {}, desired {})", ns, pdb_name, name, fresh.current_healthy, fresh.desired_healthy));
  // Charge the budget first, then mark and delete the pod.
  std::string stamp = format_time(now());
  auto charged = mutate(*registry_.pdbs(), budgets[0]->key, [&](Value& o, Alloc& a) {
    Value& st = ensure_object(o, "status", a);
    set_int(st, "disruptionsAllowed", allowed - 1, a);
    set_str(ensure_object(st, "disruptedPods", a), name, stamp, a);
  });
  if (!charged) return charged.error();
  mutate(pods, pod->key, [&](Value& o, Alloc& a) {
    Value& conds = ensure_array(ensure_object(o, "status", a), "conditions", a);
    for (auto it = conds.Begin(); it != conds.End();) it = json_string(*it, {"type"}) == "DisruptionTarget" ? conds.Erase(it) : it + 1;
    Value c(rapidjson::kObjectType);
    set_str(c, "type", "DisruptionTarget", a);
    set_str(c, "status", "True", a);
    set_str(c, "lastTransitionTime", stamp, a);
    set_str(c, "reason", "EvictionByEvictionAPI", a);
    set_str(c, "message", "Eviction API: evicting", a);
    conds.PushBack(c, a);
  });
  return delete_pod(false);
}

Result<void> Cluster::bind(std::string_view ns, std::string_view name, std::string_view node) {
  const ResourceType& pods = *registry_.pods();
  auto pod = store_.get(pods, Store::key_of(pods, ns, name));
  if (!pod) return not_found(pods, name);
  if (!json_string(pod->doc, {"spec", "nodeName"}).empty())
    return conflict(pods, name,
                    fmt::format("pod {} is already assigned to node \"{}\"", name, json_string(pod->doc, {"spec", "nodeName"})));
  if (!store_.get(*registry_.nodes(), node)) return not_found(*registry_.nodes(), node);
  auto r = mutate(pods, pod->key, [&](Value& o, Alloc& a) {
    set_str(ensure_object(o, "spec", a), "nodeName", node, a);
    Value& conds = ensure_array(ensure_object(o, "status", a), "conditions", a);
    for (auto it = conds.Begin(); it != conds.End();) it = json_string(*it, {"type"}) == "PodScheduled" ? conds.Erase(it) : it + 1;
    Value c(rapidjson::kObjectType);
    set_str(c, "type", "PodScheduled", a);
    set_str(c, "status", "True", a);
    set_str(c, "lastTransitionTime", format_time(now()), a);
    conds.PushBack(c, a);
  });
  if (!r) return r.error();
  emit_event(pods, (*r)->doc, "Normal", "Scheduled", fmt::format("Successfully assigned {}/{} to {}", ns, name, node), "default-scheduler");
  return {};
}

}  // namespace spotshift::kubesim
