#include "drain/search.hpp"

#include <algorithm>
#include <random>
#include <utility>

namespace spotshift::drain::search {

namespace {

class Search {
 public:
  Search(const Problem& problem, uint64_t seed) : p_(problem), rng_(seed), load_(problem.free.size(), Amounts{}) {
    // Each resource weighs what the pods ask of it against what the spot nodes have free.
    std::array<double, kResources> free{}, need{};
    for (const auto& f : p_.free)
      for (size_t r = 0; r < kResources; ++r) free[r] += static_cast<double>(std::max<int64_t>(f[r], 0));
    for (const auto& n : p_.nodes)
      for (const auto& pod : n.pods)
        for (size_t r = 0; r < kResources; ++r) need[r] += static_cast<double>(pod.request[r]);
    for (size_t r = 0; r < kResources; ++r) weight_[r] = free[r] > 0 ? need[r] / free[r] : 0;
    key_.resize(p_.nodes.size());
    for (size_t i = 0; i < p_.nodes.size(); ++i)
      for (const auto& pod : p_.nodes[i].pods)
        for (size_t r = 0; r < kResources; ++r)
          if (free[r] > 0) key_[i] += weight_[r] * static_cast<double>(pod.request[r]) / free[r];
  }

  Solution run(Solution start, int iterations) {
    current_ = Solution{};
    current_.targets.resize(p_.nodes.size());
    for (size_t i = 0; i < start.targets.size() && i < p_.nodes.size(); ++i)
      if (!start.targets[i].empty()) {
        charge(i, start.targets[i], 1);
        settle(i, std::move(start.targets[i]));
      }
    Solution best = current_;
    std::vector<std::pair<size_t, std::vector<int>>> removed;
    std::vector<size_t> added;
    const int all = static_cast<int>(p_.nodes.size());
    for (int it = 0; it < iterations && best.drained < all; ++it) {
      removed.clear();
      added.clear();
      destroy(removed);
      repair(added);
      if (!better(best, current_)) {
        if (better(current_, best)) best = current_;
        continue;
      }
      // Worse than the best: undo the step.
      for (size_t i : added) take_back(i);
      for (auto& [i, targets] : removed) {
        charge(i, targets, 1);
        settle(i, std::move(targets));
      }
    }
    return best;
  }

 private:
  double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  size_t below(size_t n) { return static_cast<size_t>(uniform() * static_cast<double>(n)); }

  // Adds (sign 1) or takes back (-1) the load of the node's first targets.size() pods.
  void charge(size_t node, const std::vector<int>& targets, int sign) {
    const auto& pods = p_.nodes[node].pods;
    for (size_t k = 0; k < targets.size(); ++k)
      for (size_t r = 0; r < kResources; ++r) load_[static_cast<size_t>(targets[k])][r] += sign * pods[k].request[r];
  }

  static bool better(const Solution& a, const Solution& b) {
    return a.drained > b.drained || (a.drained == b.drained && a.moved < b.moved);
  }

  // Records the node as drained onto `targets` (its load already charged).
  void settle(size_t node, std::vector<int> targets) {
    ++current_.drained;
    current_.moved += static_cast<int>(targets.size());
    current_.targets[node] = std::move(targets);
  }

  std::vector<int> take_back(size_t node) {
    std::vector<int> targets = std::move(current_.targets[node]);
    current_.targets[node].clear();
    charge(node, targets, -1);
    --current_.drained;
    current_.moved -= static_cast<int>(targets.size());
    return targets;
  }

  // Takes back 1 to 4 drained nodes at random, or every drained node with a pod on 1 to 4
  // random spot nodes (which frees those spot nodes for a different mix).
  void destroy(std::vector<std::pair<size_t, std::vector<int>>>& removed) {
    drained_.clear();
    for (size_t i = 0; i < current_.targets.size(); ++i)
      if (!current_.targets[i].empty()) drained_.push_back(i);
    const size_t count = 1 + below(4);
    if (uniform() < 0.5) {
      for (size_t k = 0; k < count && !drained_.empty(); ++k) {
        size_t at = below(drained_.size());
        size_t node = drained_[at];
        drained_.erase(drained_.begin() + static_cast<std::ptrdiff_t>(at));
        removed.emplace_back(node, take_back(node));
      }
      return;
    }
    bins_.clear();
    for (size_t k = 0; k < count; ++k) bins_.push_back(static_cast<int>(below(p_.free.size())));
    for (size_t node : drained_) {
      const auto& t = current_.targets[node];
      if (std::any_of(t.begin(), t.end(), [&](int b) { return std::find(bins_.begin(), bins_.end(), b) != bins_.end(); }))
        removed.emplace_back(node, take_back(node));
    }
  }

