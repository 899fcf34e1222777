#include "model/json.hpp"

#include "model/gather.hpp"

#include <fmt/format.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <array>
#include <charconv>

namespace spotshift::model {

std::string json_text(const JsonValue& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

const JsonValue* json_member(const JsonValue& v, std::string_view key) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(json_key(key));
  if (it == v.MemberEnd() || it->value.IsNull()) return nullptr;
  return &it->value;
}

const JsonValue* json_path(const JsonValue& v, std::initializer_list<std::string_view> path) {
  const JsonValue* cur = &v;
  for (auto key : path) {
    cur = json_member(*cur, key);
    if (!cur) return nullptr;
  }
  return cur;
}

std::string_view json_string(const JsonValue& v, std::initializer_list<std::string_view> path, std::string_view fallback) {
  const JsonValue* x = json_path(v, path);
  if (!x || !x->IsString()) return fallback;
  return std::string_view(x->GetString(), x->GetStringLength());
}

std::optional<int64_t> json_int(const JsonValue& v, std::initializer_list<std::string_view> path) {
  const JsonValue* x = json_path(v, path);
  if (!x || !x->IsInt64()) return std::nullopt;
  return x->GetInt64();
}

bool json_bool(const JsonValue& v, std::initializer_list<std::string_view> path, bool fallback) {
  const JsonValue* x = json_path(v, path);
  if (!x || !x->IsBool()) return fallback;
  return x->GetBool();
}

Result<void> parse_json(std::string_view text, JsonDocument& doc) {
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError())
    return Error::decode(
        fmt::format("invalid JSON at offset {}: {}", doc.GetErrorOffset(), rapidjson::GetParseError_En(doc.GetParseError())));
  return {};
}

Error JsonDecoder::take_error() {
  Error e = std::move(error_);
  error_ = Error{};
  return e;
}

void JsonDecoder::name_object(std::string_view ns, std::string_view name) {
  if (name.empty()) return;
  object_namespace_.assign(ns);  // "ns/name" is put together only for an error
  object_name_.assign(name);
}

void JsonDecoder::push_more(const Segment& s) { path_more_.push_back(s); }

std::string JsonDecoder::path(size_t depth) const {
  std::string out;
  for (size_t i = 0; i < depth; ++i) {
    const Segment& s = i < kPathInPlace ? path_[i] : path_more_[i - kPathInPlace];
    if (s.is_index) {
      out += fmt::format("[{}]", s.index);
    } else {
      if (!out.empty()) out += '.';
      out += s.name;
    }
  }
  return out;
}

void JsonDecoder::fail_at(std::string_view message, size_t up) {
  if (failed_) return;
  failed_ = true;
  std::string where = path(depth_ - std::min(up, depth_));
  if (kind_.empty()) {
    error_ = Error::decode(where.empty() ? std::string(message) : fmt::format("{}: {}", where, message));
    return;
  }
  std::string what = object_name_.empty()        ? fmt::format("decoding {}", kind_)
                     : object_namespace_.empty() ? fmt::format("decoding {} \"{}\"", kind_, object_name_)
                                                 : fmt::format("decoding {} \"{}/{}\"", kind_, object_namespace_, object_name_);
  error_ = Error::decode(where.empty() ? fmt::format("{}: {}", what, message) : fmt::format("{}: {}: {}", what, where, message));
}

void JsonDecoder::not_wanted(JsonReader& r, std::string_view want) {
  if (r.peek() == JsonType::kNull) r.read_null();
  else wrong_type(want, r);
}

void JsonDecoder::wrong_type(std::string_view want, JsonReader& r) {
  JsonType got = r.peek();
  if (got != JsonType::kInvalid) {
    fail(fmt::format("expected {}, got {}", want, json_type_name(got)));
    r.skip();
    return;
  }
  r.skip();  // records what is there instead of a value
  fail(r.error());
}

bool JsonDecoder::at(JsonReader& r, JsonType type) {
  if (r.peek() == type) return true;
  not_wanted(r, type == JsonType::kObject ? "an object" : "an array");
  return false;
}

bool JsonDecoder::open(JsonReader& r, JsonType type) {
  return at(r, type) && (type == JsonType::kObject ? r.begin_object() : r.begin_array());
}

std::optional<std::string_view> JsonDecoder::optional_string(JsonReader& r) {
  std::string_view s;
  if (r.peek() == JsonType::kString && r.read_string(s)) return s;
  not_wanted(r, "a string");
  return std::nullopt;
}

std::optional<int64_t> JsonDecoder::optional_integer(JsonReader& r) {
  std::string_view text;
  if (r.peek() != JsonType::kNumber || !r.read_number(text)) {
    not_wanted(r, "an integer");
    return std::nullopt;
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    fail("expected an integer, got a fraction or an out-of-range number");
    return std::nullopt;
  }
  return v;
}

bool JsonDecoder::boolean(JsonReader& r, bool fallback) {
  bool b = fallback;
  if (r.peek() == JsonType::kBool && r.read_bool(b)) return b;
  not_wanted(r, "a boolean");
  return fallback;
}

