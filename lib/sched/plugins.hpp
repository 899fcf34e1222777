#pragma once
// Helpers shared by the plugins, and their registration.

#include "sched/framework.hpp"

namespace spotshift::sched {

// ---- registration (registry.cpp) ---------------------------------------------------------------
// Each plugin file adds its plugins to the registry in add_<file>_plugins(): a name and a factory
// that validates the profile's arguments. The registry's order is the profiles' default order and
// the order of the names listed in errors. A new plugin is its class and one line there.

struct FilterEntry {
  std::string_view name;
  std::unique_ptr<FilterPlugin> (*make)();
};
struct ScoreEntry {
  std::string_view name;
  Result<std::unique_ptr<ScorePlugin>> (*make)(const ScoreConfig& config);
};
struct Registry {
  std::vector<FilterEntry> filters;
  std::vector<ScoreEntry> scores;
};
const Registry& registry();

void add_basic_filters(Registry& r);       // filters.cpp
void add_inter_pod_affinity(Registry& r);  // interpod.cpp
void add_topology_spread(Registry& r);     // spread.cpp: the filter and the score
void add_allocation_scores(Registry& r);   // scores.cpp
void add_packing_scores(Registry& r);      // packing.cpp

// A factory for a score that takes no arguments.
Result<void> no_args(const ScoreConfig& config);
template <class P>
Result<std::unique_ptr<ScorePlugin>> without_args(const ScoreConfig& config) {
  if (auto r = no_args(config); !r) return r.error();
  return std::unique_ptr<ScorePlugin>(std::make_unique<P>());
}
// A pre-filter that only says whether the filter can reject the pod at all.
inline PreFilterResult run_if(bool can_reject) { return can_reject ? PreFilterResult::kRun : PreFilterResult::kSkip; }

template <class P>
std::unique_ptr<FilterPlugin> filter() {
  return std::make_unique<P>();
}

// nodeSelector and required node affinity.
bool matches_node_affinity(const model::Pod& pod, const model::Node& node);
// The first NoSchedule or NoExecute taint the pod does not tolerate.
const model::Taint* untolerated_taint(const model::Pod& pod, const model::Node& node);
// Whether a pod in namespace `ns` is in scope of a pod affinity term declared by a pod in
// `owner_ns`. An empty namespace selector selects every namespace. A non-empty one needs
// namespace labels, which the snapshot does not have: callers decide what that means.
enum class NamespaceScope { kIn, kOut, kUnknown };
NamespaceScope term_scope(const model::PodAffinityTerm& term, const model::InternedString& owner_ns, const model::InternedString& ns);

// Calls f(pod, node) for each pod in the what-if whose labels match the selector (a nil selector
// matches nothing), visiting only the index bucket of its most selective positive requirement.
void for_each_matching(const Fork& fork, const model::LabelSelector& selector, const std::function<void(const model::Pod&, int node)>& f);

// std::llround (halves away from zero) inline, for |x| below 2^63: what a double has left after
// truncation to an integer is exact, so comparing it with one half rounds as llround does.
inline int64_t round_half_away(double x) {
  const auto whole = static_cast<int64_t>(x);
  const double left = x - static_cast<double>(whole);
  return whole + static_cast<int64_t>(left >= 0.5) - static_cast<int64_t>(left <= -0.5);
}

// Min-max scaling of raw scores to 0..100: the lowest (or highest) raw score gets 100; all equal
// gives every node 100.
void scale_lower_better(const std::vector<int64_t>& raw, std::vector<double>& out);
void scale_higher_better(const std::vector<int64_t>& raw, std::vector<double>& out);

}  // namespace spotshift::sched
