// Scale and quality benchmarks on generated scenarios (tests/bench/scenario.hpp):
//
//   plan_bench plan      a. a full plan at 5,000 nodes / 150,000 pods, plain and with 20 % of pods
//                           under required anti-affinity or topology spread
//   plan_bench decode    b. JSON decode throughput of a pod list into the model, one core
//   plan_bench memory    c. resident bytes per cached pod and per cached node in the store
//   plan_bench quality   f. nodes drained on the openb trace: the planner's profiles against a
//                           reimplementation of k8s-spot-rescheduler's greedy, and an upper bound
//
// With no argument it runs them all. Each figure is one JSON line: {"name","value","unit","goal"};
// details go to stderr.

#include "bench.hpp"
#include "scenario.hpp"

#include "drain/planner.hpp"
#include "model/node.hpp"
#include "model/pod.hpp"
#include "plan_command.hpp"
#include "runtime/store.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <malloc.h>

using namespace spotshift;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

op::Snapshot load(const std::string& json) {
  auto snap = op::read_snapshot(json);
  if (!snap) {
    std::fprintf(stderr, "cannot read the scenario: %s\n", snap.error().message.c_str());
    std::exit(1);
  }
  return std::move(*snap);
}

void figure_plan() {
  for (double share : {0.0, 0.2}) {
    auto json = bench::synthetic_cluster({.nodes = 5000, .pods = 150000, .constrained_share = share, .seed = 1});
    auto snap = load(json);
    drain::PolicySpec spec = drain::default_policy_spec();
    double best = 1e9;
    drain::Plan plan;
    for (int i = 0; i < 3; ++i) {
      auto t = clock_type::now();
      plan = drain::make_plan(snap.input, spec);
      best = std::min(best, seconds_since(t));
    }
    std::fprintf(stderr, "plan (%s): %zu nodes, %zu pods; %d drainable on-demand nodes of %d, %d pods to move\n",
                 share > 0 ? "20% constrained" : "plain", snap.input.nodes.size(), snap.input.pods.size(),
                 plan.summary.drainable_nodes, plan.summary.on_demand_nodes, plan.summary.pods_to_move);
    bench::report(share > 0 ? "plan_5000_nodes_150000_pods_affinity_spread" : "plan_5000_nodes_150000_pods_plain", best, "s",
                  share > 0 ? "<= 4 s" : "<= 1 s");
  }
}

void figure_decode() {
  auto json = bench::synthetic_cluster({.nodes = 5000, .pods = 150000, .seed = 2});
  double best = 1e9;
  size_t pods = 0;
  for (int i = 0; i < 3; ++i) {
    auto t = clock_type::now();
    model::JsonDocument doc;
    if (!model::parse_json(json, doc)) std::exit(1);
    std::vector<model::Pod> decoded;
    decoded.reserve(150000);
    for (const auto& item : doc["items"].GetArray())
      if (std::string_view(item["kind"].GetString()) == "Pod")
        if (auto p = model::decode_pod(item)) decoded.push_back(std::move(*p));
    best = std::min(best, seconds_since(t));
    pods = decoded.size();
  }
  std::fprintf(stderr, "decode: %zu bytes, %zu pods in %.3f s\n", json.size(), pods, best);
  bench::report("json_decode_throughput", static_cast<double>(json.size()) / best / 1e6, "MB/s", ">= 400 MB/s");
}

// Heap bytes in use (glibc's count of allocated chunks, headers included): unlike the resident
// set, it does not hide objects placed in memory an earlier phase freed.
size_t heap_in_use() { return mallinfo2().uordblks; }

template <class T, class Decode>
double bytes_per_object(const model::JsonDocument& doc, std::string_view kind, Decode decode, size_t& count) {
  runtime::Store<T> store([](const T& o) { return o.meta.key(); });
  size_t before = heap_in_use();
  for (const auto& item : doc["items"].GetArray())
    if (std::string_view(item["kind"].GetString()) == kind)
      if (auto o = decode(item)) store.upsert(std::make_shared<const T>(std::move(*o)));
  size_t after = heap_in_use();
  count = store.size();
  return static_cast<double>(after - before) / static_cast<double>(count);
}

