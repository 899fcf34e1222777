// The packing scores (Fragmentation, BestFit) and the Demand they read.

#include "builders.hpp"
#include "sched/demand.hpp"
#include "sched/fork.hpp"
#include "sched/framework.hpp"
#include "sched/plugins.hpp"
#include "support/catch.hpp"

#include <fmt/format.h>

#include <array>
#include <optional>
#include <random>
#include <set>

using namespace spotshift;
using namespace spotshift::sched;
using namespace spotshift::sched::testing;

namespace {

constexpr const char* kGpu = "example.com/gpu";

Framework scored_by(std::vector<ScoreConfig> scores) {
  ProfileConfig p = default_profile();
  p.scores = std::move(scores);
  return Framework::create(p).value();
}

std::string place(const Framework& fw, const ClusterSnapshot& snap, const model::Pod& pod, const Demand* demand = nullptr) {
  Fork fork(snap);
  PlacementCache cache(snap);
  cache.set_demand(demand);
  auto placed = fw.place(pod, fork, all_nodes(snap), &cache);
  return placed.node < 0 ? "nowhere" : snap.node(placed.node).name;
}

// The Fragmentation score plugin itself, for the questions the walk asks it.
std::unique_ptr<ScorePlugin> fragmentation() {
  for (const auto& e : registry().scores)
    if (e.name == "Fragmentation") return e.make({"Fragmentation", 100, {}}).value();
  FAIL("no Fragmentation score in the registry");
  return nullptr;
}

// The pods of the demand a node with this room strands its free scarce resource for, shape by
// shape: those asking for none of it, and those that do not fit.
int64_t stranded_by_definition(const Demand& d, const Room& r) {
  int64_t n = 0;
  for (const auto& s : d.shapes()) {
    const bool fits = r.pods >= 1 && s.cpu_milli <= r.cpu_milli && s.memory <= r.memory && s.scarce <= r.scarce;
    if (s.scarce == 0 || !fits) n += s.count;
  }
  return n;
}

}  // namespace

TEST_CASE("the scarce resource is the extended resource with the highest requested share", "[packing]") {
  auto snap = ClusterSnapshot::build(
      {make_node("a").cpu("8").scalar(kGpu, "4").scalar("example.com/fpga", "4").scalar("hugepages-2Mi", "1Gi"),
       make_node("b").cpu("8").scalar(kGpu, "4")},
      {make_pod("g").cpu("1").scalar(kGpu, "3").on("a"), make_pod("f").cpu("1").scalar("example.com/fpga", "2").on("a"),
       make_pod("h").cpu("1").scalar("hugepages-2Mi", "1Gi").on("a")});
  // gpu: 3 of 8 requested; fpga: 2 of 4; hugepages (fully requested) do not count.
  CHECK(Demand::scarcest_extended_resource(snap).view() == "example.com/fpga");
  auto none = ClusterSnapshot::build({make_node("c").cpu("8")}, {make_pod("p").cpu("1").on("c")});
  CHECK(Demand::scarcest_extended_resource(none).empty());
}

TEST_CASE("a demand counts shapes in and out and keeps their shares", "[packing]") {
  Demand d{model::InternedString(kGpu)};
  auto gpu = make_pod("g").cpu("4").scalar(kGpu, "1").build();
  auto cpu = make_pod("c").cpu("1").build();
  d.add(*gpu);
  d.add(*gpu);
  d.add(*cpu);
  REQUIRE(d.shapes().size() == 2);
  CHECK(d.shapes()[0].scarce == 0);
  CHECK(d.shapes()[0].share == Approx(1.0 / 3));
  CHECK(d.shapes()[1].scarce == 1);
  CHECK(d.shapes()[1].cpu_milli == 4000);
  CHECK(d.totals() == std::tuple<int64_t, int64_t, int64_t>{9000, 3 * 128 * 1024 * 1024, 2});
  d.add(*gpu, -1);
  d.add(*gpu, -1);
  REQUIRE(d.shapes().size() == 1);
  CHECK(d.shapes()[0].share == 1.0);
  d.add(*cpu, -1);
  CHECK(d.empty());
}

TEST_CASE("a demand's stranded count is the shapes that ask for no scarce resource or do not fit, over random demands", "[packing]") {
  // The index behind stranded() (binary search, running maxima, a memo per room) against its
  // definition, shape by shape, with pods counted in and out as a plan does.
  std::mt19937 rng(11);
  auto pick = [&](std::initializer_list<int64_t> values) { return *(values.begin() + rng() % values.size()); };
  for (int round = 0; round < 200; ++round) {
    Demand d{model::InternedString(kGpu)};
    std::vector<std::shared_ptr<const model::Pod>> in;
    const int pods = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < pods; ++i) {
      auto pod = make_pod(fmt::format("p{}", i))
                     .cpu(fmt::format("{}m", pick({100, 250, 500, 1000, 4000})))
                     .memory(fmt::format("{}Mi", pick({128, 512, 2048})))
                     .scalar(kGpu, fmt::format("{}", pick({0, 0, 1, 2, 4})))
                     .build();
      d.add(*pod);
      in.push_back(pod);
    }
    // Some leave again (a plan places them).
    std::vector<bool> counted(in.size(), true);
    for (size_t i = 0; i < in.size(); i += 1 + rng() % 3) {
      d.add(*in[i], -1);
      counted[i] = false;
    }
    auto by_definition = [&](const Room& r) { return stranded_by_definition(d, r); };
    // Probes between changes: stranded() keeps what it counted for a room and brings it up to
    // date with the pods counted in and out since, a few or more than it keeps a log of.
    for (int probe = 0; probe < 60; ++probe) {
      const int changes = probe % 20 == 19 ? 1 : probe % 20 == 9 ? static_cast<int>(rng() % 80) : 0;
      for (int c = 0; c < changes; ++c) {
        const size_t i = rng() % in.size();
        d.add(*in[i], counted[i] ? -1 : 1);
        counted[i] = !counted[i];
      }
      const Room before{pick({0, 100, 250, 999, 1000, 3000, 4000, 64000}), pick({0, 128, 512, 2000, 2048, 65536}) * 1024 * 1024,
                        pick({-1, 0, 1, 2, 3, 4, 8}), pick({0, 1, 110})};
      // The node after taking a pod.
      const Room after{before.cpu_milli - pick({0, 100, 1000}), before.memory - pick({0, 128}) * 1024 * 1024,
                       before.scarce - pick({0, 0, 1, 2}), before.pods - 1};
      INFO(fmt::format("round {}: before {}m, {}, {} gpus, {} pods; after {}m, {}, {} gpus", round, before.cpu_milli, before.memory,
                       before.scarce, before.pods, after.cpu_milli, after.memory, after.scarce));
      REQUIRE(d.stranded(before) == by_definition(before));
      REQUIRE(d.stranded(before, after) == std::pair{by_definition(before), by_definition(after)});
      // Kept by node: a few nodes, each with rooms that change from probe to probe.
      REQUIRE(d.stranded_on(probe % 3, before, after) == std::pair{by_definition(before), by_definition(after)});
    }
  }
}

