// Deployment, ReplicaSet, DaemonSet and StatefulSet controllers: enough for owner lookups, PDB
// expected counts, and replacement pods when the operator evicts one.

#include "controllers.hpp"
#include "disruption.hpp"

#include "core/strings.hpp"
#include "model/meta.hpp"
#include "model/node.hpp"
#include "model/pod.hpp"

#include <fmt/format.h>

namespace spotshift::kubesim {

namespace {

constexpr std::string_view kRevision = "deployment.kubernetes.io/revision";

bool active(const Value& pod) {
  std::string_view phase = json_string(pod, {"status", "phase"});
  return !json_path(pod, {"metadata", "deletionTimestamp"}) && phase != "Succeeded" && phase != "Failed";
}

std::string owner_key(const Value& obj, const Value& ref) { return fmt::format("{}/{}", namespace_of(obj), json_string(ref, {"name"})); }

std::string template_hash(const Value& tmpl) {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  // Of the template's content, not its member order (kubectl rollout undo sends it reordered).
  size_t h = std::hash<std::string>()(canonical_json(tmpl));
  std::string out;
  for (int i = 0; i < 10; ++i) {
    out += kAlphabet[h % kAlphabet.size()];
    h /= kAlphabet.size();
  }
  return out;
}

Value owner_reference(const Value& owner, const ResourceType& rt, Alloc& a) {
  Value ref(rapidjson::kObjectType);
  set_str(ref, "apiVersion", rt.group_version(), a);
  set_str(ref, "kind", rt.kind, a);
  set_str(ref, "name", name_of(owner), a);
  set_str(ref, "uid", json_string(owner, {"metadata", "uid"}), a);
  set_bool(ref, "controller", true, a);
  set_bool(ref, "blockOwnerDeletion", true, a);
  return ref;
}

}  // namespace

void SimWorkloads::index_pod(const std::string& key, const Value* pod) {
  if (auto it = pod_owner_.find(key); it != pod_owner_.end()) {
    pods_by_owner_[it->second].erase(key);
    pod_owner_.erase(it);
  }
  if (!pod) return;
  if (const Value* ref = controller_of(*pod)) {
    std::string uid(json_string(*ref, {"uid"}));
    pods_by_owner_[uid].insert(key);
    pod_owner_[key] = uid;
  }
}

void SimWorkloads::observe(const Change& c) {
  const Registry& reg = cluster_.registry();
  const Value& obj = c.obj->doc;
  if (c.rt == reg.pods()) {
    index_pod(c.obj->key, c.type == EventType::kDeleted ? nullptr : &obj);
    for (const Value* v : std::initializer_list<const Value*>{c.prev ? &c.prev->doc : nullptr, &obj}) {
      if (!v) continue;
      const Value* ref = controller_of(*v);
      if (!ref) continue;
      std::string_view kind = json_string(*ref, {"kind"});
      if (kind == "ReplicaSet") dirty_replicasets_.insert(owner_key(*v, *ref));
      else if (kind == "DaemonSet") dirty_daemonsets_.insert(owner_key(*v, *ref));
      else if (kind == "StatefulSet") dirty_statefulsets_.insert(owner_key(*v, *ref));
    }
  } else if (c.rt == reg.replicasets()) {
    if (c.type != EventType::kDeleted) dirty_replicasets_.insert(c.obj->key);
    if (const Value* ref = controller_of(obj); ref && json_string(*ref, {"kind"}) == "Deployment")
      dirty_deployments_.insert(owner_key(obj, *ref));
  } else if (c.rt == reg.deployments()) {
    if (c.type != EventType::kDeleted) dirty_deployments_.insert(c.obj->key);
  } else if (c.rt == reg.daemonsets()) {
    if (c.type != EventType::kDeleted) dirty_daemonsets_.insert(c.obj->key);
  } else if (c.rt == reg.statefulsets()) {
    if (c.type != EventType::kDeleted) dirty_statefulsets_.insert(c.obj->key);
  } else if (c.rt == reg.nodes()) {
    for (const auto& [k, o] : cluster_.store().objects(*reg.daemonsets())) dirty_daemonsets_.insert(k);
  }
}

bool SimWorkloads::run() {
  bool changed = false;
  auto drain = [&](std::set<std::string>& dirty, bool (SimWorkloads::*sync)(const std::string&)) {
    std::set<std::string> keys;
    keys.swap(dirty);
    for (const auto& k : keys) changed |= (this->*sync)(k);
  };
  drain(dirty_deployments_, &SimWorkloads::sync_deployment);
  drain(dirty_replicasets_, &SimWorkloads::sync_replicaset);
  drain(dirty_daemonsets_, &SimWorkloads::sync_daemonset);
  drain(dirty_statefulsets_, &SimWorkloads::sync_statefulset);
  return changed;
}

std::vector<ObjectPtr> SimWorkloads::owned_pods(const std::string& owner_uid) const {
  std::vector<ObjectPtr> out;
  auto it = pods_by_owner_.find(owner_uid);
  if (it == pods_by_owner_.end()) return out;
  for (const auto& k : it->second)
    if (auto p = cluster_.store().get(*cluster_.registry().pods(), k)) out.push_back(p);
  return out;
}

Result<ObjectPtr> SimWorkloads::create_pod(const Value& owner, const ResourceType& owner_type, const Value& tmpl, std::string name,
                                           std::string generate_name, std::string node) {
  Doc pod(rapidjson::kObjectType);
  Alloc& a = pod.GetAllocator();
  set_str(pod, "apiVersion", "v1", a);
  set_str(pod, "kind", "Pod", a);
  Value& m = ensure_object(pod, "metadata", a);
  if (const Value* tm = json_member(tmpl, "metadata")) {
    if (const Value* l = json_member(*tm, "labels")) set(m, "labels", copy_of(*l, a), a);
    if (const Value* an = json_member(*tm, "annotations")) set(m, "annotations", copy_of(*an, a), a);
  }
  if (!name.empty()) set_str(m, "name", name, a);
  else set_str(m, "generateName", generate_name, a);
  set_str(m, "namespace", namespace_of(owner), a);
  Value refs(rapidjson::kArrayType);
  refs.PushBack(owner_reference(owner, owner_type, a), a);
  set(m, "ownerReferences", std::move(refs), a);
  if (const Value* spec = json_member(tmpl, "spec")) set(pod, "spec", copy_of(*spec, a), a);
  Value& spec = ensure_object(pod, "spec", a);
  if (!node.empty()) set_str(spec, "nodeName", node, a);
  if (&owner_type == cluster_.registry().statefulsets()) set_str(spec, "hostname", name, a);
  if (&owner_type == cluster_.registry().daemonsets()) {
    // The DaemonSet controller adds these tolerations to its pods.
    Value& tols = ensure_array(spec, "tolerations", a);
    for (auto [key, effect] : {std::pair{"node.kubernetes.io/not-ready", "NoExecute"},
                               {"node.kubernetes.io/unreachable", "NoExecute"},
                               {"node.kubernetes.io/disk-pressure", "NoSchedule"},
                               {"node.kubernetes.io/memory-pressure", "NoSchedule"},
                               {"node.kubernetes.io/pid-pressure", "NoSchedule"},
                               {"node.kubernetes.io/unschedulable", "NoSchedule"}}) {
      Value t(rapidjson::kObjectType);
      set_str(t, "key", key, a);
      set_str(t, "operator", "Exists", a);
      set_str(t, "effect", effect, a);
      tols.PushBack(t, a);
    }
  }
  return cluster_.create(*cluster_.registry().pods(), namespace_of(owner), std::move(pod));
}

bool SimWorkloads::write_status(const ResourceType& rt, const std::string& key, const std::function<void(Value&, Alloc&)>& fn) {
  auto before = cluster_.store().get(rt, key);
  auto after = cluster_.mutate(rt, key, [&](Value& o, Alloc& a) {
    Value& st = ensure_object(o, "status", a);
    set_int(st, "observedGeneration", json_int(o, {"metadata", "generation"}).value_or(1), a);
    fn(st, a);
  });
  return after && *after != before;
}

bool SimWorkloads::sync_deployment(const std::string& key) {
  const Registry& reg = cluster_.registry();
  auto dep = cluster_.store().get(*reg.deployments(), key);
  if (!dep) return false;
  const Value& d = dep->doc;
  const Value* tmpl = json_path(d, {"spec", "template"});
  if (!tmpl) return false;
  int64_t replicas = json_int(d, {"spec", "replicas"}).value_or(1);
  std::string hash = template_hash(*tmpl);
  std::string rs_name = fmt::format("{}-{}", name_of(d), hash);
  std::string uid(json_string(d, {"metadata", "uid"}));
  bool changed = false;
  int64_t ready = 0, total = 0, updated = 0;
  bool found = false;
  std::string prefix = std::string(namespace_of(d)) + "/";
  const auto& all = cluster_.store().objects(*reg.replicasets());
  std::vector<ObjectPtr> owned;
  for (auto it = all.lower_bound(prefix); it != all.end() && it->first.starts_with(prefix); ++it) {
    const Value* ref = controller_of(it->second->doc);
    if (ref && json_string(*ref, {"uid"}) == uid) owned.push_back(it->second);
  }
  // Revisions as the deployment controller numbers them: the newest template's ReplicaSet has the
  // highest deployment.kubernetes.io/revision, and the Deployment carries the same.
  auto revision_of = [](const Value& o) { return parse_int(json_string(o, {"metadata", "annotations", kRevision})).value_or(0); };
  int64_t max_revision = 0, current_revision = 0;
  for (const auto& rs : owned) {
    max_revision = std::max(max_revision, revision_of(rs->doc));
    if (name_of(rs->doc) == rs_name) current_revision = revision_of(rs->doc);
  }
  // A template seen before (a rollback) becomes the newest revision again.
  const int64_t revision = current_revision > 0 && current_revision == max_revision ? current_revision : max_revision + 1;
  auto scaled = [&](const Value& rs, int64_t from, int64_t to) {
    cluster_.emit_event(*reg.deployments(), d, "Normal", "ScalingReplicaSet",
                        fmt::format("Scaled {} replica set {} from {} to {}", to > from ? "up" : "down", name_of(rs), from, to),
                        "deployment-controller");
  };
  for (const auto& rs : owned) {
    bool current = name_of(rs->doc) == rs_name;
    found |= current;
    int64_t want = current ? replicas : 0;  // recreate strategy: old versions scale to zero
    int64_t had = json_int(rs->doc, {"spec", "replicas"}).value_or(0);
    if (had != want || (current && revision_of(rs->doc) != revision)) {
      auto r = cluster_.mutate(*reg.replicasets(), rs->key, [&](Value& o, Alloc& a) {
        set_int(ensure_object(o, "spec", a), "replicas", want, a);
        if (current) set_str(ensure_object(ensure_object(o, "metadata", a), "annotations", a), kRevision, std::to_string(revision), a);
      });
      changed |= static_cast<bool>(r);
      if (r && had != want) scaled((*r)->doc, had, want);
    }
    ready += json_int(rs->doc, {"status", "readyReplicas"}).value_or(0);
    total += json_int(rs->doc, {"status", "replicas"}).value_or(0);
    if (current) updated = json_int(rs->doc, {"status", "replicas"}).value_or(0);
  }
  if (!found) {
    Doc rs(rapidjson::kObjectType);
    Alloc& a = rs.GetAllocator();
    set_str(rs, "apiVersion", "apps/v1", a);
    set_str(rs, "kind", "ReplicaSet", a);
    Value& m = ensure_object(rs, "metadata", a);
    set_str(m, "name", rs_name, a);
    set_str(m, "namespace", namespace_of(d), a);
    set_str(ensure_object(m, "annotations", a), kRevision, std::to_string(revision), a);
    Value labels(rapidjson::kObjectType);
    if (const Value* l = json_path(*tmpl, {"metadata", "labels"})) labels.CopyFrom(*l, a);
    set_str(labels, "pod-template-hash", hash, a);
    set(m, "labels", std::move(labels), a);
    Value refs(rapidjson::kArrayType);
    refs.PushBack(owner_reference(d, *reg.deployments(), a), a);
    set(m, "ownerReferences", std::move(refs), a);
    Value& spec = ensure_object(rs, "spec", a);
    set_int(spec, "replicas", replicas, a);
    if (const Value* sel = json_path(d, {"spec", "selector"})) set(spec, "selector", copy_of(*sel, a), a);
    Value t;
    t.CopyFrom(*tmpl, a);
    set_str(ensure_object(ensure_object(t, "metadata", a), "labels", a), "pod-template-hash", hash, a);
    set(spec, "template", std::move(t), a);
    auto created = cluster_.create(*reg.replicasets(), namespace_of(d), std::move(rs));
    changed |= static_cast<bool>(created);
    if (created && replicas > 0) scaled((*created)->doc, 0, replicas);
  }
  if (json_string(d, {"metadata", "annotations", kRevision}) != std::to_string(revision)) {
    auto r = cluster_.mutate(*reg.deployments(), key, [&](Value& o, Alloc& a) {
      set_str(ensure_object(ensure_object(o, "metadata", a), "annotations", a), kRevision, std::to_string(revision), a);
    });
    changed |= static_cast<bool>(r);
  }
  // The conditions the deployment controller keeps (kubectl wait --for=condition=Available):
  // Available once no more replicas are missing than the strategy's maxUnavailable allows;
  // Progressing, complete once every replica is updated and available, Unknown while paused.
  // There is no progress deadline.
  const bool available = ready >= replicas - max_unavailable(d, replicas);
  const bool complete = updated == replicas && total == replicas && ready == replicas;
  const bool paused = json_bool(d, {"spec", "paused"});
  changed |= write_status(*reg.deployments(), key, [&](Value& st, Alloc& a) {
    // DeploymentStatus: every count omitempty.
    set_count(st, "replicas", total, a);
    set_count(st, "updatedReplicas", updated, a);
    set_count(st, "readyReplicas", ready, a);
    set_count(st, "availableReplicas", ready, a);
    set_count(st, "unavailableReplicas", std::max<int64_t>(0, total - ready), a);
    if (available) set_condition(st, "Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", a);
    else set_condition(st, "Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.", a);
    if (paused) set_condition(st, "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", a);
    else if (complete)
      set_condition(st, "Progressing", "True", "NewReplicaSetAvailable",
                    fmt::format("ReplicaSet \"{}\" has successfully progressed.", rs_name), a);
    else set_condition(st, "Progressing", "True", "ReplicaSetUpdated", fmt::format("ReplicaSet \"{}\" is progressing.", rs_name), a);
  });
  return changed;
}

// The replicas a Deployment may have unavailable: none for Recreate; for RollingUpdate its
// maxUnavailable (a percentage rounds down), 1 when both it and maxSurge come to 0, at most the
// replicas.
int64_t SimWorkloads::max_unavailable(const Value& d, int64_t replicas) {
  if (json_string(d, {"spec", "strategy", "type"}) == "Recreate") return 0;
  auto resolve = [&](std::string_view field, bool round_up) -> int64_t {
    const model::IntOrString value =  // absent: the default
        int_or_percent(json_path(d, {"spec", "strategy", "rollingUpdate", field})).value_or(model::IntOrString{true, 25});
    return value.scaled(static_cast<int32_t>(replicas), round_up);
  };
  int64_t unavailable = resolve("maxUnavailable", false);
  if (unavailable == 0 && resolve("maxSurge", true) == 0) unavailable = 1;
  return std::min(unavailable, replicas);
}

void SimWorkloads::set_condition(Value& status, std::string_view type, std::string_view value, std::string_view reason,
                                 const std::string& message, Alloc& a) {
  Value* found = &ensure_condition(status, type, a);
  const std::string stamp = format_time(cluster_.now());
  const bool flipped = json_string(*found, {"status"}) != value;
  if (flipped) set_str(*found, "lastTransitionTime", stamp, a);
  if (flipped || json_string(*found, {"reason"}) != reason || json_string(*found, {"message"}) != message)
    set_str(*found, "lastUpdateTime", stamp, a);
  set_str(*found, "status", value, a);
  set_str(*found, "reason", reason, a);
  set_str(*found, "message", message, a);
}

bool SimWorkloads::sync_replicaset(const std::string& key) {
  const Registry& reg = cluster_.registry();
  auto rs = cluster_.store().get(*reg.replicasets(), key);
  if (!rs) return false;
  const Value& r = rs->doc;
  const int64_t want = std::max<int64_t>(0, json_int(r, {"spec", "replicas"}).value_or(1));  // admission refuses < 0
  std::vector<ObjectPtr> live;
  for (const auto& p : owned_pods(std::string(json_string(r, {"metadata", "uid"}))))
    if (active(p->doc)) live.push_back(p);
  bool changed = false;
  const Value* tmpl = json_path(r, {"spec", "template"});
  for (int64_t i = static_cast<int64_t>(live.size()); i < want && tmpl; ++i) {
    auto created = create_pod(r, *reg.replicasets(), *tmpl, "", fmt::format("{}-", name_of(r)), "");
    changed |= static_cast<bool>(created);
  }
  if (static_cast<int64_t>(live.size()) > want) {
    // Scale down: unscheduled pods first, then the newest.
    std::sort(live.begin(), live.end(), [](const ObjectPtr& a, const ObjectPtr& b) {
      bool au = json_string(a->doc, {"spec", "nodeName"}).empty(), bu = json_string(b->doc, {"spec", "nodeName"}).empty();
      if (au != bu) return au;
      return json_string(a->doc, {"metadata", "creationTimestamp"}) > json_string(b->doc, {"metadata", "creationTimestamp"});
    });
    for (int64_t i = 0; i < static_cast<int64_t>(live.size()) - want; ++i)
      changed |= static_cast<bool>(cluster_.remove(*reg.pods(), namespace_of(live[i]->doc), name_of(live[i]->doc), {}));
  }
  int64_t ready = 0;
  for (const auto& p : live) ready += pod_ready(p->doc) ? 1 : 0;
  int64_t count = std::min<int64_t>(static_cast<int64_t>(live.size()), std::max<int64_t>(want, static_cast<int64_t>(live.size())));
  changed |= write_status(*reg.replicasets(), key, [&](Value& st, Alloc& a) {
    set_int(st, "replicas", count, a);  // ReplicaSetStatus: the others omitempty
    set_count(st, "fullyLabeledReplicas", count, a);
    set_count(st, "readyReplicas", ready, a);
    set_count(st, "availableReplicas", ready, a);
  });
  return changed;
}

bool SimWorkloads::sync_daemonset(const std::string& key) {
  const Registry& reg = cluster_.registry();
  auto ds = cluster_.store().get(*reg.daemonsets(), key);
  if (!ds) return false;
  const Value& d = ds->doc;
  const Value* tmpl = json_path(d, {"spec", "template"});
  if (!tmpl) return false;
  // Decode the template as a pod to reuse nodeSelector, affinity and toleration parsing.
  Doc probe(rapidjson::kObjectType);
  Alloc& pa = probe.GetAllocator();
  Value& pm = ensure_object(probe, "metadata", pa);
  set_str(pm, "name", "probe", pa);
  if (const Value* spec = json_member(*tmpl, "spec")) set(probe, "spec", copy_of(*spec, pa), pa);
  auto pod = model::decode_pod(to_json(probe));
  if (!pod) return false;
  std::vector<model::Toleration> tolerations(pod->tolerations.begin(), pod->tolerations.end());
  for (const char* k : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.kubernetes.io/disk-pressure",
                        "node.kubernetes.io/memory-pressure", "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable"}) {
    model::Toleration t;
    t.key = model::InternedString(k);
    t.op = model::TolerationOp::kExists;
    tolerations.push_back(t);
  }
  pod->tolerations = model::Tolerations(tolerations);
  std::map<std::string, std::vector<ObjectPtr>> by_node;
  for (const auto& p : owned_pods(std::string(json_string(d, {"metadata", "uid"}))))
    if (active(p->doc)) by_node[std::string(json_string(p->doc, {"spec", "nodeName"}))].push_back(p);
  bool changed = false;
  int64_t desired = 0, current = 0, ready = 0;
  for (const auto& [name, obj] : cluster_.store().objects(*reg.nodes())) {
    auto node = model::decode_node(to_json(obj->doc));
    if (!node) continue;
    // As the DaemonSet controller decides: a new pod needs every NoSchedule and NoExecute taint
    // tolerated; a running pod stays unless a NoExecute taint is not (a NoSchedule taint added
    // later, such as a drain's, leaves it running).
    const bool selected = pod->selects_node(node->meta.labels, name);
    bool should_run = selected && !model::first_untolerated(pod->tolerations, node->taints, true, false, true);
    bool keep_running = selected && !model::first_untolerated(pod->tolerations, node->taints, false, false, true);
    auto& pods = by_node[name];
    bool eligible = should_run || (keep_running && !pods.empty());
    if (eligible) {
      ++desired;
      if (pods.empty()) {
        changed |= static_cast<bool>(create_pod(d, *reg.daemonsets(), *tmpl, "", fmt::format("{}-", name_of(d)), name));
      } else {
        ++current;
        ready += pod_ready(pods[0]->doc) ? 1 : 0;
      }
    }
    // Pods on nodes that no longer qualify, and duplicates, go.
    for (size_t i = eligible ? 1 : 0; i < pods.size(); ++i)
      changed |= static_cast<bool>(cluster_.remove(*reg.pods(), namespace_of(pods[i]->doc), name_of(pods[i]->doc), {}));
  }
  changed |= write_status(*reg.daemonsets(), key, [&](Value& st, Alloc& a) {
    set_int(st, "desiredNumberScheduled", desired, a);  // DaemonSetStatus: these four always written
    set_int(st, "currentNumberScheduled", current, a);
    set_int(st, "numberReady", ready, a);
    set_int(st, "numberMisscheduled", 0, a);
    set_count(st, "updatedNumberScheduled", current, a);
    set_count(st, "numberAvailable", ready, a);
    set_count(st, "numberUnavailable", std::max<int64_t>(0, desired - ready), a);
  });
  return changed;
}

