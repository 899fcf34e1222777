#pragma once
// An immutable view of the cluster for scheduling: a NodeInfo per node (allocatable, what its
// pods request, their ports, the pods themselves), topology domains per key, and a pod label
// index so inter-pod affinity and topology spread count matching pods without scanning them all.
// Built once per plan from the caches; never changed afterwards (what-ifs live in a Fork).

#include "model/node.hpp"
#include "model/pod.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace spotshift::sched {

using NodePtr = std::shared_ptr<const model::Node>;
using PodPtr = std::shared_ptr<const model::Pod>;

// What a set of pods on one node uses.
struct Usage {
  int64_t cpu_milli = 0;
  int64_t memory = 0;
  int64_t ephemeral_storage = 0;
  int32_t pods = 0;
  std::vector<std::pair<model::InternedString, int64_t>> scalars;  // extended resources, hugepages

  void add(const model::ResourceList& r, int sign);
  int64_t scalar(const model::InternedString& name) const;
  bool operator==(const Usage&) const = default;
};

// A number no earlier call returned (in any thread): versions of what-if state that a memo
// is keyed on, unique across the objects that carry them.
uint64_t next_version();

// The four resources every node has, packed so that loops over thousands of nodes read 32
// contiguous bytes per node instead of a NodeInfo and a Usage each (the filter and score loops of
// a plan were bound by those cache misses).
struct BasicResources {
  int64_t cpu_milli = 0;
  int64_t memory = 0;
  int64_t ephemeral_storage = 0;
  int64_t pods = 0;

  static BasicResources of(const Usage& u) { return {u.cpu_milli, u.memory, u.ephemeral_storage, u.pods}; }
  static BasicResources of(const model::ResourceList& r) { return {r.cpu_milli, r.memory, r.ephemeral_storage, r.pods}; }
  bool operator==(const BasicResources&) const = default;
};

// A node's free room, allocatable less used, in CPU, memory, pods and one extended resource
// (`scarce`, 0 without one): what the packing scores and the demand's stranded counts read.
struct Room {
  int64_t cpu_milli = 0, memory = 0, scarce = 0, pods = 0;
  static Room of(const BasicResources& allocatable, const BasicResources& used, int64_t free_scarce) {
    return {allocatable.cpu_milli - used.cpu_milli, allocatable.memory - used.memory, free_scarce, allocatable.pods - used.pods};
  }
};

struct NodeInfo {
  NodePtr node;
  std::string name;
  int index = 0;
  model::ResourceList allocatable;
  Usage used;                // by the pods below
  std::vector<PodPtr> pods;  // non-terminal pods bound here, sorted by key
  bool any_required_anti_affinity = false;
};

// A PVC's node requirements (VolumeZone): labels a node must have, such as
// topology.kubernetes.io/zone=eu-west-1a for a zonal PersistentVolume.
using VolumeRequirements = std::map<std::string, std::vector<std::pair<std::string, std::string>>>;  // "ns/claim" ->

// A pod placed somewhere: what the indexes hold.
struct PlacedPod {
  const model::Pod* pod;
  int node;
};

// The first requirement of a selector that needs one exact label value (matchLabels, or In with
// one value), or null: a key for indexes of pods by label.
const model::Requirement* single_value_requirement(const model::LabelSelector& selector);

// Items filed by a label key and value, in the order added.
template <class T>
class LabelBuckets {
 public:
  void add(const model::InternedString& key, const model::InternedString& value, T item) { map_[key][value].push_back(std::move(item)); }
  // The items filed under key=value, or null.
  const std::vector<T>* find(const model::InternedString& key, const model::InternedString& value) const {
    auto k = map_.find(key);
    if (k == map_.end()) return nullptr;
    auto v = k->second.find(value);
    return v == k->second.end() ? nullptr : &v->second;
  }
  // Appends other's items after this one's, bucket by bucket, and empties other.
  void merge(LabelBuckets&& other) {
    for (auto& [key, values] : other.map_)
      for (auto& [value, items] : values) {
        auto& mine = map_[key][value];
        mine.insert(mine.end(), items.begin(), items.end());
      }
    other.map_.clear();
  }
  bool empty() const { return map_.empty(); }

 private:
  std::unordered_map<model::InternedString, std::unordered_map<model::InternedString, std::vector<T>>> map_;
};

// Items that carry a label selector (anti-affinity terms, PodDisruptionBudgets), indexed by a
// label their selector requires (single_value_requirement), so that the items that could select
// a pod are found from the pod's own labels: the buckets of its labels plus the items whose
// selector has no such requirement. The caller still matches each one.
template <class T>
class SelectorIndex {
 public:
  void add(const model::LabelSelector& selector, T item) {
    if (const model::Requirement* anchor = single_value_requirement(selector))
      by_label_.add(anchor->key, anchor->values[0], std::move(item));
    else unanchored_.push_back(std::move(item));
  }
  void merge(SelectorIndex&& other) {
    by_label_.merge(std::move(other.by_label_));
    unanchored_.insert(unanchored_.end(), other.unanchored_.begin(), other.unanchored_.end());
    other.unanchored_.clear();
  }
  bool empty() const { return by_label_.empty() && unanchored_.empty(); }
  template <class F>
  void for_each(const model::Labels& labels, F&& f) const {
    for (const auto& item : unanchored_) f(item);
    if (by_label_.empty()) return;
    for (const auto& [key, value] : labels)
      if (const std::vector<T>* bucket = by_label_.find(key, value))
        for (const auto& item : *bucket) f(item);
  }

 private:
  LabelBuckets<T> by_label_;
  std::vector<T> unanchored_;
};

