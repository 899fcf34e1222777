// Packing scores for clusters where an extended resource (GPUs) is what runs out:
//
// - Fragmentation: how much of the scarce resource a placement strands. A node's free scarce
//   capacity is stranded for a pod shape of the demand when that shape does not fit there (or
//   does not use the resource at all); the node's fragmentation is that amount weighted by the
//   shapes' shares, after the idea of the openb trace's FGD scheduler (Weng et al., ATC'23).
//   The score is the increase the pod causes; the lowest wins. A CPU-only pod then goes where
//   the GPUs are already taken, and a GPU pod where it leaves a remainder others can use.
// - BestFit: multi-resource best fit. What the node has left after the pod, per resource
//   (cpu, memory, the scarce resource) relative to the average node's free amount, weighted by
//   how scarce the resource is (demand over the free total of the candidate nodes); the
//   smallest remainder wins.
//
// Both read the Demand the placement carries (CycleState::resolve_demand: the PlacementCache's,
// or for a placement without a cache the snapshot's pods).

#include "sched/demand.hpp"
#include "sched/plugins.hpp"

#include <algorithm>
#include <cmath>

namespace spotshift::sched {

namespace {

class Fragmentation final : public ScorePlugin, public ScoreNodes, public PreScore, public NormalizeScore, public LowestScore {
 public:
  std::string_view name() const override { return "Fragmentation"; }
  // Nothing scarce: every node alike, without a look at any.
  PreScoreResult pre_score(CycleState& state, size_t, const model::Pod&, const Fork& fork) const override {
    return state.resolve_demand(fork).resource().empty() ? PreScoreResult::kUniform : PreScoreResult::kScoreEach;
  }
  // A pod asking none of the scarce resource leaves a node's free amount as it is and only
  // shrinks its other room, so it strands no less than before: no node scores below 0.
  std::optional<int64_t> lowest(const CycleState& state, size_t, const model::Pod& pod, const Fork&) const override {
    const Demand& d = *state.demand();
    if (d.resource().empty() || d.empty() || pod.requests.scalar(d.resource()) == 0) return 0;
    return std::nullopt;
  }
  // For such a pod a node's score is its free scarce amount times the pods of the demand it
  // strands newly, in the score's unit. The largest product over the tracked nodes is kept per
  // pod shape with the demand: counting pods out of it lowers no product, and the nodes the
  // tracking fork changed since are redone (their old products stay in: still a bound), as are
  // those a child fork changed.
  std::optional<Highest> highest(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork, const Fork& top,
                                 bool fresh) const override {
    if (!lowest(state, slot, pod, fork)) return std::nullopt;
    const Demand& d = *state.demand();
    if (d.resource().empty() || d.empty()) return Highest{0.5, false};  // every node scores 0
    Demand::Bound& bound = d.bounds()[{pod.requests.cpu_milli, pod.requests.memory}];
    const auto& log = top.tracked_changes();
    const bool kept = !fresh && bound.demand_version == d.fit_version() && bound.tracking_version == top.tracking_version() &&
                      bound.changes_seen <= log.size();
    if (kept) {
      for (size_t k = bound.changes_seen; k < log.size(); ++k) bound.value = std::max(bound.value, newly_stranded(pod, top, log[k], d));
    } else {
      bound = {d.fit_version(), top.tracking_version(), 0, 0};
      if (top.tracked_resource() == d.resource()) {
        // From the node with the most of the resource free down: a node with s free strands at
        // most s times the pods asking for no more than s, which shrinks on the way, so the walk
        // stops once that is no more than the largest product found.
        const auto& index = top.tracked_by_free_resource();
        for (auto it = index.rbegin(); it != index.rend() && it->first > 0; ++it) {
          if (it->first * d.asking_at_most(it->first) <= bound.value) break;
          bound.value = std::max(bound.value, newly_stranded(pod, top, it->second, d));
        }
      } else {
        for (int n : top.tracked()) bound.value = std::max(bound.value, newly_stranded(pod, top, n, d));
      }
    }
    bound.changes_seen = log.size();
    int64_t most = bound.value;
    if (&fork != &top)
      fork.for_each_changed_here([&](int n) {
        if (top.is_tracked(n)) most = std::max(most, newly_stranded(pod, fork, n, d));
      });
    // score() rounds its quotient to the nearest integer.
    return Highest{static_cast<double>(most) * 1000.0 / static_cast<double>(d.pods()) + 0.5, kept};
  }
  int64_t score(const CycleState& state, size_t, const model::Pod& pod, const Fork& fork, int n) const override {
    const Demand& d = *state.demand();
    if (d.resource().empty() || d.empty()) return 0;
    return increase(d, fork, n, Ask::of(pod, d));
  }
  // The score rounds capacity x 1000 / pods to the nearest integer, halves away from zero, so
  // "below the bound" is a comparison of integers, without the division: exactly as the rounded
  // quotient compares while the product is exact in a double (2^52), and the quotient's rounding
  // cannot reach a half that the exact value is not on (it is 1 / (2 pods) or more away).
  std::optional<int64_t> score_if_below(const CycleState& state, size_t, const model::Pod& pod, const Fork& fork, int n,
                                        int64_t bound) const override {
    const Demand& d = *state.demand();
    if (d.resource().empty() || d.empty()) return 0 < bound ? std::optional<int64_t>(0) : std::nullopt;
    return scaled_if_below(d, capacity_increase(d, fork, n, Ask::of(pod, d)), bound);
  }
  // The same, with the demand and what the pod asks looked up once for the run.
  Below first_below(const CycleState& state, size_t, const model::Pod& pod, const Fork& fork, const int* nodes, size_t count,
                    int64_t bound) const override {
    const Demand& d = *state.demand();
    if (d.resource().empty() || d.empty()) return {0 < bound ? 0 : count, 0};
    const Ask ask = Ask::of(pod, d);
    for (size_t k = 0; k < count; ++k)
      if (const std::optional<int64_t> score = scaled_if_below(d, capacity_increase(d, fork, nodes[k], ask), bound)) return {k, *score};
    return {count, 0};
  }
  // score() for each node, with what the pod asks looked up once.
  void score_nodes(const CycleState& state, size_t, const model::Pod& pod, const Fork& fork, const std::vector<int>& nodes,
                   std::vector<int64_t>& out) const override {
    const Demand& d = *state.demand();
    if (d.resource().empty() || d.empty()) {
      std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(nodes.size()), 0);
      return;
    }
    // A block of nodes' memo entries fetched ahead, then the block's scores: the waits for those
    // entries overlap.
    const Ask ask = Ask::of(pod, d);
    // The lists through pointers taken once: the memos' calls would make the compiler read the
    // vectors' addresses again for every node.
    const Room* free = state.rooms(fork, nodes, d.resource()).data();
    const int* node = nodes.data();
    int64_t* score = out.data();
    const size_t count = nodes.size();
    // The block's rooms after the pod and their memo slots are kept for the scores.
    constexpr size_t kBlock = 8;
    Room left[kBlock];
    Demand::Fitting* slot[kBlock];
    for (size_t first = 0; first < count; first += kBlock) {
      const size_t end = std::min(first + kBlock, count);
      for (size_t k = first; k < end; ++k)
        if (free[k].scarce > 0) {
          slot[k - first] = nullptr;
          if (ask.scarce == 0 && d.keeps_fitting(node[k], free[k], ask.cpu_milli, ask.memory)) continue;
          left[k - first] = after(free[k], ask);
          slot[k - first] = &d.prefetch_on(node[k], left[k - first]);
        }
      for (size_t k = first; k < end; ++k) {
        const Room& f = free[k];
        const size_t i = k - first;
        // Nothing free to strand, before or after, on a node with none free; none stranded newly
        // where every pod that fitted still fits.
        score[k] = f.scarce <= 0 || !slot[i] ? 0 : scaled(d, capacity_increase(f, left[i], d.stranded_on(node[k], f, left[i], *slot[i])));
      }
    }
  }
  bool reads_rooms() const override { return true; }
  void normalize(const std::vector<int64_t>& raw, std::vector<double>& out) const override { scale_lower_better(raw, out); }

