#pragma once
// kubesim reads YAML with the model's converter (lib/model/yaml.hpp), as the operator does.

#include "json_util.hpp"
#include "model/yaml.hpp"

namespace spotshift::kubesim {

using model::parse_yaml;
using model::parse_yaml_documents;

}  // namespace spotshift::kubesim
