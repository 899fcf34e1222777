#include "runtime/controller.hpp"

#include "runtime/spawn.hpp"

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <variant>

namespace spotshift::runtime {

using namespace asio::experimental::awaitable_operators;

Controller::Controller(std::string name, Reconciler& reconciler, WorkQueue& queue, Timers& timers, Options options)
    : name_(std::move(name)), reconciler_(reconciler), queue_(queue), timers_(timers), options_(options), logger_("controller." + name_) {}

asio::awaitable<void> Controller::run() {
  int n = std::max(1, options_.workers);
  int running = n;
  Signal finished(timers_.executor());
  for (int i = 0; i < n; ++i) {
    auto& signal = cancel_.emplace_back();
    spawn(timers_.executor(), worker(i), fmt::format("{} worker {}", name_, i), signal, [&] {
      --running;
      finished.notify();
    });
  }
  while (running > 0) co_await finished.wait();
  cancel_.clear();
}

void Controller::cancel() {
  for (auto& s : cancel_) s.emit(asio::cancellation_type::terminal);
  queue_.shutdown();
}

asio::awaitable<Result<Action>> Controller::reconcile_once(const std::string& key) {
  try {
    if (options_.reconcile_timeout <= Duration::zero()) co_return co_await reconciler_.reconcile(key);
    asio::steady_timer deadline(timers_.executor());
    deadline.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(options_.reconcile_timeout));
    auto outcome = co_await (reconciler_.reconcile(key) || deadline.async_wait(asio::use_awaitable));
    if (outcome.index() == 0) co_return std::get<0>(std::move(outcome));
    ++stats_.timeouts;
    co_return Error::timeout(fmt::format("reconcile of {} did not finish within {}", key, format_go_duration(options_.reconcile_timeout)));
  } catch (const std::exception& e) {
    ++stats_.panics;
    logger_.error("reconcile threw an exception", {{"key", key}, {"exception", e.what()}});
    co_return Error::internal(fmt::format("reconcile of {} threw: {}", key, e.what()));
  }
}

asio::awaitable<void> Controller::worker(int id) {
  for (;;) {
    auto key = co_await queue_.get();
    if (!key) co_return;
    auto start = std::chrono::steady_clock::now();
    auto result = co_await reconcile_once(*key);
    auto took = std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - start);
    ++stats_.total;
    std::string_view outcome = "success";
    if (!result) {
      const Error& e = result.error();
      if (e.terminal) {
        ++stats_.terminal_errors;
        outcome = "terminal_error";
        logger_.error("reconcile failed for good; not retrying", {{"key", *key}, {"error", e}});
        queue_.forget(*key);
      } else {
        ++stats_.errors;
        outcome = "error";
        logger_.warn("reconcile failed; retrying", {{"key", *key}, {"error", e}, {"retries", queue_.requeues(*key)}});
        queue_.add_rate_limited(*key);
      }
    } else {
      switch (result->kind) {
        case Action::Kind::kRequeueAfter:
          queue_.forget(*key);
          queue_.add_after(*key, result->after);
          break;
        case Action::Kind::kRequeue:
          ++stats_.requeues;
          outcome = "requeue";
          queue_.add_rate_limited(*key);
          break;
        case Action::Kind::kDone:
          queue_.forget(*key);
          break;
      }
    }
    logger_.debug(2, "reconciled", {{"key", *key}, {"worker", id}, {"took", took}, {"result", outcome}});
    if (observer) observer(took, outcome);
    queue_.done(*key);
  }
}

}  // namespace spotshift::runtime
