// The plan search's compact model (lib/drain/search.hpp): improvement, allowed spot nodes,
// determinism, the feasibility check and the best fit's index. The planner's use of it is in
// planner_test.cpp.

#include "drain/search.hpp"
#include "support/catch.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

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

namespace {

// What SpotBins::best() is defined to return (search.hpp): every spot node in order, each the
// pod fits drawing its noise, the first of the least score.
int every_node(const std::vector<Amounts>& cap, const std::vector<Amounts>& load, const std::vector<std::vector<uint8_t>>& allowed,
               const std::array<double, kResources>& weight, const Pod& pod, Random& rng) {
  int best = -1;
  double best_score = 0;
  for (size_t b = 0; b < cap.size(); ++b) {
    if (pod.allowed >= 0 && !allowed[static_cast<size_t>(pod.allowed)][b]) continue;
    bool fits = true;
    for (size_t r = 0; r < kResources; ++r) fits = fits && (pod.request[r] == 0 || load[b][r] + pod.request[r] <= cap[b][r]);
    if (!fits) continue;
    double score = 0;
    for (size_t r = 0; r < kResources; ++r)
      if (cap[b][r] > 0) score += weight[r] * static_cast<double>(cap[b][r] - load[b][r] - pod.request[r]) / static_cast<double>(cap[b][r]);
    if (pod.request[3] == 0 && cap[b][3] - load[b][3] > 0)
      score += weight[3] * static_cast<double>(pod.request[0]) / static_cast<double>(std::max<int64_t>(1, cap[b][0] - load[b][0]));
    score *= 0.95 + 0.1 * unit(rng);
    if (best < 0 || score < best_score) {
      best = static_cast<int>(b);
      best_score = score;
    }
  }
  return best;
}

// The pods a test has charged to SpotBins, and the load they put on each spot node, kept beside it.
struct Charged {
  SpotBins& spot;
  std::vector<Amounts> load;
  std::vector<std::pair<size_t, Amounts>> pods;

  void place(size_t bin, const Amounts& request) {
    spot.charge(bin, request, 1);
    for (size_t r = 0; r < kResources; ++r) load[bin][r] += request[r];
    pods.emplace_back(bin, request);
  }
  void take_back(size_t at) {
    const auto [bin, request] = pods[at];
    pods.erase(pods.begin() + static_cast<std::ptrdiff_t>(at));
    spot.charge(bin, request, -1);
    for (size_t r = 0; r < kResources; ++r) load[bin][r] -= request[r];
  }
};

}  // namespace

TEST_CASE("the search's generator draws std::mt19937_64's numbers from the same seed", "[search]") {
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{5489}, uint64_t{0x9E3779B97F4A7C15}, ~uint64_t{0}}) {
    INFO("seed " << seed);
    std::mt19937_64 expected(seed);
    Random random(seed);
    size_t differ = 0;
    for (int i = 0; i < 200000; ++i) differ += random() != expected();  // 641 renewals of the state
    CHECK(differ == 0);
  }
}

TEST_CASE("the generator's words() give the draws one at a time, across renewals", "[search]") {
  Random one(3), many(3);
  std::vector<uint64_t> spill;
  size_t differ = 0, drawn = 0;
  // Runs of 0 to 700 numbers: some within one state, some across one renewal or two.
  for (size_t n : {0, 1, 5, 311, 312, 313, 1, 700, 2, 623, 624, 0, 97, 155, 156, 157}) {
    const uint64_t* words = many.words(n, spill);
    for (size_t i = 0; i < n; ++i) {
      uint64_t draw = words[i];
      temper(draw);
      const uint64_t expected = one();
      differ += draw != expected;
      differ += unit_of_word(words[i]) != unit(expected);
    }
    drawn += n;
    REQUIRE(one == many);
  }
  CHECK(drawn > 4 * 312);
  CHECK(differ == 0);
}

