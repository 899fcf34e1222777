#pragma once
// The operator's metric families and event reasons, declared once: docs/events-and-metrics.md
// documents each, and a docs test reads these declarations (lib/runtime/telemetry.hpp holds the
// runtime's own families).

#include "runtime/events.hpp"
#include "runtime/metrics.hpp"

namespace spotshift::op::telemetry {

using runtime::EventReason;
using runtime::EventType;
using runtime::MetricDef;
using runtime::MetricType;

// ---- metrics ----------------------------------------------------------------------------------

inline const MetricDef kEvictions{
    "spotshift_evictions_total", "Eviction requests by result.", MetricType::kCounter, {"policy", "result"}, {}};
inline const MetricDef kReplacements{
    "spotshift_replacements_total",
    "Replacements of evicted pods by where the cluster's scheduler put them: planned, other_spot, not_spot, pending, missing.",
    MetricType::kCounter,
    {"policy", "placement"},
    {}};
inline const MetricDef kWebhookAdmissions{"spotshift_webhook_admissions_total",
                                          "Pod creations the steering webhook answered, by result: steered, untouched, error.",
                                          MetricType::kCounter,
                                          {"result"},
                                          {}};
inline const MetricDef kReplacementsNotOnSpot{
    "spotshift_replacements_not_on_spot_total", "Replacement pods that did not land on a spot node.", MetricType::kCounter, {"policy"}, {}};
inline const MetricDef kNodes{"spotshift_nodes",
                              "Nodes per policy and class (on_demand, spot, drainable, undrainable).",
                              MetricType::kGauge,
                              {"policy", "class"},
                              {}};
inline const MetricDef kPlanDuration{"spotshift_plan_duration_seconds",
                                     "Time to build one plan.",
                                     MetricType::kHistogram,
                                     {"policy"},
                                     {0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}};
inline const MetricDef kDrains{"spotshift_drains_total", "Drain attempts by result.", MetricType::kCounter, {"policy", "result"}, {}};
inline const MetricDef kDrainDuration{"spotshift_drain_duration_seconds",
                                      "Time from a drain's start to its end, by result (succeeded, aborted, stale).",
                                      MetricType::kHistogram,
                                      {"policy", "result"},
                                      {5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600}};
inline const MetricDef kDrainInProgress{
    "spotshift_drain_in_progress", "1 while a drain of the policy runs (tainted node, evictions).", MetricType::kGauge, {"policy"}, {}};
inline const MetricDef kUndrainableNodes{"spotshift_undrainable_nodes",
                                         "On-demand nodes not drainable in the last plan, by kind of reason (a node with reasons "
                                         "of two kinds counts under both).",
                                         MetricType::kGauge,
                                         {"policy", "reason"},
                                         {}};
inline const MetricDef kGateBlocked{
    "spotshift_gate_blocked",
    "1 for the gate holding the next drain back (Suspended, DrainDelay, MaxDrainsPerHour, UnschedulablePods, DryRun, "
    "SharedSpotNodes), 0 for the others.",
    MetricType::kGauge,
    {"policy", "gate"},
    {}};
inline const MetricDef kEstimatedHourlySavings{"spotshift_estimated_hourly_savings",
                                               "With spec.pricing: the prices per hour of the drainable on-demand nodes of the "
                                               "last plan, added up (what draining them would save).",
                                               MetricType::kGauge,
                                               {"policy"},
                                               {}};
inline const MetricDef kPolicyValid{"spotshift_policy_valid", "1 when the policy's spec is valid.", MetricType::kGauge, {"policy"}, {}};

// ---- events -----------------------------------------------------------------------------------

inline constexpr EventReason kDrainPlanned{"DrainPlanned", "Plan", EventType::kNormal};
inline constexpr EventReason kWouldDrain{"WouldDrain", "Plan", EventType::kNormal};
inline constexpr EventReason kNodeNotDrainable{"NodeNotDrainable", "Plan", EventType::kNormal};
inline constexpr EventReason kDrainStarted{"DrainStarted", "Drain", EventType::kNormal};
inline constexpr EventReason kDrainSucceeded{"DrainSucceeded", "Drain", EventType::kNormal};
inline constexpr EventReason kDrainSkipped{"DrainSkipped", "Drain", EventType::kNormal};
inline constexpr EventReason kDrainAborted{"DrainAborted", "Drain", EventType::kWarning};
inline constexpr EventReason kNodeHeld{"NodeHeld", "Drain", EventType::kNormal};
inline constexpr EventReason kPodEvicted{"PodEvicted", "Evict", EventType::kNormal};
inline constexpr EventReason kReplacementNotOnSpot{"ReplacementNotOnSpot", "Verify", EventType::kWarning};
inline constexpr EventReason kTaintRemoved{"TaintRemoved", "Untaint", EventType::kNormal};
inline constexpr EventReason kPolicyInvalid{"PolicyInvalid", "Validate", EventType::kWarning};
inline constexpr EventReason kPricingUnavailable{"PricingUnavailable", "Plan", EventType::kWarning};
inline constexpr EventReason kSteeringUnavailable{"SteeringUnavailable", "Drain", EventType::kWarning};

}  // namespace spotshift::op::telemetry
