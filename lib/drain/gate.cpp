#include "drain/gate.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spotshift::drain {

GateDecision drain_delay_gate(const PolicyStatusView& status, Time now) {
  if (!status.next_drain_after || now >= *status.next_drain_after) return {};
  return GateDecision{false,
                      fmt::format("nodeDrainDelay has not passed since the last drain; the next drain may start at {}",
                                  format_time(*status.next_drain_after)),
                      status.next_drain_after};
}

Time next_drain_after(Time finished, const PolicySpec& spec) {
  const Time t = finished + std::chrono::duration_cast<Time::duration>(spec.node_drain_delay);
  const auto s = std::chrono::time_point_cast<std::chrono::seconds>(t);
  return s < t ? s + std::chrono::seconds(1) : Time(s);
}

std::vector<Time> starts_within_hour(std::vector<Time> starts, Time now) {
  std::erase_if(starts, [&](Time t) { return t + std::chrono::hours(1) <= now; });
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  if (starts.size() > static_cast<size_t>(kMaxDrainsPerHour)) starts.erase(starts.begin(), starts.end() - kMaxDrainsPerHour);
  return starts;
}

GateDecision drains_per_hour_gate(const std::vector<Time>& starts, std::optional<int> max, Time now) {
  if (!max) return {};
  auto recent = starts_within_hour(starts, now);
  if (static_cast<int>(recent.size()) < *max) return {};
  // The count falls below the limit when the oldest start that keeps it there is an hour old.
  const Time reopens = recent[recent.size() - static_cast<size_t>(*max)] + std::chrono::hours(1);
  return GateDecision{false,
                      fmt::format("{} drain{} started within the last hour (maxDrainsPerHour is {}); the next may start at {}",
                                  recent.size(), recent.size() == 1 ? "" : "s", *max, format_time(reopens)),
                      reopens};
}

bool window_open(const DisruptionWindow& w, Time now) {
  auto start = w.schedule.next(now - std::chrono::duration_cast<Time::duration>(w.duration), *w.zone);
  return start && *start <= now;
}

GateDecision disruption_window_gate(const std::vector<DisruptionWindow>& windows, Time now) {
  std::optional<Time> next;
  for (const auto& w : windows) {
    if (window_open(w, now)) return {};
    if (auto start = w.schedule.next(now, *w.zone); start && (!next || *start < *next)) next = start;
  }
  if (windows.empty()) return {};
  return GateDecision{false,
                      next ? fmt::format("outside every disruption window; the next opens at {}", format_time(*next))
                           : std::string("outside every disruption window, and none opens within five years"),
                      next};
}

std::optional<Gate> evaluate_gates(const GateInput& in) {
  if (in.spec.suspend) return Gate{"Suspended", "spec.suspend is true: no new drain starts", std::nullopt};
  if (!in.window.open) return Gate{"OutsideWindow", in.window.reason, in.window.reopens_at};
  if (!in.drain_delay.open) return Gate{"DrainDelay", in.drain_delay.reason, in.drain_delay.reopens_at};
  if (!in.drains_per_hour.open) return Gate{"MaxDrainsPerHour", in.drains_per_hour.reason, in.drains_per_hour.reopens_at};
  if (in.unschedulable_pods)
    if (GateDecision g = in.unschedulable_pods(); !g.open) return Gate{"UnschedulablePods", g.reason, g.reopens_at};
  if (in.spec.dry_run) return Gate{"DryRun", fmt::format("dryRun is true: {} would be drained now", in.next_node), std::nullopt};
  if (in.shared_spot_nodes)
    if (auto other = in.shared_spot_nodes()) return Gate{"SharedSpotNodes", *other, std::nullopt};
  return std::nullopt;
}

bool pending_unschedulable(const model::Pod& pod) {
  return pod.node_name.empty() && pod.phase == model::PodPhase::kPending && !pod.terminating() && pod.unschedulable;
}

GateDecision unschedulable_pods_gate(const std::vector<std::shared_ptr<const model::Pod>>& pods, GateScope scope, SpotReach& spot_reach) {
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
                      fmt::format("{} pod{} {} Pending and unschedulable{} (first: {}); moving pods now would compete with {}", count,
                                  count == 1 ? "" : "s", count == 1 ? "is" : "are", scope == GateScope::kSpotOnly ? " on spot nodes" : "",
                                  first->key(), count == 1 ? "it" : "them"),
                      std::nullopt};
}

Duration NodeBackoff::wait_for(int count) const {
  Duration wait = base_;
  for (int i = 1; i < count && wait < cap_; ++i) wait *= 2;
  return std::min(wait, cap_);
}

Time NodeBackoff::failed(const std::string& node, Time now) {
  Entry& e = entries_[node];
  ++e.failures;
  Time until = now + std::chrono::duration_cast<Time::duration>(wait_for(e.failures));
  if (until >= e.until) {
    e.until = until;
    e.why.clear();
  }
  return e.until;
}

Time NodeBackoff::held(const std::string& node, Time now, std::string why) {
  Entry& e = entries_[node];
  if (e.holds > 0 && now - e.last_hold > std::chrono::duration_cast<Time::duration>(cap_)) e.holds = 0;
  ++e.holds;
  e.last_hold = now;
  Time until = now + std::chrono::duration_cast<Time::duration>(wait_for(e.holds));
  if (until >= e.until) {
    e.until = until;
    e.why = std::move(why);
  }
  return e.until;
}

void NodeBackoff::succeeded(const std::string& node) {
  auto it = entries_.find(node);
  if (it == entries_.end()) return;
  if (it->second.holds == 0) {
    entries_.erase(it);
    return;
  }
  it->second.failures = 0;
}

std::map<std::string, std::string> NodeBackoff::active(Time now) const {
  std::map<std::string, std::string> out;
  for (const auto& [node, e] : entries_)
    if (now < e.until)
      out.emplace(node, e.why.empty() ? fmt::format("backing off until {} after {} aborted drain{}", format_time(e.until), e.failures,
                                                    e.failures == 1 ? "" : "s")
                                      : fmt::format("held until {}: {}", format_time(e.until), e.why));
  return out;
}

std::optional<Time> NodeBackoff::until(const std::string& node) const {
  auto it = entries_.find(node);
  if (it == entries_.end()) return std::nullopt;
  return it->second.until;
}

}  // namespace spotshift::drain
