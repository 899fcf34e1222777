#include "drain/plan_format.hpp"

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace spotshift::drain {

std::string format_cpu(int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  return fmt::format("{}m", milli);
}

std::string format_price(double price) {
  std::string s = fmt::format("{:.3f}", price);
  while (s.ends_with('0') && s[s.size() - 2] != '.') s.pop_back();
  return s;
}

std::string plan_to_table(const Plan& plan) {
  const auto& s = plan.summary;
  std::string out =
      fmt::format("{} on-demand node{}, {} spot node{}: {} drainable, {} not drainable, {} pod{} to move (planned in {:.1f} ms)\n",
                  s.on_demand_nodes, s.on_demand_nodes == 1 ? "" : "s", s.spot_nodes, s.spot_nodes == 1 ? "" : "s", s.drainable_nodes,
                  s.undrainable_nodes, s.pods_to_move, s.pods_to_move == 1 ? "" : "s", s.plan_millis);
  out += fmt::format("Drain order: {}{}.\n", to_string(s.drain_order),
                     s.scarce_resource.empty() ? "" : fmt::format(" (the scarce resource: {})", s.scarce_resource));
  if (s.hourly_savings)
    out += fmt::format("Draining them saves about {} per hour{}.\n", format_price(*s.hourly_savings),
                       s.unpriced_nodes ? fmt::format(" ({} of them without a price)", s.unpriced_nodes) : "");
  if (s.displaced_pods > 0)
    out += fmt::format("Their moves displace {} expendable pod{} (priority below expendablePodsPriorityCutoff) from spot nodes.\n",
                       s.displaced_pods, s.displaced_pods == 1 ? "" : "s");
  if (s.searched_nodes > 0)
    out += fmt::format("The plan search (spec.searchIterations) found {} more drainable node{} than planning node by node.\n",
                       s.searched_nodes, s.searched_nodes == 1 ? "" : "s");
  if (!plan.drainable.empty()) {
    size_t width = 4;
    for (const auto& n : plan.drainable) width = std::max(width, n.node.size());
    out += fmt::format("\nDRAIN ORDER  {:<{}}  REQUESTED CPU  PODS TO MOVE\n", "NODE", width);
    int order = 0;
    for (const auto& n : plan.drainable) {
      out += fmt::format("{:<11}  {:<{}}  {:<13}  {}", ++order, n.node, width, format_cpu(n.requested_cpu_milli), n.moves.size());
      if (n.hourly_saving) out += fmt::format("  (saves about {} per hour)", format_price(*n.hourly_saving));
      out += '\n';
      for (const auto& m : n.moves) {
        out += fmt::format("    {} -> {}", m.pod->key(), m.target);
        if (!m.budgets.empty()) out += fmt::format("  (PodDisruptionBudget {})", fmt::join(m.budgets, ", "));
        if (!m.warning.empty()) out += fmt::format("  WARNING: {}", m.warning);
        out += '\n';
      }
      for (const auto& skipped : n.skipped) out += fmt::format("    stays: {}\n", skipped);
      for (const auto& d : n.displaces) out += fmt::format("    displaces: {} (priority below expendablePodsPriorityCutoff)\n", d);
    }
  }
  if (!plan.undrainable.empty()) {
    out += "\nNOT DRAINABLE\n";
    for (const auto& n : plan.undrainable) {
      out += fmt::format("{}\n", n.node);
      for (const auto& r : n.reasons) out += fmt::format("    - {}\n", r);
    }
  }
  return out;
}

std::string plan_to_json(const Plan& plan) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  auto str = [&](std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); };
  w.StartObject();
  str("drainableNodes");
  w.StartArray();
  for (const auto& n : plan.drainable) {
    w.StartObject();
    str("node");
    str(n.node);
    str("requestedCPU");
    str(format_cpu(n.requested_cpu_milli));
    if (n.hourly_saving) {
      str("hourlySaving");
      w.Double(*n.hourly_saving);
    }
    if (n.places) {
      str("places");
      w.Int(*n.places);
    }
    str("moves");
    w.StartArray();
    for (const auto& m : n.moves) {
      w.StartObject();
      str("namespace");
      str(m.pod->meta.namespace_.view());
      str("pod");
      str(m.pod->name());
      str("targetNode");
      str(m.target);
      if (!m.budgets.empty()) {
        str("budgets");
        w.StartArray();
        for (const auto& b : m.budgets) str(b);
        w.EndArray();
      }
      if (!m.warning.empty()) {
        str("warning");
        str(m.warning);
      }
      w.EndObject();
    }
    w.EndArray();
    str("staying");
    w.StartArray();
    for (const auto& s : n.skipped) str(s);
    w.EndArray();
    if (!n.displaces.empty()) {
      str("displaces");
      w.StartArray();
      for (const auto& d : n.displaces) str(d);
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
  str("undrainableNodes");
  w.StartArray();
  for (const auto& n : plan.undrainable) {
    w.StartObject();
    str("node");
    str(n.node);
    str("reasons");
    w.StartArray();
    for (const auto& r : n.reasons) str(r);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  str("spotNodes");
  w.StartArray();
  for (const auto& s : plan.spot_nodes) str(s);
  w.EndArray();
  const auto& s = plan.summary;
  str("summary");
  w.StartObject();
  for (auto [name, value] : {std::pair<std::string_view, int>{"onDemandNodes", s.on_demand_nodes},
                             {"spotNodes", s.spot_nodes},
                             {"drainableNodes", s.drainable_nodes},
                             {"undrainableNodes", s.undrainable_nodes},
                             {"podsToMove", s.pods_to_move},
                             {"searchedNodes", s.searched_nodes}}) {
    str(name);
    w.Int(value);
  }
  str("drainOrder");
  str(to_string(s.drain_order));
  if (!s.scarce_resource.empty()) {
    str("scarceResource");
    str(s.scarce_resource);
  }
  if (s.displaced_pods > 0) {
    str("displacedPods");
    w.Int(s.displaced_pods);
  }
  if (s.hourly_savings) {
    str("hourlySavings");
    w.Double(*s.hourly_savings);
    str("unpricedNodes");
    w.Int(s.unpriced_nodes);
  }
  str("planMillis");
  w.Double(static_cast<double>(static_cast<int64_t>(s.plan_millis * 1000)) / 1000.0);
  w.EndObject();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

}  // namespace spotshift::drain
