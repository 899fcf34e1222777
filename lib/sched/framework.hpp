#pragma once
// The predicate engine, modelled on the kube-scheduler framework: one small interface per
// extension point (filter, score), a Status that tells "does not fit" from "broken", scores of
// 0-100 after a normalisation pass, weights from a profile, a per-pod scratchpad, and explicit
// plugin registration (registry.cpp). No I/O.

#include "core/error.hpp"
#include "model/json.hpp"
#include "sched/fork.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace spotshift::sched {

enum class Code : uint8_t { kSuccess, kUnschedulable, kUnschedulableAndUnresolvable, kError };

// Why a filter rejected a node, in kube-scheduler's words ("Insufficient cpu"). Filters reject
// most nodes in a placement's hot loop, so string literals are kept as views, without allocating;
// only composed reasons (naming a taint or a resource) own their text.
class Reasons {
 public:
  // `literal` must have static storage (a string literal): it is kept as a view.
  void add(const char* literal) {
    if (fixed_count_ < kInline) fixed_[fixed_count_++] = literal;
    else owned_.emplace_back(literal);
  }
  void add(std::string composed) { owned_.push_back(std::move(composed)); }
  size_t size() const { return fixed_count_ + owned_.size(); }
  bool empty() const { return size() == 0; }
  // Literal reasons first, then composed ones, each in the order added.
  std::string_view at(size_t i) const {
    if (i < fixed_count_) return fixed_[i];
    return owned_.at(i - fixed_count_);
  }
  std::string_view operator[](size_t i) const { return at(i); }

 private:
  static constexpr size_t kInline = 4;
  std::string_view fixed_[kInline];
  size_t fixed_count_ = 0;
  std::vector<std::string> owned_;
};

struct Status {
  Code code = Code::kSuccess;
  Reasons reasons;

  static Status success() { return {}; }
  template <class R>
  static Status unschedulable(R&& reason) {
    return with(Code::kUnschedulable, std::forward<R>(reason));
  }
  template <class R>
  static Status unresolvable(R&& reason) {
    return with(Code::kUnschedulableAndUnresolvable, std::forward<R>(reason));
  }
  template <class R>
  static Status error(R&& reason) {
    return with(Code::kError, std::forward<R>(reason));
  }
  bool ok() const { return code == Code::kSuccess; }

 private:
  template <class R>
  static Status with(Code code, R&& reason) {
    Status s;
    s.code = code;
    if constexpr (std::is_convertible_v<R, const char*>) s.reasons.add(static_cast<const char*>(reason));
    else s.reasons.add(std::string(std::forward<R>(reason)));
    return s;
  }
};

// Per-pod scratch data a plugin computes in its pre-filter and reads in its filter.
struct PluginState {
  virtual ~PluginState() = default;
};

class Demand;
class PlacementCache;

class CycleState {
 public:
  CycleState() = default;
  explicit CycleState(PlacementCache* cache) : cache_(cache) {}

  void put(size_t slot, std::unique_ptr<PluginState> s) {
    if (slots_.size() <= slot) slots_.resize(slot + 1);
    slots_[slot] = std::move(s);
  }
  template <class T>
  const T* get(size_t slot) const {
    return slot < slots_.size() ? static_cast<const T*>(slots_[slot].get()) : nullptr;
  }

  // What is still to be placed, which the packing scores read: the placement cache's, or
  // without a cache the snapshot's pods, built into this state. A plugin resolves it in its
  // pre-score; demand() is what it resolved.
  const Demand& resolve_demand(const Fork& fork);
  const Demand* demand() const { return demand_; }

