#include "drain/planner.hpp"

#include "drain/search.hpp"
#include "sched/demand.hpp"
#include "sched/fork.hpp"
#include "sched/framework.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <variant>

namespace spotshift::drain {

const NodePlan* Plan::find(std::string_view node) const {
  for (const auto& n : drainable)
    if (n.node == node) return &n;
  return nullptr;
}

NodeClass classify_node(const model::Node& node, const PolicySpec& spec) {
  bool on_demand = spec.on_demand_selector.matches(node.meta.labels);
  bool spot = spec.spot_selector.matches(node.meta.labels);
  if (on_demand && spot) return NodeClass::kBoth;
  if (on_demand) return NodeClass::kOnDemand;
  if (spot) return NodeClass::kSpot;
  return NodeClass::kNone;
}

bool usable(const model::Node& node) { return node.ready() && !node.unschedulable; }

namespace {

// Whether the profile's FreeCPU score prefers the emptiest spot node (k8s-spot-rescheduler's
// documented order) instead of the fullest.
bool emptiest_first(const sched::ProfileConfig& profile) {
  for (const auto& s : profile.scores)
    if (s.name == "FreeCPU" && s.weight > 0) {
      auto it = s.args.find("order");
      return it != s.args.end() && it->second == "emptiest";
    }
  return false;
}

std::string unusable_reason(const model::Node& node) {
  if (!node.ready()) return "not Ready";
  return "cordoned (spec.unschedulable)";
}

// For DrainOrder::kScarceResources: per on-demand node, the sum over cpu, memory, pods and the
// scarce extended resource of (its request / the spot nodes' free total), each weighted by that
// resource's scarcity (every on-demand node's request / the spot nodes' free total). A resource
// nowhere free makes every node that needs it last.
std::vector<double> scarcity_keys(const sched::ClusterSnapshot& snap, const std::vector<int>& on_demand, const std::vector<int>& spot,
                                  const model::InternedString& scarce) {
  auto amounts = [&](int n, bool free) {
    const sched::NodeInfo& info = snap.node(n);
    std::array<double, 4> used{static_cast<double>(info.used.cpu_milli), static_cast<double>(info.used.memory),
                               static_cast<double>(info.used.pods), scarce.empty() ? 0.0 : static_cast<double>(info.used.scalar(scarce))};
    if (!free) return used;
    std::array<double, 4> alloc{static_cast<double>(info.allocatable.cpu_milli), static_cast<double>(info.allocatable.memory),
                                static_cast<double>(info.allocatable.pods),
                                scarce.empty() ? 0.0 : static_cast<double>(info.allocatable.get(scarce.view()))};
    for (size_t r = 0; r < 4; ++r) alloc[r] = std::max(0.0, alloc[r] - used[r]);
    return alloc;
  };
  std::array<double, 4> free{}, need{};
  for (int n : spot) {
    auto f = amounts(n, true);
    for (size_t r = 0; r < 4; ++r) free[r] += f[r];
  }
  for (int n : on_demand) {
    auto u = amounts(n, false);
    for (size_t r = 0; r < 4; ++r) need[r] += u[r];
  }
  std::vector<double> keys;
  for (int n : on_demand) {
    auto u = amounts(n, false);
    double key = 0;
    for (size_t r = 0; r < 4; ++r) {
      if (u[r] <= 0) continue;
      key += free[r] > 0 ? u[r] / free[r] * (need[r] / free[r]) : 1e30;
    }
    keys.push_back(key);
  }
  return keys;
}

struct Candidate {
  PodPtr pod;
  PodVerdict verdict;
  std::vector<const model::PodDisruptionBudget*> budgets;  // that cover it
};

// A pod's spot node (snapshot index) to try first, from the plan search.
using Hints = std::unordered_map<const model::Pod*, int>;

struct Pass {
  std::vector<NodePlan> drainable;
  std::vector<NodeRejection> undrainable;
  // The nodes only the placement decided (nothing blocks them), with their pods to move in the
  // order they were placed: what the plan search may choose from, in the pass's order.
  std::vector<std::pair<int, std::vector<PodPtr>>> searchable;
};

struct Search {
  std::vector<int> nodes;  // the nodes to drain, in the pass's order
  Hints hints;
};

// The previous plan's drainable nodes that are still on-demand nodes here (only `only`, when
// set), in its order, each pod still on them hinted to the spot node it planned for it.
Search previous_nodes(const sched::ClusterSnapshot& snap, const Plan& previous, const std::vector<int>& on_demand,
                      const std::vector<int>& spot, const std::optional<std::string>& only) {
  Search out;
  for (const NodePlan& np : previous.drainable) {
    if (only && np.node != *only) continue;
    auto idx = snap.index_of(np.node);
    if (!idx || std::find(on_demand.begin(), on_demand.end(), *idx) == on_demand.end()) continue;
    out.nodes.push_back(*idx);
    for (const PodMove& move : np.moves) {
      auto target = snap.index_of(move.target);
      if (!target || std::find(spot.begin(), spot.end(), *target) == spot.end()) continue;
      for (const auto& pod : snap.node(*idx).pods)
        if (pod->meta.uid == move.pod->meta.uid && pod->meta.name == move.pod->meta.name &&
            pod->meta.namespace_ == move.pod->meta.namespace_)
          out.hints.emplace(pod.get(), *target);
    }
  }
  return out;
}

size_t pods_to_move(const std::vector<NodePlan>& drainable) {
  size_t n = 0;
  for (const auto& np : drainable) n += np.moves.size();
  return n;
}

// The spot nodes a pod passes the node-static filters on, as its controller would recreate it:
// not bound to any node.
std::vector<int> statically_feasible_unbound(const sched::Framework& framework, const model::Pod& pod, const sched::Fork& probe,
                                             const std::vector<int>& spot, sched::PlacementCache& cache) {
  model::Pod unbound = pod;
  unbound.node_name = {};
  return framework.statically_feasible(unbound, probe, spot, cache);
}

// The plan search (search.hpp) on the compact model of the pass's searchable nodes, started
// from the pass's own plan.
Search search_nodes(const sched::ClusterSnapshot& snap, const sched::Framework& framework, sched::PlacementCache& cache,
                    const std::vector<int>& spot, const model::InternedString& scarce, const Pass& pass, int iterations) {
  search::Problem problem;
  std::unordered_map<std::string_view, int> bin_of;
  std::vector<int> bin_at(static_cast<size_t>(snap.size()), -1);  // snapshot index -> spot position
  for (size_t b = 0; b < spot.size(); ++b) {
    const sched::NodeInfo& info = snap.node(spot[b]);
    bin_of.emplace(info.name, static_cast<int>(b));
    bin_at[static_cast<size_t>(spot[b])] = static_cast<int>(b);
    problem.free.push_back({info.allocatable.cpu_milli - info.used.cpu_milli, info.allocatable.memory - info.used.memory,
                            info.allocatable.pods - info.used.pods,
                            scarce.empty() ? 0 : info.allocatable.get(scarce.view()) - info.used.scalar(scarce)});
  }
  std::unordered_map<const model::Pod*, std::string_view> planned;  // pod -> its target in the pass
  for (const auto& np : pass.drainable)
    for (const auto& m : np.moves) planned.emplace(m.pod.get(), m.target);
  search::Solution start;
  sched::Fork probe(snap);
  std::unordered_map<std::string, int> allowed_of;  // pod signature -> Problem::allowed index
  std::string sig;
  for (const auto& [idx, pods] : pass.searchable) {
    search::Node node;
    std::vector<int> targets;
    for (const auto& pod : pods) {
      // The signature of the pod as its controller would see it, not bound anywhere.
      sched::Framework::signature(*pod, sig, false);
      auto [it, added] = allowed_of.emplace(sig, -1);
      if (added) {
        std::vector<int> ok = statically_feasible_unbound(framework, *pod, probe, spot, cache);
        if (ok.size() < spot.size()) {
          std::vector<uint8_t> mask(spot.size(), 0);
          for (int n : ok) mask[static_cast<size_t>(bin_at[static_cast<size_t>(n)])] = 1;
          it->second = static_cast<int>(problem.allowed.size());
          problem.allowed.push_back(std::move(mask));
        }
      }
      const auto& r = pod->requests;
      node.pods.push_back({{r.cpu_milli, r.memory, 1, scarce.empty() ? 0 : r.get(scarce.view())}, it->second});
      if (auto p = planned.find(pod.get()); p != planned.end()) targets.push_back(bin_of.at(p->second));
    }
    if (targets.size() == pods.size()) {
      start.targets.push_back(std::move(targets));
      ++start.drained;
      start.moved += static_cast<int>(pods.size());
    } else {
      start.targets.emplace_back();
    }
    problem.nodes.push_back(std::move(node));
  }
  Search out;
  // The pass's plan is feasible in the model unless the model is wrong (a resource the planner
  // charges differently): then search nothing rather than from a bad start.
  if (!search::feasible(problem, start)) return out;
  search::Solution best = search::improve(problem, std::move(start), iterations);
  for (size_t i = 0; i < best.targets.size(); ++i) {
    if (best.targets[i].empty()) continue;
    const auto& [idx, pods] = pass.searchable[i];
    out.nodes.push_back(idx);
    for (size_t k = 0; k < pods.size(); ++k) out.hints.emplace(pods[k].get(), spot[static_cast<size_t>(best.targets[i][k])]);
  }
  return out;
}

// Step 8: each drainable node's places (the fewest spot nodes one of its pods fits on now: the
// node-static filters pass and every resource it asks for is free there), and the drains
// sequenced fewest places first. Places above the pods the plan moves count as plenty: each
// replacement lands on one node, so no order can crowd such a node's pods out, and those nodes
// keep the drain order after the others.
void sequence_by_places(const sched::ClusterSnapshot& snap, const sched::Framework& framework, sched::PlacementCache& cache,
                        const std::vector<int>& spot, std::vector<NodePlan>& drainable) {
  const int plenty = static_cast<int>(pods_to_move(drainable)) + 1;
  // Pods of one signature pass the node-static filters on the same spot nodes; with the same
  // requests as well, they have the same places.
  std::unordered_map<std::string, std::vector<int>> feasible_of;  // pod signature -> spot nodes
  std::unordered_map<std::string, int> places_of;                 // signature and requests -> places
  std::string key;
  sched::Fork probe(snap);
  auto room = [](int64_t left, int64_t asked) { return asked <= 0 || left >= asked; };
  for (NodePlan& np : drainable) {
    int fewest = plenty;
    for (const PodMove& move : np.moves) {
      const model::Pod& pod = *move.pod;
      const model::ResourceList& r = pod.requests;
      sched::Framework::signature(pod, key, false);
      const size_t signature_size = key.size();
      auto raw = [&](const auto& v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
      raw(r.cpu_milli);
      raw(r.memory);
      raw(r.ephemeral_storage);
      for (const auto& [name, value] : r.scalars()) {
        raw(name.id());
        raw(value);
      }
      auto [it, added] = places_of.try_emplace(key, 0);
      if (added) {
        auto [feasible, first] = feasible_of.try_emplace(key.substr(0, signature_size));
        if (first) feasible->second = statically_feasible_unbound(framework, pod, probe, spot, cache);
        int count = 0;
        for (int n : feasible->second) {
          // The snapshot's packed resources, not the NodeInfos.
          const sched::BasicResources& a = snap.allocatable_basic(n);
          const sched::BasicResources& u = snap.used_basic()[static_cast<size_t>(n)];
          bool fits = room(a.pods - u.pods, 1) && room(a.cpu_milli - u.cpu_milli, r.cpu_milli) && room(a.memory - u.memory, r.memory) &&
                      room(a.ephemeral_storage - u.ephemeral_storage, r.ephemeral_storage);
          for (const auto& [name, value] : r.scalars()) fits = fits && room(probe.free_of(n, name), value);
          if (fits && ++count >= plenty) break;
        }
        it->second = count;
      }
      fewest = std::min(fewest, it->second);
    }
    np.places = fewest;
  }
  std::stable_sort(drainable.begin(), drainable.end(), [](const NodePlan& a, const NodePlan& b) { return *a.places < *b.places; });
}

// The order a plan takes its on-demand nodes in: `order` itself, or for DrainOrder::kAuto,
// ScarceResources when a pod on one of `on_demand` (snapshot indexes) asks for `scarce` (the
// cluster's scarcest extended resource, sched::Demand), RequestedCPU otherwise.
DrainOrder effective_drain_order(DrainOrder order, const sched::ClusterSnapshot& snap, const std::vector<int>& on_demand,
                                 const model::InternedString& scarce) {
  if (order != DrainOrder::kAuto) return order;
  if (!scarce.empty())
    for (int n : on_demand)
      if (snap.node(n).used.scalar(scarce) > 0) return DrainOrder::kScarceResources;
  return DrainOrder::kRequestedCpu;
}

// Steps 3 to 5 of planner.hpp for the on-demand nodes of a pass, each node decided once. The
// state every decision reads is set up once per plan: the profile's framework, the budgets, the
// demand still to place, the Pending pods. The plan search (step 6) runs a second pass.
class PlanPass {
 public:
  // `pods`: the input's pods the plan sees (without expendable ones).
  PlanPass(const PlanInput& in, const std::vector<PodPtr>& pods, const PolicySpec& spec, DrainOrder order,
           const sched::ClusterSnapshot& snap, const std::vector<int>& spot, std::vector<NodePtr> spot_nodes, model::InternedString scarce)
      : in_(in),
        order_(order),
        snap_(snap),
        spot_(spot),
        scarce_(std::move(scarce)),
        framework_(sched::Framework::create(spec.profile)),
        demand_(scarce_),
        cache_(snap),
        budgets_(in.pdbs),
        reach_(std::move(spot_nodes)),
        ctx_{spec,
             [this](std::string_view ns) -> const model::Labels* {
               auto it = in_.namespaces.find(std::string(ns));
               return it == in_.namespaces.end() ? nullptr : &it->second;
             },
             [this](const model::Pod& pod) { return budgets_.covers(pod); },
             // With no spot node at all, no pod is pinned: every node says there is none.
             spot.empty() ? nullptr : &reach_, in.owners} {
    cache_.set_demand(&demand_);
    // Pods the scheduler has not bound yet (an HPA scale-up, a StatefulSet's or this very
    // drain's replacement) will take room too: the snapshot holds bound pods only.
    for (const auto& pod : pods)
      if (pod->node_name.empty() && !pod->terminal() && !pod->terminating()) pending_.push_back(pod);
  }
  PlanPass(const PlanPass&) = delete;  // ctx_ points into the pass
  PlanPass& operator=(const PlanPass&) = delete;

  const Result<sched::Framework>& framework() const { return framework_; }
  sched::PlacementCache& cache() { return cache_; }

  // One pass over the on-demand nodes in `order`. `hints` (from the plan search): the spot node
  // to try first for a pod, through every filter.
  Pass run(const std::vector<int>& order, const Hints* hints) {
    Pass pass;
    for (int idx : order)
      for (const auto& pod : snap_.node(idx).pods) demand_.add(*pod);
    sched::Fork committed(snap_);
    committed.track_candidates(spot_, scarce_);
    reserve_pending(committed);
    for (int idx : order) {
      if (in_.only_node && snap_.node(idx).name != *in_.only_node) continue;
      decide(idx, hints, committed, pass);
    }
    return pass;
  }

 private:
  // Step 2's last part: each Pending pod that could run on a spot node takes room there before
  // any node is planned: on the node it is nominated to (a preemption makes room for it there),
  // or where it fits. One that fits on no spot node takes none here; the unschedulable-pods gate
  // sees it.
  void reserve_pending(sched::Fork& committed) {
    if (!framework_) return;
    for (const auto& pod : pending_) {
      int node = -1;
      if (!pod->nominated_node.empty())
        if (auto n = snap_.index_of(pod->nominated_node.view()); n && std::find(spot_.begin(), spot_.end(), *n) != spot_.end()) node = *n;
      if (node < 0) node = framework_->place_on_tracked(*pod, committed, cache_).node;
      if (node >= 0) committed.add_pod(node, pod);
    }
  }

  // Steps 3 to 5 for one node. Its pods leave the demand as they are placed; whatever is left
  // (pods that stay, or all of them when the node cannot drain) once the node is decided.
  void decide(int idx, const Hints* hints, sched::Fork& committed, Pass& pass) {
    undecided_.clear();
    for (const auto& pod : snap_.node(idx).pods) undecided_.push_back(pod.get());
    auto outcome = plan_node(idx, hints, committed, pass);
    if (auto* node_plan = std::get_if<NodePlan>(&outcome)) pass.drainable.push_back(std::move(*node_plan));
    else pass.undrainable.push_back(std::get<NodeRejection>(std::move(outcome)));
    for (const auto* p : undecided_)
      if (p) demand_.add(*p, -1);
  }

  // The node's plan, or why it cannot drain.
  std::variant<NodePlan, NodeRejection> plan_node(int idx, const Hints* hints, sched::Fork& committed, Pass& pass) {
    const sched::NodeInfo& info = snap_.node(idx);
    if (auto ex = in_.excluded.find(info.name); ex != in_.excluded.end())
      return NodeRejection(info.name, ex->second.rule, ex->second.reason);
    if (!info.node->opt_out.empty())
      return NodeRejection(info.name, "node-annotation", fmt::format("the node is annotated {}=true", info.node->opt_out));
    NodeRejection rejection(info.name);
    NodePlan node_plan;
    node_plan.node = info.name;
    node_plan.requested_cpu_milli = info.used.cpu_milli;

    std::vector<Candidate> moving = verdicts(info, node_plan, rejection);
    if (moving.empty() && rejection.reasons.empty()) {
      rejection.add("nothing-to-move", "nothing to move: every pod on it stays (DaemonSet, static or terminating pods)");
      return rejection;
    }
    charge_budgets(moving, rejection);
    // Only the placement decides this node: the plan search may try it.
    if (rejection.reasons.empty()) {
      std::vector<PodPtr> pods;
      for (const auto& c : moving) pods.push_back(c.pod);
      pass.searchable.emplace_back(idx, std::move(pods));
    }
    sched::Fork attempt = committed.fork();
    for (const auto& c : moving) attempt.remove_pod(idx, *c.pod);
    place(moving, hints, attempt, node_plan, rejection);
    if (!rejection.reasons.empty()) return rejection;
    // Step 5: later nodes see these placements.
    committed.commit(std::move(attempt));
    // Budget-covered pods first: a refusal then stops the drain before unprotected pods move.
    std::stable_partition(node_plan.moves.begin(), node_plan.moves.end(), [](const PodMove& m) { return !m.budgets.empty(); });
    return node_plan;
  }

  // Step 3: every pod's verdict; the pods to move, in the order to place them (largest CPU
  // request first, ties by the pods' order on the node; with the ScarceResources order, largest
  // request of the scarce resource first).
  std::vector<Candidate> verdicts(const sched::NodeInfo& info, NodePlan& node_plan, NodeRejection& rejection) const {
    std::vector<Candidate> moving;
    for (const auto& pod : info.pods) {
      PodVerdict v = classify(*pod, ctx_);
      switch (v.verdict) {
        case Verdict::kSkip:
          node_plan.skipped.push_back(fmt::format("{}: {}", pod->key(), v.reason));
          break;
        case Verdict::kBlock:
          rejection.add(v.rule, fmt::format("pod {}: {}", pod->key(), v.reason));
          break;
        case Verdict::kMove:
          if (auto claim = unknown_claim(*pod)) {
            rejection.add("volume-unknown", fmt::format("pod {}: PersistentVolumeClaim {} or its PersistentVolume is not known, so the "
                                                        "zone its volume needs cannot be checked",
                                                        pod->key(), *claim));
            break;
          }
          moving.push_back({pod, std::move(v), {}});
          break;
      }
    }
    std::stable_sort(moving.begin(), moving.end(), [&](const Candidate& a, const Candidate& b) {
      if (order_ == DrainOrder::kScarceResources && !scarce_.empty()) {
        int64_t sa = a.pod->requests.get(scarce_.view()), sb = b.pod->requests.get(scarce_.view());
        if (sa != sb) return sa > sb;
      }
      return a.pod->requests.cpu_milli > b.pod->requests.cpu_milli;
    });
    return moving;
  }

  // A claim of the pod that the watched claims and volumes know nothing about.
  std::optional<std::string> unknown_claim(const model::Pod& pod) const {
    if (!in_.volumes_watched) return std::nullopt;
    for (const auto& claim : pod.pvc_claims) {
      std::string key = fmt::format("{}/{}", pod.meta.namespace_.view(), claim.view());
      if (!in_.volumes.count(key)) return key;
    }
    return std::nullopt;
  }

  // Step 3, budgets: the Move pods charged against their PodDisruptionBudgets together.
  void charge_budgets(std::vector<Candidate>& moving, NodeRejection& rejection) const {
    std::vector<const model::Pod*> moving_pods;
    for (const auto& c : moving) moving_pods.push_back(c.pod.get());
    BudgetCheck budget = check_budgets(moving_pods, budgets_);
    for (auto& r : budget.reasons) rejection.add("budget", std::move(r));
    for (size_t k = 0; k < moving.size(); ++k) moving[k].budgets = std::move(budget.budgets_of[k]);
  }

  // Step 4: each Move pod placed on a spot node in the what-if, until one fits nowhere.
  void place(const std::vector<Candidate>& moving, const Hints* hints, sched::Fork& attempt, NodePlan& node_plan,
             NodeRejection& rejection) {
    if (!framework_) {
      rejection.add("profile-invalid", fmt::format("the scheduling profile is invalid: {}", framework_.error().message));
      return;
    }
    if (spot_.empty()) {
      rejection.add("no-spot-nodes", "no Ready, schedulable node matches the spotNodeSelector");
      return;
    }
    for (const auto& c : moving) {
      // Where the pod's controller would see it scheduled: the same pod, not bound anywhere
      // (assigned into one reused Pod, whose buffers outlive the loop).
      unbound_ = *c.pod;
      unbound_.node_name = {};
      leave_demand(c.pod.get());
      sched::Placement placed;
      if (hints)
        if (auto h = hints->find(c.pod.get()); h != hints->end()) placed = framework_->place(unbound_, attempt, {h->second}, &cache_);
      if (placed.node < 0) placed = framework_->place_on_tracked(unbound_, attempt, cache_);
      if (placed.node < 0) {
        rejection.add("no-room", fmt::format("pod {} fits on no spot node: {}", c.pod->key(), placed.diagnosis.message()));
        return;
      }
      // The what-if holds the pod itself: nothing in a fork reads an added pod's node name.
      attempt.add_pod(placed.node, c.pod);
      PodMove move;
      move.pod = c.pod;
      move.target = snap_.node(placed.node).name;
      for (const auto* pdb : c.budgets) move.budgets.push_back(pdb->meta.key());
      if (c.verdict.warning) move.warning = c.verdict.reason;
      node_plan.moves.push_back(std::move(move));
    }
  }

  void leave_demand(const model::Pod* pod) {
    if (auto it = std::find(undecided_.begin(), undecided_.end(), pod); it != undecided_.end()) {
      demand_.add(*pod, -1);
      *it = nullptr;
    }
  }

  const PlanInput& in_;
  const DrainOrder order_;  // the spec's, Auto resolved
  const sched::ClusterSnapshot& snap_;
  const std::vector<int>& spot_;
  const model::InternedString scarce_;
  const Result<sched::Framework> framework_;
  sched::Demand demand_;  // what is still to be placed: the pods of the on-demand nodes not decided yet
  sched::PlacementCache cache_;
  BudgetIndex budgets_;
  SpotReach reach_;
  DrainContext ctx_;
  std::vector<PodPtr> pending_;
  std::vector<const model::Pod*> undecided_;  // the node being decided: its pods still in the demand
  model::Pod unbound_;
};

}  // namespace

void NodeRejection::add(std::string_view rule, std::string reason) {
  reasons.push_back(std::move(reason));
  if (std::find(rules.begin(), rules.end(), rule) == rules.end()) rules.push_back(rule);
}

namespace {

// Which expendable pods the plan's moves push off each spot node: the scheduler preempts the
// lowest priority first (then the largest CPU request, then by name) until the move fits, and the
// pod is named in the plan of the drainable node whose move needs its room. An estimate: Pending
// pods' reservations are not counted against the room.
void displace_expendable(const sched::ClusterSnapshot& snap, const std::vector<int>& spot, const std::vector<PodPtr>& expendable_pods,
                         Plan& plan) {
  struct Room {
    model::ResourceList free;  // allocatable less every pod's requests, placeholders included
    std::vector<PodPtr> placeholders;
    size_t next = 0;
  };
  std::map<std::string, Room, std::less<>> rooms;
  for (int n : spot) {
    const sched::NodeInfo& info = snap.node(n);
    Room room;
    room.free = info.allocatable;
    room.free.cpu_milli -= info.used.cpu_milli;
    room.free.memory -= info.used.memory;
    room.free.ephemeral_storage -= info.used.ephemeral_storage;
    room.free.pods -= info.used.pods;
    for (const auto& [name, value] : info.used.scalars) room.free.set(name.view(), room.free.get(name.view()) - value);
    rooms.emplace(info.name, std::move(room));
  }
  for (const auto& p : expendable_pods) {
    auto it = rooms.find(p->node_name.view());
    if (it == rooms.end() || p->terminal() || p->terminating()) continue;
    it->second.free.subtract(p->requests);
    it->second.free.pods -= 1;
    it->second.placeholders.push_back(p);
  }
  for (auto& [name, room] : rooms)
    std::sort(room.placeholders.begin(), room.placeholders.end(), [](const PodPtr& a, const PodPtr& b) {
      if (a->priority != b->priority) return a->priority < b->priority;
      if (a->requests.cpu_milli != b->requests.cpu_milli) return a->requests.cpu_milli > b->requests.cpu_milli;
      return a->key_less(*b);
    });
  auto short_of_room = [](const model::ResourceList& free) {
    bool negative = free.pods < 0;
    free.for_each([&](std::string_view, int64_t v) { negative |= v < 0; });
    return negative;
  };
  for (auto& np : plan.drainable)
    for (const auto& m : np.moves) {
      auto it = rooms.find(m.target);
      if (it == rooms.end()) continue;
      Room& room = it->second;
      room.free.subtract(m.pod->requests);
      room.free.pods -= 1;
      while (short_of_room(room.free) && room.next < room.placeholders.size()) {
        const PodPtr& p = room.placeholders[room.next++];
        room.free.add(p->requests);
        room.free.pods += 1;
        np.displaces.push_back(fmt::format("{} on {}", p->key(), m.target));
      }
    }
  for (const auto& np : plan.drainable) plan.summary.displaced_pods += static_cast<int>(np.displaces.size());
}

}  // namespace

Plan make_plan(const PlanInput& in, const PolicySpec& spec) {
  const auto started = std::chrono::steady_clock::now();
  Plan plan;
  std::optional<sched::ClusterSnapshot> own;
  // Expendable pods (below expendablePodsPriorityCutoff) are left out: their room is free, since
  // the scheduler preempts them, and they stay where they are.
  std::vector<PodPtr> kept, expendable_pods;
  if (std::any_of(in.pods.begin(), in.pods.end(), [&](const PodPtr& p) { return expendable(*p, spec); }))
    for (const auto& p : in.pods) (expendable(*p, spec) ? expendable_pods : kept).push_back(p);
  const std::vector<PodPtr>& pods = expendable_pods.empty() ? in.pods : kept;
  const sched::ClusterSnapshot& snap =
      in.snapshots ? in.snapshots->get(in.nodes, pods, in.volumes) : own.emplace(sched::ClusterSnapshot::build(in.nodes, pods, in.volumes));

  // Step 1: the node classes.
  std::vector<int> on_demand, spot;
  std::vector<NodePtr> spot_nodes;
  for (int i = 0; i < snap.size(); ++i) {
    const model::Node& node = *snap.node(i).node;
    NodeClass cls = classify_node(node, spec);
    if (cls == NodeClass::kNone) continue;
    if (cls == NodeClass::kBoth) {
      plan.undrainable.emplace_back(node.name(), "both-selectors",
                                    "matches both the onDemandNodeSelector and the spotNodeSelector, so it is neither");
      continue;
    }
    if (cls == NodeClass::kSpot) {
      if (!usable(node)) continue;
      spot.push_back(i);
      spot_nodes.push_back(snap.node(i).node);
      continue;
    }
    if (!usable(node)) {
      if (!in.only_node) plan.undrainable.emplace_back(node.name(), "not-usable", unusable_reason(node));
      continue;
    }
    on_demand.push_back(i);
  }
  plan.summary.on_demand_nodes = static_cast<int>(on_demand.size());
  plan.summary.spot_nodes = static_cast<int>(spot.size());

  // Step 2: sources least requested CPU first, or least scarcity-weighted demand. Targets, for
  // display: by free CPU as the profile ranks them.
  const auto scarce = sched::Demand::scarcest_extended_resource(snap);
  const DrainOrder order = effective_drain_order(spec.drain_order, snap, on_demand, scarce);
  plan.summary.drain_order = order;
  if (order == DrainOrder::kScarceResources) plan.summary.scarce_resource = std::string(scarce.view());
  // on_demand reordered by a key per node (stable: ties keep their order).
  auto order_by = [&](const std::vector<double>& key, auto before) {
    std::vector<size_t> order(on_demand.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return before(key[a], key[b]); });
    std::vector<int> sorted;
    for (size_t k : order) sorted.push_back(on_demand[k]);
    on_demand = std::move(sorted);
  };
  if (order == DrainOrder::kScarceResources) {
    order_by(scarcity_keys(snap, on_demand, spot, scarce), std::less<double>());
  } else {
    std::stable_sort(on_demand.begin(), on_demand.end(),
                     [&](int a, int b) { return snap.node(a).used.cpu_milli < snap.node(b).used.cpu_milli; });
    if (order == DrainOrder::kHighestSavingsPerEviction && spec.pricing) {
      // Price per pod that would have to move (every pod but those that stay: DaemonSet, static
      // and finished ones), highest first; nodes without a price after, by requested CPU.
      std::vector<double> key;
      for (int n : on_demand) {
        auto price = spec.pricing->price(*snap.node(n).node);
        int pods = 0;
        for (const auto& p : snap.node(n).pods)
          if (!stays_on_node(*p)) ++pods;
        key.push_back(price ? *price / std::max(pods, 1) : -1);
      }
      order_by(key, std::greater<double>());
    }
  }
  {
    std::vector<int> by_free = spot;
    bool emptiest = emptiest_first(spec.profile);
    auto free_cpu = [&](int n) { return snap.node(n).allocatable.cpu_milli - snap.node(n).used.cpu_milli; };
    std::stable_sort(by_free.begin(), by_free.end(),
                     [&](int a, int b) { return emptiest ? free_cpu(a) > free_cpu(b) : free_cpu(a) < free_cpu(b); });
    for (int n : by_free) plan.spot_nodes.push_back(snap.node(n).name);
  }

