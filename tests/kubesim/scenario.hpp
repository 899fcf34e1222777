#pragma once
// Scenarios: initial objects from YAML (several documents, v1 Lists allowed) or from a v1 List
// in JSON, the output of `kubectl get nodes,pods,pdb -A -o json`. Namespaces a scenario uses are
// created; objects are loaded with their status (Running pods stay Running on their nodes).

#include "cluster.hpp"

namespace spotshift::kubesim {

// Returns the number of objects loaded; the error names the object that failed.
Result<size_t> load_scenario_text(Cluster& cluster, std::string_view text);
Result<size_t> load_scenario_file(Cluster& cluster, const std::string& path);

}  // namespace spotshift::kubesim