TEST_CASE("a pod asking no GPU is said to leave every pod that fits a node fitting only when it does, over random demands", "[packing]") {
  // keeps_fitting() against the stranded counts by definition, before and after the pod, with
  // pods counted in and out between the questions, as a plan does: each node's answer is kept
  // for its room, and still true after pods are counted out, not after one is counted in.
  std::mt19937 rng(5);
  auto pick = [&](std::initializer_list<int64_t> values) { return *(values.begin() + rng() % values.size()); };
  int said = 0, kept = 0;
  for (int round = 0; round < 200; ++round) {
    Demand d{model::InternedString(kGpu)};
    std::vector<std::shared_ptr<const model::Pod>> in;
    std::vector<bool> counted;
    const int pods = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < pods; ++i) {
      in.push_back(make_pod(fmt::format("p{}", i))
                       .cpu(fmt::format("{}m", pick({100, 250, 500, 1000, 4000})))
                       .memory(fmt::format("{}Mi", pick({128, 512, 2048})))
                       .scalar(kGpu, fmt::format("{}", pick({0, 1, 2, 4})))
                       .build());
      counted.push_back(rng() % 4 != 0);
      if (counted.back()) d.add(*in.back());
    }
    auto stranded = [&](const Room& r) { return stranded_by_definition(d, r); };
    // Each of three nodes has one of two rooms at a time, so that answers kept for a room are
    // asked for again after changes.
    std::array<std::array<Room, 2>, 3> rooms;
    for (auto& node : rooms)
      for (Room& r : node)
        r = {pick({0, 250, 999, 1000, 1100, 4000, 4500}), pick({0, 128, 600, 2048, 4096}) * 1024 * 1024, pick({0, 1, 2, 4, 8}),
             pick({1, 2, 110})};
    for (int probe = 0; probe < 80; ++probe) {
      if (probe % 10 == 9) {  // a few pods counted in or out
        for (int c = static_cast<int>(rng() % 4); c >= 0; --c) {
          const size_t i = rng() % in.size();
          d.add(*in[i], counted[i] ? -1 : 1);
          counted[i] = !counted[i];
        }
      }
      const int n = static_cast<int>(rng() % 3);
      const Room before = rooms[static_cast<size_t>(n)][rng() % 2];
      const int64_t cpu = pick({0, 1, 100, 150, 500, 1000}), memory = pick({0, 128, 1024}) * 1024 * 1024;
      const Room after{before.cpu_milli - cpu, before.memory - memory, before.scarce, before.pods - 1};
      INFO(fmt::format("round {} probe {}: {}m, {}, {} gpus, {} pods; the pod {}m, {}", round, probe, before.cpu_milli, before.memory,
                       before.scarce, before.pods, cpu, memory));
      const bool keeps = stranded(before) == stranded(after);
      const bool says = d.keeps_fitting(n, before, cpu, memory);
      if (says) REQUIRE(keeps);
      if (before.scarce > 0 && before.pods >= 2) {  // as asked: a node with GPUs free, taking not its last pod
        said += says;
        kept += keeps;
      }
    }
  }
  // It answers for most of the rooms it is asked about that keep every pod fitting.
  INFO(said << " of " << kept);
  CHECK(said > kept / 2);
}

TEST_CASE("Fragmentation's score below a bound is its score when below, over random nodes, demands and bounds", "[packing]") {
  // score_if_below() compares integers instead of rounding a quotient; the demand's pod counts
  // make halves common (2,000 pods and an odd capacity: x.5), where rounding away from zero
  // decides, for pods with GPUs (the score can be negative) and without.
  auto plugin = fragmentation();
  const auto* lowest = dynamic_cast<const LowestScore*>(plugin.get());
  REQUIRE(lowest);
  std::mt19937 rng(5);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::vector<PodPtr> cpu_only;  // what most of the demand is: pods that strand any node's GPUs
  for (int k = 0; k < 4000; ++k) cpu_only.push_back(make_pod(fmt::format("c{}", k)).cpu(fmt::format("{}m", 500 * (1 + k % 6))));
  int halves = 0, negative_halves = 0, below = 0, not_below = 0;
  for (int round = 0; round < 400; ++round) {
    const int64_t cpu = 500 * (1 + pick(8)), gpus = 1 + pick(8), slots = 1 + pick(3);
    auto snap = ClusterSnapshot::build(
        {make_node("n").cpu(fmt::format("{}m", cpu)).memory("16Gi").pods(static_cast<int>(slots)).scalar(kGpu, std::to_string(gpus))}, {});
    Demand demand{model::InternedString(kGpu)};
    const int pods = std::array{2000, 1000, 4000, 3999}[static_cast<size_t>(pick(4))];
    const int gpu_pods = 1 + pick(6);
    for (int k = 0; k < gpu_pods; ++k)
      demand.add(
          *make_pod(fmt::format("d{}", k)).cpu(fmt::format("{}m", 500 * (1 + pick(6)))).scalar(kGpu, std::to_string(1 + pick(3))).build());
    for (int k = gpu_pods; k < pods; ++k) demand.add(*cpu_only[static_cast<size_t>(k)]);
    const int64_t pod_cpu = 250 * (1 + pick(8)), pod_gpus = pick(2) == 0 ? 1 + pick(3) : 0;
    auto b = make_pod("p").cpu(fmt::format("{}m", pod_cpu));
    if (pod_gpus) b.scalar(kGpu, std::to_string(pod_gpus));
    auto pod = b.build();
    Fork fork(snap);
    PlacementCache cache(snap);
    cache.set_demand(&demand);
    CycleState state(&cache);
    state.resolve_demand(fork);
    const int64_t score = plugin->score(state, 0, *pod, fork, 0);
    for (int64_t bound : {score - 1, score, score + 1, score + 2, int64_t(0), int64_t(1)}) {
      INFO(fmt::format("round {}: score {}, bound {}, {} pods in the demand", round, score, bound, pods));
      const auto got = lowest->score_if_below(state, 0, *pod, fork, 0, bound);
      CHECK(got == (score < bound ? std::optional<int64_t>(score) : std::nullopt));
      (got ? below : not_below) += 1;
    }
    // The capacity the score scales, by its definition: x 1000 / pods on a half?
    const Room room{cpu, int64_t(16) << 30, gpus, slots}, left{cpu - pod_cpu, int64_t(16) << 30, gpus - pod_gpus, slots - 1};
    const auto [stranded, stranded_after] = demand.stranded(room, left);
    const int64_t capacity = (left.scarce <= 0 ? 0 : left.scarce * stranded_after) - room.scarce * stranded;
    if ((capacity * 1000) % pods != 0 && (capacity * 2000) % pods == 0) ++(capacity < 0 ? negative_halves : halves);
  }
  INFO(fmt::format("{} halves, {} of them negative", halves + negative_halves, negative_halves));
  CHECK(halves > 10);
  CHECK(negative_halves > 10);
  CHECK(below > 200);
  CHECK(not_below > 200);
}

