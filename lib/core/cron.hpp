#pragma once
// Cron schedules, five fields (minute hour day-of-month month day-of-week) as Kubernetes CronJobs
// and Karpenter's disruption budgets read them: numbers, `*`, ranges `a-b`, steps `*/n` and
// `a-b/n`, lists `a,b`, month names JAN to DEC, weekday names SUN to SAT (0 and 7 are Sunday), and
// the macros @yearly (@annually), @monthly, @weekly, @daily (@midnight) and @hourly. When both the
// day of the month and the day of the week are restricted (neither starts with `*`), a day
// matching either is a match, as in every cron.
//
// Times are wall-clock times in a time zone: a time skipped by a daylight-saving change fires as
// far after the skip as it was after its start (02:30 on the night CET turns to CEST fires at
// 03:30 CEST), and a time that happens twice fires once, the first time.

#include "core/error.hpp"
#include "core/tz.hpp"

#include <bitset>
#include <optional>
#include <string>
#include <string_view>

namespace spotshift {

class CronSchedule {
 public:
  // Errors name the field: `minute field "61": 61 is out of range 0-59`.
  static Result<CronSchedule> parse(std::string_view text);

  // The first time the schedule fires strictly after `after`, in `zone`, looking at most
  // `horizon_years` ahead; nothing when it does not fire that soon (30 February never does).
  std::optional<Time> next(Time after, const tz::Zone& zone, int horizon_years = 5) const;

  const std::string& text() const { return text_; }
  bool operator==(const CronSchedule& other) const { return text_ == other.text_; }

 private:
  bool day_matches(int mday, int month, int wday) const;
  std::string text_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> mdays_;   // 1 to 31
  std::bitset<13> months_;  // 1 to 12
  std::bitset<7> wdays_;    // 0 (Sunday) to 6
  bool mday_star_ = false, wday_star_ = false;
};

}  // namespace spotshift
