#pragma once
// Runs a coroutine to completion on an io_context, for tests.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <optional>

namespace spotshift::testing {

template <class T>
T run_sync(boost::asio::io_context& ioc, boost::asio::awaitable<T> work) {
  // co_spawn's own result passing needs a default-constructible T; Result<T> often is not.
  std::optional<T> out;
  std::exception_ptr failure;
  boost::asio::co_spawn(
      ioc, [&]() -> boost::asio::awaitable<void> { out.emplace(co_await std::move(work)); },
      [&](std::exception_ptr e) { failure = e; });
  ioc.restart();
  ioc.run();
  if (failure) std::rethrow_exception(failure);
  return std::move(*out);
}

}  // namespace spotshift::testing
