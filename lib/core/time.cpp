#include "core/time.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

namespace spotshift {

namespace {

using namespace std::chrono;

struct Parts {
  int year, month, day, hour, minute, second;
  long long micros;
};

Parts split(Time t) {
  auto us = time_point_cast<microseconds>(t);
  auto day = floor<days>(us);
  year_month_day ymd{day};
  hh_mm_ss hms{us - day};
  return Parts{int(ymd.year()),
               int(unsigned(ymd.month())),
               int(unsigned(ymd.day())),
               int(hms.hours().count()),
               int(hms.minutes().count()),
               int(hms.seconds().count()),
               static_cast<long long>(hms.subseconds().count())};
}

bool digits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

}  // namespace

std::string format_time(Time t) {
  Parts p = split(t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", p.year, p.month, p.day, p.hour, p.minute, p.second);
}

std::string format_micro_time(Time t) {
  Parts p = split(t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", p.year, p.month, p.day, p.hour, p.minute, p.second, p.micros);
}

Result<Time> parse_time(std::string_view s) {
  auto bad = [&] { return Error::invalid(fmt::format("invalid time \"{}\": want RFC 3339 such as 2025-01-02T03:04:05Z", s)); };
  int y, mo, d, h, mi, sec;
  if (!digits(s, 0, 4, y) || s.size() < 20 || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' || !digits(s, 8, 2, d) ||
      (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(s, 11, 2, h) || s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' ||
      !digits(s, 17, 2, sec))
    return bad();
  size_t pos = 19;
  long long nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int n = 0;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      if (n < 9) nanos = nanos * 10 + (s[pos] - '0');
      ++n;
      ++pos;
    }
    if (n == 0) return bad();
    for (int i = n; i < 9; ++i) nanos *= 10;
  }
  long long offset_seconds = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!digits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' || !digits(s, pos + 4, 2, om)) return bad();
    offset_seconds = (oh * 3600LL + om * 60LL) * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return bad();
  }
  if (pos != s.size()) return bad();
  year_month_day ymd{year{y}, month{unsigned(mo)}, day{unsigned(d)}};
  if (!ymd.ok() || h > 23 || mi > 59 || sec > 60) return bad();
  // Time counts nanoseconds in 64 bits: about 1678 to 2261.
  if (y < 1678 || y > 2261) return Error::invalid(fmt::format("invalid time \"{}\": year {} is outside 1678-2261", s, y));
  Time t = sys_days{ymd} + hours{h} + minutes{mi} + seconds{sec} - seconds{offset_seconds};
  return t + duration_cast<Time::duration>(nanoseconds{nanos});
}

Result<Duration> parse_go_duration(std::string_view s) {
  auto bad = [&](std::string_view why) {
    return Error::invalid(fmt::format("invalid duration \"{}\": {} (want a Go duration such as 10s, 2m or 1h30m)", s, why));
  };
  if (s.empty()) return bad("empty");
  size_t pos = 0;
  bool negative = false;
  if (s[0] == '-' || s[0] == '+') {
    negative = s[0] == '-';
    ++pos;
  }
  if (s.substr(pos) == "0") return Duration{0};
  if (pos == s.size()) return bad("no number");
  long double total = 0;
  while (pos < s.size()) {
    size_t start = pos;
    long double value = 0;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) value = value * 10 + (s[pos++] - '0');
    bool any = pos > start;
    if (pos < s.size() && s[pos] == '.') {
      ++pos;
      long double scale = 0.1L;
      while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
        value += (s[pos++] - '0') * scale;
        scale /= 10;
        any = true;
      }
    }
    if (!any) return bad("expected a number");
    size_t unit_start = pos;
    while (pos < s.size() && !std::isdigit(static_cast<unsigned char>(s[pos])) && s[pos] != '.') ++pos;
    std::string_view unit = s.substr(unit_start, pos - unit_start);
    long double mult;
    if (unit == "ns") mult = 1;
    else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") mult = 1e3L;
    else if (unit == "ms") mult = 1e6L;
    else if (unit == "s") mult = 1e9L;
    else if (unit == "m") mult = 60e9L;
    else if (unit == "h") mult = 3600e9L;
    else if (unit.empty()) return bad("missing unit");
    else return bad(fmt::format("unknown unit \"{}\"", unit));
    total += value * mult;
  }
  if (total > 9.2e18L) return bad("out of range");
  auto ns = static_cast<long long>(std::llround(total));
  return Duration{negative ? -ns : ns};
}

std::string format_go_duration(Duration d) {
  using namespace std::chrono;
  if (d == Duration::zero()) return "0s";
  std::string out;
  if (d < Duration::zero()) {
    out = "-";
    d = -d;
  }
  if (d < seconds{1}) {
    if (d % milliseconds{1} == Duration::zero()) return out + fmt::format("{}ms", d / milliseconds{1});
    if (d % microseconds{1} == Duration::zero()) return out + fmt::format("{}us", d / microseconds{1});
    return out + fmt::format("{}ns", d.count());
  }
  auto h = duration_cast<hours>(d);
  d -= h;
  auto m = duration_cast<minutes>(d);
  d -= m;
  if (h.count()) out += fmt::format("{}h", h.count());
  if (m.count()) out += fmt::format("{}m", m.count());
  if (d != Duration::zero()) {
    if (d % seconds{1} == Duration::zero()) {
      out += fmt::format("{}s", duration_cast<seconds>(d).count());
    } else {
      std::string frac = fmt::format("{:09}", (d % seconds{1}).count());
      while (!frac.empty() && frac.back() == '0') frac.pop_back();
      out += fmt::format("{}.{}s", duration_cast<seconds>(d).count(), frac);
    }
  }
  return out;
}

std::string format_age(Duration d) {
  using namespace std::chrono;
  long long s = duration_cast<seconds>(d).count();
  if (s < 0) s = 0;
  auto with = [](long long a, const char* ua, long long b, const char* ub) {
    return b ? fmt::format("{}{}{}{}", a, ua, b, ub) : fmt::format("{}{}", a, ua);
  };
  if (s < 120) return fmt::format("{}s", s);
  long long m = s / 60;
  if (m < 10) return with(m, "m", s % 60, "s");
  long long h = m / 60;
  if (h < 3) return fmt::format("{}m", m);
  if (h < 8) return with(h, "h", m % 60, "m");
  long long days = h / 24;
  if (h < 48) return fmt::format("{}h", h);
  if (days < 8) return with(days, "d", h % 24, "h");
  if (days < 365 * 2) return fmt::format("{}d", days);
  return fmt::format("{}y", days / 365);
}

}  // namespace spotshift
