#include "disruption.hpp"

#include "model/json.hpp"
#include "model/selector.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

namespace spotshift::kubesim {

namespace {

const Value* controller_ref(const Value& obj) {
  const Value* refs = json_path(obj, {"metadata", "ownerReferences"});
  if (!refs || !refs->IsArray()) return nullptr;
  for (const auto& r : refs->GetArray())
    if (json_bool(r, {"controller"})) return &r;
  return nullptr;
}

}  // namespace

bool pod_ready(const Value& pod) {
  const Value* conds = json_path(pod, {"status", "conditions"});
  if (!conds || !conds->IsArray()) return false;
  for (const auto& c : conds->GetArray())
    if (json_string(c, {"type"}) == "Ready") return json_string(c, {"status"}) == "True";
  return false;
}

std::vector<ObjectPtr> pods_selected_by(const Cluster& cluster, const Value& pdb) {
  std::vector<ObjectPtr> out;
  const Value* spec = json_member(pdb, "spec");
  if (!spec) return out;
  auto sel = label_selector_of(*spec, "selector");
  // policy/v1: an absent (null) selector matches no pod, an empty one ({}) every pod.
  if (!sel) return out;
  std::string prefix = std::string(namespace_of(pdb)) + "/";
  const auto& pods = cluster.store().objects(*cluster.registry().pods());
  for (auto it = pods.lower_bound(prefix); it != pods.end() && it->first.starts_with(prefix); ++it)
    if (sel->matches(labels_of(it->second->doc))) out.push_back(it->second);
  return out;
}

PdbStatus compute_pdb_status(const Cluster& cluster, const Value& pdb) {
  PdbStatus st;
  auto pods = pods_selected_by(cluster, pdb);
  std::string ns(namespace_of(pdb));
  Time now = cluster.now();

  // disruptedPods: entries expire after the timeout, or once the pod is gone or terminating.
  std::set<std::string> disrupted;
  if (const Value* dp = json_path(pdb, {"status", "disruptedPods"}); dp && dp->IsObject()) {
    for (auto it = dp->MemberBegin(); it != dp->MemberEnd(); ++it) {
      std::string name = it->name.GetString();
      auto when = parse_time(it->value.IsString() ? it->value.GetString() : "");
      auto pod = cluster.store().get(*cluster.registry().pods(), ns + "/" + name);
      if (!when || !pod || json_path(pod->doc, {"metadata", "deletionTimestamp"})) continue;
      if (now - *when > cluster.options().disrupted_pod_timeout) continue;
      disrupted.insert(name);
      st.disrupted_pods.emplace_back(name, it->value.GetString());
    }
  }
  for (const auto& p : pods) {
    if (json_path(p->doc, {"metadata", "deletionTimestamp"})) continue;
    if (disrupted.count(std::string(name_of(p->doc)))) continue;
    if (pod_ready(p->doc)) ++st.current_healthy;
  }

  // Admission let through only an integer or a percentage (admit_pdb).
  const std::optional<model::IntOrString> min_available = int_or_percent(json_path(pdb, {"spec", "minAvailable"}));
  const std::optional<model::IntOrString> max_unavailable = int_or_percent(json_path(pdb, {"spec", "maxUnavailable"}));
  if (!max_unavailable && !(min_available && min_available->is_percent)) {
    st.expected_pods = static_cast<int32_t>(pods.size());
    st.desired_healthy = min_available ? min_available->value : 0;
  } else {
    // The sum of the scales of the distinct controllers of the selected pods.
    std::map<std::string, int32_t> scale;
    for (const auto& p : pods) {
      const Value* ref = controller_ref(p->doc);
      if (!ref) continue;  // unmanaged pods are not counted
      std::string_view kind = json_string(*ref, {"kind"});
      std::string owner(json_string(*ref, {"name"}));
      const Value* scaled = nullptr;
      ObjectPtr holder;
      if (kind == "ReplicaSet") {
        holder = cluster.store().get(*cluster.registry().replicasets(), ns + "/" + owner);
        if (holder) {
          const Value* dref = controller_ref(holder->doc);
          if (dref && json_string(*dref, {"kind"}) == "Deployment") {
            auto dep = cluster.store().get(*cluster.registry().deployments(), ns + "/" + std::string(json_string(*dref, {"name"})));
            if (dep) holder = dep;
          }
        }
      } else if (kind == "StatefulSet") {
        holder = cluster.store().get(*cluster.registry().statefulsets(), ns + "/" + owner);
      }
      if (holder) scaled = json_path(holder->doc, {"spec", "replicas"});
      if (!holder) {
        st.reason = "SyncFailed";
        st.message = fmt::format("found no controllers for pod \"{}\"", name_of(p->doc));
        st.expected_pods = 0;
        st.desired_healthy = 0;
        st.disruptions_allowed = 0;
        return st;
      }
      scale[std::string(json_string(holder->doc, {"metadata", "uid"}))] = scaled && scaled->IsInt() ? scaled->GetInt() : 1;
    }
    for (const auto& [uid, n] : scale) st.expected_pods += n;
    // Percentages round up, for either field (the disruption controller's rounding).
    if (max_unavailable) st.desired_healthy = std::max(0, st.expected_pods - max_unavailable->scaled(st.expected_pods, true));
    else st.desired_healthy = min_available->scaled(st.expected_pods, true);
  }
  st.disruptions_allowed = st.expected_pods == 0 ? 0 : std::max(0, st.current_healthy - st.desired_healthy);
  st.reason = st.disruptions_allowed > 0 ? "SufficientPods" : "InsufficientPods";
  return st;
}

}  // namespace spotshift::kubesim
