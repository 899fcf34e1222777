#include "runtime/workqueue.hpp"
#include "runtime/controller.hpp"
#include "runtime/spawn.hpp"
#include "support/asio_run.hpp"
#include "support/catch.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

using namespace spotshift;
using namespace spotshift::runtime;
using namespace std::chrono_literals;
using spotshift::testing::run_for;
using spotshift::testing::run_sync;

namespace {
struct Fixture {
  boost::asio::io_context ioc;
  ManualClock clock;
  Timers timers{ioc.get_executor(), clock};
  std::optional<std::string> get(WorkQueue& q) { return run_sync(ioc, q.get()); }
};
}  // namespace

TEST_CASE("adding a queued key again does nothing; keys come out in order", "[workqueue]") {
  Fixture f;
  WorkQueue q(f.timers);
  q.add("a");
  q.add("b");
  q.add("a");
  CHECK(q.len() == 2);
  CHECK(f.get(q) == "a");
  CHECK(f.get(q) == "b");
  CHECK(q.processing() == 2);
}

TEST_CASE("a key added while it is processed is processed again after done, never twice at once", "[workqueue]") {
  Fixture f;
  WorkQueue q(f.timers);
  q.add("a");
  CHECK(f.get(q) == "a");
  q.add("a");
  q.add("a");
  CHECK(q.len() == 0);  // not handed to a second worker
  q.done("a");
  CHECK(q.len() == 1);
  CHECK(f.get(q) == "a");
  q.done("a");
  CHECK(q.len() == 0);
  CHECK(q.processing() == 0);
}

TEST_CASE("delayed adds wait for the clock and the earliest request wins", "[workqueue]") {
  Fixture f;
  WorkQueue q(f.timers);
  q.add_after("x", 10s);
  q.add_after("x", 5s);   // earlier: replaces
  q.add_after("x", 20s);  // later: ignored
  run_for(f.ioc, 10ms);
  CHECK(q.len() == 0);
  CHECK(q.waiting() == 1);
  f.clock.advance(4s);
  run_for(f.ioc, 10ms);
  CHECK(q.len() == 0);
  f.clock.advance(1s);
  run_for(f.ioc, 10ms);
  CHECK(q.len() == 1);
  CHECK(q.waiting() == 0);
  q.add_after("now", 0s);
  CHECK(q.len() == 2);
}

TEST_CASE("per-item backoff doubles from 5 ms to 1000 s and forget resets it", "[workqueue]") {
  RateLimiter r(RateLimiter::Options{5ms, 1000s, 0, 1});
  Time t{};
  std::vector<Duration> got;
  for (int i = 0; i < 5; ++i) got.push_back(r.when("k", t));
  CHECK(got == std::vector<Duration>{5ms, 10ms, 20ms, 40ms, 80ms});
  for (int i = 0; i < 30; ++i) r.when("k", t);
  CHECK(r.when("k", t) == Duration(1000s));
  CHECK(r.failures("k") == 36);
  r.forget("k");
  CHECK(r.when("k", t) == Duration(5ms));
  CHECK(r.when("other", t) == Duration(5ms));  // per item
}

TEST_CASE("the overall token bucket limits a burst of many keys", "[workqueue]") {
  RateLimiter r(RateLimiter::Options{5ms, 1000s, 10, 100});
  Time t{};
  Duration last{};
  for (int i = 0; i < 110; ++i) last = r.when("k" + std::to_string(i), t);
  CHECK(last == Duration(1s));  // the 110th is 10 tokens beyond the burst at 10 per second
}

TEST_CASE("shutdown stops handing out keys and drain waits for in-flight work", "[workqueue]") {
  Fixture f;
  WorkQueue q(f.timers);
  q.add("a");
  q.add("b");
  CHECK(f.get(q) == "a");
  q.shutdown();
  CHECK(f.get(q) == "b");  // already queued work is still handed out
  CHECK(f.get(q) == std::nullopt);
  q.add("c");  // ignored after shutdown
  CHECK(q.len() == 0);
  bool drained = false;
  boost::asio::co_spawn(
      f.ioc,
      [&]() -> boost::asio::awaitable<void> {
        co_await q.drain();
        drained = true;
      },
      [](std::exception_ptr) {});
  run_for(f.ioc, 10ms);
  CHECK_FALSE(drained);
  q.done("a");
  q.done("b");
  run_for(f.ioc, 10ms);
  CHECK(drained);
}