void figure_memory() {
  auto json = bench::synthetic_cluster({.nodes = 5000, .pods = 150000, .constrained_share = 0.2, .seed = 3});
  model::JsonDocument doc;
  if (!model::parse_json(json, doc)) std::exit(1);
  size_t pods = 0, nodes = 0;
  double per_pod = bytes_per_object<model::Pod>(doc, "Pod", model::decode_pod, pods);
  double per_node = bytes_per_object<model::Node>(doc, "Node", model::decode_node, nodes);
  std::fprintf(stderr, "memory: %zu pods at %.0f B, %zu nodes at %.0f B (heap in use, store and index overhead included)\n", pods,
               per_pod, nodes, per_node);
  bench::report("memory_per_cached_pod", per_pod, "bytes", "<= 1536 bytes");
  bench::report("memory_per_cached_node", per_node, "bytes", "<= 4096 bytes");
}

// ---- f: quality -------------------------------------------------------------------------------

constexpr std::string_view kGpu = "alibabacloud.com/gpu-milli";

struct Capacity {
  int64_t cpu = 0, mem = 0, gpu = 0, pods = 0;
};

struct Cluster {
  std::vector<const model::Node*> on_demand, spot;
  std::map<std::string, std::vector<const model::Pod*>> pods_by_node;
  std::map<std::string, Capacity> used;
};

Cluster classify(const op::Snapshot& snap, const drain::PolicySpec& spec) {
  Cluster c;
  for (const auto& n : snap.input.nodes) {
    auto cls = drain::classify_node(*n, spec);
    if (cls == drain::NodeClass::kOnDemand) c.on_demand.push_back(n.get());
    if (cls == drain::NodeClass::kSpot) c.spot.push_back(n.get());
  }
  for (const auto& p : snap.input.pods) {
    std::string node(p->node_name.view());
    c.pods_by_node[node].push_back(p.get());
    auto& u = c.used[node];
    u.cpu += p->requests.cpu_milli;
    u.mem += p->requests.memory;
    u.gpu += p->requests.get(kGpu);
    ++u.pods;
  }
  return c;
}

bool fits(const model::Node& n, const Capacity& used, const model::Pod& p) {
  const auto& a = n.allocatable;
  return used.pods + 1 <= a.pods && used.cpu + p.requests.cpu_milli <= a.cpu_milli && used.mem + p.requests.memory <= a.memory &&
         used.gpu + p.requests.get(kGpu) <= a.get(kGpu);
}

struct Outcome {
  int drained = 0, moved = 0;
};

// k8s-spot-rescheduler's loop: on-demand nodes by requested CPU, least first; for each, every pod
// to the first spot node (in the given order) it fits on; the node counts when all of them fit.
Outcome greedy(const Cluster& c, bool spot_fullest_first, bool pods_biggest_first) {
  auto used = c.used;
  auto od = c.on_demand;
  std::stable_sort(od.begin(), od.end(), [&](auto* a, auto* b) { return used[a->meta.name].cpu < used[b->meta.name].cpu; });
  Outcome out;
  for (const auto* node : od) {
    auto spot = c.spot;
    std::stable_sort(spot.begin(), spot.end(), [&](auto* a, auto* b) {
      return spot_fullest_first ? used[a->meta.name].cpu > used[b->meta.name].cpu : used[a->meta.name].cpu < used[b->meta.name].cpu;
    });
    auto it = c.pods_by_node.find(node->meta.name);
    std::vector<const model::Pod*> pods = it == c.pods_by_node.end() ? std::vector<const model::Pod*>{} : it->second;
    if (pods.empty()) continue;  // nothing to move: not a drain (the planner does not count these either)
    if (pods_biggest_first)
      std::stable_sort(pods.begin(), pods.end(), [](auto* a, auto* b) { return a->requests.cpu_milli > b->requests.cpu_milli; });
    auto trial = used;
    bool all = true;
    for (const auto* p : pods) {
      bool placed = false;
      for (const auto* s : spot) {
        auto& u = trial[s->meta.name];
        if (!fits(*s, u, *p)) continue;
        u.cpu += p->requests.cpu_milli;
        u.mem += p->requests.memory;
        u.gpu += p->requests.get(kGpu);
        ++u.pods;
        placed = true;
        break;
      }
      if (!(all = placed)) break;
    }
    if (!all) continue;
    used = std::move(trial);
    ++out.drained;
    out.moved += static_cast<int>(pods.size());
  }
  return out;
}

