#pragma once
// co_spawn with a completion handler that logs: nothing in spotshift is spawned detached and
// forgotten.

#include "core/log.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <string>

namespace spotshift::runtime {

inline void log_exception(const std::string& what, std::exception_ptr e) {
  if (!e) return;
  static const log::Logger logger("runtime");
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    logger.error("a background task failed", {{"task", what}, {"exception", x.what()}});
  } catch (...) {
    logger.error("a background task failed", {{"task", what}});
  }
}

template <class Executor>
void spawn(const Executor& ex, boost::asio::awaitable<void> work, std::string what) {
  boost::asio::co_spawn(ex, std::move(work), [what = std::move(what)](std::exception_ptr e) { log_exception(what, e); });
}

// Whether the work ended by being cancelled (operation_aborted): how a cancelled task stops.
inline bool ended_by_cancellation(std::exception_ptr e) {
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const boost::system::system_error& x) {
    return x.code() == boost::asio::error::operation_aborted;
  } catch (...) {}
  return false;
}

// As spawn, cancellable through signal (emit a terminal cancellation to stop it). Ending by that
// cancellation is not logged as a failure.
template <class Executor>
void spawn(const Executor& ex, boost::asio::awaitable<void> work, std::string what, boost::asio::cancellation_signal& signal,
           std::function<void()> on_done = {}) {
  boost::asio::co_spawn(ex, std::move(work),
                        boost::asio::bind_cancellation_slot(signal.slot(), [what = std::move(what), on_done](std::exception_ptr e) {
                          if (!ended_by_cancellation(e)) log_exception(what, e);
                          if (on_done) on_done();
                        }));
}

}  // namespace spotshift::runtime
