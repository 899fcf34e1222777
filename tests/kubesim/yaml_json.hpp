#pragma once
// YAML to JSON with the YAML 1.2 core schema: quoted scalars are strings; plain scalars become
// null, booleans (true/false), integers or floats when they look like one, strings otherwise.

#include "json_util.hpp"

#include <vector>

namespace spotshift::kubesim {

// Every document in a multi-document YAML stream (empty documents skipped).
Result<std::vector<Doc>> parse_yaml_documents(std::string_view text);
// One document; JSON is valid YAML, so this also reads JSON.
Result<Doc> parse_yaml(std::string_view text);

}  // namespace spotshift::kubesim