 private:
  struct Ask {
    int64_t cpu_milli, memory, scarce;
    static Ask of(const model::Pod& pod, const Demand& d) {
      return {pod.requests.cpu_milli, pod.requests.memory, pod.requests.scalar(d.resource())};
    }
  };
  // The increase in the node's fragmentation: its free scarce amount times the share of the
  // demand it is stranded for, after the pod less before.
  static int64_t increase(const Demand& d, const Fork& fork, int n, const Ask& ask) {
    return scaled(d, capacity_increase(d, fork, n, ask));
  }
  // The increase counted in pods: free scarce amount times the pods it is stranded for, after
  // less before (the shares' common denominator applied in scaled()).
  static int64_t capacity_increase(const Demand& d, const Fork& fork, int n, const Ask& ask) {
    return capacity_increase(d, n, fork.room_of(n, d.resource()), ask);
  }
  // The same for node n with free room f.
  static int64_t capacity_increase(const Demand& d, int n, const Room& f, const Ask& ask) {
    if (f.scarce <= 0) return 0;  // nothing free to strand, before or after
    const Room left = after(f, ask);
    return capacity_increase(f, left, d.stranded_on(n, f, left));
  }
  // The same from the room before (f) and after (left) and the pods stranded in each.
  static int64_t capacity_increase(const Room& f, const Room& left, std::pair<int64_t, int64_t> stranded) {
    return (left.scarce <= 0 ? 0 : left.scarce * stranded.second) - f.scarce * stranded.first;
  }
  // A node's room with free room f after the pod.
  static Room after(const Room& f, const Ask& ask) {
    return {f.cpu_milli - ask.cpu_milli, f.memory - ask.memory, f.scarce - ask.scarce, f.pods - 1};
  }
  // The score of a capacity increase when it is below `bound`. The comparison without the
  // division, as score_if_below() says.
  static std::optional<int64_t> scaled_if_below(const Demand& d, int64_t capacity, int64_t bound) {
    constexpr int64_t kExact = (int64_t(1) << 52) / 1000;
    if (capacity > -kExact && capacity < kExact) {
      // round(x) < B: x < B - 1/2 when x >= 0; x <= B - 1/2 when x < 0 (halves round away from 0).
      const __int128 twice_x = static_cast<__int128>(capacity) * 2000, twice_bound = static_cast<__int128>(2 * bound - 1) * d.pods();
      if (capacity >= 0 ? twice_x >= twice_bound : twice_x > twice_bound) return std::nullopt;
    }
    const int64_t score = scaled(d, capacity);
    return score < bound ? std::optional<int64_t>(score) : std::nullopt;
  }
  // In thousandths of the resource's unit, so that small differences still order nodes.
  static int64_t scaled(const Demand& d, int64_t capacity) {
    if (capacity == 0) return 0;  // most nodes: nothing free to strand, or no change
    return round_half_away(static_cast<double>(capacity) * 1000.0 / static_cast<double>(d.pods()));
  }
  // For a pod asking none of the scarce resource: the node's free scarce amount times the pods
  // of the demand that fit the node before the pod but not after.
  static int64_t newly_stranded(const model::Pod& pod, const Fork& fork, int n, const Demand& d) {
    const Room f = fork.room_of(n, d.resource());
    if (f.scarce <= 0 || d.keeps_fitting(n, f, pod.requests.cpu_milli, pod.requests.memory)) return 0;
    auto [before, later] = d.stranded_on(n, f, after(f, Ask{pod.requests.cpu_milli, pod.requests.memory, 0}));
    return f.scarce * (later - before);
  }
};

class BestFit final : public ScorePlugin, public PreScore, public ScoreNodes, public NormalizeScore {
 public:
  std::string_view name() const override { return "BestFit"; }
  PreScoreResult pre_score(CycleState& state, size_t, const model::Pod&, const Fork& fork) const override {
    state.resolve_demand(fork);
    return PreScoreResult::kScoreEach;
  }
  int64_t score(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork, int n) const override {
    std::vector<int64_t> out(1);
    score_nodes(state, slot, pod, fork, {n}, out);
    return out[0];
  }
  void score_nodes(const CycleState& state, size_t, const model::Pod& pod, const Fork& fork, const std::vector<int>& nodes,
                   std::vector<int64_t>& out) const override {
    const Demand& d = *state.demand();
    const auto& resource = d.resource();
    const int64_t want_scarce = resource.empty() ? 0 : pod.requests.scalar(resource);
    const std::vector<Room>& free = state.rooms(fork, nodes, resource);
    const int64_t ask[3] = {pod.requests.cpu_milli, pod.requests.memory, want_scarce};
    double free_total[3] = {0, 0, 0};
    for (const Room& f : free) {
      free_total[0] += static_cast<double>(f.cpu_milli - ask[0]);
      free_total[1] += static_cast<double>(f.memory - ask[1]);
      free_total[2] += static_cast<double>(f.scarce - ask[2]);
    }
    // weight_r = scarcity_r / average free_r, with scarcity_r = demand_r / free_total_r; a
    // resource nobody asks for, or that is nowhere free, does not count. With nothing left to
    // place (the last pod of a plan), every resource counts alike, each in its own scale.
    auto [cpu, memory, scarce] = d.totals();
    const double demand[3] = {static_cast<double>(cpu), static_cast<double>(memory), static_cast<double>(scarce)};
    double weight[3];
    const auto count = static_cast<double>(nodes.size());
    for (int r = 0; r < 3; ++r) {
      const double scarcity = d.empty() ? 1.0 : demand[r] / free_total[r];
      weight[r] = free_total[r] > 0 && (d.empty() || demand[r] > 0) ? scarcity * count / free_total[r] : 0.0;
    }
    for (size_t k = 0; k < nodes.size(); ++k) {
      const Room& f = free[k];
      double left = weight[0] * static_cast<double>(f.cpu_milli - ask[0]) + weight[1] * static_cast<double>(f.memory - ask[1]) +
                    weight[2] * static_cast<double>(f.scarce - ask[2]);
      out[k] = round_half_away(left * 1e6);
    }
  }
  bool reads_rooms() const override { return true; }
  void normalize(const std::vector<int64_t>& raw, std::vector<double>& out) const override { scale_lower_better(raw, out); }
};

}  // namespace

void add_packing_scores(Registry& r) {
  r.scores.push_back({"Fragmentation", without_args<Fragmentation>});
  r.scores.push_back({"BestFit", without_args<BestFit>});
}

}  // namespace spotshift::sched
