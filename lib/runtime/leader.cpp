#include "runtime/leader.hpp"

#include "core/log.hpp"
#include "runtime/spawn.hpp"

#include <fmt/format.h>
#include <unistd.h>

namespace spotshift::runtime {

namespace {
const log::Logger logger("leader-election");
}

Result<void> LeaderElectionOptions::validate() const {
  if (namespace_.empty() || name.empty()) return Error::invalid("leader election needs a lease namespace and name");
  if (identity.empty()) return Error::invalid("leader election needs an identity");
  if (retry_period <= Duration::zero()) return Error::invalid("leader election retry period must be positive");
  if (!(lease_duration > renew_deadline))
    return Error::invalid(fmt::format("lease duration ({}) must be longer than the renew deadline ({})", format_go_duration(lease_duration),
                                      format_go_duration(renew_deadline)));
  if (!(renew_deadline > retry_period * 12 / 10))
    return Error::invalid(fmt::format("renew deadline ({}) must be longer than 1.2 times the retry period ({})",
                                      format_go_duration(renew_deadline), format_go_duration(retry_period)));
  return {};
}

std::string default_identity() {
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{}_{:016x}", host, rng());
}

LeaderElector::LeaderElector(std::shared_ptr<kube::Client> client, Timers& timers, LeaderElectionOptions options)
    : client_(std::move(client)),
      timers_(timers),
      options_(std::move(options)),
      stop_signal_(timers.executor()),
      attempt_signal_(timers.executor()) {}

Duration LeaderElector::jittered(Duration d) {
  std::uniform_real_distribution<double> j(1.0, 1.2);
  return Duration(static_cast<int64_t>(static_cast<double>(d.count()) * j(rng_)));
}

void LeaderElector::stop() {
  stopped_ = true;
  stop_signal_.notify();
}

asio::awaitable<bool> LeaderElector::try_acquire_or_renew() {
  Time now = timers_.now();
  const auto& ns = options_.namespace_;
  // Fast path: we lead and our view is fresh, so renew the cached lease directly.
  if (leading_ && have_observed_ && observed_.spec.holder_identity == options_.identity) {
    model::Lease renewed = observed_;
    renewed.spec.renew_time = now;
    renewed.spec.lease_duration_seconds =
        static_cast<int32_t>(std::chrono::duration_cast<std::chrono::seconds>(options_.lease_duration).count());
    auto r = co_await client_->update(kube::Resource::leases(), ns, options_.name, model::encode_lease(renewed));
    if (r) {
      if (auto l = model::decode_lease(*r)) {
        observed_ = std::move(*l);
        observed_at_ = now;
        co_return true;
      }
    }
    logger.debug(1, "fast renewal failed; reading the lease", {{"error", r ? std::string("decode") : r.error().to_string()}});
  }
  auto current = co_await client_->get<model::Lease>(ns, options_.name);
  if (!current) {
    if (!current.error().is_not_found()) {
      logger.warn("cannot read the lease", {{"lease", ns + "/" + options_.name}, {"error", current.error()}});
      co_return false;
    }
    model::Lease fresh;
    fresh.meta.name = options_.name;
    fresh.meta.namespace_ = model::InternedString(ns);
    fresh.spec.holder_identity = options_.identity;
    fresh.spec.lease_duration_seconds =
        static_cast<int32_t>(std::chrono::duration_cast<std::chrono::seconds>(options_.lease_duration).count());
    fresh.spec.acquire_time = now;
    fresh.spec.renew_time = now;
    fresh.spec.lease_transitions = 0;
    auto created = co_await client_->create(kube::Resource::leases(), ns, model::encode_lease(fresh));
    if (!created) {
      if (!created.error().is_already_exists()) logger.warn("cannot create the lease", {{"error", created.error()}});
      co_return false;
    }
    if (auto l = model::decode_lease(*created)) {
      observed_ = std::move(*l);
      observed_at_ = now;
      have_observed_ = true;
    }
    co_return true;
  }
  if (!have_observed_ || !(current->spec == observed_.spec)) {
    observed_at_ = now;  // expiry counts from when we saw it change
    have_observed_ = true;
  }
  observed_ = *current;
  const auto& holder = current->spec.holder_identity;
  Duration held_for = std::chrono::seconds(current->spec.lease_duration_seconds.value_or(0));
  if (!holder.empty() && holder != options_.identity && observed_at_ + held_for > now) co_return false;

  model::Lease next = *current;
  if (holder != options_.identity) {
    next.spec.acquire_time = now;
    next.spec.lease_transitions = current->spec.lease_transitions + 1;
  }
  next.spec.holder_identity = options_.identity;
  next.spec.lease_duration_seconds =
      static_cast<int32_t>(std::chrono::duration_cast<std::chrono::seconds>(options_.lease_duration).count());
  next.spec.renew_time = now;
  auto updated = co_await client_->update(kube::Resource::leases(), ns, options_.name, model::encode_lease(next));
  if (!updated) {
    if (!updated.error().is_conflict()) logger.warn("cannot update the lease", {{"error", updated.error()}});
    co_return false;  // on 409 someone else won this round
  }
  if (auto l = model::decode_lease(*updated)) {
    observed_ = std::move(*l);
    observed_at_ = now;
  }
  co_return true;
}

asio::awaitable<void> LeaderElector::release() {
  model::Lease released = observed_;
  Time now = timers_.now();
  released.spec.holder_identity.clear();
  released.spec.lease_duration_seconds = 1;
  released.spec.acquire_time = now;
  released.spec.renew_time = now;
  auto r = co_await client_->update(kube::Resource::leases(), options_.namespace_, options_.name, model::encode_lease(released));
  if (r) logger.info("released the lease", {{"lease", options_.namespace_ + "/" + options_.name}});
  else logger.warn("could not release the lease", {{"error", r.error()}});
}

asio::awaitable<void> LeaderElector::run(std::function<void()> on_started, std::function<void()> on_stopped) {
  logger.info("campaigning", {{"lease", options_.namespace_ + "/" + options_.name}, {"identity", options_.identity}});
  while (!stopped_) {
    if (co_await try_acquire_or_renew()) break;
    co_await timers_.sleep_until(timers_.now() + jittered(options_.retry_period), &stop_signal_);
  }
  if (stopped_) co_return;
  leading_ = true;
  logger.info("became the leader", {{"identity", options_.identity}, {"transitions", observed_.spec.lease_transitions}});
  if (on_started) on_started();
  const Clock& clock = timers_.clock();
  Duration renewed_at = clock.monotonic();  // when the last successful renewal was sent
  auto lose = [&](bool taken) {
    leading_ = false;
    logger.error(taken ? "lost the lease: another instance holds it" : "lost the lease: could not renew it within the renew deadline",
                 {{"renewDeadline", options_.renew_deadline}, {"holder", observed_.spec.holder_identity}});
    if (on_stopped) on_stopped();
  };
  while (!stopped_) {
    co_await timers_.sleep_until(timers_.now() + options_.retry_period, &stop_signal_);
    if (stopped_) break;
    // The attempt runs on its own, so that the deadline holds however long the API server takes
    // to answer; its result is read only if it comes in time.
    struct Attempt {
      bool done = false;
      bool renewed = false;
    };
    auto attempt = std::make_shared<Attempt>();
    const Duration sent = clock.monotonic();
    spawn(
        timers_.executor(),
        [](LeaderElector* self, std::shared_ptr<Attempt> a) -> asio::awaitable<void> {
          a->renewed = co_await self->try_acquire_or_renew();
          a->done = true;
          self->attempt_signal_.notify();
        }(this, attempt),
        "lease renewal");
    while (!attempt->done) {
      const Duration left = renewed_at + options_.renew_deadline - clock.monotonic();
      if (left <= Duration::zero()) {
        lose(false);
        co_return;
      }
      if (!co_await timers_.sleep_until(timers_.now() + left, &attempt_signal_)) break;  // the timers stopped: shutting down
    }
    if (!attempt->done) break;
    if (attempt->renewed) {
      renewed_at = sent;
      continue;
    }
    bool taken = !observed_.spec.holder_identity.empty() && observed_.spec.holder_identity != options_.identity;
    if (taken || clock.monotonic() - renewed_at >= options_.renew_deadline) {
      lose(taken);
      co_return;
    }
  }
  bool was_leading = leading_;
  leading_ = false;
  if (on_stopped) on_stopped();
  if (was_leading && options_.release_on_stop) co_await release();
}

}  // namespace spotshift::runtime
