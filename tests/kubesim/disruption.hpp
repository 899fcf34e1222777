#pragma once
// PodDisruptionBudget status maths, as the disruption controller computes it
// (pkg/controller/disruption in Kubernetes; tests/fidelity compares the two). Shared by the
// simulated disruption controller and the eviction subresource.

#include "cluster.hpp"

#include <string>
#include <vector>

namespace spotshift::kubesim {

struct PdbStatus {
  int32_t expected_pods = 0;
  int32_t desired_healthy = 0;
  int32_t current_healthy = 0;
  int32_t disruptions_allowed = 0;
  std::string reason;  // SufficientPods, InsufficientPods or SyncFailed
  std::string message;
  // disruptedPods entries still in force: name -> timestamp.
  std::vector<std::pair<std::string, std::string>> disrupted_pods;
};

// The pods a budget selects: same namespace, non-empty selector that matches.
std::vector<ObjectPtr> pods_selected_by(const Cluster& cluster, const Value& pdb);
bool pod_ready(const Value& pod);
PdbStatus compute_pdb_status(const Cluster& cluster, const Value& pdb);

}  // namespace spotshift::kubesim
