#pragma once
// The simulated cluster's controllers. Each observes store changes (cheaply: it only records
// what became dirty) and does its work in run(), so the work of one change can be spread over
// later runs without reentrancy. All run on the simulator's thread.

#include "cluster.hpp"

#include "model/node.hpp"
#include "model/pod.hpp"
#include "model/resources.hpp"

#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <vector>

namespace spotshift::kubesim {

// Binds pending pods, written independently of lib/sched on purpose: resources (extended ones
// and the pod count included), NoSchedule/NoExecute taints, nodeSelector, required node affinity,
// spec.unschedulable and host ports; LeastAllocated scoring with PreferNoSchedule and preferred
// node affinity; kube-scheduler's FailedScheduling message when nothing fits.
class SimScheduler {
 public:
  explicit SimScheduler(Cluster& c) : cluster_(c) {}
  void observe(const Change& c);
  bool run();

 private:
  struct Usage {
    model::ResourceList requested;
    int64_t pods = 0;
    std::set<std::string> host_ports;  // "proto/port"
  };
  struct PodCharge {
    std::string node;
    model::ResourceList requests;
    std::vector<std::string> ports;
    int32_t priority = 0;
    bool terminating = false;
  };
  void charge(const std::string& key, const Value* pod);
  bool schedule(const std::string& key);
  // kube-scheduler's preemption, simplified: on a node the pod fails on resources alone, the
  // fewest pods of lower priority (lowest first) whose going makes it fit are deleted, and the
  // pod is nominated there. True when it preempted.
  bool preempt(const std::string& key, const model::Pod& pod, const std::vector<std::string>& resource_only);

  Cluster& cluster_;
  std::map<std::string, model::Node> nodes_;
  std::map<std::string, Usage> usage_;
  std::map<std::string, PodCharge> charges_;
  std::set<std::string> pending_;
  std::set<std::string> unschedulable_;
  bool capacity_changed_ = false;
};

// Deployments, ReplicaSets, DaemonSets and StatefulSets.
class SimWorkloads {
 public:
  explicit SimWorkloads(Cluster& c) : cluster_(c) {}
  void observe(const Change& c);
  bool run();

 private:
  void index_pod(const std::string& key, const Value* pod);
  bool sync_deployment(const std::string& key);
  bool sync_replicaset(const std::string& key);
  bool sync_daemonset(const std::string& key);
  bool sync_statefulset(const std::string& key);
  std::vector<ObjectPtr> owned_pods(const std::string& owner_uid) const;
  Result<ObjectPtr> create_pod(const Value& owner, const ResourceType& owner_type, const Value& tmpl, std::string name,
                               std::string generate_name, std::string node);
  bool write_status(const ResourceType& rt, const std::string& key, const std::function<void(Value&, Alloc&)>& fn);
  static int64_t max_unavailable(const Value& deployment, int64_t replicas);
  // A status condition of the workload kind (type, status, reason, message, lastUpdateTime, and
  // lastTransitionTime when the status changes).
  void set_condition(Value& status, std::string_view type, std::string_view value, std::string_view reason, const std::string& message,
                     Alloc& a);

  Cluster& cluster_;
  std::map<std::string, std::set<std::string>> pods_by_owner_;  // owner uid -> pod keys
  std::map<std::string, std::string> pod_owner_;                // pod key -> owner uid
  std::set<std::string> dirty_deployments_, dirty_replicasets_, dirty_daemonsets_, dirty_statefulsets_;
};

// Starts bound pods after a delay and finishes graceful deletions after min(grace, cap).
class SimKubelet {
 public:
  explicit SimKubelet(Cluster& c) : cluster_(c) {}
  void observe(const Change& c);
  bool run();
  std::optional<Time> next_deadline() const;

 private:
  struct Timer {
    Time due;
    std::string key;
    std::string uid;
    bool finish;  // false: start the pod
    bool operator>(const Timer& o) const { return due > o.due; }
  };
  Cluster& cluster_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  std::set<std::string> starting_;   // uids with a start timer
  std::set<std::string> finishing_;  // uids with a finish timer
  uint64_t next_ip_ = 1;
};

// PodDisruptionBudget status.
class SimDisruption {
 public:
  explicit SimDisruption(Cluster& c) : cluster_(c) {}
  void observe(const Change& c);
  bool run();
  std::optional<Time> next_deadline() const { return next_; }

 private:
  Cluster& cluster_;
  std::set<std::string> dirty_;  // PDB keys
  std::set<std::string> dirty_namespaces_;
  std::optional<Time> next_;
};

// Mirrors spec.unschedulable and node conditions into the node.kubernetes.io/* taints.
class SimNodeLifecycle {
 public:
  explicit SimNodeLifecycle(Cluster& c) : cluster_(c) {}
  void observe(const Change& c);
  bool run();

 private:
  Cluster& cluster_;
  std::set<std::string> dirty_;
};

class Controllers {
 public:
  explicit Controllers(Cluster& cluster);
  // Does all work that is due; true when it changed something (run again soon).
  bool run();
  // The earliest simulated time at which timed work falls due.
  std::optional<Time> next_deadline() const;

 private:
  Cluster& cluster_;
  SimScheduler scheduler_;
  SimWorkloads workloads_;
  SimKubelet kubelet_;
  SimDisruption disruption_;
  SimNodeLifecycle lifecycle_;
};

// The controller owner reference of an object, if any.
const Value* controller_of(const Value& obj);

}  // namespace spotshift::kubesim