  // What each node has free in the fork (Fork::room_of(), with `resource`). For the list of
  // nodes the framework is scoring (share_rooms()), read once for every score that asks (the
  // packing scores); for any other list, afresh.
  const std::vector<Room>& rooms(const Fork& fork, const std::vector<int>& nodes, const model::InternedString& resource) const;
  // The list the framework scores next, in this fork, unchanged until the next call (nullptr: none).
  void share_rooms(const Fork* fork, const std::vector<int>* nodes) const {
    shared_ = {fork, nodes};
    shared_filled_ = false;
  }
  bool shares_rooms(const Fork* fork, const std::vector<int>* nodes) const { return shared_ == std::pair{fork, nodes}; }
  // The shared rooms of these nodes when they have been read (of whichever resource), else nullptr:
  // for a score that reads only the basic resources.
  const std::vector<Room>* rooms_if_read(const Fork& fork, const std::vector<int>& nodes) const {
    return shared_filled_ && shares_rooms(&fork, &nodes) ? &shared_rooms_ : nullptr;
  }
  // A filter that reads the nodes' usage anyway (NodeResourcesFit) may note the rooms of those
  // it keeps, in order, while the framework asks for them (record_rooms(), for the fork it
  // filters in): the framework then shares them for `nodes`, the list the filter left, when
  // they are as many (adopt_rooms()), and otherwise drops them. The resource to note is
  // recorded_resource().
  void record_rooms(const Fork* fork, const model::InternedString& resource) {
    recording_ = fork;
    recorded_.clear();
    recorded_resource_ = resource;
  }
  std::vector<Room>* room_record(const Fork& fork) const { return recording_ == &fork ? &recorded_ : nullptr; }
  const model::InternedString& recorded_resource() const { return recorded_resource_; }
  void adopt_rooms(const std::vector<int>* nodes) {
    const Fork* fork = recording_;
    recording_ = nullptr;
    if (!fork || recorded_.size() != nodes->size()) return;
    shared_ = {fork, nodes};
    shared_rooms_.swap(recorded_);
    shared_resource_ = recorded_resource_;
    shared_filled_ = true;
  }

 private:
  std::vector<std::unique_ptr<PluginState>> slots_;
  PlacementCache* cache_ = nullptr;
  const Demand* demand_ = nullptr;
  std::shared_ptr<const Demand> owned_demand_;
  mutable std::pair<const Fork*, const std::vector<int>*> shared_{nullptr, nullptr};
  mutable model::InternedString shared_resource_;
  mutable bool shared_filled_ = false;
  mutable std::vector<Room> shared_rooms_, rooms_;
  const Fork* recording_ = nullptr;
  mutable std::vector<Room> recorded_;
  model::InternedString recorded_resource_;
};

// ---- plugins -------------------------------------------------------------------------------
// A plugin implements its extension point's one method. What some plugins need beyond that is
// an optional interface, as kube-scheduler's PreFilter, PreScore and ScoreExtensions: a plugin
// class also derives from it, and the framework finds it once when it builds a profile.

class FilterPlugin {
 public:
  virtual ~FilterPlugin() = default;
  virtual std::string_view name() const = 0;
  virtual Status filter(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork, int node) const = 0;
  // filter()'s verdict alone, for callers that need no reasons; a plugin whose reasons cost
  // something to compose answers without them.
  virtual bool passes(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork, int node) const {
    return filter(state, slot, pod, fork, node).ok();
  }
  // The verdict depends only on the pod and the node's labels, taints and conditions, never on
  // what runs there: it is computed once per pod signature and cached.
  bool node_static() const { return node_static_; }
  // filter() on each node, keeping those that pass: what the framework does for a plugin without
  // FilterNodes, and what a FilterNodes plugin falls back to.
  void filter_each(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork, std::vector<int>& nodes) const;

 protected:
  static constexpr bool kNodeStatic = true;
  explicit FilterPlugin(bool node_static = false) : node_static_(node_static) {}

 private:
  bool node_static_;
};

class ScorePlugin {
 public:
  virtual ~ScorePlugin() = default;
  virtual std::string_view name() const = 0;
  virtual int64_t score(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork, int node) const = 0;
};

// Optional, for a filter: runs once per pod before the filter sees any node. kSkip says the
// plugin cannot reject this pod in this what-if (a pod without host ports never fails
// NodePorts), and its filter is not called for the pod; otherwise it may leave scratch data
// in the state's slot for filter().
enum class PreFilterResult : uint8_t { kRun, kSkip };
class PreFilter {
 public:
  virtual ~PreFilter() = default;
  virtual PreFilterResult pre_filter(CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork) const = 0;
};

// Optional, for a filter: keeps, in order, the nodes it accepts, in a loop that builds no
// Status (the placement's hot loop).
class FilterNodes {
 public:
  virtual ~FilterNodes() = default;
  virtual void filter_nodes(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork,
                            std::vector<int>& nodes) const = 0;
};

// Optional, for a filter whose every rejection is kUnschedulable: why it rejects each of many
// nodes, for the summary of a pod that fits nowhere, without a Status per node. Keeps, in order,
// the nodes it accepts, and for the others counts filter()'s reasons with count(reason, nodes).
class ExplainNodes {
 public:
  virtual ~ExplainNodes() = default;
  using Count = void (*)(void* context, std::string_view reason, int nodes);
  virtual void explain_nodes(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork, std::vector<int>& nodes,
                             Count count, void* context) const = 0;
};

