// The one Catch-dependent helper of support/process.hpp: process.cpp stays free of Catch so that
// benchmarks, which have their own main, can use it too.

#include "support/catch.hpp"
#include "support/process.hpp"

namespace spotshift::testing {

void require_tool(const std::string& name) {
  if (!tool_installed(name)) FAIL(name << " is not installed; run scripts/setup.sh (make test does)");
}

}  // namespace spotshift::testing
