#pragma once
// A ReschedulePolicy's status, built from what the reconciler knows. Pure: no I/O.
//
// Conditions:
//   Valid     True / False (InvalidSpec): the spec decoded and validated.
//   Ready     True (Planned) once a plan was made; False (InvalidSpec) otherwise.
//   Draining  True (Draining) while a node drains; False (Idle).
//   Blocked   True when a drainable node waits on a gate (drain::kGates); False (NotBlocked)
//             otherwise.
// A condition's lastTransitionTime changes only when its status does.
//
// For `kubectl get rsp`: mode (Suspended, DryRun or Active, from the spec; absent while the spec
// is invalid) and blockedBy (the Blocked condition's reason while it is True). nextWindowStart
// while no disruption window is open.

#include "drain/gate.hpp"
#include "drain/planner.hpp"
#include "drain/policy.hpp"

#include <optional>
#include <string>

namespace spotshift::op {

struct DrainProgress {
  std::string node;
  Time started_at{};
  int evicted = 0;
  int remaining = 0;
};

struct StatusInput {
  std::string name;
  std::string resource_version;  // the precondition for the update
  int64_t generation = 0;
  drain::PolicyStatusView previous;
  Time now{};
  std::optional<std::string> invalid;  // the spec's error
  const drain::Plan* plan = nullptr;   // absent when invalid
  std::optional<DrainProgress> current;
  std::optional<drain::LastDrain> last_drain;
  std::optional<Time> next_drain_after;
  std::optional<Time> next_window_start;  // outside every disruption window: when the next opens
  std::vector<Time> recent_drain_starts;  // within the last hour
  int64_t nodes_drained_total = 0;
  int64_t pods_evicted_total = 0;
  std::optional<drain::Gate> blocked;       // drain::evaluate_gates()
  const drain::PolicySpec* spec = nullptr;  // absent when invalid
};

// Suspended, DryRun or Active: what the policy does now, as the printer column shows it.
std::string_view policy_mode(const drain::PolicySpec& spec);

// The update body: {"apiVersion", "kind", "metadata": {"name", "resourceVersion"}, "status": {...}}.
// Without the plan duration, the text only changes when something a person cares about does.
std::string status_body(const StatusInput& in, bool with_plan_duration);

// How many undrainable nodes the status lists (the plan command lists them all).
inline constexpr size_t kStatusUndrainableLimit = 20;

}  // namespace spotshift::op
