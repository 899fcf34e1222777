#include "core/time.hpp"

#include "support/catch.hpp"

using namespace spotshift;
using namespace std::chrono;

TEST_CASE("times format as RFC 3339 and MicroTime", "[time]") {
  Time t = sys_days{year{2025} / 1 / 2} + hours{3} + minutes{4} + seconds{5} + microseconds{123456};
  CHECK(format_time(t) == "2025-01-02T03:04:05Z");
  CHECK(format_micro_time(t) == "2025-01-02T03:04:05.123456Z");
}

TEST_CASE("RFC 3339 parsing accepts fractions and offsets and rejects junk", "[time]") {
  Time base = sys_days{year{2025} / 1 / 2} + hours{3} + minutes{4} + seconds{5};
  CHECK(*parse_time("2025-01-02T03:04:05Z") == base);
  CHECK(*parse_time("2025-01-02T03:04:05.5Z") == base + milliseconds{500});
  CHECK(*parse_time("2025-01-02T03:04:05.123456789Z") == base + nanoseconds{123456789});
  CHECK(*parse_time("2025-01-02T05:04:05+02:00") == base);
  CHECK(*parse_time("2025-01-02T01:04:05-02:00") == base);
  for (auto bad : {"", "2025-01-02", "2025-01-02T03:04:05", "2025-13-02T03:04:05Z", "2025-01-02T03:04:05.Z", "2025-01-02T03:04:05Zjunk",
                   "yesterday"}) {
    INFO(bad);
    auto r = parse_time(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("invalid time") != std::string::npos);
  }
}

TEST_CASE("Go durations parse and format", "[time]") {
  CHECK(*parse_go_duration("10s") == seconds{10});
  CHECK(*parse_go_duration("10m") == minutes{10});
  CHECK(*parse_go_duration("1h30m") == minutes{90});
  CHECK(*parse_go_duration("2.5s") == milliseconds{2500});
  CHECK(*parse_go_duration("300ms") == milliseconds{300});
  CHECK(*parse_go_duration("0") == seconds{0});
  CHECK(*parse_go_duration("-1m") == -minutes{1});
  CHECK(format_go_duration(minutes{10}) == "10m");
  CHECK(format_go_duration(seconds{90}) == "1m30s");
  CHECK(format_go_duration(milliseconds{1500}) == "1.5s");
  CHECK(format_go_duration(milliseconds{250}) == "250ms");
  CHECK(format_go_duration(hours{2}) == "2h");
  for (auto bad : {"", "10", "10x", "m", "1..5s", "s10"}) {
    INFO(bad);
    auto r = parse_go_duration(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find(bad) != std::string::npos);
  }
}

TEST_CASE("ages print the way kubectl prints them", "[time]") {
  CHECK(format_age(seconds{45}) == "45s");
  CHECK(format_age(seconds{119}) == "119s");
  CHECK(format_age(seconds{310}) == "5m10s");
  CHECK(format_age(seconds{300}) == "5m");
  CHECK(format_age(minutes{150}) == "150m");
  CHECK(format_age(hours{3}) == "3h");
  CHECK(format_age(hours{5} + minutes{20}) == "5h20m");
  CHECK(format_age(hours{30}) == "30h");
  CHECK(format_age(hours{52}) == "2d4h");
  CHECK(format_age(hours{24 * 30}) == "30d");
  CHECK(format_age(hours{24 * 800}) == "2y");
}

TEST_CASE("times outside the representable years are rejected, not overflowed", "[time]") {
  auto r = parse_time("0001-01-01T00:00:00Z");
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("outside 1678-2261") != std::string::npos);
  CHECK(parse_time("2261-12-31T23:59:59Z"));
}