// Optional, for a score: runs once per pod before any node is scored. kUniform says every node
// gets the same raw score for this pod (Fragmentation with nothing scarce to keep): the
// framework then scores one node instead of each.
enum class PreScoreResult : uint8_t { kScoreEach, kUniform };
class PreScore {
 public:
  virtual ~PreScore() = default;
  virtual PreScoreResult pre_score(CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork) const = 0;
};

// Optional, for a score: raw scores for many nodes at once (out has nodes.size() entries).
class ScoreNodes {
 public:
  virtual ~ScoreNodes() = default;
  virtual void score_nodes(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork, const std::vector<int>& nodes,
                           std::vector<int64_t>& out) const = 0;
  // Whether score_nodes() reads CycleState::rooms() of the demand's resource.
  virtual bool reads_rooms() const { return false; }
};

// Optional, for a score (kube-scheduler's NormalizeScore): maps the raw scores of every feasible
// node to 0..100; without it a raw score is clamped to 0..100. The result keeps its fraction:
// rounding to kube-scheduler's integer scores would make nodes that differ by a whole CPU tie
// (100 buckets over a range of 96 cores), and ties go by name, not by score.
class NormalizeScore {
 public:
  virtual ~NormalizeScore() = default;
  virtual void normalize(const std::vector<int64_t>& raw, std::vector<double>& out) const = 0;
};

// Optional, for a score: the best node for any pod is the one with the least free CPU (then the
// lowest index), as FreeCPU fullest first scores. The framework can then walk the nodes in that
// order and stop at the first that passes every filter, without scoring any.
class FullestFirst {
 public:
  virtual ~FullestFirst() = default;
};

// Optional, for a score whose normalisation gives the lowest raw score 100 (scale_lower_better):
// the lowest raw score any node can get for this pod, when it is known without scoring one
// (nullopt otherwise). A node that gets it has this score's best normalised value whatever the
// other nodes get, so the fullest-first walk can stop at the first feasible node that does.
class LowestScore {
 public:
  virtual ~LowestScore() = default;
  virtual std::optional<int64_t> lowest(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork) const = 0;
  // When lowest() is known: a number no raw score of the pod on a node `top` tracks reaches, as
  // `fork` (top or a direct fork of it) has them; nullopt when there is none. It may be kept from
  // an earlier placement while it still holds (`kept`), and then be looser than one computed
  // now, which `fresh` asks for.
  struct Highest {
    double value = 0;
    bool kept = false;
  };
  virtual std::optional<Highest> highest(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork, const Fork& top,
                                         bool fresh) const = 0;
  // The pod's raw score on node n when it is below `bound`, nullopt when it is not: the walk
  // needs the score only of the nodes that score below every fuller one, and a score may tell
  // that for less than the score costs.
  virtual std::optional<int64_t> score_if_below(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork, int n,
                                                int64_t bound) const = 0;
  // score_if_below() for nodes[0], nodes[1], ... up to the first whose score is below `bound`:
  // its place in the list and score, or place `count` when none is. The walk asks this for a
  // run of nodes it knows to be feasible, which a score may answer for less than a call each.
  struct Below {
    size_t at = 0;
    int64_t score = 0;
  };
  virtual Below first_below(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork, const int* nodes, size_t count,
                            int64_t bound) const;
};

// A profile: which filters run, in order, and which scores with which weights and arguments, in
// the spirit of Knative's predicates and priorities configuration.
struct ScoreConfig {
  std::string name;
  int weight = 1;
  std::map<std::string, std::string> args;
  bool operator==(const ScoreConfig&) const = default;
};
struct ProfileConfig {
  std::vector<std::string> filters;
  std::vector<ScoreConfig> scores;
  bool operator==(const ProfileConfig&) const = default;
};

// Every default filter, scored by Fragmentation (weight 100: keep the scarce extended resource,
// GPUs, usable) and then FreeCPU (weight 1: the fullest spot node first). Without extended
// resources, Fragmentation scores every node alike and FreeCPU alone decides.
ProfileConfig default_profile();
// Reads a ReschedulePolicy's spec.profile: {filters: [..], scores: [{name, weight, args}]}; an
// absent list keeps the default. Errors name the field.
//
// The profile object r is at, with errors on d's path; nothing for null (and for an error, which
// d holds).
std::optional<ProfileConfig> decode_profile(model::JsonDecoder& d, model::JsonReader& r);
// The profile object of json, with errors that start with path.
Result<ProfileConfig> decode_profile(std::string_view json, std::string_view path = "spec.profile");

