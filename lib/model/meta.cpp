#include "model/meta.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>

namespace spotshift::model {

std::string ObjectMeta::key() const {
  if (namespace_.empty()) return name;
  std::string k;
  k.reserve(namespace_.size() + 1 + name.size());
  k += namespace_.view();
  k += '/';
  k += name;
  return k;
}

ConditionStatus parse_condition_status(std::string_view s) {
  if (s == "True") return ConditionStatus::kTrue;
  if (s == "False") return ConditionStatus::kFalse;
  return ConditionStatus::kUnknown;
}

Result<IntOrString> IntOrString::parse(std::string_view text) {
  IntOrString v;
  std::string_view digits = text;
  if (!text.empty() && text.back() == '%') {
    v.is_percent = true;
    digits = text.substr(0, text.size() - 1);
  }
  auto n = parse_int(digits);
  if (!n || *n < 0 || *n > 2147483647)
    return Error::invalid(fmt::format("invalid value \"{}\": want a non-negative integer or a percentage such as \"50%\"", text));
  if (v.is_percent && *n > 100) return Error::invalid(fmt::format("invalid percentage \"{}\": must be at most 100%", text));
  v.value = static_cast<int32_t>(*n);
  return v;
}

int32_t IntOrString::scaled(int32_t total, bool round_up) const {
  if (!is_percent) return value;
  int64_t product = int64_t(value) * total;
  return static_cast<int32_t>(round_up ? (product + 99) / 100 : product / 100);
}

std::string IntOrString::to_string() const { return is_percent ? fmt::format("{}%", value) : fmt::format("{}", value); }

std::optional<IntOrString> decode_int_or_string(JsonDecoder& d, const JsonValue& obj, std::string_view key) {
  const JsonValue* v = d.get(obj, key);
  if (!v) return std::nullopt;
  auto s = d.field(key);
  Result<IntOrString> r = Error::internal("unset");
  if (v->IsInt64()) r = IntOrString::parse(fmt::format("{}", v->GetInt64()));
  else if (v->IsString()) r = IntOrString::parse(std::string_view(v->GetString(), v->GetStringLength()));
  else {
    d.wrong_type("an integer or a percentage string", *v);
    return std::nullopt;
  }
  if (!r) {
    d.fail(r.error().message);
    return std::nullopt;
  }
  return *r;
}

}  // namespace spotshift::model
