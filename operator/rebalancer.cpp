#include "rebalancer.hpp"

#include "drain/plan_format.hpp"

#include "core/log.hpp"
#include "runtime/spawn.hpp"
#include "telemetry.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spotshift::op {

namespace {

const log::Logger logger("spot-rebalancer");

std::optional<Time> later(std::optional<Time> a, std::optional<Time> b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

// "; saves about 3.06 per hour" for a node with a price (spec.pricing), and "; displaces 2
// expendable pods" when its moves push overprovisioning pods off spot nodes; else "".
std::string saving_text(const drain::NodePlan& node) {
  std::string out = node.hourly_saving ? fmt::format("; saves about {} per hour", drain::format_price(*node.hourly_saving)) : "";
  if (!node.displaces.empty())
    out += fmt::format("; displaces {} expendable pod{}", node.displaces.size(), node.displaces.size() == 1 ? "" : "s");
  return out;
}

std::string pods_text(size_t n) { return fmt::format("{} pod{}", n, n == 1 ? "" : "s"); }

}  // namespace

struct SpotRebalancer::PolicyState {
  drain::NodeBackoff backoff;
  std::shared_ptr<drain::Evictor> active;
  std::optional<DrainProgress> current;
  std::optional<drain::LastDrain> last_drain;  // newer than the cached status
  std::optional<Time> next_drain_after;        // newer than the cached status
  std::vector<Time> drain_starts;              // starts since this process began (maxDrainsPerHour)
  int64_t drained_total = 0;                   // added since start, on top of the cached totals
  int64_t evicted_total = 0;
  int64_t cached_drained_base = -1, cached_evicted_base = -1;
  std::string last_written;
  Time last_write{};
  // The resourceVersion our last status write returned, and the cache's when we wrote it: while
  // the cache still shows the latter, it has not seen our write yet.
  std::string written_rv, cache_rv_at_write;
  int64_t invalid_reported_generation = -1;
  std::map<std::string, std::string> reported_reasons;
  std::string announced;  // the node last announced by DrainPlanned or WouldDrain
  std::shared_ptr<const drain::Plan> last_plan;
  // Whether the next plan carries on from last_plan (plan stability): from the first drain on,
  // until a plan finds nothing to drain.
  bool carrying = false;
  Time last_plan_end{};         // when the last plan was made
  Duration last_plan_took{};    // and how long it took
  std::string pricing_problem;  // the last PricingUnavailable reported
};

namespace {

// The drains started within the hour before now: those the status recorded (an earlier leader's
// too) and this process's own.
std::vector<Time> recent_starts(const drain::ReschedulePolicy& policy, const std::vector<Time>& own, Time now) {
  std::vector<Time> all = policy.status.recent_drain_starts;
  all.insert(all.end(), own.begin(), own.end());
  return drain::starts_within_hour(std::move(all), now);
}

}  // namespace

class SpotRebalancer::Observer final : public drain::DrainObserver {
 public:
  Observer(SpotRebalancer& r, std::shared_ptr<const drain::ReschedulePolicy> policy, std::shared_ptr<PolicyState> st)
      : r_(r), policy_(std::move(policy)), st_(std::move(st)) {}

  void pod_evicted(const drain::NodePlan& plan, const drain::PodMove& move, int evicted) override {
    const model::Pod& pod = *move.pod;
    r_.events_.record({"v1", "Pod", std::string(pod.meta.namespace_.view()), pod.name(), pod.meta.uid, ""}, telemetry::kPodEvicted,
                      fmt::format("Evicted by policy {} to empty on-demand node {}; the plan found room for it on spot node {}",
                                  policy_->name(), plan.node, move.target),
                      r_.policy_ref(*policy_));
    r_.metrics_.family(telemetry::kEvictions).with({policy_->name(), "evicted"}).inc();
    if (st_->current) {
      st_->current->evicted = evicted;
      st_->current->remaining = static_cast<int>(plan.moves.size()) - evicted;
    }
    // Progress in the status: a reconcile writes it, without holding up the drain.
    if (r_.options_.enqueue) r_.options_.enqueue(policy_->name());
  }
  void pod_already_gone(const drain::PodMove& move) override {
    r_.metrics_.family(telemetry::kEvictions).with({policy_->name(), "gone"}).inc();
    logger.info("pod already gone before its eviction", {{"policy", policy_->name()}, {"pod", move.pod->key()}});
  }
  void eviction_refused(const drain::PodMove& move, const Error& e) override {
    r_.metrics_.family(telemetry::kEvictions).with({policy_->name(), e.code == 429 ? "refused" : "error"}).inc();
    logger.info("eviction not accepted yet", {{"policy", policy_->name()}, {"pod", move.pod->key()}, {"error", e}});
  }
  void replacement_placed(const drain::PodMove&, std::string_view placement) override {
    r_.metrics_.family(telemetry::kReplacements).with({policy_->name(), std::string(placement)}).inc();
  }
  void replacement_not_on_spot(const drain::PodMove&, const std::string& message) override {
    r_.metrics_.family(telemetry::kReplacementsNotOnSpot).with({policy_->name()}).inc();
    if (st_->current)
      r_.events_.record(r_.node_ref(st_->current->node), telemetry::kReplacementNotOnSpot, message, r_.policy_ref(*policy_));
  }

