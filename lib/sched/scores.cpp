// Scores: LeastAllocated, MostAllocated, BalancedAllocation (cpu and memory, after placing the
// pod), TaintToleration (PreferNoSchedule taints), NodeAffinity (preferred terms) and FreeCPU.

#include "sched/plugins.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace spotshift::sched {

namespace {

double fraction(int64_t used, int64_t want, int64_t alloc) {
  if (alloc <= 0) return 1.0;
  return std::min(1.0, static_cast<double>(used + want) / static_cast<double>(alloc));
}

class LeastAllocated final : public ScorePlugin {
 public:
  std::string_view name() const override { return "LeastAllocated"; }
  int64_t score(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, int n) const override {
    const auto& a = fork.base().allocatable_basic(n);
    const auto u = fork.used_basic(n);
    double cpu = 1.0 - fraction(u.cpu_milli, pod.requests.cpu_milli, a.cpu_milli);
    double mem = 1.0 - fraction(u.memory, pod.requests.memory, a.memory);
    return static_cast<int64_t>((cpu + mem) * 50.0);
  }
};

class MostAllocated final : public ScorePlugin {
 public:
  std::string_view name() const override { return "MostAllocated"; }
  int64_t score(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, int n) const override {
    const auto& a = fork.base().allocatable_basic(n);
    const auto u = fork.used_basic(n);
    return static_cast<int64_t>(
        (fraction(u.cpu_milli, pod.requests.cpu_milli, a.cpu_milli) + fraction(u.memory, pod.requests.memory, a.memory)) * 50.0);
  }
};

class BalancedAllocation final : public ScorePlugin {
 public:
  std::string_view name() const override { return "BalancedAllocation"; }
  int64_t score(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, int n) const override {
    const auto& a = fork.base().allocatable_basic(n);
    const auto u = fork.used_basic(n);
    double cpu = fraction(u.cpu_milli, pod.requests.cpu_milli, a.cpu_milli);
    double mem = fraction(u.memory, pod.requests.memory, a.memory);
    double std_dev = std::fabs(cpu - mem) / 2.0;
    return static_cast<int64_t>((1.0 - std_dev) * 100.0);
  }
};

class TaintTolerationScore final : public ScorePlugin, public NormalizeScore {
 public:
  std::string_view name() const override { return "TaintToleration"; }
  int64_t score(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, int n) const override {
    int64_t count = 0;
    for (const auto& t : fork.base().node(n).node->taints)
      if (t.effect == model::TaintEffect::kPreferNoSchedule && !model::tolerated(pod.tolerations, t)) ++count;
    return count;
  }
  void normalize(const std::vector<int64_t>& raw, std::vector<double>& out) const override {
    int64_t max = raw.empty() ? 0 : *std::max_element(raw.begin(), raw.end());
    for (size_t k = 0; k < raw.size(); ++k)
      out[k] = max == 0 ? 100.0 : 100.0 * static_cast<double>(max - raw[k]) / static_cast<double>(max);
  }
};

class NodeAffinityScore final : public ScorePlugin, public NormalizeScore {
 public:
  std::string_view name() const override { return "NodeAffinity"; }
  int64_t score(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, int n) const override {
    if (!pod.affinity) return 0;
    const model::Node& node = *fork.base().node(n).node;
    int64_t total = 0;
    for (const auto& pref : pod.affinity->node_preferred)
      if (pref.preference.matches(node.meta.labels, node.name())) total += pref.weight;
    return total;
  }
  void normalize(const std::vector<int64_t>& raw, std::vector<double>& out) const override {
    int64_t max = raw.empty() ? 0 : *std::max_element(raw.begin(), raw.end());
    for (size_t k = 0; k < raw.size(); ++k) out[k] = max == 0 ? 0.0 : 100.0 * static_cast<double>(raw[k]) / static_cast<double>(max);
  }
};

// Orders spot nodes by the CPU they would have left after taking the pod. Fullest first (the
// default) packs pods tightly so more on-demand nodes can drain; "emptiest" is the order
// k8s-spot-rescheduler's README documents.
class FreeCPU : public ScorePlugin, public ScoreNodes, public NormalizeScore {
 public:
  std::string_view name() const override { return "FreeCPU"; }
  int64_t score(const CycleState&, size_t, const model::Pod& pod, const Fork& fork, int n) const override { return left(pod, fork, n); }
  // score() for each node without a virtual call per node, from the rooms the packing scores
  // share when they have been read.
  void score_nodes(const CycleState& state, size_t, const model::Pod& pod, const Fork& fork, const std::vector<int>& nodes,
                   std::vector<int64_t>& out) const override {
    if (const std::vector<Room>* rooms = state.rooms_if_read(fork, nodes)) {
      for (size_t k = 0; k < nodes.size(); ++k) out[k] = (*rooms)[k].cpu_milli - pod.requests.cpu_milli;
      return;
    }
    for (size_t k = 0; k < nodes.size(); ++k) out[k] = left(pod, fork, nodes[k]);
  }
  // Emptiest first.
  void normalize(const std::vector<int64_t>& raw, std::vector<double>& out) const override { scale_higher_better(raw, out); }

 private:
  static int64_t left(const model::Pod& pod, const Fork& fork, int n) {
    return fork.base().allocatable_basic(n).cpu_milli - fork.used_basic(n).cpu_milli - pod.requests.cpu_milli;
  }
};

class FreeCPUFullest final : public FreeCPU, public FullestFirst {
 public:
  void normalize(const std::vector<int64_t>& raw, std::vector<double>& out) const override { scale_lower_better(raw, out); }
};

}  // namespace

void add_allocation_scores(Registry& r) {
  r.scores.push_back({"FreeCPU", [](const ScoreConfig& c) -> Result<std::unique_ptr<ScorePlugin>> {
                        bool fullest = true;
                        for (const auto& [k, v] : c.args) {
                          if (k != "order")
                            return Error::invalid(fmt::format("score plugin FreeCPU: unknown arg \"{}\" (valid: order)", k));
                          if (v == "fullest") fullest = true;
                          else if (v == "emptiest") fullest = false;
                          else
                            return Error::invalid(
                                fmt::format("score plugin FreeCPU: args.order must be fullest or emptiest, got \"{}\"", v));
                        }
                        return fullest ? std::unique_ptr<ScorePlugin>(std::make_unique<FreeCPUFullest>()) : std::make_unique<FreeCPU>();
                      }});
  r.scores.push_back({"LeastAllocated", without_args<LeastAllocated>});
  r.scores.push_back({"MostAllocated", without_args<MostAllocated>});
  r.scores.push_back({"BalancedAllocation", without_args<BalancedAllocation>});
  r.scores.push_back({"TaintToleration", without_args<TaintTolerationScore>});
  r.scores.push_back({"NodeAffinity", without_args<NodeAffinityScore>});
}

}  // namespace spotshift::sched
