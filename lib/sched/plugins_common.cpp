#include "sched/plugins.hpp"

#include <algorithm>

namespace spotshift::sched {

bool matches_node_affinity(const model::Pod& pod, const model::Node& node) { return pod.selects_node(node.meta.labels, node.name()); }

const model::Taint* untolerated_taint(const model::Pod& pod, const model::Node& node) {
  return model::first_untolerated(pod.tolerations, node.taints, true, false, true);
}

NamespaceScope term_scope(const model::PodAffinityTerm& term, const model::InternedString& owner_ns, const model::InternedString& ns) {
  for (const auto& n : term.namespaces)
    if (n == ns) return NamespaceScope::kIn;
  if (term.namespace_selector) {
    if (term.namespace_selector->empty()) return NamespaceScope::kIn;
    return NamespaceScope::kUnknown;
  }
  if (term.namespaces.empty()) return ns == owner_ns ? NamespaceScope::kIn : NamespaceScope::kOut;
  return NamespaceScope::kOut;
}

void for_each_matching(const Fork& fork, const model::LabelSelector& selector, const std::function<void(const model::Pod&, int node)>& f) {
  const ClusterSnapshot& snap = fork.base();
  // The smallest candidate set a positive requirement allows.
  const std::vector<PlacedPod>* best = nullptr;
  std::vector<PlacedPod> merged;
  size_t best_size = SIZE_MAX;
  for (const auto& r : selector.requirements()) {
    if (r.op == model::SelectorOp::kEquals || r.op == model::SelectorOp::kIn) {
      if (r.values.size() == 1) {
        const auto& b = snap.pods_with_label_value(r.key, r.values[0]);
        if (b.size() < best_size) {
          best = &b;
          best_size = b.size();
        }
      } else {
        size_t total = 0;
        for (const auto& v : r.values) total += snap.pods_with_label_value(r.key, v).size();
        if (total < best_size) {
          merged.clear();
          for (const auto& v : r.values) {
            const auto& b = snap.pods_with_label_value(r.key, v);
            merged.insert(merged.end(), b.begin(), b.end());
          }
          best = &merged;
          best_size = total;
        }
      }
    } else if (r.op == model::SelectorOp::kExists) {
      const auto& b = snap.pods_with_label(r.key);
      if (b.size() < best_size) {
        best = &b;
        best_size = b.size();
      }
    }
  }
  if (!best) best = &snap.all_pods();
  for (const auto& placed : *best) {
    if (fork.touched(placed.node) && fork.is_removed(placed.node, placed.pod)) continue;
    if (selector.matches(placed.pod->meta.labels)) f(*placed.pod, placed.node);
  }
  // Added pods: those carrying the selector's first single-value label, when it has one.
  const model::Requirement* anchor = single_value_requirement(selector);
  auto check = [&](const model::Pod& p, int node) {
    if (selector.matches(p.meta.labels)) f(p, node);
  };
  if (anchor) fork.for_each_added_with_label(anchor->key, anchor->values[0], check);
  else fork.for_each_added(check);
}

namespace {

void scale(const std::vector<int64_t>& raw, std::vector<double>& out, bool lower_better) {
  if (raw.empty()) return;
  auto [lo, hi] = std::minmax_element(raw.begin(), raw.end());
  const auto min = static_cast<double>(*lo), max = static_cast<double>(*hi);
  for (size_t k = 0; k < raw.size(); ++k) {
    const auto v = static_cast<double>(raw[k]);
    if (max == min) out[k] = 100.0;
    else out[k] = 100.0 * (lower_better ? max - v : v - min) / (max - min);
  }
}

}  // namespace

void scale_lower_better(const std::vector<int64_t>& raw, std::vector<double>& out) { scale(raw, out, true); }
void scale_higher_better(const std::vector<int64_t>& raw, std::vector<double>& out) { scale(raw, out, false); }

}  // namespace spotshift::sched
