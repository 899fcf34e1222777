// Scale and quality benchmarks on generated scenarios (tests/bench/scenario.hpp):
//
//   plan_bench plan      a. a full plan at 5,000 nodes / 150,000 pods, plain and with 20 % of pods
//                           under required anti-affinity or topology spread
//   plan_bench gpu       a3. a full plan of the openb trace scaled to 5,000 GPU nodes and about
//                           150,000 pods, default and packing profiles (or the one named:
//                           plan_bench gpu default)
//   plan_bench decode    b. JSON decode throughput of a pod list into the model, one core
//   plan_bench snapshot  b2. spotshift plan's load of a kubectl get -o json snapshot, a reader per core
//                           (and one reader, for comparison)
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

#include <malloc.h>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>

using namespace spotshift;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

op::Snapshot load(const std::string& json, const op::SnapshotReading& how = {}) {
  auto snap = op::read_snapshot(json, how);
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
                 share > 0 ? "20% constrained" : "plain", snap.input.nodes.size(), snap.input.pods.size(), plan.summary.drainable_nodes,
                 plan.summary.on_demand_nodes, plan.summary.pods_to_move);
    bench::report(share > 0 ? "plan_5000_nodes_150000_pods_affinity_spread" : "plan_5000_nodes_150000_pods_plain", best, "s",
                  share > 0 ? "<= 4 s" : "<= 1 s");
  }
}

// a3: the openb trace's GPU node shapes and pod requests scaled to 5,000 nodes (the node list
// five times over, cut at 5,000; 30 % on-demand), its tasks drawn until they ask for the present
// nodes' GPUs, then 100,000 small web pods; planned with the default profile and with the
// packing profile (plan search on).
void figure_gpu_plan(std::string_view only) {
  bench::OpenbOptions o;
  o.data_dir = bench::default_openb_dir();
  o.copies = 5;
  o.max_nodes = 5000;
  o.on_demand_nodes = 1500;
  o.web_pods = 100000;
  o.seed = 1;
  auto json = bench::openb_cluster(o);
  if (!json) {
    std::fprintf(stderr, "gpu: %s\n", json.error().message.c_str());
    std::exit(1);
  }
  auto snap = load(*json);
  drain::PolicySpec packing = drain::default_policy_spec();
  packing.drain_order = drain::DrainOrder::kScarceResources;
  packing.search_iterations = 2000;
  packing.profile.scores = {sched::ScoreConfig{"Fragmentation", 100, {}}, sched::ScoreConfig{"BestFit", 1, {}}};
  for (const auto& [label, spec] :
       {std::pair<const char*, drain::PolicySpec>{"default", drain::default_policy_spec()}, {"packing", packing}}) {
    if (!only.empty() && only != label) continue;
    drain::Plan plan;
    std::vector<double> runs;
    for (int i = 0; i < 3; ++i) {
      auto t = clock_type::now();
      plan = drain::make_plan(snap.input, spec);
      runs.push_back(seconds_since(t));
    }
    std::fprintf(stderr, "gpu (%s): %zu nodes, %zu pods; %d drainable on-demand nodes of %d, %d pods to move; %.3f, %.3f, %.3f s\n", label,
                 snap.input.nodes.size(), snap.input.pods.size(), plan.summary.drainable_nodes, plan.summary.on_demand_nodes,
                 plan.summary.pods_to_move, runs[0], runs[1], runs[2]);
    const bool is_default = std::string_view(label) == "default";
    bench::report(is_default ? "plan_5000_gpu_nodes_default_profile" : "plan_5000_gpu_nodes_packing_profile",
                  *std::min_element(runs.begin(), runs.end()), "s", is_default ? "<= 1 s" : "<= 4 s");
  }
}

// A PodList page as the apiserver sends one (the synthetic cluster's pods, untimed), read the way
// the client reads list pages: one pass to find the items and the list's metadata, then each item
// decoded from the text in one pass.
std::string pod_list_text(const std::string& cluster) {
  model::JsonDocument doc;
  if (!model::parse_json(cluster, doc)) std::exit(1);
  std::string out = R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[)";
  bool first = true;
  for (const auto& item : doc["items"].GetArray()) {
    if (std::string_view(item["kind"].GetString()) != "Pod") continue;
    if (!first) out += ',';
    first = false;
    out += model::json_text(item);
  }
  return out + "]}";
}

