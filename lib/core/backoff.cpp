#include "core/backoff.hpp"

#include <algorithm>
#include <cmath>

namespace spotshift {

Backoff::Backoff(Options options, uint64_t seed) : options_(options), rng_(seed) {}

Duration Backoff::next(Time now) {
  if (failures_ > 0 && now - last_failure_ >= options_.reset_after) failures_ = 0;
  last_failure_ = now;
  double base = static_cast<double>(options_.initial.count()) * std::pow(options_.factor, failures_);
  double cap = static_cast<double>(options_.max.count());
  base = std::min(base, cap);
  if (failures_ < 64) ++failures_;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  double jitter = std::clamp(options_.jitter, 0.0, 1.0);
  double delay = base * (1.0 - jitter * unit(rng_));
  return Duration{static_cast<Duration::rep>(delay)};
}

void Backoff::reset() { failures_ = 0; }

}  // namespace spotshift
