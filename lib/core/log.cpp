#include "core/log.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>

#include <atomic>
#include <iostream>
#include <mutex>

namespace spotshift::log {

namespace {
std::atomic<int> g_verbosity{0};
std::atomic<Format> g_format{Format::kText};
std::mutex g_mutex;
std::ostream* g_sink = nullptr;

std::string_view level_name(Level level) {
  switch (level) {
    case Level::kError:
      return "error";
    case Level::kWarn:
      return "warn";
    case Level::kInfo:
      return "info";
    case Level::kDebug:
      return "debug";
  }
  return "info";
}

bool needs_quotes(std::string_view s) {
  if (s.empty()) return true;
  for (unsigned char c : s)
    if (c <= ' ' || c == '"' || c == '=' || c == '\\') return true;
  return false;
}

void append_value(std::string& out, const Value& v, bool json) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (json || needs_quotes(x)) append_json_string(out, x);
          else out += x;
        } else if constexpr (std::is_same_v<T, bool>) {
          out += x ? "true" : "false";
        } else {
          out += fmt::format("{}", x);
        }
      },
      v.get());
}
}  // namespace

Value::Value(Duration d, int) : v_(format_go_duration(d)) {}

Result<Format> parse_format(std::string_view s) {
  if (s == "text") return Format::kText;
  if (s == "json") return Format::kJson;
  return Error::invalid(fmt::format("invalid log format \"{}\": want text or json", s));
}

void configure(Format format, int verbosity) {
  g_format = format;
  g_verbosity = verbosity;
}

int verbosity() { return g_verbosity.load(std::memory_order_relaxed); }

void set_sink(std::ostream* sink) {
  std::lock_guard lock(g_mutex);
  g_sink = sink;
}

std::string format_line(Format format, Time time, Level level, std::string_view logger, std::string_view message, Fields fields) {
  std::string out;
  if (format == Format::kJson) {
    out += "{\"ts\":";
    append_json_string(out, format_micro_time(time));
    out += ",\"level\":";
    append_json_string(out, level_name(level));
    out += ",\"logger\":";
    append_json_string(out, logger);
    out += ",\"msg\":";
    append_json_string(out, message);
    for (const auto& f : fields) {
      out += ',';
      append_json_string(out, f.key);
      out += ':';
      append_value(out, f.value, true);
    }
    out += "}\n";
  } else {
    out += format_micro_time(time);
    out += fmt::format(" {:<5} {}: {}", level_name(level), logger, message);
    for (const auto& f : fields) {
      out += ' ';
      out += f.key;
      out += '=';
      append_value(out, f.value, false);
    }
    out += '\n';
  }
  return out;
}

void Logger::write(Level level, std::string_view message, Fields fields) const {
  std::string line = format_line(g_format.load(), std::chrono::system_clock::now(), level, name_, message, fields);
  std::lock_guard lock(g_mutex);
  std::ostream& out = g_sink ? *g_sink : std::cerr;
  out << line;
  out.flush();
}

}  // namespace spotshift::log
