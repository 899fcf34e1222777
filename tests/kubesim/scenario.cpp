#include "scenario.hpp"

#include "core/strings.hpp"
#include "yaml_json.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spotshift::kubesim {

namespace {

// Owners before what they own, and classes before the pods that name them, so references resolve
// as a real cluster would have them.
int load_rank(std::string_view kind) {
  if (kind == "Namespace") return 0;
  if (kind == "CustomResourceDefinition" || kind == "PriorityClass") return 1;
  if (kind == "Node") return 2;
  if (kind == "Deployment" || kind == "DaemonSet" || kind == "StatefulSet") return 3;
  if (kind == "ReplicaSet") return 4;
  if (kind == "Pod") return 5;
  return 6;
}

void flatten(Doc&& doc, std::vector<Doc>& out) {
  if (json_string(doc, {"kind"}).ends_with("List") && json_member(doc, "items")) {
    Value* items = get_mut(doc, "items");
    if (!items->IsArray()) return;
    out.reserve(out.size() + items->Size());
    for (auto& item : items->GetArray()) {
      Doc d;
      d.CopyFrom(item, d.GetAllocator());
      flatten(std::move(d), out);
    }
    return;
  }
  out.push_back(std::move(doc));
}

}  // namespace

Result<size_t> load_scenario_text(Cluster& cluster, std::string_view text) {
  std::vector<Doc> objects;
  std::string_view body = trim(text);
  if (body.starts_with("{")) {
    // JSON (a kubectl dump can be 100 MB): RapidJSON is two orders of magnitude faster than YAML.
    Doc d;
    if (auto r = parse_json(body, d); !r) return r.error();
    flatten(std::move(d), objects);
  } else {
    auto docs = parse_yaml_documents(text);
    if (!docs) return docs.error();
    for (auto& d : *docs) flatten(std::move(d), objects);
  }
  std::stable_sort(objects.begin(), objects.end(),
                   [](const Doc& a, const Doc& b) { return load_rank(json_string(a, {"kind"})) < load_rank(json_string(b, {"kind"})); });
  size_t loaded = 0;
  for (auto& obj : objects) {
    if (!obj.IsObject()) return Error::invalid("every scenario document must be an object");
    std::string what = fmt::format("{} {}/{}", json_string(obj, {"kind"}), namespace_of(obj), name_of(obj));
    auto r = cluster.load(std::move(obj));
    if (!r) return r.error().wrap(fmt::format("loading {}", what));
    ++loaded;
  }
  return loaded;
}

Result<size_t> load_scenario_file(Cluster& cluster, const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  auto r = load_scenario_text(cluster, *text);
  if (!r) return r.error().wrap(fmt::format("scenario {}", path));
  return r;
}

}  // namespace spotshift::kubesim
