#pragma once
// A compact Pod: what scheduling, drainability and eviction read (docs/how-it-decides.md).

#include "model/meta.hpp"
#include "model/resources.hpp"
#include "model/selector.hpp"
#include "model/taints.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace spotshift::model {

enum class PodPhase : uint8_t { kPending, kRunning, kSucceeded, kFailed, kUnknown };
std::string_view to_string(PodPhase p);

enum class Protocol : uint8_t { kTCP, kUDP, kSCTP };

struct OwnerReference {
  InternedString api_version;
  InternedString kind;
  InternedString name;
  InternedString uid;  // a controller's replicas share it
  bool operator==(const OwnerReference&) const = default;
};

struct PodAffinityTerm {
  LabelSelector selector;     // matchLabelKeys/mismatchLabelKeys already merged in
  bool has_selector = false;  // a term without a labelSelector matches no pods
  std::vector<InternedString> namespaces;
  std::optional<LabelSelector> namespace_selector;  // an empty one selects every namespace
  InternedString topology_key;
  bool operator==(const PodAffinityTerm&) const = default;
};

struct WeightedPodAffinityTerm {
  int32_t weight = 0;
  PodAffinityTerm term;
  bool operator==(const WeightedPodAffinityTerm&) const = default;
};

struct PreferredSchedulingTerm {
  int32_t weight = 0;
  NodeSelectorTerm preference;
  bool operator==(const PreferredSchedulingTerm&) const = default;
};

struct Affinity {
  std::optional<NodeSelector> node_required;
  std::vector<PreferredSchedulingTerm> node_preferred;
  std::vector<PodAffinityTerm> pod_affinity_required;
  std::vector<WeightedPodAffinityTerm> pod_affinity_preferred;
  std::vector<PodAffinityTerm> pod_anti_affinity_required;
  std::vector<WeightedPodAffinityTerm> pod_anti_affinity_preferred;
  bool operator==(const Affinity&) const = default;
};

struct TopologySpreadConstraint {
  int32_t max_skew = 1;
  InternedString topology_key;
  bool do_not_schedule = true;  // whenUnsatisfiable: DoNotSchedule (else ScheduleAnyway)
  LabelSelector selector;       // matchLabelKeys already merged in
  bool has_selector = false;
  std::optional<int32_t> min_domains;
  bool honor_node_affinity = true;  // nodeAffinityPolicy: Honor (default)
  bool honor_node_taints = false;   // nodeTaintsPolicy: Ignore (default)
  bool operator==(const TopologySpreadConstraint&) const = default;
};

struct HostPort {
  int32_t port = 0;
  Protocol protocol = Protocol::kTCP;
  InternedString host_ip;  // empty means 0.0.0.0
  bool operator==(const HostPort&) const = default;
};

struct Pod {
  ObjectMeta meta;
  InternedString node_name;
  InternedString nominated_node;  // status.nominatedNodeName: where a preemption makes room for it
  InternedString scheduler_name;
  std::optional<OwnerReference> controller;  // the ownerReference with controller: true
  std::optional<int64_t> termination_grace_period_seconds;
  std::optional<int64_t> deletion_grace_period_seconds;

  // The effective request: max(sum of containers + sidecars, largest init step) + overhead.
  ResourceList requests;
  Labels node_selector;
  std::shared_ptr<const Affinity> affinity;  // null when the pod has none
  Tolerations tolerations;
  std::vector<TopologySpreadConstraint> topology_spread;
  std::vector<HostPort> host_ports;
  std::vector<InternedString> pvc_claims;

  // The small members last, together, so they share words (a cache holds 150,000 pods).
  int32_t priority = 0;
  PodPhase phase = PodPhase::kPending;
  bool mirror = false;  // kubernetes.io/config.mirror
  bool has_empty_dir = false;
  bool has_host_path = false;
  bool best_effort = false;                              // no cpu or memory request or limit anywhere
  bool ready = false;                                    // condition Ready=True
  ConditionStatus scheduled = ConditionStatus::kAbsent;  // condition PodScheduled
  bool unschedulable = false;                            // PodScheduled=False with reason Unschedulable
  std::optional<bool> safe_to_evict;                     // cluster-autoscaler.kubernetes.io/safe-to-evict
  bool do_not_disrupt = false;                           // karpenter.sh/do-not-disrupt: "true"
  bool do_not_move = false;                              // spotshift.io/do-not-move: "true"

  const std::string& name() const { return meta.name; }
  std::string key() const { return meta.key(); }
  // key() < other.key(), without building either string.
  bool key_less(const Pod& other) const;
  bool terminating() const { return meta.deletion_timestamp.has_value(); }
  bool terminal() const { return phase == PodPhase::kSucceeded || phase == PodPhase::kFailed; }
  bool owned_by(std::string_view kind) const { return controller && controller->kind.view() == kind; }
  // Whether its nodeSelector and required node affinity both let it run on a node with these
  // labels and this name (taints are another matter: model::first_untolerated).
  bool selects_node(const Labels& node_labels, std::string_view node_name) const;

  bool same_content(const Pod& other) const;
  bool operator==(const Pod&) const;
};

// Reads one pod from r, in one pass; r stays in step after a pod that does not decode.
Result<Pod> decode_pod(JsonReader& r);
// The same into `into`, which must be a default-constructed Pod, so a pod goes straight to where
// it is kept (a 440-byte Pod is not moved out of a Result); after an error `into` holds part of it.
Result<void> decode_pod(JsonReader& r, Pod& into);
// A pod's JSON text.
Result<Pod> decode_pod(std::string_view json);

}  // namespace spotshift::model
