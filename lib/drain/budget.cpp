#include "drain/budget.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spotshift::drain {

BudgetIndex::BudgetIndex(const std::vector<PdbPtr>& pdbs) : pdbs_(pdbs) {
  for (size_t i = 0; i < pdbs_.size(); ++i) {
    const model::PodDisruptionBudget& p = *pdbs_[i];
    if (!p.selector || p.selector->empty()) continue;  // matches nothing
    by_namespace_[p.meta.namespace_].add(*p.selector, Entry{i, &p});
  }
}

std::vector<const model::PodDisruptionBudget*> BudgetIndex::matching(const model::Pod& pod) const {
  std::vector<const model::PodDisruptionBudget*> out;
  auto it = by_namespace_.find(pod.meta.namespace_);
  if (it == by_namespace_.end()) return out;
  std::vector<Entry> found;
  it->second.for_each(pod.meta.labels, [&](const Entry& e) {
    if (e.pdb->matches(pod)) found.push_back(e);
  });
  std::sort(found.begin(), found.end(), [](const Entry& a, const Entry& b) { return a.order < b.order; });
  for (const auto& e : found) out.push_back(e.pdb);
  return out;
}

bool BudgetIndex::covers(const model::Pod& pod) const { return !matching(pod).empty(); }

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
  struct Charge {
    const model::PodDisruptionBudget* pdb;
    std::vector<std::string> pods;
  };
  std::vector<Charge> charges;
  for (const model::Pod* pod : pods) {
    auto matching = budgets.matching(*pod);
    if (matching.empty()) continue;
    auto& names = out.budgets_of[pod->key()];
    for (const auto* pdb : matching) names.push_back(pdb->meta.key());
    if (matching.size() > 1) {
      out.ok = false;
      out.reasons.push_back(fmt::format("pod {} is covered by more than one PodDisruptionBudget ({}), which the Eviction API refuses",
                                        pod->key(), fmt::join(names, ", ")));
      continue;
    }
    const auto* pdb = matching.front();
    if (!charged(*pod, *pdb)) continue;
    auto it = std::find_if(charges.begin(), charges.end(), [&](const Charge& c) { return c.pdb == pdb; });
    if (it == charges.end()) it = charges.insert(charges.end(), Charge{pdb, {}});
    it->pods.push_back(pod->name());
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
      out.reasons.push_back(fmt::format("PodDisruptionBudget {} allows {} now, and draining this node needs {} ({})",
                                        pdb.meta.key(), plural(std::max(0, pdb.status.disruptions_allowed), "disruption"),
                                        need, fmt::join(c.pods, ", ")));
    }
  }
  return out;
}

}  // namespace spotshift::drain