std::vector<std::string> filter_plugin_names();
std::vector<std::string> score_plugin_names();

// Why a pod fits nowhere: how many nodes gave each reason.
struct Diagnosis {
  int nodes = 0;
  std::map<std::string, int> reasons;
  bool unresolvable = false;  // every failure is one preemption or moves cannot fix
  // "0/37 nodes are available: 20 Insufficient cpu, 17 node(s) had untolerated taint {dedicated: gpu}."
  std::string message() const;
};

// Caches node-static filter verdicts per pod signature for one snapshot: pods of one workload
// share tolerations and affinity, so their static verdicts are computed once.
class PlacementCache {
 public:
  explicit PlacementCache(const ClusterSnapshot& snapshot) : snapshot_(&snapshot) {}
  // How Framework::place_on_tracked found each node: at the fullest feasible node, at the
  // fullest one past it that a bound proves best, or by scoring every feasible node.
  struct Counts {
    int64_t fullest = 0, bounded = 0, scored = 0;
    int64_t replayed = 0;    // walks (fullest or bounded) that began from an earlier walk's nodes
    int64_t enough_cpu = 0;  // scored placements that looked only at the nodes with enough CPU free
  };
  const Counts& counts() const { return counts_; }
  const ClusterSnapshot* snapshot() const { return snapshot_; }
  // The demand the packing scores see (the caller keeps it alive and current). Without one,
  // the snapshot's pods are the demand, built once on first use.
  void set_demand(const Demand* demand) { demand_ = demand; }

 private:
  friend class Framework;
  friend class CycleState;
  const Demand& demand();
  const ClusterSnapshot* snapshot_;
  const Demand* demand_ = nullptr;
  std::shared_ptr<const Demand> snapshot_demand_;
  Counts counts_;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // signature -> per node: 0 passes, else 1 + index of the first failing static filter
  std::unordered_map<std::string, std::vector<uint8_t>, Hash, std::equal_to<>> static_verdicts_;
  // Where place_fullest()'s last walk for a pod went, by what the walk's feasibility depends on
  // (the pod's static verdicts, the dynamic filters it runs, its cpu, memory and
  // ephemeral-storage requests): the feasible nodes it passed before the node it stopped at, in
  // walk order with their free CPU, and what the tracking fork and its child looked like. The
  // next pod of the same kind visits those of them nothing changed since without filtering them
  // again, then walks on from that node.
  struct Walk {
    const Fork* top = nullptr;
    uint64_t tracking_version = 0;
    size_t changes_seen = 0;         // of top->tracked_changes()
    std::vector<int> child_changed;  // the tracked nodes the child fork had changed
    struct Visit {
      int64_t cpu;  // free
      int node;
      bool feasible;  // known to be: every node here; in a walk's replay, those unchanged since
    };
    std::vector<Visit> before;           // the feasible nodes before the one it stopped at, in order
    std::pair<int64_t, int> end{0, -1};  // (free CPU, node) of the node it stopped at
  };
  std::map<std::tuple<const void*, uint64_t, int64_t, int64_t, int64_t>, Walk> walks_;  // (verdicts, dynamic filters, requests)
};

struct Placement {
  int node = -1;  // -1: nowhere
  double score = 0;
  std::vector<int> feasible;  // every node that passed the filters
  Diagnosis diagnosis;        // filled when node is -1
};

class Framework {
 public:
  static Result<Framework> create(const ProfileConfig& config);
  Framework(Framework&&) noexcept;
  Framework& operator=(Framework&&) noexcept;
  ~Framework();

  // Runs the filters on each candidate node (snapshot indexes), scores the feasible ones and
  // picks the highest weighted score; ties go to the node first by name. A pod's spec.nodeName
  // is a constraint (NodeName): to ask where a running pod would go if its controller recreated
  // it, pass a copy with node_name cleared.
  Placement place(const model::Pod& pod, const Fork& fork, const std::vector<int>& candidates, PlacementCache* cache = nullptr) const;
  // place() over the nodes the fork, or the fork it was forked from, tracks
  // (Fork::track_candidates). When FreeCPU fullest first is weighted and every other weighted
  // score either scores every node alike for this pod or knows its lowest raw score for it
  // (LowestScore), it visits the tracked nodes from the least free CPU up to the first that
  // passes every filter. When that node gets every such lowest score, it is the node and score
  // place() would give (the best value of every score), found without `feasible`. Otherwise it
  // is place(); a pod that fits nowhere gets place()'s diagnosis over every tracked node.
  Placement place_on_tracked(const model::Pod& pod, const Fork& fork, PlacementCache& cache) const;
  // The candidates the pod passes the node-static filters on (taints, node affinity and
  // selector, ...): where it could go whatever else is placed. Verdicts come from the cache.
  std::vector<int> statically_feasible(const model::Pod& pod, const Fork& fork, const std::vector<int>& candidates,
                                       PlacementCache& cache) const;
  // Every filter's verdict on one node, for explanations and tests.
  std::vector<std::pair<std::string, Status>> check(const model::Pod& pod, const Fork& fork, int node) const;
  // The weighted score of one node among a set (normalisation needs the set).
  std::vector<double> scores(const model::Pod& pod, const Fork& fork, const std::vector<int>& nodes) const;

