#include "core/tz.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>

namespace spotshift::tz {

namespace {

constexpr int64_t kDay = 86400;

// Days since the epoch of a civil date (proleptic Gregorian).
int64_t days_of(int year, int month, int day) {
  using namespace std::chrono;
  return sys_days(std::chrono::year(year) / std::chrono::month(static_cast<unsigned>(month)) / std::chrono::day(static_cast<unsigned>(day)))
      .time_since_epoch()
      .count();
}

bool leap(int year) { return std::chrono::year(year).is_leap(); }

int year_of(int64_t local) {
  using namespace std::chrono;
  int64_t days = local >= 0 ? local / kDay : -((-local + kDay - 1) / kDay);
  return static_cast<int>(year_month_day(sys_days(std::chrono::days(days))).year());
}

// A big-endian integer of `n` bytes at `p`.
int64_t be(std::string_view s, size_t p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(s[p + i]);
  if (n == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
  return static_cast<int64_t>(v);
}

// A POSIX TZ string reader: names, offsets ([+-]hh[:mm[:ss]]) and rule dates.
struct RuleReader {
  std::string_view s;
  size_t i = 0;
  bool ok = true;

  bool done() const { return i >= s.size(); }
  char peek() const { return done() ? '\0' : s[i]; }
  void name() {
    if (peek() == '<') {
      size_t end = s.find('>', i);
      if (end == std::string_view::npos || end == i + 1) ok = false;
      i = end == std::string_view::npos ? s.size() : end + 1;
      return;
    }
    size_t start = i;
    while (!done() && std::isalpha(static_cast<unsigned char>(peek()))) ++i;
    if (i - start < 3) ok = false;
  }
  int number() {
    if (!std::isdigit(static_cast<unsigned char>(peek()))) {
      ok = false;
      return 0;
    }
    int v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) v = v * 10 + (s[i++] - '0');
    return v;
  }
  // [+-]hh[:mm[:ss]] as seconds.
  int64_t hms() {
    int sign = 1;
    if (peek() == '+' || peek() == '-') sign = s[i++] == '-' ? -1 : 1;
    int64_t v = int64_t{number()} * 3600;
    if (peek() == ':') {
      ++i;
      v += int64_t{number()} * 60;
      if (peek() == ':') {
        ++i;
        v += number();
      }
    }
    return sign * v;
  }
};

}  // namespace

Result<Zone::Rule> Zone::parse_rule(std::string_view text) {
  RuleReader r{text};
  Rule rule;
  r.name();
  // POSIX offsets are west of UTC: "CET-1" is an hour east.
  rule.std_offset = static_cast<int32_t>(-r.hms());
  if (!r.done() && r.ok) {
    rule.has_dst = true;
    r.name();
    rule.dst_offset = rule.std_offset + 3600;
    if (!r.done() && r.peek() != ',') rule.dst_offset = static_cast<int32_t>(-r.hms());
    auto date = [&](RuleDate& d) {
      if (r.peek() != ',') {
        r.ok = false;
        return;
      }
      ++r.i;
      if (r.peek() == 'M') {
        ++r.i;
        d.kind = 'M';
        d.month = r.number();
        if (r.peek() == '.') ++r.i;
        d.week = r.number();
        if (r.peek() == '.') ++r.i;
        d.day = r.number();
        if (d.month < 1 || d.month > 12 || d.week < 1 || d.week > 5 || d.day > 6) r.ok = false;
      } else if (r.peek() == 'J') {
        ++r.i;
        d.kind = 'J';
        d.day = r.number();
        if (d.day < 1 || d.day > 365) r.ok = false;
      } else {
        d.kind = 'N';
        d.day = r.number();
        if (d.day > 365) r.ok = false;
      }
      if (r.peek() == '/') {
        ++r.i;
        d.time = r.hms();
      }
    };
    date(rule.start);
    date(rule.end);
  }
  if (!r.ok || !r.done()) return Error::invalid(fmt::format("the TZ rule \"{}\" is not valid", text));
  return rule;
}

// The local time (seconds since the epoch, as a wall clock) at which a rule date takes effect.
int64_t Zone::rule_date_local(const RuleDate& d, int year) {
  int64_t day = 0;
  if (d.kind == 'J') {
    day = days_of(year, 1, 1) + d.day - 1 + (leap(year) && d.day >= 60 ? 1 : 0);
  } else if (d.kind == 'N') {
    day = days_of(year, 1, 1) + d.day;
  } else {
    // Day d (0 = Sunday) of week w (5 = the last) of month m.
    int64_t first = days_of(year, d.month, 1);
    int first_wd = static_cast<int>(std::chrono::weekday(std::chrono::sys_days(std::chrono::days(first))).c_encoding());
    day = first + (d.day - first_wd + 7) % 7 + int64_t{d.week - 1} * 7;
    int next_month_year = d.month == 12 ? year + 1 : year;
    int64_t next_first = days_of(next_month_year, d.month == 12 ? 1 : d.month + 1, 1);
    while (day >= next_first) day -= 7;
  }
  return day * kDay + d.time;
}

int32_t Zone::rule_offset(int64_t instant) const {
  if (!rule_.has_dst) return rule_.std_offset;
  const int year = year_of(instant + rule_.std_offset);
  // DST starts at a local standard time and ends at a local daylight time.
  const int64_t start = rule_date_local(rule_.start, year) - rule_.std_offset;
  const int64_t end = rule_date_local(rule_.end, year) - rule_.dst_offset;
  bool dst = start < end ? (instant >= start && instant < end) : !(instant >= end && instant < start);
  return dst ? rule_.dst_offset : rule_.std_offset;
}

int32_t Zone::offset_at(int64_t instant) const {
  if (transitions_.empty() || instant < transitions_.front()) {
    if (transitions_.empty() && has_rule_) return rule_offset(instant);
    return initial_;
  }
  if (instant >= transitions_.back() && has_rule_) return rule_offset(instant);
  auto it = std::upper_bound(transitions_.begin(), transitions_.end(), instant);
  return offsets_[static_cast<size_t>(it - transitions_.begin()) - 1];
}

int64_t Zone::instant_of(LocalSeconds local) const {
  // The offsets in effect within a day of the time (a zone changes its offset at most a few
  // times a year): each that maps the local time to an instant where it is in effect is an
  // answer. Two: the time happens twice, the first is taken. None: it was skipped.
  int32_t candidates[3] = {offset_at(local - kDay), offset_at(local), offset_at(local + kDay)};
  std::optional<int64_t> best;
  int32_t smallest = candidates[0];
  for (int32_t off : candidates) {
    smallest = std::min(smallest, off);
    if (offset_at(local - off) == off && (!best || local - off < *best)) best = local - off;
  }
  // Skipped: read with the offset before the skip (the smaller one), which lands as far after
  // the skip as the time was after its start.
  return best ? *best : local - smallest;
}

Result<Zone> Zone::parse(std::string name, std::string_view s) {
  auto bad = [&](std::string_view why) { return Error::invalid(fmt::format("time zone {}: not a TZif file ({})", name, why)); };
  constexpr size_t kHeader = 44;
  if (s.size() < kHeader || s.substr(0, 4) != "TZif") return bad("no TZif header");
  auto counts = [&](size_t at, int64_t out[6]) {
    for (int k = 0; k < 6; ++k) out[k] = be(s, at + 20 + static_cast<size_t>(k) * 4, 4);
  };
  // Fields: isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt.
  int64_t c[6];
  counts(0, c);
  auto block_size = [&](const int64_t n[6], size_t time_size) {
    return static_cast<size_t>(n[3]) * time_size + static_cast<size_t>(n[3]) + static_cast<size_t>(n[4]) * 6 + static_cast<size_t>(n[5]) +
           static_cast<size_t>(n[2]) * (time_size + 4) + static_cast<size_t>(n[1]) + static_cast<size_t>(n[0]);
  };
  for (int k = 0; k < 6; ++k)
    if (c[k] < 0 || c[k] > 100000) return bad("counts out of range");
  size_t at = kHeader;
  size_t time_size = 4;
  const char version = s[4];
  if (version >= '2') {
    // Skip the 32-bit block to the 64-bit one.
    at += block_size(c, 4);
    if (s.size() < at + kHeader || s.substr(at, 4) != "TZif") return bad("no second header");
    counts(at, c);
    for (int k = 0; k < 6; ++k)
      if (c[k] < 0 || c[k] > 100000) return bad("counts out of range");
    at += kHeader;
    time_size = 8;
  }
  if (s.size() < at + block_size(c, time_size)) return bad("truncated");
  if (c[4] < 1) return bad("no local time types");
  Zone z;
  z.name_ = std::move(name);
  const size_t times = at, types = times + static_cast<size_t>(c[3]) * time_size, infos = types + static_cast<size_t>(c[3]);
  std::vector<int32_t> type_offsets;
  for (int64_t k = 0; k < c[4]; ++k) type_offsets.push_back(static_cast<int32_t>(be(s, infos + static_cast<size_t>(k) * 6, 4)));
  for (int64_t k = 0; k < c[3]; ++k) {
    z.transitions_.push_back(be(s, times + static_cast<size_t>(k) * time_size, time_size));
    auto type = static_cast<unsigned char>(s[types + static_cast<size_t>(k)]);
    if (type >= type_offsets.size()) return bad("a transition names no local time type");
    z.offsets_.push_back(type_offsets[type]);
  }
  if (!std::is_sorted(z.transitions_.begin(), z.transitions_.end())) return bad("transitions out of order");
  z.initial_ = type_offsets[0];
  if (version >= '2') {
    size_t footer = at + block_size(c, time_size);
    if (footer < s.size() && s[footer] == '\n') {
      size_t end = s.find('\n', footer + 1);
      std::string_view text = s.substr(footer + 1, end == std::string_view::npos ? std::string_view::npos : end - footer - 1);
      if (!text.empty()) {
        auto rule = parse_rule(text);
        if (!rule) return bad(rule.error().message);
        z.rule_ = *rule;
        z.has_rule_ = true;
      }
    }
  }
  return z;
}

Zone Zone::fixed(std::string name, int32_t offset) {
  Zone z;
  z.name_ = std::move(name);
  z.initial_ = offset;
  return z;
}

Result<std::shared_ptr<const Zone>> load(std::string_view name) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Zone>, std::less<>> zones;
  std::lock_guard lock(mu);
  if (auto it = zones.find(name); it != zones.end()) return it->second;
  // A relative path of name parts: no "..", no leading "/", nothing a file name would not hold.
  bool plain = !name.empty() && name.size() <= 64 && name.front() != '/' && name.back() != '/';
  for (char ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '/' && ch != '_' && ch != '-' && ch != '+') plain = false;
  if (name.find("//") != std::string_view::npos || name.find("..") != std::string_view::npos) plain = false;
  if (!plain) return Error::invalid(fmt::format("\"{}\" is not an IANA time zone name (such as Europe/Berlin or UTC)", name));
  std::shared_ptr<const Zone> zone;
  const char* dir = std::getenv("TZDIR");
  std::string path = fmt::format("{}/{}", dir && *dir ? dir : "/usr/share/zoneinfo", name);
  auto text = read_file(path);
  if (!text) {
    if (name == "UTC" || name == "Etc/UTC") zone = std::make_shared<const Zone>(Zone::fixed(std::string(name), 0));
    else return Error::invalid(fmt::format("unknown time zone \"{}\" (no {} in the tz database)", name, path));
  } else {
    auto parsed = Zone::parse(std::string(name), *text);
    if (!parsed) return Error::invalid(fmt::format("unknown time zone \"{}\": {}", name, parsed.error().message));
    zone = std::make_shared<const Zone>(std::move(*parsed));
  }
  zones.emplace(std::string(name), zone);
  return zone;
}

}  // namespace spotshift::tz
