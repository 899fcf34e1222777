#pragma once
// The workload controllers that own the pods spotshift moves (ReplicaSet, StatefulSet, Job), as
// far as a drain cares: that one still exists (with the uid its pods name), and, for a Job,
// whether evicting one of its pods counts against its backoffLimit.

#include "model/json.hpp"
#include "model/meta.hpp"

#include <array>
#include <string>
#include <string_view>

namespace spotshift::model {

struct WorkloadController {
  ObjectMeta meta;
  std::string kind;  // ReplicaSet, StatefulSet or Job
  // A Job whose spec.podFailurePolicy ignores disruptions: the first of its rules that can match
  // an evicted pod is {action: Ignore, onPodConditions: [{type: DisruptionTarget}]}. An
  // onExitCodes rule before it could match the evicted pod's exit code first, so it does not
  // count. Without such a rule, an evicted pod is a failed pod to the Job.
  bool ignores_disruptions = false;
  bool same_content(const WorkloadController& o) const { return meta.uid == o.meta.uid && ignores_disruptions == o.ignores_disruptions; }
};

// The kinds spotshift watches to know whether a pod's controller exists.
inline constexpr std::array<std::string_view, 3> kWatchedControllerKinds = {"ReplicaSet", "StatefulSet", "Job"};
inline bool watched_controller_kind(std::string_view kind) {
  for (auto k : kWatchedControllerKinds)
    if (k == kind) return true;
  return false;
}

// `kind` is the object's kind (a list item may not carry it).
// The object r is at, read whole, as a controller of kind; or the one object of json.
Result<WorkloadController> decode_workload_controller(JsonReader& r, std::string_view kind);
Result<WorkloadController> decode_workload_controller(std::string_view json, std::string_view kind);

}  // namespace spotshift::model
