#include "schema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace spotshift::kubesim {

namespace {

std::string child(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : fmt::format("{}.{}", path, name);
}

std::string type_of(const Value& v) {
  if (v.IsString()) return "string";
  if (v.IsBool()) return "boolean";
  if (v.IsInt64() || v.IsUint64()) return "integer";
  if (v.IsNumber()) return "number";
  if (v.IsArray()) return "array";
  if (v.IsObject()) return "object";
  return "null";
}

// How the apiserver shows a value in a cause: strings quoted, the rest as JSON.
std::string shown(const Value& v) { return to_json(v); }

void add(std::vector<StatusCause>& causes, std::string reason, const std::string& field, std::string message) {
  causes.push_back(StatusCause{std::move(reason), field, std::move(message)});
}

}  // namespace

Result<std::shared_ptr<const Schema>> Schema::parse(const Value& s) {
  if (!s.IsObject()) return Error::invalid("schema must be an object");
  auto out = std::make_shared<Schema>();
  out->type_ = std::string(json_string(s, {"type"}));
  out->nullable_ = json_bool(s, {"nullable"});
  out->int_or_string_ = json_bool(s, {"x-kubernetes-int-or-string"});
  out->preserve_unknown_ = json_bool(s, {"x-kubernetes-preserve-unknown-fields"});
  if (const Value* props = json_member(s, "properties"); props && props->IsObject()) {
    for (auto it = props->MemberBegin(); it != props->MemberEnd(); ++it) {
      auto sub = parse(it->value);
      if (!sub) return sub.error().wrap(fmt::format("properties.{}", it->name.GetString()));
      // As the apiserver does, a default must pass the schema and rules it is a default for
      // (as written: the defaults inside it are not applied first).
      if (auto bad = (*sub)->default_violation(); !bad.empty())
        return Error::invalid(fmt::format("properties[{}].default: {}", it->name.GetString(), bad));
      out->properties_.emplace_back(it->name.GetString(), *sub);
    }
  }
  if (const Value* items = json_member(s, "items")) {
    auto sub = parse(*items);
    if (!sub) return sub.error().wrap("items");
    out->items_ = *sub;
  }
  if (const Value* ap = json_member(s, "additionalProperties")) {
    if (ap->IsBool()) {
      out->additional_any_ = ap->GetBool();
    } else {
      auto sub = parse(*ap);
      if (!sub) return sub.error().wrap("additionalProperties");
      out->additional_ = *sub;
    }
  }
  if (const Value* req = json_member(s, "required"); req && req->IsArray())
    for (const auto& r : req->GetArray())
      if (r.IsString()) out->required_.emplace_back(r.GetString());
  if (const Value* e = json_member(s, "enum"); e && e->IsArray())
    for (const auto& v : e->GetArray()) out->enum_json_.push_back(to_json(v));
  auto number = [&](const char* k) -> std::optional<double> {
    const Value* v = json_member(s, k);
    return v && v->IsNumber() ? std::optional<double>(v->GetDouble()) : std::nullopt;
  };
  out->minimum_ = number("minimum");
  out->maximum_ = number("maximum");
  out->exclusive_minimum_ = json_bool(s, {"exclusiveMinimum"});
  out->exclusive_maximum_ = json_bool(s, {"exclusiveMaximum"});
  out->min_length_ = json_int(s, {"minLength"});
  out->max_length_ = json_int(s, {"maxLength"});
  out->min_items_ = json_int(s, {"minItems"});
  out->max_items_ = json_int(s, {"maxItems"});
  out->max_properties_ = json_int(s, {"maxProperties"});
  out->list_type_ = std::string(json_string(s, {"x-kubernetes-list-type"}));
  if (const Value* keys = json_member(s, "x-kubernetes-list-map-keys"); keys && keys->IsArray())
    for (const auto& k : keys->GetArray())
      if (k.IsString()) out->list_keys_.emplace_back(k.GetString());
  if (auto p = json_string(s, {"pattern"}); !p.empty()) {
    try {
      out->pattern_.emplace(std::string(p), std::regex::ECMAScript);
      out->pattern_text_ = std::string(p);
    } catch (const std::regex_error& e) {
      return Error::invalid(fmt::format("pattern \"{}\" is not a valid regular expression: {}", p, e.what()));
    }
  }
  if (const Value* d = json_member(s, "default")) out->default_json_ = to_json(*d);
  if (const Value* rules = json_member(s, "x-kubernetes-validations"); rules && rules->IsArray()) {
    for (const auto& r : rules->GetArray()) {
      std::string rule(json_string(r, {"rule"}));
      auto program = cel::Program::compile(rule);
      if (!program)
        return Error::invalid(
            fmt::format("x-kubernetes-validations: kubesim cannot evaluate the rule \"{}\": {}", rule, program.error().message));
      std::string message(json_string(r, {"message"}));
      out->rules_.push_back({std::move(*program), message.empty() ? fmt::format("failed rule: {}", rule) : message});
    }
  }
  out->any_rules_ = !out->rules_.empty() || (out->items_ && out->items_->any_rules_) || (out->additional_ && out->additional_->any_rules_);
  for (const auto& [name, sub] : out->properties_) out->any_rules_ = out->any_rules_ || sub->any_rules_;
  return std::shared_ptr<const Schema>(out);
}

