#include "sched/framework.hpp"
#include "builders.hpp"
#include "sched/fork.hpp"
#include "support/catch.hpp"

#include <random>

using namespace spotshift;
using namespace spotshift::sched;
using namespace spotshift::sched::testing;

namespace {
ProfileConfig free_cpu(std::string order) {
  ProfileConfig p = default_profile();
  p.scores = {ScoreConfig{"FreeCPU", 1, {{"order", order}}}};
  return p;
}
}  // namespace

TEST_CASE("FreeCPU packs onto the fullest spot node by default and spreads when flipped", "[framework]") {
  // Spot nodes with 700m, 300m and 100m free.
  auto snap =
      ClusterSnapshot::build({make_node("s1").cpu("1"), make_node("s2").cpu("1"), make_node("s3").cpu("1")},
                             {make_pod("a").cpu("300m").on("s1"), make_pod("b").cpu("700m").on("s2"), make_pod("c").cpu("900m").on("s3")});
  Fork fork(snap);
  auto fullest = Framework::create(default_profile()).value();
  auto emptiest = Framework::create(free_cpu("emptiest")).value();
  PodPtr pod = make_pod("p").cpu("100m");
  CHECK(snap.node(fullest.place(*pod, fork, all_nodes(snap)).node).name == "s3");  // least free that fits
  CHECK(snap.node(emptiest.place(*pod, fork, all_nodes(snap)).node).name == "s1");
  PodPtr medium = make_pod("q").cpu("300m");
  CHECK(snap.node(fullest.place(*medium, fork, all_nodes(snap)).node).name == "s2");
}

TEST_CASE("weights combine normalised scores; ties go to the first node by name", "[framework]") {
  auto snap = ClusterSnapshot::build(
      {make_node("b").cpu("2"), make_node("a").cpu("2"), make_node("c").cpu("2").taint("od", "", "PreferNoSchedule")}, {});
  Fork fork(snap);
  ProfileConfig p = default_profile();
  p.scores = {ScoreConfig{"TaintToleration", 3, {}}, ScoreConfig{"LeastAllocated", 1, {}}};
  auto fw = Framework::create(p).value();
  auto placed = fw.place(*make_pod("p").build(), fork, all_nodes(snap));
  CHECK(snap.node(placed.node).name == "a");
  auto scores = fw.scores(*make_pod("p").build(), fork, all_nodes(snap));
  CHECK(scores[2] < scores[0]);  // the PreferNoSchedule taint costs
}

TEST_CASE("when nothing fits, the diagnosis reads like kube-scheduler's", "[framework]") {
  std::vector<NodePtr> nodes;
  for (int i = 0; i < 20; ++i) nodes.push_back(make_node(fmt::format("small-{:02}", i)).cpu("500m"));
  for (int i = 0; i < 17; ++i) nodes.push_back(make_node(fmt::format("gpu-{:02}", i)).taint("dedicated", "gpu", "NoSchedule"));
  auto snap = ClusterSnapshot::build(nodes, {});
  Fork fork(snap);
  auto fw = Framework::create(default_profile()).value();
  auto placed = fw.place(*make_pod("p").cpu("1").build(), fork, all_nodes(snap));
  CHECK(placed.node == -1);
  CHECK(placed.diagnosis.message() == "0/37 nodes are available: 17 node(s) had untolerated taint {dedicated: gpu}, 20 Insufficient cpu.");
  CHECK_FALSE(placed.diagnosis.unresolvable);
}

