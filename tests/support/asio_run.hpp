#pragma once
// Running coroutines in tests.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <exception>
#include <optional>

namespace spotshift::testing {

// Runs work to completion on ioc and returns its result. Background coroutines left suspended
// on ioc stay there for the next call.
template <class T>
T run_sync(boost::asio::io_context& ioc, boost::asio::awaitable<T> work) {
  // co_spawn's own result passing needs a default-constructible T; Result<T> often is not.
  std::optional<T> out;
  std::exception_ptr failure;
  bool finished = false;
  boost::asio::co_spawn(
      ioc, [&]() -> boost::asio::awaitable<void> { out.emplace(co_await std::move(work)); },
      [&](std::exception_ptr e) {
        failure = e;
        finished = true;
        ioc.stop();
      });
  ioc.restart();
  while (!finished) {
    ioc.run();
    if (!finished) ioc.restart();
  }
  if (failure) std::rethrow_exception(failure);
  return std::move(*out);
}

// Lets whatever is ready on ioc run for a while.
inline void run_for(boost::asio::io_context& ioc, std::chrono::milliseconds d) {
  ioc.restart();
  ioc.run_for(d);
}

}  // namespace spotshift::testing
