#pragma once
// `spotshift run`: the operator.

#include <iosfwd>
#include <string>
#include <vector>

namespace spotshift::op {

int run_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace spotshift::op
