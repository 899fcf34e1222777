#pragma once
// The evictor: the only code that disrupts workloads. It executes one NodePlan:
//
//  1. Re-check the plan against the live cache (the caller's `recheck`), and give up cleanly,
//     touching nothing, when the node is no longer drainable.
//  2. Taint the node spotshift.io/draining=<policy>:NoSchedule (merge patch of the full taint
//     list with a resourceVersion precondition, retried on 409) so evicted pods cannot come back,
//     then re-check once more (a pod may have landed meanwhile).
//  3. Evict the pods one at a time through the policy/v1 Eviction API, budget-covered pods
//     first, each with gracePeriodSeconds = min(its own, maxGracefulTermination), at least 1 (0
//     would be a force deletion). A 429 (budget
//     refusal or throttling) and a 5xx are retried with backoff, honouring Retry-After, until
//     podEvictionTimeout; a 404 means already gone; an eviction the API refuses for good (403, a
//     pod under two budgets) stops the drain. Before each request, the caller's `still_movable`
//     checks the pod against the policy as the cache has it now (an annotation added mid-drain
//     stops the drain). A pod already gone (404, or a new UID: 409) is reported as such, not
//     as evicted. After each eviction, wait until the pod is gone (404, or a new UID) for up to
//     its grace period plus terminationHeadroom before the next one, and re-check the plan:
//     when the rest of the node no longer fits on spot nodes (spot capacity went away), stop.
//     With waitForReplacementReady, also wait (after every eviction, the node's last included)
//     until the evicted pod's controller has as many new Ready pods as it lost to this drain, for
//     up to replacementReadyTimeout; then stop: a workload without slack is not disrupted twice.
//  4. On any failure, or when told to stop: evict nothing more, remove the taint, and report
//     why. On success: wait until every evicted pod's replacement is bound (up to the
//     replacement timeout) with the node still tainted, so none lands back on it, keep the taint
//     drainedNodeTaintTTL longer if asked, then remove it (the node stays schedulable; the
//     cluster autoscaler removes it once empty). Replacements not on a spot node are reported.
//     They are looked for in the caller's pod store (the informer's, kept current by its
//     watch), polled, never by listing pods again.
//
// Crash safety: remove_stale_taints() removes the policy's taint from nodes with no drain in
// progress in this process; the operator calls it once it holds leadership, and for a policy
// with no drain task at every reconcile.

#include "drain/planner.hpp"
#include "drain/steering.hpp"
#include "kube/client.hpp"
#include "runtime/store.hpp"
#include "runtime/timers.hpp"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace spotshift::drain {

namespace asio = boost::asio;

struct EvictorOptions {
  std::string policy;  // the taint's value
  Duration pod_eviction_timeout = std::chrono::minutes(2);
  Duration max_graceful_termination = std::chrono::minutes(2);  // never below 1 s: 0 is force deletion
  Duration termination_headroom = std::chrono::seconds(30);     // beyond the grace period, waiting for a pod to go
  Duration drained_node_taint_ttl = Duration::zero();           // the taint kept once every replacement is bound
  Duration poll_interval = std::chrono::seconds(1);  // the longest wait between checks that a pod is gone (from 100 ms, doubling)
  Duration retry_base = std::chrono::seconds(1);     // 429/5xx without Retry-After: 1s, 2s, 4s ...
  Duration retry_cap = std::chrono::seconds(10);
  Duration replacement_timeout = std::chrono::seconds(30);  // waiting for replacements to be scheduled
  bool wait_for_replacement_ready = false;                  // after each eviction, its replacement Ready
  Duration replacement_ready_timeout = std::chrono::minutes(5);
  int taint_attempts = 8;  // 409 conflicts and transient errors
};

EvictorOptions evictor_options(const std::string& policy, const PolicySpec& spec);

enum class DrainOutcome : uint8_t {
  kSucceeded,
  kAborted,  // stopped part-way (or before evicting anything) and cleaned up
  kStale,    // the plan no longer held; nothing was touched
};
std::string_view to_string(DrainOutcome o);

struct DrainReport {
  std::string node;
  DrainOutcome outcome = DrainOutcome::kAborted;
  std::string reason;                     // why it aborted or went stale
  std::vector<std::string> evicted;       // pod keys, in order
  std::vector<std::string> already_gone;  // pod keys the Eviction API no longer found (404, or a new UID: 409)
  int remaining = 0;                      // pods of the plan not evicted
  // The pods of the latest plan before the evictions (re-checked once the node is tainted, when
  // the drain got that far): evicted, already gone and remaining add up to it.
  int planned = 0;
  std::vector<std::string> replacements_not_on_spot;  // one sentence each
  // The nodes that are not spot nodes where replacements were scheduled, with those pods' keys.
  std::map<std::string, std::vector<std::string>> landed_off_spot;
  // Where the replacements of the evicted pods went, by placement: "planned" (the spot node the
  // plan named for a pod of the same controller), "other_spot", "not_spot", "pending" (still
  // unbound at the replacement timeout) or "missing" (none appeared). What the cluster's
  // scheduler did with the plan's prediction.
  std::map<std::string, int> replacements;
  bool taint_removed = true;  // false if the taint could not be removed (retried later)
  Time started{}, finished{};
};

// Hooks for events, status and metrics, per pod (the drain's start and end are the caller's: it
// awaits drain() and reads its DrainReport). All optional.
class DrainObserver {
 public:
  virtual ~DrainObserver() = default;
  virtual void pod_evicted(const NodePlan&, const PodMove&, int /*evicted_so_far*/) {}
  virtual void eviction_refused(const PodMove&, const Error&) {}
  // The pod was gone before its eviction (404, or a new pod of the same name: 409): nothing evicted.
  virtual void pod_already_gone(const PodMove&) {}
  virtual void replacement_not_on_spot(const PodMove&, const std::string& /*message*/) {}
  // Once per evicted pod of a controller, after the drain: where its replacement went (see
  // DrainReport::replacements).
  virtual void replacement_placed(const PodMove&, std::string_view /*placement*/) {}
};

