#pragma once
// Kubernetes time formats: RFC 3339 Time and MicroTime, and Go duration strings.

#include "core/error.hpp"

#include <chrono>
#include <string>
#include <string_view>

namespace spotshift {

using Time = std::chrono::system_clock::time_point;
using Duration = std::chrono::nanoseconds;

// "2025-01-02T03:04:05Z" (metav1.Time: whole seconds, truncated).
std::string format_time(Time t);
// "2025-01-02T03:04:05.123456Z" (metav1.MicroTime).
std::string format_micro_time(Time t);
// Accepts RFC 3339 with any number of fractional digits and a Z or +hh:mm offset.
Result<Time> parse_time(std::string_view s);

// Go duration syntax as metav1.Duration uses it: "10m", "1h30m", "2.5s", "300ms", "0".
Result<Duration> parse_go_duration(std::string_view s);
// The shortest Go form: 600s -> "10m0s" is what Go prints; we print "10m".
std::string format_go_duration(Duration d);

// kubectl-style age: "45s", "5m10s", "3h", "2d4h" (k8s.io/apimachinery's duration.HumanDuration).
std::string format_age(Duration d);

}  // namespace spotshift