TEST_CASE("Fragmentation's first node below a bound in a run is the one its node-by-node answer finds, over random runs", "[packing]") {
  // first_below() looks the demand and the pod up once for a run of nodes; the framework's
  // version asks score_if_below() node by node. Nodes with GPUs free or not, some changed by a
  // child fork (the walk's what-if), pods with GPUs and without, bounds around the run's scores.
  auto plugin = fragmentation();
  const auto* lowest = dynamic_cast<const LowestScore*>(plugin.get());
  REQUIRE(lowest);
  std::mt19937 rng(17);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  int found = 0, none = 0, later = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<NodePtr> nodes;
    std::vector<PodPtr> placed;
    const int count = 2 + pick(10);
    for (int n = 0; n < count; ++n) {
      const std::string name = fmt::format("n{}", n);
      nodes.push_back(make_node(name)
                          .cpu(fmt::format("{}m", 1000 * (1 + pick(8))))
                          .memory("16Gi")
                          .pods(2 + pick(4))
                          .scalar(kGpu, std::to_string(pick(5))));
      if (pick(2) == 0) placed.push_back(make_pod(fmt::format("on{}", n)).cpu(fmt::format("{}m", 250 * (1 + pick(3)))).on(name));
    }
    auto snap = ClusterSnapshot::build(nodes, placed);
    Demand demand{model::InternedString(kGpu)};
    const int pods = 1 + pick(60);
    for (int k = 0; k < pods; ++k) {
      auto b = make_pod(fmt::format("d{}", k)).cpu(fmt::format("{}m", 250 * (1 + pick(12))));
      if (pick(3) != 0) b.scalar(kGpu, std::to_string(1 + pick(3)));
      demand.add(*b.build());
    }
    Fork fork(snap);
    Fork child = fork.fork();
    for (int n = 0; n < count; ++n)
      if (pick(3) == 0) child.add_pod(n, make_pod(fmt::format("w{}", n)).cpu("250m").build());
    PlacementCache cache(snap);
    cache.set_demand(&demand);
    CycleState state(&cache);
    state.resolve_demand(child);
    auto b = make_pod("p").cpu(fmt::format("{}m", 250 * (1 + pick(4))));
    if (pick(2) == 0) b.scalar(kGpu, std::to_string(1 + pick(2)));
    auto pod = b.build();
    std::vector<int> run;
    for (int k = 1 + pick(12); k > 0; --k) run.push_back(pick(count));
    std::vector<int64_t> bounds{0, 1};
    for (int n : run)
      for (int64_t d : {-1, 0, 1}) bounds.push_back(plugin->score(state, 0, *pod, child, n) + d);
    for (int64_t bound : bounds) {
      INFO(fmt::format("round {}: bound {}, run of {}", round, bound, run.size()));
      const auto got = lowest->first_below(state, 0, *pod, child, run.data(), run.size(), bound);
      const auto want = lowest->LowestScore::first_below(state, 0, *pod, child, run.data(), run.size(), bound);
      REQUIRE(got.at == want.at);
      if (got.at < run.size()) REQUIRE(got.score == want.score);
      (got.at == run.size() ? none : got.at == 0 ? found : later) += 1;
    }
  }
  INFO(fmt::format("{} first, {} later, {} none", found, later, none));
  CHECK(found > 100);
  CHECK(later > 100);
  CHECK(none > 100);
}

TEST_CASE("Fragmentation keeps a CPU-only pod off the node whose free GPUs it would strand", "[packing]") {
  // gpu-free: 2 GPUs free, 4 CPUs free; gpu-full: GPUs taken, 6 CPUs free. The demand is GPU pods
  // that need 4 CPUs each. FreeCPU alone would put the 3-CPU pod on gpu-free (fuller), leaving 1
  // CPU next to 2 unusable GPUs.
  auto snap = ClusterSnapshot::build({make_node("gpu-free").cpu("8").scalar(kGpu, "2"), make_node("gpu-full").cpu("8").scalar(kGpu, "2")},
                                     {make_pod("x").cpu("4").on("gpu-free"), make_pod("y").cpu("2").scalar(kGpu, "2").on("gpu-full")});
  auto pod = make_pod("p").cpu("3").build();
  Demand demand{model::InternedString(kGpu)};
  demand.add(*make_pod("d1").cpu("4").scalar(kGpu, "1").build());
  demand.add(*make_pod("d2").cpu("4").scalar(kGpu, "1").build());
  CHECK(place(scored_by({{"FreeCPU", 1, {}}}), snap, *pod) == "gpu-free");
  CHECK(place(scored_by({{"Fragmentation", 1, {}}}), snap, *pod, &demand) == "gpu-full");
  // The default profile weighs Fragmentation first.
  CHECK(place(Framework::create(default_profile()).value(), snap, *pod, &demand) == "gpu-full");
}

