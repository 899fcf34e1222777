// The filters that look at one node at a time: NodeUnschedulable, NodeConditions, NodeName,
// TaintToleration, NodeAffinity, VolumeZone (node-static), NodeResourcesFit and NodePorts.

#include "sched/plugins.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <string>

namespace spotshift::sched {

namespace {

using model::ConditionStatus;

class NodeUnschedulable final : public FilterPlugin {
 public:
  NodeUnschedulable() : FilterPlugin(kNodeStatic) {}
  std::string_view name() const override { return "NodeUnschedulable"; }
  Status filter(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, int n) const override {
    const model::Node& node = *fork.base().node(n).node;
    if (!node.unschedulable) return Status::success();
    static const model::Taint kTaint{model::InternedString("node.kubernetes.io/unschedulable"), {}, model::TaintEffect::kNoSchedule};
    if (model::tolerated(pod.tolerations, kTaint)) return Status::success();
    return Status::unresolvable("node(s) were unschedulable");
  }
};

// Ready, and free of the pressure conditions the kubelet would reject the pod for (memory
// pressure only turns away BestEffort pods, as the kubelet's eviction manager does).
class NodeConditions final : public FilterPlugin {
 public:
  NodeConditions() : FilterPlugin(kNodeStatic) {}
  std::string_view name() const override { return "NodeConditions"; }
  Status filter(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, int n) const override {
    const auto& c = fork.base().node(n).node->conditions;
    if (c.ready != ConditionStatus::kTrue) return Status::unresolvable("node(s) were not ready");
    if (c.network_unavailable == ConditionStatus::kTrue) return Status::unresolvable("node(s) had unavailable network");
    if (c.disk_pressure == ConditionStatus::kTrue) return Status::unresolvable("node(s) had disk pressure");
    if (c.pid_pressure == ConditionStatus::kTrue) return Status::unresolvable("node(s) had PID pressure");
    if (c.memory_pressure == ConditionStatus::kTrue && pod.best_effort) return Status::unresolvable("node(s) had memory pressure");
    return Status::success();
  }
};

class NodeName final : public FilterPlugin, public PreFilter {
 public:
  NodeName() : FilterPlugin(kNodeStatic) {}
  std::string_view name() const override { return "NodeName"; }
  PreFilterResult pre_filter(CycleState&, size_t, const model::Pod& pod, const Fork&) const override {
    return run_if(!pod.node_name.empty());
  }
  Status filter(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, int n) const override {
    if (pod.node_name.empty() || pod.node_name.view() == fork.base().node(n).name) return Status::success();
    return Status::unresolvable("node(s) didn't match the requested node name");
  }
};

class TaintToleration final : public FilterPlugin {
 public:
  TaintToleration() : FilterPlugin(kNodeStatic) {}
  std::string_view name() const override { return "TaintToleration"; }
  Status filter(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, int n) const override {
    const model::Taint* t = untolerated_taint(pod, *fork.base().node(n).node);
    if (!t) return Status::success();
    return Status::unresolvable(fmt::format("node(s) had untolerated taint {{{}: {}}}", t->key.view(), t->value.view()));
  }
};

class NodeAffinity final : public FilterPlugin, public PreFilter {
 public:
  NodeAffinity() : FilterPlugin(kNodeStatic) {}
  std::string_view name() const override { return "NodeAffinity"; }
  PreFilterResult pre_filter(CycleState&, size_t, const model::Pod& pod, const Fork&) const override {
    return run_if(!pod.node_selector.empty() || (pod.affinity && pod.affinity->node_required));
  }
  Status filter(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, int n) const override {
    if (matches_node_affinity(pod, *fork.base().node(n).node)) return Status::success();
    return Status::unresolvable("node(s) didn't match Pod's node affinity/selector");
  }
};

class VolumeZone final : public FilterPlugin, public PreFilter {
 public:
  VolumeZone() : FilterPlugin(kNodeStatic) {}
  std::string_view name() const override { return "VolumeZone"; }
  PreFilterResult pre_filter(CycleState&, size_t, const model::Pod& pod, const Fork&) const override {
    return run_if(!pod.pvc_claims.empty());
  }
  Status filter(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, int n) const override {
    const auto& volumes = fork.base().volumes();
    if (volumes.empty()) return Status::success();
    const model::Node& node = *fork.base().node(n).node;
    for (const auto& claim : pod.pvc_claims) {
      auto it = volumes.find(fmt::format("{}/{}", pod.meta.namespace_.view(), claim.view()));
      if (it == volumes.end()) continue;  // not cached: nothing known to check
      for (const auto& [key, value] : it->second) {
        auto have = node.meta.labels.get(key);
        if (!have || have->view() != value) return Status::unresolvable("node(s) had volume node affinity conflict");
      }
    }
    return Status::success();
  }
};

// Whether want more fits, 0 or 1 (an integer, for fits_basic to combine without branches).
// Requests and usage saturate at the int64 limits, so the sum may overflow: then it is beyond
// every allocatable amount, above when want is positive and below when it is negative (the
// overflow flag costs less than a sum in 128 bits, and this runs four times per node).
unsigned fits(int64_t used, int64_t want, int64_t allocatable) {
  int64_t sum;
  const bool overflow = __builtin_add_overflow(used, want, &sum);
  return overflow ? want < 0 : sum <= allocatable;
}

// NodeResourcesFit's verdict on the four basic resources: room for one more pod, and for each
// resource the pod requests (an overcommitted node still takes a pod that asks for none of the
// exceeded resource, as in kube-scheduler). Branch-free: it runs per node in the batch loop.
// The pod's requests come as a copy (BasicResources::of), which the batch loop keeps in
// registers: read from the pod, they would be read again after every write to memory.
bool fits_basic(const BasicResources& used, const BasicResources& a, const BasicResources want) {
  unsigned ok = fits(used.pods, 1, a.pods);
  ok &= (want.cpu_milli == 0) | fits(used.cpu_milli, want.cpu_milli, a.cpu_milli);
  ok &= (want.memory == 0) | fits(used.memory, want.memory, a.memory);
  ok &= (want.ephemeral_storage == 0) | fits(used.ephemeral_storage, want.ephemeral_storage, a.ephemeral_storage);
  return ok != 0;
}

class NodeResourcesFit final : public FilterPlugin, public FilterNodes, public ExplainNodes {
 public:
  std::string_view name() const override { return "NodeResourcesFit"; }
  // filter()'s reasons counted over the nodes, each reason composed once.
  void explain_nodes(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, std::vector<int>& nodes, Count count,
                     void* context) const override {
    const model::ResourceList& r = pod.requests;
    thread_local std::vector<int> short_on;  // nodes, per each_short() index
    short_on.assign(kBasic + r.scalars().size(), 0);
    int* shorts = short_on.data();  // not the thread-local itself, looked up again per node
    size_t kept = 0;
    for (int n : nodes) {
      bool ok = true;
      each_short(fork, n, r, [&](size_t k) {
        ++shorts[k];
        ok = false;
      });
      if (ok) nodes[kept++] = n;
    }
    nodes.resize(kept);
    for (size_t k = 0; k < short_on.size(); ++k)
      if (short_on[k] > 0) count(context, reason(r, k), short_on[k]);
  }
  void filter_nodes(const CycleState& state, size_t, const model::Pod& pod, const Fork& fork, std::vector<int>& nodes) const override {
    // filter()'s verdict without a Status, in one pass over the packed arrays.
    const model::ResourceList& r = pod.requests;
    const ClusterSnapshot& snap = fork.base();
    const auto& scalars = r.scalars();
    size_t kept = 0;
    // The free amount of one extended resource comes from the same walk up the forks as the basic
    // usage, and from the tracking fork's packed array where it tracks the resource, rather than
    // from each node's usage and allocatable lists: the resource of the rooms noted for the
    // scores (CycleState::record_rooms), or else a GPU pod's one resource. Amounts are not
    // negative, so free = allocatable - used is exact and want <= free is fits().
    std::vector<Room>* rooms = state.room_record(fork);
    const bool one = scalars.size() == 1 && scalars[0].second > 0;
    const model::InternedString& walked = rooms ? state.recorded_resource() : one ? scalars[0].first : kNoResource;
    const BasicResources want = BasicResources::of(r);
    if (rooms || one) {
      const bool from_walk = one && scalars[0].first == walked;  // the pod's resource, read in the walk
      const bool no_scalars = scalars.empty();
      const int64_t want_walked = from_walk ? scalars[0].second : 0;
      // Written through pointers taken once (the list in place, the rooms after those noted
      // already, room made for every node and cut to those kept at the end), so that the writes
      // make the compiler load nothing again.
      int* out = nodes.data();
      Room* room = nullptr;
      const size_t noted = rooms ? rooms->size() : 0;
      if (rooms) {
        rooms->resize(noted + nodes.size());
        room = rooms->data() + noted;
      }
      const BasicResources* allocatable = snap.allocatable_basic().data();
      fork.for_each_use(nodes, walked, [&](size_t k, const Fork::Use& u) {
        const int n = out[k];
        const BasicResources& a = allocatable[n];
        if (!fits_basic(u.used, a, want) || !(from_walk ? want_walked <= u.free_resource : no_scalars || fits_scalars(fork, n, r))) return;
        if (room) room[kept] = Room::of(a, u.used, u.free_resource);
        out[kept++] = n;
      });
      if (rooms) rooms->resize(noted + kept);
    } else {
      for (int n : nodes)
        if (fits_basic(fork.used_basic(n), snap.allocatable_basic(n), want) && (scalars.empty() || fits_scalars(fork, n, r)))
          nodes[kept++] = n;
    }
    nodes.resize(kept);
  }
  bool passes(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, int n) const override {
    const model::ResourceList& r = pod.requests;
    return fits_basic(fork.used_basic(n), fork.base().allocatable_basic(n), BasicResources::of(r)) &&
           (r.scalars().empty() || fits_scalars(fork, n, r));
  }
  Status filter(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork, int n) const override {
    if (passes(state, slot, pod, fork, n)) return Status::success();
    Status s;
    each_short(fork, n, pod.requests, [&](size_t k) { s.reasons.add(reason(pod.requests, k)); });
    if (!s.reasons.empty()) s.code = Code::kUnschedulable;
    return s;
  }

