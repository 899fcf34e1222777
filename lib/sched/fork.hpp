#pragma once
// What-if placement on a ClusterSnapshot: add and remove pods, fork again, then commit into the
// parent or drop. A fork stores only what changed (the touched nodes' usage and pod lists) and a
// bitmap of touched nodes, so forking and committing cost time proportional to the changes.
// A child fork refers to its parent, which must outlive it and not change meanwhile.

#include "sched/snapshot.hpp"

#include <algorithm>
#include <unordered_set>
#include <utility>
#include <vector>

namespace spotshift::sched {

// (amount, node) pairs in order, in one array: a plan walks them far more often than it changes
// one, and a change moves an entry only past the entries between its old and new amount.
class NodeOrder {
 public:
  using Entry = std::pair<int64_t, int>;
  using const_iterator = std::vector<Entry>::const_iterator;
  using const_reverse_iterator = std::vector<Entry>::const_reverse_iterator;

  void clear() { entries_.clear(); }
  void push_back(Entry e) { entries_.push_back(e); }
  void sort() { std::sort(entries_.begin(), entries_.end()); }
  // Replaces `from` (which must be there) by `to`, keeping the order.
  void move(Entry from, Entry to);

  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  const_reverse_iterator rbegin() const { return entries_.rbegin(); }
  const_reverse_iterator rend() const { return entries_.rend(); }
  const_iterator lower_bound(Entry e) const { return std::lower_bound(entries_.begin(), entries_.end(), e); }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

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
  const Fork* parent() const { return parent_; }

