#pragma once
// What is still to be placed, for the packing scores: the pods' request shapes (cpu, memory and
// the scarce resource) with their share, and which resource is scarce. A drain plan knows it
// exactly (the pods of the on-demand nodes it has not decided yet) and keeps it current with
// add/remove; without one, the Fragmentation score derives it from the snapshot's pods.

#include "sched/snapshot.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

namespace spotshift::sched {

class Demand {
 public:
  struct Shape {
    int64_t cpu_milli = 0, memory = 0, scarce = 0;
    int64_t count = 0;  // pods of this shape
    double share = 0;   // of every pod in the demand
  };

  // The extended resource (GPUs and the like) with the highest share of its allocatable
  // capacity requested, over every node of the snapshot; empty when no node offers one.
  static model::InternedString scarcest_extended_resource(const ClusterSnapshot& snapshot);
  // Every pod of the snapshot, with the scarcest extended resource.
  static Demand of_snapshot(const ClusterSnapshot& snapshot);

  explicit Demand(model::InternedString resource = {}) : resource_(resource) {}
  // Counts a pod's requests in (sign 1) or out (-1).
  void add(const model::Pod& pod, int sign = 1);

  const model::InternedString& resource() const { return resource_; }
  // The distinct shapes with their shares; recomputed after add() on first use.
  const std::vector<Shape>& shapes() const;
  // Every pod's requests summed: cpu_milli, memory, scarce.
  std::tuple<int64_t, int64_t, int64_t> totals() const { return {cpu_, memory_, scarce_}; }
  bool empty() const { return total_ == 0; }
  int64_t pods() const { return total_; }
  // How many pods of the demand a node with this much free room strands its free scarce
  // resource for: every pod that does not ask for the resource, and every one that does but does
  // not fit (all of them when the node takes no more pods). The shapes() definition counted,
  // without a walk over every shape: shapes asking for the resource are kept in order of the
  // amount they ask, with running counts and maxima, so a node with room for the largest of
  // them in cpu and memory is answered by one binary search.
  int64_t stranded(const Room& room) const { return total_ - fitting(room, slot_of(room)); }
  // The same for a node before and after it takes a pod.
  std::pair<int64_t, int64_t> stranded(const Room& before, const Room& after) const {
    return {total_ - fitting(before, slot_of(before)), total_ - fitting(after, slot_of(after))};
  }
  // The same for node n (its index in the snapshot), whose room is `before`: what was counted for
  // the node's room is kept by node, apart from the rooms asked about once.
  // The memo slot of `after` is looked up first, so that the wait for it overlaps the node's.
  std::pair<int64_t, int64_t> stranded_on(int n, const Room& before, const Room& after) const {
    Fitting& later = slot_of(after);
    __builtin_prefetch(&later);
    return stranded_on(n, before, after, later);
  }
  // A slot of fitting()'s memo, direct-mapped by the room's cpu, memory and scarce amount: a plan
  // asks about the same nodes' rooms over and over. A slot holds the count as of a position in
  // the log of pods asking for the resource counted in and out; a later answer adds the logged
  // pods that fit the room, while the log still holds every change since (a plan counts one pod
  // out after each placement, so a full count after every one would undo the memo).
  struct Fitting {
    int64_t cpu_milli = 0, memory = 0, scarce = 0;
    uint64_t at = 0;  // changes_ when counted; 0: empty
    int64_t fit = 0;
  };
  // The slot stranded_on(n, ..., after) reads for `after`, with it and the node's memo entry
  // fetched ahead, for a caller about to ask about several nodes (a plan's rooms spread over a
  // memo too large to stay in the nearest caches); handed back to stranded_on(), it is not
  // looked up again.
  Fitting& prefetch_on(int n, const Room& after) const {
    if (static_cast<size_t>(n) < nodes_) __builtin_prefetch(&by_node_[static_cast<size_t>(n)]);
    Fitting& slot = slot_of(after);
    __builtin_prefetch(&slot);
    return slot;
  }
  // stranded_on() with the slot prefetch_on(n, after) gave.
  std::pair<int64_t, int64_t> stranded_on(int n, const Room& before, const Room& after, Fitting& later) const {
    if (static_cast<size_t>(n) >= nodes_) grow_nodes(static_cast<size_t>(n));
    const int64_t fit_before = fitting(before, by_node_[static_cast<size_t>(n)]);
    return {total_ - fit_before, total_ - fitting(after, later)};
  }

  // Whether a pod asking for none of the scarce resource, `cpu` and `memory` of the rest, leaves
  // every pod of the demand that fits node n (whose room is `room`) fitting it: no pod asking
  // for the resource asks for an amount of CPU between the room's less the pod's and the
  // room's, or of memory. Then the node strands no pod newly, without a count. False is no
  // answer (the counts tell). Kept per node: the room's largest CPU and memory amounts asked
  // up to its own, while the room and fit_version() hold (counting pods out only leaves fewer
  // amounts, so the largest ones kept are no smaller than those left: still a true answer).
  bool keeps_fitting(int n, const Room& room, int64_t cpu, int64_t memory) const;

  // The pods asking for the resource that ask for no more of it than `scarce`: a node with that
  // much free strands no more of them than this newly, whatever else it has free.
  int64_t asking_at_most(int64_t scarce) const;
  // A version (next_version()) that changes whenever a pod asking for the scarce resource is
  // counted in: a bound over how many of the demand's pods fit somewhere, computed earlier,
  // still holds while it is the same (counting pods out only lowers it).
  uint64_t fit_version() const { return fit_version_; }
  // Memos for such bounds, kept by the score that computes them: per pod shape (cpu, memory),
  // with the versions they hold for and how far into a fork's log of changed nodes they are.
  struct Bound {
    uint64_t demand_version = 0, tracking_version = 0;
    size_t changes_seen = 0;
    int64_t value = 0;
  };
  std::map<std::pair<int64_t, int64_t>, Bound>& bounds() const { return bounds_; }

