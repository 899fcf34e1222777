#include "sched/fork.hpp"

#include <algorithm>

namespace spotshift::sched {

Fork::Fork(const ClusterSnapshot& base) : base_(&base), bits_((static_cast<size_t>(base.size()) + 63) / 64, 0) {}

Fork Fork::fork() const {
  Fork child(*base_);
  child.parent_ = this;
  child.bits_ = bits_;
  return child;
}

void Fork::commit(Fork&& child) {
  for (auto& d : child.deltas_) {
    Delta& mine = edit(d.node);
    mine = std::move(d);
  }
  child.deltas_.clear();
}

size_t Fork::changes() const {
  size_t n = 0;
  for_each_delta([&](const Delta&) { ++n; });
  return n;
}

bool Fork::removed(const Delta& d, const model::Pod* p) {
  for (const auto* r : d.removed)
    if (r == p || (r->meta.namespace_ == p->meta.namespace_ && r->meta.name == p->meta.name)) return true;
  return false;
}

const Fork::Delta* Fork::find(int node) const {
  if (!touched(node)) return nullptr;
  for (const Fork* f = this; f; f = f->parent_) {
    auto it = std::lower_bound(f->deltas_.begin(), f->deltas_.end(), node, [](const Delta& d, int n) { return d.node < n; });
    if (it != f->deltas_.end() && it->node == node) return &*it;
  }
  return nullptr;
}

Fork::Delta& Fork::edit(int node) {
  auto it = std::lower_bound(deltas_.begin(), deltas_.end(), node, [](const Delta& d, int n) { return d.node < n; });
  if (it != deltas_.end() && it->node == node) return *it;
  Delta fresh;
  if (const Delta* inherited = parent_ ? parent_->find(node) : nullptr) {
    fresh = *inherited;
  } else {
    fresh.node = node;
    fresh.used = base_->node(node).used;
  }
  bits_[static_cast<size_t>(node) >> 6] |= uint64_t(1) << (node & 63);
  return *deltas_.insert(it, std::move(fresh));
}

const Usage& Fork::used(int node) const {
  if (const Delta* d = find(node)) return d->used;
  return base_->node(node).used;
}

void Fork::add_pod(int node, PodPtr pod) {
  Delta& d = edit(node);
  d.used.add(pod->requests, 1);
  d.used.pods += 1;
  d.added.push_back(std::move(pod));
}

bool Fork::remove_pod(int node, const model::Pod& pod) {
  Delta& d = edit(node);
  auto added = std::find_if(d.added.begin(), d.added.end(), [&](const PodPtr& p) { return p->key() == pod.key(); });
  if (added != d.added.end()) {
    d.used.add((*added)->requests, -1);
    d.used.pods -= 1;
    d.added.erase(added);
    return true;
  }
  for (const auto& p : base_->node(node).pods) {
    if (p->key() != pod.key()) continue;
    if (removed(d, p.get())) return false;
    d.removed.push_back(p.get());
    d.used.add(p->requests, -1);
    d.used.pods -= 1;
    return true;
  }
  return false;
}

}  // namespace spotshift::sched
