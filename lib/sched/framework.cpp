#include "sched/framework.hpp"

#include "core/strings.hpp"
#include "sched/demand.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>

namespace spotshift::sched {

void FilterPlugin::filter_each(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork,
                               std::vector<int>& nodes) const {
  std::erase_if(nodes, [&](int n) { return !passes(state, slot, pod, fork, n); });
}

LowestScore::Below LowestScore::first_below(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork, const int* nodes,
                                            size_t count, int64_t bound) const {
  for (size_t k = 0; k < count; ++k)
    if (const std::optional<int64_t> score = score_if_below(state, slot, pod, fork, nodes[k], bound)) return {k, *score};
  return {count, 0};
}

const Demand& CycleState::resolve_demand(const Fork& fork) {
  if (demand_) return *demand_;
  if (cache_) return *(demand_ = &cache_->demand());
  owned_demand_ = std::make_shared<const Demand>(Demand::of_snapshot(fork.base()));
  return *(demand_ = owned_demand_.get());
}

const std::vector<Room>& CycleState::rooms(const Fork& fork, const std::vector<int>& nodes, const model::InternedString& resource) const {
  const bool shared = shared_.first == &fork && shared_.second == &nodes;
  if (shared && shared_filled_ && shared_resource_ == resource) return shared_rooms_;
  std::vector<Room>& out = shared ? shared_rooms_ : rooms_;
  out.resize(nodes.size());
  for (size_t k = 0; k < nodes.size(); ++k) out[k] = fork.room_of(nodes[k], resource);
  if (shared) {
    shared_filled_ = true;
    shared_resource_ = resource;
  }
  return out;
}

void Framework::Score::normalized(const CycleState& state, size_t slot, const model::Pod& pod, const Fork& fork,
                                  const std::vector<int>& nodes, std::vector<int64_t>& raw, std::vector<double>& out) const {
  raw.resize(nodes.size());
  out.resize(nodes.size());
  if (many) many->score_nodes(state, slot, pod, fork, nodes, raw);
  else
    for (size_t k = 0; k < nodes.size(); ++k) raw[k] = plugin->score(state, slot, pod, fork, nodes[k]);
  if (normalize) normalize->normalize(raw, out);
  else
    for (size_t k = 0; k < raw.size(); ++k) out[k] = static_cast<double>(std::clamp<int64_t>(raw[k], 0, 100));
}

ProfileConfig default_profile() {
  ProfileConfig p;
  p.filters = filter_plugin_names();
  p.scores = {ScoreConfig{"Fragmentation", 100, {}}, ScoreConfig{"FreeCPU", 1, {}}};
  return p;
}

std::string Diagnosis::message() const {
  std::vector<std::string> parts;
  for (const auto& [reason, count] : reasons) parts.push_back(fmt::format("{} {}", count, reason));
  std::sort(parts.begin(), parts.end());
  if (parts.empty()) return fmt::format("0/{} nodes are available.", nodes);
  return fmt::format("0/{} nodes are available: {}.", nodes, fmt::join(parts, ", "));
}

namespace {

// One element of profile.scores, checked as a whole once it is read (its members in any order).
void decode_score(model::JsonDecoder& d, model::JsonReader& r, ProfileConfig& p) {
  if (r.peek() != model::JsonType::kObject) {
    r.skip();
    return d.fail("must be an object with name, weight and args");
  }
  std::optional<std::string> name;
  std::optional<int64_t> weight;
  bool weight_given = false;
  std::optional<std::string> bad_arg;  // the key of an arg that is not a string, or "" for args not a map
  ScoreConfig c;
  d.members(r, [&](std::string_view key) {
    std::string_view text;
    if (key == "name") {
      if (r.peek() == model::JsonType::kString && r.read_string(text)) name = std::string(text);
      else r.skip();
    } else if (key == "weight") {
      weight_given = true;
      if (r.peek() == model::JsonType::kNumber && r.read_number(text)) weight = parse_int(text);
      else r.skip();
    } else if (key == "args") {
      if (r.peek() == model::JsonType::kNull) {
        r.read_null();
      } else if (r.peek() != model::JsonType::kObject) {
        bad_arg = "";
        r.skip();
      } else {
        r.begin_object();
        while (r.next_member(key)) {
          std::string arg(key);
          if (r.peek() == model::JsonType::kString && r.read_string(text)) c.args[arg] = std::string(text);
          else {
            if (!bad_arg) bad_arg = arg;
            r.skip();
          }
        }
      }
    } else {
      return false;
    }
    return true;
  });
  if (!d.ok()) return;
  const auto valid = score_plugin_names();
  {
    auto f = d.field("name");
    if (!name) return d.fail("is required");
    if (std::find(valid.begin(), valid.end(), *name) == valid.end())
      return d.fail(fmt::format("unknown score plugin \"{}\" (valid: {})", *name, fmt::join(valid, ", ")));
  }
  c.name = *name;
  if (weight_given) {
    auto f = d.field("weight");
    if (!weight || *weight < 0 || *weight > 100) return d.fail("must be an integer from 0 to 100");
    c.weight = static_cast<int>(*weight);
  }
  if (bad_arg) {
    auto f = d.field("args");
    if (bad_arg->empty()) return d.fail("must be a map of strings");
    auto g = d.field(*bad_arg);
    return d.fail("must be a string");
  }
  for (const auto& prev : p.scores)
    if (prev.name == c.name) {
      auto f = d.field("name");
      return d.fail(fmt::format("score plugin \"{}\" is listed twice", c.name));
    }
  if (auto probe = make_score(c); !probe) return d.fail(probe.error().message);
  p.scores.push_back(std::move(c));
}

}  // namespace

std::optional<ProfileConfig> decode_profile(model::JsonDecoder& d, model::JsonReader& r) {
  if (r.peek() == model::JsonType::kNull) {
    r.read_null();
    return std::nullopt;
  }
  if (r.peek() != model::JsonType::kObject) {
    r.skip();
    d.fail("must be an object");
    return std::nullopt;
  }
  ProfileConfig p = default_profile();
  d.members(r, [&](std::string_view key) {
    if (key == "filters") {
      if (r.peek() == model::JsonType::kNull) return false;
      if (r.peek() != model::JsonType::kArray) {
        d.fail("must be a list of filter plugin names");
        return false;
      }
      p.filters.clear();
      const auto valid = filter_plugin_names();
      d.elements(r, [&] {
        std::string_view name;
        if (r.peek() != model::JsonType::kString || !r.read_string(name)) {
          r.skip();
          return d.fail("must be a plugin name");
        }
        if (std::find(valid.begin(), valid.end(), name) == valid.end())
          return d.fail(fmt::format("unknown filter plugin \"{}\" (valid: {})", name, fmt::join(valid, ", ")));
        if (std::find(p.filters.begin(), p.filters.end(), name) != p.filters.end())
          return d.fail(fmt::format("filter plugin \"{}\" is listed twice", name));
        p.filters.emplace_back(name);
      });
    } else if (key == "scores") {
      if (r.peek() == model::JsonType::kNull) return false;
      if (r.peek() != model::JsonType::kArray) {
        d.fail("must be a list of {name, weight, args}");
        return false;
      }
      p.scores.clear();
      d.elements(r, [&] { decode_score(d, r, p); });
    } else {
      return false;
    }
    return true;
  });
  if (!d.ok()) return std::nullopt;
  return p;
}

Result<ProfileConfig> decode_profile(std::string_view json, std::string_view path) {
  model::JsonDecoder d("");
  auto scope = d.field(path);
  model::JsonReader r(json);
  auto p = decode_profile(d, r);
  if (d.ok() && !r.finish()) d.fail(r.error());
  if (!d.ok()) return d.take_error();
  if (!p) return default_profile();
  return *p;
}

Framework::Framework(Framework&&) noexcept = default;
Framework& Framework::operator=(Framework&&) noexcept = default;
Framework::~Framework() = default;

Result<Framework> Framework::create(const ProfileConfig& config) {
  Framework f;
  f.config_ = config;
  for (const auto& name : config.filters) {
    if (std::count(config.filters.begin(), config.filters.end(), name) > 1)
      return Error::invalid(fmt::format("filter plugin {} is listed twice", name));
    auto p = make_filter(name);
    if (!p) return p.error();
    Filter entry{std::move(*p)};
    entry.pre = dynamic_cast<const PreFilter*>(entry.plugin.get());
    entry.many = dynamic_cast<const FilterNodes*>(entry.plugin.get());
    entry.explain = dynamic_cast<const ExplainNodes*>(entry.plugin.get());
    f.filters_.push_back(std::move(entry));
    if (name == "NodeResourcesFit") f.resource_fit_filter_ = static_cast<int>(f.filters_.size()) - 1;
  }
  if (config.scores.size() > 64) return Error::invalid("a profile lists at most 64 score plugins");
  for (const auto& s : config.scores) {
    if (s.weight < 0 || s.weight > 100)
      return Error::invalid(fmt::format("score plugin {}: weight {} is outside 0..100", s.name, s.weight));
    auto p = make_score(s);
    if (!p) return p.error();
    Score entry{std::move(*p), s.weight};
    entry.pre = dynamic_cast<const PreScore*>(entry.plugin.get());
    entry.many = dynamic_cast<const ScoreNodes*>(entry.plugin.get());
    entry.normalize = dynamic_cast<const NormalizeScore*>(entry.plugin.get());
    entry.lowest = dynamic_cast<const LowestScore*>(entry.plugin.get());
    if (s.weight > 0 && entry.many && entry.many->reads_rooms()) f.rooms_read_ = true;
    if (s.weight > 0 && dynamic_cast<const FullestFirst*>(entry.plugin.get())) f.fullest_score_ = static_cast<int>(f.scores_.size());
    f.scores_.push_back(std::move(entry));
  }
  return f;
}

void Framework::signature(const model::Pod& pod, std::string& s, bool with_node_name) {
  // Plain appends into a reused buffer: this runs per placement. Interned strings and lists go
  // in as their handles (one pool holds one copy of each, so equal handles are equal contents):
  // no string is read, and a signature is a key only while the pods it came from live (a freed
  // string's address may come back for another; the cache lives for one snapshot). Every list is
  // preceded by its length and every string by its size, so two different pods never write the
  // same bytes.
  auto raw = [&](const auto& v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); };
  auto id = [&](const model::InternedString& v) { raw(v.id()); };
  auto count = [&](size_t n) { raw(static_cast<uint32_t>(n)); };
  auto text = [&](const std::string& t) {
    count(t.size());
    s.append(t);
  };
  static const model::InternedString kNoNode;
  s.clear();
  id(pod.meta.namespace_);
  id(with_node_name ? pod.node_name : kNoNode);
  s.push_back(pod.best_effort ? 'B' : '-');
  raw(pod.tolerations.id());  // interned: equal lists are one list
  count(pod.node_selector.size());
  for (const auto& [k, v] : pod.node_selector) {
    id(k);
    id(v);
  }
  const bool required = pod.affinity && pod.affinity->node_required;
  count(required ? pod.affinity->node_required->terms.size() : 0);
  if (required)
    for (const auto& term : pod.affinity->node_required->terms) {
      count(term.match_expressions.size());
      for (const auto& r : term.match_expressions) text(r.to_string());
      count(term.match_fields.size());
      for (const auto& r : term.match_fields) text(r.to_string());
    }
  count(pod.pvc_claims.size());
  for (const auto& c : pod.pvc_claims) id(c);
}