// Reads the list the way the client reads a list page (kube::Client::list_page): one pass over
// the text, each item handed to into() as a reader at the item. Returns the seconds it took.
template <class Into>
double read_pod_list(const std::string& json, Into into) {
  auto t = clock_type::now();
  model::JsonReader page(json);
  std::string_view key;
  page.begin_object();
  while (page.next_member(key))
    if (key == "items" && page.begin_array()) {
      while (page.next_element()) into(page);
    } else {
      page.skip();
    }
  double total = seconds_since(t);
  if (!page.finish()) {
    std::fprintf(stderr, "decode: the pod list does not read: %s\n", page.error().c_str());
    std::exit(1);
  }
  return total;
}

// Timed with what it allocates, as runtime::Informer lists (the path every pod of the cluster
// takes): each pod decoded straight into the shared object the store keeps.
void figure_decode() {
  const std::string json = pod_list_text(bench::synthetic_cluster({.nodes = 5000, .pods = 150000, .seed = 2}));
  std::vector<double> passes;
  size_t pods = 0;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::shared_ptr<const model::Pod>> listed;
    passes.push_back(read_pod_list(json, [&](model::JsonReader& item) {
      auto pod = std::make_shared<model::Pod>();
      if (model::decode_pod(item, *pod)) listed.push_back(std::move(pod));
    }));
    pods = listed.size();
  }
  std::fprintf(stderr, "decode: %zu bytes, %zu pods in %.3f, %.3f, %.3f s (the first on a heap not yet faulted in)\n", json.size(), pods,
               passes[0], passes[1], passes[2]);
  const double best = *std::min_element(passes.begin(), passes.end());
  bench::report("json_decode_throughput", static_cast<double>(json.size()) / best / 1e6, "MB/s", ">= 400 MB/s");
}

// spotshift plan's load of a snapshot (op::read_snapshot): a v1 List of the nodes, pods and
// budgets of the 5,000-node cluster, each item on a line of its own as kubectl writes them, each
// object decoded from its text: by one reader per core (what spotshift plan does), and by one.
void figure_snapshot() {
  const std::string json = bench::synthetic_cluster({.nodes = 5000, .pods = 150000, .constrained_share = 0.2, .seed = 4});
  auto best_of_three = [&](size_t readers_wanted, size_t& readers) {
    std::vector<double> passes;
    size_t pods = 0;
    for (int i = 0; i < 3; ++i) {
      auto t = clock_type::now();
      auto snap = load(json, {.readers = readers_wanted, .used = &readers});
      passes.push_back(seconds_since(t));
      pods = snap.input.pods.size();
    }
    std::fprintf(stderr, "snapshot: %zu bytes, %zu pods by %zu readers in %.3f, %.3f, %.3f s\n", json.size(), pods, readers, passes[0],
                 passes[1], passes[2]);
    return *std::min_element(passes.begin(), passes.end());
  };
  size_t readers = 0, one = 0;
  const double shared = best_of_three(0, readers);
  const double alone = best_of_three(1, one);
  bench::report("snapshot_load_throughput", static_cast<double>(json.size()) / shared / 1e6, "MB/s", ">= 300 MB/s");
  bench::report("snapshot_load_readers", static_cast<double>(readers), "readers", "one per core");
  bench::report("snapshot_load_throughput_one_reader", static_cast<double>(json.size()) / alone / 1e6, "MB/s", "none (for comparison)");
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
      if (auto o = decode(model::json_text(item))) store.upsert(std::make_shared<const T>(std::move(*o)));
  size_t after = heap_in_use();
  count = store.size();
  return static_cast<double>(after - before) / static_cast<double>(count);
}