TEST_CASE("float_below() and float_above() are the nearest floats on each side of a double", "[search]") {
  std::mt19937_64 gen(17);
  std::vector<double> xs = {0.0, -0.0, 1.0, -1.0, 0.1, -0.1, 1e-45, -1e-45, 1e-50, -1e-50, 3.4e38, -3.4e38, 1e39, -1e39, 1e300, -1e300};
  for (int i = 0; i < 20000; ++i) {
    // Doubles of every magnitude a bound takes and beyond, floats exactly, and the double either
    // side of one.
    const double x = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(gen), static_cast<int>(gen() % 300) - 150);
    const auto f = static_cast<double>(static_cast<float>(x));
    xs.push_back(x);
    if (std::isfinite(f)) xs.insert(xs.end(), {f, std::nextafter(f, 1e300), std::nextafter(f, -1e300)});
  }
  constexpr float kInfinity = std::numeric_limits<float>::infinity();
  size_t wrong = 0;
  for (double x : xs) {
    const float below = float_below(x), above = float_above(x);
    wrong += !(static_cast<double>(below) <= x && static_cast<double>(std::nextafter(below, kInfinity)) > x);
    wrong += !(static_cast<double>(above) >= x && static_cast<double>(std::nextafter(above, -kInfinity)) < x);
  }
  CHECK(wrong == 0);
}

TEST_CASE("SpotBins::best() picks the node a look at every node picks, and draws as many noises", "[search]") {
  // Random clusters of 1 to 150 spot nodes (blocks of 32 and a partial one), some with less
  // than nothing free, memory near 2^40 so that floats round a node a little short up to a
  // fit, pods confined to some nodes, most of a few shapes; pods placed, and now and then taken
  // back.
  std::mt19937_64 gen(7);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); };
  constexpr int64_t kHuge = int64_t{1} << 40;
  auto random_pod = [&] {
    return Pod{{pick(0, 1500), pick(0, 3) == 0 ? 0 : pick(0, 64) + (pick(0, 1) ? kHuge / 2 : 0), 1, pick(0, 2) == 0 ? pick(1, 2000) : 0},
               static_cast<int>(pick(-1, 1))};
  };
  int placed = 0, nowhere = 0;
  size_t replayed = 0;
  std::vector<Pod> shapes;
  for (int trial = 0; trial < 60; ++trial) {
    const auto bins = static_cast<size_t>(pick(1, 150));
    std::vector<Amounts> cap(bins);
    for (auto& c : cap) c = {pick(-500, 8000), kHuge + pick(-64, 64), pick(0, 12), pick(0, 3) == 0 ? 0 : pick(-100, 8000)};
    std::vector<std::vector<uint8_t>> allowed(2, std::vector<uint8_t>(bins));
    for (auto& a : allowed)
      for (auto& x : a) x = static_cast<uint8_t>(pick(0, 3) != 0);
    const std::array<double, kResources> weight{static_cast<double>(pick(0, 300)) / 100, static_cast<double>(pick(0, 300)) / 100,
                                                static_cast<double>(pick(0, 100)) / 100, static_cast<double>(pick(0, 2000)) / 100};
    SpotBins spot(cap, allowed, weight);
    Charged charged{spot, std::vector<Amounts>(bins, Amounts{}), {}};
    Random a(static_cast<uint64_t>(trial)), b(static_cast<uint64_t>(trial));
    for (int step = 0; step < 300; ++step) {
      if (!charged.pods.empty() && pick(0, 2) == 0)
        charged.take_back(static_cast<size_t>(pick(0, static_cast<int64_t>(charged.pods.size()) - 1)));
      // Most pods of a few shapes, so that best() brings its earlier looks up to date.
      if (step == 0) {
        shapes.clear();
        for (int k = 0; k < 6; ++k) shapes.push_back(random_pod());
      }
      const Pod pod = pick(0, 9) < 7 ? shapes[static_cast<size_t>(pick(0, 5))] : random_pod();
      const int want = every_node(cap, charged.load, allowed, weight, pod, a);
      const int got = spot.best(pod, b);
      REQUIRE(got == want);
      REQUIRE(a == b);  // as many draws
      if (got < 0) {
        ++nowhere;
        continue;
      }
      ++placed;
      charged.place(static_cast<size_t>(got), pod.request);
    }
    replayed += spot.replayed();
  }
  // Both outcomes were tried many times, and thousands of looks were earlier ones brought up to
  // date.
  CHECK(placed > 1000);
  CHECK(nowhere > 1000);
  CHECK(replayed > 3000);
}