TEST_CASE("Fragmentation puts a GPU pod where the remainder still fits the demand", "[packing]") {
  // Node a has 3 GPUs free, b has 2: a 1-GPU pod on b leaves 1 GPU that the 2-GPU demand cannot
  // use; on a it leaves 2, which it can.
  auto snap = ClusterSnapshot::build({make_node("a").cpu("16").scalar(kGpu, "4"), make_node("b").cpu("16").scalar(kGpu, "4")},
                                     {make_pod("x").cpu("1").scalar(kGpu, "1").on("a"), make_pod("y").cpu("1").scalar(kGpu, "2").on("b")});
  Demand demand{model::InternedString(kGpu)};
  demand.add(*make_pod("d").cpu("1").scalar(kGpu, "2").build());
  auto pod = make_pod("p").cpu("1").scalar(kGpu, "1").build();
  CHECK(place(scored_by({{"Fragmentation", 1, {}}}), snap, *pod, &demand) == "a");
  // Best fit alone takes the tighter node, b.
  CHECK(place(scored_by({{"BestFit", 1, {}}}), snap, *pod, &demand) == "b");
}

TEST_CASE("without a demand, the packing scores use the snapshot's pods", "[packing]") {
  // The snapshot's pods ask for 1 and 2 GPUs: a 1-GPU pod on b would leave 1 GPU the 2-GPU shape
  // cannot use.
  auto snap = ClusterSnapshot::build({make_node("a").cpu("16").scalar(kGpu, "4"), make_node("b").cpu("16").scalar(kGpu, "4")},
                                     {make_pod("x").cpu("1").scalar(kGpu, "1").on("a"), make_pod("y").cpu("1").scalar(kGpu, "2").on("b")});
  auto pod = make_pod("p").cpu("1").scalar(kGpu, "1").build();
  auto fw = scored_by({{"Fragmentation", 1, {}}});
  Fork fork(snap);
  CHECK(snap.node(fw.place(*pod, fork, all_nodes(snap)).node).name == "a");
}

TEST_CASE("without extended resources Fragmentation scores every node alike and FreeCPU decides", "[packing]") {
  auto snap = ClusterSnapshot::build({make_node("s1").cpu("1"), make_node("s2").cpu("1"), make_node("s3").cpu("1")},
                                     {make_pod("a").cpu("300m").on("s1"), make_pod("b").cpu("700m").on("s2")});
  Fork fork(snap);
  auto fw = scored_by({{"Fragmentation", 1, {}}});
  auto scores = fw.scores(*make_pod("p").cpu("100m").build(), fork, all_nodes(snap));
  CHECK(scores == std::vector<double>{100, 100, 100});
  CHECK(place(Framework::create(default_profile()).value(), snap, *make_pod("p").cpu("100m").build()) == "s2");
}

TEST_CASE("the scores of a placement read each node's free room once, and afresh for another list, fork or change", "[packing]") {
  auto snap = ClusterSnapshot::build({make_node("a").cpu("16").memory("8Gi").scalar(kGpu, "4"), make_node("b").cpu("8").scalar(kGpu, "2")},
                                     {make_pod("x").cpu("2").memory("1Gi").scalar(kGpu, "1").on("a")});
  const model::InternedString gpu(kGpu);
  Fork fork(snap);
  std::vector<int> both{0, 1}, second{1};
  CycleState state;
  auto free_of = [&](const Fork& f, const std::vector<int>& nodes, const model::InternedString& resource) {
    std::vector<std::array<int64_t, 3>> out;
    for (const auto& r : state.rooms(f, nodes, resource)) out.push_back({r.cpu_milli, r.memory, r.scarce});
    return out;
  };
  using Rooms = std::vector<std::array<int64_t, 3>>;
  const int64_t gib = int64_t(1) << 30;
  state.share_rooms(&fork, &both);
  CHECK(free_of(fork, both, gpu) == Rooms{{14000, 7 * gib, 3}, {8000, snap.node(1).allocatable.memory, 2}});
  CHECK(free_of(fork, second, gpu) == Rooms{{8000, snap.node(1).allocatable.memory, 2}});                    // another list
  CHECK(free_of(fork, both, {}) == Rooms{{14000, 7 * gib, 0}, {8000, snap.node(1).allocatable.memory, 0}});  // no resource
  CHECK(free_of(fork, both, gpu)[0][2] == 3);

  // A child fork with a pod on b: its own rooms while the list is shared for the parent.
  Fork child = fork.fork();
  child.add_pod(1, make_pod("y").cpu("1").memory("1Gi").scalar(kGpu, "1").build());
  CHECK(free_of(child, both, gpu)[1] == std::array<int64_t, 3>{7000, snap.node(1).allocatable.memory - gib, 1});
  CHECK(free_of(fork, both, gpu)[1][0] == 8000);

  // The fork changed: the next scoring of the same list reads it again.
  fork.commit(std::move(child));
  state.share_rooms(&fork, &both);
  CHECK(free_of(fork, both, gpu)[1][0] == 7000);
  state.share_rooms(nullptr, nullptr);
  CHECK(free_of(fork, both, gpu)[1][2] == 1);
}

