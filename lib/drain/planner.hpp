#pragma once
// The whole-node planner: pure and deterministic, snapshot in, plan out. The operator and the
// offline `spotshift plan` command run this same code.
//
//  1. Classify Ready nodes with the policy's selectors: on-demand (sources) and spot (targets).
//     A node matching both is excluded with a reason; cordoned nodes are neither.
//  2. Order on-demand nodes by requested CPU, least first (ties by name), or with drainOrder
//     ScarceResources by their demand weighted by each resource's scarcity on the spot nodes;
//     drainOrder Auto (the default) is ScarceResources when a pod on an on-demand node asks for
//     the cluster's scarcest extended resource (GPUs, say), RequestedCPU otherwise.
//     Pending pods the scheduler has not bound yet take room on the spot nodes first: on the
//     node they are nominated to, or where they fit (one that fits nowhere takes none).
//  3. For each, give every pod a verdict (drainability.hpp) and charge the Move pods against
//     their PodDisruptionBudgets together (budget.hpp).
//  4. Place the Move pods, largest CPU request first, through lib/sched with the policy's
//     profile on a fork of the snapshot where the node's own Move pods are gone. Spot nodes are
//     ranked by the profile's scores: FreeCPU puts the fullest spot node that fits first; the
//     packing scores see the pods of the on-demand nodes still to decide (sched::Demand).
//  5. If every pod fits and nothing blocks, the node gets a NodePlan and the fork is committed,
//     so later nodes see those placements; otherwise the node gets every reason found.
//  6. With spec.searchIterations, search (search.hpp) for a set of those nodes that drains more,
//     starting from this plan; if it finds one, plan again through the same steps with that set
//     first and each pod tried first on the spot node the search gave it, and keep whichever of
//     the two plans drains more nodes.
//  Pods below spec.expendablePodsPriorityCutoff (overprovisioning placeholders) are left out of
//  every step: their room on spot nodes is free (the scheduler preempts them), they never move,
//  and each drainable node lists the ones its moves would push out (NodePlan::displaces).
//  7. With spec.minOnDemandNodes, keep that many on-demand nodes running pods: the drainable
//     nodes past the floor (in drain order) are undrainable instead, reason OnDemandFloor. An
//     on-demand node counts when it is Ready, not cordoned, and runs a pod other than DaemonSet,
//     static, finished or terminating pods. The evictor's re-check of one node skips the floor.
//  8. Sequence the drains: the drainable nodes whose pods fit on the fewest spot nodes first
//     (NodePlan::places), the others in drain order. Without steering the cluster's scheduler
//     places each replacement by its own scores, so a pod that fits on few spot nodes drains
//     before replacements spread over them. drainOrder HighestSavingsPerEviction keeps its order.

