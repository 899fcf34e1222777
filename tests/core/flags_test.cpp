#include "core/flags.hpp"

#include <catch2/catch.hpp>

#include <sstream>

using namespace spotshift;

namespace {
struct Parsed {
  std::string name = "default", mode = "text";
  bool verbose = false;
  int level = 0;
  double ratio = 1;
  FlagSet flags{"tool run", "Runs the tool."};
  Parsed() {
    flags.add_string("name", &name, "A name.", "n");
    flags.add_bool("verbose", &verbose, "Say more.");
    flags.add_int("level", &level, "A level.");
    flags.add_checked("mode", &mode, "text or json.",
                      [](const std::string& v) { return v == "text" || v == "json" ? "" : "must be text or json"; });
    flags.add_value("ratio", "float", "1", "A positive ratio.", [this](const std::string& v) {
      double x = std::stod(v.empty() ? "0" : v);
      if (!(x > 0)) return std::string("want a positive number");
      ratio = x;
      return std::string();
    });
  }
  Result<void> parse(std::vector<std::string> args, bool* help = nullptr) {
    bool h = false;
    return flags.parse(args, help ? help : &h);
  }
};
}  // namespace

TEST_CASE("flags parse as kubectl's do: --name=value, --name value, -x value, bare booleans", "[flags]") {
  Parsed p;
  REQUIRE(p.parse({"--name=a", "--verbose", "--level", "3", "--mode", "json", "--ratio=0.5"}));
  CHECK(p.name == "a");
  CHECK(p.verbose);
  CHECK(p.level == 3);
  CHECK(p.mode == "json");
  CHECK(p.ratio == 0.5);
  CHECK(p.flags.given("level"));
  CHECK_FALSE(Parsed().flags.given("level"));

  Parsed q;
  REQUIRE(q.parse({"-n", "b", "-verbose=false", "-level=-2"}));
  CHECK(q.name == "b");
  CHECK_FALSE(q.verbose);
  CHECK(q.level == -2);
}

TEST_CASE("a flag error names the flag, the value and where to get help", "[flags]") {
  auto error = [](std::vector<std::string> args) {
    Parsed p;
    auto r = p.parse(args);
    REQUIRE_FALSE(r);
    return r.error().message;
  };
  CHECK(error({"--frobnicate"}) == R"(unknown flag "--frobnicate" (see tool run --help))");
  CHECK(error({"--frobnicate=1"}) == R"(unknown flag "--frobnicate" (see tool run --help))");
  CHECK(error({"--name"}) == "flag --name needs a value (see tool run --help)");
  CHECK(error({"extra"}) == R"(unexpected argument "extra" (see tool run --help))");
  CHECK(error({"--level", "three"}) == R"(invalid value "three" for --level: must be an integer)");
  CHECK(error({"--verbose=maybe"}) == R"(invalid value "maybe" for --verbose: must be true or false)");
  CHECK(error({"--mode", "xml"}) == R"(invalid value "xml" for --mode: must be text or json)");
  CHECK(error({"--ratio", "-1"}) == R"(invalid value "-1" for --ratio: want a positive number)");
  CHECK(error({"-n"}) == "flag -n needs a value (see tool run --help)");
}

TEST_CASE("a rejected value leaves the default; --help prints the usage with types, defaults and the footer", "[flags]") {
  Parsed p;
  REQUIRE_FALSE(p.parse({"--mode", "xml"}));
  CHECK(p.mode == "text");

  p.flags.set_footer("See docs/tool.md.\n");
  std::ostringstream out, err;
  CHECK(p.flags.parse_command({"--help"}, out, err) == 0);
  CHECK(out.str() == R"(Runs the tool.

Usage:
  tool run [flags]

Flags:
  -n, --name string
        A name. (default "default")
      --verbose
        Say more.
      --level int
        A level. (default "0")
      --mode string
        text or json. (default "text")
      --ratio float
        A positive ratio. (default "1")
  -h, --help
        Show this help.

See docs/tool.md.
)");
  CHECK(p.flags.parse_command({"--level", "x"}, out, err) == 2);
  CHECK(err.str() == "error: invalid value \"x\" for --level: must be an integer\n");
  CHECK_FALSE(p.flags.parse_command({"--level", "4"}, out, err).has_value());
}
