#pragma once
// PodDisruptionBudgets, charged cumulatively: all the pods a node's drain would evict are
// counted against each budget together, before anything is touched, with the Eviction API's own
// rules (docs/how-it-decides.md, section 2): a pod under two budgets cannot be evicted at all; a budget the
// disruption controller has not processed yet refuses; an unready pod is free when the budget
// is healthy enough (or its policy is AlwaysAllow).

#include "model/pdb.hpp"
#include "model/pod.hpp"
#include "sched/snapshot.hpp"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace spotshift::drain {

using PdbPtr = std::shared_ptr<const model::PodDisruptionBudget>;

// Budgets by namespace, for matching pods quickly.
class BudgetIndex {
 public:
  explicit BudgetIndex(const std::vector<PdbPtr>& pdbs);
  // The budgets whose selector matches the pod, in input order.
  std::vector<const model::PodDisruptionBudget*> matching(const model::Pod& pod) const;
  // The same into `out` (cleared first), so a caller checking many pods reuses one buffer.
  void matching(const model::Pod& pod, std::vector<const model::PodDisruptionBudget*>& out) const;
  bool covers(const model::Pod& pod) const;

 private:
  // Per namespace, the budgets that can match a pod, indexed by a label their selector requires
  // (the first key with exactly one value), so a pod is checked against the budgets of its own
  // labels instead of every budget of its namespace. A budget's position in the input keeps the
  // answer in input order.
  struct Entry {
    size_t order;
    const model::PodDisruptionBudget* pdb;
  };
  std::vector<PdbPtr> pdbs_;
  std::unordered_map<model::InternedString, sched::SelectorIndex<Entry>> by_namespace_;
};

struct BudgetCheck {
  bool ok = true;
  std::vector<std::string> reasons;  // one per budget (or pod) that refuses
  // Per pod, in the order given, the budgets that cover it (empty: none). Pointers into the
  // BudgetIndex's budgets.
  std::vector<std::vector<const model::PodDisruptionBudget*>> budgets_of;
};

// Whether evicting every one of `pods` is within every matching budget's disruptionsAllowed.
BudgetCheck check_budgets(const std::vector<const model::Pod*>& pods, const BudgetIndex& budgets);

}  // namespace spotshift::drain
