#pragma once
// A Plan for people (a table) and for programs (one JSON object):
//
//   {"drainableNodes": [{"node", "requestedCPU", "moves": [{"namespace", "pod", "targetNode",
//                        "budgets"?, "warning"?}], "staying": [...]}],
//    "undrainableNodes": [{"node", "reasons": [...]}],
//    "spotNodes": [...],
//    "summary": {"onDemandNodes", "spotNodes", "drainableNodes", "undrainableNodes",
//                "podsToMove", "planMillis"}}

#include "drain/planner.hpp"

#include <string>

namespace spotshift::drain {

std::string plan_to_table(const Plan& plan);
std::string plan_to_json(const Plan& plan);
// "1.5" for 1500 millicores.
std::string format_cpu(int64_t milli);

}  // namespace spotshift::drain