class Evictor {
 public:
  // The current plan for the node from the live cache, or an error saying why it no longer holds.
  using Recheck = std::function<Result<NodePlan>()>;
  using IsSpot = std::function<bool(std::string_view node)>;
  // Whether the policy still lets this pod move, from the live cache (annotations and selectors
  // can change mid-drain); an error, the reason, stops the drain before the pod is evicted.
  using StillMovable = std::function<Result<void>(const model::Pod& planned)>;
  using PodStore = runtime::Store<model::Pod>;

  // `pods`: the caller's pod cache, kept current by a watch (an informer's store); it must outlive
  // the evictor.
  Evictor(std::shared_ptr<kube::Client> client, runtime::Timers& timers, EvictorOptions options, const PodStore& pods);

  asio::awaitable<DrainReport> drain(NodePlan plan, Recheck recheck, IsSpot is_spot, DrainObserver* observer,
                                     StillMovable still_movable = {});

  // Asks a running drain to stop at the next step (shutdown, lost leadership, the policy deleted):
  // it evicts nothing more and removes its taint. Wakes its waits. `why` goes into the reason.
  void stop(std::string why = "shutdown or lost leadership");
  bool draining() const { return draining_; }
  // spec.steering Preferred: just before each eviction, the spot node the latest plan chose for
  // the pod goes into `book` for the admission webhook (withdrawn when the eviction does not
  // happen; the drain's unused steers go when it ends). Null: no steering.
  void set_steering(SteeringBook* book) { steering_ = book; }

  // set_taint() below with this evictor's options, giving up adding once stopped.
  asio::awaitable<Result<bool>> set_taint(std::string node, bool present);

 private:
  // True when the pod was evicted, false when it was already gone.
  asio::awaitable<Result<bool>> evict_one(const PodMove& move, DrainObserver* observer);
  asio::awaitable<Result<void>> wait_gone(const PodMove& move);
  int64_t grace_seconds(const model::Pod& pod) const;
  asio::awaitable<void> check_replacements(const NodePlan& plan, const std::vector<PodMove>& evicted,
                                           const std::map<std::string, std::set<std::string>>& known_uids, const IsSpot& is_spot,
                                           DrainObserver* observer, DrainReport& report);
  std::map<std::string, std::set<std::string>> controller_pod_uids(const std::vector<PodMove>& moves) const;
  // The pods of the evicted pods' controllers that were not there when the drain began (not
  // terminating), by controller uid: their replacements, from the pod store.
  std::map<std::string, std::vector<PodPtr>> replacements(const std::vector<PodMove>& evicted,
                                                          const std::map<std::string, std::set<std::string>>& known_uids) const;
  // Holds the next eviction while a replacement of an evicted pod is Pending (it will take spot
  // room the rest of the node needs); fails after the replacement timeout.
  asio::awaitable<Result<void>> wait_pending_replacements(const std::vector<PodMove>& evicted,
                                                          const std::map<std::string, std::set<std::string>>& known_uids);
  // With wait_for_replacement_ready: holds until the controller of `move` has as many new Ready
  // pods as this drain evicted of it; fails after replacement_ready_timeout.
  asio::awaitable<Result<void>> wait_ready_replacement(const PodMove& move, const std::vector<PodMove>& evicted,
                                                       const std::map<std::string, std::set<std::string>>& known_uids);
  void steer(const std::string& node, const PodMove& move, const std::map<std::string, std::string, std::less<>>& targets);
  asio::awaitable<bool> pause(Duration d);
  Error stopped() const;  // why a stopped drain ended
  asio::awaitable<void> untaint(DrainReport& report);

  std::shared_ptr<kube::Client> client_;
  runtime::Timers& timers_;
  EvictorOptions options_;
  const PodStore& pods_;
  runtime::Signal stop_signal_;
  bool stopping_ = false;
  std::string stop_reason_;
  StillMovable still_movable_;  // of the drain running
  bool draining_ = false;
  SteeringBook* steering_ = nullptr;
};

// Nodes carrying the draining taint of `policy` (value == policy name).
bool has_draining_taint(const model::Node& node, std::string_view policy);

// Adds or removes the draining taint of options.policy on `node` (merge patch of the full taint
// list with a resourceVersion precondition; 409 and transient errors retried up to
// options.taint_attempts). Returns whether the node changed; a node that is gone changes nothing.
// Adding gives up between attempts once *stopping is true; removing never does. A node carrying
// another policy's taint is not tainted (an error).
asio::awaitable<Result<bool>> set_taint(kube::Client& client, runtime::Timers& timers, const EvictorOptions& options, std::string node,
                                        bool present, const bool* stopping = nullptr);

struct TaintCleanup {
  std::vector<std::string> removed;                   // nodes whose taint was removed
  std::vector<std::pair<std::string, Error>> failed;  // retried by the caller later
};
// Crash safety: removes options.policy's draining taint from each of `nodes` that carries it. The
// caller passes only nodes no drain of this process holds (the reconciler: when the policy has
// no drain task; at start-up: every tainted node).
asio::awaitable<TaintCleanup> remove_stale_taints(kube::Client& client, runtime::Timers& timers, const EvictorOptions& options,
                                                  std::vector<std::string> nodes);

}  // namespace spotshift::drain