bool SimWorkloads::sync_statefulset(const std::string& key) {
  const Registry& reg = cluster_.registry();
  auto sts = cluster_.store().get(*reg.statefulsets(), key);
  if (!sts) return false;
  const Value& s = sts->doc;
  const Value* tmpl = json_path(s, {"spec", "template"});
  if (!tmpl) return false;
  int64_t want = json_int(s, {"spec", "replicas"}).value_or(1);
  std::string ns(namespace_of(s)), name(name_of(s));
  bool changed = false;
  int64_t ready = 0, count = 0;
  for (int64_t i = 0; i < want; ++i) {
    std::string pod_name = fmt::format("{}-{}", name, i);
    auto existing = cluster_.store().get(*reg.pods(), ns + "/" + pod_name);
    if (!existing) {
      // The same name comes back only after the old pod is gone.
      changed |= static_cast<bool>(create_pod(s, *reg.statefulsets(), *tmpl, pod_name, "", ""));
    } else if (active(existing->doc)) {
      ++count;
      ready += pod_ready(existing->doc) ? 1 : 0;
    }
  }
  for (const auto& p : owned_pods(std::string(json_string(s, {"metadata", "uid"})))) {
    std::string_view pn = name_of(p->doc);
    auto dash = pn.rfind('-');
    int64_t ordinal = dash == std::string_view::npos ? -1 : std::atoll(std::string(pn.substr(dash + 1)).c_str());
    if (ordinal >= want && active(p->doc)) changed |= static_cast<bool>(cluster_.remove(*reg.pods(), ns, pn, {}));
  }
  changed |= write_status(*reg.statefulsets(), key, [&](Value& st, Alloc& a) {
    set_int(st, "replicas", count, a);  // StatefulSetStatus: replicas and availableReplicas always written
    set_int(st, "availableReplicas", ready, a);
    set_count(st, "currentReplicas", count, a);
    set_count(st, "readyReplicas", ready, a);
  });
  return changed;
}

}  // namespace spotshift::kubesim