TEST_CASE("SpotBins::best() picks the same node with more pod shapes than it remembers looks for", "[search]") {
  // 600 shapes, more than the looks remembered, for 6,000 pods on 70 spot nodes: most pods of ten
  // of them, the others of any. Looks are forgotten and made again, and many brought up to date.
  std::mt19937_64 gen(13);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); };
  const size_t bins = 70;
  std::vector<Amounts> cap(bins);
  for (auto& c : cap) c = {pick(2000, 64000), pick(1, 256) << 30, 110, pick(0, 1) ? pick(1000, 8000) : 0};
  std::vector<std::vector<uint8_t>> allowed(1, std::vector<uint8_t>(bins));
  for (auto& x : allowed[0]) x = static_cast<uint8_t>(pick(0, 3) != 0);
  const std::array<double, kResources> weight{1.5, 0.75, 0.01, 4};
  std::vector<Pod> shapes;
  for (int k = 0; k < 600; ++k)
    shapes.push_back(
        Pod{{pick(1, 40) * 100, pick(1, 64) << 26, 1, pick(0, 3) == 0 ? pick(1, 10) * 100 : 0}, static_cast<int>(pick(-1, 0))});
  SpotBins spot(cap, allowed, weight);
  Charged charged{spot, std::vector<Amounts>(bins, Amounts{}), {}};
  Random a(5), b(5);
  // Every shape twice before any charge: looks made again for other shapes, none behind.
  for (int round = 0; round < 2; ++round)
    for (const Pod& pod : shapes) {
      REQUIRE(spot.best(pod, b) == every_node(cap, charged.load, allowed, weight, pod, a));
      REQUIRE(a == b);
    }
  int placed = 0;
  for (int step = 0; step < 6000; ++step) {
    if (!charged.pods.empty() && pick(0, 1) == 0)
      charged.take_back(static_cast<size_t>(pick(0, static_cast<int64_t>(charged.pods.size()) - 1)));
    const Pod& pod = shapes[static_cast<size_t>(pick(0, 9) < 7 ? pick(0, 9) : pick(0, 599))];
    const int got = spot.best(pod, b);
    REQUIRE(got == every_node(cap, charged.load, allowed, weight, pod, a));
    REQUIRE(a == b);
    if (got < 0) continue;
    ++placed;
    charged.place(static_cast<size_t>(got), pod.request);
  }
  CHECK(placed > 3000);
  CHECK(spot.replayed() > 500);
}

TEST_CASE("SpotBins::best() looks again at the nodes bounded below its first score", "[search]") {
  // A pod that fills a spot node exactly scores 0 there whatever the noise, so among such nodes
  // the first wins; their bounds differ by rounding only, so the lowest bound is often another
  // one, and only the second look finds the first.
  std::mt19937_64 gen(11);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); };
  int ties = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const Pod pod{{pick(1, 4000), pick(1, int64_t{1} << 34), 1, pick(0, 1) ? pick(1, 2000) : 0}, -1};
    const auto bins = static_cast<size_t>(pick(2, 40));
    std::vector<Amounts> cap(bins), load(bins, Amounts{});
    for (size_t b = 0; b < bins; ++b) {
      for (size_t r = 0; r < kResources; ++r) cap[b][r] = pod.request[r] + pick(0, 3) * pick(0, 5000);
      cap[b][2] = pick(1, 110);
      // Most nodes with exactly the pod's room left.
      if (pick(0, 2) != 0)
        for (size_t r = 0; r < kResources; ++r) load[b][r] = cap[b][r] - pod.request[r];
    }
    const std::array<double, kResources> weight{static_cast<double>(pick(1, 3000)) / 7, static_cast<double>(pick(1, 3000)) / 9,
                                                static_cast<double>(pick(0, 100)) / 3, static_cast<double>(pick(1, 2000)) / 11};
    const std::vector<std::vector<uint8_t>> allowed;
    SpotBins spot(cap, allowed, weight);
    for (size_t b = 0; b < bins; ++b) spot.charge(b, load[b], 1);
    Random a(static_cast<uint64_t>(trial)), b(static_cast<uint64_t>(trial));
    const int want = every_node(cap, load, allowed, weight, pod, a);
    const int got = spot.best(pod, b);
    REQUIRE(got == want);
    REQUIRE(a == b);
    int filled = 0;  // nodes the pod fills exactly
    for (size_t k = 0; k < bins; ++k) {
      bool exact = true;
      for (size_t r = 0; r < kResources; ++r) exact = exact && cap[k][r] - load[k][r] == pod.request[r];
      filled += exact;
    }
    ties += filled >= 2;
  }
  CHECK(ties > 300);
}
