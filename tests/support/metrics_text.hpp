#pragma once
// Reading Prometheus exposition text in tests.

#include <string>

namespace spotshift::testing {

// A sample's value ("name" or "name{labels}" as written in the text), or -1 when it is missing.
inline double metric_sample(const std::string& text, const std::string& series) {
  auto at = text.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + series.size() + 2));
}

}  // namespace spotshift::testing
