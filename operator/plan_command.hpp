#pragma once
// `spotshift plan`: the operator's planner on a snapshot of a cluster (the output of
// `kubectl get nodes,pods,pdb -A -o json`, optionally with namespaces, PVCs and PVs, ReplicaSets,
// StatefulSets and Jobs) and a ReschedulePolicy file, or on the cluster itself, listed (never
// written) through a kubeconfig, with a policy as it is in the cluster (live_plan.hpp).

#include "drain/planner.hpp"
#include "drain/policy.hpp"
#include "model/json_reader.hpp"

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace spotshift::op {

struct Snapshot {
  drain::PlanInput input;
  std::vector<std::string> warnings;  // objects skipped, with the reason
  // ConfigMaps' data by "namespace/name" (for spec.pricing.configMap).
  std::map<std::string, std::map<std::string, std::string>> config_maps;
};

struct Collector;

// How read_snapshot reads a long JSON List: its items shared among readers, one per core.
struct SnapshotReading {
  size_t readers = 0;                              // at most this many at once; 0: one per core, at most 8
  size_t min_bytes_per_reader = size_t{16} << 20;  // no reader gets less of the text than this
  size_t* used = nullptr;                          // set to how many readers' shares were kept
};

// Builds a snapshot from objects handed over one at a time, each decoded from the text as it
// comes (no document).
class SnapshotBuilder {
 public:
  SnapshotBuilder();
  SnapshotBuilder(SnapshotBuilder&&) noexcept;
  ~SnapshotBuilder();
  // The object of this kind r is at, read whole; kinds spotshift plan does not read are skipped,
  // and an object that does not decode is skipped with a warning.
  Result<void> add(std::string_view kind, model::JsonReader& r);
  // Every object of a controller kind (ReplicaSet, StatefulSet, Job) was added, even if there was
  // none: a pod whose controller of this kind is missing has none.
  void listed_all(std::string_view kind);
  void warn(std::string warning);
  Result<Snapshot> finish() &&;

 private:
  friend Result<Snapshot> read_snapshot(std::string_view text, const SnapshotReading& how);
  std::unique_ptr<Collector> c_;
};

// A v1 List (JSON or YAML, nested Lists allowed) or a YAML stream of objects. Kinds other than
// Node, Pod, PodDisruptionBudget, Namespace, PersistentVolumeClaim, PersistentVolume, the
// controller kinds and ConfigMap are ignored; objects that do not decode are skipped with a warning, as the operator's caches do.
// A long JSON List as kubectl writes it (an item per line at the first's indentation) is read by
// several threads, each a share of its items; the snapshot is the same as one reader's.
Result<Snapshot> read_snapshot(std::string_view text, const SnapshotReading& how = {});

// A ReschedulePolicy (YAML or JSON, as applied with kubectl). Returns its name and valid spec.
Result<std::pair<std::string, drain::PolicySpec>> read_policy(std::string_view text);

// Where `spotshift plan` reads a live cluster.
struct LiveOptions {
  std::string kubeconfig;  // empty: $KUBECONFIG, ~/.kube/config or in-cluster, as spotshift run
  std::string context;
};

// A live cluster as `spotshift plan` reads it.
struct ClusterRead {
  Snapshot snapshot;
  std::vector<drain::ReschedulePolicy> policies;
};

// How plan_command reads a live cluster (live_plan.hpp's read_cluster; tests may give another).
using ClusterReader = std::function<Result<ClusterRead>(const LiveOptions&)>;

// The exit code of --exit-code when nothing is drainable (0 when something is).
inline constexpr int kNothingDrainable = 3;

// Runs the command; returns the process exit code.
int plan_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, const ClusterReader& live = {});

}  // namespace spotshift::op
