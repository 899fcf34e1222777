#include "drain/drainability.hpp"

#include "sched/plugins.hpp"

#include <fmt/format.h>

#include <optional>

namespace spotshift::drain {

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::kMove:
      return "Move";
    case Verdict::kSkip:
      return "Skip";
    case Verdict::kBlock:
      return "Block";
  }
  return "Move";
}

SpotReach::SpotReach(std::vector<std::shared_ptr<const model::Node>> spot_nodes) : spot_(std::move(spot_nodes)) {}

bool SpotReach::reachable(const model::Pod& pod) {
  // Without the node name: the replicas of a workload on different nodes share an answer (node
  // selection, affinity and tolerations decide it, not where the pod runs now).
  sched::Framework::signature(pod, scratch_, false);
  if (auto it = memo_.find(scratch_); it != memo_.end()) return it->second;
  bool any = false;
  for (const auto& n : spot_)
    if (sched::matches_node_affinity(pod, *n) && !sched::untolerated_taint(pod, *n)) {
      any = true;
      break;
    }
  memo_.emplace(scratch_, any);
  return any;
}

namespace {

using Rule = std::optional<PodVerdict> (*)(const model::Pod&, const DrainContext&);

PodVerdict verdict(Verdict v, std::string_view rule, std::string reason, bool warning = false) {
  return PodVerdict{v, rule, std::move(reason), warning};
}

std::optional<PodVerdict> terminal(const model::Pod& pod) {
  if (pod.terminating()) return verdict(Verdict::kSkip, "terminal", "already terminating");
  if (pod.terminal()) return verdict(Verdict::kSkip, "terminal", fmt::format("already {}", model::to_string(pod.phase)));
  return std::nullopt;
}

std::optional<PodVerdict> daemonset(const model::Pod& pod) {
  if (pod.owned_by("DaemonSet"))
    return verdict(Verdict::kSkip, "daemonset", fmt::format("owned by DaemonSet {}", pod.controller->name.view()));
  return std::nullopt;
}

std::optional<PodVerdict> mirror(const model::Pod& pod) {
  if (pod.mirror || pod.owned_by("Node")) return verdict(Verdict::kSkip, "mirror", "a static (mirror) pod managed by the kubelet");
  return std::nullopt;
}

// Rules 1 to 3: a pod that stays on its node whatever the policy says.
std::optional<PodVerdict> staying(const model::Pod& pod) {
  if (auto v = terminal(pod)) return v;
  if (auto v = daemonset(pod)) return v;
  return mirror(pod);
}

std::optional<PodVerdict> stays(const model::Pod& pod, const DrainContext&) { return staying(pod); }

std::optional<PodVerdict> annotation(const model::Pod& pod, const DrainContext&) {
  if (pod.do_not_move) return verdict(Verdict::kBlock, "annotation", "annotated spotshift.io/do-not-move=true");
  if (pod.do_not_disrupt) return verdict(Verdict::kBlock, "annotation", "annotated karpenter.sh/do-not-disrupt=true");
  if (pod.safe_to_evict == false)
    return verdict(Verdict::kBlock, "annotation", "annotated cluster-autoscaler.kubernetes.io/safe-to-evict=false");
  return std::nullopt;
}

std::optional<PodVerdict> selection(const model::Pod& pod, const DrainContext& ctx) {
  if (ctx.spec.pod_selector && !ctx.spec.pod_selector->matches(pod.meta.labels))
    return verdict(Verdict::kBlock, "selection",
                   fmt::format("not selected by the policy's podSelector ({})", ctx.spec.pod_selector->to_string()));
  if (ctx.spec.namespace_selector) {
    const model::Labels* labels = ctx.namespace_labels ? ctx.namespace_labels(pod.meta.namespace_.view()) : nullptr;
    if (!labels)
      return verdict(
          Verdict::kBlock, "selection",
          fmt::format("namespace {} is not known, so the policy's namespaceSelector cannot be checked", pod.meta.namespace_.view()));
    if (!ctx.spec.namespace_selector->matches(*labels))
      return verdict(Verdict::kBlock, "selection",
                     fmt::format("namespace {} is not selected by the policy's namespaceSelector ({})", pod.meta.namespace_.view(),
                                 ctx.spec.namespace_selector->to_string()));
  }
  return std::nullopt;
}

std::optional<PodVerdict> controller(const model::Pod& pod, const DrainContext& ctx) {
  if (pod.controller) return std::nullopt;
  if (ctx.spec.delete_non_replicated_pods)
    return verdict(Verdict::kMove, "controller",
                   "has no controller, so nothing will recreate it; moved because deleteNonReplicatedPods is true", true);
  return verdict(Verdict::kBlock, "controller", "has no controller, so nothing would recreate it (deleteNonReplicatedPods is false)");
}

std::optional<PodVerdict> owner(const model::Pod& pod, const DrainContext& ctx) {
  if (!pod.controller) return std::nullopt;
  const model::OwnerReference& ref = *pod.controller;
  const OwnerInfo info = ctx.owner ? ctx.owner(pod) : OwnerInfo{};
  if (info.state == OwnerInfo::State::kMissing) {
    if (ctx.spec.delete_non_replicated_pods)
      return verdict(Verdict::kMove, "owner",
                     fmt::format("its controller {} {} no longer exists, so nothing will recreate it; moved because "
                                 "deleteNonReplicatedPods is true",
                                 ref.kind.view(), ref.name.view()),
                     true);
    return verdict(Verdict::kBlock, "owner",
                   fmt::format("its controller {} {} no longer exists, so nothing would recreate it (deleteNonReplicatedPods is false)",
                               ref.kind.view(), ref.name.view()));
  }
  if (ref.kind.view() != "Job" || ctx.spec.evict_job_pods) return std::nullopt;
  if (info.state == OwnerInfo::State::kUnknown)
    return verdict(Verdict::kBlock, "owner",
                   fmt::format("owned by Job {}, which is not known here, so whether an eviction counts against its backoffLimit "
                               "cannot be checked (evictJobPods is false)",
                               ref.name.view()));
  if (!info.job_ignores_disruptions)
    return verdict(Verdict::kBlock, "owner",
                   fmt::format("owned by Job {}, whose podFailurePolicy does not ignore disruptions (DisruptionTarget): an "
                               "eviction would count against its backoffLimit (evictJobPods is false)",
                               ref.name.view()));
  return std::nullopt;
}

std::optional<PodVerdict> local_storage(const model::Pod& pod, const DrainContext& ctx) {
  if (pod.has_host_path && ctx.spec.host_path == Handling::kBlock)
    return verdict(Verdict::kBlock, "local-storage", "uses a hostPath volume (localStorage.hostPath is Block)");
  if (pod.has_empty_dir && ctx.spec.empty_dir == Handling::kBlock)
    return verdict(Verdict::kBlock, "local-storage", "uses an emptyDir volume, whose data a move loses (localStorage.emptyDir is Block)");
  return std::nullopt;
}

std::optional<PodVerdict> kube_system(const model::Pod& pod, const DrainContext& ctx) {
  if (pod.meta.namespace_.view() != "kube-system" || ctx.spec.kube_system_without_pdb == Handling::kMove) return std::nullopt;
  if (ctx.covered_by_pdb && ctx.covered_by_pdb(pod)) return std::nullopt;
  return verdict(Verdict::kBlock, "kube-system", "a kube-system pod no PodDisruptionBudget covers (kubeSystemPodsWithoutPDB is Block)");
}

std::optional<PodVerdict> pinned(const model::Pod& pod, const DrainContext& ctx) {
  if (!ctx.spot_reach || ctx.spot_reach->reachable(pod)) return std::nullopt;
  return verdict(Verdict::kBlock, "pinned", "pinned to on-demand: its nodeSelector, node affinity or tolerations rule out every spot node");
}

constexpr Rule kBeforeOverride[] = {stays, annotation, selection};
constexpr Rule kLiftedBySafeToEvict[] = {controller, owner, local_storage, kube_system};

}  // namespace

bool stays_on_node(const model::Pod& pod) { return staying(pod).has_value(); }

PodVerdict classify(const model::Pod& pod, const DrainContext& ctx) {
  for (Rule rule : kBeforeOverride)
    if (auto v = rule(pod, ctx)) return std::move(*v);
  std::optional<PodVerdict> warned;
  if (pod.safe_to_evict != true) {
    for (Rule rule : kLiftedBySafeToEvict) {
      auto v = rule(pod, ctx);
      if (!v) continue;
      // A warned Move (a bare pod the policy lets go) still has to pass the later rules.
      if (v->verdict == Verdict::kMove) {
        warned = std::move(v);
        continue;
      }
      return std::move(*v);
    }
  }
  if (auto v = pinned(pod, ctx)) return std::move(*v);
  if (warned) return std::move(*warned);
  return PodVerdict{Verdict::kMove, "default", {}, false};
}

}  // namespace spotshift::drain