// A required anti-affinity term of a pod on a node.
struct AntiAffinityTerm {
  const model::Pod* pod;
  int node;
  const model::PodAffinityTerm* term;
};

// Pods' required anti-affinity terms, found from the labels of a pod they could select. Terms
// without a selector match nothing and are left out.
class AntiAffinityTerms : public SelectorIndex<AntiAffinityTerm> {
 public:
  // Files every required anti-affinity term of the pod on that node.
  void add_pod(const model::Pod* pod, int node);
};

class ClusterSnapshot {
 public:
  // Pods that are terminal or not bound are ignored; pods on unknown nodes too.
  static ClusterSnapshot build(std::vector<NodePtr> nodes, const std::vector<PodPtr>& pods, VolumeRequirements volumes = {});
  // Takes newer objects of the same nodes (in any order): when they are these nodes by name,
  // with the same allocatable resources and labels (all the snapshot derives from a node; its
  // conditions, taints and cordon are read from the node object when pods are placed), the
  // snapshot holds them from now on and this returns true; otherwise it returns false and
  // nothing changes.
  bool refresh_nodes(std::vector<NodePtr> nodes);
  ClusterSnapshot(ClusterSnapshot&&) noexcept;
  ClusterSnapshot& operator=(ClusterSnapshot&&) noexcept;
  ~ClusterSnapshot();

  int size() const { return static_cast<int>(nodes_.size()); }
  const NodeInfo& node(int i) const { return nodes_[static_cast<size_t>(i)]; }
  const std::vector<NodeInfo>& nodes() const { return nodes_; }
  // node(i).allocatable and node(i).used, packed.
  const BasicResources& allocatable_basic(int i) const { return allocatable_basic_[static_cast<size_t>(i)]; }
  const std::vector<BasicResources>& allocatable_basic() const { return allocatable_basic_; }
  const std::vector<BasicResources>& used_basic() const { return used_basic_; }
  std::optional<int> index_of(std::string_view name) const;
  const VolumeRequirements& volumes() const { return volumes_; }
  size_t pod_count() const { return pod_count_; }

  // The node's domain id for a topology key (its label value), or -1 when it has no such label.
  // Ids are dense per key; domain_name() maps them back. Computed on first use per key.
  int domain(int node, const model::InternedString& key) const;
  // Node index -> domain id for a key, for loops over nodes (one lookup instead of one per node).
  const std::vector<int>& node_domains(const model::InternedString& key) const { return topology(key).node_domain; }
  int domains(const model::InternedString& key) const;
  const std::string& domain_name(const model::InternedString& key, int domain) const;

  // Pods having a label key (for selectors with a positive requirement), on any node.
  const std::vector<PlacedPod>& pods_with_label(const model::InternedString& key) const;
  // Pods whose label key has this value.
  const std::vector<PlacedPod>& pods_with_label_value(const model::InternedString& key, const model::InternedString& value) const;
  // Every placed pod (for selectors without a positive requirement).
  const std::vector<PlacedPod>& all_pods() const;
  // Pods with required pod anti-affinity terms (checked against every incoming pod).
  const std::vector<PlacedPod>& pods_with_anti_affinity() const { return anti_affinity_pods_; }

  // Placed pods' required anti-affinity terms that can select a pod with these labels.
  template <class F>
  void for_each_anti_affinity_term(const model::Labels& labels, F&& f) const {
    anti_affinity_terms_.for_each(labels, f);
  }

 private:
  ClusterSnapshot() = default;
  struct TopologyKey {
    std::vector<int> node_domain;
    std::vector<std::string> names;
  };
  const TopologyKey& topology(const model::InternedString& key) const;

  std::vector<NodeInfo> nodes_;
  std::vector<BasicResources> allocatable_basic_;
  std::vector<BasicResources> used_basic_;
  std::unordered_map<std::string_view, int> by_name_;
  VolumeRequirements volumes_;
  size_t pod_count_ = 0;
  std::vector<PlacedPod> anti_affinity_pods_;
  AntiAffinityTerms anti_affinity_terms_;
  // Lazily built indexes; a snapshot may be read from one planner thread at a time, but the
  // mutex keeps concurrent readers safe too.
  mutable std::mutex lazy_mutex_;
  mutable std::unordered_map<model::InternedString, std::unique_ptr<TopologyKey>> topology_;
  mutable std::unordered_map<model::InternedString, std::vector<PlacedPod>> label_index_;
  mutable std::unordered_map<model::InternedString, std::unordered_map<model::InternedString, std::vector<PlacedPod>>> label_value_index_;
  mutable std::optional<std::vector<PlacedPod>> all_pods_;
};

// The snapshot of the last plan, kept for the next. Building one touches every pod (grouping
// them by node, summing their requests, sorting each node's pods): most of a plan's time outside
// placement at a thousand nodes. When the next plan's pods are the same objects as the last's
// (the informers replace an object on every change, so unchanged means the same pointers, in
// the same order) and its volumes the same, the snapshot is kept and takes the new node objects
// (ClusterSnapshot::refresh_nodes), so a node turning Ready or being tainted plans without
// touching a pod. Anything else builds a new one. Not thread-safe: one per planning loop.
class SnapshotCache {
 public:
  // The snapshot for these inputs; valid until the next call.
  const ClusterSnapshot& get(const std::vector<NodePtr>& nodes, const std::vector<PodPtr>& pods, const VolumeRequirements& volumes);
  int builds() const { return builds_; }
  int reuses() const { return reuses_; }

 private:
  std::optional<ClusterSnapshot> snapshot_;
  std::vector<PodPtr> pods_;  // the pods it was built from, as given
  int builds_ = 0, reuses_ = 0;
};

}  // namespace spotshift::sched
