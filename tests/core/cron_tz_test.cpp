// Time zones from the tz database, checked against the C library's reading of the same files, and
// cron schedules read in them, across daylight-saving changes.

#include "core/cron.hpp"
#include "core/tz.hpp"
#include "support/catch.hpp"

#include <cstdlib>
#include <ctime>
#include <random>

using namespace spotshift;

namespace {

Time at(std::string_view rfc3339) { return parse_time(rfc3339).value(); }
std::string next_of(const CronSchedule& c, std::string_view after, const tz::Zone& zone) {
  auto t = c.next(at(after), zone);
  return t ? format_time(*t) : "never";
}
std::shared_ptr<const tz::Zone> zone(std::string_view name) { return tz::load(name).value(); }
std::string cron_error(std::string_view text) {
  auto c = CronSchedule::parse(text);
  return c ? "(valid)" : c.error().message;
}
int64_t seconds(std::string_view rfc3339) {
  return std::chrono::duration_cast<std::chrono::seconds>(at(rfc3339).time_since_epoch()).count();
}

}  // namespace

TEST_CASE("a zone's offsets agree with the C library's, 1970 to 2099, transitions and the footer's rule alike", "[tz]") {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> instant(0, 4102444800 - 1);  // up to 2100
  for (std::string name : {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "America/Sao_Paulo",
                           "Pacific/Chatham", "Europe/Dublin", "America/St_Johns", "UTC"}) {
    auto z = zone(name);
    ::setenv("TZ", name.c_str(), 1);
    ::tzset();
    for (int k = 0; k < 4000; ++k) {
      const int64_t t = instant(rng);
      std::time_t tt = static_cast<std::time_t>(t);
      std::tm tm{};
      ::localtime_r(&tt, &tm);
      INFO(name << " at " << t);
      REQUIRE(z->offset_at(t) == tm.tm_gmtoff);
      // Every local time that exists maps back to an instant showing it.
      CHECK(z->local_of(z->instant_of(z->local_of(t))) == z->local_of(t));
    }
  }
  ::unsetenv("TZ");
  ::tzset();
}

TEST_CASE("a local time skipped by a daylight-saving change names the instant after it; one that happens twice, the first", "[tz]") {
  auto berlin = zone("Europe/Berlin");
  auto local = [&](std::string_view wall) { return seconds(wall); };  // a wall time written as if UTC
  // 29 March 2026: 02:00 CET becomes 03:00 CEST.
  CHECK(berlin->instant_of(local("2026-03-29T01:30:00Z")) == seconds("2026-03-29T00:30:00Z"));
  CHECK(berlin->instant_of(local("2026-03-29T02:30:00Z")) == seconds("2026-03-29T01:30:00Z"));  // shows 03:30 CEST
  CHECK(berlin->instant_of(local("2026-03-29T03:30:00Z")) == seconds("2026-03-29T01:30:00Z"));
  // 25 October 2026: 03:00 CEST becomes 02:00 CET, so 02:30 happens twice.
  CHECK(berlin->instant_of(local("2026-10-25T02:30:00Z")) == seconds("2026-10-25T00:30:00Z"));
  CHECK(berlin->instant_of(local("2026-10-25T03:30:00Z")) == seconds("2026-10-25T02:30:00Z"));
  // Past the file's last transition (2037), the footer's rule: CEST from 25 March 2040.
  CHECK(berlin->offset_at(seconds("2040-03-25T00:59:59Z")) == 3600);
  CHECK(berlin->offset_at(seconds("2040-03-25T01:00:00Z")) == 7200);
}

TEST_CASE("time zone names: unknown ones and paths are refused, UTC always loads", "[tz]") {
  CHECK(tz::load("Mars/Olympus_Mons").error().message.starts_with("unknown time zone \"Mars/Olympus_Mons\" (no "));
  CHECK(tz::load("../../etc/passwd").error().message ==
        "\"../../etc/passwd\" is not an IANA time zone name (such as Europe/Berlin or UTC)");
  CHECK(tz::load("/etc/localtime").error().message.find("is not an IANA time zone name") != std::string::npos);
  CHECK(tz::load("UTC").value()->offset_at(0) == 0);
  CHECK(tz::load("Europe/Berlin").value() == tz::load("Europe/Berlin").value());  // loaded once
  CHECK_FALSE(tz::Zone::parse("x", "not a tzif file"));
}