 private:
  model::InternedString resource_;
  int64_t cpu_ = 0, memory_ = 0, scarce_ = 0;
  // (scarce, cpu, memory) -> pods: the shapes asking for the scarce resource in order of the
  // amount asked, after those asking for none.
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> counts_;
  int64_t total_ = 0;
  mutable std::vector<Shape> shapes_;
  mutable bool stale_ = true;
  // stranded()'s index over the shapes of counts_ asking for the resource, a column per field:
  // each shape and, over the shapes up to it, the count and the largest cpu and memory asked.
  // Built from the shapes with pods; a pod counted out then only lowers its shape's count and
  // the counts through it (a plan counts one out after each placement), so a shape may stay
  // with none, its amounts still among the amounts and the maxima (no answer changes: it adds
  // nothing to a count, and amounts or maxima that are too large only send a question from the
  // shortcuts to a count). A pod counted in rebuilds it.
  // For the walk, each shape's cpu and memory are kept as their rank among the distinct amounts
  // the shapes ask (a shape fits a room's cpu when its rank is below the number of distinct
  // amounts no larger than the room's), in 32 bits, so that the walk compares several shapes at
  // once.
  struct Index {
    std::vector<int64_t> scarce, count_through, max_cpu_through, max_memory_through;
    std::vector<int64_t> cpu_values, memory_values;  // the distinct amounts asked, ascending
    std::vector<int32_t> cpu_rank, memory_rank, count;
  };
  const Index& index() const;
  // The index's position of a shape, or -1 when it is not there.
  static std::ptrdiff_t position(const Index& ix, int64_t scarce, int64_t cpu, int64_t memory);
  // How many of the index's shapes ask for no more of the resource than `scarce` (they come
  // first).
  static size_t shapes_up_to(const Index& ix, int64_t scarce) {
    return static_cast<size_t>(std::upper_bound(ix.scarce.begin(), ix.scarce.end(), scarce) - ix.scarce.begin());
  }
  mutable Index index_;
  uint64_t fit_version_ = next_version();
  mutable std::map<std::pair<int64_t, int64_t>, Bound> bounds_;
  mutable bool index_stale_ = true;
  // The pods asking for the resource that fit a room, counted afresh or brought up to date in a
  // memo slot.
  int64_t fitting(const Room& room, Fitting& slot) const;  // inline below: the memo's answer without a call
  int64_t fitting_counted(const Room& room, Fitting& slot) const;
  Fitting& slot_of(const Room& room) const;  // inline below: one per node a placement scores
  static constexpr size_t kSlots = size_t(1) << 14;
  void allocate_slots() const;
  // fitting()'s memo (Fitting), and what was last counted for each node's own room.
  mutable std::vector<Fitting> fitting_;
  mutable std::vector<Fitting> by_node_;
  struct Change {
    int64_t scarce = 0, cpu_milli = 0, memory = 0, sign = 0;
  };
  // keeps_fitting()'s memo per node: the room it is for, and what the pod may ask of each
  // without passing below an amount asked.
  struct Headroom {
    int64_t cpu_milli = 0, memory = 0;
    uint64_t version = 0;  // fit_version_ then; 0: empty
    int64_t cpu_slack = 0, memory_slack = 0;
  };
  mutable std::vector<Headroom> headroom_;
  // by_node_ and headroom_ hold the nodes below nodes_, grown together: a count to compare
  // with, where a vector's size would take a division by its entry's size on every look.
  mutable size_t nodes_ = 0;
  void grow_nodes(size_t n) const;  // to hold node n; out of line, so that the looks stay small
  void count_headroom(Headroom& h, const Room& room) const;
  static constexpr size_t kChangeLog = 32;       // a power of 2
  std::array<Change, kChangeLog> change_log_{};  // change n at n % kChangeLog
  uint64_t changes_ = 1;                         // changes logged, plus 1
};

inline Demand::Fitting& Demand::slot_of(const Room& r) const {
  if (fitting_.empty()) [[unlikely]]
    allocate_slots();
  const uint64_t mix = static_cast<uint64_t>(r.cpu_milli) * 0x9E3779B97F4A7C15ULL ^
                       static_cast<uint64_t>(r.memory) * 0xC2B2AE3D27D4EB4FULL ^ static_cast<uint64_t>(r.scarce) * 0x165667B19E3779F9ULL;
  return fitting_[(mix ^ (mix >> 29)) & (kSlots - 1)];
}

inline bool Demand::keeps_fitting(int n, const Room& room, int64_t cpu, int64_t memory) const {
  if (room.pods < 2) return false;  // a node taking its last pod strands all that fitted
  if (static_cast<size_t>(n) >= nodes_) grow_nodes(static_cast<size_t>(n));
  Headroom& h = headroom_[static_cast<size_t>(n)];
  if (h.version != fit_version_ || h.cpu_milli != room.cpu_milli || h.memory != room.memory) count_headroom(h, room);
  return cpu <= h.cpu_slack && memory <= h.memory_slack;
}

inline int64_t Demand::fitting(const Room& room, Fitting& slot) const {
  if (room.pods < 1 || room.scarce < 1) return 0;
  if (slot.at == changes_ && slot.cpu_milli == room.cpu_milli && slot.memory == room.memory && slot.scarce == room.scarce) return slot.fit;
  return fitting_counted(room, slot);
}

}  // namespace spotshift::sched