const Demand& PlacementCache::demand() {
  if (demand_) return *demand_;
  if (!snapshot_demand_) snapshot_demand_ = std::make_shared<const Demand>(Demand::of_snapshot(*snapshot_));
  return *snapshot_demand_;
}

namespace {
template <class F>
void each_bit(uint64_t set, F&& f) {
  for (; set; set &= set - 1) f(static_cast<size_t>(std::countr_zero(set)));
}
}  // namespace

void Framework::prepare(CycleState& state, const model::Pod& pod, const Fork& fork, uint64_t& statics, uint64_t& dynamics) const {
  // Bit sets over filters_ (a profile lists each filter once, and there are fewer than 64), so a
  // placement allocates nothing for them.
  statics = dynamics = 0;
  for (size_t i = 0; i < filters_.size(); ++i) {
    if (filters_[i].pre && filters_[i].pre->pre_filter(state, i, pod, fork) == PreFilterResult::kSkip) continue;
    (filters_[i].plugin->node_static() ? statics : dynamics) |= uint64_t(1) << i;
  }
}

const std::vector<uint8_t>& Framework::static_verdicts(const CycleState& state, const model::Pod& pod, const Fork& fork, uint64_t statics,
                                                       PlacementCache& cache) const {
  thread_local std::string sig;
  signature(pod, sig);
  auto it = cache.static_verdicts_.find(std::string_view(sig));
  if (it == cache.static_verdicts_.end()) {
    std::vector<uint8_t> v(static_cast<size_t>(fork.base().size()), 0);
    for (int n = 0; n < fork.base().size(); ++n)
      for (size_t i = 0; i < filters_.size(); ++i)
        if (((statics >> i) & 1) && !filters_[i].plugin->filter(state, i, pod, fork, n).ok()) {
          v[static_cast<size_t>(n)] = static_cast<uint8_t>(1 + i);
          break;
        }
    it = cache.static_verdicts_.emplace(sig, std::move(v)).first;
  }
  return it->second;
}