TEST_CASE("NodeResourcesFit notes the rooms of the nodes it keeps for the scores, in the fork it filters in", "[packing]") {
  auto snap = ClusterSnapshot::build({make_node("a").cpu("16").memory("8Gi").scalar(kGpu, "4"), make_node("b").cpu("2").scalar(kGpu, "2"),
                                      make_node("c").cpu("8").memory("8Gi").scalar(kGpu, "2")},
                                     {make_pod("x").cpu("2").memory("1Gi").scalar(kGpu, "1").on("a")});
  const model::InternedString gpu(kGpu);
  auto filter = make_filter("NodeResourcesFit").value();
  const auto* many = dynamic_cast<const FilterNodes*>(filter.get());
  REQUIRE(many);
  Fork fork(snap);
  Fork child = fork.fork();
  child.add_pod(2, make_pod("y").cpu("1").memory("1Gi").scalar(kGpu, "1").build());
  auto rooms_of = [&](const std::vector<Room>& rooms) {
    std::vector<std::array<int64_t, 4>> out;
    for (const auto& r : rooms) out.push_back({r.cpu_milli, r.memory, r.scarce, r.pods});
    return out;
  };
  auto fresh = [&](const Fork& f, const std::vector<int>& nodes) {
    std::vector<Room> out;
    for (int n : nodes) out.push_back(f.room_of(n, gpu));
    return rooms_of(out);
  };
  for (const char* gpus : {"0", "1", "2"}) {  // a CPU pod, and GPU pods that b or c cannot take
    INFO("gpus " << gpus);
    const auto pod = make_pod("p").cpu("4").memory("1Gi").scalar(kGpu, gpus).build();
    CycleState state;
    state.record_rooms(&child, gpu);
    CHECK(state.room_record(fork) == nullptr);  // another fork: nothing noted
    std::vector<int> nodes{0, 1, 2};
    many->filter_nodes(state, 0, *pod, child, nodes);
    CHECK(nodes == (std::string(gpus) == "2" ? std::vector<int>{0} : std::vector<int>{0, 2}));
    state.adopt_rooms(&nodes);
    CHECK(state.shares_rooms(&child, &nodes));
    const std::vector<Room>& shared = state.rooms(child, nodes, gpu);
    CHECK(rooms_of(shared) == fresh(child, nodes));
    CHECK(state.rooms(child, nodes, {}).front().scarce == 0);  // another resource: read afresh
  }
  // Kept nodes the list no longer matches (a later filter dropped one): not shared.
  const auto pod = make_pod("p").cpu("1").build();
  CycleState state;
  state.record_rooms(&child, gpu);
  std::vector<int> nodes{0, 1, 2};
  many->filter_nodes(state, 0, *pod, child, nodes);
  nodes.pop_back();
  state.adopt_rooms(&nodes);
  CHECK_FALSE(state.shares_rooms(&child, &nodes));
  CHECK(rooms_of(state.rooms(child, nodes, gpu)) == fresh(child, nodes));
}

TEST_CASE("the packing profile's full placement picks the node its scores pick over rooms read node by node", "[packing][framework]") {
  // Random GPU clusters, pods, and a child fork's changes: Framework::place (the rooms noted by
  // NodeResourcesFit and shared by the scores) against each score run on its own, without
  // shared rooms, normalised and weighted here.
  ProfileConfig profile = default_profile();
  profile.scores = {ScoreConfig{"Fragmentation", 100, {}}, ScoreConfig{"BestFit", 1, {}}, ScoreConfig{"FreeCPU", 1, {}}};
  auto fw = Framework::create(profile).value();
  std::vector<std::unique_ptr<ScorePlugin>> plugins;
  for (const auto& s : profile.scores) plugins.push_back(make_score(s).value());
  int placed = 0;
  for (unsigned seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    std::vector<NodePtr> nodes;
    std::vector<PodPtr> existing;
    for (int i = 0; i < 24; ++i) {
      nodes.push_back(make_node(fmt::format("n{:02}", i))
                          .cpu(std::to_string(4 + 4 * pick(4)))
                          .memory("32Gi")
                          .scalar(kGpu, std::to_string(1000 * (1 + pick(4)))));
      if (pick(2))
        existing.push_back(make_pod(fmt::format("e{}", i))
                               .cpu(fmt::format("{}m", 500 * (1 + pick(6))))
                               .memory("1Gi")
                               .scalar(kGpu, std::to_string(250 * pick(4)))
                               .on(fmt::format("n{:02}", i)));
    }
    auto snap = ClusterSnapshot::build(nodes, existing);
    Demand demand{model::InternedString(kGpu)};
    std::vector<PodPtr> pods;
    for (int k = 0; k < 30; ++k) {
      auto b =
          make_pod(fmt::format("w{}", k)).cpu(fmt::format("{}m", 250 * (1 + pick(12)))).memory(fmt::format("{}Mi", 256 * (1 + pick(8))));
      if (pick(3) == 0) b.scalar(kGpu, std::to_string(250 * (1 + pick(4))));
      pods.push_back(b);
      demand.add(*pods.back());
    }
    PlacementCache cache(snap);
    cache.set_demand(&demand);
    Fork plan(snap);
    Fork attempt = plan.fork();
    for (const PodPtr& pod : pods) {
      INFO("seed " << seed << " pod " << pod->meta.name);
      demand.add(*pod, -1);
      const Placement got = fw.place(*pod, attempt, all_nodes(snap), &cache);
      if (got.node < 0) continue;
      CycleState state(&cache);
      state.resolve_demand(attempt);
      std::vector<double> total(got.feasible.size(), 0.0);
      for (size_t s = 0; s < plugins.size(); ++s) {
        std::vector<int64_t> raw(got.feasible.size());
        std::vector<double> normalized(got.feasible.size());
        const auto* many = dynamic_cast<const ScoreNodes*>(plugins[s].get());
        if (many) many->score_nodes(state, 100 + s, *pod, attempt, got.feasible, raw);
        else
          for (size_t k = 0; k < raw.size(); ++k) raw[k] = plugins[s]->score(state, 100 + s, *pod, attempt, got.feasible[k]);
        dynamic_cast<const NormalizeScore&>(*plugins[s]).normalize(raw, normalized);
        for (size_t k = 0; k < total.size(); ++k) total[k] += normalized[k] * profile.scores[s].weight;
      }
      size_t best = 0;
      for (size_t k = 1; k < total.size(); ++k)
        if (total[k] > total[best] || (total[k] == total[best] && got.feasible[k] < got.feasible[best])) best = k;
      CHECK(got.node == got.feasible[best]);
      CHECK(got.score == total[best]);
      ++placed;
      attempt.add_pod(got.node, pod);
      if (pick(4) == 0 && !snap.node(got.node).pods.empty()) attempt.remove_pod(got.node, *snap.node(got.node).pods.front());
    }
  }
  CHECK(placed > 200);
}

