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
//      (cluster-autoscaler.kubernetes.io/safe-to-evict=true lifts rules 6 to 8)
//   6. controller     no controller owner: Block, or Move with a warning when the policy allows
//                     deleting non-replicated pods
//   7. local-storage  emptyDir (Move by default) and hostPath (Block by default) volumes
//   8. kube-system    a kube-system pod no PodDisruptionBudget covers: Block by default
//   9. pinned         nodeSelector, required node affinity or tolerations rule out every spot
//                     node: Block ("pinned to on-demand")
// A pod no rule decides moves. The warned Move of rule 6 is not decisive: a non-replicated pod
// that the later rules block stays blocked.

#include "drain/policy.hpp"
#include "model/node.hpp"
#include "model/pod.hpp"

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

struct DrainContext {
  const PolicySpec& spec;
  // A namespace's labels, or nullptr when the namespace is not known (namespaceSelector only).
  std::function<const model::Labels*(std::string_view ns)> namespace_labels;
  // Whether some PodDisruptionBudget covers the pod (the kube-system rule).
  std::function<bool(const model::Pod&)> covered_by_pdb;
  SpotReach* spot_reach = nullptr;  // nullptr skips the pinned rule
};

PodVerdict classify(const model::Pod& pod, const DrainContext& ctx);

}  // namespace spotshift::drain
