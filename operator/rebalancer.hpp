#pragma once
// SpotRebalancer: the reconciler behind every ReschedulePolicy. One key per policy (its name).
//
// A reconcile reads the caches, validates the policy (an invalid one gets Valid=False and a
// Warning event; other policies keep running), builds the plan, and when a node is drainable
// and every gate is open (drain::evaluate_gates) starts a drain task, then writes the status with
// a resourceVersion-guarded update. dryRun plans and reports (WouldDrain) without touching
// anything; suspend starts no new drains. Changes to nodes, pods, PodDisruptionBudgets and
// namespaces enqueue every policy at once; housekeepingInterval is only the periodic resync.
//
// A drain is a task the rebalancer owns (runtime::Tasks, one per policy), not a long reconcile:
// the reconcile that starts it saves the drain's start in the status first and returns; while it
// runs, reconciles only record its progress (each eviction enqueues the policy) and stop it when
// the policy is deleted; its end records the outcome in the policy's state and enqueues the
// policy, whose next reconcile plans again and writes the status. The state lives in a shared
// owner, so neither a reconcile nor a task holds a reference into the map across a co_await.
//
// Crash safety: recover(), run once leadership is won, removes every spotshift.io/draining
// taint (no drain is in progress in a process that just started leading), records the
// interrupted drains as aborted and keeps the drain-delay gate closed. A policy with no drain
// task has any taint of its own removed at its next reconcile.

#include "drain/evictor.hpp"
#include "drain/gate.hpp"
#include "drain/planner.hpp"
#include "resources.hpp"
#include "runtime/controller.hpp"
#include "runtime/events.hpp"
#include "runtime/metrics.hpp"
#include "runtime/store.hpp"
#include "runtime/tasks.hpp"
#include "status.hpp"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace spotshift::op {

namespace asio = boost::asio;

struct RebalancerStores {
  runtime::Store<model::Node>& nodes;
  runtime::Store<model::Pod>& pods;
  runtime::Store<model::PodDisruptionBudget>& pdbs;
  runtime::Store<drain::ReschedulePolicy>& policies;
  runtime::Store<NamespaceInfo>& namespaces;
};

struct RebalancerOptions {
  Duration poll_interval = std::chrono::seconds(1);         // checking that evicted pods are gone
  Duration replacement_timeout = std::chrono::seconds(30);  // waiting for replacements to schedule
  Duration status_refresh = std::chrono::seconds(60);       // rewrite an unchanged status this often
  size_t node_events_per_reconcile = 20;                    // NodeNotDrainable events per plan, at most
  // The most of one CPU core planning may take, in percent: after a plan that took d, the next
  // one waits until d * (100 / percent - 1) has passed since it ended (100, or 0 and below: no
  // wait; `spotshift run` accepts 1 to 100).
  int max_planning_cpu_percent = 50;
  // The node labels zonal volumes require (VolumeZone); unset when volumes are not watched.
  std::function<sched::VolumeRequirements()> volumes;
  // The pods' controllers as the caches have them (drainability rule 7); unset: not watched.
  drain::OwnerLookup owners;
  // Puts a policy back on the work queue: a drain task's progress and its end.
  std::function<void(const std::string& policy)> enqueue;
  // The steering webhook's book (spec.steering Preferred); null when the webhook is not served.
  drain::SteeringBook* steering = nullptr;
};

class SpotRebalancer final : public runtime::Reconciler {
 public:
  SpotRebalancer(std::shared_ptr<kube::Client> client, runtime::Timers& timers, RebalancerStores stores, runtime::EventRecorder& events,
                 runtime::Metrics& metrics, RebalancerOptions options = {});
  ~SpotRebalancer() override;

  asio::awaitable<Result<runtime::Action>> reconcile(const std::string& key) override;

  // Crash safety, once leadership is won (see above).
  asio::awaitable<void> recover();
  // Asks every drain task to stop at its next step and remove its taint (shutdown, lost lease).
  void stop_all();
  // The drain tasks, for the manager to wait for and cancel.
  runtime::Tasks& tasks() { return tasks_; }
  // Every policy's key, for enqueueing after a cluster change. Node, pod and budget events ask
  // for it every time, so the list is kept until the policy store changes (walking the store's
  // shards per event showed in profiles of a 30,000-pod initial list).
  const std::vector<std::string>& policy_keys() const {
    if (policy_keys_version_ != stores_.policies.version()) {
      policy_keys_ = stores_.policies.keys();
      policy_keys_version_ = stores_.policies.version();
    }
    return policy_keys_;
  }

