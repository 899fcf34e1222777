#pragma once
// A token bucket rate limiter with reservations, like golang.org/x/time/rate: each call takes a
// token and says how long to wait until that token exists. Not thread-safe.

#include "core/time.hpp"

namespace spotshift {

class TokenBucket {
 public:
  // qps <= 0 means unlimited.
  TokenBucket(double qps, int burst);
  // Reserves one token at `now`; returns the wait before using it (zero when one is available).
  Duration reserve(Time now);
  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  double qps_;
  int burst_;
  double tokens_;
  Time last_{};
  bool started_ = false;
};

}  // namespace spotshift
