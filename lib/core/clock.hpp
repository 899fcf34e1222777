#pragma once
// Time sources. Everything that reads the time takes a Clock so tests can use a ManualClock.

#include "core/time.hpp"

#include <functional>
#include <map>
#include <mutex>

namespace spotshift {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time now() const = 0;
  // Time that only moves forward, for measuring intervals (a lease's renew deadline): the wall
  // clock can be set back or jump ahead.
  virtual Duration monotonic() const = 0;
};

// The real wall clock.
class SystemClock final : public Clock {
 public:
  Time now() const override { return std::chrono::system_clock::now(); }
  Duration monotonic() const override { return std::chrono::steady_clock::now().time_since_epoch(); }
  static SystemClock& instance();
};

// A clock that moves only when told. Observers are told after every move, so timers built on
// this clock (see runtime/timer.hpp) fire deterministically. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Time start = Time{} + std::chrono::hours(24 * 365 * 55));
  Time now() const override;
  Duration monotonic() const override { return now().time_since_epoch(); }  // tests move it forward only
  void set(Time t);
  void advance(Duration d);

  using Observer = std::function<void(Time)>;
  int subscribe(Observer observer);
  void unsubscribe(int id);

 private:
  void notify(Time t);
  mutable std::mutex mutex_;
  Time now_;
  int next_id_ = 1;
  std::map<int, Observer> observers_;
};

}  // namespace spotshift
