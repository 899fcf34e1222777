#pragma once
// A ReschedulePolicy (spotshift.io/v1alpha1, cluster-scoped): which nodes are on-demand and
// which are spot, which pods may move, the drain timings, and the scheduling profile. Defaults
// follow k8s-spot-rescheduler's flags wherever it had one (docs/policy-reference.md maps them).
//
// Decoding never fails because of the spec: a policy with a bad spec is kept, with the error, so
// the operator can report it in the policy's status while other policies keep running.

#include "core/cron.hpp"
#include "core/time.hpp"
#include "core/tz.hpp"
#include "drain/steering.hpp"
#include "model/meta.hpp"
#include "model/node.hpp"
#include "model/pod.hpp"
#include "model/selector.hpp"
#include "sched/framework.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace spotshift::drain {

inline constexpr std::string_view kGroup = "spotshift.io";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kKind = "ReschedulePolicy";
inline constexpr std::string_view kPlural = "reschedulepolicies";
// The taint put on a node while it drains; its value is the policy's name.
inline constexpr std::string_view kDrainingTaint = "spotshift.io/draining";

// What to do with a pod of a kind that some users want moved and others not.
enum class Handling : uint8_t { kMove, kBlock };
std::string_view to_string(Handling h);

// Which Pending, unschedulable pods hold back new drains.
enum class GateScope : uint8_t {
  kAny,       // any such pod in the cluster
  kSpotOnly,  // only pods that could run on one of the policy's spot nodes
  kDisabled,  // none
};
std::string_view to_string(GateScope s);

// The order in which on-demand nodes are considered (each sees the placements of those before).
enum class DrainOrder : uint8_t {
  // ScarceResources when a pod on one of the policy's on-demand nodes asks for an extended
  // resource (GPUs, for instance), RequestedCPU otherwise: resolved by each plan
  // (effective_drain_order in planner.cpp).
  kAuto,
  kRequestedCpu,     // least requested CPU first (k8s-spot-rescheduler's order)
  kScarceResources,  // least demand first, each resource weighted by how scarce it is on the spot nodes
  // Highest hourly price per pod to move first (spec.pricing); unpriced nodes after, least
  // requested CPU first.
  kHighestSavingsPerEviction,
};
std::string_view to_string(DrainOrder o);

// The largest maxDrainsPerHour: the status keeps the starts of the last hour, at most this many
// (the newest), which is all the gate needs.
inline constexpr int kMaxDrainsPerHour = 60;
// The largest minOnDemandNodes the CRD accepts.
inline constexpr int kMaxOnDemandFloor = 100000;

// Prices per hour by instance type (node.kubernetes.io/instance-type), from a ConfigMap's data.
using PriceTable = std::map<std::string, double, std::less<>>;
// A ConfigMap's data as a price table; each key whose value is not a price goes to `bad`.
PriceTable price_table(const std::map<std::string, std::string>& data, std::vector<std::string>* bad = nullptr);
// What to say of a ConfigMap's keys whose values are not prices (price_table's `bad`); empty
// when there are none.
std::string bad_prices_text(std::string_view config_map, const std::vector<std::string>& bad);
// A ConfigMap's data (its string values), from the object's JSON text.
Result<std::map<std::string, std::string>> config_map_data(std::string_view json);
// A price per hour written as a decimal number, from 0 to 1e9; nothing otherwise.
std::optional<double> parse_price(std::string_view text);

// Where an on-demand node's price per hour is read: a label or an annotation of the node whose
// value is a decimal number, or a ConfigMap whose data maps instance types to prices. Exactly
// one is set.
struct Pricing {
  std::string label;
  std::string annotation;
  std::string config_map_namespace, config_map_name;
  // The ConfigMap's prices, as the operator (or `spotshift plan`) read them; none: not read.
  std::shared_ptr<const PriceTable> table;
  bool from_config_map() const { return !config_map_name.empty(); }
  // The node's price, or nullopt when it has none (or not a number).
  std::optional<double> price(const model::Node& node) const;
  bool operator==(const Pricing& o) const {
    return label == o.label && annotation == o.annotation && config_map_namespace == o.config_map_namespace &&
           config_map_name == o.config_map_name;
  }
};

// A time drains may start in: from each time the schedule fires, for the duration. Times are
// wall-clock times in the time zone (an IANA name, from the system's tz database).
struct DisruptionWindow {
  CronSchedule schedule;
  Duration duration{};
  std::string time_zone = "UTC";
  std::shared_ptr<const tz::Zone> zone;  // time_zone's
  bool operator==(const DisruptionWindow& o) const { return schedule == o.schedule && duration == o.duration && time_zone == o.time_zone; }
};
// The most windows a policy may list.
inline constexpr size_t kMaxDisruptionWindows = 20;

