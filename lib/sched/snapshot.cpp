#include "sched/snapshot.hpp"

#include <atomic>

#include <algorithm>

namespace spotshift::sched {

namespace {

// A snapshot's node order (NodeInfo::index): by name.
void sort_by_name(std::vector<NodePtr>& nodes) {
  std::sort(nodes.begin(), nodes.end(), [](const NodePtr& a, const NodePtr& b) { return a->name() < b->name(); });
}

}  // namespace

void Usage::add(const model::ResourceList& r, int sign) {
  // Held at the int64 limits, as ResourceList::add does (requests saturate there).
  cpu_milli = model::saturating_add(cpu_milli, r.cpu_milli, sign);
  memory = model::saturating_add(memory, r.memory, sign);
  ephemeral_storage = model::saturating_add(ephemeral_storage, r.ephemeral_storage, sign);
  for (const auto& entry : r.scalars()) {
    auto it = std::find_if(scalars.begin(), scalars.end(), [&](const auto& s) { return s.first == entry.first; });
    if (it == scalars.end()) scalars.emplace_back(entry.first, model::saturating_add(0, entry.second, sign));
    else it->second = model::saturating_add(it->second, entry.second, sign);
  }
}

int64_t Usage::scalar(const model::InternedString& name) const {
  for (const auto& [n, v] : scalars)
    if (n == name) return v;
  return 0;
}

const model::Requirement* single_value_requirement(const model::LabelSelector& selector) {
  for (const auto& r : selector.requirements())
    if ((r.op == model::SelectorOp::kEquals || r.op == model::SelectorOp::kIn) && r.values.size() == 1) return &r;
  return nullptr;
}

void AntiAffinityTerms::add_pod(const model::Pod* pod, int node) {
  if (!pod->affinity) return;
  for (const auto& term : pod->affinity->pod_anti_affinity_required)
    if (term.has_selector) add(term.selector, AntiAffinityTerm{pod, node, &term});
}

ClusterSnapshot::ClusterSnapshot(ClusterSnapshot&& o) noexcept { *this = std::move(o); }

ClusterSnapshot& ClusterSnapshot::operator=(ClusterSnapshot&& o) noexcept {
  nodes_ = std::move(o.nodes_);
  allocatable_basic_ = std::move(o.allocatable_basic_);
  used_basic_ = std::move(o.used_basic_);
  volumes_ = std::move(o.volumes_);
  pod_count_ = o.pod_count_;
  anti_affinity_pods_ = std::move(o.anti_affinity_pods_);
  anti_affinity_terms_ = std::move(o.anti_affinity_terms_);
  topology_ = std::move(o.topology_);
  label_index_ = std::move(o.label_index_);
  label_value_index_ = std::move(o.label_value_index_);
  all_pods_ = std::move(o.all_pods_);
  by_name_.clear();
  for (const auto& n : nodes_) by_name_.emplace(n.name, n.index);
  return *this;
}

ClusterSnapshot::~ClusterSnapshot() = default;

ClusterSnapshot ClusterSnapshot::build(std::vector<NodePtr> nodes, const std::vector<PodPtr>& pods, VolumeRequirements volumes) {
  ClusterSnapshot s;
  sort_by_name(nodes);
  s.nodes_.reserve(nodes.size());
  for (auto& n : nodes) {
    NodeInfo info;
    info.name = n->name();
    info.index = static_cast<int>(s.nodes_.size());
    info.allocatable = n->allocatable;
    info.node = std::move(n);
    s.nodes_.push_back(std::move(info));
  }
  for (const auto& n : s.nodes_) s.by_name_.emplace(n.name, n.index);
  s.volumes_ = std::move(volumes);
  for (const auto& p : pods) {
    if (p->node_name.empty() || p->terminal()) continue;
    auto it = s.by_name_.find(p->node_name.view());
    if (it == s.by_name_.end()) continue;
    NodeInfo& info = s.nodes_[static_cast<size_t>(it->second)];
    info.used.add(p->requests, 1);
    info.used.pods += 1;
    info.pods.push_back(p);
    ++s.pod_count_;
  }
  for (const auto& n : s.nodes_) {
    s.allocatable_basic_.push_back(BasicResources::of(n.allocatable));
    s.used_basic_.push_back(BasicResources::of(n.used));
  }
  for (auto& n : s.nodes_) {
    std::sort(n.pods.begin(), n.pods.end(), [](const PodPtr& a, const PodPtr& b) { return a->key_less(*b); });
    for (const auto& p : n.pods) {
      if (p->affinity && !p->affinity->pod_anti_affinity_required.empty()) {
        n.any_required_anti_affinity = true;
        s.anti_affinity_pods_.push_back({p.get(), n.index});
        s.anti_affinity_terms_.add_pod(p.get(), n.index);
      }
    }
  }
  return s;
}

bool ClusterSnapshot::refresh_nodes(std::vector<NodePtr> nodes) {
  if (nodes.size() != nodes_.size()) return false;
  sort_by_name(nodes);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeInfo& info = nodes_[i];
    if (nodes[i]->name() != info.name || nodes[i]->allocatable != info.allocatable || nodes[i]->meta.labels != info.node->meta.labels)
      return false;
  }
  for (size_t i = 0; i < nodes.size(); ++i) nodes_[i].node = std::move(nodes[i]);
  return true;
}

