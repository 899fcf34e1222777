#pragma once
// Structured logging to stderr, as text or JSON lines, with klog-style -v levels.
//
//   static const log::Logger logger("evictor");
//   logger.info("evicted pod", {{"pod", "default/web-1"}, {"node", node}});
//   logger.debug(2, "watch event", {{"type", "MODIFIED"}});

#include "core/time.hpp"

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

namespace spotshift::log {

enum class Level { kError, kWarn, kInfo, kDebug };
enum class Format { kText, kJson };

Result<Format> parse_format(std::string_view s);

// A log value: text, integer, floating point or boolean.
class Value {
 public:
  Value(std::string_view s) : v_(std::string(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(const std::string& s) : v_(s) {}
  Value(bool b) : v_(b) {}
  Value(double d) : v_(d) {}
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  Value(I i) : v_(static_cast<int64_t>(i)) {}
  template <class Rep, class Period>
  Value(std::chrono::duration<Rep, Period> d) : Value(std::chrono::duration_cast<Duration>(d), 0) {}
  Value(const Error& e) : v_(e.to_string()) {}

  const std::variant<std::string, int64_t, double, bool>& get() const { return v_; }

 private:
  Value(Duration d, int);
  std::variant<std::string, int64_t, double, bool> v_;
};

struct Field {
  std::string_view key;
  Value value;
};
using Fields = std::initializer_list<Field>;

// Process-wide settings. Verbosity 0 shows error, warn and info; debug(v) needs verbosity >= v.
void configure(Format format, int verbosity);
int verbosity();
// Tests redirect output here (nullptr restores stderr).
void set_sink(std::ostream* sink);

class Logger {
 public:
  explicit Logger(std::string name) : name_(std::move(name)) {}
  void error(std::string_view message, Fields fields = {}) const { write(Level::kError, message, fields); }
  void warn(std::string_view message, Fields fields = {}) const { write(Level::kWarn, message, fields); }
  void info(std::string_view message, Fields fields = {}) const { write(Level::kInfo, message, fields); }
  void debug(int v, std::string_view message, Fields fields = {}) const {
    if (enabled(v)) write(Level::kDebug, message, fields);
  }
  static bool enabled(int v) { return verbosity() >= v; }
  const std::string& name() const { return name_; }

 private:
  void write(Level level, std::string_view message, Fields fields) const;
  std::string name_;
};

// Formats one line without writing it; used by Logger and by tests.
std::string format_line(Format format, Time time, Level level, std::string_view logger, std::string_view message, Fields fields);

}  // namespace spotshift::log
