#pragma once
// A work queue with client-go's semantics:
//  - add(k): a key already queued is not queued twice; a key being processed is marked dirty and
//    queued again when done(k) is called; otherwise it joins the end of the queue;
//  - get() hands a key to one worker and marks it processing, so a key is never handled by two
//    workers at once;
//  - add_after(k, d) queues k once d has passed (the earliest request wins);
//  - add_rate_limited(k) = add_after(k, limiter.when(k)), forget(k) resets its failures;
//  - shutdown() stops handing out keys; in-flight work finishes (workers call done()).

#include "core/token_bucket.hpp"
#include "runtime/timers.hpp"

#include <boost/asio/awaitable.hpp>

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace spotshift::runtime {

// max(per-item exponential backoff, a token bucket shared by all items): client-go's default
// controller rate limiter (5 ms doubling to 1000 s per item; 10 qps with a burst of 100 overall).
class RateLimiter {
 public:
  struct Options {
    Duration base = std::chrono::milliseconds(5);
    Duration max = std::chrono::seconds(1000);
    double qps = 10;
    int burst = 100;
  };
  explicit RateLimiter(Options o) : options_(o), bucket_(o.qps, o.burst) {}
  RateLimiter() : RateLimiter(Options{}) {}
  Duration when(const std::string& key, Time now);
  void forget(const std::string& key) { failures_.erase(key); }
  int failures(const std::string& key) const;

 private:
  Options options_;
  TokenBucket bucket_;
  std::map<std::string, int> failures_;
};

class WorkQueue {
 public:
  WorkQueue(Timers& timers, RateLimiter limiter = RateLimiter());
  ~WorkQueue();

  void add(const std::string& key);
  void add_after(const std::string& key, Duration delay);
  void add_rate_limited(const std::string& key);
  void forget(const std::string& key) { limiter_.forget(key); }
  int requeues(const std::string& key) const { return limiter_.failures(key); }

  // The next key to work on, or nothing once the queue shuts down.
  asio::awaitable<std::optional<std::string>> get();
  void done(const std::string& key);

  void shutdown();
  bool shutting_down() const { return shutdown_; }
  // Waits until no key is being processed (after shutdown()).
  asio::awaitable<void> drain();

  size_t len() const { return queue_.size(); }
  size_t processing() const { return processing_.size(); }
  size_t waiting() const { return delayed_.size(); }

 private:
  asio::awaitable<void> delay_loop();

  Timers& timers_;
  RateLimiter limiter_;
  std::deque<std::string> queue_;
  std::set<std::string> queued_;  // keys in queue_
  std::set<std::string> processing_;
  std::set<std::string> dirty_;  // added while processing
  std::multimap<Time, std::string> delayed_;
  std::map<std::string, Time> delayed_at_;  // the earliest wanted time per delayed key
  Signal ready_;
  Signal delayed_changed_;
  Signal idle_;
  bool shutdown_ = false;
  bool delay_loop_running_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace spotshift::runtime