TEST_CASE("forks add and remove pods, nest, commit and drop", "[framework]") {
  auto snap = ClusterSnapshot::build({make_node("a").cpu("1"), make_node("b").cpu("1")}, {make_pod("x").cpu("600m").on("a")});
  Fork plan(snap);
  auto fw = Framework::create(default_profile()).value();
  PodPtr big = make_pod("big").cpu("600m");
  {
    Fork attempt = plan.fork();
    CHECK(attempt.remove_pod(0, *make_pod("x").build()));
    CHECK(attempt.used(0).cpu_milli == 0);
    attempt.add_pod(1, big);
    CHECK(attempt.used(1).cpu_milli == 600);
    CHECK(snap.node(fw.place(*big, attempt, {0, 1}).node).name == "a");
    // Dropped: the plan is untouched.
  }
  CHECK(plan.used(0).cpu_milli == 600);
  CHECK(plan.changes() == 0);
  Fork attempt = plan.fork();
  attempt.add_pod(1, big);
  plan.commit(std::move(attempt));
  CHECK(plan.used(1).cpu_milli == 600);
  CHECK(fw.place(*big, plan, {0, 1}).node == -1);
  Fork deeper = plan.fork();
  CHECK(deeper.used(1).cpu_milli == 600);  // sees its parent's changes
  CHECK(deeper.remove_pod(1, *big));
  CHECK(deeper.used(1).cpu_milli == 0);
  CHECK(plan.used(1).cpu_milli == 600);
  int pods_on_b = 0;
  deeper.for_each_pod(1, [&](const model::Pod&) { ++pods_on_b; });
  CHECK(pods_on_b == 0);
  CHECK_FALSE(deeper.remove_pod(1, *big));
  // A child's change to a node replaces its parent's when walking every change.
  PodPtr small = make_pod("small").cpu("100m");
  deeper.add_pod(0, small);
  std::vector<std::string> added;
  deeper.for_each_added([&](const model::Pod& p, int node) { added.push_back(fmt::format("{}@{}", p.meta.name, node)); });
  CHECK(added == std::vector<std::string>{"small@0"});
  CHECK(deeper.changes() == 2);
  added.clear();
  plan.for_each_added([&](const model::Pod& p, int node) { added.push_back(fmt::format("{}@{}", p.meta.name, node)); });
  CHECK(added == std::vector<std::string>{"big@1"});
}

TEST_CASE("a fork's packed usage follows adds, removes, nesting and commits", "[framework]") {
  auto snap = ClusterSnapshot::build({make_node("a").cpu("4"), make_node("b").cpu("4"), make_node("c").cpu("4")},
                                     {make_pod("x").cpu("1").memory("1Gi").on("a"), make_pod("y").cpu("2").on("b")});
  auto same = [&](const Fork& f) {
    for (int n = 0; n < snap.size(); ++n) {
      INFO("node " << n);
      CHECK(f.used_basic(n) == BasicResources::of(f.used(n)));
    }
  };
  Fork plan(snap);
  same(plan);
  PodPtr p1 = make_pod("p1").cpu("500m").memory("256Mi");
  PodPtr p2 = make_pod("p2").cpu("1500m");
  Fork attempt = plan.fork();
  attempt.add_pod(2, p1);
  CHECK(attempt.remove_pod(0, *make_pod("x").build()));
  same(attempt);
  same(plan);
  plan.commit(std::move(attempt));
  same(plan);
  CHECK(plan.used_basic(2).cpu_milli == 500);
  CHECK(plan.used_basic(0).memory == 0);
  {
    Fork deeper = plan.fork();
    Fork deepest = deeper.fork();
    deepest.add_pod(2, p2);
    same(deepest);
    CHECK(deepest.used_basic(2).cpu_milli == 2000);
    CHECK(deeper.used_basic(2).cpu_milli == 500);
    deeper.commit(std::move(deepest));
    same(deeper);
    CHECK(deeper.used_basic(2).cpu_milli == 2000);
    // Dropped: the plan is untouched.
  }
  CHECK(plan.used_basic(2).cpu_milli == 500);
  plan.add_pod(1, p2);
  same(plan);
  CHECK(plan.used_basic(1).cpu_milli == 3500);
  CHECK(plan.remove_pod(2, *p1));
  same(plan);
  CHECK(plan.used_basic(2) == BasicResources{});
}

