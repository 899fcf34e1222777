#include "core/backoff.hpp"
#include "core/clock.hpp"

#include "support/catch.hpp"

using namespace spotshift;
using namespace std::chrono;

TEST_CASE("backoff doubles up to its cap without jitter", "[backoff]") {
  Backoff b({.initial = milliseconds(800), .max = seconds(30), .factor = 2.0, .jitter = 0.0, .reset_after = minutes(2)});
  Time t{};
  std::vector<long> got;
  for (int i = 0; i < 8; ++i) got.push_back(duration_cast<milliseconds>(b.next(t += seconds(1))).count());
  CHECK(got == std::vector<long>{800, 1600, 3200, 6400, 12800, 25600, 30000, 30000});
}

TEST_CASE("full jitter stays within [0, delay] and a healthy gap resets", "[backoff]") {
  Backoff b({.initial = milliseconds(100), .max = seconds(10), .factor = 2.0, .jitter = 1.0, .reset_after = seconds(60)}, 42);
  Time t{};
  for (int i = 0; i < 50; ++i) {
    auto d = b.next(t);
    CHECK(d >= Duration::zero());
    CHECK(d <= seconds(10));
  }
  CHECK(b.failures() > 5);
  b.next(t + minutes(5));
  CHECK(b.failures() == 1);
}

TEST_CASE("a manual clock moves only when told and notifies observers", "[clock]") {
  ManualClock c;
  Time start = c.now();
  std::vector<Time> seen;
  int id = c.subscribe([&](Time t) { seen.push_back(t); });
  c.advance(seconds(5));
  CHECK(c.now() == start + seconds(5));
  c.unsubscribe(id);
  c.advance(seconds(5));
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == start + seconds(5));
}