 private:
  struct PolicyState;
  class Observer;

  drain::PlanInput plan_input(const drain::PolicySpec& spec, const std::string& policy) const;
  // The policy's spec with the prices of its spec.pricing.configMap, read at most once per
  // housekeepingInterval. A ConfigMap that is not there prices no node; a failed read keeps the
  // prices read before; either says so once in a PricingUnavailable event.
  asio::awaitable<drain::PolicySpec> with_prices(const drain::ReschedulePolicy& policy, PolicyState& st);
  // How long the policy's next plan must still wait (RebalancerOptions::max_planning_cpu_percent).
  Duration plan_cooldown(const PolicyState& st, Time now) const;
  std::map<std::string, drain::Exclusion> conflicts(const drain::PolicySpec& spec, const std::string& policy) const;
  asio::awaitable<Result<void>> write_status(const drain::ReschedulePolicy& policy, PolicyState& state, StatusInput in);
  // Another policy's drain in progress whose spot nodes (as its last plan saw them) overlap
  // this plan's: why this policy must wait, or nothing.
  std::optional<std::string> drain_sharing_spot_nodes(const std::string& policy, const drain::Plan& plan) const;
  asio::awaitable<Result<runtime::Action>> reconcile_invalid(const drain::ReschedulePolicy& policy, PolicyState& state);
  // While the policy's drain task runs: stop it if the policy is gone, record its progress.
  asio::awaitable<Result<runtime::Action>> reconcile_draining(const std::string& key, std::shared_ptr<const drain::ReschedulePolicy> policy,
                                                              PolicyState& state);
  void hold_nodes_that_took_replacements(const drain::ReschedulePolicy& policy, const drain::PolicySpec& spec, PolicyState& st,
                                         const drain::DrainReport& report);
  // Saves the drain's start (and the gate it closes) in the policy's status, then starts the
  // drain task. Fails, touching nothing, when that status write fails.
  asio::awaitable<Result<void>> start_drain(std::shared_ptr<const drain::ReschedulePolicy> policy, std::shared_ptr<PolicyState> state,
                                            const drain::NodePlan& node_plan);
  // The task: runs the evictor on the node, then records the outcome in the state.
  asio::awaitable<void> drain_task(std::shared_ptr<const drain::ReschedulePolicy> policy, drain::PolicySpec spec,
                                   std::shared_ptr<PolicyState> state, drain::NodePlan node_plan, std::optional<Time> gate_before);
  void record_outcome(const drain::ReschedulePolicy& policy, const drain::PolicySpec& spec, PolicyState& st,
                      const drain::DrainReport& report, std::optional<Time> gate_before);
  asio::awaitable<void> clean_stale_taints(const std::string& policy);
  void set_gate_metrics(const std::string& policy, const std::optional<drain::Gate>& blocked);
  void report_undrainable(const drain::ReschedulePolicy& policy, PolicyState& state, const drain::Plan& plan);
  void update_metrics(const std::string& policy, const drain::Plan& plan);
  runtime::ObjectReference policy_ref(const drain::ReschedulePolicy& p) const;
  runtime::ObjectReference node_ref(const std::string& node) const;
  std::shared_ptr<PolicyState> state(const std::string& policy);

  std::shared_ptr<kube::Client> client_;
  runtime::Timers& timers_;
  RebalancerStores stores_;
  runtime::EventRecorder& events_;
  runtime::Metrics& metrics_;
  RebalancerOptions options_;
  std::map<std::string, std::shared_ptr<PolicyState>> states_;
  // spec.pricing.configMap's prices, by "namespace/name".
  struct PriceCache {
    Time read{};
    std::shared_ptr<const drain::PriceTable> table;
    std::string problem;  // why some or all prices are missing
  };
  std::map<std::string, PriceCache> prices_;
  runtime::Tasks tasks_;
  mutable std::vector<std::string> policy_keys_;
  mutable uint64_t policy_keys_version_ = UINT64_MAX;  // the store's version when policy_keys_ was read
  // The last plan's cluster snapshot, for the next plan of any policy (it depends on the nodes,
  // pods and volumes only): a node change alone plans without touching the pods.
  mutable sched::SnapshotCache snapshots_;
};

}  // namespace spotshift::op
