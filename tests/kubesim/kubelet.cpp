// The simulated kubelet and the disruption and node lifecycle controllers.

#include "controllers.hpp"
#include "disruption.hpp"

#include <fmt/format.h>

namespace spotshift::kubesim {

namespace {

// Pods annotated like this never finish terminating (until deleted with grace 0): the test hook
// for "a pod that never terminates".
constexpr std::string_view kNeverTerminate = "kubesim.spotshift.io/never-terminate";
// Pods annotated like this run but never pass their readiness probe: Ready and ContainersReady
// stay False, every container unready.
constexpr std::string_view kNeverReady = "kubesim.spotshift.io/never-ready";

bool has_finalizers(const Value& obj) {
  const Value* f = json_path(obj, {"metadata", "finalizers"});
  return f && f->IsArray() && f->Size() > 0;
}

}  // namespace

void SimKubelet::observe(const Change& c) {
  if (c.rt != cluster_.registry().pods() || c.type == EventType::kDeleted) return;
  const Value& pod = c.obj->doc;
  std::string uid(json_string(pod, {"metadata", "uid"}));
  if (json_string(pod, {"spec", "nodeName"}).empty()) return;
  Time now = cluster_.now();
  if (auto deletion = parse_time(json_string(pod, {"metadata", "deletionTimestamp"}))) {
    if (json_string(pod, {"metadata", "annotations", kNeverTerminate}) == "true" &&
        json_int(pod, {"metadata", "deletionGracePeriodSeconds"}).value_or(1) > 0)
      return;
    if (finishing_.insert(uid).second) {
      Time due = std::min(*deletion, now + cluster_.options().termination_cap) + cluster_.options().kill_latency;
      timers_.push({due, c.obj->key, uid, true});
      std::string container;
      if (const Value* cs = json_path(pod, {"spec", "containers"}); cs && cs->IsArray() && cs->Size() > 0)
        container = json_string((*cs)[0], {"name"});
      cluster_.emit_event(*cluster_.registry().pods(), pod, "Normal", "Killing", fmt::format("Stopping container {}", container),
                          "kubelet");
    } else if (!has_finalizers(pod)) {
      // A finalizer removed after the grace period: finish now.
      timers_.push({now, c.obj->key, uid, true});
    }
    return;
  }
  if (json_string(pod, {"status", "phase"}) == "Pending" && starting_.insert(uid).second)
    timers_.push({now + cluster_.options().kubelet_start_delay, c.obj->key, uid, false});
}

bool SimKubelet::run() {
  bool changed = false;
  Time now = cluster_.now();
  const ResourceType& pods = *cluster_.registry().pods();
  while (!timers_.empty() && timers_.top().due <= now) {
    Timer t = timers_.top();
    timers_.pop();
    auto pod = cluster_.store().get(pods, t.key);
    if (!pod || json_string(pod->doc, {"metadata", "uid"}) != t.uid) {
      starting_.erase(t.uid);
      finishing_.erase(t.uid);
      continue;
    }
    if (t.finish) {
      if (has_finalizers(pod->doc)) continue;  // waits for the finalizers; observe() re-arms
      finishing_.erase(t.uid);
      cluster_.erase(pods, t.key);
      changed = true;
      continue;
    }
    starting_.erase(t.uid);
    if (json_path(pod->doc, {"metadata", "deletionTimestamp"}) || json_string(pod->doc, {"status", "phase"}) != "Pending") continue;
    if (!cluster_.store().get(*cluster_.registry().nodes(), json_string(pod->doc, {"spec", "nodeName"}))) continue;
    uint64_t ip = next_ip_++;
    std::string stamp = format_time(now);
    auto r = cluster_.mutate(pods, t.key, [&](Value& o, Alloc& a) {
      const bool ready = json_string(o, {"metadata", "annotations", kNeverReady}) != "true";
      Value& st = ensure_object(o, "status", a);
      set_str(st, "phase", "Running", a);
      set_str(st, "podIP", fmt::format("10.{}.{}.{}", 244 + (ip >> 16) % 8, (ip >> 8) & 255, ip & 255), a);
      set_str(st, "startTime", stamp, a);
      Value& conds = ensure_array(st, "conditions", a);
      for (const char* type : {"Initialized", "Ready", "ContainersReady", "PodScheduled"}) {
        for (auto it = conds.Begin(); it != conds.End();) it = json_string(*it, {"type"}) == type ? conds.Erase(it) : it + 1;
        Value c(rapidjson::kObjectType);
        set_str(c, "type", type, a);
        const bool probed = std::string_view(type) == "Ready" || std::string_view(type) == "ContainersReady";
        set_str(c, "status", ready || !probed ? "True" : "False", a);
        if (!ready && probed) set_str(c, "reason", "ContainersNotReady", a);
        set_str(c, "lastTransitionTime", stamp, a);
        conds.PushBack(c, a);
      }
      Value statuses(rapidjson::kArrayType);
      if (const Value* cs = json_path(o, {"spec", "containers"}); cs && cs->IsArray()) {
        for (const auto& c : cs->GetArray()) {
          Value s(rapidjson::kObjectType);
          set_str(s, "name", json_string(c, {"name"}), a);
          set_bool(s, "ready", ready, a);
          set_bool(s, "started", true, a);
          set_int(s, "restartCount", 0, a);
          set_str(s, "image", json_string(c, {"image"}), a);
          // A container runtime reports the image's digest and the container's id.
          set_str(s, "imageID", fmt::format("kubesim://{}@sha256:0", json_string(c, {"image"})), a);
          set_str(s, "containerID", fmt::format("kubesim://{}/{}", json_string(o, {"metadata", "uid"}), json_string(c, {"name"})), a);
          Value running(rapidjson::kObjectType);
          set_str(running, "startedAt", stamp, a);
          set(ensure_object(s, "state", a), "running", std::move(running), a);
          statuses.PushBack(s, a);
        }
      }
      set(st, "containerStatuses", std::move(statuses), a);
    });
    changed |= static_cast<bool>(r);
  }
  return changed;
}

std::optional<Time> SimKubelet::next_deadline() const {
  if (timers_.empty()) return std::nullopt;
  return timers_.top().due;
}

void SimDisruption::observe(const Change& c) {
  const Registry& reg = cluster_.registry();
  if (c.rt == reg.pdbs()) {
    if (c.type != EventType::kDeleted) dirty_.insert(c.obj->key);
  } else if (c.rt == reg.pods() || c.rt == reg.replicasets() || c.rt == reg.deployments() || c.rt == reg.statefulsets()) {
    dirty_namespaces_.insert(std::string(namespace_of(c.obj->doc)));
  }
}

bool SimDisruption::run() {
  const Registry& reg = cluster_.registry();
  const auto& pdbs = cluster_.store().objects(*reg.pdbs());
  Time now = cluster_.now();
  if (next_ && *next_ <= now) {
    for (const auto& [k, o] : pdbs) dirty_.insert(k);
    next_.reset();
  }
  for (const auto& ns : dirty_namespaces_) {
    std::string prefix = ns + "/";
    for (auto it = pdbs.lower_bound(prefix); it != pdbs.end() && it->first.starts_with(prefix); ++it) dirty_.insert(it->first);
  }
  dirty_namespaces_.clear();
  std::set<std::string> keys;
  keys.swap(dirty_);
  bool changed = false;
  for (const auto& key : keys) {
    auto pdb = cluster_.store().get(*reg.pdbs(), key);
    if (!pdb) continue;
    PdbStatus st = compute_pdb_status(cluster_, pdb->doc);
    for (const auto& [name, when] : st.disrupted_pods) {
      if (auto t = parse_time(when)) {
        Time expiry = *t + cluster_.options().disrupted_pod_timeout;
        if (!next_ || expiry < *next_) next_ = expiry;
      }
    }
    auto r = cluster_.mutate(*reg.pdbs(), key, [&](Value& o, Alloc& a) {
      Value& s = ensure_object(o, "status", a);
      int64_t generation = json_int(o, {"metadata", "generation"}).value_or(1);
      set_int(s, "observedGeneration", generation, a);
      set_int(s, "disruptionsAllowed", st.disruptions_allowed, a);
      set_int(s, "currentHealthy", st.current_healthy, a);
      set_int(s, "desiredHealthy", st.desired_healthy, a);
      set_int(s, "expectedPods", st.expected_pods, a);
      Value disrupted(rapidjson::kObjectType);
      for (const auto& [name, when] : st.disrupted_pods) set_str(disrupted, name, when, a);
      if (disrupted.MemberCount()) set(s, "disruptedPods", std::move(disrupted), a);
      else drop_field(s, "disruptedPods");
      bool allowed = st.disruptions_allowed > 0;
      std::string status = allowed ? "True" : "False";
      Value& conds = ensure_array(s, "conditions", a);
      std::string transition = format_time(now);
      for (const auto& c : conds.GetArray())
        if (json_string(c, {"type"}) == "DisruptionAllowed" && json_string(c, {"status"}) == status)
          transition = std::string(json_string(c, {"lastTransitionTime"}, transition));
      conds.Clear();
      Value c(rapidjson::kObjectType);
      set_str(c, "type", "DisruptionAllowed", a);
      set_str(c, "status", status, a);
      set_int(c, "observedGeneration", generation, a);
      set_str(c, "lastTransitionTime", transition, a);
      set_str(c, "reason", st.reason, a);
      set_str(c, "message", st.message, a);
      conds.PushBack(c, a);
    });
    changed |= r && *r != pdb;
  }
  return changed;
}

void SimNodeLifecycle::observe(const Change& c) {
  if (c.rt == cluster_.registry().nodes() && c.type != EventType::kDeleted) dirty_.insert(c.obj->key);
}

bool SimNodeLifecycle::run() {
  std::set<std::string> keys;
  keys.swap(dirty_);
  bool changed = false;
  const ResourceType& nodes = *cluster_.registry().nodes();
  for (const auto& key : keys) {
    auto node = cluster_.store().get(nodes, key);
    if (!node) continue;
    const Value& n = node->doc;
    // The taints this controller owns, and which of them the node's state calls for.
    std::vector<std::pair<std::string, std::string>> wanted;
    if (json_bool(n, {"spec", "unschedulable"})) wanted.push_back({"node.kubernetes.io/unschedulable", "NoSchedule"});
    std::string ready = "Unknown";
    auto condition = [&](std::string_view type) -> std::string {
      if (const Value* conds = json_path(n, {"status", "conditions"}); conds && conds->IsArray())
        for (const auto& c : conds->GetArray())
          if (json_string(c, {"type"}) == type) return std::string(json_string(c, {"status"}));
      return "";
    };
    ready = condition("Ready");
    if (ready == "False") {
      wanted.push_back({"node.kubernetes.io/not-ready", "NoSchedule"});
      wanted.push_back({"node.kubernetes.io/not-ready", "NoExecute"});
    } else if (ready != "True") {
      wanted.push_back({"node.kubernetes.io/unreachable", "NoSchedule"});
      wanted.push_back({"node.kubernetes.io/unreachable", "NoExecute"});
    }
    if (condition("MemoryPressure") == "True") wanted.push_back({"node.kubernetes.io/memory-pressure", "NoSchedule"});
    if (condition("DiskPressure") == "True") wanted.push_back({"node.kubernetes.io/disk-pressure", "NoSchedule"});
    if (condition("PIDPressure") == "True") wanted.push_back({"node.kubernetes.io/pid-pressure", "NoSchedule"});
    if (condition("NetworkUnavailable") == "True") wanted.push_back({"node.kubernetes.io/network-unavailable", "NoSchedule"});
    static const std::set<std::string> kOwned = {"node.kubernetes.io/unschedulable",      "node.kubernetes.io/not-ready",
                                                 "node.kubernetes.io/unreachable",        "node.kubernetes.io/memory-pressure",
                                                 "node.kubernetes.io/disk-pressure",      "node.kubernetes.io/pid-pressure",
                                                 "node.kubernetes.io/network-unavailable"};
    // Nothing to do when the node already carries exactly the wanted owned taints.
    std::set<std::pair<std::string, std::string>> have;
    if (const Value* ts = json_path(n, {"spec", "taints"}); ts && ts->IsArray())
      for (const auto& tt : ts->GetArray())
        if (kOwned.count(std::string(json_string(tt, {"key"}))))
          have.insert({std::string(json_string(tt, {"key"})), std::string(json_string(tt, {"effect"}))});
    if (have == std::set<std::pair<std::string, std::string>>(wanted.begin(), wanted.end())) continue;
    auto r = cluster_.mutate(nodes, key, [&](Value& o, Alloc& a) {
      Value& spec = ensure_object(o, "spec", a);
      Value& taints = ensure_array(spec, "taints", a);
      std::set<std::pair<std::string, std::string>> present;
      for (auto it = taints.Begin(); it != taints.End();) {
        std::pair<std::string, std::string> k{std::string(json_string(*it, {"key"})), std::string(json_string(*it, {"effect"}))};
        bool keep = !kOwned.count(k.first) || std::find(wanted.begin(), wanted.end(), k) != wanted.end();
        if (keep) {
          present.insert(k);
          ++it;
        } else {
          it = taints.Erase(it);
        }
      }
      for (const auto& w : wanted) {
        if (present.count(w)) continue;
        Value t(rapidjson::kObjectType);
        set_str(t, "key", w.first, a);
        set_str(t, "effect", w.second, a);
        if (w.second == "NoExecute") set_str(t, "timeAdded", format_time(cluster_.now()), a);
        taints.PushBack(t, a);
      }
      if (taints.Empty()) drop_field(spec, "taints");
    });
    changed |= r && *r != node;
  }
  return changed;
}

}  // namespace spotshift::kubesim