 private:
  SpotRebalancer& r_;
  std::shared_ptr<const drain::ReschedulePolicy> policy_;
  std::shared_ptr<PolicyState> st_;
};

SpotRebalancer::SpotRebalancer(std::shared_ptr<kube::Client> client, runtime::Timers& timers, RebalancerStores stores,
                               runtime::EventRecorder& events, runtime::Metrics& metrics, RebalancerOptions options)
    : client_(std::move(client)),
      timers_(timers),
      stores_(stores),
      events_(events),
      metrics_(metrics),
      options_(std::move(options)),
      tasks_(timers.executor()) {}

SpotRebalancer::~SpotRebalancer() = default;

std::shared_ptr<SpotRebalancer::PolicyState> SpotRebalancer::state(const std::string& policy) {
  auto& p = states_[policy];
  if (!p) p = std::make_shared<PolicyState>();
  return p;
}

void SpotRebalancer::stop_all() {
  for (auto& [name, st] : states_)
    if (st->active) st->active->stop();
}

runtime::ObjectReference SpotRebalancer::policy_ref(const drain::ReschedulePolicy& p) const {
  return {fmt::format("{}/{}", drain::kGroup, drain::kVersion), std::string(drain::kKind), "", p.name(), p.meta.uid, ""};
}

runtime::ObjectReference SpotRebalancer::node_ref(const std::string& node) const {
  auto n = stores_.nodes.get(node);
  return {"v1", "Node", "", node, n ? n->meta.uid : "", ""};
}

std::map<std::string, drain::Exclusion> SpotRebalancer::conflicts(const drain::PolicySpec& spec, const std::string& policy) const {
  std::map<std::string, drain::Exclusion> out;
  std::vector<std::shared_ptr<const drain::ReschedulePolicy>> others;
  stores_.policies.for_each([&](const auto& p) {
    if (p->name() != policy && p->spec) others.push_back(p);
  });
  if (others.empty()) return out;
  std::sort(others.begin(), others.end(), [](const auto& a, const auto& b) { return a->name() < b->name(); });
  stores_.nodes.for_each([&](const auto& n) {
    if (drain::classify_node(*n, spec) != drain::NodeClass::kOnDemand) return;
    std::vector<std::string> also;
    for (const auto& o : others)
      if (drain::classify_node(*n, *o->spec) == drain::NodeClass::kOnDemand) also.push_back(o->name());
    if (!also.empty())
      out[n->name()] =
          fmt::format("also selected as on-demand by policy {}: a node two policies select is never drained", fmt::join(also, ", "));
  });
  return out;
}

drain::PlanInput SpotRebalancer::plan_input(const drain::PolicySpec& spec, const std::string& policy) const {
  drain::PlanInput in;
  in.nodes.reserve(stores_.nodes.size());
  stores_.nodes.for_each([&](const auto& p) { in.nodes.push_back(p); });
  in.pods = stores_.pods.values();
  in.snapshots = &snapshots_;
  stores_.pdbs.for_each([&](const auto& p) { in.pdbs.push_back(p); });
  if (spec.namespace_selector) stores_.namespaces.for_each([&](const auto& n) { in.namespaces.emplace(n->meta.name, n->meta.labels); });
  if (options_.volumes) {
    in.volumes = options_.volumes();
    in.volumes_watched = true;
  }
  in.owners = options_.owners;
  in.excluded = conflicts(spec, policy);
  if (auto it = states_.find(policy); it != states_.end())
    for (auto& [node, reason] : it->second->backoff.active(timers_.now())) in.excluded.emplace(node, reason);
  return in;
}

std::optional<std::string> SpotRebalancer::drain_sharing_spot_nodes(const std::string& policy, const drain::Plan& plan) const {
  std::set<std::string_view> mine(plan.spot_nodes.begin(), plan.spot_nodes.end());
  for (const auto& [name, st] : states_) {
    if (name == policy || !st->current || !st->last_plan) continue;
    for (const auto& n : st->last_plan->spot_nodes)
      if (mine.count(n))
        return fmt::format("policy {} is draining {} onto spot nodes this policy shares (such as {}): one drain at a time", name,
                           st->current->node, n);
  }
  return std::nullopt;
}

Duration SpotRebalancer::plan_cooldown(const PolicyState& st, Time now) const {
  const int percent = options_.max_planning_cpu_percent;
  if (percent <= 0 || percent >= 100 || st.last_plan_took <= Duration::zero()) return Duration::zero();
  const Time ready = st.last_plan_end + st.last_plan_took * (100 - percent) / percent;
  return ready > now ? ready - now : Duration::zero();
}

asio::awaitable<Result<void>> SpotRebalancer::write_status(const drain::ReschedulePolicy& policy, PolicyState& st, StatusInput in) {
  in.name = policy.name();
  in.generation = policy.meta.generation;
  in.previous = policy.status;
  in.spec = policy.spec ? &*policy.spec : nullptr;
  if (st.cached_drained_base < 0) {
    st.cached_drained_base = policy.status.nodes_drained_total;
    st.cached_evicted_base = policy.status.pods_evicted_total;
  }
  // What the state says now: rebuilt for every attempt, since a drain may move on meanwhile.
  auto refresh = [&] {
    in.now = timers_.now();
    in.nodes_drained_total = st.cached_drained_base + st.drained_total;
    in.pods_evicted_total = st.cached_evicted_base + st.evicted_total;
    in.current = st.current;
    in.last_drain = st.last_drain ? st.last_drain : policy.status.last_drain;
    in.next_drain_after = later(st.next_drain_after, policy.status.next_drain_after);
    in.recent_drain_starts = recent_starts(policy, st.drain_starts, in.now);
  };
  refresh();
  std::string compare = status_body(in, false);
  if (compare == st.last_written && in.now - st.last_write < options_.status_refresh) co_return ok();
  // The update is guarded by a resourceVersion from the cache (the operator never reads a policy
  // from the API server): the cache's own, unless the cache has not seen our last write yet.
  auto cached_rv = [&] {
    auto p = stores_.policies.get(policy.name());
    return p ? p->meta.resource_version : policy.meta.resource_version;
  };
  std::string cache_rv = cached_rv();
  for (int attempt = 0; attempt < 4; ++attempt) {
    in.resource_version = !st.written_rv.empty() && cache_rv == st.cache_rv_at_write ? st.written_rv : cache_rv;
    auto r = co_await client_->update_status(policy_resource(), "", policy.name(), status_body(in, true));
    if (r) {
      st.last_written = status_body(
          [&] {
            auto c = in;
            c.resource_version.clear();
            return c;
          }(),
          false);
      st.last_write = in.now;
      st.written_rv = model::object_resource_version(*r);
      st.cache_rv_at_write = cache_rv;
      co_return ok();
    }
    if (r.error().is_not_found()) co_return ok();  // deleted meanwhile
    if (!r.error().is_conflict()) co_return r.error().wrap(fmt::format("updating the status of ReschedulePolicy {}", policy.name()));
    // Someone else wrote the policy (a user's edit, a spec change): write again over it once the
    // watch has brought it into the cache.
    const Time until = timers_.now() + std::chrono::seconds(1);
    while (cached_rv() == cache_rv && timers_.now() < until) co_await timers_.sleep(std::chrono::milliseconds(20));
    auto fresh = stores_.policies.get(policy.name());
    if (!fresh) co_return ok();  // deleted meanwhile
    cache_rv = fresh->meta.resource_version;
    in.generation = fresh->meta.generation;
    refresh();
  }
  co_return Error::api(409, "Conflict", fmt::format("the status of ReschedulePolicy {} kept changing", policy.name()));
}

void SpotRebalancer::update_metrics(const std::string& policy, const drain::Plan& plan) {
  auto& nodes = metrics_.family(telemetry::kNodes);
  nodes.with({policy, "on_demand"}).set(plan.summary.on_demand_nodes);
  nodes.with({policy, "spot"}).set(plan.summary.spot_nodes);
  nodes.with({policy, "drainable"}).set(plan.summary.drainable_nodes);
  nodes.with({policy, "undrainable"}).set(plan.summary.undrainable_nodes);
  metrics_.family(telemetry::kPlanDuration).with({policy}).observe(plan.summary.plan_millis / 1000.0);
  if (plan.summary.hourly_savings) metrics_.family(telemetry::kEstimatedHourlySavings).with({policy}).set(*plan.summary.hourly_savings);
  std::map<std::string_view, int> by_rule;
  for (const auto& u : plan.undrainable)
    for (auto rule : u.rules) ++by_rule[rule];
  auto& undrainable = metrics_.family(telemetry::kUndrainableNodes);
  for (auto rule : drain::kRejectionRules) undrainable.with({policy, std::string(rule)}).set(by_rule[rule]);
}

void SpotRebalancer::set_gate_metrics(const std::string& policy, const std::optional<drain::Gate>& blocked) {
  auto& gates = metrics_.family(telemetry::kGateBlocked);
  for (auto gate : drain::kGates) gates.with({policy, std::string(gate)}).set(blocked && blocked->reason == gate ? 1 : 0);
}

void SpotRebalancer::report_undrainable(const drain::ReschedulePolicy& policy, PolicyState& st, const drain::Plan& plan) {
  std::set<std::string> current;
  size_t sent = 0;
  for (const auto& u : plan.undrainable) {
    current.insert(u.node);
    std::string text = fmt::format("{}", fmt::join(u.reasons, "; "));
    auto& seen = st.reported_reasons[u.node];
    if (seen == text || sent >= options_.node_events_per_reconcile) continue;
    seen = text;
    ++sent;
    std::string more = u.reasons.size() > 1 ? fmt::format(" (and {} more reasons: see spotshift plan)", u.reasons.size() - 1) : "";
    events_.record(node_ref(u.node), telemetry::kNodeNotDrainable,
                   fmt::format("Not drainable by policy {}: {}{}", policy.name(), u.reasons.empty() ? "" : u.reasons[0], more),
                   policy_ref(policy));
  }
  std::erase_if(st.reported_reasons, [&](const auto& kv) { return !current.count(kv.first); });
}

asio::awaitable<void> SpotRebalancer::clean_stale_taints(const std::string& policy) {
  if (tasks_.running(policy)) co_return;
  std::vector<std::string> tainted;
  stores_.nodes.for_each([&](const auto& n) {
    if (drain::has_draining_taint(*n, policy)) tainted.push_back(n->name());
  });
  if (tainted.empty()) co_return;
  drain::EvictorOptions o;
  o.policy = policy;
  drain::TaintCleanup cleaned = co_await drain::remove_stale_taints(*client_, timers_, o, std::move(tainted));
  for (const auto& [node, e] : cleaned.failed)
    logger.error("could not remove a leftover draining taint", {{"policy", policy}, {"node", node}, {"error", e}});
  for (const auto& node : cleaned.removed) {
    logger.info("removed a leftover draining taint", {{"policy", policy}, {"node", node}});
    events_.record(node_ref(node), telemetry::kTaintRemoved,
                   fmt::format("Removed the {} taint of policy {}, which no drain in progress holds", drain::kDrainingTaint, policy));
  }
}

asio::awaitable<void> SpotRebalancer::recover() {
  std::map<std::string, std::vector<std::string>> by_policy;
  stores_.nodes.for_each([&](const auto& n) {
    for (const auto& t : n->taints)
      if (t.key.view() == drain::kDrainingTaint) by_policy[std::string(t.value.view())].push_back(n->name());
  });
  Time now = timers_.now();
  auto record = [&](const std::string& policy, const std::string& node) {
    auto p = stores_.policies.get(policy);
    if (!p) return;
    PolicyState& st = *state(policy);
    st.last_drain = drain::LastDrain{
        node, "Aborted", "interrupted: the operator stopped during the drain; the taint was removed when it started again", now};
    st.next_drain_after =
        later(p->status.next_drain_after, drain::next_drain_after(now, p->spec ? *p->spec : drain::default_policy_spec()));
    st.backoff.failed(node, now);
    metrics_.family(telemetry::kDrains).with({policy, "aborted"}).inc();
    events_.record(node_ref(node), telemetry::kDrainAborted,
                   fmt::format("The drain of {} by policy {} was interrupted when the operator stopped; its taint was removed and "
                               "no new drain starts before {}",
                               node, policy, format_time(*st.next_drain_after)),
                   policy_ref(*p));
  };
  for (const auto& [policy, nodes] : by_policy) {
    drain::EvictorOptions o;
    o.policy = policy;
    drain::TaintCleanup cleaned = co_await drain::remove_stale_taints(*client_, timers_, o, nodes);
    for (const auto& [node, e] : cleaned.failed)
      logger.error("could not remove a draining taint at start-up; retried at the next reconcile",
                   {{"policy", policy}, {"node", node}, {"error", e}});
    for (const auto& node : cleaned.removed) logger.info("removed the taint of an interrupted drain", {{"policy", policy}, {"node", node}});
    for (const auto& node : nodes) record(policy, node);
  }
  // A drain the status says was running, whose taint is already gone.
  stores_.policies.for_each([&](const auto& p) {
    if (p->status.current_drain && !by_policy.count(p->name())) record(p->name(), p->status.current_drain->node);
  });
}

asio::awaitable<Result<runtime::Action>> SpotRebalancer::reconcile_invalid(const drain::ReschedulePolicy& policy, PolicyState& st) {
  metrics_.family(telemetry::kPolicyValid).with({policy.name()}).set(0);
  if (st.invalid_reported_generation != policy.meta.generation) {
    st.invalid_reported_generation = policy.meta.generation;
    events_.record(policy_ref(policy), telemetry::kPolicyInvalid,
                   fmt::format("The policy is not applied until its spec is fixed: {}", policy.spec_error->message));
    logger.error("invalid policy", {{"policy", policy.name()}, {"error", *policy.spec_error}});
  }
  StatusInput in;
  in.invalid = policy.spec_error->message;
  // A failed write is retried with backoff: nothing else would enqueue the policy until its
  // spec changes, and its status would not say that it is invalid.
  if (auto r = co_await write_status(policy, st, std::move(in)); !r) co_return r.error();
  co_return runtime::Action::done();  // a fix is a spec change, which enqueues the policy again
}

// The cluster's scheduler put replacements of this drain on on-demand nodes of the policy (the
// emptiest node often wins its scores, and a node drained a moment ago is empty): draining such a
// node next would likely send them to another on-demand node, and back. Hold it instead.
void SpotRebalancer::hold_nodes_that_took_replacements(const drain::ReschedulePolicy& policy, const drain::PolicySpec& spec,
                                                       PolicyState& st, const drain::DrainReport& report) {
  for (const auto& [target, pods] : report.landed_off_spot) {
    auto obj = stores_.nodes.get(target);
    if (!obj || drain::classify_node(*obj, spec) != drain::NodeClass::kOnDemand) continue;
    const bool one = pods.size() == 1;
    std::string why = fmt::format(
        "it took {} meant for spot nodes in the drain of {} ({}); draining it now would likely move {} to "
        "another on-demand node again",
        one ? "a replacement pod" : fmt::format("{} replacement pods", pods.size()), report.node, fmt::join(pods, ", "),
        one ? "it" : "them");
    Time until = st.backoff.held(target, timers_.now(), why);
    events_.record(node_ref(target), telemetry::kNodeHeld,
                   fmt::format("Policy {} leaves {} alone until {}: {}", policy.name(), target, format_time(until), why),
                   policy_ref(policy));
  }
}

asio::awaitable<Result<void>> SpotRebalancer::start_drain(std::shared_ptr<const drain::ReschedulePolicy> policy,
                                                          std::shared_ptr<PolicyState> state, const drain::NodePlan& node_plan) {
  PolicyState& st = *state;
  const std::string name = policy->name();
  const drain::PolicySpec& spec = *policy->spec;
  const Time started = timers_.now();
  const std::optional<Time> gate_before = st.next_drain_after;
  st.current = DrainProgress{node_plan.node, started, 0, static_cast<int>(node_plan.moves.size())};
  st.carrying = true;
  // The gate is persisted before anything is touched, so a crash mid-drain keeps it closed: a
  // drain whose start cannot be recorded does not start.
  st.next_drain_after = later(st.next_drain_after, drain::next_drain_after(started, spec));
  // Rounded up to the second, as the status keeps it (so the two compare equal, and the hour
  // never ends early).
  st.drain_starts.push_back(std::chrono::ceil<std::chrono::seconds>(started));
  {
    StatusInput in;
    in.plan = st.last_plan.get();
    if (auto r = co_await write_status(*policy, st, std::move(in)); !r) {
      st.current.reset();
      st.next_drain_after = gate_before;
      st.drain_starts.pop_back();
      logger.warn("not starting the drain: the drain delay gate could not be saved in the policy's status",
                  {{"policy", name}, {"node", node_plan.node}, {"error", r.error()}});
      co_return r.error().wrap(fmt::format("recording the start of the drain of {}", node_plan.node));
    }
  }
  std::set<std::string> targets;
  for (const auto& m : node_plan.moves) targets.insert(m.target);
  // What is known: every pod fits on spot nodes now, and where the plan found room; the cluster's
  // scheduler places the replacements (ReplacementNotOnSpot reports one that is not on a spot node).
  const size_t n = node_plan.moves.size();
  std::string message =
      fmt::format("Draining {} for policy {}: its {} fit{} on spot nodes now (the plan found room on {}){}", node_plan.node, name,
                  pods_text(n), n == 1 ? "s" : "", fmt::join(targets, ", "), saving_text(node_plan));
  events_.record(node_ref(node_plan.node), telemetry::kDrainStarted, message, policy_ref(*policy));
  events_.record(policy_ref(*policy), telemetry::kDrainStarted, message, node_ref(node_plan.node));

  auto options = drain::evictor_options(name, spec);
  options.poll_interval = options_.poll_interval;
  options.replacement_timeout = options_.replacement_timeout;
  st.active = std::make_shared<drain::Evictor>(client_, timers_, options, stores_.pods);
  if (spec.steering == drain::Steering::kPreferred) {
    if (options_.steering) {
      st.active->set_steering(options_.steering);
    } else {
      events_.record(policy_ref(*policy), telemetry::kSteeringUnavailable,
                     fmt::format("spec.steering is Preferred but the operator does not serve the steering webhook (the chart's "
                                 "steering.enabled, or --webhook-bind-address): the replacements of {} are placed without it",
                                 node_plan.node));
    }
  }
  metrics_.family(telemetry::kDrainInProgress).with({name}).set(1);
  tasks_.start(name, drain_task(policy, spec, state, node_plan, gate_before), [this, name] {
    if (options_.enqueue) options_.enqueue(name);
  });
  co_return ok();
}

asio::awaitable<void> SpotRebalancer::drain_task(std::shared_ptr<const drain::ReschedulePolicy> policy, drain::PolicySpec spec,
                                                 std::shared_ptr<PolicyState> state, drain::NodePlan node_plan,
                                                 std::optional<Time> gate_before) {
  const std::string name = policy->name();
  const std::string node = node_plan.node;
  std::shared_ptr<drain::Evictor> evictor = state->active;
  // The plan this drain carries out (its head is this node): the re-checks try its targets first.
  std::shared_ptr<const drain::Plan> started_from = state->last_plan;
  // The policy as it is now: an edit made while the drain runs applies from the next eviction on.
  auto current_spec = [this, name]() -> Result<drain::PolicySpec> {
    auto p = stores_.policies.get(name);
    if (!p) return Error::invalid(fmt::format("ReschedulePolicy {} was deleted", name));
    if (!p->spec) return Error::invalid(fmt::format("the policy's spec is no longer valid: {}", p->spec_error->message));
    return *p->spec;
  };
  auto recheck = [this, name, node, current_spec, started_from]() -> Result<drain::NodePlan> {
    auto spec = current_spec();
    if (!spec) return spec.error();
    drain::PlanInput in = plan_input(*spec, name);
    in.only_node = node;
    in.previous = started_from;
    drain::Plan p = drain::make_plan(in, *spec);
    if (const drain::NodePlan* n = p.find(node)) return *n;
    std::vector<std::string> reasons;
    for (const auto& u : p.undrainable) reasons.insert(reasons.end(), u.reasons.begin(), u.reasons.end());
    if (reasons.empty()) reasons.push_back(fmt::format("{} is no longer a Ready, schedulable on-demand node of this policy", node));
    return Error::invalid(fmt::format("{}", fmt::join(reasons, "; ")));
  };
  auto is_spot = [this, spec](std::string_view n) {
    auto obj = stores_.nodes.get(n);
    return obj && drain::classify_node(*obj, spec) == drain::NodeClass::kSpot;
  };
  // Just before each eviction: the pod as the cache has it now, under the policy's rules as they
  // are now. A pod annotated do-not-move (or otherwise protected) since the plan, or the policy
  // suspended, put in dry run or narrowed since, stops the drain.
  auto still_movable = [this, current_spec](const model::Pod& planned) -> Result<void> {
    auto now = current_spec();
    if (!now) return now.error();
    const drain::PolicySpec& spec = *now;
    if (spec.suspend) return Error::invalid("spec.suspend is now true: no more pods are evicted");
    if (spec.dry_run) return Error::invalid("spec.dryRun is now true: no more pods are evicted");
    auto live = stores_.pods.get(planned.key());
    if (!live || live->meta.uid != planned.meta.uid) return {};  // gone or replaced: the eviction finds out
    std::vector<drain::PdbPtr> pdbs;
    stores_.pdbs.for_each([&](const auto& p) { pdbs.push_back(p); });
    drain::BudgetIndex budgets(pdbs);
    drain::DrainContext ctx{spec,
                            [this](std::string_view ns) -> const model::Labels* {
                              auto n = stores_.namespaces.get(ns);
                              return n ? &n->meta.labels : nullptr;
                            },
                            [&](const model::Pod& pod) { return budgets.covers(pod); }, nullptr, options_.owners};
    drain::PodVerdict v = drain::classify(*live, ctx);
    if (v.verdict == drain::Verdict::kBlock) return Error::invalid(v.reason);
    return {};
  };
  Observer observer(*this, policy, state);
  drain::DrainReport report;
  try {
    report = co_await evictor->drain(node_plan, recheck, is_spot, &observer, still_movable);
  } catch (...) {
    // Cancelled (the lease was lost): the process is leaving; nothing runs any more.
    state->active.reset();
    state->current.reset();
    throw;
  }
  state->active.reset();
  state->current.reset();
  record_outcome(*policy, spec, *state, report, gate_before);
}

void SpotRebalancer::record_outcome(const drain::ReschedulePolicy& policy, const drain::PolicySpec& spec, PolicyState& st,
                                    const drain::DrainReport& report, std::optional<Time> gate_before) {
  const std::string& name = policy.name();
  const std::string& node = report.node;
  st.evicted_total += static_cast<int64_t>(report.evicted.size());
  auto& drains = metrics_.family(telemetry::kDrains);
  metrics_.family(telemetry::kDrainInProgress).with({name}).set(0);
  metrics_.family(telemetry::kDrainDuration)
      .with({name, report.outcome == drain::DrainOutcome::kSucceeded ? "succeeded"
                   : report.outcome == drain::DrainOutcome::kAborted ? "aborted"
                                                                     : "stale"})
      .observe(std::chrono::duration<double>(report.finished - report.started).count());
  switch (report.outcome) {
    case drain::DrainOutcome::kSucceeded: {
      st.backoff.succeeded(node);
      ++st.drained_total;
      st.last_drain = drain::LastDrain{node, "Succeeded", "", report.finished};
      st.next_drain_after = drain::next_drain_after(report.finished, spec);
      drains.with({name, "succeeded"}).inc();
      std::string note = fmt::format("Drained {} for policy {}: {} moved to spot nodes; the node can now be scaled away", node, name,
                                     pods_text(report.evicted.size()));
      if (!report.replacements_not_on_spot.empty())
        note += fmt::format(" ({} replacement{} did not land on a spot node)", report.replacements_not_on_spot.size(),
                            report.replacements_not_on_spot.size() == 1 ? "" : "s");
      events_.record(node_ref(node), telemetry::kDrainSucceeded, note, policy_ref(policy));
      events_.record(policy_ref(policy), telemetry::kDrainSucceeded, note, node_ref(node));
      hold_nodes_that_took_replacements(policy, spec, st, report);
      break;
    }
    case drain::DrainOutcome::kAborted: {
      Time retry = st.backoff.failed(node, timers_.now());
      st.last_drain = drain::LastDrain{node, "Aborted", report.reason, report.finished};
      st.next_drain_after = drain::next_drain_after(report.finished, spec);
      drains.with({name, "aborted"}).inc();
      std::string note = fmt::format("Stopped draining {} after {} of {}: {}. The taint was {}; the node is tried again after {}", node,
                                     report.evicted.size(), pods_text(static_cast<size_t>(report.planned)), report.reason,
                                     report.taint_removed ? "removed" : "not removed yet (retried shortly)", format_time(retry));
      events_.record(node_ref(node), telemetry::kDrainAborted, note, policy_ref(policy));
      events_.record(policy_ref(policy), telemetry::kDrainAborted, note, node_ref(node));
      break;
    }
    case drain::DrainOutcome::kStale: {
      st.next_drain_after = gate_before;  // nothing was touched: not an attempt
      drains.with({name, "stale"}).inc();
      events_.record(node_ref(node), telemetry::kDrainSkipped, fmt::format("Did not drain {} for policy {}: {}", node, name, report.reason),
                     policy_ref(policy));
      break;
    }
  }
}

asio::awaitable<Result<runtime::Action>> SpotRebalancer::reconcile_draining(const std::string& key,
                                                                            std::shared_ptr<const drain::ReschedulePolicy> policy,
                                                                            PolicyState& st) {
  if (!policy) {
    // Deleted: the drain stops at its next step and removes its taint; its end enqueues the key,
    // and that reconcile forgets the policy.
    if (st.active) st.active->stop(fmt::format("ReschedulePolicy {} was deleted", key));
    co_return runtime::Action::done();
  }
  // An edit (suspend, dryRun, a narrower selector, an invalid spec) is the drain's own check
  // before its next eviction; here, only its progress goes into the status.
  if (policy->spec) {
    StatusInput in;
    in.plan = st.last_plan.get();
    if (auto r = co_await write_status(*policy, st, std::move(in)); !r) co_return r.error();
    co_return runtime::Action::requeue_after(policy->spec->housekeeping_interval);
  }
  co_return co_await reconcile_invalid(*policy, st);
}

asio::awaitable<drain::PolicySpec> SpotRebalancer::with_prices(const drain::ReschedulePolicy& policy, PolicyState& st) {
  drain::PolicySpec spec = *policy.spec;
  if (!spec.pricing || !spec.pricing->from_config_map()) co_return spec;
  const drain::Pricing& p = *spec.pricing;
  const std::string key = fmt::format("{}/{}", p.config_map_namespace, p.config_map_name);
  PriceCache& cache = prices_[key];
  const Time now = timers_.now();
  if (!cache.table || now - cache.read >= std::chrono::duration_cast<Time::duration>(spec.housekeeping_interval)) {
    auto body = co_await client_->get(kube::Resource::config_maps(), p.config_map_namespace, p.config_map_name);
    cache.read = timers_.now();
    if (!body && !body.error().is_not_found() && cache.table) {
      // A failed read (the API server busy, a network error) keeps the prices read before.
      cache.problem =
          fmt::format("cannot read ConfigMap {} for spec.pricing: {}; the prices read before are kept", key, body.error().message);
    } else {
      cache.problem.clear();
      std::map<std::string, std::string> data;
      if (!body) {
        cache.problem = fmt::format("cannot read ConfigMap {} for spec.pricing: {}; no node has a price", key, body.error().message);
      } else if (auto read = drain::config_map_data(*body); !read) {
        cache.problem = fmt::format("ConfigMap {}: {}", key, read.error().message);
      } else {
        data = std::move(*read);
      }
      std::vector<std::string> bad;
      cache.table = std::make_shared<const drain::PriceTable>(drain::price_table(data, &bad));
      if (!bad.empty()) cache.problem = drain::bad_prices_text(key, bad);
    }
  }
  spec.pricing->table = cache.table;
  if (cache.problem != st.pricing_problem) {
    st.pricing_problem = cache.problem;
    if (!cache.problem.empty()) events_.record(policy_ref(policy), telemetry::kPricingUnavailable, cache.problem);
  }
  co_return spec;
}

asio::awaitable<Result<runtime::Action>> SpotRebalancer::reconcile(const std::string& key) {
  auto policy = stores_.policies.get(key);
  if (tasks_.running(key)) {
    std::shared_ptr<PolicyState> st = state(key);
    co_return co_await reconcile_draining(key, policy, *st);
  }
  if (!policy) {
    states_.erase(key);
    co_return runtime::Action::done();
  }
  std::shared_ptr<PolicyState> state_ptr = state(key);
  PolicyState& st = *state_ptr;
  if (!policy->spec) co_return co_await reconcile_invalid(*policy, st);
  const drain::PolicySpec& spec = *policy->spec;
  metrics_.family(telemetry::kPolicyValid).with({key}).set(1);
  if (st.invalid_reported_generation >= 0) st.invalid_reported_generation = -1;

  co_await clean_stale_taints(key);
  // Every change to nodes, pods or budgets asks for a plan. In a small cluster a plan takes
  // milliseconds; at thousands of nodes under steady pod churn, plans back to back would hold a
  // core, so a plan waits until the previous one is a small enough share of the time.
  if (Duration wait = plan_cooldown(st, timers_.now()); wait > Duration::zero()) co_return runtime::Action::requeue_after(wait);
  const drain::PolicySpec priced = co_await with_prices(*policy, st);
  drain::PlanInput input = plan_input(spec, key);
  if (st.carrying) input.previous = st.last_plan;
  auto plan = std::make_shared<const drain::Plan>(drain::make_plan(input, priced));
  st.last_plan = plan;
  if (plan->drainable.empty()) st.carrying = false;
  st.last_plan_end = timers_.now();
  st.last_plan_took = std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(plan->summary.plan_millis));
  update_metrics(key, *plan);
  report_undrainable(*policy, st, *plan);

