// spotshift: moves the pods of on-demand nodes onto spot nodes when all of them fit.
//
//   spotshift run      the operator
//   spotshift plan     the planner, on a live cluster (list only) or a snapshot
//   spotshift version  the version
//
// Installed as kubectl-spotshift too, it is a kubectl plugin: `kubectl spotshift plan ...`.

#include "live_plan.hpp"
#include "plan_command.hpp"
#include "run.hpp"
#include "version.hpp"

#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr const char* kUsage = R"(spotshift moves every pod off an on-demand node onto spot nodes when all of them fit, so the
empty on-demand node can be scaled away. It never violates a PodDisruptionBudget and explains every decision.

Usage:
  spotshift run [flags]        Run the operator (see spotshift run --help)
  spotshift plan [flags]       Plan on the cluster, read only, or on a snapshot (see spotshift plan --help)
  spotshift version            Print the version

Documentation: docs/user-guide.md
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  if (command == "run") return spotshift::op::run_command(args, std::cout, std::cerr);
  if (command == "plan") return spotshift::op::plan_command(args, std::cout, std::cerr, spotshift::op::read_cluster);
  if (command == "version" || command == "--version") {
    if (!args.empty() && args[0] != "-h" && args[0] != "--help") {
      std::cerr << "error: spotshift version takes no arguments\n";
      return 2;
    }
    std::cout << "spotshift " << spotshift::op::kVersion << " (" << spotshift::op::kRevision << ")\n";
    return 0;
  }
  std::cerr << "error: unknown command \"" << command << "\"\n\n" << kUsage;
  return 2;
}
