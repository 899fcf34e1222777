#pragma once
// Helpers shared by the plugins.

#include "sched/framework.hpp"

namespace spotshift::sched {

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
void for_each_matching(const Fork& fork, const model::LabelSelector& selector,
                       const std::function<void(const model::Pod&, int node)>& f);

// Min-max scaling of raw scores to 0..100: the lowest (or highest) raw score gets 100; all equal
// gives every node 100.
void scale_lower_better(const std::vector<int64_t>& raw, std::vector<double>& out);
void scale_higher_better(const std::vector<int64_t>& raw, std::vector<double>& out);

}  // namespace spotshift::sched
