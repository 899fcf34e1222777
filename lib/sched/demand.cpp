#include "sched/demand.hpp"

#include "core/cpu.hpp"

#include <algorithm>
#include <limits>

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
  counts_[{scarce, pod.requests.cpu_milli, pod.requests.memory}] += sign;
  total_ += sign;
  cpu_ += sign * pod.requests.cpu_milli;
  memory_ += sign * pod.requests.memory;
  scarce_ += sign * scarce;
  stale_ = true;
  if (scarce > 0) {  // the index and fitting() cover only the shapes asking for the resource
    if (sign > 0) fit_version_ = next_version();
    change_log_[changes_ % kChangeLog] = {scarce, pod.requests.cpu_milli, pod.requests.memory, sign};
    ++changes_;
    if (sign < 0 && !index_stale_) {
      Index& ix = index_;
      const std::ptrdiff_t at = position(ix, scarce, pod.requests.cpu_milli, pod.requests.memory);
      if (at >= 0 && ix.count[static_cast<size_t>(at)] > 0) {
        --ix.count[static_cast<size_t>(at)];
        for (size_t i = static_cast<size_t>(at); i < ix.count_through.size(); ++i) --ix.count_through[i];
        return;
      }
    }
    index_stale_ = true;
  }
}

std::ptrdiff_t Demand::position(const Index& ix, int64_t scarce, int64_t cpu, int64_t memory) {
  auto rank = [](const std::vector<int64_t>& values, int64_t amount) -> std::ptrdiff_t {
    auto it = std::lower_bound(values.begin(), values.end(), amount);
    return it != values.end() && *it == amount ? it - values.begin() : -1;
  };
  const std::ptrdiff_t c = rank(ix.cpu_values, cpu), m = rank(ix.memory_values, memory);
  if (c < 0 || m < 0) return -1;
  // The shapes asking this much of the resource, in order of (cpu, memory) as counts_ has them,
  // which their ranks keep.
  const auto first = std::lower_bound(ix.scarce.begin(), ix.scarce.end(), scarce) - ix.scarce.begin();
  const auto last = std::upper_bound(ix.scarce.begin(), ix.scarce.end(), scarce) - ix.scarce.begin();
  const std::pair<int32_t, int32_t> key{static_cast<int32_t>(c), static_cast<int32_t>(m)};
  std::ptrdiff_t lo = first, hi = last;
  while (lo < hi) {
    const std::ptrdiff_t mid = lo + (hi - lo) / 2;
    if (std::pair{ix.cpu_rank[static_cast<size_t>(mid)], ix.memory_rank[static_cast<size_t>(mid)]} < key) lo = mid + 1;
    else hi = mid;
  }
  return lo < last && ix.cpu_rank[static_cast<size_t>(lo)] == key.first && ix.memory_rank[static_cast<size_t>(lo)] == key.second ? lo : -1;
}

const Demand::Index& Demand::index() const {
  if (!index_stale_) return index_;
  Index& ix = index_;
  for (auto* column : {&ix.scarce, &ix.count_through, &ix.max_cpu_through, &ix.max_memory_through, &ix.cpu_values, &ix.memory_values})
    column->clear();
  ix.count.clear();
  int64_t through = 0, max_cpu = 0, max_memory = 0;
  for (auto it = counts_.lower_bound({1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min()}); it != counts_.end();
       ++it) {
    const auto& [key, count] = *it;
    if (count <= 0) continue;
    const auto& [scarce, cpu, memory] = key;
    through += count;
    max_cpu = std::max(max_cpu, cpu);
    max_memory = std::max(max_memory, memory);
    ix.scarce.push_back(scarce);
    ix.count.push_back(static_cast<int32_t>(count));
    ix.count_through.push_back(through);
    ix.max_cpu_through.push_back(max_cpu);
    ix.max_memory_through.push_back(max_memory);
    ix.cpu_values.push_back(cpu);  // each shape's amounts, until ranked below
    ix.memory_values.push_back(memory);
  }
  auto rank = [](std::vector<int64_t>& values, std::vector<int32_t>& ranks) {
    std::vector<int64_t> amounts = values;
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    ranks.clear();
    for (int64_t a : amounts) ranks.push_back(static_cast<int32_t>(std::lower_bound(values.begin(), values.end(), a) - values.begin()));
  };
  rank(ix.cpu_values, ix.cpu_rank);
  rank(ix.memory_values, ix.memory_rank);
  index_stale_ = false;
  return ix;
}