  const Time now = timers_.now();
  Duration requeue = spec.housekeeping_interval;
  std::optional<drain::Gate> blocked;
  const drain::GateDecision window = drain::disruption_window_gate(spec.disruption_windows, now);
  if (!plan->drainable.empty()) {
    const drain::NodePlan& head = plan->drainable.front();
    drain::PolicyStatusView view = policy->status;
    view.next_drain_after = later(st.next_drain_after, view.next_drain_after);
    blocked = drain::evaluate_gates(
        drain::GateInput{spec, drain::drain_delay_gate(view, now),
                         [&] {
                           std::vector<std::shared_ptr<const model::Node>> spot_nodes;
                           for (const auto& n : plan->spot_nodes)
                             if (auto obj = stores_.nodes.get(n)) spot_nodes.push_back(obj);
                           drain::SpotReach reach(std::move(spot_nodes));
                           std::vector<std::shared_ptr<const model::Pod>> pods;
                           // Expendable pods wait for room by design (a preempted placeholder).
                           for (const auto& p : stores_.pods.values())  // the same vector the plan's input copied
                             if (p->node_name.empty() && !drain::expendable(*p, spec)) pods.push_back(p);
                           return drain::unschedulable_pods_gate(pods, spec.unschedulable_pods_gate, reach);
                         },
                         [&] { return drain_sharing_spot_nodes(key, *plan); }, head.node,
                         drain::drains_per_hour_gate(recent_starts(*policy, st.drain_starts, now), spec.max_drains_per_hour, now), window});
    if (blocked && blocked->reopens_at)
      requeue =
          std::min<Duration>(requeue, std::chrono::duration_cast<Duration>(*blocked->reopens_at - now) + std::chrono::milliseconds(10));
    // Another policy's drain ends soon, and its end does not enqueue this one.
    if (blocked && blocked->reason == "SharedSpotNodes") requeue = std::min<Duration>(requeue, std::chrono::seconds(1));
    if (head.node != st.announced) {
      st.announced = head.node;
      std::string moves = fmt::format("{} fit on spot nodes", pods_text(head.moves.size()));
      if (spec.dry_run)
        events_.record(node_ref(head.node), telemetry::kWouldDrain,
                       fmt::format("Policy {} would drain {} now ({}{}); dryRun is true, so nothing is touched", key, head.node, moves,
                                   saving_text(head)),
                       policy_ref(*policy));
      else if (blocked)
        events_.record(node_ref(head.node), telemetry::kDrainPlanned,
                       fmt::format("Policy {} plans to drain {} next ({}), held back for now: {}", key, head.node, moves, blocked->message),
                       policy_ref(*policy));
    }
    set_gate_metrics(key, blocked);
    if (!blocked) {
      // The status says the drain started; the task's end enqueues the policy again.
      if (auto r = co_await start_drain(policy, state_ptr, head); !r) co_return r.error();
      co_return runtime::Action::requeue_after(spec.housekeeping_interval);
    }
  } else {
    st.announced.clear();
    set_gate_metrics(key, std::nullopt);
  }
  StatusInput in;
  in.plan = plan.get();
  in.blocked = blocked;
  if (!window.open) in.next_window_start = window.reopens_at;
  if (auto r = co_await write_status(*policy, st, std::move(in)); !r) co_return r.error();
  co_return runtime::Action::requeue_after(requeue);
}

}  // namespace spotshift::op
