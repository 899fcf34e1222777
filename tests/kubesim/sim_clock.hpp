#pragma once
// The simulator's clock: real time multiplied by a scale factor, plus manual jumps, so a
// ten-minute drain delay can pass in seconds. Thread-safe.

#include "core/clock.hpp"

#include <mutex>

namespace spotshift::kubesim {

class SimClock final : public Clock {
 public:
  explicit SimClock(double scale = 1.0);
  Time now() const override;
  // Simulated time never goes back: scale changes and jumps only move it forward.
  Duration monotonic() const override { return now().time_since_epoch(); }
  double scale() const;
  void set_scale(double scale);
  // Jumps simulated time forward (clock skew and lease tests).
  void advance(Duration d);
  // How long to wait in real time until simulated time reaches t (zero if it has).
  std::chrono::nanoseconds real_until(Time t) const;
  // The simulated length of a real duration, and back.
  Duration to_sim(std::chrono::nanoseconds real) const;

 private:
  Time now_locked() const;
  mutable std::mutex mutex_;
  double scale_;
  Time sim_base_;
  std::chrono::steady_clock::time_point real_base_;
};

}  // namespace spotshift::kubesim
