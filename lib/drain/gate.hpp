#pragma once
// The gates in front of a new drain, and the per-node backoff after a failed one. Pure: times
// come in as arguments, so tests drive them with a fake clock.
//
// - Drain delay: after any drain attempt, success or abort, no new drain starts until
//   nodeDrainDelay has passed. The time is kept in the policy's status (nextDrainAfter), so a
//   restart or a new leader does not reopen the gate early.
// - Drains per hour: with maxDrainsPerHour, no drain starts while that many started within the
//   last hour. The starts are kept in the policy's status (recentDrainStarts), so a restart or a
//   new leader does not reset the count.
// - Disruption windows: with spec.disruptionWindows, no drain starts outside every window (a
//   drain in progress finishes).
// - Unschedulable pods: no drain starts while pods are Pending and unschedulable (any such pod,
//   or only those that could run on one of the policy's spot nodes), since moving more pods
//   onto spot nodes would compete with them.
// - Node backoff: a node whose drain was aborted is left alone for 5 minutes, then 10, 20, ...
//   up to 2 hours, so the next plans try other nodes first. A success clears it.
// - Node hold: an on-demand node that took replacement pods of a drain (meant for spot nodes)
//   is left alone the same way, so that two on-demand nodes do not hand the same pods back and
//   forth. Holds keep counting across successful drains and start over after a quiet period as
//   long as the cap.

#include "drain/drainability.hpp"
#include "drain/policy.hpp"

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace spotshift::drain {

struct GateDecision {
  bool open = true;
  std::string reason;              // why it is closed
  std::optional<Time> reopens_at;  // when known
};

GateDecision drain_delay_gate(const PolicyStatusView& status, Time now);
// When the next drain may start after an attempt that ended at `finished`: nodeDrainDelay later,
// rounded up to the second (the status keeps whole seconds, and the gate must never reopen early).
Time next_drain_after(Time finished, const PolicySpec& spec);

// Closed while `max` drains started within the hour before `now`; reopens an hour after the
// oldest of them.
GateDecision drains_per_hour_gate(const std::vector<Time>& starts, std::optional<int> max, Time now);
// The starts of the last hour before `now`, oldest first, without duplicates, at most the newest
// kMaxDrainsPerHour.
std::vector<Time> starts_within_hour(std::vector<Time> starts, Time now);

// Closed when `windows` is not empty and `now` is in none of them; reopens when the next opens.
GateDecision disruption_window_gate(const std::vector<DisruptionWindow>& windows, Time now);
// Whether `now` is inside the window: the schedule fired within `duration` before it.
bool window_open(const DisruptionWindow& w, Time now);

// Pods that are Pending because no node fits them: unbound, PodScheduled=False/Unschedulable.
bool pending_unschedulable(const model::Pod& pod);
GateDecision unschedulable_pods_gate(const std::vector<std::shared_ptr<const model::Pod>>& pods, GateScope scope, SpotReach& spot_reach);

// The gate that holds a drainable node back, as the policy's Blocked condition shows it.
// Every gate, in the order evaluate_gates() checks them: a Gate's reason is one of these.
inline constexpr std::array<std::string_view, 7> kGates = {"Suspended",         "OutsideWindow", "DrainDelay",     "MaxDrainsPerHour",
                                                           "UnschedulablePods", "DryRun",        "SharedSpotNodes"};

struct Gate {
  std::string reason;  // one of kGates
  std::string message;
  std::optional<Time> reopens_at;  // when known
};

// What the gates are decided from. The unschedulable-pods gate and the shared spot nodes are
// asked for only when the gates before them are open.
struct GateInput {
  const PolicySpec& spec;
  GateDecision drain_delay;                          // drain_delay_gate()
  std::function<GateDecision()> unschedulable_pods;  // unschedulable_pods_gate()
  // Another policy's drain in progress onto spot nodes this plan shares: why this one waits.
  std::function<std::optional<std::string>()> shared_spot_nodes;
  std::string next_node;         // the plan's first drainable node
  GateDecision drains_per_hour;  // drains_per_hour_gate(); open when not given
  GateDecision window;           // disruption_window_gate(); open when not given
};

// The first closed gate, in this order: Suspended, OutsideWindow, DrainDelay, MaxDrainsPerHour,
// UnschedulablePods, DryRun, SharedSpotNodes; nothing when a drain may start now. Suspend comes first (the user's word
// outranks timing), dry run after the gates a live drain would wait on, so a dry-run policy shows
// what would hold a live one back.
std::optional<Gate> evaluate_gates(const GateInput& in);

class NodeBackoff {
 public:
  explicit NodeBackoff(Duration base = std::chrono::minutes(5), Duration cap = std::chrono::hours(2)) : base_(base), cap_(cap) {}
  // An aborted drain of `node` at `now`: returns when the node may be tried again.
  Time failed(const std::string& node, Time now);
  // `node` took replacement pods of a drain at `now`; `why` is the plan's reason while it lasts.
  // Returns when the node may be drained again.
  Time held(const std::string& node, Time now, std::string why);
  // A drain of `node` succeeded: its aborted drains are forgotten (its holds are not).
  void succeeded(const std::string& node);
  // Nodes still backing off at `now`, with a reason for the plan.
  std::map<std::string, std::string> active(Time now) const;
  std::optional<Time> until(const std::string& node) const;

 private:
  struct Entry {
    int failures = 0;
    int holds = 0;
    Time until{};
    Time last_hold{};
    std::string why;  // set by the hold that set `until`, empty after an aborted drain
  };
  Duration wait_for(int count) const;
  Duration base_, cap_;
  std::map<std::string, Entry> entries_;
};

}  // namespace spotshift::drain
