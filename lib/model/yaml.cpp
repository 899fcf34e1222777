#include "model/yaml.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <regex>

namespace spotshift::model {

namespace {

using Alloc = JsonDocument::AllocatorType;

JsonValue str(const std::string& s, Alloc& a) { return JsonValue(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), a); }

// A later duplicate key replaces the earlier one, as YAML decoders in Go do.
void set(JsonValue& obj, const std::string& key, JsonValue&& v, Alloc& a) {
  if (obj.HasMember(json_key(key))) obj[json_key(key)] = std::move(v);
  else obj.AddMember(str(key, a), std::move(v), a);
}

// A plain scalar s as the core schema reads it.
void plain_scalar(const std::string& s, JsonValue& out, Alloc& a) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") {
    out.SetNull();
    return;
  }
  if (s == "true" || s == "True" || s == "TRUE") {
    out.SetBool(true);
    return;
  }
  if (s == "false" || s == "False" || s == "FALSE") {
    out.SetBool(false);
    return;
  }
  static const std::regex kInt("[-+]?[0-9]+");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(s, kInt)) {
    errno = 0;
    long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == 0) {
      out.SetInt64(v);
      return;
    }
  }
  if (std::regex_match(s, kFloat)) {
    out.SetDouble(std::strtod(s.c_str(), nullptr));
    return;
  }
  out = str(s, a);
}

void scalar(const YAML::Node& n, JsonValue& out, Alloc& a) {
  if (n.Tag() == "!" || n.Tag() == "tag:yaml.org,2002:str") {  // quoted, or explicitly a string
    out = str(n.Scalar(), a);
    return;
  }
  plain_scalar(n.Scalar(), out, a);
}

// Strings that a YAML reader would take for something else unquoted: the core schema's null,
// booleans and numbers, and YAML 1.1's yes, no, on, off (which older readers still apply).
bool needs_quotes(const std::string& s) {
  JsonDocument d;
  JsonValue v;
  plain_scalar(s, v, d.GetAllocator());
  if (!v.IsString()) return true;
  static const std::regex kYaml11(R"(y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)");
  return std::regex_match(s, kYaml11);
}

void emit(YAML::Emitter& e, const JsonValue& v) {
  if (v.IsObject()) {
    e << YAML::BeginMap;
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
      e << YAML::Key << std::string(it->name.GetString(), it->name.GetStringLength()) << YAML::Value;
      emit(e, it->value);
    }
    e << YAML::EndMap;
  } else if (v.IsArray()) {
    e << YAML::BeginSeq;
    for (const auto& x : v.GetArray()) emit(e, x);
    e << YAML::EndSeq;
  } else if (v.IsString()) {
    std::string s(v.GetString(), v.GetStringLength());
    if (needs_quotes(s)) e << YAML::DoubleQuoted;
    e << s;
  } else if (v.IsBool()) {
    e << v.GetBool();
  } else if (v.IsInt64()) {
    e << v.GetInt64();
  } else if (v.IsUint64()) {
    e << v.GetUint64();
  } else if (v.IsNumber()) {
    e << v.GetDouble();
  } else {
    e << YAML::Null;
  }
}

Result<void> convert(const YAML::Node& n, JsonValue& out, Alloc& a) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      out.SetNull();
      return {};
    case YAML::NodeType::Scalar:
      scalar(n, out, a);
      return {};
    case YAML::NodeType::Sequence:
      out.SetArray();
      for (const auto& item : n) {
        JsonValue v;
        if (auto r = convert(item, v, a); !r) return r;
        out.PushBack(v, a);
      }
      return {};
    case YAML::NodeType::Map:
      out.SetObject();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) return Error::invalid("YAML map keys must be scalars");
        JsonValue v;
        if (auto r = convert(kv.second, v, a); !r) return r;
        set(out, kv.first.Scalar(), std::move(v), a);
      }
      return {};
  }
  return {};
}

}  // namespace

Result<std::vector<JsonDocument>> parse_yaml_documents(std::string_view text) {
  std::vector<JsonDocument> docs;
  try {
    for (const auto& node : YAML::LoadAll(std::string(text))) {
      if (node.IsNull()) continue;
      JsonDocument d;
      if (auto r = convert(node, d, d.GetAllocator()); !r) return r.error();
      docs.push_back(std::move(d));
    }
  } catch (const YAML::Exception& e) {
    return Error::invalid(fmt::format("invalid YAML at line {}, column {}: {}", e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  return docs;
}

Result<JsonDocument> parse_yaml(std::string_view text) {
  auto docs = parse_yaml_documents(text);
  if (!docs) return docs.error();
  if (docs->size() != 1) return Error::invalid(fmt::format("expected one YAML document, found {}", docs->size()));
  return std::move(docs->front());
}

std::string to_yaml(const JsonValue& v) {
  YAML::Emitter e;
  e.SetBoolFormat(YAML::TrueFalseBool);
  e.SetNullFormat(YAML::LowerNull);
  emit(e, v);
  return std::string(e.c_str()) + "\n";
}

}  // namespace spotshift::model