  // Steps 3 to 5.
  PlanPass planner(in, pods, spec, order, snap, spot, std::move(spot_nodes), scarce);
  // The previous plan's nodes and targets. The evictor's re-check of one node carries out the
  // plan its drain started from: each pod is tried first on the spot node that plan chose.
  std::optional<Search> previous;
  if (in.previous) previous = previous_nodes(snap, *in.previous, on_demand, spot, in.only_node);
  Pass pass = planner.run(on_demand, in.only_node && previous ? &previous->hints : nullptr);
  // Step 6: plan stability and the plan search. Neither has anything to add when every node
  // only the placement decides drains.
  const auto& framework = planner.framework();
  if (!in.only_node && framework && !spot.empty() && pass.drainable.size() < pass.searchable.size()) {
    const size_t by_node = pass.drainable.size();
    // Replan through the whole predicate engine: the chosen nodes first, in their order, each pod
    // tried first where `chosen` put it; then every other node as before.
    auto replan = [&](const Search& chosen) {
      std::vector<int> order = chosen.nodes;
      for (int idx : on_demand)
        if (std::find(chosen.nodes.begin(), chosen.nodes.end(), idx) == chosen.nodes.end()) order.push_back(idx);
      return planner.run(order, &chosen.hints);
    };
    // The previous plan's nodes, as it placed their pods, are kept while they drain as many
    // nodes as planning node by node and move no more pods (and the search starts from them).
    // Otherwise the plan made one drain later, from a cluster where replacements went elsewhere
    // than planned, may settle on other nodes, and the drains carry out no one plan.
    if (previous && !previous->nodes.empty() && previous->nodes.size() >= pass.drainable.size()) {
      Pass kept = replan(*previous);
      if (kept.drainable.size() > pass.drainable.size() ||
          (kept.drainable.size() == pass.drainable.size() && pods_to_move(kept.drainable) <= pods_to_move(pass.drainable)))
        pass = std::move(kept);
    }
    // The search looks for more nodes.
    if (spec.search_iterations > 0) {
      Search found = search_nodes(snap, *framework, planner.cache(), spot, scarce, pass, spec.search_iterations);
      if (found.nodes.size() > pass.drainable.size()) {
        Pass searched = replan(found);
        if (searched.drainable.size() > pass.drainable.size()) pass = std::move(searched);
      }
      if (pass.drainable.size() > by_node) plan.summary.searched_nodes = static_cast<int>(pass.drainable.size() - by_node);
    }
  }
  plan.drainable = std::move(pass.drainable);
  for (auto& r : pass.undrainable) plan.undrainable.push_back(std::move(r));
  // Step 7: the on-demand floor.
  if (spec.min_on_demand_nodes > 0 && !in.only_node) {
    int running = 0;
    for (int n : on_demand)
      if (std::any_of(snap.node(n).pods.begin(), snap.node(n).pods.end(), [](const PodPtr& p) { return !stays_on_node(*p); })) ++running;
    const size_t allowed = static_cast<size_t>(std::max(running - spec.min_on_demand_nodes, 0));
    for (size_t k = allowed; k < plan.drainable.size(); ++k)
      plan.undrainable.emplace_back(plan.drainable[k].node, "on-demand-floor",
                                    fmt::format("OnDemandFloor: minOnDemandNodes is {} and {} on-demand node{} run{} pods, so {}",
                                                spec.min_on_demand_nodes, running, running == 1 ? "" : "s", running == 1 ? "s" : "",
                                                allowed == 0 ? std::string("none may be drained")
                                                             : fmt::format("{} may be drained (the first {}in drain order)", allowed,
                                                                           allowed == 1 ? "" : fmt::format("{} ", allowed))));
    if (plan.drainable.size() > allowed)
      plan.drainable.erase(plan.drainable.begin() + static_cast<std::ptrdiff_t>(allowed), plan.drainable.end());
    plan.summary.searched_nodes = std::min(plan.summary.searched_nodes, static_cast<int>(plan.drainable.size()));
  }
  // Step 8: the drain sequence.
  if (!in.only_node && framework && order != DrainOrder::kHighestSavingsPerEviction)
    sequence_by_places(snap, *framework, planner.cache(), spot, plan.drainable);
  plan.summary.pods_to_move = static_cast<int>(pods_to_move(plan.drainable));
  if (!expendable_pods.empty()) displace_expendable(snap, spot, expendable_pods, plan);
  if (spec.pricing) {
    plan.summary.hourly_savings = 0.0;
    for (auto& np : plan.drainable) {
      if (auto n = snap.index_of(np.node)) np.hourly_saving = spec.pricing->price(*snap.node(*n).node);
      if (np.hourly_saving) *plan.summary.hourly_savings += *np.hourly_saving;
      else ++plan.summary.unpriced_nodes;
    }
  }
  plan.summary.drainable_nodes = static_cast<int>(plan.drainable.size());
  plan.summary.undrainable_nodes = static_cast<int>(plan.undrainable.size());
  plan.summary.plan_millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return plan;
}

}  // namespace spotshift::drain
