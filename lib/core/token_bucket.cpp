#include "core/token_bucket.hpp"

#include <algorithm>

namespace spotshift {

TokenBucket::TokenBucket(double qps, int burst) : qps_(qps), burst_(std::max(1, burst)), tokens_(burst_) {}

Duration TokenBucket::reserve(Time now) {
  if (qps_ <= 0) return Duration::zero();
  if (!started_) {
    started_ = true;
    last_ = now;
  }
  if (now > last_) {
    double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min<double>(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  tokens_ -= 1.0;  // may go negative: a reservation of a future token
  if (tokens_ >= 0) return Duration::zero();
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(-tokens_ / qps_));
}

}  // namespace spotshift
