#pragma once
// Which pods of an on-demand node move, which are left where they are, and which block the
// node: an ordered chain of rules, the first decisive one wins. Each verdict carries the rule's
// name and a reason a person can act on.
//
//   1. terminal       Succeeded, Failed or terminating pods: Skip
//   2. daemonset      owned by a DaemonSet: Skip (it runs on every node anyway)
//   3. mirror         mirror (static) pods: Skip
//   4. annotation     spotshift.io/do-not-move=true, karpenter.sh/do-not-disrupt=true or
//                     cluster-autoscaler.kubernetes.io/safe-to-evict=false: Block
//   5. selection      not selected by the policy's podSelector / namespaceSelector: Block
//      (cluster-autoscaler.kubernetes.io/safe-to-evict=true lifts rules 6 to 9)
//   6. controller     no controller owner: Block, or Move with a warning when the policy allows
//                     deleting non-replicated pods
//   7. owner          its controller (ReplicaSet, StatefulSet, Job) no longer exists: as rule 6;
//                     owned by a Job whose podFailurePolicy does not ignore disruptions (or a
//                     Job not known): Block unless the policy allows evicting Job pods
//   8. local-storage  emptyDir (Move by default) and hostPath (Block by default) volumes
//   9. kube-system    a kube-system pod no PodDisruptionBudget covers: Block by default
//  10. pinned         nodeSelector, required node affinity or tolerations rule out every spot
//                     node: Block ("pinned to on-demand")
// A pod no rule decides moves. The warned Moves of rules 6 and 7 are not decisive: a
// non-replicated pod that the later rules block stays blocked.

#include "drain/policy.hpp"
#include "model/node.hpp"
#include "model/pod.hpp"

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace spotshift::drain {

enum class Verdict : uint8_t { kMove, kSkip, kBlock };
std::string_view to_string(Verdict v);

struct PodVerdict {
  Verdict verdict = Verdict::kMove;
  std::string_view rule;  // "terminal", "daemonset", ..., or "default"
  std::string reason;     // empty for a plain Move
  bool warning = false;   // a Move the user should hear about (a non-replicated pod deleted)
};

// Whether a pod's own node selection (nodeSelector, required node affinity, tolerations of
// NoSchedule/NoExecute taints) admits at least one spot node. Memoised per pod signature, since
// the replicas of a workload share one.
class SpotReach {
 public:
  explicit SpotReach(std::vector<std::shared_ptr<const model::Node>> spot_nodes);
  bool reachable(const model::Pod& pod);
  size_t spot_nodes() const { return spot_.size(); }

 private:
  std::vector<std::shared_ptr<const model::Node>> spot_;
  std::unordered_map<std::string, bool> memo_;
  std::string scratch_;
};

// What the caches say of a pod's controller (model::kWatchedControllerKinds).
struct OwnerInfo {
  enum class State : uint8_t {
    kUnknown,  // a kind not watched, or nothing watched: taken to exist; a Job then is not known
    kExists,   // the cache holds it, with the uid the pod names
    kMissing,  // a watched kind, and the cache has no such object (or another of that name)
  };
  State state = State::kUnknown;
  bool job_ignores_disruptions = false;  // an existing Job's podFailurePolicy ignores evictions
};
using OwnerLookup = std::function<OwnerInfo(const model::Pod&)>;

// An OwnerLookup over caches of the watched kinds: `find(kind, "namespace/name")` returns the
// object, or nullptr. A kind `watched` says false for is kUnknown.
template <class Find, class Watched>
OwnerInfo owner_info(const model::Pod& pod, Find&& find, Watched&& watched) {
  if (!pod.controller || !watched(pod.controller->kind.view())) return {};
  const auto& ref = *pod.controller;
  auto found = find(ref.kind.view(), fmt::format("{}/{}", pod.meta.namespace_.view(), ref.name.view()));
  if (!found || (!ref.uid.view().empty() && found->meta.uid != ref.uid.view())) return {OwnerInfo::State::kMissing, false};
  return {OwnerInfo::State::kExists, found->ignores_disruptions};
}

struct DrainContext {
  const PolicySpec& spec;
  // A namespace's labels, or nullptr when the namespace is not known (namespaceSelector only).
  std::function<const model::Labels*(std::string_view ns)> namespace_labels;
  // Whether some PodDisruptionBudget covers the pod (the kube-system rule).
  std::function<bool(const model::Pod&)> covered_by_pdb;
  SpotReach* spot_reach = nullptr;  // nullptr skips the pinned rule
  // The pod's controller as the caches have it; nullptr: controllers are not watched (every
  // owner is taken to exist, and Job pods block unless evictJobPods).
  OwnerLookup owner = nullptr;
};

PodVerdict classify(const model::Pod& pod, const DrainContext& ctx);
// Rules 1 to 3 (terminal, daemonset, mirror): the pod stays on its node whatever the policy says,
// so draining the node does not move it.
bool stays_on_node(const model::Pod& pod);

}  // namespace spotshift::drain
