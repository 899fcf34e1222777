#include "runtime/timers.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace spotshift::runtime {

Timers::Timers(asio::any_io_executor executor, const Clock& clock)
    : executor_(std::move(executor)), clock_(clock), manual_(dynamic_cast<ManualClock*>(const_cast<Clock*>(&clock))) {
  if (manual_) {
    // Advances may come from another thread: hop onto our executor before touching timers.
    std::weak_ptr<State> weak = state_;
    auto ex = executor_;
    subscription_ = manual_->subscribe([weak, ex](Time) {
      asio::post(ex, [weak] {
        if (auto s = weak.lock()) s->wake_all();
      });
    });
  }
}

Timers::~Timers() {
  if (manual_) manual_->unsubscribe(subscription_);
}

void Timers::stop() {
  state_->stopped = true;
  state_->wake_all();
}

asio::awaitable<bool> Timers::sleep_until(Time t, Signal* interrupt) {
  auto state = state_;
  asio::steady_timer timer(executor_);
  state->waiting.insert(&timer);
  uint64_t generation = interrupt ? interrupt->generation_ : 0;
  if (interrupt) interrupt->waiters_.insert(&timer);
  struct Unregister {
    std::set<asio::steady_timer*>& s;
    asio::steady_timer* t;
    Signal* interrupt;
    ~Unregister() {
      s.erase(t);
      if (interrupt) interrupt->waiters_.erase(t);
    }
  } guard{state->waiting, &timer, interrupt};
  while (!state->stopped) {
    Time now = clock_.now();
    if (now >= t) co_return true;
    if (interrupt && interrupt->generation_ != generation) co_return true;
    if (manual_) timer.expires_at(asio::steady_timer::time_point::max());
    else timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(t - now));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    // Cancelled from outside (a timeout around the caller): give up the wait.
    if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) co_return false;
  }
  co_return false;
}

void Signal::notify() {
  ++generation_;
  for (auto* t : waiters_) t->cancel();
}

asio::awaitable<void> Signal::wait(std::chrono::steady_clock::duration limit) {
  asio::steady_timer timer(executor_);
  timer.expires_after(limit);
  waiters_.insert(&timer);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  waiters_.erase(&timer);
}

}  // namespace spotshift::runtime
