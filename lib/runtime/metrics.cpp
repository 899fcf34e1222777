#include "runtime/metrics.hpp"

#include "core/strings.hpp"
#include "model/intern.hpp"
#include "runtime/telemetry.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cmath>
#include <fstream>
#include <sstream>

namespace spotshift::runtime {

namespace {

bool valid_name(std::string_view s, bool colon) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (colon && c == ':') ||
              (i > 0 && std::isdigit(static_cast<unsigned char>(c)));
    if (!ok) return false;
  }
  return true;
}

std::string escape_value(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string escape_help(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

std::string labels_text(const std::vector<std::string>& names, const std::vector<std::string>& values, const std::string& extra_name = "",
                        const std::string& extra_value = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += fmt::format("{}{}=\"{}\"", out.empty() ? "" : ",", names[i], escape_value(values[i]));
  if (!extra_name.empty()) out += fmt::format("{}{}=\"{}\"", out.empty() ? "" : ",", extra_name, extra_value);
  return out.empty() ? "" : "{" + out + "}";
}

}  // namespace

void Metrics::Series::inc(double v) {
  std::lock_guard lock(*mutex_);
  value_ += v;
}
void Metrics::Series::dec(double v) {
  std::lock_guard lock(*mutex_);
  value_ -= v;
}
void Metrics::Series::set(double v) {
  std::lock_guard lock(*mutex_);
  value_ = v;
}
void Metrics::Series::observe(double v) {
  std::lock_guard lock(*mutex_);
  value_ += v;
  ++count_;
  for (size_t i = 0; i < bounds_.size(); ++i)
    if (v <= bounds_[i]) {
      ++buckets_[i];
      break;
    }
}
double Metrics::Series::value() const {
  std::lock_guard lock(*mutex_);
  return value_;
}
uint64_t Metrics::Series::count() const {
  std::lock_guard lock(*mutex_);
  return count_;
}

Metrics::Series& Metrics::Family::with(const std::vector<std::string>& values) {
  std::lock_guard lock(*mutex_);
  if (values.size() != labels.size())
    throw std::invalid_argument(fmt::format("metric {} takes {} label values, got {}", name, labels.size(), values.size()));
  auto& s = series[values];
  if (!s) {
    s = std::make_unique<Series>();
    s->mutex_ = mutex_;
    s->type_ = type;
    s->bounds_ = bounds;
    s->buckets_.assign(bounds.size(), 0);
  }
  return *s;
}

Metrics::Metrics() {
  counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.");
  gauge("process_resident_memory_bytes", "Resident memory size in bytes.");
  gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.");
  gauge("process_open_fds", "Number of open file descriptors.");
  gauge("process_max_fds", "Maximum number of open file descriptors.");
  gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.");
  family(telemetry::kInternedStrings);
  family(telemetry::kInternedStringBytes);
}

std::vector<double> Metrics::default_buckets() { return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}; }

Metrics::Family& Metrics::family(const std::string& name, const std::string& help, Type type, std::vector<std::string> labels,
                                 std::vector<double> bounds) {
  std::lock_guard lock(mutex_);
  if (!valid_name(name, true)) throw std::invalid_argument(fmt::format("invalid metric name \"{}\"", name));
  for (const auto& l : labels)
    if (!valid_name(l, false) || l.starts_with("__") || l == "le")
      throw std::invalid_argument(fmt::format("invalid label name \"{}\" for metric {}", l, name));
  for (auto& f : families_) {
    if (f->name != name) continue;
    if (f->type != type || f->labels != labels)
      throw std::invalid_argument(fmt::format("metric {} registered twice with different types or labels", name));
    return *f;
  }
  auto f = std::make_unique<Family>();
  f->mutex_ = &mutex_;
  f->name = name;
  f->help = help;
  f->type = type;
  f->labels = std::move(labels);
  f->bounds = std::move(bounds);
  families_.push_back(std::move(f));
  return *families_.back();
}

Metrics::Family& Metrics::family(const MetricDef& def) {
  return family(def.name, def.help, def.type, def.labels,
                def.type == Type::kHistogram && def.bounds.empty() ? default_buckets() : def.bounds);
}

