#pragma once
// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection package does
// it (docs/runtime.md).
//
// Every retry period a candidate reads the lease; it takes it when nobody holds it or the
// holder's lease expired. Expiry is judged by when this process last saw the lease change plus
// its duration, never by comparing the holder's timestamps with our clock. Writes carry the
// resourceVersion read, so two candidates cannot both win. The leader renews every retry
// period; if it cannot renew within the renew deadline (shorter than the lease duration) it
// stops leading, so it has stopped acting before anyone else may take over. The deadline is
// measured on the clock's monotonic time from the start of the last successful renewal, and a
// renewal attempt still pending then (a slow or throttled API server) does not hold it off: the
// leader stops at the deadline and the attempt's answer no longer counts.

#include "kube/client.hpp"
#include "model/lease.hpp"
#include "runtime/timers.hpp"

#include <functional>
#include <optional>
#include <random>
#include <string>

namespace spotshift::runtime {

struct LeaderElectionOptions {
  std::string namespace_;
  std::string name;
  std::string identity;  // hostname_uuid
  Duration lease_duration = std::chrono::seconds(15);
  Duration renew_deadline = std::chrono::seconds(10);
  Duration retry_period = std::chrono::seconds(2);
  bool release_on_stop = true;

  // LeaseDuration > RenewDeadline > 1.2 x RetryPeriod, all positive.
  Result<void> validate() const;
};

std::string default_identity();

class LeaderElector {
 public:
  LeaderElector(std::shared_ptr<kube::Client> client, Timers& timers, LeaderElectionOptions options);

  // Campaigns until it leads, calls on_started, renews, and calls on_stopped once it has lost
  // the lease (or was stopped). Returns then.
  asio::awaitable<void> run(std::function<void()> on_started, std::function<void()> on_stopped);
  // Stops campaigning or leading; run() releases the lease (if configured) and returns.
  void stop();
  bool leading() const { return leading_; }
  const std::string& holder() const { return observed_.spec.holder_identity; }
  const LeaderElectionOptions& options() const { return options_; }
  uint64_t transitions_seen() const { return static_cast<uint64_t>(observed_.spec.lease_transitions); }

 private:
  asio::awaitable<bool> try_acquire_or_renew();
  asio::awaitable<void> release();
  Duration jittered(Duration d);

  std::shared_ptr<kube::Client> client_;
  Timers& timers_;
  LeaderElectionOptions options_;
  model::Lease observed_;
  Time observed_at_{};
  bool have_observed_ = false;
  bool leading_ = false;
  bool stopped_ = false;
  Signal stop_signal_;
  Signal attempt_signal_;  // a renewal attempt finished
  std::mt19937 rng_{std::random_device{}()};
};

}  // namespace spotshift::runtime
