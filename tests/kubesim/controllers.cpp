#include "controllers.hpp"

namespace spotshift::kubesim {

const Value* controller_of(const Value& obj) {
  const Value* refs = json_path(obj, {"metadata", "ownerReferences"});
  if (!refs || !refs->IsArray()) return nullptr;
  for (const auto& r : refs->GetArray())
    if (json_bool(r, {"controller"})) return &r;
  return nullptr;
}

Controllers::Controllers(Cluster& cluster)
    : cluster_(cluster), scheduler_(cluster), workloads_(cluster), kubelet_(cluster), disruption_(cluster), lifecycle_(cluster) {
  // Catch up with what is already stored, then follow every change.
  for (const ResourceType* rt : cluster_.registry().all()) {
    if (rt->storage) continue;
    for (const auto& [key, obj] : cluster_.store().objects(*rt)) {
      Change c{obj->rv, EventType::kAdded, rt, obj, nullptr};
      scheduler_.observe(c);
      workloads_.observe(c);
      kubelet_.observe(c);
      disruption_.observe(c);
      lifecycle_.observe(c);
    }
  }
  cluster_.store().subscribe([this](const Change& c) {
    scheduler_.observe(c);
    workloads_.observe(c);
    kubelet_.observe(c);
    disruption_.observe(c);
    lifecycle_.observe(c);
  });
}

bool Controllers::run() {
  const ClusterOptions& o = cluster_.options();
  bool changed = false;
  // Order matters only for latency: node taints first, then workloads create pods, the
  // scheduler binds them, the kubelet starts them, and budgets are recomputed last.
  if (o.node_lifecycle) changed |= lifecycle_.run();
  if (o.workloads) changed |= workloads_.run();
  if (o.scheduler) changed |= scheduler_.run();
  if (o.kubelet) changed |= kubelet_.run();
  if (o.disruption && !o.stall_pdb_status) changed |= disruption_.run();
  return changed;
}

std::optional<Time> Controllers::next_deadline() const {
  std::optional<Time> next = kubelet_.next_deadline();
  if (auto d = disruption_.next_deadline(); d && (!next || *d < *next)) next = d;
  return next;
}

}  // namespace spotshift::kubesim