  const ProfileConfig& config() const { return config_; }

  // Writes into `out` (cleared first) everything a node-static filter reads from the pod: pods
  // with equal signatures get equal node-static verdicts on every node.
  // Without the node name, it stands for the pod as if unbound (where its controller would
  // see a replica scheduled).
  static void signature(const model::Pod& pod, std::string& out, bool with_node_name = true);

 private:
  Framework() = default;
  // The filters relevant to the pod, pre-filtered, as bit sets over filters_.
  void prepare(CycleState& state, const model::Pod& pod, const Fork& fork, uint64_t& statics, uint64_t& dynamics) const;
  // The cached node-static verdicts for the pod's signature (computed on first use).
  const std::vector<uint8_t>& static_verdicts(const CycleState& state, const model::Pod& pod, const Fork& fork, uint64_t statics,
                                              PlacementCache& cache) const;
  // Appends the candidates passing the node-static filters to `out`: the cache's verdicts when
  // it is this snapshot's, otherwise filter by filter.
  void filter_static(const CycleState& state, const model::Pod& pod, const Fork& fork, uint64_t statics, const std::vector<int>& candidates,
                     PlacementCache* cache, std::vector<int>& out) const;
  // Why the pod fits on none of the candidates, as place() says it (Placement::diagnosis).
  void explain(const CycleState& state, const model::Pod& pod, const Fork& fork, uint64_t statics, uint64_t dynamics,
               const std::vector<int>& candidates, PlacementCache* cache, Diagnosis& out) const;
  // place() over candidates none of which is known to pass the filters: the diagnosis alone,
  // without a pass of the filters to find that out again.
  Placement nowhere(const model::Pod& pod, const Fork& fork, const std::vector<int>& candidates, PlacementCache* cache) const;
  std::optional<Placement> place_fullest(const model::Pod& pod, const Fork& fork, const Fork& top, PlacementCache& cache) const;
  // Runs each weighted score's pre-score; returns the set (bits over scores_) of those that
  // score every node alike for this pod.
  uint64_t pre_score(CycleState& state, const model::Pod& pod, const Fork& fork) const;
  // Adds each weighted score's normalised value on `nodes` to `total` (nodes.size() entries),
  // in profile order; a uniform score adds its value on the first node, normalised alone.
  void add_scores(const CycleState& state, const model::Pod& pod, const Fork& fork, uint64_t uniform, const std::vector<int>& nodes,
                  std::vector<double>& total) const;

  struct Filter {
    std::unique_ptr<FilterPlugin> plugin;
    const PreFilter* pre = nullptr;
    const FilterNodes* many = nullptr;
    const ExplainNodes* explain = nullptr;
  };
  struct Score {
    std::unique_ptr<ScorePlugin> plugin;
    int weight = 1;
    const PreScore* pre = nullptr;
    const ScoreNodes* many = nullptr;
    const NormalizeScore* normalize = nullptr;
    const LowestScore* lowest = nullptr;
    // The raw scores of `nodes` into raw, normalised into out.
    void normalized(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork, const std::vector<int>& nodes,
                    std::vector<int64_t>& raw, std::vector<double>& out) const;
  };
  ProfileConfig config_;
  std::vector<Filter> filters_;
  std::vector<Score> scores_;
  int fullest_score_ = -1;        // index in scores_ of a weighted FullestFirst score
  int resource_fit_filter_ = -1;  // index in filters_ of NodeResourcesFit, when it is one of them
  bool rooms_read_ = false;       // a weighted score reads CycleState::rooms()
};

// Every plugin is created by name from the registry (registry.cpp), its arguments validated.
Result<std::unique_ptr<FilterPlugin>> make_filter(const std::string& name);
Result<std::unique_ptr<ScorePlugin>> make_score(const ScoreConfig& config);

}  // namespace spotshift::sched
