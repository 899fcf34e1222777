#pragma once
// A controller: workers (coroutines) take keys from a WorkQueue and call a one-method Reconciler.
// The outcome is handled in one four-way switch, as controller-runtime does:
//   error          -> rate-limited retry (a terminal error is only logged and counted)
//   requeue after d -> forget the failures, run again after d
//   requeue         -> rate-limited retry
//   done            -> forget the failures
// An exception escaping a reconcile is contained, logged and retried like an error; an optional
// per-reconcile timeout cancels a reconcile that runs too long.

#include "core/error.hpp"
#include "core/log.hpp"
#include "runtime/workqueue.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <functional>
#include <list>
#include <string>

namespace spotshift::runtime {

struct Action {
  enum class Kind { kDone, kRequeue, kRequeueAfter } kind = Kind::kDone;
  Duration after{};
  static Action done() { return {}; }
  static Action requeue() { return {Kind::kRequeue, {}}; }
  static Action requeue_after(Duration d) { return {Kind::kRequeueAfter, d}; }
};

class Reconciler {
 public:
  virtual ~Reconciler() = default;
  // Level-based: reads the caches for this key and makes the world match. It is never told why
  // it runs, and a deleted object is just a key with no object.
  virtual asio::awaitable<Result<Action>> reconcile(const std::string& key) = 0;
};

struct ReconcileStats {
  uint64_t total = 0;
  uint64_t errors = 0;
  uint64_t terminal_errors = 0;
  uint64_t requeues = 0;
  uint64_t timeouts = 0;
  uint64_t panics = 0;  // exceptions that escaped a reconcile
};

class Controller {
 public:
  struct Options {
    int workers = 1;
    Duration reconcile_timeout{0};  // 0: none
  };

  Controller(std::string name, Reconciler& reconciler, WorkQueue& queue, Timers& timers, Options options);

  // Runs the workers until the queue shuts down and in-flight reconciles finish.
  asio::awaitable<void> run();
  // Cancels in-flight reconciles (their I/O ends with operation_aborted): for lost leadership.
  void cancel();
  const std::string& name() const { return name_; }
  const ReconcileStats& stats() const { return stats_; }
  WorkQueue& queue() { return queue_; }
  // Called after every reconcile with its duration and result ("success", "error", "requeue").
  std::function<void(Duration, std::string_view result)> observer;

 private:
  asio::awaitable<void> worker(int id);
  asio::awaitable<Result<Action>> reconcile_once(const std::string& key);

  std::string name_;
  Reconciler& reconciler_;
  WorkQueue& queue_;
  Timers& timers_;
  Options options_;
  ReconcileStats stats_;
  log::Logger logger_;
  std::list<asio::cancellation_signal> cancel_;
};

}  // namespace spotshift::runtime
