#include "flags.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spotshift::op {

void FlagSet::add_string(std::string name, std::string* target, std::string help, std::string short_name) {
  flags_.push_back(Flag{std::move(name), std::move(short_name), std::move(help), *target, Flag::Kind::kString, target, nullptr, nullptr, {}});
}

void FlagSet::add_bool(std::string name, bool* target, std::string help) {
  flags_.push_back(Flag{std::move(name), {}, std::move(help), *target ? "true" : "false", Flag::Kind::kBool, nullptr, target, nullptr, {}});
}

void FlagSet::add_int(std::string name, int* target, std::string help, std::string short_name) {
  flags_.push_back(
      Flag{std::move(name), std::move(short_name), std::move(help), std::to_string(*target), Flag::Kind::kInt, nullptr, nullptr, target, {}});
}

void FlagSet::add_checked(std::string name, std::string* target, std::string help, std::function<std::string(const std::string&)> check,
                          std::string short_name) {
  add_string(std::move(name), target, std::move(help), std::move(short_name));
  flags_.back().check = std::move(check);
}

FlagSet::Flag* FlagSet::find(std::string_view name) {
  for (auto& f : flags_)
    if (f.name == name || (!f.short_name.empty() && f.short_name == name)) return &f;
  return nullptr;
}

bool FlagSet::given(const std::string& name) const {
  for (const auto& f : flags_)
    if (f.name == name) return f.given;
  return false;
}

Result<void> FlagSet::set(Flag& f, const std::string& value, std::string_view spelled) {
  f.given = true;
  switch (f.kind) {
    case Flag::Kind::kString:
      if (f.check)
        if (std::string problem = f.check(value); !problem.empty())
          return Error::invalid(fmt::format("invalid value \"{}\" for {}: {}", value, spelled, problem));
      *f.s = value;
      return {};
    case Flag::Kind::kBool: {
      auto b = parse_bool(value);
      if (!b) return Error::invalid(fmt::format("invalid value \"{}\" for {}: must be true or false", value, spelled));
      *f.b = *b;
      return {};
    }
    case Flag::Kind::kInt: {
      auto n = parse_int(value);
      if (!n || *n < INT32_MIN || *n > INT32_MAX)
        return Error::invalid(fmt::format("invalid value \"{}\" for {}: must be an integer", value, spelled));
      *f.i = static_cast<int>(*n);
      return {};
    }
  }
  return {};
}

Result<void> FlagSet::parse(const std::vector<std::string>& args, bool* help) {
  *help = false;
  auto hint = [&] { return fmt::format(" (see {} --help)", command_); };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      *help = true;
      continue;
    }
    if (a.size() < 2 || a[0] != '-') return Error::invalid(fmt::format("unexpected argument \"{}\"{}", a, hint()));
    std::string body = a.substr(a[1] == '-' ? 2 : 1);
    std::string name = body, value;
    bool has_value = false;
    if (auto eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    }
    Flag* f = find(name);
    if (!f) return Error::invalid(fmt::format("unknown flag {}{}", a.substr(0, a.find('=')), hint()));
    std::string spelled = (f->name == name ? "--" : "-") + name;
    if (!has_value) {
      if (f->kind == Flag::Kind::kBool) {
        value = "true";
      } else {
        if (i + 1 >= args.size()) return Error::invalid(fmt::format("flag {} needs a value{}", spelled, hint()));
        value = args[++i];
      }
    }
    if (auto r = set(*f, value, spelled); !r) return r.error();
  }
  return {};
}

std::optional<int> FlagSet::parse_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  bool help = false;
  if (auto r = parse(args, &help); !r) {
    err << "error: " << r.error().message << "\n";
    return 2;
  }
  if (help) {
    out << usage();
    return 0;
  }
  return std::nullopt;
}

std::string FlagSet::usage() const {
  std::string out = fmt::format("{}\n\nUsage:\n  {} [flags]\n\nFlags:\n", summary_, command_);
  for (const auto& f : flags_) {
    std::string names = f.short_name.empty() ? fmt::format("    --{}", f.name) : fmt::format("-{}, --{}", f.short_name, f.name);
    std::string type = f.kind == Flag::Kind::kBool ? "" : f.kind == Flag::Kind::kInt ? " int" : " string";
    std::string def = f.default_text.empty() || f.default_text == "false" ? "" : fmt::format(" (default \"{}\")", f.default_text);
    out += fmt::format("  {}{}\n        {}{}\n", names, type, f.help, def);
  }
  out += "  -h, --help\n        Show this help.\n";
  return out;
}

}  // namespace spotshift::op
