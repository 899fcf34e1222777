#pragma once
// What-if placement on a ClusterSnapshot: add and remove pods, fork again, then commit into the
// parent or drop. A fork stores only what changed (the touched nodes' usage and pod lists) and a
// bitmap of touched nodes, so forking and committing cost time proportional to the changes.
// A child fork refers to its parent, which must outlive it and not change meanwhile.

#include "sched/snapshot.hpp"

#include <vector>

namespace spotshift::sched {

class Fork {
 public:
  explicit Fork(const ClusterSnapshot& base);
  Fork(const Fork&) = delete;
  Fork& operator=(const Fork&) = delete;
  Fork(Fork&&) = default;
  Fork& operator=(Fork&&) = default;

  // A child layered on this fork.
  Fork fork() const;
  // Applies a child's changes to this fork (the child must have been forked from this one).
  void commit(Fork&& child);

  void add_pod(int node, PodPtr pod);
  // Removes a pod by key; false when it is not on that node.
  bool remove_pod(int node, const model::Pod& pod);

  const ClusterSnapshot& base() const { return *base_; }
  const Usage& used(int node) const;
  bool touched(int node) const { return (bits_[static_cast<size_t>(node) >> 6] >> (node & 63)) & 1; }
  size_t changes() const;

  // The pods on a node in this what-if: the snapshot's, minus removed, plus added.
  template <class F>
  void for_each_pod(int node, F&& f) const {
    const Delta* d = find(node);
    for (const auto& p : base_->node(node).pods)
      if (!d || !removed(*d, p.get())) f(*p);
    if (d)
      for (const auto& p : d->added) f(*p);
  }
  // Every pod added anywhere in this what-if (with its node).
  template <class F>
  void for_each_added(F&& f) const {
    for_each_delta([&](const Delta& d) {
      for (const auto& p : d.added) f(*p, d.node);
    });
  }
  // Whether a snapshot pod has been removed from its node in this what-if.
  bool is_removed(int node, const model::Pod* pod) const {
    const Delta* d = find(node);
    return d && removed(*d, pod);
  }

 private:
  struct Delta {
    int node;
    Usage used;
    std::vector<PodPtr> added;
    std::vector<const model::Pod*> removed;
  };
  static bool removed(const Delta& d, const model::Pod* p);
  const Delta* find(int node) const;
  Delta& edit(int node);
  bool chain_has_deltas() const {
    for (const Fork* f = parent_; f; f = f->parent_)
      if (!f->deltas_.empty()) return true;
    return false;
  }
  // Each node's effective delta once; a node's delta in a child replaces its parent's.
  template <class F>
  void for_each_delta(F&& f) const {
    if (!chain_has_deltas()) {
      for (const auto& d : deltas_) f(d);
      return;
    }
    std::vector<bool> seen;
    for (const Fork* f2 = this; f2; f2 = f2->parent_)
      for (const auto& d : f2->deltas_) {
        const auto n = static_cast<size_t>(d.node);
        if (n >= seen.size()) seen.resize(n + 1);
        if (seen[n]) continue;
        seen[n] = true;
        f(d);
      }
  }

  const ClusterSnapshot* base_;
  const Fork* parent_ = nullptr;
  std::vector<uint64_t> bits_;   // nodes touched here or in an ancestor
  std::vector<Delta> deltas_;    // this fork's own, sorted by node
};

}  // namespace spotshift::sched
