#pragma once
// IANA time zones from the system's tz database (TZif files under /usr/share/zoneinfo, or $TZDIR):
// the UTC offset in effect at an instant, and the instant a local wall-clock time names.
//
// A zone is its transitions (version 2+ TZif, 64-bit times) and, past the last one, the POSIX TZ
// rule of the file's footer ("CET-1CEST,M3.5.0,M10.5.0/3"), so dates past 2037 follow the rule.

#include "core/error.hpp"
#include "core/time.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace spotshift::tz {

// Seconds since the epoch as a wall clock in some zone shows them (a "local" time).
using LocalSeconds = int64_t;

class Zone {
 public:
  const std::string& name() const { return name_; }
  // Seconds east of UTC at the instant (seconds since the epoch).
  int32_t offset_at(int64_t instant) const;
  // The instant a local time names. A time that happens twice (clocks turned back) names the
  // first; a time that does not exist (clocks turned forward) names the instant as many seconds
  // after the skip as the time is after the skipped hour's start, as Go's time.Date does: 02:30
  // on the night CET turns to CEST is 03:30 CEST.
  int64_t instant_of(LocalSeconds local) const;
  LocalSeconds local_of(int64_t instant) const { return instant + offset_at(instant); }

  // Parses a TZif file's contents; `name` is kept for messages.
  static Result<Zone> parse(std::string name, std::string_view tzif);
  // A fixed offset (UTC is Zone::fixed("UTC", 0)).
  static Zone fixed(std::string name, int32_t offset);

 private:
  // A POSIX TZ rule's transition date: Mm.w.d (kind 'M'), Jn (1 to 365, no leap day: 'J'), or n
  // (0 to 365, leap day counted: 'N'); `time` is the local time of day it takes effect.
  struct RuleDate {
    char kind = 'M';
    int month = 0, week = 0, day = 0;
    int64_t time = 7200;
  };
  struct Rule {
    int32_t std_offset = 0;
    bool has_dst = false;
    int32_t dst_offset = 0;
    RuleDate start, end;
  };
  static Result<Rule> parse_rule(std::string_view s);
  static int64_t rule_date_local(const RuleDate& d, int year);
  int32_t rule_offset(int64_t instant) const;

  std::string name_;
  std::vector<int64_t> transitions_;  // instants, ascending
  std::vector<int32_t> offsets_;      // the offset from each transition on
  int32_t initial_ = 0;               // before the first transition
  bool has_rule_ = false;
  Rule rule_;
};

// Loads a zone by IANA name ("Europe/Berlin", "UTC") from $TZDIR or /usr/share/zoneinfo,
// once per process; later calls share it. A name that is not a plain relative path, or names no
// readable TZif file, is an error that says so.
Result<std::shared_ptr<const Zone>> load(std::string_view name);

}  // namespace spotshift::tz
