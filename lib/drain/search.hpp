#pragma once
// The plan search (spec.searchIterations): a large neighbourhood search for a set of on-demand
// nodes that drains more than the node-by-node plan. Pure, deterministic, no I/O.
//
// The node-by-node plan decides each on-demand node once, in order: it never gives back a node
// already drained to make room for two others. The search does, on a compact model of the
// problem: each spot node's free CPU, memory, pod slots and scarce extended resource, and each
// pod's requests and the spot nodes its node-static filters allow. One step takes back a few
// drained nodes (at random, or every node with a pod on a few random spot nodes), then tries the
// other nodes again in the drain order with a little noise, each pod on the best-fitting spot
// node (resources weighted by scarcity); a step is kept when it drains more, or as many with no
// more pods moved. The planner then replans the best set found through the whole predicate
// engine (planner.cpp), so the model only proposes: what the model leaves out (inter-pod
// affinity, spread, volumes...) is checked there.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace spotshift::drain::search {

inline constexpr std::size_t kResources = 4;  // cpu (milli), memory, pod slots, the scarce resource
using Amounts = std::array<int64_t, kResources>;

struct Pod {
  Amounts request{};
  int allowed = -1;  // index into Problem::allowed; -1: every spot node
};

struct Node {
  std::vector<Pod> pods;  // in the order they are placed
};

struct Problem {
  std::vector<Amounts> free;                  // per spot node
  std::vector<Node> nodes;                    // in drain order
  std::vector<std::vector<uint8_t>> allowed;  // per set: 1 for each spot node the pods may use
};

// For each node, the spot node of each of its pods (in Node::pods order), or empty: not drained.
struct Solution {
  std::vector<std::vector<int>> targets;
  int drained = 0;
  int moved = 0;  // pods of the drained nodes
};

// MT19937-64's tempering of a state word: what the generator draws from its state.
inline void temper(uint64_t& z) {
  z ^= (z >> 29) & 0x5555555555555555u;
  z ^= (z << 17) & 0x71D67FFFEDA60000u;
  z ^= (z << 37) & 0xFFF7EEE000000000u;
  z ^= z >> 43;
}

// The 64-bit Mersenne Twister: from a seed, the numbers std::mt19937_64 draws from it, one by
// one. Its state is renewed two words at a time, four on a CPU with AVX2 (the search draws a
// number for each spot node a pod fits, hundreds of millions in a large plan, though it makes
// a unit of few of them).
class Random {
 public:
  explicit Random(uint64_t seed);
  uint64_t operator()() {
    if (next_ == kWords) renew();
    uint64_t z = state_[next_++];
    temper(z);
    return z;
  }
  // The next `n` draws' state words, untempered (unit_of_word() makes one a unit), taking them
  // as n calls would: a pointer into the state, or into `spill` when they run past a renewal.
  const uint64_t* words(std::size_t n, std::vector<uint64_t>& spill);
  // The same state: the same numbers from here on.
  bool operator==(const Random&) const = default;

 private:
  static constexpr std::size_t kWords = 312;
  void renew();
  // The state, and after it a copy of its first word when renewed (the last word's next word).
  std::array<uint64_t, kWords + 1> state_{};
  std::size_t next_ = kWords;
};

// A uniform double in [0, 1) from a draw: the search's only randomness.
inline double unit(uint64_t draw) { return static_cast<double>(draw >> 11) * 0x1.0p-53; }
inline double unit(Random& rng) { return unit(rng()); }
// unit() of the draw a state word gives.
inline double unit_of_word(uint64_t word) {
  temper(word);
  return unit(word);
}

// The spot nodes during a search: what each has free, and the best fit for a pod among them.
class SpotBins {
 public:
  // `free`: what each spot node has free at the start (kept by reference; its capacity);
  // `allowed`: Problem::allowed; `weights`: per resource, what a share of it left free counts.
  SpotBins(const std::vector<Amounts>& free, const std::vector<std::vector<uint8_t>>& allowed,
           const std::array<double, kResources>& weights);

  // Takes a pod's request from a spot node (sign 1) or gives it back (sign -1).
  void charge(size_t bin, const Amounts& request, int sign);

  // Best fit: the spot node the pod fits (every resource it asks for free, one it may use)
  // where the least weighted share of each resource is left free, plus, for a pod asking none
  // of the scarce resource on a node with some free, the scarce weight times the CPU it asks
  // over the CPU free; each score times a noise factor of 0.95 to 1.05 that every node the pod
  // fits draws with unit(rng), in node order. The first node of the least score; -1, and no
  // draw, when it fits none.
  int best(const Pod& pod, Random& rng);

