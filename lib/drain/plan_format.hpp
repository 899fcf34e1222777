#pragma once
// A Plan for people (a table) and for programs (one JSON object):
//
//   {"drainableNodes": [{"node", "requestedCPU", "hourlySaving"?, "places"?, "moves": [{"namespace", "pod",
//                        "targetNode", "budgets"?, "warning"?}], "staying": [...]}],
//    "undrainableNodes": [{"node", "reasons": [...]}],
//    "spotNodes": [...],
//    "summary": {"onDemandNodes", "spotNodes", "drainableNodes", "undrainableNodes",
//                "podsToMove", "searchedNodes", "hourlySavings"?, "unpricedNodes"?, "planMillis"}}
//
// The savings appear with spec.pricing only (hourlySaving for a node that has a price).

#include "drain/planner.hpp"

#include <string>

namespace spotshift::drain {

std::string plan_to_table(const Plan& plan);
std::string plan_to_json(const Plan& plan);
// "1.5" for 1500 millicores.
std::string format_cpu(int64_t milli);
// A price per hour as people read it: "3.06", "12.5", "0.015".
std::string format_price(double price);

}  // namespace spotshift::drain
