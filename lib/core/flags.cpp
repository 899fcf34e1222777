#include "core/flags.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>

#include <cstdint>

namespace spotshift {

void FlagSet::add_string(std::string name, std::string* target, std::string help, std::string short_name) {
  add({std::move(name), std::move(short_name), std::move(help), "string", *target, false, [target](const std::string& v) {
         *target = v;
         return std::string();
       }});
}

void FlagSet::add_bool(std::string name, bool* target, std::string help) {
  add({std::move(name), {}, std::move(help), "", *target ? "true" : "false", true, [target](const std::string& v) {
         auto b = parse_bool(v);
         if (!b) return std::string("must be true or false");
         *target = *b;
         return std::string();
       }});
}

void FlagSet::add_int(std::string name, int* target, std::string help, std::string short_name) {
  add({std::move(name), std::move(short_name), std::move(help), "int", std::to_string(*target), false, [target](const std::string& v) {
         auto n = parse_int(v);
         if (!n || *n < INT32_MIN || *n > INT32_MAX) return std::string("must be an integer");
         *target = static_cast<int>(*n);
         return std::string();
       }});
}

void FlagSet::add_checked(std::string name, std::string* target, std::string help, std::function<std::string(const std::string&)> check,
                          std::string short_name) {
  add({std::move(name), std::move(short_name), std::move(help), "string", *target, false,
       [target, check = std::move(check)](const std::string& v) {
         std::string problem = check(v);
         if (problem.empty()) *target = v;
         return problem;
       }});
}

void FlagSet::add_value(std::string name, std::string type, std::string default_text, std::string help, Setter set) {
  add({std::move(name), {}, std::move(help), std::move(type), std::move(default_text), false, std::move(set)});
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
    if (!f) return Error::invalid(fmt::format("unknown flag \"{}\"{}", a.substr(0, a.find('=')), hint()));
    std::string spelled = (f->name == name ? "--" : "-") + name;
    if (!has_value) {
      if (f->is_bool) {
        value = "true";
      } else {
        if (i + 1 >= args.size()) return Error::invalid(fmt::format("flag {} needs a value{}", spelled, hint()));
        value = args[++i];
      }
    }
    f->given = true;
    if (std::string problem = f->set(value); !problem.empty())
      return Error::invalid(fmt::format("invalid value \"{}\" for {}: {}", value, spelled, problem));
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
    std::string type = f.type.empty() ? "" : " " + f.type;
    std::string def = f.default_text.empty() || f.default_text == "false" ? "" : fmt::format(" (default \"{}\")", f.default_text);
    out += fmt::format("  {}{}\n        {}{}\n", names, type, f.help, def);
  }
  out += "  -h, --help\n        Show this help.\n";
  if (!footer_.empty()) out += "\n" + footer_;
  return out;
}

}  // namespace spotshift