Metrics::Family& Metrics::counter(const std::string& name, const std::string& help, std::vector<std::string> labels) {
  return family(name, help, Type::kCounter, std::move(labels), {});
}
Metrics::Family& Metrics::gauge(const std::string& name, const std::string& help, std::vector<std::string> labels) {
  return family(name, help, Type::kGauge, std::move(labels), {});
}
Metrics::Family& Metrics::histogram(const std::string& name, const std::string& help, std::vector<std::string> labels,
                                    std::vector<double> bounds) {
  std::sort(bounds.begin(), bounds.end());
  return family(name, help, Type::kHistogram, std::move(labels), std::move(bounds));
}

void Metrics::set_build_info(const std::string& version, const std::string& revision) {
  family(telemetry::kBuildInfo).with({version, revision}).set(1);
}

void Metrics::update_process_metrics() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  counter("process_cpu_seconds_total", "").get().set(cpu);
  long page = sysconf(_SC_PAGESIZE);
  std::ifstream statm("/proc/self/statm");
  long vsize_pages = 0, rss_pages = 0;
  statm >> vsize_pages >> rss_pages;
  gauge("process_resident_memory_bytes", "").get().set(double(rss_pages) * page);
  gauge("process_virtual_memory_bytes", "").get().set(double(vsize_pages) * page);
  int fds = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++fds;
    closedir(d);
    --fds;  // the directory stream itself
  }
  gauge("process_open_fds", "").get().set(fds);
  const model::InternStats interned = model::intern_stats();
  family(telemetry::kInternedStrings).get().set(static_cast<double>(interned.strings));
  family(telemetry::kInternedStringBytes).get().set(static_cast<double>(interned.bytes));
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) gauge("process_max_fds", "").get().set(static_cast<double>(rl.rlim_cur));
  // Start time: field 22 of /proc/self/stat (clock ticks after boot) plus the boot time.
  std::ifstream stat("/proc/self/stat");
  std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close = content.rfind(')');
  if (close != std::string::npos) {
    std::istringstream rest(content.substr(close + 2));
    std::string field;
    for (int i = 3; i <= 22 && rest >> field; ++i) {
      if (i != 22) continue;
      std::ifstream procstat("/proc/stat");
      std::string line;
      double btime = 0;
      while (std::getline(procstat, line))
        if (line.starts_with("btime ")) btime = std::stod(line.substr(6));
      gauge("process_start_time_seconds", "").get().set(btime + std::stod(field) / static_cast<double>(sysconf(_SC_CLK_TCK)));
    }
  }
}

std::string Metrics::render() {
  update_process_metrics();
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& f : families_) {
    const char* type = f->type == Type::kCounter ? "counter" : f->type == Type::kGauge ? "gauge" : "histogram";
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f->name, escape_help(f->help), f->name, type);
    for (const auto& [values, s] : f->series) {
      if (f->type != Type::kHistogram) {
        out += fmt::format("{}{} {}\n", f->name, labels_text(f->labels, values), number(s->value_));
        continue;
      }
      uint64_t cumulative = 0;
      for (size_t i = 0; i < f->bounds.size(); ++i) {
        cumulative += s->buckets_[i];
        out += fmt::format("{}_bucket{} {}\n", f->name, labels_text(f->labels, values, "le", number(f->bounds[i])), cumulative);
      }
      out += fmt::format("{}_bucket{} {}\n", f->name, labels_text(f->labels, values, "le", "+Inf"), s->count_);
      out += fmt::format("{}_sum{} {}\n", f->name, labels_text(f->labels, values), number(s->value_));
      out += fmt::format("{}_count{} {}\n", f->name, labels_text(f->labels, values), s->count_);
    }
  }
  return out;
}

Result<BindAddress> parse_bind_address(std::string_view text) {
  BindAddress a;
  if (text == "0") {
    a.disabled = true;
    return a;
  }
  auto bad = [&] { return Error::invalid(fmt::format("invalid bind address \"{}\": want host:port, :port or 0 to turn it off", text)); };
  std::string_view port_text;
  if (text.starts_with("[")) {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') return bad();
    a.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad();
    a.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  if (a.host.empty()) a.host = "0.0.0.0";
  auto p = parse_int(port_text);
  if (!p || *p < 0 || *p > 65535) return bad();
  a.port = static_cast<uint16_t>(*p);
  return a;
}

}  // namespace spotshift::runtime
