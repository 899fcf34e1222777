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

std::string object_resource_version(std::string_view json) {
  JsonReader r(json);
  std::string_view key, rv;
  if (!r.begin_object()) return {};
  while (r.next_member(key)) {
    if (key != "metadata" || r.peek() != JsonType::kObject) {
      r.skip();
      continue;
    }
    r.begin_object();
    while (r.next_member(key)) {
      if (key == "resourceVersion" && r.peek() == JsonType::kString && r.read_string(rv)) return std::string(rv);
      r.skip();
    }
  }
  return {};
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

std::optional<IntOrString> decode_int_or_string(JsonDecoder& d, JsonReader& r) {
  std::string_view text;
  Result<IntOrString> v = Error::internal("unset");
  if (r.peek() == JsonType::kNumber && r.read_number(text)) {
    auto n = parse_int(text);
    if (!n) {
      d.fail("expected an integer, got a fraction or an out-of-range number");
      return std::nullopt;
    }
    v = IntOrString::parse(text);
  } else if (r.peek() == JsonType::kString && r.read_string(text)) {
    v = IntOrString::parse(text);
  } else {
    if (r.peek() == JsonType::kNull) r.read_null();
    else d.wrong_type("an integer or a percentage string", r);
    return std::nullopt;
  }
  if (!v) {
    d.fail(v.error().message);
    return std::nullopt;
  }
  return *v;
}

}  // namespace spotshift::model
