#include "drain/evictor.hpp"

#include "core/log.hpp"

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>

namespace spotshift::drain {

namespace {

const log::Logger logger("evictor");

std::string seconds_text(Duration d) { return format_go_duration(std::chrono::duration_cast<std::chrono::seconds>(d)); }

// A refusal that retrying cannot fix.
bool permanent(const Error& e) {
  if (e.kind != ErrorKind::kApi) return false;
  if (e.code == 429) return false;
  if (e.code == 500 && e.message.find("more than one PodDisruptionBudget") != std::string::npos) return true;
  if (e.code >= 500) return false;
  return true;  // 400, 401, 403, 422 ...
}

// The waits between checks that a pod is gone or a replacement scheduled: 100 ms at first,
// doubling up to the poll interval. A pod that goes at once (most do within a second) is seen
// within a tenth of a second; one that takes its whole grace period costs one check a poll
// interval.
class PollDelay {
 public:
  explicit PollDelay(Duration cap) : next_(std::min<Duration>(cap, std::chrono::milliseconds(100))), cap_(cap) {}
  Duration next() {
    Duration d = next_;
    next_ = std::min(cap_, next_ * 2);
    return d;
  }

 private:
  Duration next_, cap_;
};

}  // namespace

std::string_view to_string(DrainOutcome o) {
  switch (o) {
    case DrainOutcome::kSucceeded:
      return "Succeeded";
    case DrainOutcome::kAborted:
      return "Aborted";
    case DrainOutcome::kStale:
      return "Stale";
  }
  return "Aborted";
}

EvictorOptions evictor_options(const std::string& policy, const PolicySpec& spec) {
  EvictorOptions o;
  o.policy = policy;
  o.pod_eviction_timeout = spec.pod_eviction_timeout;
  o.max_graceful_termination = spec.max_graceful_termination;
  o.termination_headroom = spec.termination_headroom;
  o.drained_node_taint_ttl = spec.drained_node_taint_ttl;
  o.wait_for_replacement_ready = spec.wait_for_replacement_ready;
  o.replacement_ready_timeout = spec.replacement_ready_timeout;
  return o;
}

bool has_draining_taint(const model::Node& node, std::string_view policy) {
  for (const auto& t : node.taints)
    if (t.key.view() == kDrainingTaint && t.value.view() == policy) return true;
  return false;
}

Evictor::Evictor(std::shared_ptr<kube::Client> client, runtime::Timers& timers, EvictorOptions options, const PodStore& pods)
    : client_(std::move(client)), timers_(timers), options_(std::move(options)), pods_(pods), stop_signal_(timers.executor()) {}

void Evictor::stop(std::string why) {
  stopping_ = true;
  stop_reason_ = std::move(why);
  stop_signal_.notify();
}

Error Evictor::stopped() const { return Error::cancelled(fmt::format("the drain was stopped ({})", stop_reason_)); }

asio::awaitable<bool> Evictor::pause(Duration d) {
  if (stopping_) co_return false;
  bool ok = co_await timers_.sleep_until(timers_.now() + std::chrono::duration_cast<Time::duration>(d), &stop_signal_);
  co_return ok && !stopping_;
}

asio::awaitable<Result<bool>> Evictor::set_taint(std::string node, bool present) {
  co_return co_await drain::set_taint(*client_, timers_, options_, std::move(node), present, &stopping_);
}

asio::awaitable<Result<bool>> set_taint(kube::Client& client, runtime::Timers& timers, const EvictorOptions& options, std::string node,
                                        bool present, const bool* stopping) {
  Duration backoff = options.retry_base;
  Error last = Error::internal("no attempt made");
  for (int attempt = 0; attempt < options.taint_attempts; ++attempt) {
    if (attempt > 0) {
      // Removing the taint must not give up because we were told to stop: sleep regardless.
      if (present && stopping && *stopping) co_return Error::cancelled("stopped before the node was tainted");
      co_await timers.sleep(attempt == 1 ? Duration::zero() : backoff);
      backoff = std::min(backoff * 2, options.retry_cap);
    }
    auto body = co_await client.get(kube::Resource::nodes(), "", node);
    if (!body) {
      if (body.error().is_not_found()) co_return false;  // the node is gone: nothing to taint or clean
      last = body.error();
      if (!last.is_retryable()) co_return last.wrap(fmt::format("reading node {}", node));
      continue;
    }
    // The patch carries the node's taints whole (fields this code does not know included), so the
    // node is read into a document.
    model::JsonDocument obj;
    if (auto parsed = model::parse_json(*body, obj); !parsed) co_return parsed.error().wrap(fmt::format("reading node {}", node));
    std::string rv(model::json_string(obj, {"metadata", "resourceVersion"}));
    rapidjson::Document patch(rapidjson::kObjectType);
    auto& alloc = patch.GetAllocator();
    model::JsonValue taints(rapidjson::kArrayType);
    bool ours = false;
    std::string other_policy;
    if (const model::JsonValue* list = model::json_path(obj, {"spec", "taints"}); list && list->IsArray()) {
      for (const auto& taint : list->GetArray()) {
        if (model::json_string(taint, {"key"}) == kDrainingTaint) {
          if (model::json_string(taint, {"value"}) == options.policy) {
            ours = true;
            if (!present) continue;  // drop it
          } else {
            other_policy = std::string(model::json_string(taint, {"value"}));
          }
        }
        taints.PushBack(model::JsonValue(taint, alloc), alloc);
      }
    }
    if (present && ours) co_return false;
    if (!present && !ours) co_return false;
    if (present && !other_policy.empty())
      co_return Error::invalid(fmt::format("node {} is being drained by policy {}", node, other_policy));
    if (present) {
      model::JsonValue t(rapidjson::kObjectType);
      t.AddMember("key", model::JsonValue(kDrainingTaint.data(), static_cast<rapidjson::SizeType>(kDrainingTaint.size()), alloc), alloc);
      t.AddMember("value", model::JsonValue(options.policy.c_str(), static_cast<rapidjson::SizeType>(options.policy.size()), alloc), alloc);
      t.AddMember("effect", "NoSchedule", alloc);
      taints.PushBack(t, alloc);
    }
    model::JsonValue meta(rapidjson::kObjectType);
    meta.AddMember("resourceVersion", model::JsonValue(rv.c_str(), static_cast<rapidjson::SizeType>(rv.size()), alloc), alloc);
    model::JsonValue spec(rapidjson::kObjectType);
    spec.AddMember("taints", taints, alloc);
    patch.AddMember("metadata", meta, alloc);
    patch.AddMember("spec", spec, alloc);
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    patch.Accept(w);
    auto r = co_await client.patch(kube::Resource::nodes(), "", node, kube::PatchType::kMerge, std::string(buf.GetString(), buf.GetSize()));
    if (r) {
      logger.info(present ? "tainted node" : "removed taint", {{"node", node}, {"policy", options.policy}});
      co_return true;
    }
    last = r.error();
    if (last.is_not_found()) co_return false;
    if (last.is_conflict()) continue;  // someone else changed the node: read it again
    if (!last.is_retryable()) co_return last.wrap(fmt::format("patching node {}", node));
  }
  co_return last.wrap(
      fmt::format("{} the taint on node {} failed after {} attempts", present ? "setting" : "removing", node, options.taint_attempts));
}

// The pod's own grace period, capped by maxGracefulTermination, and never 0: a grace period of 0
// is a force deletion, which lets the pod's process run on while its replacement starts.
int64_t Evictor::grace_seconds(const model::Pod& pod) const {
  int64_t grace = std::chrono::duration_cast<std::chrono::seconds>(options_.max_graceful_termination).count();
  grace = std::min<int64_t>(grace, pod.termination_grace_period_seconds.value_or(30));
  return std::max<int64_t>(grace, 1);
}

asio::awaitable<Result<bool>> Evictor::evict_one(const PodMove& move, DrainObserver* observer) {
  const model::Pod& pod = *move.pod;
  const Time deadline = timers_.now() + std::chrono::duration_cast<Time::duration>(options_.pod_eviction_timeout);
  const int64_t grace = grace_seconds(pod);
  Duration backoff = options_.retry_base;
  while (true) {
    if (stopping_) co_return stopped();
    if (still_movable_)
      if (auto m = still_movable_(pod); !m)
        co_return Error::invalid(fmt::format("pod {} may no longer be moved: {}", pod.key(), m.error().message));
    kube::DeleteOptions o;
    o.grace_period_seconds = grace;
    o.uid_precondition = pod.meta.uid;  // never evict a newer pod that took the same name
    auto r = co_await client_->evict(pod.meta.namespace_.view(), pod.name(), o);
    if (r) co_return true;
    const Error& e = r.error();
    if (e.is_not_found()) co_return false;  // already gone
    if (e.code == 409) co_return false;     // the UID precondition failed: this pod is gone, a new one has its name
    if (permanent(e)) co_return Error(e).wrap(fmt::format("the Eviction API refused pod {}", pod.key()));
    if (observer) observer->eviction_refused(move, e);
    Time now = timers_.now();
    if (now >= deadline)
      co_return Error::timeout(fmt::format("pod {} could not be evicted within podEvictionTimeout ({}): {}", pod.key(),
                                           seconds_text(options_.pod_eviction_timeout), e.message));
    Duration wait = e.retry_after_seconds ? Duration(std::chrono::seconds(*e.retry_after_seconds)) : backoff;
    if (!e.retry_after_seconds) backoff = std::min(backoff * 2, options_.retry_cap);
    wait = std::min<Duration>(wait, std::chrono::duration_cast<Duration>(deadline - now));
    logger.info("eviction refused, retrying", {{"pod", pod.key()}, {"code", e.code}, {"wait", wait}, {"message", e.message}});
    if (!co_await pause(wait)) co_return stopped();
  }
}

asio::awaitable<Result<void>> Evictor::wait_gone(const PodMove& move) {
  const model::Pod& pod = *move.pod;
  // The grace period given, then the kill and the kubelet's and API server's latency.
  const Duration limit = std::chrono::seconds(grace_seconds(pod)) + options_.termination_headroom + options_.poll_interval;
  const Time deadline = timers_.now() + std::chrono::duration_cast<Time::duration>(limit);
  PollDelay delay(options_.poll_interval);
  while (true) {
    auto r = co_await client_->get<model::Pod>(pod.meta.namespace_.view(), pod.name());
    if (!r && r.error().is_not_found()) co_return ok();
    if (r && r->meta.uid != pod.meta.uid) co_return ok();  // replaced by a new pod with the same name
    if (timers_.now() >= deadline)
      co_return Error::timeout(fmt::format("pod {} did not terminate within its grace period ({}s) and terminationHeadroom ({})", pod.key(),
                                           grace_seconds(pod), seconds_text(options_.termination_headroom)));
    // A stop does not cut this wait short: the eviction was accepted, so see it through or time out.
    co_await timers_.sleep(delay.next());
    if (timers_.stopped()) co_return Error::cancelled("shutting down");
  }
}

std::map<std::string, std::set<std::string>> Evictor::controller_pod_uids(const std::vector<PodMove>& moves) const {
  std::map<std::string, std::set<std::string>> out;  // controller uid -> pod uids
  std::set<std::string, std::less<>> namespaces;
  for (const auto& m : moves)
    if (m.pod->controller) {
      namespaces.insert(std::string(m.pod->meta.namespace_.view()));
      out[m.pod->controller->uid.str()];
    }
  pods_.for_each([&](const PodPtr& p) {
    if (p->controller && namespaces.count(p->meta.namespace_.view()))
      if (auto it = out.find(p->controller->uid.str()); it != out.end()) it->second.insert(p->meta.uid);
  });
  return out;
}

std::map<std::string, std::vector<PodPtr>> Evictor::replacements(const std::vector<PodMove>& evicted,
                                                                 const std::map<std::string, std::set<std::string>>& known_uids) const {
  std::map<std::string, std::vector<PodPtr>> out;  // controller uid -> new pods
  std::set<std::string, std::less<>> namespaces;
  for (const auto& m : evicted)
    if (m.pod->controller) {
      out[m.pod->controller->uid.str()];
      namespaces.insert(std::string(m.pod->meta.namespace_.view()));
    }
  if (out.empty()) return out;
  pods_.for_each([&](const PodPtr& p) {
    if (!p->controller || p->terminating() || !namespaces.count(p->meta.namespace_.view())) return;
    std::string owner = p->controller->uid.str();
    auto it = out.find(owner);
    if (it == out.end()) return;
    if (auto known = known_uids.find(owner); known != known_uids.end() && known->second.count(p->meta.uid)) return;
    it->second.push_back(p);
  });
  return out;
}

asio::awaitable<Result<void>> Evictor::wait_pending_replacements(const std::vector<PodMove>& evicted,
                                                                 const std::map<std::string, std::set<std::string>>& known_uids) {
  const Time deadline = timers_.now() + std::chrono::duration_cast<Time::duration>(options_.replacement_timeout);
  PollDelay delay(options_.poll_interval);
  while (true) {
    std::string pending;
    for (const auto& [uid, pods] : replacements(evicted, known_uids))
      for (const auto& p : pods)
        if (pending.empty() && p->node_name.empty() && !p->terminal()) pending = p->key();
    if (pending.empty()) co_return ok();
    if (timers_.now() >= deadline)
      co_return Error::timeout(fmt::format("replacement pod {} was still Pending {} after its predecessor's eviction", pending,
                                           seconds_text(options_.replacement_timeout)));
    if (!co_await pause(delay.next())) co_return stopped();
  }
}

asio::awaitable<Result<void>> Evictor::wait_ready_replacement(const PodMove& move, const std::vector<PodMove>& evicted,
                                                              const std::map<std::string, std::set<std::string>>& known_uids) {
  // A pod no controller owns gets no replacement (deleteNonReplicatedPods warned of it).
  if (!move.pod->controller || !known_uids.count(move.pod->controller->uid.str())) co_return ok();
  const std::string uid = move.pod->controller->uid.str();
  const auto lost = std::count_if(evicted.begin(), evicted.end(),
                                  [&](const PodMove& m) { return m.pod->controller && m.pod->controller->uid.str() == uid; });
  const Time deadline = timers_.now() + std::chrono::duration_cast<Time::duration>(options_.replacement_ready_timeout);
  PollDelay delay(options_.poll_interval);
  while (true) {
    auto found = replacements(evicted, known_uids);
    long ready = 0;
    for (const auto& p : found[uid])
      if (p->ready && !p->node_name.empty() && !p->terminating() && !p->terminal()) ++ready;
    if (ready >= lost) co_return ok();
    if (timers_.now() >= deadline)
      co_return Error::timeout(fmt::format(
          "the replacement of pod {} ({} {}) was not Ready {} after its eviction (waitForReplacementReady)", move.pod->key(),
          move.pod->controller->kind.view(), move.pod->controller->name.view(), seconds_text(options_.replacement_ready_timeout)));
    if (!co_await pause(delay.next())) co_return stopped();
  }
}

asio::awaitable<void> Evictor::check_replacements(const NodePlan& plan, const std::vector<PodMove>& evicted,
                                                  const std::map<std::string, std::set<std::string>>& known_uids, const IsSpot& is_spot,
                                                  DrainObserver* observer, DrainReport& report) {
  // Per controller: how many pods were evicted (each should get one replacement).
  struct Expect {
    const PodMove* example = nullptr;
    int count = 0;
  };
  std::map<std::string, Expect> expected;
  for (const auto& m : evicted)
    if (m.pod->controller && known_uids.count(m.pod->controller->uid.str())) {
      auto& e = expected[m.pod->controller->uid.str()];
      e.example = &m;
      ++e.count;
    }
  if (expected.empty()) co_return;
  const Time deadline = timers_.now() + std::chrono::duration_cast<Time::duration>(options_.replacement_timeout);
  std::map<std::string, std::vector<PodPtr>> found;  // controller uid -> new pods
  PollDelay delay(options_.poll_interval);
  while (true) {
    found = replacements(evicted, known_uids);
    bool all_bound = true;
    for (const auto& [uid, e] : expected) {
      int bound = 0;
      for (const auto& p : found[uid]) bound += p->node_name.empty() ? 0 : 1;
      all_bound = all_bound && bound >= e.count;
    }
    if (all_bound || timers_.now() >= deadline || stopping_) break;
    if (!co_await pause(delay.next())) break;
  }
  auto placed = [&](const PodMove& example, std::string_view placement) {
    ++report.replacements[std::string(placement)];
    if (observer) observer->replacement_placed(example, placement);
  };
  for (const auto& [uid, e] : expected) {
    auto& pods = found[uid];
    std::sort(pods.begin(), pods.end(), [](const PodPtr& a, const PodPtr& b) { return a->name() < b->name(); });
    // The spot nodes the plan named for this controller's evicted pods: a replacement on one of
    // them is where the plan said (replicas are interchangeable).
    std::multiset<std::string, std::less<>> targets;
    for (const auto& m : evicted)
      if (m.pod->controller && m.pod->controller->uid.str() == uid) targets.insert(m.target);
    int reported = 0;
    const auto& owner = *e.example->pod->controller;
    for (const auto& pod : pods) {
      const model::Pod& p = *pod;
      if (reported >= e.count) break;
      ++reported;
      if (!p.node_name.empty() && is_spot(p.node_name.view())) {
        auto t = targets.find(p.node_name.view());
        placed(*e.example, t != targets.end() ? "planned" : "other_spot");
        if (t != targets.end()) targets.erase(t);
      } else {
        placed(*e.example, p.node_name.empty() ? "pending" : "not_spot");
      }
      if (p.node_name.empty()) {
        std::string msg = fmt::format("replacement pod {} ({} {}) was still Pending {} after the drain of {}", p.key(), owner.kind.view(),
                                      owner.name.view(), seconds_text(options_.replacement_timeout), plan.node);
        report.replacements_not_on_spot.push_back(msg);
        if (observer) observer->replacement_not_on_spot(*e.example, msg);
      } else if (!is_spot(p.node_name.view())) {
        std::string msg = fmt::format("replacement pod {} ({} {}) was scheduled on {}, which is not a spot node", p.key(),
                                      owner.kind.view(), owner.name.view(), p.node_name.view());
        report.replacements_not_on_spot.push_back(msg);
        report.landed_off_spot[std::string(p.node_name.view())].push_back(p.key());
        if (observer) observer->replacement_not_on_spot(*e.example, msg);
      }
    }
    for (; reported < e.count; ++reported) {
      placed(*e.example, "missing");
      std::string msg = fmt::format("no replacement for a pod of {} {} appeared within {} after the drain of {}", owner.kind.view(),
                                    owner.name.view(), seconds_text(options_.replacement_timeout), plan.node);
      report.replacements_not_on_spot.push_back(msg);
      if (observer) observer->replacement_not_on_spot(*e.example, msg);
    }
  }
}

asio::awaitable<void> Evictor::untaint(DrainReport& report) {
  auto r = co_await set_taint(report.node, false);
  report.taint_removed = r.has_value();
  if (!r)
    logger.error("could not remove the draining taint; it is retried at the next reconcile", {{"node", report.node}, {"error", r.error()}});
}

void Evictor::steer(const std::string& node, const PodMove& move, const std::map<std::string, std::string, std::less<>>& targets) {
  const model::Pod& pod = *move.pod;
  if (!steering_ || !pod.controller) return;
  auto t = targets.find(pod.meta.uid);
  const std::string& target = t != targets.end() ? t->second : move.target;
  if (target.empty()) return;
  // The longest the evictor may wait for this pod's replacement: the eviction's retries, the
  // pod's termination, then the replacement's creation.
  const Duration ttl = options_.pod_eviction_timeout + std::chrono::seconds(grace_seconds(pod)) + options_.termination_headroom +
                       options_.replacement_timeout;
  steering_->add(Steer{std::string(pod.meta.namespace_.view()), std::string(pod.controller->uid.view()),
                       std::string(pod.controller->kind.view()), pod.meta.name, target, node, options_.policy,
                       timers_.now() + std::chrono::duration_cast<Time::duration>(ttl)});
}

asio::awaitable<DrainReport> Evictor::drain(NodePlan plan, Recheck recheck, IsSpot is_spot, DrainObserver* observer,
                                            StillMovable still_movable) {
  DrainReport report;
  still_movable_ = std::move(still_movable);
  report.node = plan.node;
  report.started = timers_.now();
  stopping_ = false;
  draining_ = true;
  auto finish = [&](DrainOutcome outcome, std::string reason) {
    report.outcome = outcome;
    report.reason = std::move(reason);
    report.finished = timers_.now();
    draining_ = false;
    still_movable_ = {};
    if (steering_) steering_->drop_drain(plan.node);
    logger.info("drain finished", {{"node", plan.node},
                                   {"outcome", to_string(outcome)},
                                   {"evicted", static_cast<int64_t>(report.evicted.size())},
                                   {"planned", static_cast<int64_t>(report.planned)},
                                   {"reason", report.reason}});
  };

  auto fresh = recheck();
  if (!fresh) {
    report.planned = report.remaining = static_cast<int>(plan.moves.size());
    finish(DrainOutcome::kStale, fmt::format("the plan no longer holds: {}", fresh.error().message));
    co_return report;
  }
  plan = std::move(*fresh);
  report.planned = report.remaining = static_cast<int>(plan.moves.size());
  auto known_uids = controller_pod_uids(plan.moves);

  auto tainted = co_await set_taint(plan.node, true);
  if (!tainted) {
    co_await untaint(report);
    finish(DrainOutcome::kAborted, fmt::format("could not taint the node: {}", tainted.error().message));
    co_return report;
  }
  // A pod may have landed between the plan and the taint: check once more, now that none can.
  fresh = recheck();
  if (!fresh) {
    co_await untaint(report);
    finish(DrainOutcome::kStale, fmt::format("the plan no longer held after tainting: {}", fresh.error().message));
    co_return report;
  }
  plan = std::move(*fresh);
  report.planned = report.remaining = static_cast<int>(plan.moves.size());

  std::vector<PodMove> evicted;
  std::optional<std::string> failure;
  // The spot node the latest plan chose for each pod still to evict, by uid (steered to, and
  // what a replacement's placement is compared with).
  std::map<std::string, std::string, std::less<>> targets;
  auto note_targets = [&](const NodePlan& p) {
    for (const auto& m : p.moves) targets[m.pod->meta.uid] = m.target;
  };
  note_targets(plan);
  for (const auto& move : plan.moves) {
    if (stopping_) {
      failure = stopped().message;
      break;
    }
    steer(plan.node, move, targets);
    auto r = co_await evict_one(move, observer);
    if ((!r || !*r) && steering_) steering_->withdraw(move.pod->meta.namespace_.view(), move.pod->meta.name);
    if (!r) {
      failure = r.error().message;
      break;
    }
    if (!*r) {
      // Gone before its eviction: nothing was evicted, and no replacement is owed to this drain.
      report.already_gone.push_back(move.pod->key());
      --report.remaining;
      if (observer) observer->pod_already_gone(move);
      continue;
    }
    // Where the plan put it when it was evicted (the latest re-plan's node; the one steered to).
    evicted.push_back(move);
    if (auto t = targets.find(move.pod->meta.uid); t != targets.end()) evicted.back().target = t->second;
    report.evicted.push_back(move.pod->key());
    --report.remaining;
    if (observer) observer->pod_evicted(plan, move, static_cast<int>(evicted.size()));
    auto gone = co_await wait_gone(move);
    if (!gone) {
      failure = gone.error().message;
      break;
    }
    if (options_.wait_for_replacement_ready) {
      if (auto ready = co_await wait_ready_replacement(move, evicted, known_uids); !ready) {
        failure = ready.error().message;
        break;
      }
    }
    if (report.remaining == 0) continue;
    // A replacement still Pending will take spot room the rest of the node needs: evict the
    // next pod once it is bound.
    if (auto bound = co_await wait_pending_replacements(evicted, known_uids); !bound) {
      failure = bound.error().message;
      break;
    }
    // The cluster moves on while a drain runs (spot nodes can go away, or fill up): evict the
    // next pod only while the rest of the node still fits on spot nodes.
    auto again = recheck();
    if (!again) {
      failure = fmt::format("the plan for the rest of the node no longer holds: {}", again.error().message);
      break;
    }
    note_targets(*again);
  }
  if (failure) {
    co_await untaint(report);
    finish(DrainOutcome::kAborted, *failure);
    co_return report;
  }
  // The taint stays until every replacement is bound (or the replacement timeout passes): a
  // replacement scheduled after the untaint could land on the node just emptied, which the
  // scheduler's LeastAllocated scores best. Then, optionally, a while longer, so new pods do not
  // refill a node the cluster autoscaler is about to remove.
  co_await check_replacements(plan, evicted, known_uids, is_spot, observer, report);
  if (options_.drained_node_taint_ttl > Duration::zero()) co_await pause(options_.drained_node_taint_ttl);
  co_await untaint(report);
  finish(DrainOutcome::kSucceeded, "");
  co_return report;
}

asio::awaitable<TaintCleanup> remove_stale_taints(kube::Client& client, runtime::Timers& timers, const EvictorOptions& options,
                                                  std::vector<std::string> nodes) {
  TaintCleanup out;
  for (auto& node : nodes) {
    auto r = co_await set_taint(client, timers, options, node, false);
    if (!r) out.failed.emplace_back(std::move(node), r.error());
    else if (*r) out.removed.push_back(std::move(node));
  }
  co_return out;
}

}  // namespace spotshift::drain