std::string Schema::default_violation() const {
  if (!default_json_) return {};
  Doc d;
  d.Parse(default_json_->c_str());
  std::vector<StatusCause> causes, cel;
  validate(d, "", causes, cel);
  finish_validation(causes, cel);
  return causes.empty() ? std::string() : causes[0].message;
}

const Schema* Schema::property(std::string_view name) const {
  for (const auto& [n, s] : properties_)
    if (n == name) return s.get();
  return nullptr;
}

void Schema::apply_root(Value& v, Alloc& a, std::vector<StatusCause>& causes, std::vector<std::string>& unknown) const {
  if (!v.IsObject()) return;
  prune_members(v, a, "", unknown, true);
  for (const auto& r : required_)
    if (r != "metadata" && !v.HasMember(json_key(r))) add(causes, "FieldValueRequired", r, "Required value");
  std::vector<StatusCause> cel;
  for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
    std::string_view name(it->name.GetString(), it->name.GetStringLength());
    if (const Schema* sub = property(name); sub && name != "metadata") sub->validate(it->value, std::string(name), causes, cel);
  }
  finish_validation(causes, cel);
}

void Schema::finish_validation(std::vector<StatusCause>& causes, std::vector<StatusCause>& cel) const {
  if (!any_rules_) return;
  for (const auto& c : causes)
    if (c.reason == "FieldValueNotSupported" || c.reason == "FieldValueRequired" || c.reason == "FieldValueTooLong" ||
        c.reason == "FieldValueTooMany" || c.reason == "FieldValueTypeInvalid") {
      add(causes, "FieldValueInvalid", "<nil>",
          "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing "
          "errors to complete validation");
      return;
    }
  causes.insert(causes.end(), cel.begin(), cel.end());
}

void Schema::apply(Value& v, Alloc& a, const std::string& path, std::vector<StatusCause>& causes, std::vector<std::string>& unknown) const {
  prune_and_default(v, a, path, unknown);
  std::vector<StatusCause> cel;
  validate(v, path, causes, cel);
  finish_validation(causes, cel);
}

void Schema::prune_and_default(Value& v, Alloc& a, const std::string& path, std::vector<std::string>& unknown) const {
  if (v.IsObject()) {
    prune_members(v, a, path, unknown, false);
  } else if (v.IsArray() && items_) {
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) items_->prune_and_default(v[i], a, fmt::format("{}[{}]", path, i), unknown);
  }
}

void Schema::prune_members(Value& v, Alloc& a, const std::string& path, std::vector<std::string>& unknown, bool root) const {
  // At the root, apiVersion, kind and metadata belong to the API machinery, not the schema.
  auto machinery = [root](std::string_view name) { return root && (name == "apiVersion" || name == "kind" || name == "metadata"); };
  for (auto it = v.MemberBegin(); it != v.MemberEnd();) {
    std::string_view name(it->name.GetString(), it->name.GetStringLength());
    if (machinery(name)) {
      ++it;
      continue;
    }
    const Schema* sub = property(name);
    if (!sub && additional_) sub = additional_.get();
    if (!sub && !additional_any_ && !preserve_unknown_) {
      unknown.push_back(child(path, name));
      it = v.EraseMember(it);
      continue;
    }
    if (sub) {
      if (it->value.IsNull() && !sub->nullable_) {
        it = v.EraseMember(it);
        continue;
      }
      sub->prune_and_default(it->value, a, child(path, name), unknown);
    }
    ++it;
  }
  for (const auto& [name, sub] : properties_) {
    if (machinery(name) || v.HasMember(json_key(name)) || !sub->default_json_) continue;
    Doc d;
    d.Parse(sub->default_json_->c_str());
    Value copy;
    copy.CopyFrom(d, a);
    v.AddMember(str(name, a), copy, a);
    sub->prune_and_default((v.MemberEnd() - 1)->value, a, child(path, name), unknown);
  }
}