void Framework::filter_static(const CycleState& state, const model::Pod& pod, const Fork& fork, uint64_t statics,
                              const std::vector<int>& candidates, PlacementCache* cache, std::vector<int>& out) const {
  const std::vector<uint8_t>* verdicts = nullptr;
  if (cache && cache->snapshot_ == &fork.base()) verdicts = &static_verdicts(state, pod, fork, statics, *cache);
  if (verdicts) {
    // Every candidate written, the count advanced past those that pass: no branch per node.
    size_t kept = out.size();
    out.resize(kept + candidates.size());
    const uint8_t* verdict = verdicts->data();
    int* to = out.data();
    for (const int n : candidates) {
      to[kept] = n;
      kept += verdict[static_cast<size_t>(n)] == 0;
    }
    out.resize(kept);
    return;
  }
  out.reserve(candidates.size());
  for (int n : candidates) {
    bool fits = true;
    each_bit(statics, [&](size_t i) { fits = fits && filters_[i].plugin->filter(state, i, pod, fork, n).ok(); });
    if (fits) out.push_back(n);
  }
}

uint64_t Framework::pre_score(CycleState& state, const model::Pod& pod, const Fork& fork) const {
  uint64_t uniform = 0;
  for (size_t s = 0; s < scores_.size(); ++s)
    if (scores_[s].weight > 0 && scores_[s].pre &&
        scores_[s].pre->pre_score(state, filters_.size() + s, pod, fork) == PreScoreResult::kUniform)
      uniform |= uint64_t(1) << s;
  return uniform;
}