#include "core/clock.hpp"
#include "drain/budget.hpp"
#include "drain/drainability.hpp"
#include "drain/policy.hpp"
#include "sched/snapshot.hpp"

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace spotshift::drain {

using NodePtr = sched::NodePtr;
using PodPtr = sched::PodPtr;

// The kinds of reasons a node is not drainable, a fixed set (spotshift_undrainable_nodes' reason
// label): the drainability rules that block a pod (annotation, selection, controller, owner,
// local-storage, kube-system, pinned) and the planner's own.
inline constexpr std::array<std::string_view, 18> kRejectionRules = {
    "annotation",      "selection",       "controller", "owner",          "local-storage", "kube-system",
    "pinned",          "volume-unknown",  "budget",     "no-room",        "no-spot-nodes", "profile-invalid",
    "nothing-to-move", "node-annotation", "not-usable", "both-selectors", "excluded",      "on-demand-floor"};

// An on-demand node the planner must leave alone: why, and the kind of reason (a
// kRejectionRules name: another policy's node or a drain's backoff are "excluded").
struct Exclusion {
  std::string reason;
  std::string_view rule = "excluded";
  Exclusion() = default;
  Exclusion(std::string r) : reason(std::move(r)) {}  // NOLINT: a reason alone is the common case
  Exclusion(const char* r) : reason(r) {}             // NOLINT
};

struct Plan;

struct PlanInput {
  std::vector<NodePtr> nodes;
  std::vector<PodPtr> pods;
  std::vector<PdbPtr> pdbs;
  // Namespace labels (for namespaceSelector); consulted only when the policy has one.
  std::unordered_map<std::string, model::Labels> namespaces;
  sched::VolumeRequirements volumes;
  // Whether `volumes` holds every claim of the cluster (the operator watches claims and volumes):
  // then a pod whose claim is missing there (or bound to a volume not known) cannot be planned,
  // since the zone its volume needs cannot be checked. Fail closed.
  bool volumes_watched = false;
  // The pods' controllers as the caches have them (drainability rule 7); none: not watched.
  OwnerLookup owners;
  // On-demand nodes the planner must leave alone, with the reason (another policy also selects
  // them, a drain of theirs backs off, ...).
  std::map<std::string, Exclusion> excluded;
  // Plan only this on-demand node (the evictor's re-check), without earlier nodes' moves.
  std::optional<std::string> only_node;
  // Where the cluster snapshot of the last plan is kept for this one (the operator's, across its
  // plans); none: the snapshot is built for this plan alone. The plan is the same either way.
  sched::SnapshotCache* snapshots = nullptr;
  // The policy's previous plan (the operator's, between drains); none: a fresh plan. Its
  // drainable nodes are planned again first, each pod tried first on its previous target, and
  // that plan is kept while it drains as many nodes as planning node by node and moves no more
  // pods (the search, when on, starts from it). The evictor's re-check of one node tries the
  // targets of the plan its drain started from.
  std::shared_ptr<const Plan> previous;
};

struct PodMove {
  PodPtr pod;
  std::string target;                // the spot node it is expected to land on
  std::vector<std::string> budgets;  // PodDisruptionBudgets (namespace/name) charged for it
  std::string warning;               // set for a move the user should hear about
};

struct NodePlan {
  std::string node;
  int64_t requested_cpu_milli = 0;
  std::vector<PodMove> moves;           // in eviction order: budget-covered pods first
  std::vector<std::string> skipped;     // "ns/pod: reason" for pods left in place (DaemonSets, ...)
  std::optional<double> hourly_saving;  // the node's price per hour (spec.pricing), when it has one
  // Expendable pods (below expendablePodsPriorityCutoff) on spot nodes that the moves push out:
  // "ns/pod on node".
  std::vector<std::string> displaces;
  // The fewest spot nodes one of its pods fits on now (step 8), counted up to one more than the
  // plan's pods to move; none when not counted (a re-check of one node, drainOrder
  // HighestSavingsPerEviction).
  std::optional<int> places;
};

struct NodeRejection {
  std::string node;
  std::vector<std::string> reasons;
  std::vector<std::string_view> rules;  // the distinct kRejectionRules its reasons are of

  NodeRejection() = default;
  NodeRejection(std::string n, std::string_view rule, std::string reason) : node(std::move(n)) { add(rule, std::move(reason)); }
  explicit NodeRejection(std::string n) : node(std::move(n)) {}
  void add(std::string_view rule, std::string reason);
};

struct PlanSummary {
  int on_demand_nodes = 0;
  int spot_nodes = 0;
  int drainable_nodes = 0;
  int undrainable_nodes = 0;
  int pods_to_move = 0;
  int searched_nodes = 0;  // drained because the plan search (spec.searchIterations) found them
  // With spec.pricing: the drainable nodes' prices per hour added up, and how many of them have
  // no price.
  std::optional<double> hourly_savings;
  int unpriced_nodes = 0;
  int displaced_pods = 0;                              // expendable pods the drainable nodes' moves push out, all told
  DrainOrder drain_order = DrainOrder::kRequestedCpu;  // the order planned in (drainOrder Auto resolved)
  std::string scarce_resource;                         // with ScarceResources: the scarcest extended resource, if any
  double plan_millis = 0;
};

struct Plan {
  std::vector<NodePlan> drainable;         // in drain order
  std::vector<NodeRejection> undrainable;  // every other on-demand node (and excluded ones)
  std::vector<std::string> spot_nodes;     // the targets considered, by name
  PlanSummary summary;

  const NodePlan* find(std::string_view node) const;
};

// Plans with a valid spec. Never fails: what cannot be done is a reason in the plan.
Plan make_plan(const PlanInput& input, const PolicySpec& spec);

// The node classes of a policy, shared by the planner, the gates and the operator.
enum class NodeClass : uint8_t { kNone, kOnDemand, kSpot, kBoth };
NodeClass classify_node(const model::Node& node, const PolicySpec& spec);
// A node the planner uses at all: Ready and not cordoned.
bool usable(const model::Node& node);

}  // namespace spotshift::drain