TEST_CASE("a fork's label and anti-affinity indexes follow adds, removes, nesting and commits", "[framework]") {
  const char* anti =
      R"({"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"zone"}]}})";
  auto snap = ClusterSnapshot::build({make_node("a"), make_node("b")}, {make_pod("placed").label("app", "web").affinity(anti).on("a")});
  const model::InternedString app("app"), web("web");
  auto with_label = [&](const Fork& f) {
    std::vector<std::string> out;
    f.for_each_added_with_label(app, web, [&](const model::Pod& p, int node) { out.push_back(fmt::format("{}@{}", p.meta.name, node)); });
    std::sort(out.begin(), out.end());
    return out;
  };
  auto anti_terms = [&](const Fork& f, const model::Labels& labels) {
    std::vector<std::string> out;
    f.for_each_added_anti_affinity_term(labels,
                                        [&](const AntiAffinityTerm& t) { out.push_back(fmt::format("{}@{}", t.pod->meta.name, t.node)); });
    std::sort(out.begin(), out.end());
    return out;
  };
  model::Labels web_labels{{"app", "web"}}, db_labels{{"app", "db"}};
  // The snapshot's own index: the placed pod's term selects web pods only.
  int snapshot_terms = 0;
  snap.for_each_anti_affinity_term(web_labels, [&](const AntiAffinityTerm&) { ++snapshot_terms; });
  CHECK(snapshot_terms == 1);
  snap.for_each_anti_affinity_term(db_labels, [&](const AntiAffinityTerm&) { ++snapshot_terms; });
  CHECK(snapshot_terms == 1);

  Fork plan(snap);
  PodPtr w1 = make_pod("w1").label("app", "web").affinity(anti), w2 = make_pod("w2").label("app", "web"),
         d1 = make_pod("d1").label("app", "db");
  plan.add_pod(0, w1);
  plan.add_pod(1, d1);
  CHECK(with_label(plan) == std::vector<std::string>{"w1@0"});
  CHECK(plan.any_added_anti_affinity());
  CHECK(anti_terms(plan, web_labels) == std::vector<std::string>{"w1@0"});
  CHECK(anti_terms(plan, db_labels).empty());
  {
    Fork child = plan.fork();
    child.add_pod(1, w2);
    CHECK(child.remove_pod(0, *w1));
    CHECK(with_label(child) == std::vector<std::string>{"w2@1"});
    CHECK_FALSE(child.any_added_anti_affinity());
    CHECK(anti_terms(child, web_labels).empty());
    CHECK(with_label(plan) == std::vector<std::string>{"w1@0"});  // the parent is untouched
    plan.commit(std::move(child));
  }
  CHECK(with_label(plan) == std::vector<std::string>{"w2@1"});
  CHECK_FALSE(plan.any_added_anti_affinity());
  CHECK(anti_terms(plan, web_labels).empty());
  Fork again = plan.fork();
  again.add_pod(1, w1);
  CHECK(with_label(again) == std::vector<std::string>{"w1@1", "w2@1"});
  CHECK(anti_terms(again, web_labels) == std::vector<std::string>{"w1@1"});
  // Removed and added back to the same node in a child: listed once.
  Fork back = again.fork();
  CHECK(back.remove_pod(1, *w2));
  back.add_pod(1, w2);
  CHECK(with_label(back) == std::vector<std::string>{"w1@1", "w2@1"});
}