void Framework::add_scores(const CycleState& state, const model::Pod& pod, const Fork& fork, uint64_t uniform,
                           const std::vector<int>& nodes, std::vector<double>& total) const {
  thread_local std::vector<int64_t> raw;
  thread_local std::vector<double> normalized;
  thread_local std::vector<int> first(1);
  if (!state.shares_rooms(&fork, &nodes)) state.share_rooms(&fork, &nodes);
  for (size_t s = 0; s < scores_.size(); ++s) {
    const Score& score = scores_[s];
    if (score.weight == 0) continue;
    const size_t slot = filters_.size() + s;
    if ((uniform >> s) & 1) {
      // The same raw score everywhere normalises to the same value everywhere: one node decides,
      // normalised as if it were alone.
      first[0] = nodes[0];
      score.normalized(state, slot, pod, fork, first, raw, normalized);
      for (double& t : total) t += normalized[0] * score.weight;
      continue;
    }
    score.normalized(state, slot, pod, fork, nodes, raw, normalized);
    for (size_t k = 0; k < nodes.size(); ++k) total[k] += normalized[k] * score.weight;
  }
  state.share_rooms(nullptr, nullptr);
}

// Nowhere: say why, node by node, as kube-scheduler does (the first failing filter counts).
// Filter by filter, over the nodes every earlier filter passed: a node's cached static verdict
// names the first node-static filter it fails, so a static filter is called only on the nodes
// it fails; a filter that explains many nodes at once does so without a Status per node. The few
// distinct reasons are counted here and go into the diagnosis once.
void Framework::explain(const CycleState& state, const model::Pod& pod, const Fork& fork, uint64_t statics, uint64_t dynamics,
                        const std::vector<int>& candidates, PlacementCache* cache, Diagnosis& out) const {
  out.nodes = static_cast<int>(candidates.size());
  const std::vector<uint8_t>* verdicts =
      cache && cache->snapshot_ == &fork.base() ? &static_verdicts(state, pod, fork, statics, *cache) : nullptr;
  thread_local std::vector<std::pair<std::string, int>> counted;
  counted.clear();
  auto count = [](void* context, std::string_view reason, int nodes) {
    auto& c = *static_cast<std::vector<std::pair<std::string, int>>*>(context);
    auto it = std::find_if(c.begin(), c.end(), [&](const auto& e) { return e.first == reason; });
    if (it == c.end()) c.emplace_back(reason, nodes);
    else it->second += nodes;
  };
  bool all_unresolvable = !candidates.empty();
  thread_local std::vector<int> left;
  left.assign(candidates.begin(), candidates.end());
  const uint64_t relevant = statics | dynamics;
  for (size_t i = 0; i < filters_.size() && !left.empty(); ++i) {
    if (!((relevant >> i) & 1)) continue;
    const bool by_verdict = verdicts && ((statics >> i) & 1);
    if (!by_verdict && filters_[i].explain) {
      const size_t before = left.size();
      filters_[i].explain->explain_nodes(state, i, pod, fork, left, count, &counted);
      if (left.size() < before) all_unresolvable = false;
      continue;
    }
    // By verdict, this node-static filter and those right after it in one pass: a node's verdict
    // names the first it fails. Otherwise this filter alone, on every node.
    size_t last = i;  // the last of them
    for (size_t k = i + 1; by_verdict && k < filters_.size() && (!((relevant >> k) & 1) || ((statics >> k) & 1)); ++k)
      if ((statics >> k) & 1) last = k;
    size_t kept = 0;
    for (int n : left) {
      size_t f = i;
      if (by_verdict) {
        const size_t v = (*verdicts)[static_cast<size_t>(n)];
        if (v <= i || v > last + 1) {
          left[kept++] = n;
          continue;
        }
        f = v - 1;
      }
      Status s = filters_[f].plugin->filter(state, f, pod, fork, n);
      if (s.ok()) {
        left[kept++] = n;
        continue;
      }
      for (size_t r = 0; r < s.reasons.size(); ++r) count(&counted, s.reasons[r], 1);
      if (s.code != Code::kUnschedulableAndUnresolvable) all_unresolvable = false;
    }
    left.resize(kept);
    i = last;
  }
  for (auto& [reason, count] : counted) out.reasons[std::move(reason)] += count;
  out.unresolvable = all_unresolvable;
}

Placement Framework::nowhere(const model::Pod& pod, const Fork& fork, const std::vector<int>& candidates, PlacementCache* cache) const {
  Placement out;
  CycleState state(cache);
  uint64_t statics, dynamics;
  prepare(state, pod, fork, statics, dynamics);
  explain(state, pod, fork, statics, dynamics, candidates, cache, out.diagnosis);
  return out;
}

