#pragma once
// YAML for the small clusters in-process tests build (a few 4-CPU nodes, ReplicaSets and their
// pods in namespace default): each function returns one document, "---" first.

#include <fmt/format.h>

#include <string>

namespace spotshift::testing {

// A node of `cpu` CPUs (4 unless said) and 16 GiB labelled with its hostname and `role`
// (node-role.kubernetes.io/worker, .../spot-worker), tainted
// spotshift.io/on-demand=true:PreferNoSchedule when `on_demand_taint`.
inline std::string node_yaml(const std::string& name, const std::string& role, bool on_demand_taint = false, const std::string& cpu = "4") {
  return fmt::format(R"(---
apiVersion: v1
kind: Node
metadata: {{name: {0}, labels: {{kubernetes.io/hostname: {0}, {1}: ""}}}}
spec: {{taints: [{2}]}}
status: {{allocatable: {{cpu: "{3}", memory: 16Gi, pods: "110"}}}}
)",
                     name, role, on_demand_taint ? "{key: spotshift.io/on-demand, value: \"true\", effect: PreferNoSchedule}" : "", cpu);
}

// ReplicaSet `app` (uid rs-APP) whose pods ask `cpu` and 256 MiB, with a 30 s grace period.
inline std::string replicaset_yaml(const std::string& app, int replicas, const std::string& cpu = "500m") {
  return fmt::format(R"(---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {{name: {0}, namespace: default, uid: rs-{0}, labels: {{app: {0}}}}}
spec:
  replicas: {1}
  selector: {{matchLabels: {{app: {0}}}}}
  template:
    metadata: {{labels: {{app: {0}}}}}
    spec:
      terminationGracePeriodSeconds: 30
      containers: [{{name: c, image: x, resources: {{requests: {{cpu: {2}, memory: 256Mi}}}}}}]
)",
                     app, replicas, cpu);
}

// A pod of ReplicaSet `app` bound to `node`, as replicaset_yaml's template makes them.
inline std::string replica_pod_yaml(const std::string& name, const std::string& app, const std::string& node,
                                    const std::string& cpu = "500m", const std::string& annotations = "{}") {
  return fmt::format(R"(---
apiVersion: v1
kind: Pod
metadata:
  name: {0}
  namespace: default
  labels: {{app: {1}}}
  annotations: {4}
  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: {1}, uid: rs-{1}, controller: true}}]
spec:
  nodeName: {2}
  terminationGracePeriodSeconds: 30
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: {3}, memory: 256Mi}}}}}}]
)",
                     name, app, node, cpu, annotations);
}

}  // namespace spotshift::testing
