#include "model/json.hpp"

#include <fmt/format.h>
#include <rapidjson/error/en.h>

namespace spotshift::model {

Result<void> parse_json(std::string_view text, JsonDocument& doc) {
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError())
    return Error::decode(fmt::format("invalid JSON at offset {}: {}", doc.GetErrorOffset(),
                                     rapidjson::GetParseError_En(doc.GetParseError())));
  return {};
}

std::string_view json_type_name(const JsonValue& v) {
  switch (v.GetType()) {
    case rapidjson::kNullType: return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType: return "a boolean";
    case rapidjson::kObjectType: return "an object";
    case rapidjson::kArrayType: return "an array";
    case rapidjson::kStringType: return "a string";
    case rapidjson::kNumberType: return "a number";
  }
  return "a value";
}

Error JsonDecoder::take_error() {
  Error e = std::move(error_);
  error_ = Error{};
  return e;
}

void JsonDecoder::name_object(std::string_view ns, std::string_view name) {
  if (name.empty()) return;
  object_name_ = ns.empty() ? std::string(name) : fmt::format("{}/{}", ns, name);
}

std::string JsonDecoder::path() const {
  std::string out;
  for (const auto& s : path_) {
    if (s.is_index) {
      out += fmt::format("[{}]", s.index);
    } else {
      if (!out.empty()) out += '.';
      out += s.name;
    }
  }
  return out;
}

void JsonDecoder::fail(std::string_view message) {
  if (failed_) return;
  failed_ = true;
  std::string where = path();
  std::string what = object_name_.empty() ? fmt::format("decoding {}", kind_)
                                          : fmt::format("decoding {} \"{}\"", kind_, object_name_);
  error_ = Error::decode(where.empty() ? fmt::format("{}: {}", what, message)
                                       : fmt::format("{}: {}: {}", what, where, message));
}

void JsonDecoder::wrong_type(std::string_view want, const JsonValue& got) {
  fail(fmt::format("expected {}, got {}", want, json_type_name(got)));
}

const JsonValue* JsonDecoder::get(const JsonValue& obj, std::string_view key) {
  if (!obj.IsObject()) {
    wrong_type("an object", obj);
    return nullptr;
  }
  auto it = obj.FindMember(json_key(key));
  if (it == obj.MemberEnd() || it->value.IsNull()) return nullptr;
  return &it->value;
}

const JsonValue* JsonDecoder::object(const JsonValue& obj, std::string_view key) {
  const JsonValue* v = get(obj, key);
  if (v && !v->IsObject()) {
    Scope s(*this, key);
    wrong_type("an object", *v);
    return nullptr;
  }
  return v;
}

std::string_view JsonDecoder::string(const JsonValue& obj, std::string_view key) {
  return optional_string(obj, key).value_or(std::string_view{});
}

std::optional<std::string_view> JsonDecoder::optional_string(const JsonValue& obj, std::string_view key) {
  const JsonValue* v = get(obj, key);
  if (!v) return std::nullopt;
  if (!v->IsString()) {
    Scope s(*this, key);
    wrong_type("a string", *v);
    return std::nullopt;
  }
  return std::string_view(v->GetString(), v->GetStringLength());
}

int64_t JsonDecoder::integer(const JsonValue& obj, std::string_view key, int64_t fallback) {
  return optional_integer(obj, key).value_or(fallback);
}

std::optional<int64_t> JsonDecoder::optional_integer(const JsonValue& obj, std::string_view key) {
  const JsonValue* v = get(obj, key);
  if (!v) return std::nullopt;
  if (v->IsInt64()) return v->GetInt64();
  Scope s(*this, key);
  if (v->IsNumber()) fail("expected an integer, got a fraction or an out-of-range number");
  else wrong_type("an integer", *v);
  return std::nullopt;
}

bool JsonDecoder::boolean(const JsonValue& obj, std::string_view key, bool fallback) {
  const JsonValue* v = get(obj, key);
  if (!v) return fallback;
  if (!v->IsBool()) {
    Scope s(*this, key);
    wrong_type("a boolean", *v);
    return fallback;
  }
  return v->GetBool();
}

std::optional<Time> JsonDecoder::time(const JsonValue& obj, std::string_view key) {
  auto s = optional_string(obj, key);
  if (!s || s->empty()) return std::nullopt;
  auto t = parse_time(*s);
  if (!t) {
    Scope scope(*this, key);
    fail(t.error().message);
    return std::nullopt;
  }
  return *t;
}

Labels JsonDecoder::string_map(const JsonValue& obj, std::string_view key) {
  Labels out;
  each_member(obj, key, [&](std::string_view name, const JsonValue& v) {
    if (!v.IsString()) return wrong_type("a string", v);
    out.set(name, std::string_view(v.GetString(), v.GetStringLength()));
  });
  return out;
}