TEST_CASE("BestFit weighs each resource by its scarcity", "[packing]") {
  // Both nodes fit. a leaves 1 GPU and 15 CPUs, b 3 GPUs and 1 CPU. The demand asks for GPUs
  // mostly, so the GPU remainder counts most: a is the tighter fit.
  auto snap = ClusterSnapshot::build({make_node("a").cpu("16").scalar(kGpu, "4"), make_node("b").cpu("16").scalar(kGpu, "4")},
                                     {make_pod("x").cpu("0").scalar(kGpu, "2").on("a"), make_pod("y").cpu("14").on("b")});
  Demand demand{model::InternedString(kGpu)};
  demand.add(*make_pod("d").cpu("100m").memory("1Mi").scalar(kGpu, "2").build());
  auto pod = make_pod("p").cpu("1").scalar(kGpu, "1").build();
  CHECK(place(scored_by({{"BestFit", 1, {}}}), snap, *pod, &demand) == "a");
  CHECK(place(scored_by({{"FreeCPU", 1, {}}}), snap, *pod, &demand) == "b");
}

TEST_CASE("BestFit with nothing left to place weighs every resource in its own scale", "[packing]") {
  // After the pod, a keeps 100m CPU and 2 GiB, b 15 CPUs and 1 GiB. Relative to the average
  // free amount, a is by far the tighter fit (memory in bytes must not drown the CPU).
  auto snap =
      ClusterSnapshot::build({make_node("a").cpu("16").memory("16Gi"), make_node("b").cpu("16").memory("16Gi")},
                             {make_pod("x").cpu("15800m").memory("14208Mi").on("a"), make_pod("y").cpu("900m").memory("15232Mi").on("b")});
  Demand nothing{model::InternedString(kGpu)};
  CHECK(place(scored_by({{"BestFit", 1, {}}}), snap, *make_pod("p").cpu("100m").memory("128Mi").build(), &nothing) == "a");
}

namespace {
// The default profile on a cluster with a scarce extended resource: Fragmentation tells nodes
// apart, so place_on_tracked() takes the fullest feasible node only when it strands nothing,
// walks on to the fullest node that strands nothing when a bound on Fragmentation proves no
// fuller node wins, and otherwise scores every node. A random walk of placements (pods with
// and without GPUs, leaving the demand as they go), pods taken off tracked nodes, demand
// counted back in, commits and drops; at each step the result must be place()'s. With
// `shapes` above 0 the pods come in that many kinds only, so that most walks begin from an
// earlier walk for a pod of the same kind.
PlacementCache::Counts check_tracked_walks(unsigned seed, int shapes) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto gpu = [](int units) { return std::to_string(units); };  // in thousandths, as openb's gpu-milli
  std::vector<NodePtr> nodes;
  std::vector<PodPtr> existing;
  for (int i = 0; i < 60; ++i) {
    auto n = make_node(fmt::format("n{:02}", i)).cpu(std::to_string(4 + 4 * (i % 4))).memory(fmt::format("{}Gi", 8 + 8 * (i % 3))).pods(8);
    if (i % 5 != 4) n.scalar(kGpu, gpu(1000 * (1 + i % 8)));  // every fifth node has no GPU
    if (i % 13 == 6) n.taint("dedicated", "x", "NoSchedule");
    nodes.push_back(n);
    // Most nodes nearly full of CPU, leaving 250m to 3 CPUs: where a pod strands GPUs or not.
    for (int k = 0; k < 2; ++k) {
      const int cpu = k == 0 ? 1000 * (4 + 4 * (i % 4)) - 250 * (1 + pick(12)) - 500 : 500;
      auto p = make_pod(fmt::format("e{}-{}", i, k)).cpu(fmt::format("{}m", cpu)).memory(fmt::format("{}Mi", 512 * (1 + pick(4))));
      if (i % 5 != 4 && k == 0 && pick(3) != 0) p.scalar(kGpu, gpu(250 * (1 + pick(3))));
      existing.push_back(p.on(fmt::format("n{:02}", i)));
    }
  }
  auto snap = ClusterSnapshot::build(nodes, existing);
  std::vector<int> spot;
  for (int i = 0; i < 50; ++i) spot.push_back(i);
  // Pods of a few shapes, as workloads have: CPU-only ones, GPU pods asking 250m to 1 GPU, and
  // many of one GPU shape (a node with much of the GPU free and 1 to 1.25 CPUs strands all of
  // them, which stretches Fragmentation's range: then a fuller node stranding little can win).
  auto make = [&](const std::string& name) {
    if (shapes > 0) {  // one of a few kinds: the same requests, some with the toleration
      const int k = pick(shapes);
      auto b = make_pod(name).cpu(fmt::format("{}m", 250 * (1 + k % 8))).memory(fmt::format("{}Mi", 256 * (1 + k % 3)));
      if (k % 5 == 4) b.scalar(kGpu, "250");
      if (k == 5) b.scalar(kGpu, "7500");  // few nodes have that much free
      if (k % 7 == 6) b.toleration(R"({"key":"dedicated","operator":"Exists"})");
      return PodPtr(b);
    }
    if (pick(3) == 0) return PodPtr(make_pod(name).cpu("1").memory("512Mi").scalar(kGpu, "250"));
    if (pick(6) == 0)  // often fits nowhere
      return PodPtr(make_pod(name).cpu(fmt::format("{}m", 1000 * (1 + pick(3)))).memory("1Gi").scalar(kGpu, gpu(1000 * (4 + pick(6)))));
    auto b = make_pod(name).cpu(fmt::format("{}m", 250 * (1 + pick(8)))).memory(fmt::format("{}Mi", 256 * (1 + pick(6))));
    if (pick(4) == 0) b.scalar(kGpu, gpu(250 * (1 + pick(4))));
    if (pick(6) == 0) b.toleration(R"({"key":"dedicated","operator":"Exists"})");
    return PodPtr(b);
  };
  Demand demand{model::InternedString(kGpu)};
  std::vector<PodPtr> waiting;
  for (int k = 0; k < 120; ++k) {
    waiting.push_back(make(fmt::format("w{}", k)));
    demand.add(*waiting.back());
  }
  auto fw = Framework::create(default_profile()).value();
  Fork plan(snap);
  plan.track_candidates(spot, model::InternedString(kGpu));  // GPU pods look only at nodes with enough free
  PlacementCache cache(snap), full_cache(snap);
  cache.set_demand(&demand);
  full_cache.set_demand(&demand);
  int checked = 0, nowhere = 0;
  for (int round = 0; round < 30 && !waiting.empty(); ++round) {
    Fork attempt = plan.fork();
    for (int step = 0; step < 6 && !waiting.empty(); ++step) {
      PodPtr pod = waiting.back();
      waiting.pop_back();
      demand.add(*pod, -1);
      for (const Fork* f : {static_cast<const Fork*>(&plan), static_cast<const Fork*>(&attempt)}) {
        INFO("round " << round << " step " << step << " pod " << pod->meta.name);
        auto fast = fw.place_on_tracked(*pod, *f, cache);
        auto full = fw.place(*pod, *f, spot, &full_cache);
        CHECK(fast.node == full.node);
        CHECK(fast.score == full.score);
        if (fast.node < 0) {  // the same reasons, counted over every tracked node
          CHECK(fast.diagnosis.message() == full.diagnosis.message());
          CHECK(fast.diagnosis.unresolvable == full.diagnosis.unresolvable);
          ++nowhere;
        }
        ++checked;
      }
      auto where = fw.place_on_tracked(*pod, attempt, cache);
      if (where.node >= 0) attempt.add_pod(where.node, pod);
      if (pick(5) == 0) {  // take an existing pod off a tracked node: room grows
        int n = spot[static_cast<size_t>(pick(static_cast<int>(spot.size())))];
        if (!snap.node(n).pods.empty()) attempt.remove_pod(n, *snap.node(n).pods.front());
      }
      if (pick(10) == 0) {  // a pod counted back into the demand
        waiting.push_back(make(fmt::format("r{}-{}", round, step)));
        demand.add(*waiting.back());
      }
    }
    if (pick(3) != 0) plan.commit(std::move(attempt));  // else dropped
  }
  CHECK(checked > 250);
  CHECK(nowhere > 0);
  return cache.counts();
}
}  // namespace