 private:
  // What a node lacks for the pod, in filter()'s order: on_short(k) for each resource, k an index
  // into kBasicReasons, or kBasic + j for the pod's j-th extended resource.
  static inline const model::InternedString kNoResource{};  // Fork::use_of() with no extended resource
  static constexpr size_t kBasic = 4;
  static constexpr const char* kBasicReasons[kBasic] = {"Too many pods", "Insufficient cpu", "Insufficient memory",
                                                        "Insufficient ephemeral-storage"};
  // The free amount of a pod's one extended resource comes from the same walk up the forks as
  // the basic usage, as in filter_nodes() (want <= free is fits(): amounts are not negative).
  template <class F>
  static void each_short(const Fork& fork, int n, const model::ResourceList& r, F&& on_short) {
    const auto& scalars = r.scalars();
    const bool one = scalars.size() == 1;
    const Fork::Use u = fork.use_of(n, one ? scalars[0].first : kNoResource);
    const BasicResources& used = u.used;
    const BasicResources& a = fork.base().allocatable_basic(n);
    if (!fits(used.pods, 1, a.pods)) on_short(0);
    if (r.cpu_milli && !fits(used.cpu_milli, r.cpu_milli, a.cpu_milli)) on_short(1);
    if (r.memory && !fits(used.memory, r.memory, a.memory)) on_short(2);
    if (r.ephemeral_storage && !fits(used.ephemeral_storage, r.ephemeral_storage, a.ephemeral_storage)) on_short(3);
    if (one) {
      if (scalars[0].second > 0 && scalars[0].second > u.free_resource) on_short(kBasic);
      return;
    }
    for (size_t j = 0; j < scalars.size(); ++j) {
      const auto& [name, want] = scalars[j];
      if (want > 0 && !fits(fork.used(n).scalar(name), want, fork.base().node(n).allocatable.scalar(name))) on_short(kBasic + j);
    }
  }
  static const char* reason(const model::ResourceList& r, size_t k) {
    return k < kBasic ? kBasicReasons[k] : insufficient(r.scalars()[k - kBasic].first.view());
  }
  // "Insufficient <resource>", composed once per resource name and kept for the process's life
  // (a cluster has a handful of extended resources), so that explaining a pod that fits nowhere
  // does not compose it again for every node.
  static const char* insufficient(std::string_view resource) {
    static std::mutex mutex;
    static std::map<std::string, std::string, std::less<>> composed;
    std::lock_guard lock(mutex);
    auto it = composed.find(resource);
    if (it == composed.end()) it = composed.emplace(std::string(resource), fmt::format("Insufficient {}", resource)).first;
    return it->second.c_str();
  }
  static bool fits_scalars(const Fork& fork, int n, const model::ResourceList& r) {
    const Usage& used = fork.used(n);
    const model::ResourceList& a = fork.base().node(n).allocatable;
    for (const auto& [name, want] : r.scalars())
      if (want > 0 && !fits(used.scalar(name), want, a.scalar(name))) return false;
    return true;
  }
};

bool ports_conflict(const model::HostPort& a, const model::HostPort& b) {
  if (a.port != b.port || a.protocol != b.protocol) return false;
  return a.host_ip.empty() || b.host_ip.empty() || a.host_ip == b.host_ip;  // 0.0.0.0 overlaps every address
}

class NodePorts final : public FilterPlugin, public PreFilter {
 public:
  std::string_view name() const override { return "NodePorts"; }
  PreFilterResult pre_filter(CycleState&, size_t, const model::Pod& pod, const Fork&) const override {
    return run_if(!pod.host_ports.empty());
  }
  Status filter(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, int n) const override {
    bool conflict = false;
    fork.for_each_pod(n, [&](const model::Pod& other) {
      for (const auto& mine : pod.host_ports)
        for (const auto& theirs : other.host_ports)
          if (ports_conflict(mine, theirs)) conflict = true;
    });
    if (conflict) return Status::unschedulable("node(s) didn't have free ports for the requested pod ports");
    return Status::success();
  }
};

}  // namespace

void add_basic_filters(Registry& r) {
  r.filters.push_back({"NodeUnschedulable", filter<NodeUnschedulable>});
  r.filters.push_back({"NodeConditions", filter<NodeConditions>});
  r.filters.push_back({"NodeName", filter<NodeName>});
  r.filters.push_back({"TaintToleration", filter<TaintToleration>});
  r.filters.push_back({"NodeAffinity", filter<NodeAffinity>});
  r.filters.push_back({"VolumeZone", filter<VolumeZone>});
  r.filters.push_back({"NodeResourcesFit", filter<NodeResourcesFit>});
  r.filters.push_back({"NodePorts", filter<NodePorts>});
}

}  // namespace spotshift::sched
