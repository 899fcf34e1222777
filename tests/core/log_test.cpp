#include "core/log.hpp"

#include "support/catch.hpp"

#include <sstream>

using namespace spotshift;

TEST_CASE("text log lines carry time, level, logger, message and key-values", "[log]") {
  Time t = Time{} + std::chrono::seconds(1);
  auto line = log::format_line(log::Format::kText, t, log::Level::kInfo, "evictor", "evicted pod",
                               {{"pod", "default/web-1"}, {"attempt", 2}, {"note", "has space"}, {"ok", true}});
  CHECK(line ==
        "1970-01-01T00:00:01.000000Z info  evictor: evicted pod pod=default/web-1 attempt=2 "
        "note=\"has space\" ok=true\n");
}

TEST_CASE("JSON log lines are one object per line", "[log]") {
  Time t = Time{};
  auto line =
      log::format_line(log::Format::kJson, t, log::Level::kWarn, "kube", "say \"hi\"\n", {{"n", 3}, {"delay", std::chrono::seconds(90)}});
  CHECK(line ==
        "{\"ts\":\"1970-01-01T00:00:00.000000Z\",\"level\":\"warn\",\"logger\":\"kube\","
        "\"msg\":\"say \\\"hi\\\"\\n\",\"n\":3,\"delay\":\"1m30s\"}\n");
}

TEST_CASE("debug lines appear only at or above their -v level", "[log]") {
  std::ostringstream out;
  log::set_sink(&out);
  log::configure(log::Format::kText, 1);
  log::Logger l("t");
  l.debug(1, "shown");
  l.debug(2, "hidden");
  l.error("always");
  log::set_sink(nullptr);
  log::configure(log::Format::kText, 0);
  CHECK(out.str().find("shown") != std::string::npos);
  CHECK(out.str().find("hidden") == std::string::npos);
  CHECK(out.str().find("always") != std::string::npos);
  CHECK(log::parse_format("json").value() == log::Format::kJson);
  CHECK_FALSE(log::parse_format("xml"));
}