struct PolicySpec {
  model::LabelSelector on_demand_selector;                 // default: node-role.kubernetes.io/worker exists
  model::LabelSelector spot_selector;                      // default: node-role.kubernetes.io/spot-worker exists
  std::optional<model::LabelSelector> pod_selector;        // absent: every pod may move
  std::optional<model::LabelSelector> namespace_selector;  // absent: every namespace
  Duration housekeeping_interval = std::chrono::seconds(10);
  Duration node_drain_delay = std::chrono::minutes(10);
  Duration pod_eviction_timeout = std::chrono::minutes(2);
  Duration max_graceful_termination = std::chrono::minutes(2);  // at least 1s: 0 would force-delete
  // Waiting for an evicted pod to be gone: its grace period plus this (the kill after the grace
  // period, the kubelet's and the API server's latency), as cluster-autoscaler's 30 s headroom.
  Duration termination_headroom = std::chrono::seconds(30);
  // How long a drained node keeps its taint once every replacement is bound (0: untainted then).
  Duration drained_node_taint_ttl = Duration::zero();
  bool delete_non_replicated_pods = false;
  // Move pods of Jobs whose podFailurePolicy does not ignore disruptions (an eviction counts
  // against the Job's backoffLimit).
  bool evict_job_pods = false;
  Handling empty_dir = Handling::kMove;
  Handling host_path = Handling::kBlock;
  Handling kube_system_without_pdb = Handling::kBlock;
  GateScope unschedulable_pods_gate = GateScope::kAny;
  DrainOrder drain_order = DrainOrder::kAuto;
  int search_iterations = 0;               // steps of the plan search (search.hpp); 0: no search
  std::optional<Pricing> pricing;          // absent: savings are not estimated
  std::optional<int> max_drains_per_hour;  // absent: no limit beyond nodeDrainDelay
  // After each eviction, wait until the pod's replacement is Ready (not only bound) before going
  // on, for up to replacement_ready_timeout; then the drain is aborted.
  bool wait_for_replacement_ready = false;
  Duration replacement_ready_timeout = std::chrono::minutes(5);
  // When not empty, drains start only inside one of these (a drain in progress finishes).
  std::vector<DisruptionWindow> disruption_windows;
  // On-demand nodes to keep running pods: a drain that would leave fewer is not planned.
  int min_on_demand_nodes = 0;
  // Pods with a lower priority (overprovisioning placeholders) are expendable: their room on
  // spot nodes counts as free, since the scheduler preempts them, and they are never moved.
  int32_t expendable_pods_priority_cutoff = -10;
  // Preferred: the operator's admission webhook gives each evicted pod's replacement a preferred
  // node affinity for the spot node the plan chose (steering.hpp).
  Steering steering = Steering::kOff;
  bool dry_run = false;
  bool suspend = false;
  sched::ProfileConfig profile = sched::default_profile();

  bool operator==(const PolicySpec&) const = default;
};

// Whether the pod is expendable under the policy: priority below expendablePodsPriorityCutoff.
inline bool expendable(const model::Pod& pod, const PolicySpec& spec) { return pod.priority < spec.expendable_pods_priority_cutoff; }

// The spec's defaults, as the CRD declares them.
PolicySpec default_policy_spec();
// Decodes and validates a spec object. Errors name the field ("spec.nodeDrainDelay: ...").
// Unknown fields are errors too: the API server prunes them, but a policy file given to
// `spotshift plan` is not pruned, and a misspelt field silently ignored is a surprise.
// json is the spec object's text.
Result<PolicySpec> decode_policy_spec(std::string_view json);

// What the operator reads back from its own status: the gate and the drain in progress.
struct DrainInProgress {
  std::string node;
  Time started_at{};
  bool operator==(const DrainInProgress&) const = default;
};
struct LastDrain {
  std::string node;
  std::string result;  // Succeeded or Aborted
  std::string reason;
  Time finished_at{};
  bool operator==(const LastDrain&) const = default;
};
struct StatusCondition {
  std::string type;
  std::string status;  // True, False or Unknown
  std::string reason;
  std::string message;
  Time last_transition{};
  bool operator==(const StatusCondition&) const = default;
};
struct PolicyStatusView {
  int64_t observed_generation = 0;
  std::vector<StatusCondition> conditions;
  std::optional<LastDrain> last_drain;
  std::optional<Time> next_drain_after;
  std::optional<DrainInProgress> current_drain;
  std::vector<Time> recent_drain_starts;  // drains started within the last hour (maxDrainsPerHour)
  int64_t nodes_drained_total = 0;
  int64_t pods_evicted_total = 0;
  bool operator==(const PolicyStatusView&) const = default;
};

struct ReschedulePolicy {
  model::ObjectMeta meta;
  std::optional<PolicySpec> spec;  // absent when the spec is invalid
  std::optional<Error> spec_error;
  PolicyStatusView status;

  const std::string& name() const { return meta.name; }
  // Equal in what a reconcile reads, status included (the status holds the drain gate).
  bool same_content(const ReschedulePolicy& other) const;
};

// Decodes a whole ReschedulePolicy object, the one r is at or the one of json; fails only when
// the metadata is unusable (or the text is not JSON).
Result<ReschedulePolicy> decode_policy(model::JsonReader& r);
Result<ReschedulePolicy> decode_policy(std::string_view json);

}  // namespace spotshift::drain
