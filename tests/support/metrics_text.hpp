#pragma once
// Reading Prometheus exposition text in tests.

#include <initializer_list>
#include <string>

namespace spotshift::testing {

// A sample's value ("name" or "name{labels}" as written in the text), or -1 when it is missing.
inline double metric_sample(const std::string& text, const std::string& series) {
  auto at = text.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + series.size() + 2));
}

// The sum of a family's samples whose labels include each of labels ("client=\"events\"", ...).
inline double metric_sum(const std::string& text, const std::string& name, std::initializer_list<std::string> labels) {
  double sum = 0;
  size_t at = 0;
  const std::string start = "\n" + name + "{";
  while ((at = text.find(start, at)) != std::string::npos) {
    size_t close = text.find("} ", at);
    std::string series = text.substr(at + start.size(), close - at - start.size());
    bool all = true;
    for (const auto& l : labels) all = all && series.find(l) != std::string::npos;
    if (all) sum += std::stod(text.substr(close + 2));
    at = close;
  }
  return sum;
}

}  // namespace spotshift::testing
