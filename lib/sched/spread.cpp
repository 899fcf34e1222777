// PodTopologySpread: DoNotSchedule constraints as a filter (skew = matching pods in the node's
// domain, plus one if the pod matches its own selector, minus the minimum over eligible domains,
// at most maxSkew; with minDomains, fewer eligible domains make the minimum 0), ScheduleAnyway
// constraints as a score (fewer matching pods in the domain scores higher).

#include "sched/plugins.hpp"

#include <algorithm>
#include <limits>

namespace spotshift::sched {

namespace {

struct ConstraintCounts {
  const model::TopologySpreadConstraint* c;
  const std::vector<int>* node_domain;  // node index -> domain id of the constraint's key
  std::vector<int> per_domain;
  std::vector<bool> eligible_domain;
  int min = 0;
  bool self_match = false;
};

struct SpreadState final : PluginState {
  std::vector<ConstraintCounts> hard;
  std::vector<ConstraintCounts> soft;
};

// Whether a node with the constraint's key counts for it: it passes the pod's node affinity and
// taints when the constraint's policies say to honour them.
bool eligible(const model::TopologySpreadConstraint& c, const model::Pod& pod, const model::Node& node) {
  if (c.honor_node_affinity && !matches_node_affinity(pod, node)) return false;
  if (c.honor_node_taints && untolerated_taint(pod, node)) return false;
  return true;
}

ConstraintCounts count(const model::TopologySpreadConstraint& c, const model::Pod& pod, const Fork& fork) {
  const ClusterSnapshot& snap = fork.base();
  ConstraintCounts out;
  out.c = &c;
  out.node_domain = &snap.node_domains(c.topology_key);
  const auto& node_domain = *out.node_domain;
  size_t domains = static_cast<size_t>(snap.domains(c.topology_key));
  out.per_domain.assign(domains, 0);
  out.eligible_domain.assign(domains, false);
  std::vector<bool> eligible_node(static_cast<size_t>(snap.size()), false);
  for (int n = 0; n < snap.size(); ++n) {
    if (node_domain[static_cast<size_t>(n)] < 0 || !eligible(c, pod, *snap.node(n).node)) continue;
    eligible_node[static_cast<size_t>(n)] = true;
    out.eligible_domain[static_cast<size_t>(node_domain[static_cast<size_t>(n)])] = true;
  }
  if (c.has_selector) {
    for_each_matching(fork, c.selector, [&](const model::Pod& other, int node) {
      if (other.meta.namespace_ != pod.meta.namespace_ || !eligible_node[static_cast<size_t>(node)]) return;
      if (other.terminating()) return;
      ++out.per_domain[static_cast<size_t>(node_domain[static_cast<size_t>(node)])];
    });
    out.self_match = c.selector.matches(pod.meta.labels);
  }
  int eligible_domains = 0;
  int min = std::numeric_limits<int>::max();
  for (size_t d = 0; d < domains; ++d)
    if (out.eligible_domain[d]) {
      ++eligible_domains;
      min = std::min(min, out.per_domain[d]);
    }
  if (eligible_domains == 0) min = 0;
  if (c.min_domains && eligible_domains < *c.min_domains) min = 0;
  out.min = min;
  return out;
}

class SpreadFilter final : public FilterPlugin, public PreFilter {
 public:
  std::string_view name() const override { return "PodTopologySpread"; }
  PreFilterResult pre_filter(CycleState& cs, size_t slot, const model::Pod& pod, const Fork& fork) const override {
    auto st = std::make_unique<SpreadState>();
    for (const auto& c : pod.topology_spread)
      if (c.do_not_schedule) st->hard.push_back(count(c, pod, fork));
    if (st->hard.empty()) return PreFilterResult::kSkip;
    cs.put(slot, std::move(st));
    return PreFilterResult::kRun;
  }
  Status filter(const CycleState& cs, size_t slot, const model::Pod&, const Fork&, int n) const override {
    const auto* st = cs.get<SpreadState>(slot);
    if (!st) return Status::error("PodTopologySpread ran without its pre-filter");
    for (const auto& cc : st->hard) {
      int d = (*cc.node_domain)[static_cast<size_t>(n)];
      if (d < 0) return Status::unresolvable("node(s) didn't match pod topology spread constraints (missing required label)");
      int skew = cc.per_domain[static_cast<size_t>(d)] + (cc.self_match ? 1 : 0) - cc.min;
      if (skew > cc.c->max_skew) return Status::unschedulable("node(s) didn't match pod topology spread constraints");
    }
    return Status::success();
  }
};

class SpreadScore final : public ScorePlugin, public PreScore, public NormalizeScore {
 public:
  std::string_view name() const override { return "PodTopologySpread"; }
  PreScoreResult pre_score(CycleState& cs, size_t slot, const model::Pod& pod, const Fork& fork) const override {
    auto st = std::make_unique<SpreadState>();
    for (const auto& c : pod.topology_spread)
      if (!c.do_not_schedule) st->soft.push_back(count(c, pod, fork));
    cs.put(slot, std::move(st));
    return PreScoreResult::kScoreEach;
  }
  int64_t score(const CycleState& cs, size_t slot, const model::Pod&, const Fork&, int n) const override {
    const auto* st = cs.get<SpreadState>(slot);
    int64_t total = 0;
    if (!st) return 0;
    for (const auto& cc : st->soft) {
      int d = (*cc.node_domain)[static_cast<size_t>(n)];
      total += d < 0 ? 1000 : cc.per_domain[static_cast<size_t>(d)];  // a node without the key scores worst
    }
    return total;
  }
  // Fewer matching pods in the domain is better.
  void normalize(const std::vector<int64_t>& raw, std::vector<double>& out) const override { scale_lower_better(raw, out); }
};

}  // namespace

void add_topology_spread(Registry& r) {
  r.filters.push_back({"PodTopologySpread", filter<SpreadFilter>});
  r.scores.push_back({"PodTopologySpread", without_args<SpreadScore>});
}

}  // namespace spotshift::sched
