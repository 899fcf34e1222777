#pragma once
// A metrics registry: counters, gauges and histograms with labels, rendered in the Prometheus
// text exposition format (0.0.4), with the standard process metrics and a build_info gauge.
// Thread-safe; no Asio.

#include "core/error.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace spotshift::runtime {

class Metrics;

enum class MetricType { kCounter, kGauge, kHistogram };

// A metric family, declared once where its subsystem declares its telemetry
// (lib/runtime/telemetry.hpp, operator/telemetry.hpp) and registered by Metrics::family(def).
struct MetricDef {
  std::string name;
  std::string help;
  MetricType type = MetricType::kCounter;
  std::vector<std::string> labels;
  std::vector<double> bounds;  // histograms; empty for the default buckets
};

class Metrics {
 public:
  using Type = MetricType;

  class Series {
   public:
    void inc(double v = 1);  // counters and gauges
    void dec(double v = 1);  // gauges
    void set(double v);      // gauges
    void observe(double v);  // histograms
    double value() const;
    uint64_t count() const;  // histograms: observations
   private:
    friend class Metrics;
    std::mutex* mutex_ = nullptr;
    Type type_ = Type::kCounter;
    double value_ = 0;  // counter/gauge value, histogram sum
    uint64_t count_ = 0;
    std::vector<double> bounds_;
    std::vector<uint64_t> buckets_;  // cumulative counts are computed when rendering
  };

  class Family {
   public:
    // The series for these label values (in the order of the family's label names).
    Series& with(const std::vector<std::string>& values);
    Series& get() { return with({}); }

   private:
    friend class Metrics;
    std::mutex* mutex_ = nullptr;
    std::string name, help;
    Type type = Type::kCounter;
    std::vector<std::string> labels;
    std::vector<double> bounds;
    std::map<std::vector<std::string>, std::unique_ptr<Series>> series;
  };

  Metrics();
  // The family a declaration names, registered on first use.
  Family& family(const MetricDef& def);
  // Names must match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*; a name
  // registered twice returns the same family (an error if the type or labels differ).
  Family& counter(const std::string& name, const std::string& help, std::vector<std::string> labels = {});
  Family& gauge(const std::string& name, const std::string& help, std::vector<std::string> labels = {});
  Family& histogram(const std::string& name, const std::string& help, std::vector<std::string> labels = {},
                    std::vector<double> bounds = default_buckets());
  static std::vector<double> default_buckets();

  void set_build_info(const std::string& version, const std::string& revision);
  // The exposition text, process metrics included.
  std::string render();

 private:
  Family& family(const std::string& name, const std::string& help, Type type, std::vector<std::string> labels, std::vector<double> bounds);
  void update_process_metrics();

  std::mutex mutex_;
  std::vector<std::unique_ptr<Family>> families_;
};

// Parses a bind address: ":8080" (every interface), "127.0.0.1:0", "[::1]:9090". "0" means off.
struct BindAddress {
  std::string host;
  uint16_t port = 0;
  bool disabled = false;
};
Result<BindAddress> parse_bind_address(std::string_view text);

}  // namespace spotshift::runtime