TEST_CASE("the placement cache gives the same answers as evaluating every filter", "[framework]") {
  std::vector<NodePtr> nodes;
  for (int i = 0; i < 50; ++i) {
    auto n = make_node(fmt::format("n{:02}", i)).cpu(std::to_string(1 + i % 4));
    if (i % 3 == 0) n.taint("dedicated", "x", "NoSchedule");
    if (i % 5 == 0) n.label("disk", "ssd");
    if (i % 4 == 1) n.scalar("example.com/gpu", "1");
    if (i % 9 == 2) n.unschedulable();
    nodes.push_back(n);
  }
  auto snap = ClusterSnapshot::build(nodes, {});
  Fork fork(snap);
  auto fw = Framework::create(default_profile()).value();
  PlacementCache cache(snap);
  // The last ones fit nowhere: the diagnosis counts each node's first failing filter, static
  // (taint, selector, cordon) or not (resources), with and without the cached verdicts.
  for (auto pod : {make_pod("a").cpu("2").build(), make_pod("b").selector("disk", "ssd").build(),
                   make_pod("c").toleration(R"({"key":"dedicated","operator":"Exists"})").cpu("3").build(), make_pod("d").cpu("5").build(),
                   make_pod("e").selector("disk", "ssd").cpu("4").scalar("example.com/gpu", "1").build(),
                   make_pod("f").toleration(R"({"key":"dedicated","operator":"Exists"})").scalar("example.com/gpu", "2").build(),
                   make_pod("g")
                       .toleration(R"({"key":"dedicated","operator":"Exists"})")
                       .cpu("3")
                       .memory("1Ti")
                       .scalar("example.com/gpu", "1")
                       .build()}) {
    auto cached = fw.place(*pod, fork, all_nodes(snap), &cache);
    auto plain = fw.place(*pod, fork, all_nodes(snap));
    CHECK(cached.node == plain.node);
    CHECK(cached.feasible == plain.feasible);
    CHECK(cached.diagnosis.message() == plain.diagnosis.message());
    CHECK(cached.diagnosis.unresolvable == plain.diagnosis.unresolvable);
    // And as each node's first failing filter says, asked one node at a time.
    std::map<std::string, int> first_failing;
    for (int n : all_nodes(snap))
      for (const auto& [filter, status] : fw.check(*pod, fork, n))
        if (!status.ok()) {
          for (size_t r = 0; r < status.reasons.size(); ++r) ++first_failing[std::string(status.reasons[r])];
          break;
        }
    if (cached.node < 0) CHECK(cached.diagnosis.reasons == first_failing);
    if (pod->meta.name == "e") {
      CHECK(plain.diagnosis.message() ==
            "0/50 nodes are available: 17 node(s) had untolerated taint {dedicated: x}, 22 node(s) didn't match Pod's node "
            "affinity/selector, 3 Insufficient example.com/gpu, 4 Insufficient cpu, 6 node(s) were unschedulable.");
    }
  }
}