  // How many of best()'s looks for the nodes a pod fits were brought up to date from an
  // earlier look for a pod of the same requests and allowed set (for tests).
  size_t replayed() const { return replayed_; }

 private:
  static constexpr size_t kBlock = 32;   // spot nodes per block: a uint32_t mask
  static constexpr size_t kLooks = 256;  // looks remembered (pod shapes), at most
  static constexpr size_t kReplay = 8;   // changed nodes per block up to which a look is replayed

  // What a pod asks, as best() reads it: its requests (`need`: the least value for one it asks
  // none of), each weighted, and the CPU term's factor (0 for a pod asking the scarce resource).
  struct Ask {
    Amounts need{};
    std::array<double, kResources> weighted{};
    double cpu_term = 0;
  };
  // The spot nodes a pod of these requests and allowed set fits, as of `seen` charges, per node
  // it fits the two terms of the bound on the pod's score there (terms()) and its least whatever
  // the noise, and while `listed`, those nodes in order with their least bounds.
  struct Fitting {
    Amounts request{};
    int allowed = -2;  // never a pod's
    uint64_t seen = 0;
    size_t fits = 0;
    std::vector<uint32_t> mask;                // per block
    std::vector<std::array<double, 2>> terms;  // per spot node
    std::vector<double> least;                 // per spot node
    std::vector<uint32_t> nodes;
    std::vector<float> ranked;    // least of each of `nodes` as a float at most it, in their order
    std::vector<uint32_t> ahead;  // per block, how many of `nodes` are in the blocks before it
    bool listed = false;
  };

  // Per spot node, what best() bounds a pod's score there with: its free share (share()), 1 /
  // its capacity of each resource (0 for none), and 1 / its free CPU (at least 1) where some of
  // the scarce resource is free, else 0. One cache line each.
  struct alignas(64) Row {
    double share = 0;
    std::array<double, kResources> inverse{};
    double per_cpu = 0;
  };

  double share(size_t bin) const;
  void set_row(size_t bin);
  double score(const Pod& pod, size_t bin) const;
  void refresh(size_t block);
  uint32_t roughly_fits(const std::array<float, kResources>& need, size_t lo) const;
  std::array<double, 2> terms(const Ask& ask, size_t bin) const;
  void set_terms(Fitting& look, const Ask& ask, size_t bin) const;
  Fitting& fitting(const Pod& pod, const Ask& ask);

  const std::vector<Amounts>& cap_;
  std::array<double, kResources> weight_;
  double tolerance_;                                   // what a bound on a score is lowered by, for rounding
  std::array<std::vector<int64_t>, kResources> free_;  // per resource, per spot node: free now
  std::array<std::vector<float>, kResources> rough_;   // the same as floats, to whole blocks
  std::vector<Row> rows_;                              // per spot node
  // Per block of kBlock spot nodes: at least the most of each resource free on one of them,
  // and whether less is free since refresh() set it to exactly that.
  std::vector<Amounts> room_;
  std::vector<uint8_t> loose_;
  std::vector<std::vector<uint32_t>> allowed_;  // Problem::allowed as a mask per block
  // The looks best() remembers (the first `looks_`), found by their shape's hash in `slots_`
  // (open addressing; -1: free), and the spot nodes of the last changed_.size() charges of the
  // `charges_` so far, charge k at k modulo that size: a look made after `seen` charges is
  // brought up to date by checking the nodes of the charges after it again.
  std::vector<Fitting> fitting_;
  size_t looks_ = 0;
  std::vector<int32_t> slots_;
  std::vector<uint32_t> changed_;
  uint64_t charges_ = 0;
  std::vector<uint64_t> last_;  // per spot node, the last charge of it
  size_t replayed_ = 0;
  // best()'s scratch: the generator's words past a renewal.
  std::vector<uint64_t> spill_;
};

// The greatest float at most x, and the least at least x (x not NaN; the infinities count as
// floats): best() compares bounds many at a time as floats.
float float_below(double x);
inline float float_above(double x) { return -float_below(-x); }

// Checks a solution against the problem's capacities and allowed sets (for tests and as a
// guard): every drained node's pods placed, no spot node over its free amounts.
bool feasible(const Problem& problem, const Solution& solution);

// Improves `start` (a feasible solution, such as the node-by-node plan's) for `iterations`
// steps: more nodes drained, and among as many, fewer pods moved. The same inputs give the same
// result. Never returns fewer drained nodes than `start`, nor as many with more pods moved.
Solution improve(const Problem& problem, Solution start, int iterations, uint64_t seed = 1);

}  // namespace spotshift::drain::search
