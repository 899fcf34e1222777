#pragma once
// What is still to be placed, for the packing scores: the pods' request shapes (cpu, memory and
// the scarce resource) with their share, and which resource is scarce. A drain plan knows it
// exactly (the pods of the on-demand nodes it has not decided yet) and keeps it current with
// add/remove; without one, the Fragmentation score derives it from the snapshot's pods.

#include "sched/snapshot.hpp"

#include <map>
#include <tuple>
#include <vector>

namespace spotshift::sched {

class Demand {
 public:
  struct Shape {
    int64_t cpu_milli = 0, memory = 0, scarce = 0;
    double share = 0;  // of every pod in the demand
  };

  // The extended resource (GPUs and the like) with the highest share of its allocatable
  // capacity requested, over every node of the snapshot; empty when no node offers one.
  static model::InternedString scarcest_extended_resource(const ClusterSnapshot& snapshot);
  // Every pod of the snapshot, with the scarcest extended resource.
  static Demand of_snapshot(const ClusterSnapshot& snapshot);

  explicit Demand(model::InternedString resource = {}) : resource_(resource) {}
  // Counts a pod's requests in (sign 1) or out (-1).
  void add(const model::Pod& pod, int sign = 1);

  model::InternedString resource() const { return resource_; }
  // The distinct shapes with their shares; recomputed after add() on first use.
  const std::vector<Shape>& shapes() const;
  // Every pod's requests summed: cpu_milli, memory, scarce.
  std::tuple<int64_t, int64_t, int64_t> totals() const { return {cpu_, memory_, scarce_}; }
  bool empty() const { return total_ == 0; }

 private:
  model::InternedString resource_;
  int64_t cpu_ = 0, memory_ = 0, scarce_ = 0;
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> counts_;
  int64_t total_ = 0;
  mutable std::vector<Shape> shapes_;
  mutable bool stale_ = true;
};

}  // namespace spotshift::sched