TEST_CASE("placing on tracked GPU nodes past the fullest gives the full placement's node and score", "[packing][framework]") {
  const PlacementCache::Counts counts = check_tracked_walks(11, 0);
  // Every way of finding the node was taken, the bounded walk often.
  INFO("fullest " << counts.fullest << ", bounded " << counts.bounded << ", scored " << counts.scored);
  CHECK(counts.fullest > 10);
  CHECK(counts.bounded > 30);
  CHECK(counts.scored > 10);
}

TEST_CASE("a walk for a pod of a kind walked before begins from that walk's nodes and finds the same node", "[packing][framework]") {
  // Pods of six kinds: most walks replay an earlier one, past nodes that changed since in the
  // tracking fork, in the child then or now, or in a child that was dropped.
  for (unsigned seed : {3u, 17u, 29u}) {
    INFO("seed " << seed);
    const PlacementCache::Counts counts = check_tracked_walks(seed, 6);
    INFO("fullest " << counts.fullest << ", bounded " << counts.bounded << ", replayed " << counts.replayed);
    CHECK(counts.bounded > 20);
    CHECK(counts.replayed > (counts.fullest + counts.bounded) / 2);
  }
}

TEST_CASE("past the fullest node, a fuller node that strands little wins when Fragmentation's range is wide", "[packing][framework]") {
  // GPUs in thousandths. The demand: 100 pods asking 1 CPU and 250 of the GPU, one asking 500m
  // CPU and 250. A 500m CPU-only pod, fullest first: p (600m free, 250 GPU free) strands the
  // one pod; b (no GPU) strands nothing but is the emptiest; big (1.4 CPUs, 8000 GPU free)
  // strands all 100 with much GPU free. With big there, Fragmentation's range is so wide that
  // p's small stranding costs it less than FreeCPU gains: place() picks p, and so must the walk,
  // which can prove nothing and scores every node. Without big, b wins, proven by the bound.
  auto node = [](const char* name, const char* cpu, const char* gpu) {
    auto n = make_node(name).cpu(cpu).memory("64Gi");
    if (*gpu) n.scalar(kGpu, gpu);
    return NodePtr(n);
  };
  for (bool with_big : {true, false}) {
    std::vector<NodePtr> nodes{node("p", "600m", "250"), node("b", "16", "")};
    if (with_big) nodes.push_back(node("big", "1400m", "8000"));
    auto snap = ClusterSnapshot::build(nodes, {});
    Demand demand{model::InternedString(kGpu)};
    for (int k = 0; k < 100; ++k) demand.add(*make_pod(fmt::format("d{}", k)).cpu("1").scalar(kGpu, "250").build());
    demand.add(*make_pod("small").cpu("500m").scalar(kGpu, "250").build());
    auto fw = Framework::create(default_profile()).value();
    Fork plan(snap);
    plan.track_candidates(all_nodes(snap));
    PlacementCache cache(snap);
    cache.set_demand(&demand);
    auto pod = make_pod("pod").cpu("500m").build();
    auto fast = fw.place_on_tracked(*pod, plan, cache);
    auto full = fw.place(*pod, plan, all_nodes(snap), &cache);
    INFO("with big: " << with_big);
    REQUIRE(fast.node >= 0);
    CHECK(snap.node(fast.node).name == (with_big ? "p" : "b"));
    CHECK(fast.node == full.node);
    CHECK(fast.score == full.score);
    CHECK(cache.counts().bounded == (with_big ? 0 : 1));
  }
}