TEST_CASE("placing on tracked nodes from the fullest up gives the full placement's node and score", "[framework]") {
  // A cluster of mixed shapes, some nodes refusing by taint or cordon, three zones; the root
  // fork tracks the "spot" nodes. A random walk of adds, removes, commits and drops, and at each
  // step, for pods of many shapes (some asking for no CPU, some with anti-affinity), the fast
  // path (the walk from the fullest, or for scores that take every feasible node the nodes with
  // enough CPU free) must agree with place() over the same nodes.
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::vector<NodePtr> nodes;
  std::vector<PodPtr> existing;
  for (int i = 0; i < 40; ++i) {
    auto n = make_node(fmt::format("n{:02}", i)).cpu(std::to_string(2 + i % 5)).memory(fmt::format("{}Gi", 2 + i % 3)).pods(3 + i % 4);
    n.label("topology.kubernetes.io/zone", fmt::format("z{}", i % 3)).label("pool", i < 30 ? "spot" : "od");
    if (i % 7 == 3) n.taint("dedicated", "x", "NoSchedule");
    if (i % 11 == 5) n.unschedulable();
    nodes.push_back(n);
    for (int k = 0; k < i % 3; ++k)
      existing.push_back(make_pod(fmt::format("e{}-{}", i, k)).cpu(fmt::format("{}m", 250 * (1 + pick(4)))).on(fmt::format("n{:02}", i)));
  }
  const std::string anti =
      R"({"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"db"}},"topologyKey":"kubernetes.io/hostname"}]}})";
  auto snap = ClusterSnapshot::build(nodes, existing);
  std::vector<int> spot;
  for (int i = 0; i < 30; ++i) spot.push_back(i);
  ProfileConfig no_fit = default_profile();
  std::erase(no_fit.filters, "NodeResourcesFit");
  // Scores that take every feasible node: a placement looks at the nodes with enough CPU free,
  // and BestFit sums their free amounts in the tracked order.
  ProfileConfig packing = default_profile(), least = default_profile();
  packing.scores = {ScoreConfig{"Fragmentation", 100, {}}, ScoreConfig{"BestFit", 1, {}}};
  least.scores = {ScoreConfig{"LeastAllocated", 1, {}}};
  int64_t enough_cpu = 0;
  for (const ProfileConfig& profile : {default_profile(), free_cpu("fullest"), free_cpu("emptiest"), no_fit, packing, least}) {
    auto fw = Framework::create(profile).value();
    Fork plan(snap);
    plan.track_candidates(spot);
    PlacementCache cache(snap);
    int placed = 0, checked = 0, nowhere = 0;
    for (int round = 0; round < 12; ++round) {
      Fork attempt = plan.fork();
      for (int step = 0; step < 8; ++step) {
        auto b = make_pod(fmt::format("p{}-{}", round, step))
                     .cpu(pick(5) == 0   ? "0"
                          : pick(6) == 0 ? fmt::format("{}m", 2000 + 1000 * pick(7))  // often fits nowhere
                                         : fmt::format("{}m", 100 * (1 + pick(20))))
                     .memory(fmt::format("{}Mi", 64 * (1 + pick(16))));
        if (pick(3) == 0) b.label("app", "db").affinity(anti);
        if (pick(4) == 0) b.toleration(R"({"key":"dedicated","operator":"Exists"})");
        PodPtr pod = b;
        for (const Fork* f : {static_cast<const Fork*>(&plan), static_cast<const Fork*>(&attempt)}) {
          INFO("profile " << profile.scores.size() << " round " << round << " step " << step << " pod " << pod->meta.name);
          auto fast = fw.place_on_tracked(*pod, *f, cache);
          auto full = fw.place(*pod, *f, spot);
          CHECK(fast.node == full.node);
          CHECK(fast.score == full.score);
          if (fast.node < 0) {
            CHECK(fast.diagnosis.message() == full.diagnosis.message());
            CHECK(fast.diagnosis.unresolvable == full.diagnosis.unresolvable);
            ++nowhere;
          }
          ++checked;
        }
        auto where = fw.place_on_tracked(*pod, attempt, cache);
        if (where.node >= 0) {
          attempt.add_pod(where.node, pod);
          ++placed;
        }
        if (pick(4) == 0) {  // take an existing pod off a tracked node
          int n = spot[static_cast<size_t>(pick(static_cast<int>(spot.size())))];
          if (!snap.node(n).pods.empty()) attempt.remove_pod(n, *snap.node(n).pods.front());
        }
      }
      if (pick(3) != 0) plan.commit(std::move(attempt));  // else dropped
    }
    CHECK(placed > 20);
    CHECK(checked == 12 * 8 * 2);
    // Without NodeResourcesFit nearly every pod fits somewhere.
    if (std::find(profile.filters.begin(), profile.filters.end(), "NodeResourcesFit") != profile.filters.end()) CHECK(nowhere > 0);
    enough_cpu += cache.counts().enough_cpu;
  }
  CHECK(enough_cpu > 25);
}

