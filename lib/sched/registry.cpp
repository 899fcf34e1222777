// The plugin registry: every filter and score plugin by name, in the order profiles list them.

#include "sched/plugins.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace spotshift::sched {

const Registry& registry() {
  static const Registry r = [] {
    Registry built;
    add_basic_filters(built);
    add_inter_pod_affinity(built);
    add_allocation_scores(built);
    add_topology_spread(built);
    add_packing_scores(built);
    return built;
  }();
  return r;
}

Result<void> no_args(const ScoreConfig& c) {
  if (!c.args.empty()) return Error::invalid(fmt::format("score plugin {} takes no args (got \"{}\")", c.name, c.args.begin()->first));
  return {};
}

std::vector<std::string> filter_plugin_names() {
  std::vector<std::string> out;
  for (const auto& e : registry().filters) out.emplace_back(e.name);
  return out;
}

std::vector<std::string> score_plugin_names() {
  std::vector<std::string> out;
  for (const auto& e : registry().scores) out.emplace_back(e.name);
  return out;
}

Result<std::unique_ptr<FilterPlugin>> make_filter(const std::string& name) {
  const auto& filters = registry().filters;
  auto it = std::find_if(filters.begin(), filters.end(), [&](const FilterEntry& e) { return e.name == name; });
  if (it == filters.end())
    return Error::invalid(fmt::format("unknown filter plugin \"{}\" (valid: {})", name, fmt::join(filter_plugin_names(), ", ")));
  return it->make();
}

Result<std::unique_ptr<ScorePlugin>> make_score(const ScoreConfig& c) {
  const auto& scores = registry().scores;
  auto it = std::find_if(scores.begin(), scores.end(), [&](const ScoreEntry& e) { return e.name == c.name; });
  if (it == scores.end())
    return Error::invalid(fmt::format("unknown score plugin \"{}\" (valid: {})", c.name, fmt::join(score_plugin_names(), ", ")));
  return it->make(c);
}

}  // namespace spotshift::sched