std::optional<Quantity> JsonDecoder::quantity(const JsonValue& v) {
  Result<Quantity> q = Error::internal("unset");
  if (v.IsString()) {
    q = Quantity::parse(std::string_view(v.GetString(), v.GetStringLength()));
  } else if (v.IsInt64()) {
    q = Quantity::parse(fmt::format("{}", v.GetInt64()));
  } else if (v.IsNumber()) {
    q = Quantity::parse(fmt::format("{}", v.GetDouble()));
  } else {
    wrong_type("a quantity (string or number)", v);
    return std::nullopt;
  }
  if (!q) {
    fail(q.error().message);
    return std::nullopt;
  }
  return *q;
}

ResourceList JsonDecoder::resource_list(const JsonValue& obj, std::string_view key) {
  ResourceList out;
  each_member(obj, key, [&](std::string_view name, const JsonValue& v) {
    auto q = quantity(v);
    if (!q) return;
    out.set(name, name == kResourceCpu ? q->milli_value() : q->value());
  });
  return out;
}

namespace {
std::optional<SelectorOp> parse_op(std::string_view s, bool node_selector) {
  if (s == "In") return SelectorOp::kIn;
  if (s == "NotIn") return SelectorOp::kNotIn;
  if (s == "Exists") return SelectorOp::kExists;
  if (s == "DoesNotExist") return SelectorOp::kDoesNotExist;
  if (node_selector && s == "Gt") return SelectorOp::kGt;
  if (node_selector && s == "Lt") return SelectorOp::kLt;
  return std::nullopt;
}
}  // namespace

static std::vector<Requirement> decode_requirements(JsonDecoder& d, const JsonValue& obj, std::string_view key,
                                                    bool node_selector) {
  std::vector<Requirement> out;
  d.each(obj, key, [&](const JsonValue& e) {
    auto k = d.string(e, "key");
    auto op_text = d.string(e, "operator");
    std::vector<std::string> values;
    d.each(e, "values", [&](const JsonValue& v) {
      if (!v.IsString()) return d.wrong_type("a string", v);
      values.emplace_back(v.GetString(), v.GetStringLength());
    });
    if (!d.ok()) return;
    auto op = parse_op(op_text, node_selector);
    if (!op) {
      auto s = d.field("operator");
      return d.fail(fmt::format("\"{}\" is not a valid {} operator", op_text,
                                node_selector ? "node selector" : "label selector"));
    }
    Result<Requirement> r = Error::internal("unset");
    if (node_selector && key == "matchFields") {
      // Field requirements are not label keys; only metadata.name is supported by the scheduler.
      if (k != "metadata.name") {
        auto s = d.field("key");
        return d.fail(fmt::format("field \"{}\" is not supported in matchFields (only metadata.name)", k));
      }
      Requirement fr;
      fr.key = InternedString(k);
      fr.op = *op;
      for (auto& v : values) fr.values.emplace_back(v);
      r = fr;
    } else {
      r = Requirement::make(k, *op, std::move(values));
    }
    if (!r) return d.fail(r.error().message);
    out.push_back(std::move(*r));
  });
  return out;
}

std::optional<LabelSelector> JsonDecoder::label_selector(const JsonValue& obj, std::string_view key) {
  const JsonValue* sel = object(obj, key);
  if (!sel) return std::nullopt;
  Scope s(*this, key);
  std::vector<Requirement> reqs;
  each_member(*sel, "matchLabels", [&](std::string_view name, const JsonValue& v) {
    if (!v.IsString()) return wrong_type("a string", v);
    auto r = Requirement::make(name, SelectorOp::kEquals, {std::string(v.GetString(), v.GetStringLength())});
    if (!r) return fail(r.error().message);
    reqs.push_back(std::move(*r));
  });
  auto exprs = decode_requirements(*this, *sel, "matchExpressions", false);
  reqs.insert(reqs.end(), exprs.begin(), exprs.end());
  if (!ok()) return std::nullopt;
  return LabelSelector(std::move(reqs));
}

NodeSelectorTerm JsonDecoder::node_selector_term(const JsonValue& term) {
  NodeSelectorTerm t;
  t.match_expressions = decode_requirements(*this, term, "matchExpressions", true);
  t.match_fields = decode_requirements(*this, term, "matchFields", true);
  return t;
}

std::optional<NodeSelector> JsonDecoder::node_selector(const JsonValue& obj, std::string_view key) {
  const JsonValue* sel = object(obj, key);
  if (!sel) return std::nullopt;
  Scope s(*this, key);
  NodeSelector out;
  each(*sel, "nodeSelectorTerms", [&](const JsonValue& term) { out.terms.push_back(node_selector_term(term)); });
  return out;
}

}  // namespace spotshift::model