const ClusterSnapshot& SnapshotCache::get(const std::vector<NodePtr>& nodes, const std::vector<PodPtr>& pods,
                                          const VolumeRequirements& volumes) {
  auto same_pods = [&] {
    if (pods.size() != pods_.size()) return false;
    for (size_t i = 0; i < pods.size(); ++i)
      if (pods[i].get() != pods_[i].get()) return false;
    return true;
  };
  if (snapshot_ && same_pods() && volumes == snapshot_->volumes() && snapshot_->refresh_nodes(nodes)) {
    ++reuses_;
    return *snapshot_;
  }
  snapshot_.reset();  // the old one's memory goes before the new one's is taken
  snapshot_ = ClusterSnapshot::build(nodes, pods, volumes);
  pods_ = pods;
  ++builds_;
  return *snapshot_;
}

std::optional<int> ClusterSnapshot::index_of(std::string_view name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

const ClusterSnapshot::TopologyKey& ClusterSnapshot::topology(const model::InternedString& key) const {
  std::lock_guard lock(lazy_mutex_);
  auto& slot = topology_[key];
  if (!slot) {
    slot = std::make_unique<TopologyKey>();
    std::unordered_map<std::string_view, int> ids;
    slot->node_domain.resize(nodes_.size(), -1);
    for (const auto& n : nodes_) {
      auto v = n.node->meta.labels.get(key);
      if (!v) continue;
      auto [it, fresh] = ids.emplace(v->view(), static_cast<int>(slot->names.size()));
      if (fresh) slot->names.push_back(v->str());
      slot->node_domain[static_cast<size_t>(n.index)] = it->second;
    }
  }
  return *slot;
}

int ClusterSnapshot::domain(int node, const model::InternedString& key) const {
  return topology(key).node_domain[static_cast<size_t>(node)];
}

int ClusterSnapshot::domains(const model::InternedString& key) const { return static_cast<int>(topology(key).names.size()); }

const std::string& ClusterSnapshot::domain_name(const model::InternedString& key, int domain) const {
  return topology(key).names[static_cast<size_t>(domain)];
}

const std::vector<PlacedPod>& ClusterSnapshot::pods_with_label(const model::InternedString& key) const {
  std::lock_guard lock(lazy_mutex_);
  auto it = label_index_.find(key);
  if (it != label_index_.end()) return it->second;
  std::vector<PlacedPod> out;
  for (const auto& n : nodes_)
    for (const auto& p : n.pods)
      if (p->meta.labels.has(key)) out.push_back({p.get(), n.index});
  return label_index_.emplace(key, std::move(out)).first->second;
}

const std::vector<PlacedPod>& ClusterSnapshot::pods_with_label_value(const model::InternedString& key,
                                                                     const model::InternedString& value) const {
  static const std::vector<PlacedPod> kNone;
  std::lock_guard lock(lazy_mutex_);
  auto it = label_value_index_.find(key);
  if (it == label_value_index_.end()) {
    auto& by_value = label_value_index_[key];
    for (const auto& n : nodes_)
      for (const auto& p : n.pods)
        if (auto v = p->meta.labels.get(key)) by_value[*v].push_back({p.get(), n.index});
    it = label_value_index_.find(key);
  }
  auto b = it->second.find(value);
  return b == it->second.end() ? kNone : b->second;
}

const std::vector<PlacedPod>& ClusterSnapshot::all_pods() const {
  std::lock_guard lock(lazy_mutex_);
  if (!all_pods_) {
    all_pods_.emplace();
    all_pods_->reserve(pod_count_);
    for (const auto& n : nodes_)
      for (const auto& p : n.pods) all_pods_->push_back({p.get(), n.index});
  }
  return *all_pods_;
}

uint64_t next_version() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

}  // namespace spotshift::sched