  // The candidate nodes a planner places onto, tracked by a fork without a parent: the list,
  // and the same nodes ordered by free CPU (allocatable minus used, then by index), kept current
  // through every later change, so that a "fullest first" placement can stop at the first node
  // that passes the filters instead of scoring every node (Framework::place_on_tracked).
  // With `scarce` (an extended resource), the same nodes are also kept ordered by their free
  // amount of it, so that a pod asking for some need not look at nodes without enough.
  void track_candidates(std::vector<int> nodes, model::InternedString scarce = {});
  const std::vector<int>& tracked() const { return tracked_; }
  const model::InternedString& tracked_resource() const { return tracked_resource_; }
  // (free amount of tracked_resource(), node) of the tracked nodes.
  const NodeOrder& tracked_by_free_resource() const { return by_free_resource_; }
  // The free amount of `resource` on a node in this what-if: from the tracking fork's packed
  // array when it tracks that resource and the node, and no fork below it changed the node.
  int64_t free_of(int node, const model::InternedString& resource) const { return use_of(node, resource).free_resource; }
  bool is_tracked(int node) const { return !is_tracked_.empty() && is_tracked_[static_cast<size_t>(node)] != 0; }
  // The node's place in tracked() (its first, when it is there twice), or -1 when it is not
  // tracked; and whether no node is there twice.
  int tracked_rank(int node) const { return is_tracked_.empty() ? -1 : is_tracked_[static_cast<size_t>(node)] - 1; }
  bool tracked_unique() const { return tracked_unique_; }
  // used_basic(node) and free_of(node, resource) (0 with no resource) in one walk up the chain:
  // the packing scores ask for both on every node they look at.
  struct Use {
    BasicResources used;
    int64_t free_resource = 0;
  };
  Use use_of(int node, const model::InternedString& resource) const {
    const auto n = static_cast<size_t>(node);
    const Fork* root = this;
    const bool touched_here_or_above = touched(node);
    for (; root->parent_; root = root->parent_)
      if (touched_here_or_above && root->changed_here(node)) {
        const Usage& u = root->deltas_[static_cast<size_t>(root->index_[n])].used;
        return {BasicResources::of(u), resource.empty() ? 0 : free_with(node, u, resource)};
      }
    // No fork below the root changed the node; the root keeps its basic usage packed once it has
    // changed anything.
    Use out{root->dense_used_.empty() ? base_->used_basic()[n] : root->dense_used_[n]};
    if (!resource.empty())
      out.free_resource = root->tracked_resource_ == resource && root->is_tracked(node) ? root->free_resource_[n]
                                                                                        : free_with(node, root->used(node), resource);
    return out;
  }
  // use_of(nodes[k], resource) for each k, as f(k, use): for a fork without a parent or with one
  // that has none (a planner's what-if), with the chain looked at once for the list rather
  // than once per node. f may overwrite nodes[0..k] (a filter keeping nodes in place): the list
  // is read from a pointer taken once, with everything else the loop reads, so that those
  // writes make the compiler load nothing again.
  template <class F>
  void for_each_use(const std::vector<int>& nodes, const model::InternedString& resource, F&& f) const {
    const int* list = nodes.data();
    const size_t count = nodes.size();
    if (parent_ && parent_->parent_) {
      for (size_t k = 0; k < count; ++k) f(k, use_of(list[k], resource));
      return;
    }
    const Fork& root = parent_ ? *parent_ : *this;
    const int32_t* changed = parent_ && !index_.empty() ? index_.data() : nullptr;  // this fork's, when a child
    const BasicResources* used = root.dense_used_.empty() ? base_->used_basic().data() : root.dense_used_.data();
    const bool with_resource = !resource.empty();
    const bool packed = with_resource && root.tracked_resource_ == resource && !root.is_tracked_.empty();
    const int32_t* tracked = packed ? root.is_tracked_.data() : nullptr;
    const int64_t* free = packed ? root.free_resource_.data() : nullptr;
    for (size_t k = 0; k < count; ++k) {
      const int node = list[k];
      const auto n = static_cast<size_t>(node);
      if (changed && changed[n] >= 0) {
        f(k, use_of(node, resource));
        continue;
      }
      Use u{used[n]};
      if (with_resource) u.free_resource = tracked && tracked[n] != 0 ? free[n] : free_with(node, root.used(node), resource);
      f(k, u);
    }
  }
  // The node's free room in this what-if, of `resource` besides the basic ones.
  Room room_of(int node, const model::InternedString& resource) const {
    const Use u = use_of(node, resource);
    return Room::of(base_->allocatable_basic(node), u.used, u.free_resource);
  }
  const NodeOrder& tracked_by_free_cpu() const { return by_free_cpu_; }
  // A version (next_version()) of the tracked set, changed by each track_candidates(), and the
  // tracked nodes whose usage changed since, in order (with repeats): a value derived from
  // every tracked node's free room stays current by redoing the nodes logged after it.
  uint64_t tracking_version() const { return tracking_version_; }
  const std::vector<int>& tracked_changes() const { return tracked_changes_; }
  // Whether this fork itself (not an ancestor) changed the node, and each node it changed.
  bool changed_here(int node) const { return !index_.empty() && index_[static_cast<size_t>(node)] >= 0; }
  template <class F>
  void for_each_changed_here(F&& f) const {
    for (const auto& d : deltas_) f(d.node);
  }
  const Usage& used(int node) const;
  // used(node) without the extended resources, from packed arrays: for loops over many nodes.
  BasicResources used_basic(int node) const {
    if (!touched(node)) return base_->used_basic()[static_cast<size_t>(node)];
    for (const Fork* f = this; f; f = f->parent_) {
      if (!f->dense_used_.empty()) return f->dense_used_[static_cast<size_t>(node)];
      if (!f->index_.empty())
        if (int32_t at = f->index_[static_cast<size_t>(node)]; at >= 0) return BasicResources::of(f->deltas_[static_cast<size_t>(at)].used);
    }
    return base_->used_basic()[static_cast<size_t>(node)];
  }
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
  // Whether any pod added in this what-if has required pod anti-affinity (without a scan: the
  // planner adds tens of thousands of pods, and InterPodAffinity asks before every placement).
  bool any_added_anti_affinity() const { return added_anti_affinity_ > 0; }
  // The required anti-affinity terms of pods added in this what-if (and still there) that can
  // select a pod with these labels. A term may come more than once.
  template <class F>
  void for_each_added_anti_affinity_term(const model::Labels& labels, F&& f) const {
    if (!any_added_anti_affinity()) return;
    for (const Fork* fk = this; fk; fk = fk->parent_)
      fk->added_anti_terms_.for_each(labels, [&](const AntiAffinityTerm& t) {
        if (still_added(t.node, t.pod)) f(t);
      });
  }
  // The pods added in this what-if (and still there) that have label key=value, with their node.
  // Each pod once: a pod removed and added back to the same node is listed twice, so when more
  // than one fork of the chain has entries they are deduplicated.
  template <class F>
  void for_each_added_with_label(const model::InternedString& key, const model::InternedString& value, F&& f) const {
    std::vector<const std::vector<PlacedPod>*> buckets;
    for (const Fork* fk = this; fk; fk = fk->parent_)
      if (const auto* bucket = fk->added_by_label_.find(key, value)) buckets.push_back(bucket);
    std::unordered_set<const model::Pod*> seen;
    for (const auto* bucket : buckets)
      for (const auto& placed : *bucket)
        if (still_added(placed.node, placed.pod) && (buckets.size() == 1 ? true : seen.insert(placed.pod).second))
          f(*placed.pod, placed.node);
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
    int added_anti_affinity = 0;  // added pods with required pod anti-affinity
  };
  static bool removed(const Delta& d, const model::Pod* p);
  // Whether a pod added in this fork or an ancestor is still on the node here.
  bool still_added(int node, const model::Pod* pod) const {
    const Delta* d = find(node);
    return d && std::any_of(d->added.begin(), d->added.end(), [&](const PodPtr& p) { return p.get() == pod; });
  }
  const Delta* find(int node) const;
  // A node's allocatable amount of `resource` less what `used` takes of it.
  int64_t free_with(int node, const Usage& used, const model::InternedString& resource) const {
    return base_->node(node).allocatable.scalar(resource) - used.scalar(resource);
  }
  Delta& edit(int node);
  // Keeps dense_used_ and the tracked order current after a change to d (a fork without a
  // parent only).
  void changed(const Delta& d);
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
  std::vector<uint64_t> bits_;  // nodes touched here or in an ancestor
  std::vector<Delta> deltas_;   // this fork's own, in the order first edited
  std::vector<int32_t> index_;  // node -> position in deltas_ or -1; empty until the first edit
  // A fork without a parent (the one a planner commits into) keeps every node's basic usage
  // packed once it has changed anything, so used_basic() ends at it without a delta lookup.
  std::vector<BasicResources> dense_used_;
  std::vector<int> tracked_;
  std::vector<int32_t> is_tracked_;  // per node: its place in tracked_ plus 1, or 0
  bool tracked_unique_ = true;
  uint64_t tracking_version_ = next_version();
  std::vector<int> tracked_changes_;
  model::InternedString tracked_resource_;
  std::vector<int64_t> free_resource_;  // per node, as by_free_resource_ has it
  NodeOrder by_free_resource_;
  NodeOrder by_free_cpu_;               // (free CPU, node) of the tracked nodes
  int added_anti_affinity_ = 0;         // over every effective delta, ancestors' included
  AntiAffinityTerms added_anti_terms_;  // of the pods added in this fork itself
  // The pods added in this fork itself, by label key and value (a pod may appear again after a
  // remove and re-add; still_added() filters the removed).
  LabelBuckets<PlacedPod> added_by_label_;
};

}  // namespace spotshift::sched
