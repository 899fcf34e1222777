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

// Checks a solution against the problem's capacities and allowed sets (for tests and as a
// guard): every drained node's pods placed, no spot node over its free amounts.
bool feasible(const Problem& problem, const Solution& solution);

// Improves `start` (a feasible solution, such as the node-by-node plan's) for `iterations`
// steps: more nodes drained, and among as many, fewer pods moved. The same inputs give the same
// result. Never returns fewer drained nodes than `start`, nor as many with more pods moved.
Solution improve(const Problem& problem, Solution start, int iterations, uint64_t seed = 1);

}  // namespace spotshift::drain::search
