// runtime::Tasks: one task per key, the end hook, cancellation.

#include "runtime/tasks.hpp"
#include "runtime/timers.hpp"
#include "support/catch.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

using namespace spotshift;
using namespace std::chrono_literals;

namespace {

boost::asio::awaitable<void> sleep_then(std::chrono::milliseconds d, int& steps) {
  boost::asio::steady_timer t(co_await boost::asio::this_coro::executor);
  t.expires_after(d);
  co_await t.async_wait(boost::asio::use_awaitable);
  ++steps;
}

}  // namespace

TEST_CASE("a task per key: started once, running until it ends, then its end hook", "[tasks]") {
  boost::asio::io_context ioc;
  runtime::Tasks tasks(ioc.get_executor());
  int steps = 0, ended = 0;
  bool running_at_end = true;
  REQUIRE(tasks.start("a", sleep_then(20ms, steps), [&] {
    ++ended;
    running_at_end = tasks.running("a");
  }));
  CHECK(tasks.running("a"));
  CHECK_FALSE(tasks.running("b"));
  // A second task of the same key is refused; another key runs beside it.
  CHECK_FALSE(tasks.start("a", sleep_then(1ms, steps)));
  CHECK(tasks.start("b", sleep_then(1ms, steps)));
  CHECK(tasks.size() == 2);
  ioc.run();
  CHECK(steps == 2);
  CHECK(ended == 1);
  CHECK_FALSE(running_at_end);
  CHECK(tasks.size() == 0);
  // The key can run again.
  CHECK(tasks.start("a", sleep_then(1ms, steps)));
  ioc.restart();
  ioc.run();
  CHECK(steps == 3);
}

TEST_CASE("cancel ends every task at its next wait, and their end hooks run", "[tasks]") {
  boost::asio::io_context ioc;
  runtime::Tasks tasks(ioc.get_executor());
  int steps = 0, ended = 0;
  tasks.start("a", sleep_then(10s, steps), [&] { ++ended; });
  tasks.start("b", sleep_then(10s, steps), [&] { ++ended; });
  ioc.run_for(20ms);
  CHECK(tasks.size() == 2);
  const auto start = std::chrono::steady_clock::now();
  tasks.cancel();
  ioc.run_for(1s);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK(steps == 0);
  CHECK(ended == 2);
  CHECK(tasks.size() == 0);
}
