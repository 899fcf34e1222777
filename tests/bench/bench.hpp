#pragma once
// Benchmark helpers: timing loops and the one-JSON-line report every benchmark prints.

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace spotshift::bench {

// {"name": ..., "value": ..., "unit": ..., "goal": ...} on one line.
inline void report(const std::string& name, double value, const std::string& unit, const std::string& goal) {
  std::printf("%s\n", fmt::format(R"({{"name":"{}","value":{:.4g},"unit":"{}","goal":"{}"}})", name, value, unit, goal).c_str());
  std::fflush(stdout);
}

// Runs f repeatedly for at least `budget` and returns the mean time per call in nanoseconds.
template <class F>
double time_per_call_ns(F&& f, std::chrono::milliseconds budget = std::chrono::milliseconds(500)) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < 3; ++i) f();  // warm up
  size_t calls = 0;
  auto start = clock::now();
  auto deadline = start + budget;
  while (clock::now() < deadline) {
    for (int i = 0; i < 16; ++i) f();
    calls += 16;
  }
  return std::chrono::duration<double, std::nano>(clock::now() - start).count() / static_cast<double>(calls);
}

}  // namespace spotshift::bench
