#pragma once
// Sleeping on a Clock: real time through steady timers, or a ManualClock that tests advance.
// Every wait is cancellable and ends early when its Timers is stopped.

#include "core/clock.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <set>

namespace spotshift::runtime {

namespace asio = boost::asio;

class Signal;

class Timers {
 public:
  // Sleeps on clock: for a ManualClock, waits end when the clock is advanced past them.
  Timers(asio::any_io_executor executor, const Clock& clock);
  ~Timers();
  Timers(const Timers&) = delete;
  Timers& operator=(const Timers&) = delete;

  const Clock& clock() const { return clock_; }
  asio::any_io_executor executor() const { return executor_; }
  Time now() const { return clock_.now(); }

  // Returns false when stopped first, true otherwise: when the time came, or when `interrupt`
  // was notified (the caller re-checks what it waits for).
  asio::awaitable<bool> sleep_until(Time t, Signal* interrupt = nullptr);
  asio::awaitable<bool> sleep(Duration d) { return sleep_until(clock_.now() + d); }
  // Ends every wait and makes later ones return false at once.
  void stop();
  bool stopped() const { return state_->stopped; }

 private:
  struct State {
    bool stopped = false;
    std::set<asio::steady_timer*> waiting;
    void wake_all() {
      for (auto* t : waiting) t->cancel();
    }
  };
  asio::any_io_executor executor_;
  const Clock& clock_;
  ManualClock* manual_ = nullptr;
  int subscription_ = 0;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// A broadcast wake-up: waiters sleep until notify() (or a deadline).
class Signal {
 public:
  explicit Signal(asio::any_io_executor executor) : executor_(std::move(executor)) {}
  void notify();
  uint64_t generation() const { return generation_; }
  // Waits for the next notify(), at most `limit` of real time.
  asio::awaitable<void> wait(std::chrono::steady_clock::duration limit = std::chrono::hours(24));

 private:
  friend class Timers;
  asio::any_io_executor executor_;
  std::set<asio::steady_timer*> waiters_;
  uint64_t generation_ = 0;
};

}  // namespace spotshift::runtime
