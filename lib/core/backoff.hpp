#pragma once
// Exponential backoff with jitter, reset after a healthy period.

#include "core/time.hpp"

#include <cstdint>
#include <random>

namespace spotshift {

class Backoff {
 public:
  struct Options {
    Duration initial = std::chrono::milliseconds(800);
    Duration max = std::chrono::seconds(30);
    double factor = 2.0;
    // The fraction of each delay that is random: 1.0 is full jitter (uniform in [0, d]),
    // 0.0 is none.
    double jitter = 1.0;
    // A gap this long since the last failure means the peer is healthy again: start over.
    Duration reset_after = std::chrono::minutes(2);
  };

  explicit Backoff(Options options, uint64_t seed = std::random_device{}());

  // The delay before the next attempt, given the time of this failure.
  Duration next(Time now);
  void reset();
  int failures() const { return failures_; }
  const Options& options() const { return options_; }

 private:
  Options options_;
  std::mt19937_64 rng_;
  int failures_ = 0;
  Time last_failure_{};
};

}  // namespace spotshift
