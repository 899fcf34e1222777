#include "sched/fork.hpp"

#include <algorithm>
#include <stdexcept>

namespace spotshift::sched {

namespace {
bool has_anti_affinity(const model::Pod& p) { return p.affinity && !p.affinity->pod_anti_affinity_required.empty(); }
// Whether two pods have the same namespace/name, without building either key.
bool same_key(const model::Pod& a, const model::Pod& b) { return a.meta.namespace_ == b.meta.namespace_ && a.meta.name == b.meta.name; }
}  // namespace

Fork::Fork(const ClusterSnapshot& base) : base_(&base), bits_((static_cast<size_t>(base.size()) + 63) / 64, 0) {}

Fork Fork::fork() const {
  Fork child(*base_);
  child.parent_ = this;
  child.bits_ = bits_;
  child.added_anti_affinity_ = added_anti_affinity_;
  return child;
}

void Fork::commit(Fork&& child) {
  for (auto& d : child.deltas_) {
    Delta& mine = edit(d.node);
    added_anti_affinity_ += d.added_anti_affinity - mine.added_anti_affinity;
    mine = std::move(d);
    changed(mine);
  }
  added_anti_terms_.merge(std::move(child.added_anti_terms_));
  added_by_label_.merge(std::move(child.added_by_label_));
  child.deltas_.clear();
}

size_t Fork::changes() const {
  size_t n = 0;
  for_each_delta([&](const Delta&) { ++n; });
  return n;
}

bool Fork::removed(const Delta& d, const model::Pod* p) {
  for (const auto* r : d.removed)
    if (r == p || same_key(*r, *p)) return true;
  return false;
}

const Fork::Delta* Fork::find(int node) const {
  if (!touched(node)) return nullptr;
  for (const Fork* f = this; f; f = f->parent_)
    if (!f->index_.empty())
      if (int32_t at = f->index_[static_cast<size_t>(node)]; at >= 0) return &f->deltas_[static_cast<size_t>(at)];
  return nullptr;
}

Fork::Delta& Fork::edit(int node) {
  if (index_.empty()) index_.assign(static_cast<size_t>(base_->size()), -1);
  if (int32_t at = index_[static_cast<size_t>(node)]; at >= 0) return deltas_[static_cast<size_t>(at)];
  Delta fresh;
  if (const Delta* inherited = parent_ ? parent_->find(node) : nullptr) {
    fresh = *inherited;
  } else {
    fresh.node = node;
    fresh.used = base_->node(node).used;
  }
  bits_[static_cast<size_t>(node) >> 6] |= uint64_t(1) << (node & 63);
  index_[static_cast<size_t>(node)] = static_cast<int32_t>(deltas_.size());
  return deltas_.emplace_back(std::move(fresh));
}

void Fork::changed(const Delta& d) {
  if (parent_) return;
  if (dense_used_.empty()) dense_used_ = base_->used_basic();
  const auto n = static_cast<size_t>(d.node);
  if (!is_tracked_.empty() && is_tracked_[n]) {
    tracked_changes_.push_back(d.node);
    const int64_t alloc = base_->allocatable_basic(d.node).cpu_milli;
    by_free_cpu_.move({alloc - dense_used_[n].cpu_milli, d.node}, {alloc - d.used.cpu_milli, d.node});
    if (!tracked_resource_.empty()) {
      const int64_t free = free_with(d.node, d.used, tracked_resource_);
      if (free != free_resource_[n]) {
        by_free_resource_.move({free_resource_[n], d.node}, {free, d.node});
        free_resource_[n] = free;
      }
    }
  }
  dense_used_[n] = BasicResources::of(d.used);
}

void NodeOrder::move(Entry from, Entry to) {
  auto at = std::lower_bound(entries_.begin(), entries_.end(), from);
  if (at == entries_.end() || *at != from) throw std::logic_error("NodeOrder::move: the entry is not there");
  if (from < to) {
    // The entries after it up to the first not below `to` move down one place.
    auto past = std::lower_bound(at + 1, entries_.end(), to);
    std::move(at + 1, past, at);
    *(past - 1) = to;
  } else if (to < from) {
    auto first = std::lower_bound(entries_.begin(), at, to);
    std::move_backward(first, at, at + 1);
    *first = to;
  }
}

void Fork::track_candidates(std::vector<int> nodes, model::InternedString scarce) {
  if (parent_) throw std::logic_error("Fork::track_candidates: only a fork without a parent tracks candidates");
  tracked_ = std::move(nodes);
  tracking_version_ = next_version();
  tracked_changes_.clear();
  is_tracked_.assign(static_cast<size_t>(base_->size()), 0);
  by_free_cpu_.clear();
  tracked_resource_ = scarce;
  by_free_resource_.clear();
  free_resource_.assign(scarce.empty() ? 0 : static_cast<size_t>(base_->size()), 0);
  tracked_unique_ = true;
  for (size_t k = 0; k < tracked_.size(); ++k) {
    const int n = tracked_[k];
    int32_t& rank = is_tracked_[static_cast<size_t>(n)];
    tracked_unique_ = tracked_unique_ && rank == 0;
    if (rank == 0) rank = static_cast<int32_t>(k + 1);
    by_free_cpu_.push_back({base_->allocatable_basic(n).cpu_milli - used_basic(n).cpu_milli, n});
    if (!scarce.empty()) {
      free_resource_[static_cast<size_t>(n)] = free_with(n, used(n), scarce);
      by_free_resource_.push_back({free_resource_[static_cast<size_t>(n)], n});
    }
  }
  by_free_cpu_.sort();
  by_free_resource_.sort();
}

const Usage& Fork::used(int node) const {
  if (const Delta* d = find(node)) return d->used;
  return base_->node(node).used;
}

void Fork::add_pod(int node, PodPtr pod) {
  Delta& d = edit(node);
  d.used.add(pod->requests, 1);
  d.used.pods += 1;
  for (const auto& [key, value] : pod->meta.labels) added_by_label_.add(key, value, {pod.get(), node});
  if (has_anti_affinity(*pod)) {
    ++d.added_anti_affinity;
    ++added_anti_affinity_;
    added_anti_terms_.add_pod(pod.get(), node);
  }
  d.added.push_back(std::move(pod));
  changed(d);
}

bool Fork::remove_pod(int node, const model::Pod& pod) {
  Delta& d = edit(node);
  auto added = std::find_if(d.added.begin(), d.added.end(), [&](const PodPtr& p) { return same_key(*p, pod); });
  if (added != d.added.end()) {
    d.used.add((*added)->requests, -1);
    d.used.pods -= 1;
    if (has_anti_affinity(**added)) {
      --d.added_anti_affinity;
      --added_anti_affinity_;
    }
    d.added.erase(added);
    changed(d);
    return true;
  }
  for (const auto& p : base_->node(node).pods) {
    if (!same_key(*p, pod)) continue;
    if (removed(d, p.get())) return false;
    d.removed.push_back(p.get());
    d.used.add(p->requests, -1);
    d.used.pods -= 1;
    changed(d);
    return true;
  }
  return false;
}

}  // namespace spotshift::sched