void figure_memory() {
  auto json = bench::synthetic_cluster({.nodes = 5000, .pods = 150000, .constrained_share = 0.2, .seed = 3});
  model::JsonDocument doc;
  if (!model::parse_json(json, doc)) std::exit(1);
  size_t pods = 0, nodes = 0;
  double per_pod = bytes_per_object<model::Pod>(
      doc, "Pod", [](std::string_view v) { return model::decode_pod(v); }, pods);
  double per_node = bytes_per_object<model::Node>(
      doc, "Node", [](std::string_view v) { return model::decode_node(v); }, nodes);
  std::fprintf(stderr, "memory: %zu pods at %.0f B, %zu nodes at %.0f B (heap in use, store and index overhead included)\n", pods, per_pod,
               nodes, per_node);
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

// What the spot nodes can take, at most, of the GPUs of the pods asking for at least t GPU-milli.
// A spot node takes a subset of those pods, so no more GPU than the largest sum that a subset of
// all such pods on on-demand nodes reaches within its free GPUs while asking no more CPU, memory
// and pod slots than it has free. least[r][g]: the least of resource r any subset summing to
// exactly g GPU (in units of the pods' common divisor) asks, a 0/1 knapsack. The pods are counted
// for every node at once (each node could take the same pods), which keeps it a bound. Sizes are
// visited largest first, adding each size's pods to the same tables.
class GpuRoom {
 public:
  GpuRoom(std::vector<const model::Pod*> gpu_pods, std::vector<Capacity> spot_free)
      : pods_(std::move(gpu_pods)), free_(std::move(spot_free)) {
    std::sort(pods_.begin(), pods_.end(), [](auto* a, auto* b) { return a->requests.get(kGpu) > b->requests.get(kGpu); });
    for (const auto* p : pods_) unit_ = std::gcd(unit_, p->requests.get(kGpu));
    int64_t most = 0;
    for (const auto& f : free_) most = std::max(most, f.gpu);
    if (unit_ == 0) unit_ = 1;
    size_t states = static_cast<size_t>(std::max<int64_t>(most, 0) / unit_) + 1;
    for (auto& t : least_) t.assign(states, kNever);
    for (auto& t : least_) t[0] = 0;
  }
  // Adds the pods asking at least t (the sizes must come largest first) and returns the room.
  int64_t room_for_at_least(int64_t t) {
    for (; next_ < pods_.size() && pods_[next_]->requests.get(kGpu) >= t; ++next_) {
      const auto& r = pods_[next_]->requests;
      const int64_t cost[3] = {r.cpu_milli, r.memory, 1};
      const size_t g = static_cast<size_t>(r.get(kGpu) / unit_);
      for (size_t k = 0; k < 3; ++k)
        for (size_t s = least_[k].size(); s-- > g;)
          if (least_[k][s - g] != kNever) least_[k][s] = std::min(least_[k][s], least_[k][s - g] + cost[k]);
    }
    int64_t room = 0;
    for (const auto& f : free_) {
      if (f.gpu < t) continue;
      for (size_t s = static_cast<size_t>(f.gpu / unit_) + 1; s-- > 0;)
        if (least_[0][s] <= f.cpu && least_[1][s] <= f.mem && least_[2][s] <= f.pods) {
          room += static_cast<int64_t>(s) * unit_;
          break;
        }
    }
    return room;
  }

 private:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  std::vector<const model::Pod*> pods_;
  std::vector<Capacity> free_;
  int64_t unit_ = 0;
  std::array<std::vector<int64_t>, 3> least_;
  size_t next_ = 0;
};

// The most nodes any plan can drain: for each constraint, the k on-demand nodes needing least of
// it must fit in what the spot nodes offer for it, so no plan drains more than the smallest such
// k over all constraints. Constraints: each resource against the spot nodes' free total; and,
// for each GPU request size t, the GPUs (and the count) of pods asking for at least t against
// what the spot nodes can take of them (GpuRoom), and against the whole t-sized slots there.
int upper_bound(const Cluster& c) {
  auto smallest_k = [&](auto need_of, int64_t capacity) {
    std::vector<int64_t> need;
    for (const auto* n : c.on_demand)
      if (auto it = c.pods_by_node.find(n->meta.name); it != c.pods_by_node.end()) need.push_back(need_of(it->second));
    std::sort(need.begin(), need.end());
    int k = 0;
    for (int64_t sum = 0; k < static_cast<int>(need.size()) && sum + need[static_cast<size_t>(k)] <= capacity; ++k)
      sum += need[static_cast<size_t>(k)];
    return k;
  };
  auto free_of = [&](const model::Node* s) {
    auto it = c.used.find(s->meta.name);
    Capacity u = it == c.used.end() ? Capacity{} : it->second;
    return Capacity{s->allocatable.cpu_milli - u.cpu, s->allocatable.memory - u.mem, s->allocatable.get(kGpu) - u.gpu,
                    s->allocatable.pods - u.pods};
  };
  int bound = static_cast<int>(c.on_demand.size());
  for (auto get : {+[](const Capacity& x) { return x.cpu; }, +[](const Capacity& x) { return x.mem; },
                   +[](const Capacity& x) { return x.gpu; }, +[](const Capacity& x) { return x.pods; }}) {
    int64_t free = 0;
    for (const auto* s : c.spot) free += get(free_of(s));
    bound = std::min(
        bound,
        smallest_k(
            [&](const std::vector<const model::Pod*>& pods) {
              Capacity need;
              for (const auto* p : pods)
                need = {need.cpu + p->requests.cpu_milli, need.mem + p->requests.memory, need.gpu + p->requests.get(kGpu), need.pods + 1};
              return get(need);
            },
            free));
  }
  std::vector<const model::Pod*> gpu_pods;
  for (const auto* n : c.on_demand)
    if (auto it = c.pods_by_node.find(n->meta.name); it != c.pods_by_node.end())
      for (const auto* p : it->second)
        if (p->requests.get(kGpu) > 0) gpu_pods.push_back(p);
  std::set<int64_t, std::greater<>> sizes;
  for (const auto* p : gpu_pods) sizes.insert(p->requests.get(kGpu));
  std::vector<Capacity> spot_free;
  for (const auto* s : c.spot) spot_free.push_back(free_of(s));
  GpuRoom room(gpu_pods, spot_free);
  for (int64_t t : sizes) {
    int64_t slots = 0;
    for (const auto& f : spot_free)
      if (f.gpu >= t) slots += f.gpu / t;
    auto big = [t](const model::Pod* p) { return p->requests.get(kGpu) >= t; };
    bound = std::min(bound, smallest_k(
                                [&](const std::vector<const model::Pod*>& pods) {
                                  int64_t g = 0;
                                  for (const auto* p : pods) g += big(p) ? p->requests.get(kGpu) : 0;
                                  return g;
                                },
                                room.room_for_at_least(t)));
    bound = std::min(bound, smallest_k(
                                [&](const std::vector<const model::Pod*>& pods) {
                                  return static_cast<int64_t>(std::count_if(pods.begin(), pods.end(), big));
                                },
                                slots));
  }
  return bound;
}

struct ProfileRun {
  int drained = 0, moved = 0;
  double seconds = 0;
};

ProfileRun run_profile(const op::Snapshot& snap, const drain::PolicySpec& spec) {
  auto t = clock_type::now();
  auto plan = drain::make_plan(snap.input, spec);
  return {plan.summary.drainable_nodes, plan.summary.pods_to_move, seconds_since(t)};
}

// The packing profile of docs/scheduling.md.
drain::PolicySpec packing_spec() {
  drain::PolicySpec spec = drain::default_policy_spec();
  spec.drain_order = drain::DrainOrder::kScarceResources;
  spec.profile.scores = {sched::ScoreConfig{"Fragmentation", 100, {}}, sched::ScoreConfig{"BestFit", 1, {}}};
  spec.search_iterations = 2000;
  return spec;
}

double per_node(int moved, int drained) { return drained > 0 ? double(moved) / drained : 0; }

void figure_quality(const std::vector<uint64_t>& seeds) {
  double worst_ratio = 1e9, worst_gap_closed = 1e9, worst_margin = 1e9, worst_evictions = -1e9;
  for (uint64_t seed : seeds) {
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
    for (bool fullest : {true, false})
      for (bool biggest : {false, true}) {
        auto g = greedy(c, fullest, biggest);
        std::fprintf(stderr, "openb seed %llu: greedy (spot %s, pods %s): %d drained, %d moved\n", static_cast<unsigned long long>(seed),
                     fullest ? "fullest first" : "emptiest first", biggest ? "biggest first" : "as listed", g.drained, g.moved);
        if (g.drained > best_greedy.drained ||
            (g.drained == best_greedy.drained && per_node(g.moved, g.drained) < per_node(best_greedy.moved, best_greedy.drained)))
          best_greedy = g;
      }
    auto def = run_profile(snap, spec);
    auto packing = run_profile(snap, packing_spec());
    drain::PolicySpec free_cpu = spec;
    free_cpu.profile.scores = {sched::ScoreConfig{"FreeCPU", 1, {}}};
    auto cpu_only = run_profile(snap, free_cpu);
    int bound = upper_bound(c);
    if (std::max({def.drained, packing.drained, cpu_only.drained, best_greedy.drained}) > bound) {
      std::fprintf(stderr, "openb seed %llu: a plan drains more than the upper bound %d: the bound is wrong\n",
                   static_cast<unsigned long long>(seed), bound);
      std::exit(1);
    }
    double gap_closed = bound > best_greedy.drained ? double(packing.drained - best_greedy.drained) / (bound - best_greedy.drained) : 1.0;
    std::fprintf(stderr,
                 "openb seed %llu: %zu on-demand, %zu spot nodes, %zu pods; default profile %d drained (%d moved, %.3f s); "
                 "packing profile %d drained (%d moved, %.3f s); FreeCPU alone %d drained (%d moved); best greedy %d (%d moved); "
                 "upper bound %d; packing closes %.0f %% of the gap\n",
                 static_cast<unsigned long long>(seed), c.on_demand.size(), c.spot.size(), snap.input.pods.size(), def.drained, def.moved,
                 def.seconds, packing.drained, packing.moved, packing.seconds, cpu_only.drained, cpu_only.moved, best_greedy.drained,
                 best_greedy.moved, bound, gap_closed * 100);
    bench::report(fmt::format("openb_seed{}_drained_default_profile", seed), def.drained, "nodes",
                  fmt::format(">= {:.1f} (98% of the best greedy order, {})", best_greedy.drained * 0.98, best_greedy.drained));
    bench::report(fmt::format("openb_seed{}_drained_packing_profile", seed), packing.drained, "nodes",
                  fmt::format(">= {:.1f} (half way from the best greedy order, {}, to the bound, {})",
                              best_greedy.drained + (bound - best_greedy.drained) / 2.0, best_greedy.drained, bound));
    bench::report(fmt::format("openb_seed{}_evictions_per_drained_node_packing", seed), per_node(packing.moved, packing.drained), "pods",
                  fmt::format("<= {:.2f} (the best greedy order's)", per_node(best_greedy.moved, best_greedy.drained)));
    bench::report(fmt::format("openb_seed{}_drained_best_greedy", seed), best_greedy.drained, "nodes", "reference");
    bench::report(fmt::format("openb_seed{}_drained_upper_bound", seed), bound, "nodes", "reference");
    if (best_greedy.drained > 0) worst_ratio = std::min(worst_ratio, double(def.drained) / best_greedy.drained);
    worst_gap_closed = std::min(worst_gap_closed, gap_closed);
    worst_margin = std::min(worst_margin, double(packing.drained - best_greedy.drained));
    worst_evictions =
        std::max(worst_evictions, per_node(packing.moved, packing.drained) - per_node(best_greedy.moved, best_greedy.drained));
  }
  bench::report("openb_default_profile_vs_best_greedy_worst_seed", worst_ratio, "ratio", ">= 0.98");
  bench::report("openb_packing_more_drained_than_best_greedy_worst_seed", worst_margin, "nodes", "> 0");
  bench::report("openb_packing_gap_closed_worst_seed", worst_gap_closed, "share", ">= 0.5");
  bench::report("openb_packing_extra_evictions_per_drained_node_worst_seed", worst_evictions, "pods", "<= 0");
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = argc > 1 ? argv[1] : "all";
  bool all = which == "all";
  // quality takes the openb seeds to run (default 1 to 8).
  std::vector<uint64_t> seeds;
  for (int i = 2; i < argc && which == "quality"; ++i) {
    char* end = nullptr;
    unsigned long long seed = std::strtoull(argv[i], &end, 10);
    if (end == argv[i] || *end != '\0') {
      std::fprintf(stderr, "plan_bench quality: a seed is a whole number, got \"%s\"\n", argv[i]);
      return 2;
    }
    seeds.push_back(seed);
  }
  if (seeds.empty()) seeds = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::string_view profile = which == "gpu" && argc == 3 ? std::string_view(argv[2]) : "";
  if ((!all && which != "plan" && which != "gpu" && which != "decode" && which != "snapshot" && which != "memory" && which != "quality") ||
      (which != "quality" && argc > 2 && profile.empty()) || (!profile.empty() && profile != "default" && profile != "packing")) {
    std::fprintf(stderr, "usage: plan_bench [plan|gpu [default|packing]|decode|snapshot|memory|quality [seed...]]\n");
    return 2;
  }
  // memory first: a fresh heap measures best.
  if (all || which == "memory") figure_memory();
  if (all || which == "decode") figure_decode();
  if (all || which == "snapshot") figure_snapshot();
  if (all || which == "plan") figure_plan();
  if (all || which == "gpu") figure_gpu_plan(profile);
  if (all || which == "quality") figure_quality(seeds);
  return 0;
}
