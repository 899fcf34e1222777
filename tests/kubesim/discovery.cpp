// Discovery (legacy form), /version and the minimal OpenAPI v3 that kubectl needs.

#include "api.hpp"

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <functional>

namespace spotshift::kubesim {

namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

HttpResponse json(std::string body, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse not_found() {
  return json(status_body(Error::api(404, "NotFound", "the server could not find the requested resource"), nullptr, ""), 404);
}

void strings(Writer& w, const std::vector<std::string>& v) {
  w.StartArray();
  for (const auto& s : v) w.String(s);
  w.EndArray();
}

std::string hash_of(const std::string& s) { return fmt::format("{:016X}", std::hash<std::string>()(s)); }

}  // namespace

std::string Api::api_resource_list(std::string_view group_version) const {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("kind");
  w.String("APIResourceList");
  w.Key("apiVersion");
  w.String("v1");
  w.Key("groupVersion");
  w.String(group_version.data(), static_cast<rapidjson::SizeType>(group_version.size()));
  w.Key("resources");
  w.StartArray();
  static const std::vector<std::string> kVerbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
  for (const ResourceType* t : cluster_.registry().all()) {
    if (t->group_version() != group_version) continue;
    w.StartObject();
    w.Key("name");
    w.String(t->plural);
    w.Key("singularName");
    w.String(t->singular);
    w.Key("namespaced");
    w.Bool(t->namespaced);
    w.Key("kind");
    w.String(t->kind);
    w.Key("verbs");
    strings(w, t->review ? std::vector<std::string>{"create"} : kVerbs);
    if (!t->short_names.empty()) {
      w.Key("shortNames");
      strings(w, t->short_names);
    }
    if (!t->categories.empty()) {
      w.Key("categories");
      strings(w, t->categories);
    }
    w.EndObject();
    for (const auto& sub : t->subresources) {
      w.StartObject();
      w.Key("name");
      w.String(t->plural + "/" + sub);
      w.Key("singularName");
      w.String("");
      w.Key("namespaced");
      w.Bool(t->namespaced);
      if (sub == "eviction") {
        w.Key("group");
        w.String("policy");
        w.Key("version");
        w.String("v1");
        w.Key("kind");
        w.String("Eviction");
        w.Key("verbs");
        strings(w, {"create"});
      } else if (sub == "scale") {
        w.Key("group");
        w.String("autoscaling");
        w.Key("version");
        w.String("v1");
        w.Key("kind");
        w.String("Scale");
        w.Key("verbs");
        strings(w, {"get", "patch", "update"});
      } else if (sub == "binding") {
        w.Key("kind");
        w.String("Binding");
        w.Key("verbs");
        strings(w, {"create"});
      } else {
        w.Key("kind");
        w.String(t->kind);
        w.Key("verbs");
        strings(w, {"get", "patch", "update"});
      }
      w.EndObject();
    }
  }
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

std::string Api::openapi_document(std::string_view group_version) const {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("openapi");
  w.String("3.0.0");
  w.Key("info");
  w.StartObject();
  w.Key("title");
  w.String("Kubernetes (kubesim)");
  w.Key("version");
  w.String("v1.32.0");
  w.EndObject();
  w.Key("paths");
  w.StartObject();
  auto op = [&](const ResourceType& t, bool with_body) {
    w.StartObject();
    w.Key("x-kubernetes-group-version-kind");
    w.StartObject();
    w.Key("group");
    w.String(t.group);
    w.Key("version");
    w.String(t.version);
    w.Key("kind");
    w.String(t.kind);
    w.EndObject();
    w.Key("parameters");
    w.StartArray();
    for (const char* p : {"dryRun", "fieldManager", "fieldValidation"}) {
      if (!with_body && std::string_view(p) != "dryRun") continue;
      w.StartObject();
      w.Key("name");
      w.String(p);
      w.Key("in");
      w.String("query");
      w.Key("schema");
      w.StartObject();
      w.Key("type");
      w.String("string");
      w.EndObject();
      w.EndObject();
    }
    w.EndArray();
    w.Key("responses");
    w.StartObject();
    w.Key("200");
    w.StartObject();
    w.Key("description");
    w.String("OK");
    w.EndObject();
    w.EndObject();
    w.EndObject();
  };
  for (const ResourceType* t : cluster_.registry().all()) {
    if (t->group_version() != group_version) continue;
    std::string base = t->group.empty() ? "/api/" + t->version : "/apis/" + t->group_version();
    std::string collection = t->namespaced ? base + "/namespaces/{namespace}/" + t->plural : base + "/" + t->plural;
    w.Key(collection.c_str());
    w.StartObject();
    w.Key("post");
    op(*t, true);
    w.EndObject();
    if (t->review) continue;  // create only
    w.Key((collection + "/{name}").c_str());
    w.StartObject();
    w.Key("put");
    op(*t, true);
    w.Key("patch");
    op(*t, true);
    w.Key("delete");
    op(*t, false);
    w.EndObject();
  }
  w.EndObject();
  // A CRD's schema, named the way the apiserver names it (reversed group, version, kind), with
  // the GVK extension kubectl explain looks for and the fields every object has.
  w.Key("components");
  w.StartObject();
  w.Key("schemas");
  w.StartObject();
  for (const ResourceType* t : cluster_.registry().all()) {
    if (t->group_version() != group_version || t->schema_json.empty()) continue;
    Doc d;
    d.Parse(t->schema_json.data(), t->schema_json.size());
    if (d.HasParseError() || !d.IsObject()) continue;
    Alloc& a = d.GetAllocator();
    Value gvk(rapidjson::kObjectType);
    gvk.AddMember("group", Value(t->group.c_str(), a), a);
    gvk.AddMember("version", Value(t->version.c_str(), a), a);
    gvk.AddMember("kind", Value(t->kind.c_str(), a), a);
    Value list(rapidjson::kArrayType);
    list.PushBack(gvk, a);
    d.RemoveMember("x-kubernetes-group-version-kind");
    d.AddMember("x-kubernetes-group-version-kind", list, a);
    Value& props = ensure_object(d, "properties", a);
    auto standard = [&](const char* name, const char* type, const char* description) {
      if (!props.HasMember(name)) props.AddMember(Value(name, a), Value(rapidjson::kObjectType), a);
      Value& p = props[name];
      if (!p.IsObject()) return;
      if (!p.HasMember("type")) p.AddMember("type", Value(type, a), a);
      if (!p.HasMember("description")) p.AddMember("description", Value(description, a), a);
    };
    standard("apiVersion", "string",
             "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized "
             "schemas to the latest internal value, and may reject unrecognized values.");
    standard("kind", "string",
             "Kind is a string value representing the REST resource this object represents. Servers may infer this from the "
             "endpoint the client submits requests to. Cannot be updated. In CamelCase.");
    standard("metadata", "object", "Standard object's metadata.");
    std::string name;
    for (std::string_view rest = t->group; !rest.empty();) {
      auto dot = rest.rfind('.');
      name += std::string(dot == std::string_view::npos ? rest : rest.substr(dot + 1)) + ".";
      rest = dot == std::string_view::npos ? std::string_view() : rest.substr(0, dot);
    }
    name += t->version + "." + t->kind;
    w.Key(name.c_str());
    d.Accept(w);
  }
  w.EndObject();
  w.EndObject();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

std::string Api::openapi_index() const {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("paths");
  w.StartObject();
  std::vector<std::string> gvs = {"v1"};
  for (const auto& gv : cluster_.registry().group_versions()) gvs.push_back(gv);
  for (const auto& gv : gvs) {
    std::string path = gv == "v1" ? "api/v1" : "apis/" + gv;
    w.Key(path.c_str());
    w.StartObject();
    w.Key("serverRelativeURL");
    w.String(fmt::format("/openapi/v3/{}?hash={}", path, hash_of(openapi_document(gv))));
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

HttpResponse Api::discovery(const HttpRequest& req) {
  const std::string& p = req.path;
  if (req.method != "GET") return not_found();
  if (p == "/version")
    return json(R"({"major":"1","minor":"32","gitVersion":"v1.32.0","gitCommit":"kubesim","gitTreeState":"clean",)"
                R"("buildDate":"2025-01-01T00:00:00Z","goVersion":"go1.23.0","compiler":"gc","platform":"linux/amd64"})");
  if (p == "/api" || p == "/api/")
    return json(fmt::format(
        R"({{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{{"clientCIDR":"0.0.0.0/0","serverAddress":"{}"}}]}})",
        options_.server_address));
  if (p == "/api/v1") return json(api_resource_list("v1"));
  if (p == "/apis" || p == "/apis/") {
    rapidjson::StringBuffer buf;
    Writer w(buf);
    w.StartObject();
    w.Key("kind");
    w.String("APIGroupList");
    w.Key("apiVersion");
    w.String("v1");
    w.Key("groups");
    w.StartArray();
    std::vector<std::string> groups;
    for (const auto& gv : cluster_.registry().group_versions()) {
      std::string g = gv.substr(0, gv.find('/'));
      if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
    }
    for (const auto& g : groups) {
      w.StartObject();
      w.Key("name");
      w.String(g);
      w.Key("versions");
      w.StartArray();
      std::string first;
      for (const auto& gv : cluster_.registry().group_versions()) {
        if (gv.substr(0, gv.find('/')) != g) continue;
        if (first.empty()) first = gv;
        w.StartObject();
        w.Key("groupVersion");
        w.String(gv);
        w.Key("version");
        w.String(gv.substr(gv.find('/') + 1));
        w.EndObject();
      }
      w.EndArray();
      w.Key("preferredVersion");
      w.StartObject();
      w.Key("groupVersion");
      w.String(first);
      w.Key("version");
      w.String(first.substr(first.find('/') + 1));
      w.EndObject();
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    return json(std::string(buf.GetString(), buf.GetSize()));
  }
  if (p.starts_with("/apis/")) {
    std::string rest = p.substr(6);
    if (!rest.empty() && rest.back() == '/') rest.pop_back();
    auto gvs = cluster_.registry().group_versions();
    if (std::find(gvs.begin(), gvs.end(), rest) != gvs.end()) return json(api_resource_list(rest));
    std::vector<std::string> versions;
    for (const auto& gv : gvs)
      if (gv.substr(0, gv.find('/')) == rest) versions.push_back(gv);
    if (versions.empty()) return not_found();
    std::string body = fmt::format(R"({{"kind":"APIGroup","apiVersion":"v1","name":"{}","versions":[)", rest);
    for (size_t i = 0; i < versions.size(); ++i)
      body += fmt::format(R"({}{{"groupVersion":"{}","version":"{}"}})", i ? "," : "", versions[i],
                          versions[i].substr(versions[i].find('/') + 1));
    body += fmt::format(R"(],"preferredVersion":{{"groupVersion":"{}","version":"{}"}}}})", versions[0],
                        versions[0].substr(versions[0].find('/') + 1));
    return json(body);
  }
  if (p == "/openapi/v3" || p == "/openapi/v3/") return json(openapi_index());
  if (p.starts_with("/openapi/v3/")) {
    std::string rest = p.substr(12);
    std::string gv = rest == "api/v1" ? "v1" : rest.starts_with("apis/") ? rest.substr(5) : "";
    if (gv.empty()) return not_found();
    if (gv != "v1") {
      auto gvs = cluster_.registry().group_versions();
      if (std::find(gvs.begin(), gvs.end(), gv) == gvs.end()) return not_found();
    }
    return json(openapi_document(gv));
  }
  return not_found();
}

}  // namespace spotshift::kubesim