namespace {

struct Ranks {
  const int32_t *cpu, *memory, *count;
};

// The pods of the shapes [0, k) whose cpu and memory ranks are below the room's.
[[gnu::always_inline]] inline int32_t count_fitting(const Ranks& r, size_t k, int32_t cpu_below, int32_t memory_below) {
  int32_t sum = 0;
  for (size_t i = 0; i < k; ++i) sum += r.count[i] & -static_cast<int32_t>((r.cpu[i] < cpu_below) & (r.memory[i] < memory_below));
  return sum;
}

#if defined(SPOTSHIFT_AVX2)
// Where the CPU runs AVX2 (the build does not assume it), the same walk eight shapes at a time:
// a sum of integers, the same in any order.
__attribute__((target("avx2"))) int32_t count_fitting_avx2(const Ranks& r, size_t k, int32_t cpu_below, int32_t memory_below) {
  return count_fitting(r, k, cpu_below, memory_below);
}
#endif

}  // namespace

void Demand::allocate_slots() const { fitting_.resize(kSlots); }

void Demand::grow_nodes(size_t n) const {
  nodes_ = n + 1;
  by_node_.resize(nodes_);
  headroom_.resize(nodes_);
}

// fitting() past its room checks and an up-to-date memo: the memo brought up to date, or a count.
int64_t Demand::fitting_counted(const Room& r, Fitting& slot) const {
  if (slot.at != 0 && changes_ - slot.at <= kChangeLog && slot.cpu_milli == r.cpu_milli && slot.memory == r.memory &&
      slot.scarce == r.scarce) {
    for (uint64_t n = slot.at; n < changes_; ++n) {
      const Change& c = change_log_[n % kChangeLog];
      slot.fit += c.sign * static_cast<int64_t>((c.scarce <= r.scarce) & (c.cpu_milli <= r.cpu_milli) & (c.memory <= r.memory));
    }
    slot.at = changes_;
    return slot.fit;
  }
  // The shapes [0, k) ask for no more of the scarce resource than the room has; with room for
  // the largest of them in cpu and memory all of those fit, otherwise one walk counts them.
  const Index& ix = index();
  const size_t k = shapes_up_to(ix, r.scarce);
  int64_t fit = 0;
  if (k > 0 && r.cpu_milli >= ix.max_cpu_through[k - 1] && r.memory >= ix.max_memory_through[k - 1]) {
    fit = ix.count_through[k - 1];
  } else {
    // On ranks, in 32 bits and without branches, so that the compiler can vectorise the walk.
    auto no_larger = [](const std::vector<int64_t>& values, int64_t amount) {
      return static_cast<int32_t>(std::upper_bound(values.begin(), values.end(), amount) - values.begin());
    };
    const int32_t cpu_below = no_larger(ix.cpu_values, r.cpu_milli), memory_below = no_larger(ix.memory_values, r.memory);
    const Ranks ranks{ix.cpu_rank.data(), ix.memory_rank.data(), ix.count.data()};
#if defined(SPOTSHIFT_AVX2)
    if (has_avx2()) fit = count_fitting_avx2(ranks, k, cpu_below, memory_below);
    else
#endif
      fit = count_fitting(ranks, k, cpu_below, memory_below);
  }
  slot = {r.cpu_milli, r.memory, r.scarce, changes_, fit};
  return fit;
}

void Demand::count_headroom(Headroom& h, const Room& room) const {
  const Index& ix = index();
  // The room less the largest amount asked that is no larger (every amount is, when none is:
  // then nothing fits and nothing can stop fitting).
  auto slack = [](const std::vector<int64_t>& values, int64_t amount) {
    auto it = std::upper_bound(values.begin(), values.end(), amount);
    return it == values.begin() ? std::numeric_limits<int64_t>::max() : amount - *(it - 1);
  };
  h = {room.cpu_milli, room.memory, fit_version_, slack(ix.cpu_values, room.cpu_milli), slack(ix.memory_values, room.memory)};
}

int64_t Demand::asking_at_most(int64_t scarce) const {
  const Index& ix = index();
  const size_t k = shapes_up_to(ix, scarce);
  return k == 0 ? 0 : ix.count_through[k - 1];
}

const std::vector<Demand::Shape>& Demand::shapes() const {
  if (!stale_) return shapes_;
  shapes_.clear();
  for (const auto& [key, count] : counts_)
    if (count > 0)
      shapes_.push_back(
          {std::get<1>(key), std::get<2>(key), std::get<0>(key), count, static_cast<double>(count) / static_cast<double>(total_)});
  stale_ = false;
  return shapes_;
}

}  // namespace spotshift::sched