Placement Framework::place(const model::Pod& pod, const Fork& fork, const std::vector<int>& candidates, PlacementCache* cache) const {
  Placement out;
  CycleState state(cache);
  uint64_t statics, dynamics;
  prepare(state, pod, fork, statics, dynamics);
  filter_static(state, pod, fork, statics, candidates, cache, out.feasible);
  // NodeResourcesFit reads each node's usage: when it is the last filter to run, the rooms of the
  // nodes it keeps are the scores' (CycleState::record_rooms).
  const bool record =
      rooms_read_ && resource_fit_filter_ >= 0 && ((dynamics >> resource_fit_filter_) & 1) && (dynamics >> resource_fit_filter_ >> 1) == 0;
  if (record) state.record_rooms(&fork, state.resolve_demand(fork).resource());
  each_bit(dynamics, [&](size_t i) {
    if (out.feasible.empty()) return;
    if (filters_[i].many) filters_[i].many->filter_nodes(state, i, pod, fork, out.feasible);
    else filters_[i].plugin->filter_each(state, i, pod, fork, out.feasible);
  });
  if (record) state.adopt_rooms(&out.feasible);
  if (out.feasible.empty()) {
    explain(state, pod, fork, statics, dynamics, candidates, cache, out.diagnosis);
    return out;
  }
  if (scores_.empty()) {
    out.node = *std::min_element(out.feasible.begin(), out.feasible.end());
    return out;
  }
  thread_local std::vector<double> total;
  total.assign(out.feasible.size(), 0);
  add_scores(state, pod, fork, pre_score(state, pod, fork), out.feasible, total);
  size_t best = 0;
  for (size_t k = 1; k < out.feasible.size(); ++k)
    if (total[k] > total[best] || (total[k] == total[best] && out.feasible[k] < out.feasible[best])) best = k;
  out.node = out.feasible[best];
  out.score = total[best];
  return out;
}

std::vector<int> Framework::statically_feasible(const model::Pod& pod, const Fork& fork, const std::vector<int>& candidates,
                                                PlacementCache& cache) const {
  CycleState state;
  uint64_t statics, dynamics;
  prepare(state, pod, fork, statics, dynamics);
  std::vector<int> out;
  filter_static(state, pod, fork, statics, candidates, &cache, out);
  return out;
}

Placement Framework::place_on_tracked(const model::Pod& pod, const Fork& fork, PlacementCache& cache) const {
  const Fork* top = &fork;
  while (top->parent()) top = top->parent();
  // Only a tracking fork or its direct child: the child's own changes are the only ones the
  // tracking order does not already reflect.
  const bool shallow = top == &fork || top == fork.parent();
  if (shallow && fullest_score_ >= 0 && cache.snapshot_ == &fork.base())
    if (auto p = place_fullest(pod, fork, *top, cache)) return std::move(*p);
  ++cache.counts_.scored;
  // A pod asking for the resource the tracking fork orders nodes by: NodeResourcesFit rejects
  // every node with less of it free, so only the others (and those the child changed) need a
  // look. When none passes, every tracked node is looked at, to say why.
  const model::InternedString& resource = top->tracked_resource();
  if (shallow && resource_fit_filter_ >= 0 && !resource.empty())
    if (const int64_t want = pod.requests.scalar(resource); want > 0) {
      const Fork* child = top == &fork ? nullptr : &fork;
      thread_local std::vector<int> enough;
      enough.clear();
      const auto& index = top->tracked_by_free_resource();
      for (auto it = index.lower_bound({want, std::numeric_limits<int>::min()}); it != index.end(); ++it)
        if (!child || !child->changed_here(it->second)) enough.push_back(it->second);
      if (child)
        child->for_each_changed_here([&](int n) {
          if (top->is_tracked(n)) enough.push_back(n);
        });
      if (Placement p = place(pod, fork, enough, &cache); p.node >= 0) return p;
      return nowhere(pod, fork, top->tracked(), &cache);  // the others have too little of it free
    }
  // The same for CPU, which every pod but a few asks for: the nodes with enough free, taken in
  // the tracked order, so that a score summing over the feasible nodes (BestFit's free totals)
  // adds them up in the order a look at every tracked node does.
  if (shallow && resource_fit_filter_ >= 0 && top->tracked_unique())
    if (const int64_t want = pod.requests.cpu_milli; want > 0) {
      const Fork* child = top == &fork ? nullptr : &fork;
      const auto& index = top->tracked_by_free_cpu();
      const auto from = index.lower_bound({want, std::numeric_limits<int>::min()});
      const size_t tracked = top->tracked().size();
      // Worth it when it leaves out a good share of the nodes.
      if (static_cast<size_t>(index.end() - from) < tracked / 2) {
        thread_local std::vector<uint64_t> ranks;
        ranks.assign(tracked / 64 + 1, 0);
        auto mark = [&](int n) {
          const auto rank = static_cast<size_t>(top->tracked_rank(n));
          ranks[rank / 64] |= uint64_t{1} << (rank % 64);
        };
        // Every node of the order, and every tracked node the child changed whatever the order
        // (made before the child) says of its free CPU: a set, so one the child changed that is
        // in the order too is in it once.
        for (auto it = from; it != index.end(); ++it) mark(it->second);
        if (child)
          child->for_each_changed_here([&](int n) {
            if (top->is_tracked(n)) mark(n);
          });
        // The list in the tracked order, written in place.
        size_t count = 0;
        for (const uint64_t word : ranks) count += static_cast<size_t>(std::popcount(word));
        thread_local std::vector<int> enough;
        enough.resize(count);
        int* out = enough.data();
        const int* nodes = top->tracked().data();
        for (size_t w = 0; w < ranks.size(); ++w) each_bit(ranks[w], [&](size_t i) { *out++ = nodes[w * 64 + i]; });
        if (Placement p = place(pod, fork, enough, &cache); p.node >= 0) {
          ++cache.counts_.enough_cpu;
          return p;
        }
        return nowhere(pod, fork, top->tracked(), &cache);  // the others have too little CPU free
      }
    }
  return place(pod, fork, top->tracked(), &cache);
}

