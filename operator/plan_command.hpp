#pragma once
// `spotshift plan`: the operator's planner, offline, on a snapshot of a cluster (the output of
// `kubectl get nodes,pods,pdb -A -o json`, optionally with namespaces, PVCs and PVs, ReplicaSets,
// StatefulSets and Jobs) and a
// ReschedulePolicy file. No cluster, no I/O beyond reading the two files.

#include "drain/planner.hpp"

#include <iosfwd>
#include <string>
#include <vector>

namespace spotshift::op {

struct Snapshot {
  drain::PlanInput input;
  std::vector<std::string> warnings;  // objects skipped, with the reason
};

// A v1 List (JSON or YAML, nested Lists allowed) or a YAML stream of objects. Kinds other than
// Node, Pod, PodDisruptionBudget, Namespace, PersistentVolumeClaim and PersistentVolume are
// ignored; objects that do not decode are skipped with a warning, as the operator's caches do.
Result<Snapshot> read_snapshot(std::string_view text);

// A ReschedulePolicy (YAML or JSON, as applied with kubectl). Returns its name and valid spec.
Result<std::pair<std::string, drain::PolicySpec>> read_policy(std::string_view text);

// Runs the command; returns the process exit code.
int plan_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace spotshift::op