TEST_CASE("cron schedules: the fields, names, steps, lists and macros; errors name the field", "[cron]") {
  auto utc = tz::Zone::fixed("UTC", 0);
  auto next = [&](std::string_view cron, std::string_view after) { return next_of(CronSchedule::parse(cron).value(), after, utc); };
  // 2026-11-27 is a Friday.
  CHECK(next("0 22 * * 1-5", "2026-11-27T23:00:00Z") == "2026-11-30T22:00:00Z");
  CHECK(next("0 22 * * 1-5", "2026-11-27T21:59:59Z") == "2026-11-27T22:00:00Z");
  CHECK(next("0 22 * * 1-5", "2026-11-27T22:00:00Z") == "2026-11-30T22:00:00Z");  // strictly after
  CHECK(next("*/15 * * * *", "2026-11-27T10:07:00Z") == "2026-11-27T10:15:00Z");
  CHECK(next("5/20 * * * *", "2026-11-27T10:26:00Z") == "2026-11-27T10:45:00Z");
  CHECK(next("0 9,17 * * *", "2026-11-27T10:00:00Z") == "2026-11-27T17:00:00Z");
  CHECK(next("30 3 * feb-mar sun", "2026-11-27T10:00:00Z") == "2027-02-07T03:30:00Z");
  CHECK(next("0 0 * * 7", "2026-11-27T10:00:00Z") == "2026-11-29T00:00:00Z");  // 7 is Sunday too
  // Day of month and day of week both restricted: either matches (the 13th, or a Friday).
  CHECK(next("0 0 13 * 5", "2026-11-27T10:00:00Z") == "2026-12-04T00:00:00Z");
  CHECK(next("0 0 13 * 5", "2026-12-04T10:00:00Z") == "2026-12-11T00:00:00Z");
  CHECK(next("0 0 13 * 5", "2026-12-11T10:00:00Z") == "2026-12-13T00:00:00Z");
  // With * for the day of the week, only the day of the month.
  CHECK(next("0 0 31 * *", "2026-11-27T10:00:00Z") == "2026-12-31T00:00:00Z");
  CHECK(next("0 0 29 2 *", "2026-11-27T10:00:00Z") == "2028-02-29T00:00:00Z");
  CHECK(next("0 0 30 2 *", "2026-11-27T10:00:00Z") == "never");
  CHECK(next("@weekly", "2026-11-27T10:00:00Z") == "2026-11-29T00:00:00Z");
  CHECK(next("@daily", "2026-11-27T10:00:00Z") == "2026-11-28T00:00:00Z");
  CHECK(next("@hourly", "2026-11-27T10:00:00Z") == "2026-11-27T11:00:00Z");
  CHECK(next("@monthly", "2026-11-27T10:00:00Z") == "2026-12-01T00:00:00Z");
  CHECK(next("@yearly", "2026-11-27T10:00:00Z") == "2027-01-01T00:00:00Z");

  CHECK(cron_error("61 * * * *") == "minute field \"61\": 61 is out of range 0-59");
  CHECK(cron_error("* 24 * * *") == "hour field \"24\": 24 is out of range 0-23");
  CHECK(cron_error("* * 0 * *") == "day-of-month field \"0\": 0 is out of range 1-31");
  CHECK(cron_error("* * * 13 *") == "month field \"13\": 13 is out of range 1-12");
  CHECK(cron_error("* * * * 8") == "day-of-week field \"8\": 8 is out of range 0-7");
  CHECK(cron_error("* * * * *  *") == "\"* * * * *  *\" has 6 fields; a schedule has five: minute hour day-of-month month day-of-week");
  CHECK(cron_error("* * * *") == "\"* * * *\" has 4 fields; a schedule has five: minute hour day-of-month month day-of-week");
  CHECK(cron_error("*/0 * * * *") == "minute field \"*/0\": the step \"0\" is not a positive number");
  CHECK(cron_error("5-1 * * * *") == "minute field \"5-1\": the range 5-1 runs backwards");
  CHECK(cron_error("* * * foo *") == "month field \"foo\": \"foo\" is not a number or a name");
  CHECK(cron_error("x * * * *") == "minute field \"x\": \"x\" is not a number");
  CHECK(cron_error("@often") == "\"@often\" is not a schedule macro (@yearly, @monthly, @weekly, @daily, @hourly)");
}

TEST_CASE("cron schedules in a time zone, across daylight-saving changes", "[cron]") {
  auto berlin = zone("Europe/Berlin");
  auto daily_0230 = CronSchedule::parse("30 2 * * *").value();
  // Spring: 02:30 does not exist on 29 March 2026; the window opens at 03:30 CEST, once.
  CHECK(next_of(daily_0230, "2026-03-28T12:00:00Z", *berlin) == "2026-03-29T01:30:00Z");
  CHECK(next_of(daily_0230, "2026-03-29T01:30:00Z", *berlin) == "2026-03-30T00:30:00Z");
  // Autumn: 02:30 happens twice on 25 October 2026; it fires the first time only.
  CHECK(next_of(daily_0230, "2026-10-24T12:00:00Z", *berlin) == "2026-10-25T00:30:00Z");
  CHECK(next_of(daily_0230, "2026-10-25T00:30:00Z", *berlin) == "2026-10-26T01:30:00Z");
  // An hour on either side of the change keeps its wall-clock time.
  auto daily_0400 = CronSchedule::parse("0 4 * * *").value();
  CHECK(next_of(daily_0400, "2026-03-28T12:00:00Z", *berlin) == "2026-03-29T02:00:00Z");
  CHECK(next_of(daily_0400, "2026-10-24T12:00:00Z", *berlin) == "2026-10-25T03:00:00Z");
  // A half-hour zone and a southern one.
  CHECK(next_of(CronSchedule::parse("0 9 * * *").value(), "2026-11-27T00:00:00Z", *zone("Asia/Kolkata")) == "2026-11-27T03:30:00Z");
  CHECK(next_of(CronSchedule::parse("0 9 * * *").value(), "2026-11-27T00:00:00Z", *zone("Australia/Sydney")) == "2026-11-27T22:00:00Z");
}
