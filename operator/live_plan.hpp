#pragma once
// What `spotshift plan` reads from a live cluster: the objects the operator watches, listed
// (never watched, never written), and the ReschedulePolicies as they are in the cluster.

#include "drain/policy.hpp"
#include "plan_command.hpp"

#include <string>
#include <vector>

namespace spotshift::op {

// Lists through the kubeconfig's (or the in-cluster) credentials, as `spotshift run` finds them.
// Nodes, pods and budgets must be listable; namespaces, PVCs, PVs, ReplicaSets, StatefulSets and
// Jobs the credentials may not list are left out with a warning (the plan is then made as from a
// snapshot without them), as are policies when the CRD is not installed.
Result<ClusterRead> read_cluster(const LiveOptions& options);

}  // namespace spotshift::op
