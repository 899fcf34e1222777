// InterPodAffinity: the incoming pod's required affinity and anti-affinity, and every existing
// pod's required anti-affinity against it (anti-affinity is symmetric). Matching pods are
// counted per topology domain once per pod (pre-filter), through the snapshot's label index.

#include "sched/plugins.hpp"

#include <set>

namespace spotshift::sched {

namespace {

struct TermCounts {
  const std::vector<int>* node_domain;  // node index -> domain id of key
  std::vector<int> per_domain;          // matching pods per domain of key
  int total = 0;
};

struct InterPodState final : PluginState {
  std::vector<TermCounts> affinity;
  std::vector<TermCounts> anti_affinity;
  bool affinity_unknown_namespaces = false;
  bool self_matches_all_affinity = false;  // the "first pod of its group" rule
  // Existing pods' anti-affinity: per topology key (as its node -> domain table), forbidden domains.
  std::vector<std::pair<const std::vector<int>*, std::set<int>>> forbidden;
};

TermCounts count_term(const Fork& fork, const model::PodAffinityTerm& term, const model::InternedString& owner_ns,
                      bool* unknown_namespaces) {
  const ClusterSnapshot& snap = fork.base();
  TermCounts c;
  c.node_domain = &snap.node_domains(term.topology_key);
  c.per_domain.assign(static_cast<size_t>(snap.domains(term.topology_key)), 0);
  if (!term.has_selector) return c;
  for_each_matching(fork, term.selector, [&](const model::Pod& other, int node) {
    NamespaceScope scope = term_scope(term, owner_ns, other.meta.namespace_);
    if (scope == NamespaceScope::kUnknown && unknown_namespaces) *unknown_namespaces = true;
    if (scope != NamespaceScope::kIn) return;
    int d = (*c.node_domain)[static_cast<size_t>(node)];
    if (d < 0) return;
    ++c.per_domain[static_cast<size_t>(d)];
    ++c.total;
  });
  return c;
}

class InterPodAffinity final : public FilterPlugin, public PreFilter, public FilterNodes {
 public:
  std::string_view name() const override { return "InterPodAffinity"; }
  // Nothing to check when the pod has no terms and no pod, placed or added, has anti-affinity.
  PreFilterResult pre_filter(CycleState& cs, size_t slot, const model::Pod& pod, const Fork& fork) const override {
    const bool has_terms =
        pod.affinity && (!pod.affinity->pod_affinity_required.empty() || !pod.affinity->pod_anti_affinity_required.empty());
    if (!has_terms && fork.base().pods_with_anti_affinity().empty() && !fork.any_added_anti_affinity()) return PreFilterResult::kSkip;
    auto st = std::make_unique<InterPodState>();
    const ClusterSnapshot& snap = fork.base();
    if (pod.affinity) {
      bool self_all = true;
      for (const auto& term : pod.affinity->pod_affinity_required) {
        st->affinity.push_back(count_term(fork, term, pod.meta.namespace_, &st->affinity_unknown_namespaces));
        self_all = self_all && term.has_selector && term.selector.matches(pod.meta.labels) &&
                   term_scope(term, pod.meta.namespace_, pod.meta.namespace_) == NamespaceScope::kIn;
      }
      st->self_matches_all_affinity = self_all;
      for (const auto& term : pod.affinity->pod_anti_affinity_required)
        // An unknown namespace scope counts as a match: refusing is the safe side.
        st->anti_affinity.push_back(count_term(fork, term, pod.meta.namespace_, nullptr));
    }
    // Existing pods whose anti-affinity rejects this pod forbid their domains.
    auto consider_term = [&](const model::Pod& other, int node, const model::PodAffinityTerm& term) {
      if (!term.has_selector || !term.selector.matches(pod.meta.labels)) return;
      if (term_scope(term, other.meta.namespace_, pod.meta.namespace_) == NamespaceScope::kOut) return;
      const auto* table = &snap.node_domains(term.topology_key);
      int d = (*table)[static_cast<size_t>(node)];
      if (d < 0) return;
      auto it = std::find_if(st->forbidden.begin(), st->forbidden.end(), [&](const auto& f) { return f.first == table; });
      if (it == st->forbidden.end()) it = st->forbidden.insert(st->forbidden.end(), {table, {}});
      it->second.insert(d);
    };
    // Placed pods: only the terms that can select this pod (the snapshot's index).
    snap.for_each_anti_affinity_term(pod.meta.labels, [&](const AntiAffinityTerm& t) {
      if (!(fork.touched(t.node) && fork.is_removed(t.node, t.pod))) consider_term(*t.pod, t.node, *t.term);
    });
    // Added pods: the same index, kept by the fork.
    fork.for_each_added_anti_affinity_term(pod.meta.labels, [&](const AntiAffinityTerm& t) { consider_term(*t.pod, t.node, *t.term); });
    cs.put(slot, std::move(st));
    return PreFilterResult::kRun;
  }

