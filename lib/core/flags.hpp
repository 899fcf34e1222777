#pragma once
// Command-line flags in the style of kubectl and controller-runtime operators: --name=value,
// --name value, -x value, booleans as --name or --name=false. Errors name the flag and say
// where to get help. Both binaries (spotshift's commands and kubesim) parse with it.

#include "core/error.hpp"

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace spotshift {

class FlagSet {
 public:
  // Reads a flag's value and stores it; returns what is wrong with the value, or "".
  using Setter = std::function<std::string(const std::string&)>;

  // `command` as shown in messages ("spotshift run").
  FlagSet(std::string command, std::string summary) : command_(std::move(command)), summary_(std::move(summary)) {}

  void add_string(std::string name, std::string* target, std::string help, std::string short_name = {});
  void add_bool(std::string name, bool* target, std::string help);
  void add_int(std::string name, int* target, std::string help, std::string short_name = {});
  // A value checked when parsed (an enum, a duration): check returns an error message or "".
  void add_checked(std::string name, std::string* target, std::string help, std::function<std::string(const std::string&)> check,
                   std::string short_name = {});
  // A value of any type: `set` parses and stores it. `type` and `default_text` are what the
  // usage shows ("duration", "1s").
  void add_value(std::string name, std::string type, std::string default_text, std::string help, Setter set);
  // Text printed after the flags in the usage.
  void set_footer(std::string text) { footer_ = std::move(text); }

  // Parses args (without the program and command names). Positional arguments are errors.
  // Sets *help when -h or --help is given.
  Result<void> parse(const std::vector<std::string>& args, bool* help);
  // parse() as a command uses it: an error is printed to err (exit code 2), --help prints the
  // usage to out (exit code 0). Returns the exit code when the command should stop there.
  std::optional<int> parse_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
  // Whether a flag was given explicitly.
  bool given(const std::string& name) const;
  std::string usage() const;

 private:
  struct Flag {
    std::string name, short_name, help, type, default_text;
    bool is_bool = false;
    Setter set;
    bool given = false;
  };
  Flag* find(std::string_view name);
  void add(Flag f) { flags_.push_back(std::move(f)); }

  std::string command_, summary_, footer_;
  std::vector<Flag> flags_;
};

}  // namespace spotshift
