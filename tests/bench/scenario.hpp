#pragma once
// Benchmark scenarios, deterministic by seed, written as a v1 List: the shape of
// `kubectl get nodes,pods,pdb -A -o json`, so `spotshift plan --snapshot` and kubesim read them.
//
// - synthetic: up to 5,000 nodes and 150,000 pods; Deployments (ReplicaSet owners, app labels,
//   tolerations), a share of them with required pod anti-affinity or zone topology spread, and
//   PodDisruptionBudgets over half of them. On-demand nodes carry
//   node-role.kubernetes.io/worker and a PreferNoSchedule taint; spot nodes
//   node-role.kubernetes.io/spot-worker (the policy defaults).
// - openb: the Alibaba openb trace (tests/data/openb): real GPU node shapes and pod requests,
//   optionally scaled (its nodes several times over, filled up with small web pods),
//   drawn at random until they ask for the present nodes' GPUs (the trace's workload inflation).
//   Pods are placed the way a default scheduler would (least allocated, spot preferred) while
//   only part of the spot capacity exists, so they overflow onto on-demand nodes; then the rest of
//   the spot nodes return, empty. GPUs are the extended resource `alibabacloud.com/gpu-milli`
//   (1000 per GPU), as the trace's GPU sharing needs.

#include "core/error.hpp"

#include <cstdint>
#include <string>

namespace spotshift::bench {

struct SyntheticOptions {
  int nodes = 5000;
  int pods = 150000;
  double on_demand_share = 0.4;
  double constrained_share = 0.0;  // share of pods with required anti-affinity or topology spread
  uint64_t seed = 1;
};

std::string synthetic_cluster(const SyntheticOptions& o);

struct OpenbOptions {
  std::string data_dir;  // holds openb_node_list_gpu_node.csv and the pod lists
  std::string pod_list = "openb_pod_list_default.csv";
  int on_demand_nodes = 457;
  double spot_available_share = 0.7;  // of the spot nodes, present while the pods were placed
  double fill = 1.0;                  // tasks are drawn until they ask for this multiple of the present nodes' GPUs
  uint64_t seed = 1;
  // Scaling (figure a3): the trace's node list this many times over (copies named sn-rN), and
  // small CPU/memory web pods (as the synthetic scenario's) placed after the trace's tasks.
  int copies = 1;
  int max_nodes = 0;  // at most this many of the copies' nodes (0: all)
  int web_pods = 0;
  // The multi-GPU variant: this share of the GPU tasks ask 2 to 8 whole GPUs instead.
  double multi_gpu_share = 0;
  // What makes the cluster live for the operator (figure g): the ReplicaSet of every workload (its
  // pods' spec as the template, so an evicted pod is recreated), a node-agent DaemonSet with its
  // pod on every node, and a budget (maxUnavailable 1) for each web workload of several pods.
  bool workloads = false;
};

Result<std::string> openb_cluster(const OpenbOptions& o);

// The directory the openb trace is in: $SPOTSHIFT_OPENB, else tests/data/openb in the source.
std::string default_openb_dir();

}  // namespace spotshift::bench