std::optional<Placement> Framework::place_fullest(const model::Pod& pod, const Fork& fork, const Fork& top, PlacementCache& cache) const {
  CycleState state(&cache);
  // Every other weighted score must give every node the same value for this pod, or know the
  // lowest raw score a node can get for it.
  const uint64_t uniform = pre_score(state, pod, fork);
  thread_local std::vector<std::pair<size_t, int64_t>> lowest;  // (score, lowest raw score)
  lowest.clear();
  for (size_t s = 0; s < scores_.size(); ++s) {
    if (scores_[s].weight == 0 || static_cast<int>(s) == fullest_score_ || ((uniform >> s) & 1)) continue;
    std::optional<int64_t> low;
    if (scores_[s].lowest) low = scores_[s].lowest->lowest(state, filters_.size() + s, pod, fork);
    if (!low) return std::nullopt;
    lowest.emplace_back(s, *low);
  }
  uint64_t statics, dynamics;
  prepare(state, pod, fork, statics, dynamics);
  const std::vector<uint8_t>& verdicts = static_verdicts(state, pod, fork, statics, cache);
  const ClusterSnapshot& snap = fork.base();
  // NodeResourcesFit rejects every node with less free CPU than a pod asking for some.
  const int64_t want = pod.requests.cpu_milli;
  const bool bounded = resource_fit_filter_ >= 0 && want > 0;
  auto free_cpu = [&](int n) { return snap.allocatable_basic(n).cpu_milli - fork.used_basic(n).cpu_milli; };
  // Candidates in (free CPU, index) order: the tracking fork's index, except the nodes the child
  // changed, merged with those, ordered here. next() walks it from the fullest up, prev() from
  // the emptiest down.
  const Fork* child = &top == &fork ? nullptr : &fork;
  thread_local std::vector<std::pair<int64_t, int>> changed;
  changed.clear();
  if (child)
    child->for_each_changed_here([&](int n) {
      if (!top.is_tracked(n)) return;
      int64_t f = free_cpu(n);
      if (!bounded || f >= want) changed.emplace_back(f, n);
    });
  std::sort(changed.begin(), changed.end());
  const auto& index = top.tracked_by_free_cpu();
  // The walk may begin from the last walk for a pod of this kind (PlacementCache::Walk): when
  // the pod's feasibility on a node depends only on its static verdicts and the node's own
  // usage, a node nothing changed since is as feasible, and at the same place in the order, as
  // it was then. Those of its nodes are visited again without the filters, merged with the nodes
  // that changed since (in the tracking fork, or in the child then or now) that now come before
  // the node it stopped at; the walk over the orders goes on from that node.
  const uint64_t resource_fit_only = resource_fit_filter_ >= 0 ? uint64_t(1) << resource_fit_filter_ : 0;
  PlacementCache::Walk* memo = nullptr;
  if ((dynamics & ~resource_fit_only) == 0 && pod.requests.scalars().empty())
    memo = &cache.walks_[{&verdicts, dynamics, pod.requests.cpu_milli, pod.requests.memory, pod.requests.ephemeral_storage}];
  using Visit = PlacementCache::Walk::Visit;
  // The nodes replayed from the last walk, and over those it has gone past, the walk's feasible
  // nodes in order (the first `visited`): what the memo keeps next.
  // Its entries from `replay_end` on are left from earlier walks, to be written over: a walk
  // sizes it only up.
  thread_local std::vector<Visit> replay;
  size_t replay_end = 0, visited = 0;
  std::pair<int64_t, int> start{bounded ? want : std::numeric_limits<int64_t>::min(), std::numeric_limits<int>::min()};
  const auto& log = top.tracked_changes();
  if (memo && memo->top == &top && memo->tracking_version == top.tracking_version() && memo->end.second >= 0 &&
      memo->changes_seen <= log.size() && log.size() - memo->changes_seen <= 4 * memo->before.size() + 64) {
    // The nodes changed since, each once, marked by a stamp per node.
    thread_local std::vector<uint32_t> mark;
    thread_local uint32_t stamp = 0;
    if (mark.size() < static_cast<size_t>(snap.size())) mark.assign(static_cast<size_t>(snap.size()), 0);
    if (++stamp == 0) {
      std::fill(mark.begin(), mark.end(), 0);
      stamp = 1;
    }
    thread_local std::vector<std::pair<int64_t, int>> moved;
    moved.clear();
    auto dirty = [&](int n) {
      if (mark[static_cast<size_t>(n)] == stamp || !top.is_tracked(n)) return;
      mark[static_cast<size_t>(n)] = stamp;
      const std::pair<int64_t, int> at{free_cpu(n), n};
      if (at >= start && at < memo->end) moved.push_back(at);
    };
    for (size_t k = memo->changes_seen; k < log.size(); ++k) dirty(log[k]);
    for (int n : memo->child_changed) dirty(n);
    if (child) child->for_each_changed_here(dirty);
    std::sort(moved.begin(), moved.end());
    if (replay.size() < memo->before.size() + moved.size()) replay.resize(memo->before.size() + moved.size());
    size_t w = 0;
    auto m = moved.begin();
    for (const auto& [cpu, n, feasible] : memo->before) {
      if (mark[static_cast<size_t>(n)] == stamp) continue;
      for (; m != moved.end() && *m < std::pair<int64_t, int>{cpu, n}; ++m) replay[w++] = {m->first, m->second, false};
      replay[w++] = {cpu, n, true};
    }
    for (; m != moved.end(); ++m) replay[w++] = {m->first, m->second, false};
    replay_end = w;
    start = memo->end;
    ++cache.counts_.replayed;
  }
  auto from_start = [&](const auto& entries) { return std::lower_bound(entries.begin(), entries.end(), start); };
  // A walk over the merged order, from `it` and `c` on, with `before` the order's comparison;
  // each call gives the next (free CPU, node), node -1 at the end.
  auto walk = [child](auto it, auto end, auto c, auto c_end, auto before) {
    return [=]() mutable -> std::pair<int64_t, int> {
      while (it != end && child && child->changed_here(it->second)) ++it;
      const bool from_index = it != end && (c == c_end || before(*it, *c));
      if (!from_index && c == c_end) return {0, -1};
      return from_index ? *it++ : *c++;
    };
  };
  auto next = walk(from_start(index.entries()), index.end(), from_start(changed), changed.cend(), std::less<>{});
  auto prev = walk(index.rbegin(), index.rend(), changed.crbegin(), changed.crend(), std::greater<>{});
  auto passes = [&](int n) {
    if (verdicts[static_cast<size_t>(n)] != 0) return false;
    bool ok = true;
    each_bit(dynamics, [&](size_t i) { ok = ok && filters_[i].plugin->passes(state, i, pod, fork, n); });
    return ok;
  };
  // The next feasible node from the fullest up: the replayed nodes, then the orders.
  size_t replayed = 0;
  auto step = [&]() -> int {
    for (; replayed < replay_end; ++replayed) {
      const Visit v = replay[replayed];
      if (v.feasible || passes(v.node)) {
        replay[visited++] = {v.cpu, v.node, true};
        ++replayed;
        return v.node;
      }
    }
    for (auto at = next(); at.second >= 0; at = next())
      if (passes(at.second)) {
        const Visit v{at.first, at.second, true};
        if (visited < replay.size()) replay[visited] = v;
        else replay.push_back(v);
        ++visited;
        return at.second;
      }
    return -1;
  };
  auto emptiest_feasible = [&]() {
    for (auto at = prev(); at.second >= 0; at = prev())
      if (passes(at.second)) return at.second;
    return -1;
  };
  // The walk is remembered up to the node it stopped at (the last one visited), or forgotten
  // when it found none.
  auto remember = [&](bool stopped) {
    if (!memo) return;
    if (!stopped || visited == 0) {
      memo->end = {0, -1};
      return;
    }
    memo->top = &top;
    memo->tracking_version = top.tracking_version();
    memo->changes_seen = log.size();
    memo->child_changed.clear();
    if (child)
      child->for_each_changed_here([&](int n) {
        if (top.is_tracked(n)) memo->child_changed.push_back(n);
      });
    memo->end = {replay[visited - 1].cpu, replay[visited - 1].node};
    replay.resize(visited - 1);
    memo->before.swap(replay);  // the memo's old list is the next walk's buffer
  };
  auto raw = [&](size_t s, int n) { return scores_[s].plugin->score(state, filters_.size() + s, pod, fork, n); };
  const int fullest = step();
  if (fullest < 0) {
    // No tracked node passes: the walk looked at each one with enough CPU free that it did not
    // already know to fail.
    remember(false);
    return nowhere(pod, fork, top.tracked(), &cache);
  }
  bool at_lowest = true;
  for (const auto& [s, low] : lowest) at_lowest = at_lowest && raw(s, fullest) == low;
  // The fullest feasible node has FreeCPU's best value; with every lowest score too, no node
  // scores higher, and one scoring the same comes later in the walk (a higher index).
  int best = fullest, emptiest = -1;
  if (!at_lowest) {
    // One score above its lowest there: walk on to the fullest feasible node that gets it (b).
    // Every node past b scores no better in both, and of the nodes before it only those scoring
    // below every fuller one (the frontier) can beat it. Each of them beats b only if the
    // score's normalisation range (its highest raw score on a feasible node, less the lowest)
    // is large enough; with a bound on the highest that proves none does, b is place()'s node.
    if (lowest.size() != 1) return std::nullopt;
    const size_t s = lowest[0].first;
    const int64_t low = lowest[0].second;  // not a structured binding: the lambda below uses it
    const auto f = static_cast<size_t>(fullest_score_);
    struct Point {
      int64_t score, cpu;  // the two raw scores
    };
    thread_local std::vector<Point> frontier;
    frontier.assign(1, {raw(s, fullest), raw(f, fullest)});
    int b = -1;
    const size_t slot = filters_.size() + s;
    // Every frontier score is above the lowest: a node not below the last is neither.
    auto add = [&](int n, int64_t score) {
      if (score <= low) b = n;
      else frontier.push_back({score, raw(f, n)});
    };
    while (b < 0) {
      if (replayed < replay_end && replay[replayed].feasible) {
        // A run of replayed nodes known to be feasible, asked about together up to the first
        // below the frontier; each one up to it is visited.
        constexpr size_t kRun = 32;
        int run[kRun];
        size_t count = 0;
        for (size_t r = replayed; r < replay_end && count < kRun && replay[r].feasible; ++r) run[count++] = replay[r].node;
        const LowestScore::Below below = scores_[s].lowest->first_below(state, slot, pod, fork, run, count, frontier.back().score);
        const size_t taken = std::min(below.at + 1, count);
        for (size_t k = 0; k < taken; ++k) replay[visited++] = replay[replayed++];
        if (below.at < count) add(run[below.at], below.score);
        continue;
      }
      const int n = step();
      if (n < 0) break;
      if (const std::optional<int64_t> score = scores_[s].lowest->score_if_below(state, slot, pod, fork, n, frontier.back().score))
        add(n, *score);
    }
    remember(b >= 0);
    if (b < 0) return std::nullopt;
    emptiest = emptiest_feasible();
    const int64_t cpu_b = raw(f, b), cpu_range = raw(f, emptiest) - frontier.front().cpu;
    const double ws = scores_[s].weight, wf = scores_[f].weight;
    auto b_wins = [&](double highest) {
      if (highest <= static_cast<double>(low)) return false;
      for (const auto& p : frontier) {
        // What b gains over p in the one score, at least, and loses in FreeCPU.
        const double gain = ws * 100.0 * static_cast<double>(p.score - low) / (highest - static_cast<double>(low));
        const double loss = cpu_range > 0 ? wf * 100.0 * static_cast<double>(cpu_b - p.cpu) / static_cast<double>(cpu_range) : 0.0;
        if (!(gain - loss > 1e-6)) return false;  // a margin far above the sums' rounding
      }
      return true;
    };
    auto high = scores_[s].lowest->highest(state, slot, pod, fork, top, false);
    bool wins = high && b_wins(high->value);
    if (!wins && high && high->kept) {
      high = scores_[s].lowest->highest(state, slot, pod, fork, top, true);
      wins = high && b_wins(high->value);
    }
    if (!wins) return std::nullopt;
    best = b;
    ++cache.counts_.bounded;
  } else {
    remember(true);
    ++cache.counts_.fullest;
  }
  Placement out;
  out.node = best;
  // The sum place() would compute for this node, in the same order. Among itself, the fullest
  // and the emptiest feasible node, each score normalises it as among all feasible nodes:
  // FreeCPU has the same range, and the other score is at its lowest there.
  // (Reused buffers: this runs for nearly every pod of a plan.)
  thread_local std::vector<int> some;
  thread_local std::vector<double> total;
  some.assign(1, best);
  if (best != fullest) some.insert(some.end(), {fullest, emptiest});
  total.assign(some.size(), 0);
  add_scores(state, pod, fork, uniform, some, total);
  out.score = total[0];
  return out;
}

std::vector<std::pair<std::string, Status>> Framework::check(const model::Pod& pod, const Fork& fork, int node) const {
  std::vector<std::pair<std::string, Status>> out;
  CycleState state;
  for (size_t i = 0; i < filters_.size(); ++i) {
    const Filter& f = filters_[i];
    if (f.pre && f.pre->pre_filter(state, i, pod, fork) == PreFilterResult::kSkip)
      out.emplace_back(std::string(f.plugin->name()), Status::success());
    else out.emplace_back(std::string(f.plugin->name()), f.plugin->filter(state, i, pod, fork, node));
  }
  return out;
}

std::vector<double> Framework::scores(const model::Pod& pod, const Fork& fork, const std::vector<int>& nodes) const {
  std::vector<double> total(nodes.size(), 0);
  if (nodes.empty()) return total;
  CycleState state;
  add_scores(state, pod, fork, pre_score(state, pod, fork), nodes, total);
  return total;
}

}  // namespace spotshift::sched
