#include "drain/budget.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spotshift::drain {

BudgetIndex::BudgetIndex(const std::vector<PdbPtr>& pdbs) : pdbs_(pdbs) {
  for (size_t i = 0; i < pdbs_.size(); ++i) {
    const model::PodDisruptionBudget& p = *pdbs_[i];
    if (!p.selector) continue;  // a null selector matches no pod ({} matches every pod)
    by_namespace_[p.meta.namespace_].add(*p.selector, Entry{i, &p});
  }
}

std::vector<const model::PodDisruptionBudget*> BudgetIndex::matching(const model::Pod& pod) const {
  std::vector<const model::PodDisruptionBudget*> out;
  matching(pod, out);
  return out;
}

void BudgetIndex::matching(const model::Pod& pod, std::vector<const model::PodDisruptionBudget*>& out) const {
  out.clear();
  auto it = by_namespace_.find(pod.meta.namespace_);
  if (it == by_namespace_.end()) return;
  thread_local std::vector<Entry> found;
  found.clear();
  it->second.for_each(pod.meta.labels, [&](const Entry& e) {
    if (e.pdb->matches(pod)) found.push_back(e);
  });
  std::sort(found.begin(), found.end(), [](const Entry& a, const Entry& b) { return a.order < b.order; });
  for (const auto& e : found) out.push_back(e.pdb);
}

bool BudgetIndex::covers(const model::Pod& pod) const {
  thread_local std::vector<const model::PodDisruptionBudget*> found;
  matching(pod, found);
  return !found.empty();
}

namespace {

// The Eviction API deletes an unready pod without charging the budget when the budget allows
// unhealthy evictions, or is healthy enough under the default IfHealthyBudget policy.
bool charged(const model::Pod& pod, const model::PodDisruptionBudget& pdb) {
  if (pod.ready) return true;
  if (pdb.always_allow_unhealthy) return false;
  return !(pdb.status.current_healthy >= pdb.status.desired_healthy && pdb.status.desired_healthy > 0);
}

std::string plural(int n, std::string_view word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

}  // namespace

BudgetCheck check_budgets(const std::vector<const model::Pod*>& pods, const BudgetIndex& budgets) {
  BudgetCheck out;
  out.budgets_of.resize(pods.size());
  struct Charge {
    const model::PodDisruptionBudget* pdb;
    std::vector<const model::Pod*> pods;
  };
  std::vector<Charge> charges;
  std::vector<const model::PodDisruptionBudget*> matching;
  for (size_t i = 0; i < pods.size(); ++i) {
    const model::Pod* pod = pods[i];
    budgets.matching(*pod, matching);
    if (matching.empty()) continue;
    out.budgets_of[i] = matching;
    if (matching.size() > 1) {
      out.ok = false;
      std::vector<std::string> names;
      for (const auto* pdb : matching) names.push_back(pdb->meta.key());
      std::sort(names.begin(), names.end());  // the same text whatever order the caches hold them in
      out.reasons.push_back(fmt::format("pod {} is covered by more than one PodDisruptionBudget ({}), which the Eviction API refuses",
                                        pod->key(), fmt::join(names, ", ")));
      continue;
    }
    const auto* pdb = matching.front();
    if (!charged(*pod, *pdb)) continue;
    auto it = std::find_if(charges.begin(), charges.end(), [&](const Charge& c) { return c.pdb == pdb; });
    if (it == charges.end()) it = charges.insert(charges.end(), Charge{pdb, {}});
    it->pods.push_back(pod);
  }
  for (const auto& c : charges) {
    const auto& pdb = *c.pdb;
    if (!pdb.status_current()) {
      out.ok = false;
      out.reasons.push_back(fmt::format("PodDisruptionBudget {} is still being processed by the disruption controller", pdb.meta.key()));
      continue;
    }
    int need = static_cast<int>(c.pods.size());
    if (need > pdb.status.disruptions_allowed) {
      out.ok = false;
      std::vector<std::string_view> names;
      for (const auto* p : c.pods) names.push_back(p->name());
      out.reasons.push_back(fmt::format("PodDisruptionBudget {} allows {} now, and draining this node needs {} ({})", pdb.meta.key(),
                                        plural(std::max(0, pdb.status.disruptions_allowed), "disruption"), need, fmt::join(names, ", ")));
    }
  }
  return out;
}

}  // namespace spotshift::drain
