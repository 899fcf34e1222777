#pragma once
// YAML to JSON with the YAML 1.2 core schema, as kubectl reads manifests: quoted scalars are
// strings; plain scalars become null, booleans (true/false), integers or floats when they look
// like one, strings otherwise. Anchors and aliases are expanded.

#include "model/json.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace spotshift::model {

// Every document in a multi-document YAML stream (empty documents skipped).
Result<std::vector<JsonDocument>> parse_yaml_documents(std::string_view text);
// One document; JSON is valid YAML, so this also reads JSON.
Result<JsonDocument> parse_yaml(std::string_view text);
// Block-style YAML for a JSON value; strings that would read back as another type are quoted.
std::string to_yaml(const JsonValue& v);

}  // namespace spotshift::model
