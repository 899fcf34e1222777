// The plan search's compact model (lib/drain/search.hpp): improvement, allowed spot nodes,
// determinism and the feasibility check. The planner's use of it is in planner_test.cpp.

#include "drain/search.hpp"
#include "support/catch.hpp"

#include <cstdint>

using namespace spotshift::drain::search;

namespace {

// Spot node 0: 3 CPUs and a GPU free; spot node 1: 4 CPUs, no GPU. Node 0 has a 2-CPU pod,
// node 1 a 3-CPU pod with a GPU. The start puts node 0's pod on spot node 0, so node 1 cannot
// drain; both drain when node 0's pod goes to spot node 1.
Problem trap() {
  Problem p;
  p.free = {{3000, int64_t{8} << 30, 10, 1}, {4000, int64_t{8} << 30, 10, 0}};
  p.nodes.push_back({{Pod{{2000, 1 << 30, 1, 0}}}});
  p.nodes.push_back({{Pod{{3000, 1 << 30, 1, 1}}}});
  return p;
}

Solution trap_start() { return Solution{{{0}, {}}, 1, 1}; }

}  // namespace

TEST_CASE("the search takes back a node to drain two", "[search]") {
  Problem p = trap();
  REQUIRE(feasible(p, trap_start()));
  Solution s = improve(p, trap_start(), 20);
  CHECK(s.drained == 2);
  CHECK(s.moved == 2);
  CHECK(s.targets == std::vector<std::vector<int>>{{1}, {0}});
  CHECK(feasible(p, s));
  // Deterministic: the same inputs, the same answer.
  Solution again = improve(p, trap_start(), 20);
  CHECK(again.targets == s.targets);
  // No steps: the start itself.
  CHECK(improve(p, trap_start(), 0).targets == trap_start().targets);
}

TEST_CASE("the search keeps each pod on the spot nodes it may use", "[search]") {
  Problem p = trap();
  p.allowed.push_back({1, 0});  // node 0's pod tolerates only spot node 0's taint, say
  p.nodes[0].pods[0].allowed = 0;
  Solution s = improve(p, trap_start(), 50);
  CHECK(s.drained == 1);
  CHECK(feasible(p, s));
  for (size_t i = 0; i < s.targets.size(); ++i)
    if (i == 0 && !s.targets[i].empty()) CHECK(s.targets[i][0] == 0);
}

TEST_CASE("the search never returns less than its start; among as many nodes, fewer pods", "[search]") {
  // Spot node: 4 CPUs. Node 0: four 1-CPU pods; node 1: one 2-CPU pod; node 2: one 2-CPU pod.
  // The start drains node 0 (4 pods); nodes 1 and 2 together drain two nodes with 2 pods.
  Problem p;
  p.free = {{4000, 1 << 30, 10, 0}};
  p.nodes.push_back({std::vector<Pod>(4, Pod{{1000, 1, 1, 0}})});
  p.nodes.push_back({{Pod{{2000, 1, 1, 0}}}});
  p.nodes.push_back({{Pod{{2000, 1, 1, 0}}}});
  Solution start{{{0, 0, 0, 0}, {}, {}}, 1, 4};
  REQUIRE(feasible(p, start));
  Solution s = improve(p, start, 50);
  CHECK(s.drained == 2);
  CHECK(s.moved == 2);
  CHECK(feasible(p, s));
  // A spot node too small for anything: the start (nothing drained) comes back.
  Problem tiny = p;
  tiny.free = {{500, 1 << 30, 10, 0}};
  Solution none{{{}, {}, {}}, 0, 0};
  CHECK(improve(tiny, none, 50).drained == 0);
}

TEST_CASE("feasible() refuses an overfull spot node, a forbidden one and a wrong count", "[search]") {
  Problem p = trap();
  CHECK_FALSE(feasible(p, Solution{{{0}, {0}}, 2, 2}));  // 5 CPUs on spot node 0
  CHECK_FALSE(feasible(p, Solution{{{1}, {1}}, 2, 2}));  // a GPU on spot node 1
  CHECK_FALSE(feasible(p, Solution{{{1}, {0}}, 1, 2}));  // two drained, counted as one
  CHECK_FALSE(feasible(p, Solution{{{2}, {}}, 1, 1}));   // no spot node 2
  CHECK(feasible(p, Solution{{{1}, {0}}, 2, 2}));
  p.allowed.push_back({1, 0});
  p.nodes[0].pods[0].allowed = 0;
  CHECK_FALSE(feasible(p, Solution{{{1}, {0}}, 2, 2}));
}
