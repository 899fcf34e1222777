// Writes a benchmark scenario as a v1 List (what `kubectl get nodes,pods,pdb -A -o json` prints):
//
//   scenario_gen synthetic [--nodes N] [--pods N] [--constrained SHARE] [--seed S] > cluster.json
//   scenario_gen openb [--pods-file openb_pod_list_default.csv] [--seed S] > cluster.json
//   scenario_gen openb --copies 5 --max-nodes 5000 --on-demand 1500 --web-pods 100000 > a3.json
//                                          (figure a3's cluster: the trace scaled to 5,000 nodes)
//   scenario_gen openb --workloads [--multi-gpu 0.5] > live.json
//                                          (figure g's cluster: ReplicaSets, a DaemonSet, budgets)
//
// The output can be planned offline: spotshift plan --snapshot cluster.json.

#include "core/flags.hpp"
#include "scenario.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

using namespace spotshift;

int main(int argc, char** argv) {
  const std::string kind = argc > 1 ? argv[1] : "";
  if (kind != "synthetic" && kind != "openb") {
    std::fprintf(stderr, "usage: scenario_gen synthetic|openb [flags] (scenario_gen openb --help)\n");
    return 2;
  }
  bench::SyntheticOptions s;
  bench::OpenbOptions o;
  o.data_dir = bench::default_openb_dir();
  int seed = 1;
  auto share = [](double* target) {
    return [target](const std::string& v) {
      char* end = nullptr;
      double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || x < 0 || x > 1) return std::string("want a number from 0 to 1");
      *target = x;
      return std::string();
    };
  };
  FlagSet flags("scenario_gen " + kind, "Writes a benchmark scenario as a v1 List (tests/bench/scenario.hpp).");
  flags.add_int("seed", &seed, "The scenario's seed.");
  if (kind == "synthetic") {
    flags.add_int("nodes", &s.nodes, "Nodes.");
    flags.add_int("pods", &s.pods, "Pods.");
    flags.add_value("constrained", "float", "0", "Share of the workloads with required anti-affinity or a zone spread.",
                    share(&s.constrained_share));
  } else {
    flags.add_string("pods-file", &o.pod_list, "The trace's pod list (in tests/data/openb or $SPOTSHIFT_OPENB).");
    flags.add_int("copies", &o.copies, "The node list this many times over.");
    flags.add_int("max-nodes", &o.max_nodes, "At most this many nodes (0: all).");
    flags.add_int("on-demand", &o.on_demand_nodes, "On-demand nodes.");
    flags.add_int("web-pods", &o.web_pods, "Small web pods placed after the trace's tasks.");
    flags.add_value("multi-gpu", "float", "0", "Share of the GPU tasks that ask 2 to 8 whole GPUs instead (the multi-GPU variant).",
                    share(&o.multi_gpu_share));
    flags.add_bool("workloads", &o.workloads,
                   "Write what makes the cluster live for the operator: ReplicaSets, a node-agent DaemonSet, budgets (figure g).");
  }
  if (auto code = flags.parse_command(std::vector<std::string>(argv + 2, argv + argc), std::cout, std::cerr)) return *code;
  s.seed = o.seed = static_cast<uint64_t>(seed);
  if (kind == "synthetic") {
    std::string out = bench::synthetic_cluster(s);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  auto out = bench::openb_cluster(o);
  if (!out) {
    std::fprintf(stderr, "%s\n", out.error().message.c_str());
    return 1;
  }
  std::fwrite(out->data(), 1, out->size(), stdout);
  return 0;
}
