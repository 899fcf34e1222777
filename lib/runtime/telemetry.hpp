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
                                    "Requests to the API server by client: controller, events or leader-election.",
                                    MetricType::kCounter,
                                    {"client"},
                                    {}};
inline const MetricDef kApiRateLimitWait{"spotshift_api_rate_limit_wait_seconds_total",
                                         "Time requests waited for the client-side rate limit (--kube-api-qps), by client.",
                                         MetricType::kCounter,
                                         {"client"},
                                         {}};
inline const MetricDef kReconciles{"spotshift_reconcile_total", "Reconciles by result.", MetricType::kCounter, {"result"}, {}};
inline const MetricDef kWorkqueueDepth{"spotshift_workqueue_depth", "Policies waiting to be reconciled.", MetricType::kGauge, {}, {}};

}  // namespace spotshift::runtime::telemetry
