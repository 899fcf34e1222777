#include "drain/gate.hpp"

#include <fmt/format.h>

namespace spotshift::drain {

GateDecision drain_delay_gate(const PolicyStatusView& status, Time now) {
  if (!status.next_drain_after || now >= *status.next_drain_after) return {};
  return GateDecision{false,
                      fmt::format("nodeDrainDelay has not passed since the last drain; the next drain may start at {}",
                                  format_time(*status.next_drain_after)),
                      status.next_drain_after};
}

Time next_drain_after(Time finished, const PolicySpec& spec) {
  return finished + std::chrono::duration_cast<Time::duration>(spec.node_drain_delay);
}

bool pending_unschedulable(const model::Pod& pod) {
  return pod.node_name.empty() && pod.phase == model::PodPhase::kPending && !pod.terminating() && pod.unschedulable;
}

GateDecision unschedulable_pods_gate(const std::vector<std::shared_ptr<const model::Pod>>& pods, GateScope scope,
                                     SpotReach& spot_reach) {
  if (scope == GateScope::kDisabled) return {};
  int count = 0;
  const model::Pod* first = nullptr;
  for (const auto& p : pods) {
    if (!pending_unschedulable(*p)) continue;
    if (scope == GateScope::kSpotOnly && !spot_reach.reachable(*p)) continue;
    if (!first || p->key_less(*first)) first = p.get();
    ++count;
  }
  if (count == 0) return {};
  return GateDecision{false,
                      fmt::format("{} pod{} {} Pending and unschedulable{} (first: {}); moving pods now would compete with {}",
                                  count, count == 1 ? "" : "s", count == 1 ? "is" : "are",
                                  scope == GateScope::kSpotOnly ? " on spot nodes" : "", first->key(),
                                  count == 1 ? "it" : "them"),
                      std::nullopt};
}

Time NodeBackoff::failed(const std::string& node, Time now) {
  Entry& e = entries_[node];
  ++e.failures;
  Duration wait = base_;
  for (int i = 1; i < e.failures && wait < cap_; ++i) wait *= 2;
  wait = std::min(wait, cap_);
  e.until = now + std::chrono::duration_cast<Time::duration>(wait);
  return e.until;
}

std::map<std::string, std::string> NodeBackoff::active(Time now) const {
  std::map<std::string, std::string> out;
  for (const auto& [node, e] : entries_)
    if (now < e.until)
      out.emplace(node, fmt::format("backing off until {} after {} aborted drain{}", format_time(e.until), e.failures,
                                    e.failures == 1 ? "" : "s"));
  return out;
}

std::optional<Time> NodeBackoff::until(const std::string& node) const {
  auto it = entries_.find(node);
  if (it == entries_.end()) return std::nullopt;
  return it->second.until;
}

}  // namespace spotshift::drain