TEST_CASE("a placement over the nodes with enough CPU free also looks at the nodes the child fork freed CPU on", "[framework]") {
  // In the tracking fork only `roomy` has the 1 CPU the pod asks free; the child takes a pod off
  // `tight`, which then has 3.5 CPUs free against roomy's 4: the tighter fit, which BestFit
  // prefers. The tracking fork's order of free CPU leaves `tight` out, so the nodes the child
  // changed are looked at besides it.
  std::vector<NodePtr> nodes;
  std::vector<PodPtr> existing;
  for (const char* name : {"full-a", "full-b", "full-c", "roomy", "tight"}) nodes.push_back(make_node(name).cpu("4").memory("8Gi"));
  for (const char* name : {"full-a", "full-b", "full-c"}) existing.push_back(make_pod(fmt::format("on-{}", name)).cpu("4").on(name));
  existing.push_back(make_pod("small").cpu("500m").on("tight"));
  existing.push_back(make_pod("big").cpu("3500m").on("tight"));
  auto snap = ClusterSnapshot::build(nodes, existing);
  const std::vector<int> spot{0, 1, 2, 3, 4};
  ProfileConfig packing = default_profile();
  packing.scores = {ScoreConfig{"Fragmentation", 100, {}}, ScoreConfig{"BestFit", 1, {}}};
  auto fw = Framework::create(packing).value();
  Fork plan(snap);
  plan.track_candidates(spot);
  PlacementCache cache(snap);
  auto pod = make_pod("p").cpu("1").memory("1Gi").build();
  CHECK(snap.node(fw.place_on_tracked(*pod, plan, cache).node).name == "roomy");
  Fork attempt = plan.fork();
  const int tight = 4;
  REQUIRE(snap.node(tight).name == "tight");
  for (const auto& p : snap.node(tight).pods)
    if (p->meta.name == "big") REQUIRE(attempt.remove_pod(tight, *p));
  const Placement fast = fw.place_on_tracked(*pod, attempt, cache), full = fw.place(*pod, attempt, spot);
  CHECK(snap.node(full.node).name == "tight");
  CHECK(fast.node == full.node);
  CHECK(fast.score == full.score);
  CHECK(cache.counts().enough_cpu == 2);
}

TEST_CASE("profiles are validated with errors that name the field", "[framework][profile]") {
  auto decode = [](const std::string& json) { return decode_profile(json); };
  auto ok = decode(
      R"({"filters":["NodeResourcesFit","TaintToleration"],"scores":[{"name":"FreeCPU","weight":10,"args":{"order":"emptiest"}},{"name":"NodeAffinity","weight":2}]})");
  REQUIRE(ok);
  CHECK(ok->filters == std::vector<std::string>{"NodeResourcesFit", "TaintToleration"});
  CHECK(ok->scores.size() == 2);
  CHECK(decode("{}")->filters == default_profile().filters);
  struct Bad {
    const char* json;
    const char* message;
  };
  const Bad cases[] = {
      {R"({"filters":["NodeFit"]})",
       "spec.profile.filters[0]: unknown filter plugin \"NodeFit\" (valid: NodeUnschedulable, NodeConditions, NodeName, "
       "TaintToleration, NodeAffinity, VolumeZone, NodeResourcesFit, NodePorts, InterPodAffinity, PodTopologySpread)"},
      {R"({"filters":["NodePorts","NodePorts"]})", "spec.profile.filters[1]: filter plugin \"NodePorts\" is listed twice"},
      {R"({"scores":[{"name":"Fastest"}]})", "spec.profile.scores[0].name: unknown score plugin \"Fastest\""},
      {R"({"scores":[{"name":"FreeCPU","weight":101}]})", "spec.profile.scores[0].weight: must be an integer from 0 to 100"},
      {R"({"scores":[{"name":"FreeCPU","args":{"order":"random"}}]})",
       "spec.profile.scores[0]: score plugin FreeCPU: args.order must be fullest or emptiest, got \"random\""},
      {R"({"scores":[{"name":"LeastAllocated","args":{"x":"y"}}]})", "spec.profile.scores[0]: score plugin LeastAllocated takes no args"},
      {R"({"scores":[{"weight":1}]})", "spec.profile.scores[0].name: is required"},
      {R"({"filters":"NodePorts"})", "spec.profile.filters: must be a list"},
  };
  for (const auto& c : cases) {
    INFO(c.json);
    auto r = decode(c.json);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::StartsWith(c.message));
  }
}