void Schema::validate(const Value& v, const std::string& path, std::vector<StatusCause>& causes, std::vector<StatusCause>& cel) const {
  if (v.IsNull()) {
    if (!nullable_) add(causes, "FieldValueRequired", path, "Required value");
    return;
  }
  std::string actual = type_of(v);
  bool type_ok = true;
  if (int_or_string_) {
    type_ok = actual == "integer" || actual == "string";
    if (!type_ok) {
      add(causes, "FieldValueInvalid", path,
          fmt::format("Invalid value: {}: {} in body must be of type integer or string: \"{}\"", shown(v), path, actual));
      return;
    }
  } else if (!type_.empty()) {
    type_ok = actual == type_ || (type_ == "number" && actual == "integer");
    if (!type_ok) {
      add(causes, "FieldValueTypeInvalid", path,
          fmt::format("Invalid value: \"{}\": {} in body must be of type {}: \"{}\"", actual, path, type_, actual));
      return;
    }
  }
  if (!enum_json_.empty()) {
    std::string mine = to_json(v);
    bool found = false;
    for (const auto& e : enum_json_) found = found || e == mine;
    if (!found) {
      std::string allowed;
      for (const auto& e : enum_json_) allowed += (allowed.empty() ? "" : ", ") + e;
      add(causes, "FieldValueNotSupported", path, fmt::format("Unsupported value: {}: supported values: {}", mine, allowed));
    }
  }
  if (v.IsNumber()) {
    double d = v.GetDouble();
    if (minimum_ && (exclusive_minimum_ ? d <= *minimum_ : d < *minimum_))
      add(causes, "FieldValueInvalid", path,
          fmt::format("Invalid value: {}: {} in body should be greater than {}{}", shown(v), path, exclusive_minimum_ ? "" : "or equal to ",
                      *minimum_));
    if (maximum_ && (exclusive_maximum_ ? d >= *maximum_ : d > *maximum_))
      add(causes, "FieldValueInvalid", path,
          fmt::format("Invalid value: {}: {} in body should be less than {}{}", shown(v), path, exclusive_maximum_ ? "" : "or equal to ",
                      *maximum_));
  }
  if (v.IsString()) {
    int64_t len = v.GetStringLength();
    if (min_length_ && len < *min_length_)
      add(causes, "FieldValueInvalid", path,
          fmt::format("Invalid value: {}: {} in body should be at least {} chars long", shown(v), path, *min_length_));
    if (max_length_ && len > *max_length_)
      add(causes, "FieldValueTooLong", path, fmt::format("Too long: may not be longer than {}", *max_length_));
    if (pattern_ && !std::regex_search(std::string(v.GetString(), v.GetStringLength()), *pattern_))
      add(causes, "FieldValueInvalid", path, fmt::format("Invalid value: {}: {} in body should match '{}'", shown(v), path, pattern_text_));
  }
  for (const auto& r : rules_) {
    // The apiserver shows a scalar's value; an object's or a list's, not.
    std::string value = v.IsObject() || v.IsArray() ? "" : shown(v) + ": ";
    auto holds = r.program.eval(v);
    if (!holds)
      add(cel, "FieldValueInvalid", path, fmt::format("Invalid value: {}{} evaluating rule: {}", value, holds.error().message, r.message));
    else if (!*holds) add(cel, "FieldValueInvalid", path, fmt::format("Invalid value: {}{}", value, r.message));
  }
  if (v.IsArray()) {
    int64_t n = v.Size();
    if (min_items_ && n < *min_items_)
      add(causes, "FieldValueInvalid", path,
          fmt::format("Invalid value: {}: {} in body should have at least {} items", n, path, *min_items_));
    if (max_items_ && n > *max_items_)
      add(causes, "FieldValueTooMany", path, fmt::format("Too many: {}: must have at most {} items", n, *max_items_));
    if (items_)
      for (rapidjson::SizeType i = 0; i < v.Size(); ++i) items_->validate(v[i], fmt::format("{}[{}]", path, i), causes, cel);
    check_duplicates(v, path, causes);
  }
  if (v.IsObject()) {
    if (max_properties_ && static_cast<int64_t>(v.MemberCount()) > *max_properties_)
      add(causes, "FieldValueTooMany", path, fmt::format("Too many: {}: must have at most {} items", v.MemberCount(), *max_properties_));
    for (const auto& r : required_)
      if (!v.HasMember(json_key(r))) add(causes, "FieldValueRequired", child(path, r), "Required value");
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
      std::string_view name(it->name.GetString(), it->name.GetStringLength());
      const Schema* sub = property(name);
      if (!sub && additional_) sub = additional_.get();
      if (sub) sub->validate(it->value, child(path, name), causes, cel);
    }
  }
}

void Schema::check_duplicates(const Value& list, const std::string& path, std::vector<StatusCause>& causes) const {
  if (list_type_ != "set" && list_type_ != "map") return;
  // A set's items compare whole; a map's by their keys, which the apiserver shows as an object.
  auto identity = [&](const Value& item) {
    if (list_type_ == "set" || !item.IsObject()) return canonical_json(item);
    Doc keys(rapidjson::kObjectType);
    for (const auto& k : list_keys_)
      if (const Value* kv = json_member(item, k))
        keys.AddMember(str(k, keys.GetAllocator()), copy_of(*kv, keys.GetAllocator()), keys.GetAllocator());
    return canonical_json(keys);
  };
  std::vector<std::string> seen;
  for (rapidjson::SizeType i = 0; i < list.Size(); ++i) {
    std::string id = identity(list[i]);
    if (std::find(seen.begin(), seen.end(), id) != seen.end())
      add(causes, "FieldValueDuplicate", fmt::format("{}[{}]", path, i), fmt::format("Duplicate value: {}", id));
    else seen.push_back(std::move(id));
  }
}

std::string join_causes(const std::vector<StatusCause>& causes) {
  std::vector<std::string> parts;
  for (const auto& c : causes) parts.push_back(c.field.empty() ? c.message : fmt::format("{}: {}", c.field, c.message));
  if (parts.size() == 1) return parts[0];
  std::string out = "[";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out + "]";
}

}  // namespace spotshift::kubesim
