#pragma once
// The metric families of lib/runtime and of the operator's process, declared once:
// docs/events-and-metrics.md documents each, and a docs test reads these declarations.

#include "runtime/metrics.hpp"

namespace spotshift::runtime::telemetry {

inline const MetricDef kLeader{"spotshift_leader", "1 while this instance leads.", MetricType::kGauge, {}, {}};
inline const MetricDef kBuildInfo{"spotshift_build_info",
                                  "A metric with a constant 1 value labelled by the build's version and revision.",
                                  MetricType::kGauge,
                                  {"version", "revision"},
                                  {}};
inline const MetricDef kInternedStrings{"spotshift_interned_strings",
                                        "Distinct strings in the interning pool (label keys and values, namespaces, node and owner names).",
                                        MetricType::kGauge,
                                        {},
                                        {}};
inline const MetricDef kInternedStringBytes{
    "spotshift_interned_string_bytes", "Bytes of the strings in the interning pool.", MetricType::kGauge, {}, {}};
inline const MetricDef kApiRequests{"spotshift_api_requests_total",
                                    "Answers from the API server by client (controller, events or leader-election) and HTTP status "
                                    "code (\"<error>\" when there was none: a connection failure, a timeout); each retry counts.",
                                    MetricType::kCounter,
                                    {"client", "code"},
                                    {}};
inline const MetricDef kApiRateLimitWait{"spotshift_api_rate_limit_wait_seconds_total",
                                         "Time requests waited for the client-side rate limit (--kube-api-qps), by client.",
                                         MetricType::kCounter,
                                         {"client"},
                                         {}};
inline const MetricDef kReconciles{"spotshift_reconcile_total", "Reconciles by result.", MetricType::kCounter, {"result"}, {}};
inline const MetricDef kReconcileDuration{"spotshift_reconcile_duration_seconds",
                                          "Time one reconcile of a policy took (a plan, the gates, a status write).",
                                          MetricType::kHistogram,
                                          {},
                                          {0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}};
inline const MetricDef kWorkqueueDepth{"spotshift_workqueue_depth", "Policies waiting to be reconciled.", MetricType::kGauge, {}, {}};

}  // namespace spotshift::runtime::telemetry