namespace {
// A reconciler that returns scripted outcomes and records calls.
class Scripted final : public Reconciler {
 public:
  std::vector<std::function<Result<Action>()>> outcomes;
  std::vector<std::string> calls;
  boost::asio::awaitable<Result<Action>> reconcile(const std::string& key) override {
    calls.push_back(key);
    size_t i = std::min(calls.size(), outcomes.size()) - 1;
    co_return outcomes[i]();
  }
};

class Slow final : public Reconciler {
 public:
  boost::asio::awaitable<Result<Action>> reconcile(const std::string&) override {
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor);
    t.expires_after(10s);
    co_await t.async_wait(boost::asio::use_awaitable);
    co_return Action::done();
  }
};
}  // namespace

TEST_CASE("the controller handles each outcome as controller-runtime does", "[controller]") {
  Fixture f;
  WorkQueue q(f.timers, RateLimiter(RateLimiter::Options{5ms, 1000s, 0, 1}));
  Scripted r;
  r.outcomes = {
      [] { return Result<Action>(Error::network("boom")); },                          // error: rate-limited retry
      [] { return Result<Action>(Action::requeue()); },                               // requeue: rate-limited
      [] { return Result<Action>(Action::requeue_after(std::chrono::minutes(1))); },  // after a minute
      [] { return Result<Action>(Error::invalid("bad policy").make_terminal()); },    // terminal: dropped
      [] { return Result<Action>(Action::done()); },
  };
  Controller c("test", r, q, f.timers, {});
  spotshift::runtime::spawn(f.ioc.get_executor(), c.run(), "controller");
  q.add("k");
  run_for(f.ioc, 10ms);
  CHECK(r.calls.size() == 1);
  CHECK(q.requeues("k") == 1);
  f.clock.advance(5ms);
  run_for(f.ioc, 10ms);
  CHECK(r.calls.size() == 2);
  CHECK(q.requeues("k") == 2);
  f.clock.advance(10ms);
  run_for(f.ioc, 10ms);
  CHECK(r.calls.size() == 3);
  CHECK(q.requeues("k") == 0);  // requeue-after forgets the failures
  f.clock.advance(59s);
  run_for(f.ioc, 10ms);
  CHECK(r.calls.size() == 3);
  f.clock.advance(1s);
  run_for(f.ioc, 10ms);
  CHECK(r.calls.size() == 4);
  CHECK(c.stats().terminal_errors == 1);
  f.clock.advance(1h);
  run_for(f.ioc, 10ms);
  CHECK(r.calls.size() == 4);  // the terminal error was not retried
  q.add("k");
  run_for(f.ioc, 10ms);
  CHECK(r.calls.size() == 5);
  CHECK(c.stats().errors == 1);
  CHECK(c.stats().requeues == 1);
  q.shutdown();
  run_for(f.ioc, 10ms);
}

TEST_CASE("an exception escaping a reconcile is contained and retried; a slow one times out", "[controller]") {
  Fixture f;
  WorkQueue q(f.timers, RateLimiter(RateLimiter::Options{5ms, 1000s, 0, 1}));
  Scripted r;
  r.outcomes = {[]() -> Result<Action> { throw std::runtime_error("bug"); }, [] { return Result<Action>(Action::done()); }};
  Controller c("test", r, q, f.timers, {});
  spotshift::runtime::spawn(f.ioc.get_executor(), c.run(), "controller");
  q.add("k");
  run_for(f.ioc, 10ms);
  CHECK(c.stats().panics == 1);
  f.clock.advance(5ms);
  run_for(f.ioc, 10ms);
  CHECK(r.calls.size() == 2);
  q.shutdown();
  run_for(f.ioc, 10ms);

  WorkQueue q2(f.timers);
  Slow slow;
  Controller timed("slow", slow, q2, f.timers, Controller::Options{1, 50ms});
  spotshift::runtime::spawn(f.ioc.get_executor(), timed.run(), "controller");
  q2.add("k");
  run_for(f.ioc, 200ms);
  CHECK(timed.stats().timeouts == 1);
  CHECK(timed.stats().errors == 1);
  q2.shutdown();
  run_for(f.ioc, 10ms);
}
