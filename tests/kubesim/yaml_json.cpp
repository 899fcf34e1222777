#include "yaml_json.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <regex>

namespace spotshift::kubesim {

namespace {

void scalar(const YAML::Node& n, Value& out, Alloc& a) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!" || n.Tag() == "tag:yaml.org,2002:str") {  // quoted, or explicitly a string
    out = str(s, a);
    return;
  }
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

Result<void> convert(const YAML::Node& n, Value& out, Alloc& a) {
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
        Value v;
        if (auto r = convert(item, v, a); !r) return r;
        out.PushBack(v, a);
      }
      return {};
    case YAML::NodeType::Map:
      out.SetObject();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) return Error::invalid("YAML map keys must be scalars");
        Value v;
        if (auto r = convert(kv.second, v, a); !r) return r;
        set(out, kv.first.Scalar(), std::move(v), a);
      }
      return {};
  }
  return {};
}

}  // namespace

Result<std::vector<Doc>> parse_yaml_documents(std::string_view text) {
  std::vector<Doc> docs;
  try {
    for (const auto& node : YAML::LoadAll(std::string(text))) {
      if (node.IsNull()) continue;
      Doc d;
      if (auto r = convert(node, d, d.GetAllocator()); !r) return r.error();
      docs.push_back(std::move(d));
    }
  } catch (const YAML::Exception& e) {
    return Error::invalid(fmt::format("invalid YAML at line {}, column {}: {}", e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  return docs;
}

Result<Doc> parse_yaml(std::string_view text) {
  auto docs = parse_yaml_documents(text);
  if (!docs) return docs.error();
  if (docs->size() != 1) return Error::invalid(fmt::format("expected one YAML document, found {}", docs->size()));
  return std::move(docs->front());
}

}  // namespace spotshift::kubesim
