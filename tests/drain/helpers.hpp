#pragma once
// Test helpers for lib/drain: the scheduling builders plus PodDisruptionBudgets, policies and
// plan inputs.

#include "drain/planner.hpp"
#include "drain/policy.hpp"
#include "model/json.hpp"
#include "sched/builders.hpp"

#include <fmt/format.h>

#include <string>

namespace spotshift::drain::testing {

using sched::testing::make_node;
using sched::testing::make_pod;

// A budget with its status as the disruption controller would have written it.
inline PdbPtr make_pdb(std::string name, std::string ns, std::string app, int disruptions_allowed, int64_t generation = 1,
                       int64_t observed = 1, int healthy = 3, int desired = 2) {
  std::string json = fmt::format(
      R"({{"metadata":{{"name":"{}","namespace":"{}","generation":{}}},"spec":{{"minAvailable":{},"selector":{{"matchLabels":{{"app":"{}"}}}}}},
         "status":{{"observedGeneration":{},"disruptionsAllowed":{},"currentHealthy":{},"desiredHealthy":{},"expectedPods":{}}}}})",
      name, ns, generation, desired, app, observed, disruptions_allowed, healthy, desired, healthy);
  return std::make_shared<const model::PodDisruptionBudget>(model::decode_pdb(std::string_view(json)).value());
}

inline Result<PolicySpec> spec_from(const std::string& json) { return decode_policy_spec(json); }

// Default selectors: on-demand nodes carry node-role.kubernetes.io/worker, spot nodes
// node-role.kubernetes.io/spot-worker.
inline sched::testing::NodeBuilder on_demand(std::string name) {
  return make_node(std::move(name)).label("node-role.kubernetes.io/worker", "");
}
inline sched::testing::NodeBuilder spot(std::string name) {
  return make_node(std::move(name)).label("node-role.kubernetes.io/spot-worker", "");
}
// A replicated pod (owned by a ReplicaSet named after its app label).
inline sched::testing::PodBuilder replica(std::string name, std::string app = "web") {
  return make_pod(std::move(name)).label("app", app).owner("ReplicaSet", app + "-rs");
}

}  // namespace spotshift::drain::testing