TEST_CASE("the bound on Fragmentation's range finds the node that strands most, past nodes with more of the resource free",
          "[packing][framework]") {
  // As above, with the fork tracking the GPU: the bound walks the nodes from the most GPU free
  // down while what a node could strand at most exceeds the largest found. top has the most
  // free but strands only the small pod (2,400 x 1); mid, with less free, strands the hundred
  // (2,000 x 100), which makes the range wide enough for p to win over b. A bound that stopped
  // at top would prove b.
  auto node = [](const char* name, const char* cpu, const char* gpu) {
    auto n = make_node(name).cpu(cpu).memory("64Gi");
    if (*gpu) n.scalar(kGpu, gpu);
    return NodePtr(n);
  };
  auto snap = ClusterSnapshot::build(
      {node("p", "600m", "250"), node("b", "16", ""), node("top", "600m", "2400"), node("mid", "1400m", "2000")}, {});
  Demand demand{model::InternedString(kGpu)};
  for (int k = 0; k < 100; ++k) demand.add(*make_pod(fmt::format("d{}", k)).cpu("1").scalar(kGpu, "250").build());
  demand.add(*make_pod("small").cpu("500m").scalar(kGpu, "250").build());
  auto fw = Framework::create(default_profile()).value();
  Fork plan(snap);
  plan.track_candidates(all_nodes(snap), model::InternedString(kGpu));
  PlacementCache cache(snap);
  cache.set_demand(&demand);
  auto pod = make_pod("pod").cpu("500m").build();
  auto fast = fw.place_on_tracked(*pod, plan, cache);
  auto full = fw.place(*pod, plan, all_nodes(snap), &cache);
  REQUIRE(fast.node >= 0);
  CHECK(snap.node(full.node).name == "p");
  CHECK(fast.node == full.node);
  CHECK(fast.score == full.score);
}

TEST_CASE("a tracking fork's free amount of its resource and its orders follow every change, in it and in a child", "[packing][fork]") {
  std::mt19937 rng(5);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::vector<NodePtr> nodes;
  std::vector<PodPtr> existing;
  for (int i = 0; i < 12; ++i) {
    nodes.push_back(make_node(fmt::format("n{:02}", i)).cpu("64").scalar(kGpu, std::to_string(1000 * (1 + i % 4))));
    existing.push_back(make_pod(fmt::format("e{}", i)).cpu("1").scalar(kGpu, std::to_string(100 * (i % 3))).on(fmt::format("n{:02}", i)));
  }
  auto snap = ClusterSnapshot::build(nodes, existing);
  const model::InternedString gpu(kGpu);
  Fork plan(snap);
  plan.track_candidates({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, gpu);  // n10 and n11 are not tracked
  // NodeResourcesFit's batch filter, which reads a GPU pod's free amount as the packing scores
  // do, keeps exactly the nodes its filter() passes one at a time.
  auto fw = Framework::create(default_profile()).value();
  std::vector<PodPtr> asking;
  for (int units : {0, 1, 250, 900, 1000, 1500, 3900, 4000})
    asking.push_back(make_pod(fmt::format("g{}", units)).cpu(units == 1500 ? "60" : "1").scalar(kGpu, std::to_string(units)));
  auto check = [&](const Fork& f) {
    for (const auto& pod : asking) {
      INFO("pod " << pod->meta.name);
      std::vector<int> passing;
      for (int n = 0; n < snap.size(); ++n) {
        const auto statuses = fw.check(*pod, f, n);
        if (std::all_of(statuses.begin(), statuses.end(), [](const auto& s) { return s.second.ok(); })) passing.push_back(n);
      }
      CHECK(fw.place(*pod, f, all_nodes(snap)).feasible == passing);
    }
    for (int n = 0; n < snap.size(); ++n) {
      INFO("node " << n);
      CHECK(f.free_of(n, gpu) == snap.node(n).allocatable.scalar(gpu) - f.used(n).scalar(gpu));
      // Both in one walk up the forks, as the packing scores read them.
      const Fork::Use use = f.use_of(n, gpu);
      CHECK(use.used == BasicResources::of(f.used(n)));
      CHECK(use.used == f.used_basic(n));
      CHECK(use.free_resource == f.free_of(n, gpu));
      CHECK(f.use_of(n, {}).free_resource == 0);
      CHECK(f.use_of(n, model::InternedString("example.com/untracked")).free_resource == 0);
    }
    // The same for a list (backwards, some nodes twice), with the chain looked at once.
    std::vector<int> list = all_nodes(snap);
    std::reverse(list.begin(), list.end());
    list.insert(list.end(), {3, 10, 3});
    for (const auto& resource : {gpu, model::InternedString(), model::InternedString("example.com/untracked")}) {
      INFO("resource " << resource.view());
      size_t seen = 0;
      f.for_each_use(list, resource, [&](size_t k, const Fork::Use& u) {
        INFO("node " << list[k]);
        CHECK(k == seen++);
        CHECK(u.used == f.use_of(list[k], resource).used);
        CHECK(u.free_resource == f.use_of(list[k], resource).free_resource);
      });
      CHECK(seen == list.size());
    }
  };
  for (int round = 0; round < 20; ++round) {
    Fork attempt = plan.fork();
    for (int step = 0; step < 5; ++step) {
      const int n = pick(snap.size());
      if (pick(3) == 0) attempt.remove_pod(n, *snap.node(n).pods.front());
      else
        attempt.add_pod(
            n, make_pod(fmt::format("p{}-{}", round, step)).cpu(std::to_string(1 + pick(3))).scalar(kGpu, std::to_string(50 * pick(4))));
      check(attempt);
      check(plan);
    }
    {  // a fork two levels down: its own change, its parent's and the tracking fork's
      Fork deeper = attempt.fork();
      const int n = pick(snap.size());
      deeper.add_pod(n, make_pod(fmt::format("d{}", round)).cpu("1").scalar(kGpu, std::to_string(50 * pick(4))));
      check(deeper);
    }
    if (pick(2) == 0) plan.commit(std::move(attempt));
    check(plan);
    // The orders by free amount and by free CPU are the tracked nodes' current amounts, in order.
    std::set<std::pair<int64_t, int>> by_gpu, by_cpu;
    for (int n : plan.tracked()) {
      by_gpu.insert({plan.free_of(n, gpu), n});
      by_cpu.insert({snap.node(n).allocatable.cpu_milli - plan.used(n).cpu_milli, n});
    }
    CHECK(plan.tracked_by_free_resource().entries() == std::vector<std::pair<int64_t, int>>(by_gpu.begin(), by_gpu.end()));
    CHECK(plan.tracked_by_free_cpu().entries() == std::vector<std::pair<int64_t, int>>(by_cpu.begin(), by_cpu.end()));
  }
}
