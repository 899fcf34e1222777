#include "core/cron.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>

#include <array>
#include <chrono>

namespace spotshift {

namespace {

constexpr int64_t kMinute = 60, kHour = 3600, kDay = 86400;

struct Field {
  std::string_view name;
  int min, max;
  std::array<std::string_view, 12> names;  // names for min, min+1, ... (months, weekdays)
};

constexpr Field kFields[5] = {
    {"minute", 0, 59, {}},
    {"hour", 0, 23, {}},
    {"day-of-month", 1, 31, {}},
    {"month", 1, 12, {"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
    {"day-of-week", 0, 7, {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
};

std::optional<int> value_of(const Field& f, std::string_view s) {
  for (size_t k = 0; k < f.names.size(); ++k)
    if (!f.names[k].empty() && s.size() == 3 &&
        std::equal(s.begin(), s.end(), f.names[k].begin(), [](char a, char b) { return std::toupper(static_cast<unsigned char>(a)) == b; }))
      return f.min + static_cast<int>(k);
  if (s.empty() || s.size() > 4) return std::nullopt;
  int v = 0;
  for (char ch : s) {
    if (!std::isdigit(static_cast<unsigned char>(ch))) return std::nullopt;
    v = v * 10 + (ch - '0');
  }
  return v;
}

// One field into the values it matches (bit k for value k); returns the error's text.
std::optional<std::string> parse_field(const Field& f, std::string_view text, std::bitset<64>& out) {
  for (std::string_view part : split(text, ',')) {
    int lo = f.min, hi = f.max, step = 1;
    std::string_view range = part;
    if (auto slash = part.find('/'); slash != std::string_view::npos) {
      auto s = value_of(Field{f.name, 0, 0, {}}, part.substr(slash + 1));
      if (!s || *s < 1) return fmt::format("the step \"{}\" is not a positive number", part.substr(slash + 1));
      step = *s;
      range = part.substr(0, slash);
    }
    if (range != "*") {
      auto dash = range.find('-');
      auto a = value_of(f, range.substr(0, dash));
      if (!a) return fmt::format("\"{}\" is not a number{}", range.substr(0, dash), f.names[0].empty() ? "" : " or a name");
      lo = hi = *a;
      if (dash != std::string_view::npos) {
        auto b = value_of(f, range.substr(dash + 1));
        if (!b) return fmt::format("\"{}\" is not a number{}", range.substr(dash + 1), f.names[0].empty() ? "" : " or a name");
        hi = *b;
      } else if (step > 1) {
        hi = f.max;  // "5/15": from 5 on
      }
      for (int v : {lo, hi})
        if (v < f.min || v > f.max) return fmt::format("{} is out of range {}-{}", v, f.min, f.max);
      if (lo > hi) return fmt::format("the range {}-{} runs backwards", lo, hi);
    }
    for (int v = lo; v <= hi; v += step) out.set(static_cast<size_t>(v));
  }
  return std::nullopt;
}

std::string_view expand_macro(std::string_view text) {
  if (text == "@yearly" || text == "@annually") return "0 0 1 1 *";
  if (text == "@monthly") return "0 0 1 * *";
  if (text == "@weekly") return "0 0 * * 0";
  if (text == "@daily" || text == "@midnight") return "0 0 * * *";
  if (text == "@hourly") return "0 * * * *";
  return {};
}

}  // namespace

Result<CronSchedule> CronSchedule::parse(std::string_view text) {
  CronSchedule c;
  c.text_ = std::string(text);
  std::string_view body = text;
  if (text.starts_with("@")) {
    body = expand_macro(text);
    if (body.empty())
      return Error::invalid(fmt::format("\"{}\" is not a schedule macro (@yearly, @monthly, @weekly, @daily, @hourly)", text));
  }
  std::vector<std::string_view> fields;
  for (std::string_view f : split(body, ' '))
    if (!f.empty()) fields.push_back(f);
  if (fields.size() != 5)
    return Error::invalid(
        fmt::format("\"{}\" has {} fields; a schedule has five: minute hour day-of-month month day-of-week", text, fields.size()));
  std::bitset<64> bits[5];
  for (int k = 0; k < 5; ++k)
    if (auto err = parse_field(kFields[k], fields[static_cast<size_t>(k)], bits[k]))
      return Error::invalid(fmt::format("{} field \"{}\": {}", kFields[k].name, fields[static_cast<size_t>(k)], *err));
  for (size_t v = 0; v < 60; ++v) c.minutes_[v] = bits[0][v];
  for (size_t v = 0; v < 24; ++v) c.hours_[v] = bits[1][v];
  for (size_t v = 1; v <= 31; ++v) c.mdays_[v] = bits[2][v];
  for (size_t v = 1; v <= 12; ++v) c.months_[v] = bits[3][v];
  for (size_t v = 0; v < 7; ++v) c.wdays_[v] = bits[4][v];
  if (bits[4][7]) c.wdays_[0] = true;
  c.mday_star_ = fields[2].starts_with("*");
  c.wday_star_ = fields[4].starts_with("*");
  return c;
}

bool CronSchedule::day_matches(int mday, int month, int wday) const {
  if (!months_[static_cast<size_t>(month)]) return false;
  bool m = mdays_[static_cast<size_t>(mday)], w = wdays_[static_cast<size_t>(wday)];
  if (mday_star_ || wday_star_) return m && w;
  return m || w;
}

std::optional<Time> CronSchedule::next(Time after, const tz::Zone& zone, int horizon_years) const {
  using namespace std::chrono;
  const int64_t after_s = floor<seconds>(after.time_since_epoch()).count();
  // Local times in order from three hours before `after`'s: a daylight-saving change moves an
  // instant against the local order by less than that. Among the fire times after `after`, the
  // earliest instant wins, so the walk goes on a few hours past the first one found.
  const tz::LocalSeconds from = zone.local_of(after_s);
  tz::LocalSeconds local = (from - 3 * kHour) / kMinute * kMinute;
  const tz::LocalSeconds end = from + int64_t{horizon_years} * 366 * kDay;
  std::optional<int64_t> best;
  tz::LocalSeconds stop = end;
  while (local <= std::min(end, stop)) {
    const int64_t days = local >= 0 ? local / kDay : -((-local + kDay - 1) / kDay);
    const int64_t secs = local - days * kDay;
    const sys_days day{std::chrono::days(days)};
    const year_month_day ymd(day);
    const int month = static_cast<int>(static_cast<unsigned>(ymd.month()));
    if (!months_[static_cast<size_t>(month)]) {
      const year_month_day first = (ymd.year() / ymd.month() / 1) + months(1);
      local = sys_days(first).time_since_epoch().count() * kDay;
      continue;
    }
    if (!day_matches(static_cast<int>(static_cast<unsigned>(ymd.day())), month, static_cast<int>(weekday(day).c_encoding()))) {
      local = (days + 1) * kDay;
      continue;
    }
    const int hour = static_cast<int>(secs / kHour), minute = static_cast<int>(secs % kHour / kMinute);
    if (!hours_[static_cast<size_t>(hour)]) {
      local = days * kDay + (hour + 1) * kHour;
      continue;
    }
    if (minutes_[static_cast<size_t>(minute)]) {
      const int64_t at = zone.instant_of(local);
      if (at > after_s) {
        if (!best || at < *best) best = at;
        if (stop == end) stop = local + 4 * kHour;
      }
    }
    local += kMinute;
  }
  if (!best) return std::nullopt;
  return Time(seconds(*best));
}

}  // namespace spotshift