// No plan drains more than k nodes if, for some resource, even the k on-demand nodes needing
// least of it need more than the spot nodes have free.
int upper_bound(const Cluster& c) {
  int bound = static_cast<int>(c.on_demand.size());
  for (auto get : {+[](const Capacity& x) { return x.cpu; }, +[](const Capacity& x) { return x.mem; },
                   +[](const Capacity& x) { return x.gpu; }, +[](const Capacity& x) { return x.pods; }}) {
    int64_t free = 0;
    for (const auto* s : c.spot) {
      Capacity cap{s->allocatable.cpu_milli, s->allocatable.memory, s->allocatable.get(kGpu), s->allocatable.pods};
      auto it = c.used.find(s->meta.name);
      free += get(cap) - (it == c.used.end() ? 0 : get(it->second));
    }
    std::vector<int64_t> need;
    for (const auto* n : c.on_demand)
      if (auto it = c.used.find(n->meta.name); it != c.used.end()) need.push_back(get(it->second));
    std::sort(need.begin(), need.end());
    int k = 0;
    for (int64_t sum = 0; k < static_cast<int>(need.size()) && sum + need[static_cast<size_t>(k)] <= free; ++k) sum += need[static_cast<size_t>(k)];
    bound = std::min(bound, k);
  }
  return bound;
}

void figure_quality() {
  double worst_ratio = 1e9;
  for (uint64_t seed : {1, 2, 3}) {
    bench::OpenbOptions o;
    o.data_dir = bench::default_openb_dir();
    o.seed = seed;
    auto json = bench::openb_cluster(o);
    if (!json) {
      std::fprintf(stderr, "%s\n", json.error().message.c_str());
      std::exit(1);
    }
    auto snap = load(*json);
    drain::PolicySpec spec = drain::default_policy_spec();
    Cluster c = classify(snap, spec);
    Outcome best_greedy;
    std::string best_name;
    for (bool fullest : {true, false})
      for (bool biggest : {false, true}) {
        auto g = greedy(c, fullest, biggest);
        std::fprintf(stderr, "openb seed %llu: greedy (spot %s, pods %s): %d drained, %d moved\n", static_cast<unsigned long long>(seed),
                     fullest ? "fullest first" : "emptiest first", biggest ? "biggest first" : "as listed", g.drained, g.moved);
        if (g.drained > best_greedy.drained) best_greedy = g;
      }
    auto t = clock_type::now();
    auto plan = drain::make_plan(snap.input, spec);
    double took = seconds_since(t);
    drain::PolicySpec most = spec;
    most.profile.scores = {sched::ScoreConfig{"MostAllocated", 1, {}}};
    auto packed = drain::make_plan(snap.input, most);
    int bound = upper_bound(c);
    std::fprintf(stderr,
                 "openb seed %llu: %zu on-demand, %zu spot nodes, %zu pods; default profile %d drained (%d moved, %.3f s), "
                 "MostAllocated %d drained (%d moved); best greedy %d; per-resource bound %d\n",
                 static_cast<unsigned long long>(seed), c.on_demand.size(), c.spot.size(), snap.input.pods.size(),
                 plan.summary.drainable_nodes, plan.summary.pods_to_move, took, packed.summary.drainable_nodes,
                 packed.summary.pods_to_move, best_greedy.drained, bound);
    bench::report(fmt::format("openb_seed{}_drained_default_profile", seed), plan.summary.drainable_nodes, "nodes",
                  fmt::format(">= {:.0f} (98% of the best greedy order, {})", best_greedy.drained * 0.98, best_greedy.drained));
    bench::report(fmt::format("openb_seed{}_drained_best_greedy", seed), best_greedy.drained, "nodes", "reference");
    bench::report(fmt::format("openb_seed{}_drained_upper_bound", seed), bound, "nodes", "reference");
    bench::report(fmt::format("openb_seed{}_drained_most_allocated", seed), packed.summary.drainable_nodes, "nodes",
                  fmt::format("> {} (every greedy order)", best_greedy.drained));
    if (best_greedy.drained > 0) worst_ratio = std::min(worst_ratio, double(plan.summary.drainable_nodes) / best_greedy.drained);
  }
  bench::report("openb_default_profile_vs_best_greedy_worst_seed", worst_ratio, "ratio", ">= 0.98");
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = argc > 1 ? argv[1] : "all";
  bool all = which == "all";
  if (!all && which != "plan" && which != "decode" && which != "memory" && which != "quality") {
    std::fprintf(stderr, "usage: plan_bench [plan|decode|memory|quality]\n");
    return 2;
  }
  // memory first: a fresh heap measures best.
  if (all || which == "memory") figure_memory();
  if (all || which == "decode") figure_decode();
  if (all || which == "plan") figure_plan();
  if (all || which == "quality") figure_quality();
  return 0;
}
