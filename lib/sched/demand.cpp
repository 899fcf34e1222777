#include "sched/demand.hpp"

namespace spotshift::sched {

model::InternedString Demand::scarcest_extended_resource(const ClusterSnapshot& snapshot) {
  std::map<model::InternedString, std::pair<int64_t, int64_t>> totals;  // name -> requested, allocatable
  for (const auto& n : snapshot.nodes()) {
    for (const auto& [name, value] : n.allocatable.scalars())
      if (value > 0 && !name.view().starts_with("hugepages-")) totals[name].second += value;
    for (const auto& [name, value] : n.used.scalars)
      if (auto it = totals.find(name); it != totals.end()) it->second.first += value;
  }
  model::InternedString best;
  double best_share = -1;
  for (const auto& [name, t] : totals) {
    double share = static_cast<double>(t.first) / static_cast<double>(t.second);
    if (share > best_share) {
      best_share = share;
      best = name;
    }
  }
  return best;
}

Demand Demand::of_snapshot(const ClusterSnapshot& snapshot) {
  Demand d(scarcest_extended_resource(snapshot));
  for (const auto& n : snapshot.nodes())
    for (const auto& p : n.pods) d.add(*p);
  return d;
}

void Demand::add(const model::Pod& pod, int sign) {
  const int64_t scarce = resource_.empty() ? 0 : pod.requests.get(resource_.view());
  auto& count = counts_[{pod.requests.cpu_milli, pod.requests.memory, scarce}];
  count += sign;
  total_ += sign;
  cpu_ += sign * pod.requests.cpu_milli;
  memory_ += sign * pod.requests.memory;
  scarce_ += sign * scarce;
  stale_ = true;
}

const std::vector<Demand::Shape>& Demand::shapes() const {
  if (!stale_) return shapes_;
  shapes_.clear();
  for (const auto& [key, count] : counts_)
    if (count > 0)
      shapes_.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), static_cast<double>(count) / static_cast<double>(total_)});
  stale_ = false;
  return shapes_;
}

}  // namespace spotshift::sched