  Status filter(const CycleState& cs, size_t slot, const model::Pod&, const Fork&, int n) const override {
    const auto* st = cs.get<InterPodState>(slot);
    if (!st) return Status::error("InterPodAffinity ran without its pre-filter");
    Verdict v = judge(*st, static_cast<size_t>(n));
    if (v.code == Code::kSuccess) return Status::success();
    return v.code == Code::kUnschedulable ? Status::unschedulable(v.reason) : Status::unresolvable(v.reason);
  }
  // filter() for many nodes without a Status each, and without a look at any node when no rule
  // applies to this pod (the common case: some pods of the cluster have anti-affinity, so the
  // plugin is relevant, but none selects this one).
  void filter_nodes(const CycleState& cs, size_t slot, const model::Pod& pod, const Fork& fork, std::vector<int>& nodes) const override {
    const auto* st = cs.get<InterPodState>(slot);
    if (!st) return filter_each(cs, slot, pod, fork, nodes);
    if (st->forbidden.empty() && st->affinity.empty() && st->anti_affinity.empty()) return;
    std::erase_if(nodes, [&](int n) { return judge(*st, static_cast<size_t>(n)).code != Code::kSuccess; });
  }

 private:
  struct Verdict {
    Code code;
    const char* reason;
  };
  static Verdict judge(const InterPodState& st, size_t node) {
    for (const auto& [table, domains] : st.forbidden) {
      int d = (*table)[node];
      if (d >= 0 && domains.count(d)) return {Code::kUnschedulable, "node(s) didn't satisfy existing pods anti-affinity rules"};
    }
    if (!st.affinity.empty()) {
      if (st.affinity_unknown_namespaces)
        return {Code::kUnschedulableAndUnresolvable, "pod affinity uses a namespaceSelector, which the planner cannot evaluate"};
      bool all_empty = true;
      for (const auto& c : st.affinity) all_empty = all_empty && c.total == 0;
      // The first pod of a group that matches its own affinity may go anywhere with the keys.
      bool first_of_group = all_empty && st.self_matches_all_affinity;
      for (const auto& c : st.affinity) {
        int d = (*c.node_domain)[node];
        if (d < 0) return {Code::kUnschedulableAndUnresolvable, "node(s) didn't match pod affinity rules"};
        if (!first_of_group && c.per_domain[static_cast<size_t>(d)] == 0)
          return {Code::kUnschedulable, "node(s) didn't match pod affinity rules"};
      }
    }
    for (const auto& c : st.anti_affinity) {
      int d = (*c.node_domain)[node];
      if (d >= 0 && c.per_domain[static_cast<size_t>(d)] > 0) return {Code::kUnschedulable, "node(s) didn't match pod anti-affinity rules"};
    }
    return {Code::kSuccess, nullptr};
  }
};

}  // namespace

void add_inter_pod_affinity(Registry& r) { r.filters.push_back({"InterPodAffinity", filter<InterPodAffinity>}); }

}  // namespace spotshift::sched
