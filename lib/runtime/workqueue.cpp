#include "runtime/workqueue.hpp"

#include "runtime/spawn.hpp"

#include <cmath>

namespace spotshift::runtime {

Duration RateLimiter::when(const std::string& key, Time now) {
  int n = failures_[key]++;
  double scaled = static_cast<double>(options_.base.count()) * std::pow(2.0, std::min(n, 62));
  Duration item = scaled >= static_cast<double>(options_.max.count()) ? options_.max : Duration(static_cast<int64_t>(scaled));
  return std::max(item, bucket_.reserve(now));
}

int RateLimiter::failures(const std::string& key) const {
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

WorkQueue::WorkQueue(Timers& timers, RateLimiter limiter)
    : timers_(timers),
      limiter_(std::move(limiter)),
      ready_(timers.executor()),
      delayed_changed_(timers.executor()),
      idle_(timers.executor()) {}

WorkQueue::~WorkQueue() {
  *alive_ = false;
  shutdown_ = true;
  delayed_changed_.notify();
}

void WorkQueue::add(const std::string& key) {
  if (shutdown_) return;
  if (processing_.count(key)) {
    dirty_.insert(key);
    return;
  }
  if (!queued_.insert(key).second) return;
  queue_.push_back(key);
  ready_.notify();
}

void WorkQueue::add_after(const std::string& key, Duration delay) {
  if (shutdown_) return;
  if (delay <= Duration::zero()) {
    add(key);
    return;
  }
  Time at = timers_.now() + delay;
  auto it = delayed_at_.find(key);
  if (it != delayed_at_.end()) {
    if (it->second <= at) return;  // an earlier request already stands
    for (auto d = delayed_.lower_bound(it->second); d != delayed_.end() && d->first == it->second; ++d)
      if (d->second == key) {
        delayed_.erase(d);
        break;
      }
  }
  delayed_at_[key] = at;
  delayed_.emplace(at, key);
  if (!delay_loop_running_) {
    delay_loop_running_ = true;
    spawn(timers_.executor(), delay_loop(), "work queue delays");
  }
  delayed_changed_.notify();
}

void WorkQueue::add_rate_limited(const std::string& key) { add_after(key, limiter_.when(key, timers_.now())); }

asio::awaitable<void> WorkQueue::delay_loop() {
  auto alive = alive_;
  while (*alive && !shutdown_) {
    Time now = timers_.now();
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      std::string key = delayed_.begin()->second;
      delayed_.erase(delayed_.begin());
      delayed_at_.erase(key);
      add(key);
    }
    if (delayed_.empty()) {
      co_await delayed_changed_.wait();
      continue;
    }
    // Until the head is due, or something earlier (or shutdown) arrives.
    if (!co_await timers_.sleep_until(delayed_.begin()->first, &delayed_changed_)) break;
  }
  if (*alive) delay_loop_running_ = false;
}

asio::awaitable<std::optional<std::string>> WorkQueue::get() {
  while (queue_.empty() && !shutdown_) co_await ready_.wait();
  if (queue_.empty()) co_return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  queued_.erase(key);
  processing_.insert(key);
  co_return key;
}

void WorkQueue::done(const std::string& key) {
  processing_.erase(key);
  if (dirty_.erase(key)) {
    if (!shutdown_) {
      queued_.insert(key);
      queue_.push_back(key);
      ready_.notify();
    }
  }
  if (processing_.empty()) idle_.notify();
}

void WorkQueue::shutdown() {
  shutdown_ = true;
  ready_.notify();
  delayed_changed_.notify();
}

asio::awaitable<void> WorkQueue::drain() {
  while (!processing_.empty()) co_await idle_.wait();
}

}  // namespace spotshift::runtime