  // Tries every node not drained, least weighted demand first with noise of +-15 %.
  void repair(std::vector<size_t>& added) {
    order_.clear();
    for (size_t i = 0; i < p_.nodes.size(); ++i)
      if (current_.targets[i].empty()) order_.emplace_back(key_[i] * (0.85 + 0.3 * uniform()), i);
    std::sort(order_.begin(), order_.end());
    for (const auto& [key, node] : order_)
      if (place(node)) added.push_back(node);
  }

  bool place(size_t node) {
    const auto& pods = p_.nodes[node].pods;
    if (pods.empty()) return false;
    std::vector<int> targets;
    targets.reserve(pods.size());
    for (const auto& pod : pods) {
      int bin = best_bin(pod);
      if (bin < 0) {
        charge(node, targets, -1);
        return false;
      }
      for (size_t r = 0; r < kResources; ++r) load_[static_cast<size_t>(bin)][r] += pod.request[r];
      targets.push_back(bin);
    }
    settle(node, std::move(targets));
    return true;
  }

  // Best fit: the least free share left, each resource weighted by its scarcity; a pod asking
  // none of the scarce resource pays for the CPU it takes from a node that still has some.
  int best_bin(const Pod& pod) {
    const std::vector<uint8_t>* allowed = pod.allowed >= 0 ? &p_.allowed[static_cast<size_t>(pod.allowed)] : nullptr;
    int best = -1;
    double best_score = 0;
    for (size_t b = 0; b < p_.free.size(); ++b) {
      if (allowed && !(*allowed)[b]) continue;
      const Amounts& cap = p_.free[b];
      const Amounts& used = load_[b];
      bool fits = true;
      for (size_t r = 0; r < kResources && fits; ++r) fits = pod.request[r] == 0 || used[r] + pod.request[r] <= cap[r];
      if (!fits) continue;
      double score = 0;
      for (size_t r = 0; r < kResources; ++r)
        if (cap[r] > 0) score += weight_[r] * static_cast<double>(cap[r] - used[r] - pod.request[r]) / static_cast<double>(cap[r]);
      constexpr size_t kScarce = kResources - 1;
      if (pod.request[kScarce] == 0 && cap[kScarce] - used[kScarce] > 0)
        score += weight_[kScarce] * static_cast<double>(pod.request[0]) / static_cast<double>(std::max<int64_t>(1, cap[0] - used[0]));
      score *= 0.95 + 0.1 * uniform();
      if (best < 0 || score < best_score) {
        best = static_cast<int>(b);
        best_score = score;
      }
    }
    return best;
  }

  const Problem& p_;
  std::mt19937_64 rng_;
  std::vector<Amounts> load_;
  std::array<double, kResources> weight_{};
  std::vector<double> key_;
  Solution current_;
  std::vector<size_t> drained_;
  std::vector<int> bins_;
  std::vector<std::pair<double, size_t>> order_;
};

}  // namespace

bool feasible(const Problem& problem, const Solution& solution) {
  if (solution.targets.size() > problem.nodes.size()) return false;
  std::vector<Amounts> load(problem.free.size(), Amounts{});
  int drained = 0, moved = 0;
  for (size_t i = 0; i < solution.targets.size(); ++i) {
    const auto& t = solution.targets[i];
    if (t.empty()) continue;
    const auto& pods = problem.nodes[i].pods;
    if (t.size() != pods.size()) return false;
    ++drained;
    moved += static_cast<int>(pods.size());
    for (size_t k = 0; k < pods.size(); ++k) {
      if (t[k] < 0 || static_cast<size_t>(t[k]) >= problem.free.size()) return false;
      const auto b = static_cast<size_t>(t[k]);
      if (pods[k].allowed >= 0 && !problem.allowed[static_cast<size_t>(pods[k].allowed)][b]) return false;
      for (size_t r = 0; r < kResources; ++r) load[b][r] += pods[k].request[r];
    }
  }
  for (size_t b = 0; b < load.size(); ++b)
    for (size_t r = 0; r < kResources; ++r)
      if (load[b][r] > 0 && load[b][r] > problem.free[b][r]) return false;
  return drained == solution.drained && moved == solution.moved;
}

Solution improve(const Problem& problem, Solution start, int iterations, uint64_t seed) {
  if (problem.nodes.empty() || problem.free.empty() || iterations <= 0) return start;
  return Search(problem, seed).run(std::move(start), iterations);
}

}  // namespace spotshift::drain::search