std::optional<Time> JsonDecoder::time(JsonReader& r) {
  auto s = optional_string(r);
  if (!s || s->empty()) return std::nullopt;
  auto t = parse_time(*s);
  if (!t) {
    fail(t.error().message);
    return std::nullopt;
  }
  return *t;
}

Labels JsonDecoder::string_map(JsonReader& r) {
  thread_local std::array<Labels::Entry, 8> before;  // the map decoded before's, place by place
  Gather<Labels::Entry, 16> entries;
  size_t index = 0;
  members(r, [&](std::string_view name) {
    if (auto v = optional_string(r)) {
      Labels::Entry& last = before[std::min(index++, before.size() - 1)];
      entries.push_back({intern_as_before(name, last.first), intern_as_before(*v, last.second)});
    }
    return true;
  });
  return Labels(entries.take());
}

std::optional<Quantity> JsonDecoder::quantity(JsonReader& r) {
  std::string_view text;
  bool read = false;
  if (r.peek() == JsonType::kString) read = r.read_string(text);
  else if (r.peek() == JsonType::kNumber) read = r.read_number(text);  // JSON's number syntax is a quantity's
  if (!read) {
    wrong_type("a quantity (string or number)", r);
    return std::nullopt;
  }
  auto q = Quantity::parse(text);
  if (!q) {
    fail(q.error().message);
    return std::nullopt;
  }
  return *q;
}

ResourceList JsonDecoder::resource_list(JsonReader& r) {
  ResourceList out;
  members(r, [&](std::string_view name) {
    if (auto q = quantity(r)) out.set(name, *q);
    return true;
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

// matchExpressions (or, with fields, a node selector term's matchFields).
std::vector<Requirement> decode_requirements(JsonDecoder& d, JsonReader& r, bool node_selector, bool fields) {
  std::vector<Requirement> out;
  d.elements(r, [&] {
    std::string_view k, op_text;
    std::vector<std::string> values;
    d.members(r, [&](std::string_view name) {
      if (name == "key") k = d.string(r);
      else if (name == "operator") op_text = d.string(r);
      else if (name == "values") d.elements(r, [&] { values.emplace_back(d.string(r)); });
      else return false;
      return true;
    });
    if (!d.ok()) return;
    auto op = parse_op(op_text, node_selector);
    if (!op) {
      auto s = d.field("operator");
      return d.fail(fmt::format("\"{}\" is not a valid {} operator", op_text, node_selector ? "node selector" : "label selector"));
    }
    Result<Requirement> req = Error::internal("unset");
    if (fields) {
      // Field requirements are not label keys; only metadata.name is supported by the scheduler.
      if (k != "metadata.name") {
        auto s = d.field("key");
        return d.fail(fmt::format("field \"{}\" is not supported in matchFields (only metadata.name)", k));
      }
      Requirement fr;
      fr.key = InternedString(k);
      fr.op = *op;
      for (auto& v : values) fr.values.emplace_back(v);
      req = fr;
    } else {
      req = Requirement::make(k, *op, std::move(values));
    }
    if (!req) return d.fail(req.error().message);
    out.push_back(std::move(*req));
  });
  return out;
}
}  // namespace

std::optional<LabelSelector> JsonDecoder::label_selector(JsonReader& r) {
  if (!at_object(r)) return std::nullopt;
  std::vector<Requirement> reqs, exprs;
  members(r, [&](std::string_view key) {
    if (key == "matchLabels") {
      members(r, [&](std::string_view name) {
        auto v = optional_string(r);
        if (!v) return true;
        auto req = Requirement::make(name, SelectorOp::kEquals, {std::string(*v)});
        if (!req) fail(req.error().message);
        else reqs.push_back(std::move(*req));
        return true;
      });
    } else if (key == "matchExpressions") {
      exprs = decode_requirements(*this, r, false, false);
    } else {
      return false;
    }
    return true;
  });
  // matchLabels come before the expressions, whatever the order in the text.
  reqs.insert(reqs.end(), exprs.begin(), exprs.end());
  if (!ok()) return std::nullopt;
  return LabelSelector(std::move(reqs));
}

NodeSelectorTerm JsonDecoder::node_selector_term(JsonReader& r) {
  NodeSelectorTerm t;
  members(r, [&](std::string_view key) {
    if (key == "matchExpressions") t.match_expressions = decode_requirements(*this, r, true, false);
    else if (key == "matchFields") t.match_fields = decode_requirements(*this, r, true, true);
    else return false;
    return true;
  });
  return t;
}

std::optional<NodeSelector> JsonDecoder::node_selector(JsonReader& r) {
  if (!at_object(r)) return std::nullopt;
  NodeSelector out;
  members(r, [&](std::string_view key) {
    if (key != "nodeSelectorTerms") return false;
    elements(r, [&] { out.terms.push_back(node_selector_term(r)); });
    return true;
  });
  return out;
}

}  // namespace spotshift::model
