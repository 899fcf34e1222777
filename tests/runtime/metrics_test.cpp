#include "runtime/metrics.hpp"
#include "model/intern.hpp"
#include "support/catch.hpp"
#include "support/metrics_text.hpp"

#include <regex>
#include <set>
#include <sstream>

using namespace spotshift::runtime;
using spotshift::testing::metric_sample;

namespace {
// A strict reader of the Prometheus text format: every sample belongs to a declared family,
// names and labels are well formed, histogram buckets are cumulative and end with +Inf = count.
void check_exposition(const std::string& text) {
  static const std::regex kHelp(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*)");
  static const std::regex kType(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped))");
  static const std::regex kSample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*)\})? (-?[0-9.eE+-]+|\+Inf|-Inf|NaN))");
  std::map<std::string, std::string> types;
  std::set<std::string> helped;
  std::istringstream in(text);
  std::string line, family;
  double last_bucket = -1;
  while (std::getline(in, line)) {
    INFO(line);
    std::smatch m;
    if (std::regex_match(line, m, kHelp)) {
      REQUIRE(helped.insert(m[1]).second);
      family = m[1];
      last_bucket = -1;
    } else if (std::regex_match(line, m, kType)) {
      REQUIRE(m[1] == family);
      types[m[1]] = m[2];
    } else {
      REQUIRE(std::regex_match(line, m, kSample));
      std::string name = m[1];
      REQUIRE(types.count(family));
      if (types[family] == "histogram") {
        REQUIRE((name == family + "_bucket" || name == family + "_sum" || name == family + "_count"));
        if (name == family + "_bucket") {
          double v = std::stod(m[7]);
          CHECK(v >= last_bucket);
          last_bucket = v;
        }
      } else {
        REQUIRE(name == family);
      }
    }
  }
  CHECK(text.back() == '\n');
}
}  // namespace

TEST_CASE("metrics render in the Prometheus text format", "[metrics]") {
  Metrics m;
  m.set_build_info("0.1.0", "abc");
  auto& drains = m.counter("spotshift_drains_total", "Drains by result.", {"policy", "result"});
  drains.with({"default", "succeeded"}).inc();
  drains.with({"default", "succeeded"}).inc(2);
  drains.with({"team \"a\"", "aborted"}).inc();
  m.gauge("spotshift_queue_depth", "Items waiting.").get().set(4);
  auto& h = m.histogram("spotshift_plan_duration_seconds", "Plan time.", {"policy"}, {0.01, 0.1, 1});
  h.with({"default"}).observe(0.005);
  h.with({"default"}).observe(0.05);
  h.with({"default"}).observe(5);
  std::string text = m.render();
  check_exposition(text);
  CHECK(text.find("spotshift_drains_total{policy=\"default\",result=\"succeeded\"} 3\n") != std::string::npos);
  CHECK(text.find(R"(spotshift_drains_total{policy="team \"a\"",result="aborted"} 1)") != std::string::npos);
  CHECK(text.find("spotshift_plan_duration_seconds_bucket{policy=\"default\",le=\"0.01\"} 1\n") != std::string::npos);
  CHECK(text.find("spotshift_plan_duration_seconds_bucket{policy=\"default\",le=\"1\"} 2\n") != std::string::npos);
  CHECK(text.find("spotshift_plan_duration_seconds_bucket{policy=\"default\",le=\"+Inf\"} 3\n") != std::string::npos);
  CHECK(text.find("spotshift_plan_duration_seconds_count{policy=\"default\"} 3\n") != std::string::npos);
  CHECK(text.find("spotshift_build_info{version=\"0.1.0\",revision=\"abc\"} 1\n") != std::string::npos);
  CHECK(text.find("process_resident_memory_bytes ") != std::string::npos);
  CHECK(text.find("process_open_fds ") != std::string::npos);
  CHECK(text.find("process_start_time_seconds ") != std::string::npos);
}

TEST_CASE("the interning pool's size is a metric, and grows with each new distinct string", "[metrics]") {
  Metrics m;
  std::string before = m.render();
  check_exposition(before);
  double strings = metric_sample(before, "spotshift_interned_strings"), bytes = metric_sample(before, "spotshift_interned_string_bytes");
  REQUIRE(strings >= 0);
  REQUIRE(bytes >= 0);
  const std::string fresh = "metrics-test-a-string-no-one-else-interns";
  spotshift::model::InternedString once(fresh), again(fresh);
  std::string after = m.render();
  CHECK(metric_sample(after, "spotshift_interned_strings") == strings + 1);
  CHECK(metric_sample(after, "spotshift_interned_string_bytes") >= bytes + static_cast<double>(fresh.size()));
}

TEST_CASE("bad metric names and label counts are refused", "[metrics]") {
  Metrics m;
  CHECK_THROWS_AS(m.counter("2bad", "x"), std::invalid_argument);
  CHECK_THROWS_AS(m.counter("ok", "x", {"le"}), std::invalid_argument);
  auto& f = m.counter("ok_total", "x", {"a"});
  CHECK_THROWS_AS(f.with({}), std::invalid_argument);
  CHECK_THROWS_AS(m.gauge("ok_total", "x", {"a"}), std::invalid_argument);
  CHECK(&m.counter("ok_total", "x", {"a"}) == &f);
  CHECK(parse_bind_address(":8080")->host == "0.0.0.0");
  CHECK(parse_bind_address("[::1]:9")->host == "::1");
  CHECK(parse_bind_address("0")->disabled);
  CHECK_FALSE(parse_bind_address("8080"));
  CHECK_FALSE(parse_bind_address("host:port"));
}
