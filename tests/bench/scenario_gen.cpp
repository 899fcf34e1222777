// Writes a benchmark scenario as a v1 List (what `kubectl get nodes,pods,pdb -A -o json` prints):
//
//   scenario_gen synthetic [--nodes N] [--pods N] [--constrained SHARE] [--seed S] > cluster.json
//   scenario_gen openb [--pods-file openb_pod_list_default.csv] [--seed S] > cluster.json
//   scenario_gen openb --copies 5 --max-nodes 5000 --on-demand 1500 --web-pods 100000 > a3.json
//                                          (figure a3's cluster: the trace scaled to 5,000 nodes)
//
// The output can be planned offline: spotshift plan --snapshot cluster.json.

#include "scenario.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace spotshift;

int main(int argc, char** argv) {
  if (argc < 2 || (std::string(argv[1]) != "synthetic" && std::string(argv[1]) != "openb")) {
    std::fprintf(stderr,
                 "usage: scenario_gen synthetic|openb [--nodes N] [--pods N] [--constrained SHARE] [--pods-file F] [--seed S]\n"
                 "                                   [--copies N] [--max-nodes N] [--on-demand N] [--web-pods N]\n");
    return 2;
  }
  bench::SyntheticOptions s;
  bench::OpenbOptions o;
  o.data_dir = bench::default_openb_dir();
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    char* end = nullptr;
    if (flag == "--nodes") s.nodes = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    else if (flag == "--pods") s.pods = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    else if (flag == "--constrained") s.constrained_share = std::strtod(value.c_str(), &end);
    else if (flag == "--seed") s.seed = o.seed = std::strtoull(value.c_str(), &end, 10);
    else if (flag == "--pods-file") o.pod_list = value;
    else if (flag == "--copies") o.copies = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    else if (flag == "--max-nodes") o.max_nodes = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    else if (flag == "--on-demand") o.on_demand_nodes = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    else if (flag == "--web-pods") o.web_pods = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
    if (end && *end) {
      std::fprintf(stderr, "%s: not a number: %s\n", flag.c_str(), value.c_str());
      return 2;
    }
  }
  if (std::string(argv[1]) == "synthetic") {
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
